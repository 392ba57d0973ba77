// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// stream_registry.cpp — owns the streams a pool knows (stream_registry.hpp) and the
// ordering primitives over them, which never throw: a failed event call falls back to a
// host wait (docs/notes/pool_design.md, "Failure paths").
//
// Note [Last-use marks]
// ---------------------
// Rationale: release records no event (the hit path makes no backend call), so the pool
// learns when a use of a block ended only when it needs to (eviction, a write, a copy).
// Recording an event *then* on the user's stream covers everything queued there since —
// several kernels later — so a vacated block waits for unrelated work, and the ladder's
// host waits for deferred frees grow with the depth of the user's queue.
// Approach: every stream the pool knows has a generation `gen` and a ring of the last few
// events ("marks") the pool recorded on it; a mark is labelled with the generation it was
// given, incremented *before* recording. A use is stamped with the stream's generation
// when the work is known to be enqueued: at lease release (an atomic load, no backend
// call) or right after a copy is enqueued. A mark with a larger label was recorded after
// the stamp, so it covers the use; the oldest such mark is waited on (or, when it has
// completed, nothing at all: the block is free at once). Only when no mark is newer than
// the stamp, or a lease is still live on the copy (its stamp is not settled), is a fresh
// mark recorded. Marks are recorded on demand, so a stream that evicts often has fine-
// grained marks.
// Limitations: kMarks marks per stream; older ones are released, so a very old stamp
// uses the oldest kept mark (later than needed, still correct).
// A destroyed stream (destroy_stream: the pool's own, or a wrapped one it forgets) can
// take no new mark, so destroy_stream records a last one first, covering everything
// queued there while the pool knew the stream; uses of a stream no longer live are
// ordered after that newest mark whatever their stamp.
#include "streams/stream_registry.hpp"

#include <tierpool/error.hpp>
#include <tierpool/log.hpp>

#include <chrono>
#include <exception>
#include <string>
#include <utility>

namespace tierpool::detail {

namespace {

[[nodiscard]] double seconds_since(std::chrono::steady_clock::time_point t0) noexcept
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// ": " and the backend's last_error() for a failed call ("" when it has none), without
/// the status it may end with (backend_error appends the status itself).
[[nodiscard]] std::string backend_reason(backend const& be, status st)
{
  std::string why = be.last_error();
  if (std::string const code = " [" + std::string(to_string(st)) + "]"; why.ends_with(code)) {
    why.resize(why.size() - code.size());
  }
  return why.empty() ? std::string() : ": " + why;
}

}  // namespace

stream_registry::~stream_registry()
{
  faults_->close();  // what no synchronize reported is logged (Note [Exceptions of host callables])
  for (stream_handle s : owned_) { be_.destroy_stream(s); }
  for (stream_handle s : wrapped_) { be_.forget_stream(s); }
  auto drop_marks = [&](stream_entry& se) {
    for (std::size_t i = 0; i < se.count; ++i) {
      release_event(se.marks[(se.first + i) % stream_entry::kMarks].event);
    }
    se.count = 0;
  };
  drop_marks(default_);
  for (auto& se : store_) { drop_marks(*se); }
}

std::size_t stream_registry::home(stream_handle s) noexcept
{
  return static_cast<std::size_t>((static_cast<std::uint64_t>(s.value) * 0x9E3779B97F4A7C15ULL) >> 40U) & (kTable - 1);
}

stream_entry* stream_registry::find(stream_handle s) const noexcept
{
  if (s.is_default()) { return const_cast<stream_entry*>(&default_); }
  constexpr std::size_t mask = kTable - 1;
  std::size_t i = home(s);
  for (std::size_t n = 0; n < kTable; ++n, i = (i + 1) & mask) {
    std::uintptr_t const k = keys_[i].load(std::memory_order_acquire);
    if (k == s.value) { return vals_[i].load(std::memory_order_acquire); }
    if (k == 0) { return nullptr; }
  }
  return nullptr;
}

stream_entry& stream_registry::add(stream_handle s, bool internal)
{
  std::lock_guard lock(mtx_);
  if (stream_entry* e = find(s)) {
    e->live.store(true, std::memory_order_release);
    return *e;
  }
  if (count_ >= kTable / 2) {
    throw logic_error("pool: too many distinct streams (" + std::to_string(count_) +
                      ") over the pool's life; reuse streams");
  }
  auto ent = std::make_unique<stream_entry>();
  ent->handle = s;
  ent->internal = internal;
  if (!internal && s.value != 0) { ent->trace_id = ++user_streams_; }
  store_.push_back(nullptr);  // may throw: before anything is published
  stream_entry* const raw = ent.get();
  store_.back() = std::move(ent);
  constexpr std::size_t mask = kTable - 1;
  std::size_t i = home(s);
  while (keys_[i].load(std::memory_order_relaxed) != 0) { i = (i + 1) & mask; }
  vals_[i].store(raw, std::memory_order_release);
  keys_[i].store(s.value, std::memory_order_release);
  ++count_;
  return *raw;
}

stream_handle stream_registry::create(int priority)
{
  stream_handle s{};
  TIERPOOL_TRY(be_.create_stream(&s, priority));
  try {
    (void)add(s, false);
    std::lock_guard lock(mtx_);
    owned_.push_back(s);
  } catch (...) {
    be_.destroy_stream(s);
    throw;
  }
  return s;
}

stream_handle stream_registry::wrap(void* native)
{
  TIERPOOL_EXPECTS(native != nullptr, "pool::wrap_native_stream: null stream");
  stream_handle const as_is{reinterpret_cast<std::uintptr_t>(native)};
  {
    std::lock_guard lock(mtx_);
    if (std::find(wrapped_.begin(), wrapped_.end(), as_is) != wrapped_.end()) {
      return as_is;  // wrapped before
    }
    stream_entry const* e = find(as_is);
    TIERPOOL_EXPECTS(e == nullptr || !e->internal, "pool::wrap_native_stream: that is one of the pool's copy streams");
    TIERPOOL_EXPECTS(std::find(owned_.begin(), owned_.end(), as_is) == owned_.end(),
                     "pool::wrap_native_stream: that stream was made by create_stream()");
  }
  stream_handle s{};
  if (status const st = be_.adopt_stream(native, &s); st != status::ok) {
    std::string const why = be_.last_error();
    throw logic_error("pool::wrap_native_stream: the " + std::string(be_.caps().name) +
                      " backend cannot use that stream (" + std::string(to_string(st)) +
                      (why.empty() ? "" : ": " + why) + ")");
  }
  try {
    (void)add(s, false);
    std::lock_guard lock(mtx_);
    if (std::find(wrapped_.begin(), wrapped_.end(), s) == wrapped_.end()) {
      wrapped_.push_back(s);  // else another thread wrapped it meanwhile (adopting is idempotent)
    }
  } catch (...) {
    be_.forget_stream(s);
    throw;
  }
  return s;
}

void stream_registry::destroy(stream_handle s)
{
  {
    std::lock_guard lock(mtx_);
    if (auto const w = std::find(wrapped_.begin(), wrapped_.end(), s); w != wrapped_.end()) {
      wrapped_.erase(w);
      retire_locked(s);
      be_.forget_stream(s);  // the caller's stream: not destroyed
    } else {
      auto const it = std::find(owned_.begin(), owned_.end(), s);
      TIERPOOL_EXPECTS(it != owned_.end(),
                       "pool::destroy_stream: the stream was made neither by create_stream() nor wrap_native_stream()");
      owned_.erase(it);
      retire_locked(s);
      be_.destroy_stream(s);
    }
  }
  faults_->retire(s);  // logs what no synchronize reported, with no lock held
}

void stream_registry::retire_locked(stream_handle s) noexcept
{
  stream_entry* e = find(s);
  if (e == nullptr) { return; }
  std::lock_guard lock(e->mtx);
  // The last mark covers every use stamped so far and any work queued since: uses of the
  // stream are ordered after it from now on (Note [Last-use marks]).
  (void)add_mark_locked(*e);
  e->live.store(false, std::memory_order_relaxed);
}

void stream_registry::synchronize(stream_handle s)
{
  auto const t0 = std::chrono::steady_clock::now();
  if (status const st = be_.synchronize_stream(s); st != status::ok) {
    throw backend_error(st, "pool::synchronize: the " + be_.caps().name + " backend failed on stream " +
                              std::to_string(s.value) + backend_reason(be_, st));
  }
  add_stall(seconds_since(t0));
  std::uint64_t more = 0;
  if (std::exception_ptr e = faults_->take(s, more)) {
    if (more != 0) {
      log_message(log_level::warning, "tierpool: pool::synchronize: " + std::to_string(more + 1) +
                                        " host callables on stream " + std::to_string(s.value) +
                                        " threw since the last synchronize; the first is rethrown, the other " +
                                        std::to_string(more) + " are dropped; synchronize more often to see each");
    }
    std::rethrow_exception(e);
  }
}

namespace {

// A callable queued by pool::enqueue_host, and where its exception goes.
struct queued_host_work {
  std::unique_ptr<host_work> work;
  std::shared_ptr<host_faults> faults;
  stream_handle stream{};
  std::uint64_t epoch{0};

  // The backend's host function: nothing escapes (Note [Exceptions of host callables]).
  static void run(void* self) noexcept
  {
    std::unique_ptr<queued_host_work> const q(static_cast<queued_host_work*>(self));
    try {
      q->work->run();
    } catch (...) {
      q->faults->capture(q->stream, q->epoch, std::current_exception());
    }
  }  // the callable is destroyed here, on the thread that ran it
};

}  // namespace

void stream_registry::enqueue_host(stream_handle s, std::unique_ptr<host_work> work)
{
  auto q = std::make_unique<queued_host_work>(queued_host_work{std::move(work), faults_, s, faults_->enlist(s)});
  // Released before the call: on a virtual clock the backend runs (and deletes) it inside.
  queued_host_work* const raw = q.release();
  if (status const st = be_.launch_host_func(s, &queued_host_work::run, raw); st != status::ok) {
    delete raw;  // a failed launch never runs it
    throw backend_error(st, "pool::enqueue_host: the " + be_.caps().name +
                              " backend could not queue the callable on stream " + std::to_string(s.value) +
                              backend_reason(be_, st) + "; it was not run");
  }
}

event_handle stream_registry::record_or_sync(stream_handle s) noexcept
{
  event_handle e{};
  if (events_.acquire(&e) == status::ok) {
    if (be_.record_event(e, s) == status::ok) { return e; }
    release_event(e);
  }
  auto const t0 = std::chrono::steady_clock::now();
  (void)be_.synchronize_stream(s);
  add_stall(seconds_since(t0));
  return event_handle{};
}

event_handle stream_registry::rerecord_or_sync(stream_handle s, event_handle e) noexcept
{
  if (!e) { return record_or_sync(s); }
  if (be_.record_event(e, s) == status::ok) { return e; }
  release_event(e);
  auto const t0 = std::chrono::steady_clock::now();
  (void)be_.synchronize_stream(s);
  add_stall(seconds_since(t0));
  return event_handle{};
}

bool stream_registry::order_after_use(stream_handle waiter, stream_use const& use, bool settled) noexcept
{
  stream_entry& se = *use.stream;
  if (se.handle == waiter) { return false; }  // stream order does it
  std::lock_guard lock(se.mtx);
  if (!se.live.load(std::memory_order_relaxed)) {  // destroyed: its last mark covers every use
    if (se.count == 0) { return false; }          // the host waited for it at destroy
    event_handle const last = se.marks[(se.first + se.count - 1) % stream_entry::kMarks].event;
    if (be_.query_event(last) == status::ok) { return false; }
    wait_event_or_sync(waiter, last);
    return true;
  }
  if (settled) {
    for (std::size_t i = 0; i < se.count; ++i) {
      stream_entry::mark const& m = se.marks[(se.first + i) % stream_entry::kMarks];
      if (m.gen <= use.gen) { continue; }
      if (be_.query_event(m.event) == status::ok) { return false; }  // the use is over
      wait_event_or_sync(waiter, m.event);
      return true;
    }
  }
  // No mark covers the use yet: record one now.
  event_handle const e = add_mark_locked(se);
  if (!e) { return false; }  // the host waited instead
  wait_event_or_sync(waiter, e);
  return true;
}

bool stream_registry::use_done(stream_use const& use) noexcept
{
  if (use_settled(use)) { return true; }
  stream_entry& se = *use.stream;
  std::lock_guard lock(se.mtx);
  if (!se.live.load(std::memory_order_relaxed)) { return false; }  // use_settled said: its last mark is pending
  for (std::size_t i = 0; i < se.count; ++i) {
    if (se.marks[(se.first + i) % stream_entry::kMarks].gen > use.gen) { return false; }  // a mark covers it: pending
  }
  event_handle const e = add_mark_locked(se);
  return !e || be_.query_event(e) == status::ok;  // null: the host waited for the stream
}

event_handle stream_registry::add_mark_locked(stream_entry& se) noexcept
{
  std::uint64_t const g = se.gen.fetch_add(1, std::memory_order_seq_cst) + 1;  // label first: see the Note
  event_handle e{};
  if (events_.acquire(&e) != status::ok || be_.record_event(e, se.handle) != status::ok) {
    release_event(e);
    auto const t0 = std::chrono::steady_clock::now();
    (void)be_.synchronize_stream(se.handle);
    add_stall(seconds_since(t0));
    return event_handle{};
  }
  if (se.count == stream_entry::kMarks) {
    release_event(se.marks[se.first].event);
    se.first = (se.first + 1) % stream_entry::kMarks;
    --se.count;
  }
  se.marks[(se.first + se.count) % stream_entry::kMarks] = stream_entry::mark{g, e};
  ++se.count;
  return e;
}

bool stream_registry::use_settled(stream_use const& use) noexcept
{
  stream_entry& se = *use.stream;
  std::lock_guard lock(se.mtx);
  if (!se.live.load(std::memory_order_relaxed)) {  // destroyed: see order_after_use
    return se.count == 0 ||
           be_.query_event(se.marks[(se.first + se.count - 1) % stream_entry::kMarks].event) == status::ok;
  }
  for (std::size_t i = 0; i < se.count; ++i) {
    stream_entry::mark const& m = se.marks[(se.first + i) % stream_entry::kMarks];
    if (m.gen <= use.gen) { continue; }
    return be_.query_event(m.event) == status::ok;  // the oldest mark after the use
  }
  return false;  // no mark covers the use yet
}

void stream_registry::wait_stream(stream_handle waiter, stream_handle source) noexcept
{
  if (waiter == source) { return; }
  event_handle e = record_or_sync(source);
  if (!e) { return; }  // the host waited for `source` instead
  wait_event_or_sync(waiter, e);
  release_event(e);  // the wait captured the record (a later re-record is harmless)
}

void stream_registry::wait_event_or_sync(stream_handle waiter, event_handle e) noexcept
{
  if (!e || be_.stream_wait_event(waiter, e) == status::ok) { return; }
  auto const t0 = std::chrono::steady_clock::now();
  (void)be_.synchronize_event(e);
  add_stall(seconds_since(t0));
}

void stream_registry::host_wait_use(stream_use const& use) noexcept
{
  stream_entry& se = *use.stream;
  event_handle e{};
  {
    // Under the entry's lock the stream cannot be retired (retire_locked): a live stream
    // takes the record; a destroyed one can take none, and its last mark covers every use
    // of it (as in order_after_use), so the host waits for that mark.
    std::lock_guard lock(se.mtx);
    if (!se.live.load(std::memory_order_relaxed)) {
      if (se.count != 0) {
        (void)be_.synchronize_event(se.marks[(se.first + se.count - 1) % stream_entry::kMarks].event);
      }
      return;
    }
    e = record_or_sync(se.handle);
  }
  if (e) {
    (void)be_.synchronize_event(e);
    release_event(e);
  }
}

}  // namespace tierpool::detail

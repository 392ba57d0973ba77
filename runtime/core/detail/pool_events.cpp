// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_events.cpp — owns the pool's stream calls for the program: tierpool::event (made by
// pool::create_event), pool::wait, pool::enqueue_host (the trampoline and its exceptions
// are the stream registry's: Note [Exceptions of host callables]), pool::order and
// pool::record_stream. Entry points: the members in the "events and host work" block of
// include/tierpool/pool.hpp and include/tierpool/event.hpp.
//
// Note [Ordering two streams on one tensor]
// -----------------------------------------
// Rationale: the pool orders its own copies against each stream's use of a tensor, but not
// one program stream against another (docs/chapters/streams.md). A program that writes a
// tensor on stream A and reads it on stream B needs B to wait for A's writer; a program
// that uses a lease's bytes on a second stream needs the pool to keep them until that
// stream is done too.
// Approach: order(t, A, B) looks up A's use of each of t's copies (the stamp its lease
// release left, Note [Last-use marks]) and makes B wait for the oldest mark after it
// (stream_registry::order_after_use): B waits for the writer, not for work queued on A
// later; a use already complete enqueues nothing, and one whose lease is still live gets
// a fresh mark (all of A's work so far). A copy made since (an eviction's write-back, a
// copy back in) was itself ordered after A's use, and B's acquire waits for that copy, so
// only the copies' own use lists need looking at. record_stream(l, S) adds S to the
// lease's copy's users with the stamp kStampAtUnpin: no mark is newer, so while leases
// live it counts as not settled (and any wait records a fresh mark on S); the release
// that ends the copy's last lease stamps it with S's generation then, when the program
// has queued its work on S. Eviction, vacating and writes then wait for S as for the
// lease's own stream.
// Limitations: order() knows only uses made through leases (and record_stream); work on
// `from` that reached the bytes otherwise is not waited for. A record_stream use is
// stamped at the copy's last unpin, so work queued on S after that is not covered (as
// with PyTorch's record_stream at free).
#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/event.hpp>
#include <tierpool/pool.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/detail/pool_impl.hpp"
#include "migration/record_lock.hpp"

namespace tierpool {
namespace {

/// The backend's last_error() for a failed call, without the status (backend_error adds it).
std::string backend_why(tierpool::backend const& be, status st)
{
  std::string why = be.last_error();
  if (std::string const code = " [" + std::string(to_string(st)) + "]"; why.ends_with(code)) {
    why.resize(why.size() - code.size());
  }
  return why;
}

[[noreturn]] void throw_backend(tierpool::backend const& be, status st, std::string const& what)
{
  std::string const why = backend_why(be, st);
  throw backend_error(st, what + ": the " + be.caps().name + " backend failed" + (why.empty() ? "" : ": " + why));
}

detail::pool_impl& checked_pool(std::shared_ptr<detail::pool_impl> const& impl, char const* what)
{
  if (impl == nullptr) [[unlikely]] { throw logic_error(std::string("pool::") + what + ": the pool was moved from"); }
  return *impl;
}

}  // namespace

// ---- event ----

event::event(std::weak_ptr<detail::pool_impl> owner, std::shared_ptr<tierpool::backend> be, event_handle h) noexcept
  : pool_(std::move(owner)), backend_(std::move(be)), handle_(h)
{
}

event::event(event&& other) noexcept
  : pool_(std::move(other.pool_)), backend_(std::move(other.backend_)), handle_(std::exchange(other.handle_, event_handle{}))
{
}

event& event::operator=(event&& other) noexcept
{
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    backend_ = std::move(other.backend_);
    handle_ = std::exchange(other.handle_, event_handle{});
  }
  return *this;
}

event::~event() { reset(); }

void event::reset() noexcept
{
  if (backend_ != nullptr) { backend_->destroy_event(handle_); }
  backend_.reset();
  pool_.reset();
  handle_ = event_handle{};
}

void event::check(char const* what) const
{
  if (backend_ == nullptr) [[unlikely]] {
    throw logic_error(std::string(what) + ": empty event (default-constructed or moved from); make one with "
                                          "pool::create_event()");
  }
}

void event::record(stream_handle s)
{
  check("event::record");
  std::shared_ptr<detail::pool_impl> const p = pool_.lock();
  if (p == nullptr) [[unlikely]] {
    throw logic_error("event::record: the event's pool is gone (its pool object and every tensor handle were "
                      "destroyed); record events of a live pool (query() and synchronize() still work)");
  }
  (void)p->user_stream(s, "event::record");
  if (status const st = backend_->record_event(handle_, s); st != status::ok) {
    throw_backend(*backend_, st, "event::record: recording on stream " + std::to_string(s.value));
  }
}

bool event::query() const
{
  check("event::query");
  status const st = backend_->query_event(handle_);
  if (st == status::ok) { return true; }
  if (st == status::not_ready) { return false; }
  throw_backend(*backend_, st, "event::query");
}

void event::synchronize() const
{
  check("event::synchronize");
  auto const t0 = std::chrono::steady_clock::now();
  if (status const st = backend_->synchronize_event(handle_); st != status::ok) {
    throw_backend(*backend_, st, "event::synchronize");
  }
  if (std::shared_ptr<detail::pool_impl> const p = pool_.lock()) {
    p->add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

void event::wait(stream_handle s) const
{
  check("event::wait");
  std::shared_ptr<detail::pool_impl> const p = pool_.lock();
  if (p == nullptr) [[unlikely]] {
    throw logic_error("event::wait: the event's pool is gone (its pool object and every tensor handle were "
                      "destroyed); make streams wait on events of a live pool (query() and synchronize() still work)");
  }
  (void)p->user_stream(s, "event::wait");
  if (status const st = backend_->stream_wait_event(s, handle_); st != status::ok) {
    throw_backend(*backend_, st, "event::wait: making stream " + std::to_string(s.value) + " wait");
  }
}

// ---- pool ----

event pool::create_event() { return checked_pool(impl_, "create_event").create_event(); }

void pool::wait(stream_handle s, event const& e)
{
  detail::pool_impl& impl = checked_pool(impl_, "wait");
  e.check("pool::wait");
  if (e.pool_.lock().get() != &impl) [[unlikely]] {
    throw logic_error("pool::wait: the event belongs to another pool (or to one that is gone); wait on events made "
                      "by this pool's create_event()");
  }
  e.wait(s);
}

void pool::enqueue_host_work(stream_handle s, std::unique_ptr<detail::host_work> work)
{
  checked_pool(impl_, "enqueue_host").enqueue_host_work(s, std::move(work));
}

void pool::order(tensor const& t, stream_handle from, stream_handle to)
{
  checked_pool(impl_, "order").order(t, from, to);
}

void pool::record_stream(lease const& l, stream_handle s) { checked_pool(impl_, "record_stream").record_stream(l, s); }

namespace detail {

event pool_impl::create_event()
{
  check_open("create_event");
  event_handle h{};
  if (status const st = backend_->create_event(&h); st != status::ok) {
    throw_backend(*backend_, st, "pool::create_event");
  }
  return event(weak_from_this(), backend_, h);
}

stream_entry& pool_impl::user_stream(stream_handle s, char const* what) const
{
  if (closed_.load(std::memory_order_acquire)) [[unlikely]] {
    throw logic_error(std::string(what) + ": the pool is closed");
  }
  stream_entry* const se = streams_->find(s);
  if (se == nullptr || se->internal || !se->live.load(std::memory_order_relaxed)) [[unlikely]] {
    throw logic_error(std::string(what) + ": unknown stream " + std::to_string(s.value) +
                      (se == nullptr   ? " (not made by the pool's create_stream or wrap_native_stream, nor the "
                                         "default stream)"
                       : se->internal ? " (a copy stream of the pool)"
                                      : " (destroyed)") +
                      "; use a stream of this pool");
  }
  return *se;
}

// Note [Compute the program tells of]
//   Rationale: a recorded trace held the pool's calls only, so its replay had no compute:
//   no makespan worth reading, and nothing for the planner's latest start. A program knows
//   its kernels (or a model of them); pool::note_compute passes them on. On the simulated
//   backend the stream runs for that long too, so that a live run on the virtual clock and
//   its replay see the same device timeline.
void pool_impl::note_compute(stream_handle s, std::uint64_t duration_ns)
{
  stream_entry const& se = user_stream(s, "pool::note_compute");
  if (duration_ns == 0) { return; }
  if (auto* const sim = dynamic_cast<sim_backend*>(backend_.get())) {
    if (status const st = sim->compute_async(s, duration_ns); st != status::ok) {
      throw_backend(*backend_, st, "pool::note_compute: " + std::to_string(duration_ns) + " ns on stream " +
                                     std::to_string(s.value));
    }
  }
  if (tracer_.active()) [[unlikely]] {
    trace::event e{};
    e.kind = trace::event_kind::compute;
    e.stream = se.trace_id;
    e.duration_ns = duration_ns;
    trace_record(std::move(e));
  }
}

void pool_impl::note_phase(std::string_view name)
{
  if (closed_.load(std::memory_order_acquire)) [[unlikely]] { throw logic_error("pool::note_phase: the pool is closed"); }
  if (name.empty()) { throw logic_error("pool::note_phase: an empty phase name"); }
  constexpr std::size_t kMaxName = std::size_t{1} << 20U;  // what the recorder accepts
  if (name.size() > kMaxName) {
    throw logic_error("pool::note_phase: a phase name of " + std::to_string(name.size()) + " bytes (at most 1 MiB)");
  }
  if (tracer_.active()) [[unlikely]] {
    trace::event e{};
    e.kind = trace::event_kind::phase;
    e.name.assign(name);
    trace_record(std::move(e));
  }
}

void pool_impl::enqueue_host_work(stream_handle s, std::unique_ptr<host_work> work)
{
  (void)user_stream(s, "pool::enqueue_host");
  streams_->enqueue_host(s, std::move(work));
}

void pool_impl::order(tensor const& t, stream_handle from, stream_handle to)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "order");
  stream_entry& f = user_stream(from, "pool::order");
  (void)user_stream(to, "pool::order");
  if (from == to) { return; }
  record_lock rl(rec);
  TIERPOOL_EXPECTS(!rec.freed, "pool::order: the tensor was freed");
  // Note [Ordering two streams on one tensor]
  for (std::size_t k = 0; k < rec.slots.size(); ++k) {
    copy_slot const& slot = rec.slots[k];
    for (stream_use const& u : slot.users) {
      if (u.stream == &f) { (void)streams_->order_after_use(to, u, slot.pins == 0); }
    }
  }
}

void pool_impl::record_stream(lease const& l, stream_handle s)
{
  if (l.impl_ == nullptr) [[unlikely]] {
    throw logic_error("pool::record_stream: the lease has ended (released or moved from); record streams on a live "
                      "lease");
  }
  if (l.impl_ != this) [[unlikely]] {
    throw logic_error("pool::record_stream: the lease belongs to another pool; call record_stream on the pool that "
                      "made it");
  }
  op_gate::scope const op(gate_, thread_shard());
  stream_entry& se = user_stream(s, "pool::record_stream");
  if (s == l.stream_ && !l.host_) { return; }  // the lease's release stamps it already
  tensor_record& rec = *l.rec_;
  record_lock rl(rec);
  // Stamped by the release that ends the copy's last lease (Note [Ordering two streams on one tensor]).
  add_use(rec.slots[l.tier_].users, se, kStampAtUnpin);
}

}  // namespace detail
}  // namespace tierpool

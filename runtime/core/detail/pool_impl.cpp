// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_impl.cpp — owns the pool's construction (backend, tiers, policies, streams, the
// environment overrides) and the tensor-level operations: allocate, acquire,
// acquire_host, prefetch, demote, free, lease release, close. Placement and the OOM
// ladder live in placement.cpp, eviction and copies in runtime/migration/.
// Entry point: detail::pool_impl (behind tierpool::pool).
//
// Note [Lock order of the pool]
// -----------------------------
// Rationale: many threads allocate, acquire and free at once; eviction runs while one
// tensor is locked and must touch others.
// Approach: a mutex per tensor record and one per tier (tier::mutex()). Order: tensor
// before tier. A thread blocks on a tensor lock only while holding no other lock (or, in
// close(), only tensor locks in id order); victims are try-locked and skipped when busy.
// validate() takes no tensor lock: it closes the quiesce gate every changing call passes
// (Note [The quiesce gate], op_gate.hpp). A thread never holds two tier locks: eviction claims victims under the tier lock,
// drops it, writes dirty victims back (locking the lower tier), then relocks to vacate.
// A thread-local list of the records it holds keeps it from try-locking its own (UB on a
// std::mutex). Leaf locks: table_mtx_, stream_mtx_, access_shard::busy. Hits buffer
// their policy access events per shard (Note [The hit path takes no shared lock] in
// copy_engine.cpp), applied under the tier lock later.
// Limitations: a victim busy in another thread is skipped for this round (counted as
// "in flight" by asking the policy for more bytes), so eviction may pick a less ideal one;
// a request that finds only busy victims lets go and retries (Note [Busy victims are
// waited for, not failed on], placement.cpp).
#include "core/detail/pool_impl.hpp"

#include <tierpool/backend_factory.hpp>
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/topology.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/pool_config.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {
namespace {

/// The program's name (Linux: /proc/self/comm), for the figures it publishes.
std::string program_name()
{
  std::ifstream in("/proc/self/comm");
  std::string name;
  std::getline(in, name);
  return name.empty() ? std::string("tierpool") : name;
}

bool device_accessible(tier_kind k) noexcept { return k == tier_kind::device || k == tier_kind::managed; }

}  // namespace

// ---------------------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------------------

pool_impl::pool_impl(pool_options options)
{
  environment_overrides const env = apply_environment(options, process_environment());

  // Backend: given, or chosen (TIERPOOL_BACKEND overrides options.backend).
  if (options.backend_object) {
    backend_ = options.backend_object;
    backend_reason_ = "given by pool_options::backend_object";
  } else {
    backend_selection sel = env.backend
                              ? select_backend_from_env(options.sim, options.device, options.notice, options.backend)
                              : select_backend(options.backend, options.sim, options.device, options.notice);
    backend_ = std::shared_ptr<tierpool::backend>(std::move(sel.backend));
    backend_reason_ = std::move(sel.reason);
  }
  backend_caps const& caps = backend_->caps();

  // The configuration: the options, the environment and what the machine offers.
  platform_facts facts;
  if (caps.name == "cuda") {
    std::size_t free_b = 0;
    std::size_t total_b = 0;
    if (backend_->device_memory_info(&free_b, &total_b) == status::ok) { facts.device_free_bytes = free_b; }
  }
  facts.host_memory_share = default_host_memory_share();
  if (options.tiers.empty()) { facts.far_host_tiers = discover_far_host_tiers(caps); }
  pool_config const cfg = resolve_pool_config(options, caps, facts, env);
  for (auto const& [tenant, quota] : options.tenant_quotas) { tenants_.set_quota(tenant, quota); }
  contention_ = cfg.contention;

  events_ = std::make_unique<event_pool>(*backend_);
  streams_ = std::make_unique<stream_registry>(*backend_, *events_);
  engine_.attach(*backend_, *events_, *streams_, counters_, table_mtx_, table_);
  policy_registry const registry = options.registry != nullptr ? *options.registry : policy_registry::with_builtins();
  for (std::size_t i = 0; i < cfg.tiers.size(); ++i) {
    tier_plan const& plan = cfg.tiers[i];
    auto ts = std::make_unique<tier_state>();
    ts->kind = plan.config.kind;
    ts->name = plan.config.name;
    try {
      ts->policy.emplace(registry.create(plan.policy_spec));
    } catch (logic_error const& e) {
      if (env.policy) { throw logic_error(std::string("TIERPOOL_POLICY: ") + e.what()); }
      throw;
    }
    ts->mem = std::make_unique<tier>(*backend_, *events_, plan.config);
    ts->capacity = ts->mem->config().capacity_bytes;
    ts->index = static_cast<std::uint32_t>(i);
    ts->acc_drain.reserve((kShards + 1) * access_shard::kCap);
    engine_.add_tier(std::move(ts));
  }

  // Recording (TIERPOOL_TRACE wins over pool_options::trace_path). A file that cannot be
  // created fails the pool, naming the variable when the path came from it.
  if (!options.trace_path.empty()) {
    try {
      tracer_.open(options.trace_path, options.notice == fallback_notice::silent);
    } catch (trace_error const& e) {
      if (env.trace_path) { throw trace_error(std::string("TIERPOOL_TRACE: ") + e.what()); }
      throw;
    }
  }

  // Prefetch predictor ("none": no hook on the acquire path at all).
  if (!options.prefetch.empty() && options.prefetch != "none") {
    try {
      predictor_.emplace(registry.create_predictor(options.prefetch));
    } catch (logic_error const& e) {
      if (env.prefetch) { throw logic_error(std::string("TIERPOOL_PREFETCH: ") + e.what()); }
      throw;
    }
    predictor_active_ = predictor_->name() != "none";
    plan_.tensors.reserve(64);
  }

  // Copy streams (at least one per direction) and the retire stream.
  engine_.make_copy_streams(cfg.h2d_streams, cfg.d2h_streams);

  // Live figures, last: nothing after this throws, and the refresh thread reads a pool
  // that is whole. Best effort: a pool that cannot publish works as usual.
  if (options.publish.enabled) {
    std::string const name = options.publish.name.empty() ? program_name() : options.publish.name;
    try {
      publisher_ = telemetry::publisher::create(name, caps.name, caps.device_name, options.publish.interval_ms,
                                                [this] { return stats(); }, publish_error_, options.publish.group);
    } catch (std::exception const& e) {  // no memory, or no thread: the pool goes on without
      publish_error_ = e.what();
    }
    if (!publisher_ && options.notice == fallback_notice::stderr_line) {
      std::fprintf(stderr, "tierpool: not publishing live figures for `tierpool top`: %s\n", publish_error_.c_str());
    }
  }
}

pool_impl::~pool_impl()
{
  stop_publishing();  // first: its thread reads the tiers
  tracer_.close();    // close() did not (live leases): report a failure, do not drop it
  // Every handle is gone (they hold shared_ptrs to us): free what is left.
  {
    std::lock_guard lock(table_mtx_);
    table_.for_each([this](std::shared_ptr<tensor_record> const& rec) {
      std::lock_guard rl(rec->mtx);
      free_slots_locked(*rec);
    });
    table_.clear();
  }
  engine_.shutdown();  // waits for the copies, frees the tiers, destroys the copy streams
  streams_.reset();  // destroys the user streams, releases the marks' events
  events_.reset();
}

// ---------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------

void pool_impl::check_open(char const* what) const
{
  if (closed_.load(std::memory_order_acquire)) [[unlikely]] {
    throw logic_error(std::string("pool::") + what + ": the pool is closed");
  }
}

tensor_record& pool_impl::checked_record(tensor const& t, char const* what) const
{
  if (t.rec_ == nullptr) [[unlikely]] {
    throw logic_error(std::string("pool::") + what + ": empty tensor handle (moved from or freed)");
  }
  prefetch_lines(t.rec_.get(), kRecordHotLines);  // Note [Record layout] (record_slab.cpp)
  if (t.rec_->owner != this) [[unlikely]] {
    throw logic_error(std::string("pool::") + what + ": the tensor belongs to another pool");
  }
  check_open(what);
  return *t.rec_;
}

std::size_t pool_impl::device_tier() const
{
  for (std::size_t k = 0; k < engine_.tiers().size(); ++k) {
    if (device_accessible(engine_.tiers()[k]->kind)) { return k; }
  }
  throw logic_error("pool::acquire: the pool has no device-accessible tier (device or managed)");
}

// Note [Low-memory callbacks run unlocked]
// ------------------------------------------
// Step 7 of the ladder (pool::add_low_memory_callback) runs at the top of a request, not
// inside engine_.place(): when the whole ladder failed with out_of_memory, the request has let go
// of every lock (its tensor's record too), the callbacks run, and the request runs once
// more from the start (it rechecks everything: another thread may have moved the tensor
// meanwhile). So a callback may free, release, demote or prefetch any tensor, the
// requested one included, and can never deadlock against a thread that locks records in
// id order (close) or against another thread's callback: the old step 7 ran
// with the request's record locked, and a callback locking a second record broke the lock
// order (Note [Lock order of the pool]).
//
// While the callbacks and the second attempt run, the request's record is "paused"
// (tensor_record::paused) and kept alive by a reference of its own: a callback may destroy
// the tensor's last handle, and the request still finishes normally. A free of a paused
// record is deferred as for a leased one (free_when_unpinned): if the second attempt made a
// lease, the last release frees the tensor; if not (demote, or a request that failed
// again), the unpause does (record_lock's unlock). The free is recorded in a trace when it
// happens, after the request's access. pool::free on a paused tensor defers alike.
template <class Body>
auto pool_impl::with_low_memory_step(tensor_record* rec, std::shared_ptr<tensor_record> const* handle, Body&& body)
  -> decltype(body(false))
{
  // Busy retries (Note [Busy victims are waited for, not failed on], placement.cpp): an
  // attempt that failed only because other threads held its victims has let go of every
  // lock; back off (outside the quiesce gate) and start over, within the bounds.
  using result = decltype(body(false));
  // The retries, out of line: the first attempt costs the hit path nothing more.
  auto again = [&](busy_failure const& first_failure) __attribute__((noinline)) -> result {
    auto const t0 = std::chrono::steady_clock::now();  // of the first busy failure
    auto const timeout = std::chrono::milliseconds(contention_.busy_timeout_ms);
    std::uint32_t attempts = 1;
    std::size_t last_busy = first_failure.figures().busy_bytes;
    bool last_pins = first_failure.pins();
    tier_id last_tier = first_failure.tier();
    std::size_t const requested = first_failure.requested();
    for (;;) {
      auto const waited = std::chrono::steady_clock::now() - t0;
      if (attempts >= contention_.busy_attempts || waited >= timeout) {
        auto const k = static_cast<std::uint32_t>(last_tier);
        oom_figures f{};
        std::string msg;
        {
          std::lock_guard tl(engine_.tiers()[k]->mem->mutex());
          msg = engine_.oom_message_locked(k, requested, &f, last_busy, attempts, std::chrono::duration<double>(waited).count(),
                                   last_pins);
        }
        throw out_of_memory(std::move(msg), last_tier, requested, f);
      }
      counters_.busy_retries.fetch_add(1, std::memory_order_relaxed);
      bool const out = gate_.suspend();
      if (attempts <= 4) {
        std::this_thread::yield();
      } else {
        auto const t1 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(std::chrono::microseconds(
          std::min<std::uint64_t>(1000, std::uint64_t{20} << std::min<std::uint32_t>(attempts - 5, 6))));
        streams_->add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
      }
      gate_.resume(out, thread_shard());
      try {
        return body(true);
      } catch (busy_failure const& e) {
        ++attempts;
        last_busy = e.figures().busy_bytes;
        last_pins = e.pins();
        last_tier = e.tier();
      }
    }
  };
  auto attempt = [&](bool retry) -> result {
    try {
      return body(retry);
    } catch (busy_failure const& e) {
      return again(e);
    }
  };
  std::exception_ptr first;
  std::uint32_t k = 0;
  std::size_t bytes = 0;
  try {
    return attempt(false);
  } catch (out_of_memory const& e) {
    if (!lowmem_.any()) { throw; }
    first = std::current_exception();
    k = static_cast<std::uint32_t>(e.tier());
    bytes = e.requested();
  }
  // The handle is still alive here (no callback ran yet); it may not be after.
  std::shared_ptr<tensor_record> const keep = handle != nullptr ? *handle : nullptr;
  struct pause {
    tensor_record* rec;
    explicit pause(tensor_record* r) : rec(r)
    {
      if (rec == nullptr) { return; }
      record_lock rl(*rec);
      ++rec->paused;
    }
    pause(pause const&) = delete;
    pause& operator=(pause const&) = delete;
    ~pause()
    {
      if (rec == nullptr) { return; }
      rec->mtx.lock();  // not record_lock: it may throw; the unlock below does what its would
      --rec->paused;
      bool const dropped = rec->free_when_unpinned && rec->pins == 0 && rec->paused == 0 && rec->keep_self != nullptr;
      std::shared_ptr<record_owner> keep_alive;
      std::shared_ptr<tensor_record> keep_self;
      if (dropped) { rec->owner->finish_dropped_locked(*rec, keep_alive, keep_self); }
      rec->mtx.unlock();
    }
  } const paused{rec};
  bool ran = false;
  {
    // The callbacks run outside the quiesce gate: they may call the pool, or wait for
    // other threads' pool calls (Note [The quiesce gate]).
    bool const out = gate_.suspend();
    try {
      ran = run_low_memory_callbacks(k, bytes);
    } catch (...) {
      gate_.resume(out, thread_shard());
      throw;
    }
    gate_.resume(out, thread_shard());
  }
  if (!ran) { std::rethrow_exception(first); }
  return attempt(true);
}

// ---------------------------------------------------------------------------------------
// allocate
// ---------------------------------------------------------------------------------------

std::shared_ptr<tensor_record> pool_impl::make_record()
{
  void* const mem = record_blocks_->allocate();
  auto* const raw = new (mem) tensor_record();  // no member throws on default construction
  // On failure to get a control block the constructor calls the deleter: nothing leaks.
  return std::shared_ptr<tensor_record>(raw, slab_deleter<tensor_record>{record_blocks_},
                                        record_allocator<tensor_record>(control_blocks_));
}

void pool_impl::free_slots_locked(tensor_record& rec) noexcept
{
  if (rec.freed) { return; }
  engine_.vacate_all_locked(rec);
  counters_.live_tensors.fetch_sub(1, std::memory_order_relaxed);
  counters_.live_tensor_bytes.fetch_sub(rec.bytes, std::memory_order_relaxed);
  tenants_.credit(rec.opts.tenant, rec.bytes);
  if (predictor_active_) {
    std::lock_guard lock(predictor_mtx_);
    predictor_->on_free(rec.id);
  }
}

tensor pool_impl::allocate(std::size_t bytes, tensor_options options)
{
  op_gate::scope const op(gate_, thread_shard());
  check_open("allocate");
  TIERPOOL_EXPECTS(bytes > 0, "pool::allocate: bytes must be > 0");
  auto const n = static_cast<std::uint32_t>(engine_.tiers().size());
  if (options.preferred_tier) {
    TIERPOOL_EXPECTS(static_cast<std::uint32_t>(*options.preferred_tier) < n,
                     "pool::allocate: preferred_tier " + std::to_string(static_cast<std::uint32_t>(*options.preferred_tier)) +
                       " is unknown (the pool has " + std::to_string(n) + " tiers)");
  }
  bool fits_somewhere = false;
  for (auto const& ts : engine_.tiers()) { fits_somewhere = fits_somewhere || bytes <= ts->capacity; }
  if (!fits_somewhere) {
    std::string msg = "tierpool: out of memory: tensor";
    if (!options.name.empty()) { msg += " '" + options.name + "'"; }
    msg += " of " + format_byte_size(bytes) + " (" + std::to_string(bytes) + " bytes) is larger than every tier:";
    for (std::size_t k = 0; k < engine_.tiers().size(); ++k) {
      msg += std::string(k == 0 ? " " : ", ") + engine_.tiers()[k]->name + " " + format_byte_size(engine_.tiers()[k]->capacity);
    }
    msg += "; cause: capacity — raise tier_options::capacity_bytes of a tier (TIERPOOL_DEVICE_BYTES for the "
           "device tier) or split the tensor";
    throw out_of_memory(msg, tier_id{n - 1}, bytes);
  }

  tenants_.charge(options.tenant, bytes, options.name);
  struct uncharge_on_throw {
    pool_impl* self;
    std::uint32_t tenant;
    std::size_t bytes;
    bool armed{true};
    ~uncharge_on_throw()
    {
      if (armed) { self->tenants_.credit(tenant, bytes); }
    }
  } guard{this, options.tenant, bytes};
  std::shared_ptr<tensor_record> rec = make_record();
  rec->owner = this;
  rec->bytes = bytes;
  if (options.next_use) { rec->next_use.store(std::min(*options.next_use, kNoForecast - 1), std::memory_order_relaxed); }
  rec->opts = std::move(options);
  rec->prefers_device_accessible =
    rec->opts.preferred_tier && device_accessible(engine_.tiers()[static_cast<std::uint32_t>(*rec->opts.preferred_tier)]->kind);
  rec->slots.resize(n);

  // Placement (see docs/chapters/tiers.md): the preferred tier with the whole ladder; else
  // the fastest tier with room without evicting; else the whole ladder in the lowest tier
  // that can hold the tensor.
  std::optional<block> b;
  std::uint32_t where = 0;
  event_handle after{};
  stream_handle after_stream{};
  with_low_memory_step(nullptr, nullptr, [&](bool) {
    place_failure why;
    if (rec->opts.preferred_tier) {
      where = static_cast<std::uint32_t>(*rec->opts.preferred_tier);
      b = engine_.place(where, bytes, place_mode::ladder, &why, &after, &after_stream);
    } else {
      for (std::uint32_t k = 0; k < n && !b; ++k) {
        if (bytes <= engine_.tiers()[k]->capacity) {
          b = engine_.place(k, bytes, place_mode::try_only, nullptr, &after, &after_stream);
          where = k;
        }
      }
      for (std::uint32_t k = n; k-- > 0 && !b;) {
        if (bytes <= engine_.tiers()[k]->capacity) {
          where = k;
          b = engine_.place(k, bytes, place_mode::ladder, &why, &after, &after_stream);
          break;
        }
      }
    }
    if (!b) { engine_.throw_place_failure(where, bytes, why); }
  });

  // Until the record holds the block, a failure (std::bad_alloc growing the table) hands
  // the block back to the tier, and a stream-ordered reuse's pending event with it.
  try {
    std::lock_guard lock(table_mtx_);
    table_.insert(next_id_, rec);  // unchanged if it throws
    rec->id = tensor_id{next_id_++};
  } catch (...) {
    engine_.unplace(where, *b, after, after_stream);
    throw;
  }
  {
    std::lock_guard rl(rec->mtx);
    copy_slot& s = rec->slots[where];
    s.state = copy_state::valid;
    s.blk = *b;
    s.ready = after;  // a reused block: its previous occupant's write-back, if still running
    engine_.insert_into_policy(*rec, where, true);
  }
  counters_.live_tensors.fetch_add(1, std::memory_order_relaxed);
  counters_.live_tensor_bytes.fetch_add(bytes, std::memory_order_relaxed);
  guard.armed = false;  // charged for good: free_slots_locked uncharges
  tensor_id const id = rec->id;
  if (tracer_.active()) [[unlikely]] {
    trace::event e{};
    e.kind = trace::event_kind::allocate;
    e.tensor = static_cast<std::uint64_t>(id);
    e.bytes = bytes;
    e.name = rec->opts.name;
    if (rec->opts.preferred_tier) { e.tier = static_cast<std::uint32_t>(*rec->opts.preferred_tier); }
    trace_record(std::move(e));
  }
  return tensor(shared_from_this(), std::move(rec), id, bytes);
}

// ---------------------------------------------------------------------------------------
// acquire
// ---------------------------------------------------------------------------------------


lease pool_impl::make_lease(tensor_record& rec, std::uint32_t k, access_mode access, stream_handle s, bool host)
{
  lease l;
  // Raw pointers: no shared refcount on the hit path. The tensor handle keeps both alive;
  // once it is gone, tensor_record::keep_alive / keep_self do until the last release.
  l.impl_ = this;
  l.rec_ = &rec;
  l.data_ = rec.slots[k].blk.ptr;
  l.bytes_ = rec.bytes;
  l.id_ = rec.id;
  l.stream_ = s;
  l.access_ = access;
  l.host_ = host;
  l.tier_ = k;
  engine_.pin_locked(rec, k);
  if (access != access_mode::read) { ++rec.write_pins; }
  ++thread_leases();
  return l;
}

lease pool_impl::acquire(tensor const& t, access_mode access, stream_handle stream)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "acquire");
  auto d = static_cast<std::uint32_t>(device_tier());
  stream_entry* const se = streams_->find(stream);
  if (se == nullptr || se->internal || !se->live.load(std::memory_order_relaxed)) [[unlikely]] {
    throw logic_error("pool::acquire: unknown stream " + std::to_string(stream.value) +
                      (se == nullptr ? " (not made by create_stream or wrap_native_stream, nor the default stream)"
                                     : se->internal ? " (a copy stream of the pool)" : " (destroyed)"));
  }
  if (engine_.prefetch_pending()) [[unlikely]] { engine_.serve_prefetches(); }
  bool counted = false;
  try {
    return with_low_memory_step(
      &rec, &t.rec_, [&](bool retry) { return acquire_locked(rec, d, *se, stream, access, retry, counted); });
  } catch (...) {
    if (counted) { counters_.acquire_failures.fetch_add(1, std::memory_order_relaxed); }
    throw;
  }
}

lease pool_impl::acquire_locked(tensor_record& rec, std::uint32_t d, stream_entry& se, stream_handle stream,
                                access_mode access, bool retry, bool& counted)
{
  record_lock rl(rec);
  TIERPOOL_EXPECTS(!rec.freed, "pool::acquire: the tensor was freed");
  if (rec.slots[d].state != copy_state::valid && rec.prefers_device_accessible) [[unlikely]] {
    // A tensor placed in a slower device-accessible tier (managed) on purpose is used where
    // it is when its copy there is valid: the lease gets the managed pointer and the pages
    // are steered to the device (no copy into the device tier). Other tensors come back
    // into the device tier, whose budget is what the program sized.
    auto const k = static_cast<std::uint32_t>(*rec.opts.preferred_tier);
    if (k > d && k < rec.slots.size() && device_accessible(engine_.tiers()[k]->kind) &&
        rec.slots[k].state == copy_state::valid) {
      d = k;
    }
  }
  copy_slot& slot = rec.slots[d];
  bool const write = access != access_mode::read;

  if (slot.state == copy_state::valid) {
    // Hit: no backend call when the copy-in is known complete.
    std::size_t const sh = thread_shard();
    counter_shard& cs = counters_.shards[sh];
    if (!retry) [[likely]] { bump(cs.hits, std::uint64_t{1}, sh); }
    counted = true;
    if (rec.prefetched) {
      rec.prefetched = false;
      bump(engine_.ready_complete(slot) ? cs.prefetch_hits : cs.prefetch_late, std::uint64_t{1}, sh);
    }
    if (slot.ready && !engine_.ready_complete(slot)) { streams_->wait_event_or_sync(stream, slot.ready); }
    engine_.note_access(rec, d, write);
  } else {
    if (!retry) { bump(counters_.shards[thread_shard()].misses, std::uint64_t{1}, thread_shard()); }
    counted = true;
    rec.prefetched = false;
    (void)engine_.ensure_valid_locked(rec, d, access, place_mode::ladder);
    if (slot.ready) { streams_->wait_event_or_sync(stream, slot.ready); }
  }
  if (write) {
    // Work already queued that reads this copy (a write-back, another stream) runs first.
    for (stream_use const& u : slot.users) { (void)streams_->order_after_use(stream, u, slot.pins == 0); }
    engine_.mark_others_stale_locked(rec, d);
  }
  if (engine_.tiers()[d]->kind == tier_kind::managed && !slot.pages_on_device) [[unlikely]] { engine_.steer_to_device(rec, slot, stream); }
  add_use(slot.users, se, se.gen.load(std::memory_order_relaxed));  // settled at release
  return make_lease(rec, d, access, stream, false);
}

lease pool_impl::acquire_host(tensor const& t, access_mode access)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "acquire_host");
  if (engine_.prefetch_pending()) [[unlikely]] { engine_.serve_prefetches(); }
  bool counted = false;
  try {
    return with_low_memory_step(&rec, &t.rec_,
                                [&](bool retry) { return acquire_host_locked(rec, access, retry, counted); });
  } catch (...) {
    if (counted) { counters_.acquire_failures.fetch_add(1, std::memory_order_relaxed); }
    throw;
  }
}

lease pool_impl::acquire_host_locked(tensor_record& rec, access_mode access, bool retry, bool& counted)
{
  auto const n = static_cast<std::uint32_t>(engine_.tiers().size());
  record_lock rl(rec);
  TIERPOOL_EXPECTS(!rec.freed, "pool::acquire_host: the tensor was freed");
  bool const write = access != access_mode::read;

  // The fastest host-accessible copy that is valid; else fill one (a stale block first,
  // then a tier with room, then the lowest host-accessible tier with the whole ladder).
  std::optional<std::uint32_t> h;
  for (std::uint32_t k = 0; k < n && !h; ++k) {
    if (is_host_accessible(engine_.tiers()[k]->kind) && rec.slots[k].state == copy_state::valid) { h = k; }
  }
  if (h) {
    if (!retry) { bump(counters_.shards[thread_shard()].hits, std::uint64_t{1}, thread_shard()); }
    counted = true;
    engine_.note_access(rec, *h, write);
  } else {
    if (!retry) { bump(counters_.shards[thread_shard()].misses, std::uint64_t{1}, thread_shard()); }
    counted = true;
    std::optional<std::uint32_t> last_host;
    for (std::uint32_t k = 0; k < n && !h; ++k) {
      if (!is_host_accessible(engine_.tiers()[k]->kind)) { continue; }
      last_host = k;
      if (rec.slots[k].state == copy_state::stale) {
        (void)engine_.ensure_valid_locked(rec, k, access, place_mode::try_only);
        h = k;
      }
    }
    TIERPOOL_EXPECTS(last_host.has_value(), "pool::acquire_host: the pool has no host-accessible tier");
    for (std::uint32_t k = 0; k < n && !h; ++k) {
      if (is_host_accessible(engine_.tiers()[k]->kind) && rec.bytes <= engine_.tiers()[k]->capacity &&
          engine_.ensure_valid_locked(rec, k, access, place_mode::try_only) != fill_result::no_room) {
        h = k;
      }
    }
    if (!h) {
      (void)engine_.ensure_valid_locked(rec, *last_host, access, place_mode::ladder);
      h = *last_host;
    }
  }
  copy_slot& slot = rec.slots[*h];
  // A managed copy may be being written by device work of a lease: wait for every use.
  bool const managed = engine_.tiers()[*h]->kind == tier_kind::managed;
  engine_.host_wait_slot(slot, write || managed);
  slot.pages_on_device = slot.pages_on_device && !managed;  // the host touches the pages (they fault back)
  if (write) { engine_.mark_others_stale_locked(rec, *h); }
  return make_lease(rec, *h, access, stream_handle{}, true);
}

// ---------------------------------------------------------------------------------------
// prefetch, demote
// ---------------------------------------------------------------------------------------


std::uint64_t pool_impl::add_low_memory_callback(low_memory_callback cb) { return lowmem_.add(std::move(cb)); }

void pool_impl::remove_low_memory_callback(std::uint64_t id) { lowmem_.remove(id); }

bool pool_impl::run_low_memory_callbacks(std::uint32_t k, std::size_t bytes)
{
  if (!lowmem_.any()) { return false; }
  tier_state const& ts = *engine_.tiers()[k];
  low_memory_event ev{};
  ev.tier = tier_id{k};
  ev.tier_name = ts.name;
  ev.bytes_needed = bytes;
  ev.capacity_bytes = ts.capacity;
  ev.pinned_bytes = ts.pinned_bytes();
  return lowmem_.run(ev);
}

void pool_impl::set_quota(std::uint32_t tenant, std::size_t bytes) { tenants_.set_quota(tenant, bytes); }

void pool_impl::set_next_use(tensor const& t, std::optional<tick> next_use)
{
  tensor_record& rec = checked_record(t, "set_next_use");
  tick v = next_use.value_or(kNoForecast);
  if (next_use && v == kNoForecast) { v = kNoForecast - 1; }  // keep the sentinel free (a forecast 2^64-2 ticks away)
  rec.next_use.store(v, std::memory_order_relaxed);
}

void pool_impl::prefetch(tensor const& t, tier_id to)
{
  op_gate::scope const op(gate_, thread_shard());
  (void)checked_record(t, "prefetch");
  auto const k = static_cast<std::uint32_t>(to);
  TIERPOOL_EXPECTS(k < engine_.tiers().size(), "pool::prefetch: unknown tier " + std::to_string(k));
  if (engine_.prefetch_pending()) { engine_.serve_prefetches(); }  // older requests first
  if (tracer_.active()) [[unlikely]] {
    trace::event e{};
    e.kind = trace::event_kind::prefetch;
    e.tensor = static_cast<std::uint64_t>(t.id());
    e.tier = k;
    trace_record(std::move(e));
  }
  engine_.prefetch_record(t.rec_, k, false);
}

void pool_impl::trace_record(trace::event e) noexcept
{
  if (!tracer_.active()) { return; }
  if (closed_.load(std::memory_order_acquire)) { return; }  // close() closed the recorder: a call that is about to throw
  e.time_ns = backend_->now();
  tracer_.record(e);
}

void pool_impl::trace_access(lease const& l) noexcept
{
  if (!tracer_.active()) { return; }
  trace::event e{};
  e.kind = trace::event_kind::access;
  e.tensor = static_cast<std::uint64_t>(l.id());
  e.mode = l.access() == access_mode::read         ? trace::access_kind::read
           : l.access() == access_mode::read_write ? trace::access_kind::read_write
                                                   : trace::access_kind::write_discard;
  if (l.host_) {
    e.stream = trace::host_stream;
  } else if (stream_entry const* se = streams_->find(l.stream())) {
    e.stream = se->trace_id;
  }
  trace_record(std::move(e));
}


void pool_impl::predict_after(tensor_id id, std::size_t bytes, bool write)
{
  op_gate::scope const op(gate_, thread_shard());
  thread_local std::vector<tensor_id> plan_ids_;  // this thread's copy of the plan (keeps its capacity)
  {
    std::lock_guard lock(predictor_mtx_);
    access_view a{};
    a.id = id;
    a.bytes = bytes;
    a.write = write;
    a.sequence = access_seq_++;
    predictor_->on_access(a, plan_);
    plan_ids_.assign(plan_.tensors.begin(), plan_.tensors.end());  // reserved: no allocation once warm
  }
  auto const d = static_cast<std::uint32_t>(device_tier());
  for (tensor_id const next : plan_ids_) {
    std::shared_ptr<tensor_record> rec;
    {
      std::lock_guard lock(table_mtx_);
      if (auto const* r = table_.find(static_cast<std::uint64_t>(next))) { rec = *r; }
    }
    if (rec != nullptr && !holds_record(*rec)) { engine_.prefetch_record(rec, d, true); }
  }
}



void pool_impl::demote(tensor const& t, tier_id to)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "demote");
  auto const k = static_cast<std::uint32_t>(to);
  TIERPOOL_EXPECTS(k < engine_.tiers().size(), "pool::demote: unknown tier " + std::to_string(k));
  with_low_memory_step(&rec, &t.rec_, [&](bool) { demote_locked(rec, k); });
}

void pool_impl::demote_locked(tensor_record& rec, std::uint32_t k)
{
  record_lock rl(rec);
  TIERPOOL_EXPECTS(!rec.freed, "pool::demote: the tensor was freed");
  TIERPOOL_EXPECTS(rec.pins == 0, "pool::demote: tensor " + std::to_string(static_cast<std::uint64_t>(rec.id)) +
                                    " has " + std::to_string(rec.pins) + " live lease(s)");
  (void)engine_.ensure_valid_locked(rec, k, access_mode::read, place_mode::ladder);
  for (std::uint32_t j = 0; j < k; ++j) {
    if (rec.slots[j].state != copy_state::absent) { engine_.vacate_locked(rec, j); }
  }
}

// ---------------------------------------------------------------------------------------
// free, release
// ---------------------------------------------------------------------------------------

void pool_impl::free(tensor& t)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "free");
  bool deferred = false;
  {
    record_lock rl(rec);
    TIERPOOL_EXPECTS(!rec.freed, "pool::free: the tensor was already freed");
    if (rec.pins != 0) {
      throw logic_error("pool::free: tensor " + std::to_string(static_cast<std::uint64_t>(rec.id)) +
                        (rec.opts.name.empty() ? std::string() : " '" + rec.opts.name + "'") + " has " +
                        std::to_string(rec.pins) + " live lease(s); release them first");
    }
    if (rec.paused != 0) [[unlikely]] {
      // A low-memory callback freeing the tensor whose request called it: freed when that
      // request ends (Note [Low-memory callbacks run unlocked]).
      rec.free_when_unpinned = true;
      rec.keep_alive = t.impl_;
      rec.keep_self = t.rec_;
      deferred = true;
    } else {
      free_slots_locked(rec);
    }
  }
  if (!deferred) {  // a deferred free leaves the table when it happens (free_dropped_locked)
    {
      std::lock_guard lock(table_mtx_);
      table_.erase(static_cast<std::uint64_t>(rec.id));
    }
    if (tracer_.active()) [[unlikely]] {
      trace_record({.kind = trace::event_kind::free, .tensor = static_cast<std::uint64_t>(rec.id)});
    }
  }
  t.impl_.reset();
  t.rec_.reset();
  t.bytes_ = 0;
}

void pool_impl::free_handle(tensor& t) noexcept
{
  if (t.rec_ == nullptr) { return; }
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = *t.rec_;
  bool erase = false;
  {
    record_lock rl(rec);
    if (!rec.freed && !rec.free_when_unpinned) {
      if (rec.pins != 0 || rec.paused != 0) {
        // The last lease release frees it, or the end of the request waiting on low-memory
        // callbacks (Note [Low-memory callbacks run unlocked]). The leases hold a raw pool
        // pointer: this record (which they hold) now keeps the pool alive until then (a
        // cycle the deferred free breaks). It stays in the table meanwhile: validate() and
        // close() see it, and eviction finds its unleased copies.
        rec.free_when_unpinned = true;
        rec.keep_alive = t.impl_;
        rec.keep_self = t.rec_;
      } else {
        free_slots_locked(rec);
        erase = true;
      }
    }
  }
  if (erase) {
    {
      std::lock_guard lock(table_mtx_);
      table_.erase(static_cast<std::uint64_t>(rec.id));
    }
    if (tracer_.active()) [[unlikely]] {
      trace_record({.kind = trace::event_kind::free, .tensor = static_cast<std::uint64_t>(rec.id)});
    }
  }
}

void pool_impl::free_dropped_locked(tensor_record& rec) noexcept
{
  if (rec.freed) { return; }  // close() freed it
  free_slots_locked(rec);
  {
    std::lock_guard lock(table_mtx_);  // a leaf lock
    table_.erase(static_cast<std::uint64_t>(rec.id));
  }
  if (tracer_.active()) [[unlikely]] {
    trace_record({.kind = trace::event_kind::free, .tensor = static_cast<std::uint64_t>(rec.id)});
  }
}

void pool_impl::finish_dropped_locked(tensor_record& rec, std::shared_ptr<record_owner>& keep_alive,
                                      std::shared_ptr<tensor_record>& keep_self) noexcept
{
  free_dropped_locked(rec);
  keep_alive = std::move(rec.keep_alive);
  keep_self = std::move(rec.keep_self);
}

void pool_impl::release(lease& l) noexcept
{
  if (l.rec_ == nullptr) { return; }
  std::shared_ptr<record_owner> keep_alive;     // dropped last: it may end this pool (after the gate's scope)
  std::shared_ptr<tensor_record> keep_self;  // dropped after the unlock: it may end the record
  op_gate::scope const op(gate_, thread_shard());
  if (tracer_.active()) [[unlikely]] {
    trace::event e{};
    e.kind = trace::event_kind::release;
    e.tensor = static_cast<std::uint64_t>(l.id_);
    if (l.host_) {
      e.stream = trace::host_stream;
    } else if (stream_entry const* se = streams_->find(l.stream_)) {
      e.stream = se->trace_id;
    }
    trace_record(std::move(e));
  }
  tensor_record& rec = *l.rec_;
  {
    record_lock rl(rec);
    if (!l.host_ && l.tier_ < rec.slots.size()) {
      // Settle the lease's use: its work is enqueued now (Note [Last-use marks]).
      for (stream_use& u : rec.slots[l.tier_].users) {
        if (u.stream->handle == l.stream_) {
          u.gen = u.stream->gen.load(std::memory_order_seq_cst);
          break;
        }
      }
    }
    engine_.unpin_locked(rec, l.tier_);
    --thread_leases();
    if (l.access_ != access_mode::read) { --rec.write_pins; }
    if (rec.pins == 0 && rec.paused == 0 && rec.free_when_unpinned) {
      // The handle died while leased: the last release frees it (a paused request's end
      // does when one waits on low-memory callbacks).
      finish_dropped_locked(rec, keep_alive, keep_self);
    }
  }
  if (engine_.prefetch_pending()) [[unlikely]] { engine_.serve_prefetches(); }
}

// ---------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------

stream_handle pool_impl::create_stream(int priority)
{
  check_open("create_stream");
  return streams_->create(priority);
}

stream_handle pool_impl::wrap_native_stream(void* native)
{
  check_open("wrap_native_stream");
  return streams_->wrap(native);
}

void pool_impl::destroy_stream(stream_handle s) { streams_->destroy(s); }

void pool_impl::synchronize(stream_handle s) { streams_->synchronize(s); }

// ---------------------------------------------------------------------------------------
// close
// ---------------------------------------------------------------------------------------

void pool_impl::close()
{
  op_gate::scope const op(gate_, thread_shard());
  std::lock_guard cl(close_mtx_);
  if (closed_.load(std::memory_order_acquire)) { return; }
  std::vector<std::shared_ptr<tensor_record>> const recs = records_by_id();
  // Every record stays locked from the lease check to its free (in id order):
  // an acquire racing with close() either pinned before the check (close throws) or sees
  // the record freed afterwards (it throws), never a lease on freed memory.
  std::vector<std::unique_lock<std::mutex>> rlocks;
  rlocks.reserve(recs.size());
  for (auto const& rec : recs) { rlocks.emplace_back(rec->mtx); }
  std::string leased;
  std::size_t n_leases = 0;
  for (auto const& rec : recs) {
    if (rec->pins != 0) {
      n_leases += rec->pins;
      if (leased.size() < 400) {
        leased += (leased.empty() ? "" : ", ") + std::to_string(static_cast<std::uint64_t>(rec->id));
        if (!rec->opts.name.empty()) { leased += " '" + rec->opts.name + "'"; }
        leased += " (" + std::to_string(rec->pins) + ")";
      }
    }
  }
  if (n_leases != 0) {
    throw logic_error("pool::close: " + std::to_string(n_leases) + " lease(s) still live on tensors " + leased +
                      "; end them first (nothing was freed)");
  }
  closed_.store(true, std::memory_order_release);
  engine_.close_prefetch_queue();
  for (auto const& rec : recs) { free_slots_locked(*rec); }
  rlocks.clear();
  {
    std::lock_guard lock(table_mtx_);
    table_.clear();
  }
  engine_.synchronize_copy_streams();
  for (auto& ts : engine_.tiers()) {
    std::lock_guard tl(ts->mem->mutex());
    while (ts->mem->deferred_bytes() != 0) {
      if (ts->mem->reclaim_oldest_blocking() != status::ok) { break; }
    }
    (void)ts->mem->release_unused_chunks();
  }
  stop_publishing();  // a closed pool has no figures to show
  tracer_.close();    // the trace is complete when close() returns; tracing_error() says if not
}

void pool_impl::stop_publishing() noexcept
{
  std::unique_ptr<telemetry::publisher> p;
  {
    std::lock_guard lock(publish_mtx_);
    p = std::move(publisher_);
  }
  p.reset();  // joins the refresh thread (which takes no lock of ours but the tiers') and unlinks
}

void pool_impl::publish()
{
  std::lock_guard lock(publish_mtx_);
  if (publisher_) { publisher_->publish(); }
}

std::string pool_impl::stats_segment() const
{
  std::lock_guard lock(publish_mtx_);
  return publisher_ ? publisher_->segment() : std::string();
}

std::string pool_impl::publishing_error() const
{
  std::lock_guard lock(publish_mtx_);
  return publish_error_;
}

void pool_impl::close_from_destructor() noexcept
{
  try {
    close();
  } catch (logic_error const& e) {
    std::fprintf(stderr, "tierpool: pool destroyed with live leases (%s); its memory is kept until the last one ends\n",
                 e.what());
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tierpool: pool destroyed: close failed: %s\n", e.what());
  }
}

}  // namespace tierpool::detail

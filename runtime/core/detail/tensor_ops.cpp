// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// tensor_ops.cpp — owns the tensor operations of the pool: allocate (placement of a new
// tensor), acquire and acquire_host (hit or miss, then a lease), release, prefetch,
// set_next_use, demote and free (deferred while leased). Each request that may run out of
// memory runs inside with_low_memory_step (request_retry.hpp); the moves themselves are
// the migration engine's (runtime/migration/).
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/detail/pool_impl.hpp"
#include "core/detail/request_retry.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

// Note [Acquire during stream capture]
//   While a stream is being captured into a CUDA graph, its work is recorded, not run, and
//   CUDA forbids host waits and event queries on the capturing thread (in the default
//   global mode, on every thread) and anything on the stream that cannot be captured; a
//   forbidden call fails and invalidates the capture. The pool asks the backend
//   (backend::is_capturing) only where an acquire would make a backend call, so the hit
//   path of a resident tensor stays free of them:
//   - an acquire on a capturing stream works when the tensor's device copy is valid, its
//     copy-in needs no wait (none pending, or the stream itself already waited for it: an
//     earlier acquire on this stream) and, for a write, no other stream's use must be
//     waited for; the lease is the usual one and release makes no backend call;
//   - any other acquire on it (a copy-in, an event query, a wait on another stream)
//     throws logic_error before it changes anything: make the tensor resident first
//     (acquire it on the stream, then synchronize);
//   - steering a managed copy to the device (a prefetch on the stream) is skipped;
//   - pool::prefetch, the predictor's prefetches and the prefetch queue are not served
//     while any capture is underway (backend::capture_underway): they are hints.
//   The graph holds the leased pointers: keep its tensors' leases until its last launch
//   (docs/chapters/backends.md, "Graph capture").
namespace {

// The tick an acquire stamps as the tensor's last use: the backend clock read now (`read`:
// a miss or an allocation), else the shard's last reading, read again every 64th hit
// (Note [Last use] in pool_snapshot.cpp).
[[gnu::always_inline]] inline tick shard_clock(tierpool::backend& be, counter_shard& cs, bool read) noexcept
{
  if (read || (cs.hits.load(std::memory_order_relaxed) & 63U) == 0) [[unlikely]] {
    tick const t = be.now();
    cs.clock.store(t, std::memory_order_relaxed);
    return t;
  }
  return cs.clock.load(std::memory_order_relaxed);
}

[[noreturn]] void refuse_in_capture(tensor_record const& rec, stream_handle s, char const* why)
{
  throw logic_error("pool::acquire: stream " + std::to_string(s.value) + " is being captured (a CUDA graph) and tensor " +
                    std::to_string(static_cast<std::uint64_t>(rec.id)) +
                    rec.quoted_name() + " " + why +
                    ": make the tensor resident before capture (acquire it on this stream, then synchronize the "
                    "stream); during a capture an acquire makes no copy, host wait or event query");
}

}  // namespace

bool pool_impl::capturing(stream_handle s) const noexcept
{
  bool on = false;
  return backend_->is_capturing(s, &on) == status::ok && on;
}

// ---------------------------------------------------------------------------------------
// allocate
// ---------------------------------------------------------------------------------------

record_ref pool_impl::make_record()
{
  return make_record_ref();
}

// Note [Names beside the records]
// -------------------------------
// Rationale: tensor_options::name is for messages, snapshots and traces, read on rare
// paths; a pool of a million KV blocks names none of them, and a pointer to the name in
// every record cost 8 bytes a tensor (issue 19).
// Approach: the pool keeps the names of named tensors in a map by id (its own leaf lock,
// taken inside table_mtx_ at allocate), added with the tensor's id and dropped at its free;
// a record only says that it has one (tensor_record::named), and record_owner::name_of
// looks it up.
// Limitations: a named tensor pays a map node (~60 bytes beside its name) instead of 8.
void pool_impl::add_name(std::uint64_t id, std::string const& name)
{
  std::lock_guard g(names_mtx_);
  names_.emplace(id, name);
}

void pool_impl::drop_name(std::uint64_t id) noexcept
{
  std::lock_guard g(names_mtx_);
  names_.erase(id);
}

std::string pool_impl::name_of(tensor_id id) const
{
  std::lock_guard g(names_mtx_);
  auto const it = names_.find(static_cast<std::uint64_t>(id));
  return it == names_.end() ? std::string() : it->second;
}

void pool_impl::free_slots_locked(tensor_record& rec) noexcept
{
  if (rec.freed) { return; }
  engine_.vacate_all_locked(rec);
  counters_.live_tensors.fetch_sub(1, std::memory_order_relaxed);
  counters_.live_tensor_bytes.fetch_sub(rec.bytes, std::memory_order_relaxed);
  tenants_.credit(rec.tenant, rec.bytes);
  if (rec.named) { drop_name(static_cast<std::uint64_t>(rec.id)); }
  if (prediction_.active) {
    prediction::outside_hold const lock(prediction_);
    prediction_.predictor->on_free(rec.id);
  }
}

tensor pool_impl::allocate(std::size_t bytes, tensor_options options)
{
  op_gate::scope const op(gate_, thread_shard());
  check_open("allocate");
  if (lost()) [[unlikely]] { throw_lost("allocate"); }
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

  if (options.tenant != 0) { engine_.add_tenant(options.tenant); }  // Note [Tenants' shares of a tier]
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
  record_ref rec = make_record();
  rec->owner_index = owner_index_;
  rec->bytes = bytes;
  if (options.next_use) {
    rec->next_use.store(std::min(*options.next_use, kNoForecast - 1), std::memory_order_relaxed);
  } else if (prediction_.planner != nullptr && !prediction_.planner->options().oracle) {
    rec->next_use.store(kNoForecast - 1, std::memory_order_relaxed);  // no forecast yet: beyond every one (Note [The planner's step])
  }
  rec->set_options(options);
  rec->prefers_device_accessible =
    options.preferred_tier && is_device_accessible(engine_.tiers()[static_cast<std::uint32_t>(*options.preferred_tier)]->kind);
  rec->slots.resize(n);

  // Placement (see docs/chapters/tiers.md): the preferred tier with the whole ladder; else
  // the fastest tier with room without evicting; else the whole ladder in the lowest tier
  // that can hold the tensor.
  place_result got;
  std::uint32_t where = 0;
  with_low_memory_step(nullptr, nullptr, [&](bool) {
    got = place_result{};
    if (options.preferred_tier) {
      where = static_cast<std::uint32_t>(*options.preferred_tier);
      got = engine_.place({.tier = where, .bytes = bytes, .mode = place_mode::ladder, .tenant = options.tenant});
    } else {
      // A tensor not compressible never lands in a compressed tier (tensor_options::compressible).
      auto const may = [&](std::uint32_t k) {
        return bytes <= engine_.tiers()[k]->capacity && (options.compressible || !engine_.compressed_tier(k));
      };
      for (std::uint32_t k = 0; k < n && !got.blk; ++k) {
        if (may(k)) {
          got = engine_.place({.tier = k, .bytes = bytes, .mode = place_mode::try_only, .tenant = options.tenant});
          where = k;
        }
      }
      for (std::uint32_t k = n; k-- > 0 && !got.blk;) {
        if (may(k)) {
          where = k;
          got = engine_.place({.tier = k, .bytes = bytes, .mode = place_mode::ladder, .tenant = options.tenant});
          break;
        }
      }
    }
    if (!got.blk) { engine_.throw_place_failure(where, bytes, got.why); }
  });

  placing_settle settle(engine_, where, options.tenant);  // at exit: in the policy, or given back
  settle.take(got);
  // Until the record holds the block, a failure (std::bad_alloc growing the table) hands
  // the block back to the tier, and a stream-ordered reuse's pending event with it.
  try {
    std::lock_guard lock(table_mtx_);
    if (!options.name.empty()) { add_name(next_id_, options.name); }  // unchanged if it throws
    try {
      table_.insert(next_id_, rec);  // unchanged if it throws
    } catch (...) {
      if (!options.name.empty()) { drop_name(next_id_); }
      throw;
    }
    rec->id = tensor_id{next_id_++};
  } catch (...) {
    engine_.unplace(where, *got.blk, got.after, got.after_stream);
    throw;
  }
  {
    std::lock_guard rl(rec->mtx);
    copy_slot& s = rec->slots.materialize(where);  // the first copy: inline, never allocates
    s.state = copy_state::valid;
    s.blk = *got.blk;
    s.ready = got.after;  // a reused block: its previous occupant's write-back, if still running
    engine_.insert_into_policy(*rec, where, true);
    rec->last_use = shard_clock(*backend_, counters_.shards[thread_shard()], true);
  }
  counters_.live_tensors.fetch_add(1, std::memory_order_relaxed);
  counters_.live_tensor_bytes.fetch_add(bytes, std::memory_order_relaxed);
  guard.armed = false;  // charged for good: free_slots_locked uncharges
  tensor_id const id = rec->id;
  if (prediction_.planner != nullptr) [[unlikely]] { plan_allocated(id, bytes); }
  if (tracer_.active()) [[unlikely]] {
    trace::event e{};
    e.kind = trace::event_kind::allocate;
    e.tensor = static_cast<std::uint64_t>(id);
    e.bytes = bytes;
    e.name = options.name;
    if (auto const pt = rec->preferred_tier()) { e.tier = static_cast<std::uint32_t>(*pt); }
    trace_record(std::move(e));
  }
  return tensor(shared_from_this(), std::move(rec), id, bytes);
}

// ---------------------------------------------------------------------------------------
// acquire
// ---------------------------------------------------------------------------------------


void pool_impl::check_write_leases(tensor_record const& rec, access_mode access, char const* what) const
{
  if (access != access_mode::read && rec.write_pins == std::numeric_limits<decltype(rec.write_pins)>::max()) [[unlikely]] {
    throw logic_error(std::string("pool::") + what + ": tensor " + std::to_string(static_cast<std::uint64_t>(rec.id)) +
                      rec.quoted_name() + " already has " + std::to_string(rec.write_pins) +
                      " live leases that may write, the most one tensor can hold; release some first");
  }
}

lease pool_impl::make_lease(tensor_record& rec, std::uint32_t k, access_mode access, stream_handle s, bool host)
{
  lease l;
  // Raw pointers: no shared refcount on the hit path. The tensor handle keeps both alive;
  // once it is gone, the table's reference and the pool's hold do until the last release
  // (Note [A dropped record's references]).
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
  if (access != access_mode::read) { ++rec.write_pins; }  // make_lease's callers checked the bound
  ++thread_leases();
  return l;
}

lease pool_impl::acquire(tensor const& t, access_mode access, stream_handle stream)
{
  op_gate::scope const op(gate_, thread_shard());
  if (lost()) [[unlikely]] { throw_lost("acquire"); }
  tensor_record& rec = checked_record(t, "acquire");
  if (prediction_.planner != nullptr && forecast_before(rec)) [[unlikely]] {  // not asleep: timed
    if (device_times_known(stream)) {  // Note [Copy-ins at the latest start]
      if (std::optional<tick> const at = backend_->known_stream_time(stream)) { acquire_began() = acquire_start{this, stream.value, *at}; }
    } else if (measured_times(stream) && !capturing(stream)) {  // Note [Device times measured with events]
      acquire_start& b = acquire_began();
      if (b.ev && b.pool == this) { timer_->drop(b.ev); }  // an acquire that never got told (it threw)
      b = acquire_start{this, stream.value, 0, timer_->mark(stream)};
    }
  }
  return acquire_record(rec, &t.rec_, access, stream);
}

lease pool_impl::acquire_record(tensor_record& rec, record_ref const* handle, access_mode access, stream_handle stream)
{
  auto d = static_cast<std::uint32_t>(device_tier());
  stream_entry* const se = streams_->find(stream);
  if (se == nullptr || se->internal || !se->live.load(std::memory_order_relaxed)) [[unlikely]] {
    throw logic_error("pool::acquire: unknown stream " + std::to_string(stream.value) +
                      (se == nullptr ? " (not made by create_stream or wrap_native_stream, nor the default stream)"
                                     : se->internal ? " (a copy stream of the pool)" : " (destroyed)"));
  }
  if (engine_.prefetch_pending()) [[unlikely]] {
    if (!backend_->capture_underway()) { engine_.serve_prefetches(); }  // Note [Acquire during stream capture]
  }
  return lease_with_recipes(rec, handle, access, stream, false, [&](bool retry, bool& counted) {
    return acquire_locked(rec, d, *se, stream, access, retry, counted);
  });
}

// The request loop of acquire and acquire_host: with recipes live, a dropped tensor is
// rebuilt first (prepare_recipes), and the request starts over if it was dropped again
// before its lock (rebuild_needed; bounded: a rebuilt tensor is not dropped before its
// next acquire). A recipe's own leases count as no acquire (Note [Recompute as an
// eviction action], recompute.cpp).
template <class Locked>
lease pool_impl::lease_with_recipes(tensor_record& rec, record_ref const* handle, access_mode access,
                                    stream_handle stream, bool host, Locked&& locked)
{
  bool const quiet = recipes_live_.load(std::memory_order_acquire) != 0 && rebuilding();
  for (int attempt = 0;; ++attempt) {
    if (recipes_live_.load(std::memory_order_acquire) != 0) [[unlikely]] { prepare_recipes(rec, access, stream, host); }
    bool counted = false;
    try {
      return with_low_memory_step(&rec, handle, [&](bool retry) { return locked(retry || quiet, counted); });
    } catch (rebuild_needed const&) {  // dropped for recompute after prepare_recipes looked: once more
      if (attempt >= 8) {
        throw logic_error(std::string(host ? "pool::acquire_host" : "pool::acquire") + ": tensor " +
                          std::to_string(static_cast<std::uint64_t>(rec.id)) + " keeps being dropped for recompute");
      }
    } catch (...) {
      if (counted && !quiet) { counters_.acquire_failures.fetch_add(1, std::memory_order_relaxed); }
      throw;
    }
  }
}

lease pool_impl::acquire_locked(tensor_record& rec, std::uint32_t d, stream_entry& se, stream_handle stream,
                                access_mode access, bool retry, bool& counted)
{
  record_lock rl(rec);
  TIERPOOL_EXPECTS(!rec.freed, "pool::acquire: the tensor was freed");
  check_write_leases(rec, access, "acquire");
  if (rec.discarded) [[unlikely]] { refuse_discarded(rec, access, "pool::acquire"); }  // write_discard: cleared once granted
  if (rec.needs_rebuild && access != access_mode::write_discard) [[unlikely]] { throw rebuild_needed{}; }
  rec.rebuilt_fresh = false;
  if (rec.slots[d].state != copy_state::valid && rec.prefers_device_accessible) [[unlikely]] {
    // A tensor placed in a slower device-accessible tier (managed) on purpose is used where
    // it is when its copy there is valid: the lease gets the managed pointer and the pages
    // are steered to the device (no copy into the device tier). Other tensors come back
    // into the device tier, whose budget is what the program sized.
    auto const k = static_cast<std::uint32_t>(rec.preferred);
    if (k > d && k < rec.slots.size() && is_device_accessible(engine_.tiers()[k]->kind) &&
        rec.slots[k].state == copy_state::valid) {
      d = k;
    }
  }
  copy_slot* slot = &rec.slots[d];
  bool const write = access != access_mode::read;

  // Note [Acquire during stream capture]: asked only before a backend call; a refusal
  // comes before anything changes.
  std::optional<bool> cap;
  auto const captured = [&] {
    if (!cap) { cap = capturing(stream); }
    return *cap;
  };
  if (slot->state != copy_state::valid) [[unlikely]] {
    if (captured()) { refuse_in_capture(rec, stream, "is not resident in the device tier (it needs a copy)"); }
  } else if (slot->ready && captured()) [[unlikely]] {
    bool const waited = std::any_of(slot->users.begin(), slot->users.end(), [&](stream_use const& u) { return u.stream == &se; });
    if (!waited) { refuse_in_capture(rec, stream, "has a copy-in this stream never waited for (an event query)"); }
  }
  if (write && std::any_of(slot->users.begin(), slot->users.end(), [&](stream_use const& u) { return u.stream != &se; }) &&
      captured()) [[unlikely]] {
    refuse_in_capture(rec, stream, "was used by another stream, which a write must wait for");
  }
  bool const in_capture = cap.value_or(false);  // then the copy-in is known complete for this stream

  if (slot->state == copy_state::valid) {
    // Hit: no backend call when the copy-in is known complete.
    std::size_t const sh = thread_shard();
    counter_shard& cs = counters_.shards[sh];
    if (!retry) [[likely]] { bump(cs.hits, std::uint64_t{1}, sh); }
    counted = true;
    if (rec.prefetched) {
      rec.prefetched = false;
      bump(in_capture || engine_.ready_complete(*slot) ? cs.prefetch_hits : cs.prefetch_late, std::uint64_t{1}, sh);
      note_prefetch_timing(*slot, stream);
    }
    if (slot->ready && !in_capture && !engine_.ready_complete(*slot)) { streams_->wait_event_or_sync(stream, slot->ready); }
    engine_.note_access(rec, d, write);
    rec.last_use = shard_clock(*backend_, cs, false);
  } else {
    if (!retry) { bump(counters_.shards[thread_shard()].misses, std::uint64_t{1}, thread_shard()); }
    counted = true;
    rec.prefetched = false;
    rec.last_use = shard_clock(*backend_, counters_.shards[thread_shard()], true);
    (void)engine_.ensure_valid_locked(rec, d, access, place_mode::ladder);
    slot = &rec.slots[d];  // the copy's slot got storage (Note [Copy slots only where a copy is])
    if (slot->ready) { streams_->wait_event_or_sync(stream, slot->ready); }
  }
  if (write) {
    // Work already queued that reads this copy (a write-back, another stream) runs first.
    for (stream_use const& u : slot->users) { (void)streams_->order_after_use(stream, u, slot->pins == 0); }
    engine_.mark_others_stale_locked(rec, d);
  }
  if (engine_.tiers()[d]->kind == tier_kind::managed && !slot->pages_on_device) [[unlikely]] {
    if (!captured()) { engine_.steer_to_device(rec, *slot, stream); }  // a hint: skipped in a capture
  }
  add_use(slot->users, se, se.gen.load(std::memory_order_relaxed));  // settled at release
  if (rec.discarded) [[unlikely]] { rec.discarded = false; }  // only write_discard gets here: every byte is new
  return make_lease(rec, d, access, stream, false);
}

lease pool_impl::acquire_host(tensor const& t, access_mode access)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "acquire_host");
  return acquire_host_record(rec, &t.rec_, access);
}

lease pool_impl::acquire_host_record(tensor_record& rec, record_ref const* handle, access_mode access)
{
  if (engine_.prefetch_pending()) [[unlikely]] {
    if (!backend_->capture_underway()) { engine_.serve_prefetches(); }  // Note [Acquire during stream capture]
  }
  return lease_with_recipes(rec, handle, access, {}, true, [&](bool retry, bool& counted) {
    return acquire_host_locked(rec, access, retry, counted);
  });
}

lease pool_impl::acquire_host_locked(tensor_record& rec, access_mode access, bool retry, bool& counted)
{
  auto const n = static_cast<std::uint32_t>(engine_.tiers().size());
  record_lock rl(rec);
  TIERPOOL_EXPECTS(!rec.freed, "pool::acquire_host: the tensor was freed");
  check_write_leases(rec, access, "acquire_host");
  if (rec.lost) [[unlikely]] { throw_lost("acquire_host"); }
  if (rec.discarded) [[unlikely]] { refuse_discarded(rec, access, "pool::acquire_host"); }  // write_discard: cleared once granted
  if (rec.needs_rebuild && access != access_mode::write_discard) [[unlikely]] { throw rebuild_needed{}; }
  rec.rebuilt_fresh = false;
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
    rec.last_use = shard_clock(*backend_, counters_.shards[thread_shard()], false);
  } else {
    if (!retry) { bump(counters_.shards[thread_shard()].misses, std::uint64_t{1}, thread_shard()); }
    counted = true;
    rec.last_use = shard_clock(*backend_, counters_.shards[thread_shard()], true);
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
  if (rec.discarded) [[unlikely]] { rec.discarded = false; }  // only write_discard gets here: every byte is new
  return make_lease(rec, *h, access, stream_handle{}, true);
}

// ---------------------------------------------------------------------------------------
// prefetch, demote
// ---------------------------------------------------------------------------------------

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
  if (lost()) [[unlikely]] { return; }  // a hint: nothing to do without a device
  auto const k = static_cast<std::uint32_t>(to);
  TIERPOOL_EXPECTS(k < engine_.tiers().size(), "pool::prefetch: unknown tier " + std::to_string(k));
  if (backend_->capture_underway()) [[unlikely]] { return; }  // a hint: Note [Acquire during stream capture]
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

void pool_impl::demote(tensor const& t, tier_id to)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "demote");
  if (lost()) [[unlikely]] { throw_lost("demote"); }
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
  if (rec.needs_rebuild) { return; }  // dropped for recompute: in no tier, below them all
  if (rec.discarded) {  // dead bytes: nothing to carry down, the copies above go
    for (std::uint32_t j = 0; j < k && j < rec.slots.size(); ++j) {
      if (rec.slots[j].state != copy_state::absent) { engine_.vacate_locked(rec, j); }
    }
    return;
  }
  (void)engine_.ensure_valid_locked(rec, k, access_mode::read, place_mode::ladder);
  for (std::uint32_t j = 0; j < k; ++j) {
    if (rec.slots[j].state != copy_state::absent) {
      engine_.vacate_locked(rec, j);
      engine_.tiers()[j]->moved_down.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

// Note [Discarded contents]
// -------------------------
// Rationale: a program often keeps a buffer whose bytes it will overwrite before reading
// them again (a gradient buffer between steps, a paged KV-cache block back on its free
// list, an output kept past its last read). The pool cannot tell: evicting such a tensor
// writes it back, a transfer of dead bytes on the link the next copy-in waits for.
// Approach: pool::discard marks the record (tensor_record::discarded, under its lock; no
// lease may be live). Eviction then treats every copy of it as clean: it is dropped, never
// written back, and once its last copy goes the record has no valid copy at all, which
// validate() accepts for a discarded record. A lease that would read the bytes is refused
// with a logic_error (the bytes may be gone, and which copy survived would otherwise
// decide what a read sees); a write_discard lease clears the mark, since it writes every
// byte. Prefetches, early write-backs and demote skip or drop it. Recipes (Note
// [Recompute as an eviction action], recompute.cpp) end as at a write_discard lease: the
// recipes that read the tensor first (a dependent dropped meanwhile is rebuilt from the
// bytes still there), then its own, without a rebuild (its bytes are dead, a rebuild
// would make them for nothing). The mark goes on between the two, so a concurrent
// validate() never sees a record with no copy, no recipe and no mark. Limitations: copies
// already resident stay until evicted; a discard refused because another thread took a
// lease meanwhile has still ended the recipes that read the tensor.
void pool_impl::discard(tensor const& t)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "discard");
  auto refuse_leased = [&rec] {  // under the record's lock
    TIERPOOL_EXPECTS(!rec.freed, "pool::discard: the tensor was freed");
    if (rec.pins != 0 || rec.write_pins != 0) {
      throw logic_error("pool::discard: tensor " + std::to_string(static_cast<std::uint64_t>(rec.id)) + " has " +
                        std::to_string(rec.pins) + " live lease(s); end them before discarding its bytes");
    }
  };
  bool own = false;
  bool input = false;
  {
    record_lock rl(rec);
    refuse_leased();
    own = rec.has_recipe;
    input = rec.recipe_input;
  }
  if (input) {
    std::lock_guard edit(recipe_edit_mtx_);
    end_dependents(rec);
  }
  {
    record_lock rl(rec);
    refuse_leased();
    if (!rec.discarded) { counters_.discards.fetch_add(1, std::memory_order_relaxed); }
    rec.discarded = true;
    if (tracer_.active()) [[unlikely]] {  // under the lock: in order with the tensor's accesses
      trace_record({.kind = trace::event_kind::discard, .tensor = static_cast<std::uint64_t>(rec.id)});
    }
  }
  if (own) {
    std::lock_guard edit(recipe_edit_mtx_);
    (void)end_recipe(rec, /*discard=*/true);
  }
}

void pool_impl::refuse_discarded(tensor_record const& rec, access_mode access, char const* what)
{
  if (!rec.discarded || access == access_mode::write_discard) { return; }
  throw logic_error(std::string(what) + ": tensor " + std::to_string(static_cast<std::uint64_t>(rec.id)) +
                    " was discarded (pool::discard) and has no contents to read; lease it with write_discard "
                    "to give it new ones");
}

// ---------------------------------------------------------------------------------------
// free, release
// ---------------------------------------------------------------------------------------

void pool_impl::free(tensor& t)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "free");
  if (recipes_live_.load(std::memory_order_acquire) != 0) [[unlikely]] { free_recipes(rec, true); }
  bool deferred = false;
  {
    record_lock rl(rec);
    TIERPOOL_EXPECTS(!rec.freed, "pool::free: the tensor was already freed");
    if (rec.pins != 0) {
      throw logic_error("pool::free: tensor " + std::to_string(static_cast<std::uint64_t>(rec.id)) +
                        rec.quoted_name() + " has " +
                        std::to_string(rec.pins) + " live lease(s); release them first");
    }
    if (rec.paused != 0) [[unlikely]] {
      // A low-memory callback freeing the tensor whose request called it: freed when that
      // request ends (Note [Low-memory callbacks run unlocked]).
      hold_dropped_locked(rec, t.impl_);
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
  if (recipes_live_.load(std::memory_order_acquire) != 0) [[unlikely]] { free_recipes(rec, false); }
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
        hold_dropped_locked(rec, t.impl_);
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

// Note [A dropped record's references]
// -------------------------------------
// Rationale: a handle may die while its tensor is leased (or while a request of it waits on
// low-memory callbacks). The leases hold raw record and pool pointers (no refcount on the
// hit path), so the record and the pool must outlive the handle until the last lease ends.
// Two shared_ptrs in every record did that, 32 bytes a tensor that almost no tensor uses.
// Approach: the record stays in the pool's table until its deferred free, so the table's
// reference keeps it: free_dropped_locked takes that reference out of the table (instead of
// erasing it) and hands it to the caller, who drops it after unlocking. The pool is held
// once for all dropped records: the first hold copies the dying handle's pool reference
// into drop_keep_, the last finish moves it out to the caller (dropped last: it may end the
// pool). drop_held marks a record whose hold is still to be given back (exactly once).
// Limitations: none known; close() refuses while a lease is live and waits for paused
// requests at its gate, so it never frees a dropped record under its holds.
void pool_impl::hold_dropped_locked(tensor_record& rec, std::shared_ptr<pool_impl> const& self) noexcept
{
  rec.free_when_unpinned = true;
  if (rec.drop_held) { return; }
  rec.drop_held = true;
  std::lock_guard g(drop_mtx_);
  if (dropped_++ == 0) { drop_keep_ = self; }
}

void pool_impl::free_dropped_locked(tensor_record& rec, record_ref& keep_self) noexcept
{
  if (rec.freed) { return; }  // close() freed it
  free_slots_locked(rec);
  {
    std::lock_guard lock(table_mtx_);  // a leaf lock
    keep_self = table_.take(static_cast<std::uint64_t>(rec.id));
  }
  if (tracer_.active()) [[unlikely]] {
    trace_record({.kind = trace::event_kind::free, .tensor = static_cast<std::uint64_t>(rec.id)});
  }
}

void pool_impl::finish_dropped_locked(tensor_record& rec, std::shared_ptr<record_owner>& keep_alive,
                                      record_ref& keep_self) noexcept
{
  free_dropped_locked(rec, keep_self);
  if (!rec.drop_held) { return; }
  rec.drop_held = false;
  std::lock_guard g(drop_mtx_);
  if (--dropped_ == 0) { keep_alive = std::move(drop_keep_); }
}

// Note [Write-through tensors]
// A tensor made with tensor_options::write_through keeps a valid copy below its device
// copy: the last write lease's release writes it back (write_back_locked: the d2h stream
// waits for the lease's work, settled just before), without waiting on the host when room
// is free below, with the ladder when it is not. Until that copy completes the lower copy
// is not valid; a device lost before then loses that one write, never an older state
// (the lower copy is written whole or not used). Eviction finds such a tensor clean. A
// lease released while its stream is being captured writes nothing back (no copy may be
// ordered after captured work): it counts in write_through_misses, and the copy stays
// device-only until the tensor is written again or evicted.
void pool_impl::write_through_locked(tensor_record& rec, std::uint32_t k, stream_handle used_on) noexcept
{
  if (k >= rec.slots.size() || rec.slots[k].state != copy_state::valid) { return; }
  if (capturing(used_on)) {  // Note [Acquire during stream capture]: no copy may be ordered after it now
    counters_.write_through_misses.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  for (std::uint32_t j = 0; j < rec.slots.size(); ++j) {
    if (j != k && rec.slots[j].state == copy_state::valid) { return; }  // clean already
  }
  if (engine_.write_back_locked(rec, k, place_mode::no_wait) || engine_.write_back_locked(rec, k, place_mode::ladder)) {
    try {
      std::lock_guard lk(wt_mtx_);
      wt_pending_.push_back(static_cast<std::uint64_t>(rec.id));  // pool::synchronize waits for it
    } catch (...) {  // bad_alloc: the copy still happens; synchronize does not wait for it
    }
    counters_.write_throughs.fetch_add(1, std::memory_order_relaxed);
    counters_.write_through_bytes.fetch_add(rec.bytes, std::memory_order_relaxed);
  } else {
    counters_.write_through_misses.fetch_add(1, std::memory_order_relaxed);
  }
}

void pool_impl::release(lease& l) noexcept
{
  if (l.rec_ == nullptr) { return; }
  std::shared_ptr<record_owner> keep_alive;     // dropped last: it may end this pool (after the gate's scope)
  record_ref keep_self;  // dropped after the unlock: it may end the record
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
          if (u.gen != kStampAtUnpin) { u.gen = u.stream->gen.load(std::memory_order_seq_cst); }
          break;
        }
      }
    }
    engine_.unpin_locked(rec, l.tier_);
    if (l.tier_ < rec.slots.size() && rec.slots[l.tier_].pins == 0) {
      stamp_uses_at_unpin(rec.slots[l.tier_].users);  // pool::record_stream's uses
    }
    --thread_leases();
    if (l.access_ != access_mode::read) {
      --rec.write_pins;
      if (rec.write_through && !l.host_ && rec.write_pins == 0 && !rec.freed) [[unlikely]] {
        write_through_locked(rec, l.tier_, l.stream_);
      }
    }
    if (rec.pins == 0 && rec.paused == 0 && rec.free_when_unpinned && rec.drop_held) {
      // The handle died while leased: the last release frees it (a paused request's end
      // does when one waits on low-memory callbacks).
      finish_dropped_locked(rec, keep_alive, keep_self);
    }
  }
  if (engine_.prefetch_pending()) [[unlikely]] {
    if (!backend_->capture_underway()) { engine_.serve_prefetches(); }  // Note [Acquire during stream capture]
  }
}

}  // namespace tierpool::detail

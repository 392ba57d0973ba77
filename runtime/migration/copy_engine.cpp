// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// copy_engine.cpp — owns the movement of a tensor's bytes between tiers and the
// bookkeeping of its copy slots: filling a slot (ensure_valid_locked), copying on a copy
// stream (copy_locked), writing a dirty copy back (write_back_locked), vacating a slot
// into a deferred free (vacate_locked), pins, and the policy hooks of slot changes.
// Also the stream-ordering primitives, which never throw: a failed event call falls back
// to a host wait (docs/notes/pool_design.md, "Failure paths").
//
// Invariant kept by every function here (the record is locked by the caller):
//   a live record has >= 1 valid slot; a slot's block is released only after an event
//   covering its `ready` copy and every use in `users` has completed.
//
#include <tierpool/error.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <mutex>
#include <string>

#include "migration/migration_engine.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

namespace {

// Join streams (migration_engine::join_events): two, so that a join waiting for a late
// event does not hold up the next one where the backend says which is free sooner.
constexpr std::uint32_t kJoinStreams = 2;

}  // namespace

// ---------------------------------------------------------------------------------------
// Events of copy slots
// ---------------------------------------------------------------------------------------

bool migration_engine::ready_complete(copy_slot& slot) noexcept
{
  if (!slot.ready) { return true; }
  if (backend_->query_event(slot.ready) == status::ok) {
    streams_->release_event(slot.ready);
    return true;
  }
  return false;
}

void migration_engine::host_wait_slot(copy_slot& slot, bool include_users) noexcept
{
  auto const t0 = std::chrono::steady_clock::now();
  bool waited = false;
  if (slot.ready) {
    (void)backend_->synchronize_event(slot.ready);
    streams_->release_event(slot.ready);
    waited = true;
  }
  if (include_users) {
    for (stream_use const& u : slot.users) {
      streams_->host_wait_use(u);
      waited = true;
    }
    slot.users.clear();
  }
  if (waited) { streams_->add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()); }
}

stream_handle migration_engine::copy_stream(std::uint32_t to, std::uint32_t from) noexcept
{
  // Round robin without a locked add: threads racing here may pick the same stream.
  std::uint32_t const i = rr_.load(std::memory_order_relaxed);
  rr_.store(i + 1, std::memory_order_relaxed);
  return to < from ? h2d_[i % h2d_.size()] : d2h_[i % d2h_.size()];
}

// ---------------------------------------------------------------------------------------
// Policy hooks and pins
// ---------------------------------------------------------------------------------------

// Note [The hit path takes no shared lock]
// ----------------------------------------
// Rationale: acquire + release of a resident tensor should cost ~100 ns and not slow down
// when threads acquire their own tensors at once; a shared lock, a clock read or a write
// to a shared cache line per hit costs that much alone (31 ns for clock_gettime here; a
// contended line or futex several times more).
// Approach: a thread works in shard thread_shard() (round-robin, kShards of them). A hit
// appends a compact access_event to its shard's buffer in the tier (a spin lock only its
// own threads and the drainer take; a repeat access of the tensor just before is merged:
// newest access_count, write if either wrote), with no clock read. The tier-lock holder
// drains every non-empty shard (acc_nonempty) at insert, eviction and placement, reads
// the backend clock once and reports the events in buffer order stamped with that tick:
// ticks stay monotonic and in the clock's units (policies compare them with
// eviction_request::now), an event is at most "one drain late", and events of different
// shards between two drains are ordered by shard, not by time. A full buffer drains under
// the tier lock (record -> tier -> shard order holds). Figures (hits, misses, pinned
// bytes; acquires = hits + misses) are per-shard relaxed atomics summed by stats(),
// updated with a plain load + store in the first kShards threads' own shards (one writer
// each; later threads share shard kShards and use fetch_add). A lease holds raw pool and
// record pointers (no shared refcount); the record keeps both alive for leases that
// outlive every handle (tensor_record::keep_alive, keep_self).
// Limitations: a policy sees a hit only at the next drain, with the drain's tick.
void migration_engine::drain_accesses_locked(tier_state& ts) noexcept
{
  // Nothing buffered (a miss-heavy run drains at every tier lock): no locked exchange.
  if (ts.acc_nonempty.load(std::memory_order_relaxed) == 0) { return; }
  std::uint64_t mask = ts.acc_nonempty.exchange(0, std::memory_order_acq_rel);
  if (mask == 0) { return; }
  ts.acc_drain.clear();  // reserved for every shard's buffer: inserts never allocate
  while (mask != 0) {
    auto const i = static_cast<std::size_t>(__builtin_ctzll(mask));
    mask &= mask - 1;
    access_shard& sh = ts.acc[i];
    sh.lock();
    ts.acc_drain.insert(ts.acc_drain.end(), sh.events.begin(), sh.events.begin() + sh.count);  // reserved: no throw
    sh.count = 0;
    sh.unlock();
  }
  if (ts.acc_drain.empty()) { return; }
  tick const now = backend_->now();
  tensor_view v{};
  for (access_event const& e : ts.acc_drain) {
    v.id = e.id;
    v.tier = tier_id{ts.index};
    v.bytes = e.bytes;
    v.last_access = now;
    v.access_count = e.access_count;
    v.write_access = e.write;
    v.next_use = forecast_of(e.next_use);
    ts.policy->on_access(v);
  }
  ts.acc_drain.clear();
}

void migration_engine::insert_into_policy(tensor_record& rec, std::uint32_t k, bool write) noexcept
{
  tier_state& ts = *tiers_[k];
  std::lock_guard tl(ts.mem->mutex());
  drain_accesses_locked(ts);
  insert_into_policy_locked(ts, rec, k, write);
}

void migration_engine::insert_into_policy_locked(tier_state& ts, tensor_record& rec, std::uint32_t k,
                                                 bool write) noexcept
{
  tensor_view v{};
  v.id = rec.id;
  v.tier = tier_id{k};
  v.bytes = rec.bytes;
  v.last_access = backend_->now();
  v.access_count = ++rec.access_count;
  v.pinned = rec.slots[k].pins != 0;
  v.write_access = write;
  v.next_use = forecast_of(rec.next_use.load(std::memory_order_relaxed));
  v.prefetch = rec.filling_ahead;
  ts.policy->on_insert(v);
  add_under_tier_lock(ts.resident, std::uint64_t{1});
  ts.add_tenant_bytes(rec.tenant, static_cast<std::int64_t>(rec.bytes));
}

void migration_engine::forget_in_policy(tensor_record& rec, std::uint32_t k) noexcept
{
  tier_state& ts = *tiers_[k];
  std::lock_guard tl(ts.mem->mutex());
  drain_accesses_locked(ts);
  ts.policy->on_erase(rec.id);
  add_under_tier_lock(ts.resident, ~std::uint64_t{0});  // - 1 (modulo 2^64)
  ts.add_tenant_bytes(rec.tenant, -static_cast<std::int64_t>(rec.bytes));
}

void migration_engine::note_access(tensor_record& rec, std::uint32_t k, bool write) noexcept
{
  tier_state& ts = *tiers_[k];
  std::size_t const i = thread_shard();
  access_shard& sh = ts.acc[i];
  std::uint32_t const count = ++rec.access_count;
  sh.lock();
  if (sh.count != 0 && sh.events[sh.count - 1].id == rec.id) {  // repeat: merge
    access_event& e = sh.events[sh.count - 1];
    e.access_count = count;
    e.write = e.write || write;
    e.next_use = rec.next_use.load(std::memory_order_relaxed);
    sh.unlock();
    return;
  }
  if (sh.count < access_shard::kCap) {
    sh.events[sh.count++] = access_event{rec.id, rec.bytes, count, write, rec.next_use.load(std::memory_order_relaxed)};
    if (sh.count == 1) { ts.acc_nonempty.fetch_or(std::uint64_t{1} << i, std::memory_order_release); }
    sh.unlock();
    return;
  }
  sh.unlock();
  std::lock_guard tl(ts.mem->mutex());  // buffer full: apply it (record -> tier -> shard order holds)
  for (;;) {  // loops only if threads sharing the shard refill it between drain and lock
    drain_accesses_locked(ts);
    sh.lock();
    if (sh.count < access_shard::kCap) { break; }
    sh.unlock();
  }
  sh.events[sh.count++] = access_event{rec.id, rec.bytes, count, write, rec.next_use.load(std::memory_order_relaxed)};
  ts.acc_nonempty.fetch_or(std::uint64_t{1} << i, std::memory_order_release);
  sh.unlock();
}

void migration_engine::pin_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  copy_slot& s = rec.slots[k];
  ++rec.pins;
  if (s.pins++ == 0) {
    std::size_t const sh = thread_shard();
    bump(tiers_[k]->pinned[sh].bytes, static_cast<std::int64_t>(rec.bytes), sh);
    if (tiers_[k]->track_pins.load(std::memory_order_relaxed)) { register_pin_locked(rec, k, sh); }
  }
}

void migration_engine::register_pin_locked(tensor_record& rec, std::uint32_t k, std::size_t sh) const noexcept
{
  copy_slot& s = rec.slots[k];
  if (s.pin_registered) { return; }
  pin_register_shard& r = tiers_[k]->pin_reg[sh];
  std::lock_guard g(r.mtx);
  try {
    r.entries.push_back(pinned_entry{&s, s.blk.slot.offset, s.blk.slot.size});
  } catch (...) {  // out of host memory: fits() walks the records from now on
    tiers_[k]->pins_lost.store(true, std::memory_order_relaxed);
    return;
  }
  s.pin_index = static_cast<std::uint32_t>(r.entries.size() - 1);
  s.pin_shard = static_cast<std::uint8_t>(sh);
  s.pin_registered = true;
}

void migration_engine::unregister_pin_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  copy_slot& s = rec.slots[k];
  if (!s.pin_registered) { return; }
  pin_register_shard& r = tiers_[k]->pin_reg[s.pin_shard];
  {
    std::lock_guard g(r.mtx);
    std::uint32_t const i = s.pin_index;
    if (i + 1 != r.entries.size()) {  // move the last entry into the hole
      r.entries[i] = r.entries.back();
      r.entries[i].owner->pin_index = i;
    }
    r.entries.pop_back();
  }
  s.pin_registered = false;
}

bool migration_engine::pinned_offsets(std::uint32_t k, std::vector<std::uint64_t>& out) const
{
  tier_state& ts = *tiers_[k];
  out.clear();
  for (pin_register_shard& r : ts.pin_reg) {
    std::lock_guard g(r.mtx);
    for (pinned_entry const& e : r.entries) { out.push_back(e.offset); }
  }
  std::sort(out.begin(), out.end());
  return !ts.pins_lost.load(std::memory_order_relaxed);
}

void migration_engine::unpin_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  if (k >= rec.slots.size()) { return; }
  copy_slot& s = rec.slots[k];
  if (s.pins == 0) { return; }
  --rec.pins;
  if (--s.pins != 0) { return; }
  unregister_pin_locked(rec, k);
  if (s.policy_pinned) {  // the policy heard of the pin (eviction skipped it): tell it
    tier_state& ts = *tiers_[k];
    std::lock_guard tl(ts.mem->mutex());
    ts.policy->on_unpin(rec.id);
    s.policy_pinned = false;
  }
  // Only now out of the tier's pinned bytes: until its policy takes the copy back, eviction
  // still cannot have it, and a ladder failing meanwhile must see it as pinned (and wait).
  std::size_t const sh = thread_shard();
  bump(tiers_[k]->pinned[sh].bytes, -static_cast<std::int64_t>(rec.bytes), sh);
}

// ---------------------------------------------------------------------------------------
// Slots
// ---------------------------------------------------------------------------------------

void migration_engine::mark_others_stale_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  for (std::uint32_t j = 0; j < rec.slots.size(); ++j) {
    if (j != k && rec.slots[j].state == copy_state::valid) { rec.slots[j].state = copy_state::stale; }
  }
  if (rec.cleaned_early) { early_write_back_wasted(rec); }
}

void migration_engine::early_write_back_wasted(tensor_record& rec) noexcept
{
  rec.cleaned_early = false;
  counters_->early_write_backs_wasted.fetch_add(1, std::memory_order_relaxed);
  counters_->early_write_back_wasted_bytes.fetch_add(rec.bytes, std::memory_order_relaxed);
}

// Note [A copy-in records its block's previous event again]
// ----------------------------------------------------------
// Rationale: a copy into a slot whose `ready` is still pending (a block reused in stream
// order: a write-back's event, or the fill event of the victim whose block it took) made
// the copy stream wait for that event, then took a fresh event from the event pool for the
// copy and gave the old one back: two trips through the pool's lock and its set of
// outstanding events, whose cells (thousands of events on a miss-heavy run, one per
// resident copy on a virtual clock) miss the cache on every insert and erase.
// Approach: once the copy stream's wait on it is enqueued, nothing needs the old record:
// a stream wait captures the record it waits for when it is enqueued (as
// cudaStreamWaitEvent does), the slot owns the event (place() hands over owned events
// only; a borrowed one is joined into a new event, join_events), and the record lock keeps
// everyone else off the slot. So the same event is recorded again on the copy stream after
// the copy and stays the slot's `ready`. A failed record gives it back to the pool and the
// host waits for the copy stream, as record_or_sync does.
// A completed `ready` is kept and recorded again too (on a wall clock most are complete by
// the time their block is reused: giving each back and taking a fresh one was two trips
// through the pool's lock per miss). The copy takes a fresh event only where the slot had
// none.
status migration_engine::copy_locked(tensor_record& rec, std::uint32_t from, std::uint32_t to)
{
  if (has_storage_ && (tiers_[from]->file || tiers_[to]->file)) { return storage_copy_locked(rec, from, to); }  // file I/O
  copy_slot& src = rec.slots[from];
  copy_slot& dst = rec.slots[to];
  stream_handle const c = copy_stream(to, from);
  // The copy reads src after whatever wrote it, and overwrites dst after whatever used it.
  if (!ready_complete(src)) { streams_->wait_event_or_sync(c, src.ready); }
  for (stream_use const& u : src.users) { (void)streams_->order_after_use(c, u, src.pins == 0); }
  // dst's `ready` is kept even when complete: the copy records it again below.
  if (dst.ready && backend_->query_event(dst.ready) != status::ok) { streams_->wait_event_or_sync(c, dst.ready); }
  for (stream_use const& u : dst.users) { (void)streams_->order_after_use(c, u, dst.pins == 0); }
  copy_desc d{};
  d.dst = dst.blk.ptr;
  d.src = src.blk.ptr;
  d.bytes = rec.bytes;
  d.dst_kind = tiers_[to]->kind;
  d.src_kind = tiers_[from]->kind;
  if (status const st = backend_->copy_async(d, c); st != status::ok) { return st; }
  if (to < from) { h2d_queued_.fetch_add(rec.bytes, std::memory_order_relaxed); }
  // The copy's event: dst's previous `ready`, when there is one, recorded again (Note [A
  // copy-in records its block's previous event again]); else one from the pool.
  dst.ready = streams_->rerecord_or_sync(c, dst.ready);
  dst.users.clear();  // covered by `ready`: the copy waited for them
  dst.pages_on_device = false;  // managed: where a copy leaves the pages is not ours to assume
  if (stream_entry* ce = streams_->find(c)) {
    try {
      add_use(src.users, *ce, ce->gen.load(std::memory_order_seq_cst));  // stamped after the enqueue
    } catch (...) {  // bad_alloc: wait for the copy here instead of remembering it
      host_wait_slot(dst, false);
    }
  }
  count_copy(rec.bytes, from, to);
  return status::ok;
}

void migration_engine::count_copy(std::uint64_t n, std::uint32_t from, std::uint32_t to) noexcept
{
  // Figures (see telemetry.hpp): up/down by tier index; h2d/d2h across the device boundary.
  // Per-shard figures (Note [The hit path takes no shared lock]): no locked add per copy.
  std::size_t const sh = thread_shard();
  counter_shard& cs = counters_->shards[sh];
  // A storage tier's bytes written and read (tier_stats): a locked add, on storage copies only.
  if (has_storage_) {
    if (is_storage(tiers_[to]->kind)) { tiers_[to]->storage_written.fetch_add(n, std::memory_order_relaxed); }
    if (is_storage(tiers_[from]->kind)) { tiers_[from]->storage_read.fetch_add(n, std::memory_order_relaxed); }
  }
  if (to < from) {
    bump(cs.bytes_up, n, sh);
    bump(cs.copies_up, std::uint64_t{1}, sh);
  } else {
    bump(cs.bytes_down, n, sh);
    bump(cs.copies_down, std::uint64_t{1}, sh);
  }
  bool const dev_to = is_device_accessible(tiers_[to]->kind);
  bool const dev_from = is_device_accessible(tiers_[from]->kind);
  if (dev_to && !dev_from) {
    bump(cs.bytes_h2d, n, sh);
    bump(cs.copies_h2d, std::uint64_t{1}, sh);
  } else if (dev_from && !dev_to) {
    bump(cs.bytes_d2h, n, sh);
    bump(cs.copies_d2h, std::uint64_t{1}, sh);
  }
}

fill_result migration_engine::ensure_valid_locked(tensor_record& rec, std::uint32_t k, access_mode access,
                                                      place_mode mode)
{
  if (rec.needs_rebuild && access != access_mode::write_discard) [[unlikely]] { throw rebuild_needed{}; }
  if (rec.slots[k].state == copy_state::valid) { return fill_result::hit; }
  if (has_storage_ && access != access_mode::write_discard) {
    // Device <-> storage goes through a host tier: when no valid copy may be copied here
    // directly, fill one in the staging tier first (it stays valid: copies are inclusive).
    bool direct = false;
    std::uint32_t any = 0;
    for (std::uint32_t j = 0; j < rec.slots.size(); ++j) {
      if (rec.slots[j].state != copy_state::valid) { continue; }
      any = j;
      direct = direct || direct_copy(j, k);
    }
    if (!direct) {
      std::uint32_t const h = staging_tier(any, k, rec.bytes);
      if (ensure_valid_locked(rec, h, access_mode::read, mode) == fill_result::no_room) { return fill_result::no_room; }
    }
  }
  bool const fresh = rec.slots[k].state == copy_state::absent;
  bool inserted = false;  // the eviction that made room put the tensor in the policy (place_result::inserted)
  placing_settle settle(*this, k, rec.tenant);  // at exit: in the policy, or given back
  if (fresh) {
    place_result got;
    if (rec.bytes <= tiers_[k]->capacity || mode == place_mode::ladder) {
      // A copy follows at once: a block evicted for it may come with its previous
      // occupant's uses (Note [The evicted block goes to the request that evicted it]).
      got = place({.tier = k, .bytes = rec.bytes, .mode = mode, .incoming = rec.id, .tenant = rec.tenant,
                   .take_uses = access != access_mode::write_discard, .incoming_rec = &rec,
                   .incoming_write = access != access_mode::read});
    }
    if (!got.blk) {
      if (mode != place_mode::ladder) { return fill_result::no_room; }
      throw_place_failure(k, rec.bytes, got.why);
    }
    settle.take(got);
    copy_slot* slot = nullptr;
    try {
      slot = &rec.slots.materialize(k);  // storage for the copy (Note [Copy slots only where a copy is])
    } catch (...) {  // bad_alloc: the block goes back with its pending event; nothing changed
      unplace(k, *got.blk, got.after, got.after_stream, &got.after_users);
      if (got.inserted) { forget_in_policy(rec, k); }
      throw;
    }
    slot->blk = *got.blk;
    slot->ready = got.after;  // reused in stream order: the copy (or the user) waits for it
    slot->users = std::move(got.after_users);  // and for the previous occupant's uses (copy_locked)
    inserted = got.inserted;
  }
  copy_slot& dst = rec.slots[k];
  if (access != access_mode::write_discard) {
    std::uint32_t src = 0;
    while (src < rec.slots.size() &&
           (rec.slots[src].state != copy_state::valid || (has_storage_ && !direct_copy(src, k)))) {
      ++src;
    }
    TIERPOOL_ASSERT(src < rec.slots.size());  // staged above when only a storage copy was valid
    if (status const st = copy_locked(rec, src, k); st != status::ok) {
      if (fresh) {
        host_wait_slot(dst, true);  // a block reused in stream order: its previous copy and uses first
        give_back_now(k, dst.blk.whole(rec.bytes));   // no queued work touches it: the copy was never enqueued
        streams_->release_event(dst.ready);
        dst = copy_slot{};
        compact_slots_locked(rec);
        if (inserted) { forget_in_policy(rec, k); }
      }
      std::string const what = "pool: copying tensor " + std::to_string(static_cast<std::uint64_t>(rec.id)) +
                               " from tier '" + tiers_[src]->name + "' to tier '" + tiers_[k]->name +
                               "' (the tensor's bytes are unchanged)";
      if (st == status::io_error) { throw_storage_failure(what); }
      throw backend_error(st, what);
    }
  }
  dst.state = copy_state::valid;
  if (fresh) {
    if (!inserted) { insert_into_policy(rec, k, access != access_mode::read); }
  } else if (!rec.filling_ahead) {
    note_access(rec, k, access != access_mode::read);  // a stale copy refreshed: the policy knows it, this is a use
  }
  return fill_result::filled;
}

bool migration_engine::write_back_locked(tensor_record& rec, std::uint32_t k, place_mode mode, std::size_t* busy_bytes,
                                         status* copy_failed, std::uint32_t* wrote_to) noexcept
{
  std::size_t busy = 0;  // busy victims that kept the lower tiers full
  auto const n = static_cast<std::uint32_t>(rec.slots.size());
  for (auto j = static_cast<std::uint32_t>(k + 1); j < n; ++j) {
    if (rec.slots[j].state == copy_state::valid) { return true; }
  }
  // The candidate tiers, cheapest round trip first (Note [Choosing an eviction action],
  // eviction.cpp); fastest first where they cost the same (a stable sort).
  std::array<std::pair<double, std::uint32_t>, 64> order{};
  std::size_t m = 0;
  for (auto j = static_cast<std::uint32_t>(k + 1); j < n && m < order.size(); ++j) {
    if (!write_back_target(rec, k, j)) { continue; }
    order[m++] = {actions_.by_cost ? round_trip_seconds(rec, k, j) : 0.0, j};
  }
  std::stable_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(m),
                   [](auto const& a, auto const& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < m; ++i) {
    std::uint32_t const j = order[i].second;
    bool const fresh = rec.slots[j].state == copy_state::absent;
    placing_settle settle(*this, j, rec.tenant);  // at the end of this candidate: in the policy, or given back
    if (fresh) {
      place_result got;
      bool const ladder = mode == place_mode::ladder;
      try {
        got = place({.tier = j, .bytes = rec.bytes, .mode = ladder ? place_mode::ladder : place_mode::no_wait,
                     .incoming = rec.id, .tenant = rec.tenant});
      } catch (...) {
        got = place_result{};
      }
      if (!got.blk) {  // no room there: try the next candidate
        busy = busy + got.why.busy_bytes < busy ? busy : busy + got.why.busy_bytes;
        continue;
      }
      settle.take(got);
      copy_slot* slot = nullptr;
      try {
        slot = &rec.slots.materialize(j);  // Note [Copy slots only where a copy is]
      } catch (...) {  // bad_alloc: the block goes back; the victim stays resident
        unplace(j, *got.blk, got.after, got.after_stream);
        return false;
      }
      slot->blk = *got.blk;
      slot->ready = got.after;
    }
    copy_slot& dst = rec.slots[j];
    if (status const st = copy_locked(rec, k, j); st != status::ok) {
      if (fresh) {
        host_wait_slot(dst, false);  // a block reused in stream order: its previous copy first
        give_back_now(j, dst.blk.whole(rec.bytes));
        streams_->release_event(dst.ready);
        dst = copy_slot{};
        compact_slots_locked(rec);
      }
      if (copy_failed != nullptr) { *copy_failed = st; }
      return false;  // the victim keeps its copy and stays resident
    }
    dst.state = copy_state::valid;
    if (fresh) { insert_into_policy(rec, j, false); }
    if (wrote_to != nullptr) { *wrote_to = j; }
    return true;
  }
  if (busy_bytes != nullptr) { *busy_bytes = *busy_bytes + busy < *busy_bytes ? *busy_bytes : *busy_bytes + busy; }
  return false;
}

void migration_engine::vacate_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  copy_slot& s = rec.slots[k];
  if (s.state == copy_state::absent) { return; }
  if (rec.cleaned_early && s.state == copy_state::valid) {
    // A valid copy leaves while one below stays valid (an eviction, a demote, a shrink):
    // the early write-back spared it its copy, so it was not wasted.
    for (auto j = static_cast<std::uint32_t>(k + 1); j < rec.slots.size(); ++j) {
      if (rec.slots[j].state == copy_state::valid) {
        rec.cleaned_early = false;
        break;
      }
    }
  }
  tier_state& ts = *tiers_[k];
  // One event on the retire stream covers the copy that filled the block and every use;
  // when all of them are known complete (Note [Last-use marks]) the block is free at once.
  event_handle e{};
  stream_handle lane = retire_;
  bool pending = false;
  // Fast path (Note [Vacating behind one copy stream]): the fill is done and only one of
  // the pool's own copy streams may still use the block (an eviction's write-back): defer
  // the free on an event recorded on that stream, not through the retire stream.
  stream_entry* only = nullptr;
  if (s.pins == 0 && ready_complete(s)) {
    std::size_t open = 0;
    for (stream_use const& u : s.users) {
      if (!streams_->use_settled(u)) {
        only = u.stream;
        ++open;
      }
    }
    if (open > 1 || (only != nullptr && !only->internal)) { only = nullptr; pending = true; }
    if (open == 0) { s.users.clear(); }
  } else {
    pending = true;
  }
  if (only != nullptr) {
    e = streams_->record_or_sync(only->handle);  // after the write-back in stream order
    if (e) { lane = only->handle; }
  } else if (pending) {
    pending = false;
    if (!ready_complete(s)) {
      streams_->wait_event_or_sync(retire_, s.ready);
      pending = true;
    }
    for (stream_use const& u : s.users) { pending = streams_->order_after_use(retire_, u, s.pins == 0) || pending; }
    if (pending) { e = streams_->record_or_sync(retire_); }
  }
  streams_->release_event(s.ready);
  if (ts.file) { ts.file->forget(s.blk.ptr); }  // the range holds no copy now: its checksum goes
  {
    std::lock_guard tl(ts.mem->mutex());
    drain_accesses_locked(ts);
    ts.policy->on_erase(rec.id);
    try {
      if (e) {
        ts.mem->deallocate_after(s.blk.whole(rec.bytes), e, lane);
      } else {
        ts.mem->deallocate(s.blk.whole(rec.bytes));
      }
    } catch (...) {
      // Bookkeeping could not grow (bad_alloc): wait here instead, then free at once.
      if (e) {
        (void)backend_->synchronize_event(e);
        streams_->release_event(e);
      }
      try {
        ts.mem->deallocate(s.blk.whole(rec.bytes));
      } catch (...) {  // not a live block: nothing more to do
      }
    }
    add_under_tier_lock(ts.bytes_freed, static_cast<std::int64_t>(s.blk.slot.size));
    add_under_tier_lock(ts.resident, ~std::uint64_t{0});  // - 1 (modulo 2^64)
    ts.add_tenant_bytes(rec.tenant, -static_cast<std::int64_t>(rec.bytes));
  }
  if (s.pins != 0) {
    std::size_t const sh = thread_shard();
    bump(ts.pinned[sh].bytes, -static_cast<std::int64_t>(rec.bytes), sh);
  }
  unregister_pin_locked(rec, k);
  rec.pins -= s.pins;
  s = copy_slot{};
  compact_slots_locked(rec);
}

void migration_engine::hand_off_told_locked(tier_state& ts, tensor_record& rec, std::uint32_t k) noexcept
{
  ts.policy->on_erase(rec.id);
  auto const size = static_cast<std::int64_t>(rec.slots[k].blk.slot.size);
  add_under_tier_lock(ts.bytes_freed, size);           // vacated here
  add_under_tier_lock(ts.bytes_allocated, size);       // and placed here again
  add_under_tier_lock(ts.reused_in_order, std::uint64_t{1});
  add_under_tier_lock(ts.resident, ~std::uint64_t{0});  // - 1 (modulo 2^64)
  ts.add_tenant_bytes(rec.tenant, -static_cast<std::int64_t>(rec.bytes));
}

void migration_engine::hand_off_locked(tensor_record& rec, std::uint32_t k, evict_handoff& h) noexcept
{
  // Note [The evicted block goes to the request that evicted it], eviction.cpp: the block
  // stays live in the tier and changes hands with what its next use must wait for.
  copy_slot& s = rec.slots[k];
  TIERPOOL_ASSERT(s.state != copy_state::absent && s.pins == 0 && !h.blk);
  tier_state& ts = *tiers_[k];
  h.blk = s.blk.whole(h.bytes);
  h.ready = s.ready;
  s.ready = event_handle{};
  h.users = std::move(s.users);
  if (!h.told) {  // a dirty victim, written back since the round's first phase
    std::lock_guard tl(ts.mem->mutex());
    drain_accesses_locked(ts);
    hand_off_told_locked(ts, rec, k);
    h.told = true;
  }
  unregister_pin_locked(rec, k);
  s = copy_slot{};
  compact_slots_locked(rec);
}

// Note [Copy slots only where a copy is]
// --------------------------------------
// Rationale: a copy slot (state, pins, fill event, block, the streams that used it) is
// over 100 bytes, and a pool of many small tensors (a paged KV cache) holds most of them in
// one tier at a time: a slot per tier in every record made the slots most of the pool's
// metadata (issue 19).
// Approach: slot_array keeps one slot inline, for its "home" tier, and a heap array of
// one slot per tier only while a second tier holds a copy (a stale one included). A slot
// gets storage just before a block is put in it (slot_array::materialize, after the
// placement succeeded: on bad_alloc the block goes back); reading a tier without storage
// gives absent_copy_slot, which is never written (validate() checks it). When a slot becomes
// absent (vacate_locked, a failed first copy), compact_slots_locked gives the array up as
// soon as at most one copy is left, moving that copy's slot inline (and its entry in the
// register of pinned copies, whose owner pointer names the slot). Existing slots never
// move otherwise, so a reference to a slot stays good across placement and copies; only a
// reference to absent_copy_slot must be taken again after the slot is materialized.
// Limitations: while spilled, a record pays its inline slot and a slot per tier (the home
// tier's entry unused, for O(1) indexing); a tensor that keeps copies in two tiers for long
// (a write-through tensor, or a read-mostly one whose host copy stays valid while it is on
// the device) pays that the whole time. Spilling takes a block from the process's slab of
// slot arrays on the miss path (a spin lock and a free-list pop), and gives it back at the
// eviction.
void migration_engine::compact_slots_locked(tensor_record& rec) noexcept
{
  if (!rec.slots.spilled()) { return; }
  copy_slot* const extra = rec.slots.extra();
  auto const n = static_cast<std::uint32_t>(rec.slots.size());
  std::uint32_t const home = rec.slots.home();
  bool const home_held = rec.slots[home].state != copy_state::absent;
  std::uint32_t held = home_held ? 1U : 0U;
  std::uint32_t other = home;
  for (std::uint32_t j = 0; j < n && held < 2; ++j) {
    if (j != home && extra[j].state != copy_state::absent) {
      ++held;
      other = j;
    }
  }
  if (held >= 2) { return; }
  if (home_held || other == home) {  // the inline slot holds the only copy, or none is left
    (void)rec.slots.fold(home);
    return;
  }
  // Tier `other` holds the only copy: its slot moves inline, with its register entry.
  bool const registered = extra[other].pin_registered;
  if (!registered) {
    (void)rec.slots.fold(other);
    return;
  }
  pin_register_shard& r = tiers_[other]->pin_reg[extra[other].pin_shard];
  std::lock_guard g(r.mtx);
  std::uint32_t const i = extra[other].pin_index;
  r.entries[i].owner = &rec.slots.fold(other);
}

void migration_engine::vacate_all_locked(tensor_record& rec) noexcept
{
  if (rec.freed) { return; }
  if (rec.cleaned_early) { early_write_back_wasted(rec); }  // freed with its device copy never dropped
  for (auto k = static_cast<std::uint32_t>(rec.slots.size()); k-- > 0;) { vacate_locked(rec, k); }
  if (rec.prefetched) {
    counters_->prefetch_wasted.fetch_add(1, std::memory_order_relaxed);
    counters_->prefetch_wasted_bytes.fetch_add(rec.bytes, std::memory_order_relaxed);
    rec.prefetched = false;
  }
  rec.freed = true;
}

// ---------------------------------------------------------------------------------------
// Copy streams
// ---------------------------------------------------------------------------------------

void migration_engine::make_copy_streams(std::uint32_t h2d, std::uint32_t d2h)
{
  auto make_stream = [&](char const* what) {
    stream_handle s{};
    status const st = backend_->create_stream(&s, 0);
    if (st != status::ok) { throw backend_error(st, std::string("pool: creating the ") + what + " stream"); }
    return s;
  };
  try {
    for (std::uint32_t i = 0; i < h2d; ++i) { h2d_.push_back(make_stream("h2d copy")); }
    for (std::uint32_t i = 0; i < d2h; ++i) { d2h_.push_back(make_stream("d2h copy")); }
    retire_ = make_stream("retire");
    for (std::uint32_t i = 0; i < kJoinStreams; ++i) { join_.push_back(make_stream("join")); }
    for (stream_handle s : h2d_) { (void)streams_->add(s, true); }
    for (stream_handle s : d2h_) { (void)streams_->add(s, true); }
    (void)streams_->add(retire_, true);
    for (stream_handle s : join_) { (void)streams_->add(s, true); }
  } catch (...) {
    destroy_copy_streams();
    throw;
  }
}

void migration_engine::synchronize_copy_streams() noexcept
{
  for (stream_handle s : h2d_) { (void)backend_->synchronize_stream(s); }
  for (stream_handle s : d2h_) { (void)backend_->synchronize_stream(s); }
  if (retire_.value != 0) { (void)backend_->synchronize_stream(retire_); }
  for (stream_handle s : join_) { (void)backend_->synchronize_stream(s); }
}

void migration_engine::shutdown() noexcept
{
  if (backend_ == nullptr) { return; }
  synchronize_copy_streams();
  tiers_.clear();  // ~tier waits for deferred frees and frees the chunks
  destroy_copy_streams();
}

void migration_engine::destroy_copy_streams() noexcept
{
  for (stream_handle s : h2d_) { backend_->destroy_stream(s); }
  for (stream_handle s : d2h_) { backend_->destroy_stream(s); }
  if (retire_.value != 0) { backend_->destroy_stream(retire_); }
  for (stream_handle s : join_) { backend_->destroy_stream(s); }
  join_.clear();
  h2d_.clear();
  d2h_.clear();
  retire_ = stream_handle{};
}

[[noreturn]] void throw_held(tensor_record const& r)
{
  throw logic_error("pool: tensor " + std::to_string(static_cast<std::uint64_t>(r.id)) +
                    r.quoted_name() +
                    " is already locked by this thread (a pool call re-entered from inside the pool)");
}

}  // namespace tierpool::detail

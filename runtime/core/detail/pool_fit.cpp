// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_fit.cpp — owns pool::fits(): how many more tensors of one size a tier can take,
// now and after eviction, within a tenant's quota, and what limits it (fit_report in
// include/tierpool/telemetry.hpp; docs/chapters/tiers.md, "How much still fits").
//
// The pool knows which copies eviction could take out; the tier knows where they sit among
// its free blocks (the arena's layout). So: collect the offsets of the copies that cannot
// go (a tier with a tier below: the pinned ones, from the register of Note [A register of
// pinned copies]) or of those that can (the lowest tier: its clean copies, each record
// locked in turn), then let the tier count runs of free and evictable blocks under its
// lock. Nothing is changed, and no policy is asked: a policy chooses *which* victims go,
// but every evictable copy can go.
//
// Note [A register of pinned copies]
// ----------------------------------
// Rationale: fits() is what a serving loop asks before admitting a request. Walking every
// record to find the evictable copies made it O(tensors log tensors): 230 ms at a million
// tensors (bench scale), although the device tier holds only its own blocks. In a tier
// with a tier below, every resident copy is evictable except the pinned ones, and those
// are few (live leases).
// Approach: each tier keeps a register of its pinned copies, sharded like the pinned-bytes
// counters: the 0 -> 1 pin transition (pin_locked, under the record's lock) appends the
// copy's block to the thread's shard, and the 1 -> 0 transition or a vacate removes it
// (swap with the last entry; the slot's pin_index says where it is). fits() copies the
// offsets out of every shard and lets the tier walk its own blocks (tier::fit_except):
// O(pinned log pinned + blocks in the tier). The register is off until the first fits()
// on the tier, so programs that never ask pay nothing on the hit path: that call turns it
// on, then walks the records once, registering the copies already pinned (a pin racing
// with the walk either sees the switch, or happened before the walk took its record lock).
// Limitations: once on, every pin transition of the tier costs a shard spin lock and an
// append or a removal (15-20 ns per acquire + release pair, bench hitpath --fits); the
// first call walks every record (125 ms at a million); a copy being filled (not yet valid)
// counts as evictable, where the record walk skipped it; if an entry cannot be added (out
// of host memory) the tier falls back to the record walk for good. The lowest tier (no
// tier below: dirty copies cannot go) still walks the records.
#include <tierpool/error.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/detail/pool_impl.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

// Copies eviction would accept (eviction.cpp's checks): present, no lease, and either
// clean (stale, or another valid copy exists) or with a tier below for the write-back.
// Their offsets, sorted. O(tensors): every record, each locked in turn.
std::vector<std::uint64_t> pool_impl::evictable_copies(std::uint32_t k, bool has_below) const
{
  std::vector<std::uint64_t> evictable;
  for (record_ref const& rec : records_by_id()) {
    record_lock const lock(*rec);
    if (rec->freed || k >= rec->slots.size()) { continue; }
    copy_slot const& s = rec->slots[k];
    if (s.state == copy_state::absent || s.pins != 0) { continue; }
    bool clean = s.state == copy_state::stale;
    for (std::uint32_t j = 0; j < rec->slots.size() && !clean; ++j) {
      clean = j != k && rec->slots[j].state == copy_state::valid;
    }
    if (clean || has_below) { evictable.push_back(s.blk.slot.offset); }
  }
  std::sort(evictable.begin(), evictable.end());
  return evictable;
}

// The offsets of tier k's pinned copies, sorted, from its register (turned on by the first
// call; Note [A register of pinned copies]). False when the register cannot be trusted.
bool pool_impl::pinned_copies(std::uint32_t k, std::vector<std::uint64_t>& out) const
{
  tier_state& ts = *engine_.tiers()[k];
  if (!ts.track_pins.load(std::memory_order_acquire)) {
    std::lock_guard g(ts.track_start);
    if (!ts.track_pins.load(std::memory_order_relaxed)) {
      ts.track_pins.store(true, std::memory_order_seq_cst);  // before any record lock below
      for (record_ref const& rec : records_by_id()) {
        record_lock const lock(*rec);
        if (rec->freed || k >= rec->slots.size() || rec->slots[k].pins == 0) { continue; }
        engine_.register_pin_locked(*rec, k, kShards);
      }
    }
  }
  return engine_.pinned_offsets(k, out);
}

fit_report pool_impl::fits(std::size_t bytes, tier_id tier, std::uint32_t tenant) const
{
  check_open("fits");
  auto const k = static_cast<std::uint32_t>(tier);
  if (k >= engine_.tiers().size()) {
    throw logic_error("pool::fits: tier " + std::to_string(k) + " out of range (the pool has " +
                      std::to_string(engine_.tiers().size()) + ")");
  }
  if (bytes == 0) { throw logic_error("pool::fits: bytes must be > 0"); }
  tier_state const& ts = *engine_.tiers()[k];
  bool const has_below = k + 1 < engine_.tiers().size();

  tier::fit_figures f;
  tier_usage u;
  std::vector<std::uint64_t> held;
  if (has_below && pinned_copies(k, held)) {
    std::lock_guard tl(ts.mem->mutex());
    f = ts.mem->fit_except(bytes, held);
    u = ts.mem->usage();
  } else {
    std::vector<std::uint64_t> const evictable = evictable_copies(k, has_below);
    std::lock_guard tl(ts.mem->mutex());
    f = ts.mem->fit(bytes, evictable);
    u = ts.mem->usage();
  }

  fit_report r;
  r.tier = ts.name;
  r.bytes = bytes;
  r.slot_bytes = f.slot_bytes;
  r.largest_now = f.largest_now;
  r.largest_after_eviction = f.largest_reclaimed;
  r.free_bytes = u.free_bytes;
  r.growable_bytes = f.growable_bytes;
  r.evictable_bytes = f.reclaimable_bytes;
  r.pinned_bytes = ts.pinned_bytes();
  r.in_flight_bytes = f.pending_bytes;
  r.quota_left = tenants_.quota_left(tenant);
  std::size_t const by_quota = r.quota_left / bytes;  // quotas count tensor bytes, in every tier
  r.fits_now = std::min(f.now, by_quota);
  r.fits_after_eviction = std::min(f.reclaimed, by_quota);

  // What bounds it: the quota; else space that exists but is not contiguous; else leases
  // holding space that would otherwise fit more; else the capacity itself.
  std::size_t const space = u.free_bytes + u.deferred_bytes + f.reclaimable_bytes + f.growable_bytes;  // deferred: done or not
  if (by_quota < f.reclaimed) {
    r.limit = fit_limit::quota;
  } else if (space / f.slot_bytes > f.reclaimed) {
    r.limit = fit_limit::fragmentation;
  } else if ((space + r.pinned_bytes) / f.slot_bytes > f.reclaimed) {
    r.limit = fit_limit::pinned;
  } else {
    r.limit = fit_limit::capacity;
  }
  return r;
}

}  // namespace tierpool::detail

namespace tierpool {

std::string_view to_string(fit_limit l) noexcept
{
  switch (l) {
    case fit_limit::capacity: return "capacity";
    case fit_limit::pinned: return "pinned";
    case fit_limit::fragmentation: return "fragmentation";
    case fit_limit::quota: return "quota";
  }
  return "unknown";
}

}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_fit.cpp — owns pool::fits(): how many more tensors of one size a tier can take,
// now and after eviction, within a tenant's quota, and what limits it (fit_report in
// include/tierpool/telemetry.hpp; docs/chapters/tiers.md, "How much still fits").
//
// The pool knows which copies eviction could take out (the records); the tier knows where
// they sit among its free blocks (the arena's layout). So: collect the offsets of the
// evictable copies, each record locked in turn, then let the tier count runs of free and
// evictable blocks under its lock. Nothing is changed, and no policy is asked: a policy
// chooses *which* victims go, but every evictable copy can go.
#include <tierpool/error.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/detail/pool_impl.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

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

  // Copies eviction would accept (eviction.cpp's checks): present, no lease, and either
  // clean (stale, or another valid copy exists) or with a tier below for the write-back.
  std::vector<std::uint64_t> evictable;
  for (std::shared_ptr<tensor_record> const& rec : records_by_id()) {
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

  tier::fit_figures f;
  tier_usage u;
  {
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

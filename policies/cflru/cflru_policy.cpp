// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cflru_policy.cpp — owns tierpool::cflru_policy (the recency list over a slab with a dirty
// bit per tensor, the two-pass clean-first proposal) and its registration as "cflru"
// (register_cflru). See cflru_policy.hpp for the algorithm and policies/cflru/README.md.
#include "cflru_policy.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include <tierpool/error.hpp>
#include <tierpool/policies/saturating.hpp>

namespace tierpool {

namespace pd = policies::detail;

cflru_policy::cflru_policy() noexcept : cfg_{} {}

cflru_policy::cflru_policy(config cfg) : cfg_(cfg)
{
  TIERPOOL_EXPECTS(std::isfinite(cfg.window) && cfg.window >= 0.0 && cfg.window <= 1.0,
                   "cflru: window must be in [0, 1] (a fraction of the evictable bytes), got " +
                     std::to_string(cfg.window));
}

void cflru_policy::on_insert(tensor_view const& v) noexcept
{
  slot i = find(v.id);
  if (i == pd::no_slot) {
    // Hooks are noexcept: if the host cannot grow the slab or the index, std::terminate runs.
    i = admit(v);
    nodes_[i].dirty = v.write_access;
    if (!v.pinned) { order_enter(i); }
    return;
  }
  node& n = nodes_[i];  // known: a new copy, promoted
  n.dirty = v.write_access;
  set_bytes(i, v.bytes);
  if (n.pinned != v.pinned) {
    set_pinned(i, v.pinned);  // an unpinned tensor enters at the MRU end
  } else if (!n.pinned) {
    order_leave(i);
    order_enter(i);
  }
}

void cflru_policy::access(slot i, tensor_view const& v) noexcept
{
  node& n = nodes_[i];
  n.dirty = n.dirty || v.write_access;
  set_bytes(i, v.bytes);
  if (n.pinned != v.pinned) {  // the view is the truth at this event
    set_pinned(i, v.pinned);
    return;
  }
  if (n.pinned || lru_.front == i) { return; }
  order_leave(i);
  order_enter(i);
}

bool cflru_policy::is_dirty(tensor_id id) const noexcept
{
  slot const i = find(id);
  return i != pd::no_slot && nodes_[i].dirty;
}

void cflru_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  if (req.bytes_needed == 0) { return; }
  // The window: the least recent `window` of the evictable bytes (all of them at 1, where
  // the product could round below the sum).
  std::size_t const window = cfg_.window >= 1.0 ? SIZE_MAX
                                                : static_cast<std::size_t>(cfg_.window * static_cast<double>(lru_.bytes()));
  std::size_t freed = 0;
  std::size_t seen = 0;     // bytes of the window walked
  slot edge = pd::no_slot;  // the first tensor past the window (none: the window is all of them)
  for (slot i = lru_.back; i != pd::no_slot; i = nodes_[i].prev) {
    if (seen >= window) {
      edge = i;
      break;
    }
    node const& n = nodes_[i];
    seen = pd::saturating_add(seen, n.bytes);
    if (n.dirty) { continue; }
    index_.prefetch(n.id);
    out.add(n.id, n.bytes);
    freed = pd::saturating_add(freed, n.bytes);
    if (freed >= req.bytes_needed) { return; }
  }
  // Then the window's dirty tensors and everything past it, in LRU order.
  bool past = false;
  for (slot i = lru_.back; i != pd::no_slot && freed < req.bytes_needed; i = nodes_[i].prev) {
    past = past || i == edge;
    node const& n = nodes_[i];
    if (!past && !n.dirty) { continue; }  // a clean tensor of the window: proposed above
    index_.prefetch(n.id);
    out.add(n.id, n.bytes);
    freed = pd::saturating_add(freed, n.bytes);
  }
}

namespace policies {

void register_cflru(policy_registry& registry)
{
  registry.add("cflru",
               "Clean-first LRU (Park et al., CASES 2006): the least recent part of the LRU order gives up its clean "
               "tensors before its dirty ones",
               {
                 {"window", parameter_type::real, "1",
                  "the clean-first window: the least recent fraction of the evictable bytes, in [0, 1]"},
               },
               [](policy_params const& p) {
                 cflru_policy::config cfg;
                 cfg.window = p.get<double>("window");
                 return any_eviction_policy{cflru_policy{cfg}};
               });
}

}  // namespace policies
}  // namespace tierpool

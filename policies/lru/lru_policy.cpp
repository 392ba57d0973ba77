// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lru_policy.cpp — owns tierpool::lru_policy (the recency list over a slab, pin handling,
// sized proposals) and its registration as "lru" (register_lru). See lru_policy.hpp for
// the algorithm and policies/lru/README.md for the design.
#include "lru_policy.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace tierpool {

namespace pd = policies::detail;

lru_policy::lru_policy() noexcept : lru_policy(config{}) {}

lru_policy::lru_policy(config cfg) noexcept : cfg_(cfg) {}

void lru_policy::on_insert(tensor_view const& v) noexcept
{
  slot i = find(v.id);
  if (i == pd::no_slot) {
    // Hooks are noexcept: if the host cannot grow the slab or the index, std::terminate
    // runs (the process is out of host memory; there is no sane ordering to keep).
    i = admit(v);
    nodes_[i].promote_at(v.last_access);
    if (!v.pinned) { order_enter(i); }
    return;
  }
  // Known: update, then promote unconditionally.
  node& n = nodes_[i];
  set_bytes(i, v.bytes);
  if (n.pinned != v.pinned) {
    set_pinned(i, v.pinned);  // an unpinned tensor enters at the MRU end
  } else if (!n.pinned) {
    order_leave(i);
    order_enter(i);
  }
  n.promote_at(v.last_access);
}

void lru_policy::access(slot i, tensor_view const& v) noexcept
{
  node& n = nodes_[i];
  set_bytes(i, v.bytes);
  if (n.pinned != v.pinned) {  // the view is the truth at this event
    set_pinned(i, v.pinned);
    n.promote_at(v.last_access);
    return;
  }
  if (n.pinned) { return; }  // pinned tensors are out of the order
  if (!(v.write_access ? cfg_.promote_on_write : cfg_.promote_on_read)) { return; }
  // Saturating difference: a clock that went backwards counts as "no time passed".
  tick const since = v.last_access >= n.promoted_at ? v.last_access - n.promoted_at : 0;
  if (cfg_.refresh_interval != 0 && since < cfg_.refresh_interval) { return; }
  n.promote_at(v.last_access);
  if (lru_.front == i) { return; }
  order_leave(i);
  order_enter(i);
}

void lru_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  propose_walk(req, out, lru_.back, [this](slot i) { return nodes_[i].prev; });
}

namespace policies {

void register_lru(policy_registry& registry)
{
  registry.add(
    "lru", "Least recently used first; pinned tensors are kept out of the order",
    {
      {"refresh_interval", parameter_type::unsigned_integer, "0",
       "promote a tensor at most once per this many ticks (0 = every access)"},
      {"promote_on_read", parameter_type::boolean, "true", "a read access moves the tensor to the most recent end"},
      {"promote_on_write", parameter_type::boolean, "true", "a write access moves the tensor to the most recent end"},
    },
    [](policy_params const& p) {
      lru_policy::config cfg;
      cfg.refresh_interval = p.get<std::uint64_t>("refresh_interval");
      cfg.promote_on_read = p.get<bool>("promote_on_read");
      cfg.promote_on_write = p.get<bool>("promote_on_write");
      return any_eviction_policy{lru_policy{cfg}};
    });
}

}  // namespace policies
}  // namespace tierpool

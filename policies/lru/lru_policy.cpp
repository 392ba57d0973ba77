// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lru_policy.cpp — owns tierpool::lru_policy (the recency list over a slab, pin handling,
// sized proposals) and its registration as "lru" (register_lru). See lru_policy.hpp for
// the algorithm and policies/lru/README.md for the design.
#include "lru_policy.hpp"

#include <cstdint>
#include <vector>
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
    // Hooks are noexcept: if the host cannot grow the slab, the index or a side array,
    // std::terminate runs (the process is out of host memory; there is no sane ordering
    // to keep). The side arrays grow first, so that a throw leaves the order unchanged.
    if (cfg_.refresh_interval != 0 && free_head_ == pd::no_slot) {
      ticks_.resize(nodes_.size() + 1);  // geometric, like the slab; the new slot's tick
    }
    if (v.bytes > node::max_bytes) { huge_.reserve(huge_.size() + 1); }
    tensor_view kept = v;
    kept.bytes = node::kept_bytes(v.bytes);
    i = admit(kept);
    if (v.bytes > node::max_bytes) { huge_.emplace_back(i, v.bytes); }  // reserved: no throw
    promote_at(i, v.last_access);
    if (!v.pinned) { order_enter(i); }
    return;
  }
  // Known: update, then promote unconditionally.
  node& n = nodes_[i];
  resize(i, v.bytes);
  if (n.pinned != v.pinned) {
    set_pinned(i, v.pinned);  // an unpinned tensor enters at the MRU end
  } else if (!n.pinned) {
    order_leave(i);
    order_enter(i);
  }
  promote_at(i, v.last_access);
}

void lru_policy::access(slot i, tensor_view const& v) noexcept
{
  node& n = nodes_[i];
  resize(i, v.bytes);
  if (n.pinned != v.pinned) {  // the view is the truth at this event
    set_pinned(i, v.pinned);
    promote_at(i, v.last_access);
    return;
  }
  if (n.pinned) { return; }  // pinned tensors are out of the order
  if (!(v.write_access ? cfg_.promote_on_write : cfg_.promote_on_read)) { return; }
  if (cfg_.refresh_interval != 0) {
    // Saturating difference: a clock that went backwards counts as "no time passed".
    tick const at = ticks_[i];
    tick const since = v.last_access >= at ? v.last_access - at : 0;
    if (since < cfg_.refresh_interval) { return; }
    ticks_[i] = node::kept_tick(v.last_access);
  }
  if (lru_.front == i) { return; }
  order_leave(i);
  order_enter(i);
}

void lru_policy::erase(slot i) noexcept
{
  // slab_policy::on_erase's own path, and the exact size of a huge tensor forgotten.
  index_.erase(nodes_[i].id);
  if (!nodes_[i].pinned) { order_leave(i); }
  if (!huge_.empty()) { std::erase_if(huge_, [i](auto const& h) { return h.first == i; }); }
  free_slot(i);
}

void lru_policy::resize(slot i, std::size_t bytes) noexcept
{
  set_bytes(i, node::kept_bytes(bytes));
  if (bytes <= node::max_bytes) {
    if (!huge_.empty()) { std::erase_if(huge_, [i](auto const& h) { return h.first == i; }); }
    return;
  }
  for (auto& h : huge_) {
    if (h.first == i) {
      h.second = bytes;
      return;
    }
  }
  // A size past 2^62 bytes on an access: the one case in which on_access allocates (a
  // failure terminates, as in on_insert). No machine holds such a tensor.
  huge_.emplace_back(i, bytes);
}

std::size_t lru_policy::bytes_of(slot i) const noexcept
{
  std::size_t const b = nodes_[i].bytes;
  if (b == node::max_bytes) {
    for (auto const& h : huge_) {
      if (h.first == i) { return h.second; }
    }
  }
  return b;
}

std::size_t lru_policy::evictable_bytes() const noexcept
{
  if (huge_.empty()) { return lru_.bytes(); }
  pd::slab_list sum = lru_;  // its exact two-word sum, with the kept sizes of huge tensors corrected
  for (auto const& [i, b] : huge_) {
    if (!nodes_[i].pinned) { sum.resize(node::max_bytes, b); }
  }
  return sum.bytes();
}

bool lru_policy::validate() const noexcept
{
  if (!slab_policy::validate()) { return false; }
  if (ticks_.size() != (cfg_.refresh_interval != 0 ? nodes_.size() : 0)) { return false; }
  for (std::size_t k = 0; k < huge_.size(); ++k) {
    auto const [i, b] = huge_[k];
    if (i >= nodes_.size() || !nodes_[i].live || nodes_[i].bytes != node::max_bytes || b <= node::max_bytes) {
      return false;
    }
    for (std::size_t j = 0; j < k; ++j) {
      if (huge_[j].first == i) { return false; }
    }
  }
  return true;
}

void lru_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  // slab_policy::propose_walk() with the exact sizes of huge tensors.
  std::size_t freed = 0;
  for (slot i = lru_.back; i != pd::no_slot && freed < req.bytes_needed; i = nodes_[i].prev) {
    node const& n = nodes_[i];
    index_.prefetch(n.id);
    std::size_t const b = bytes_of(i);
    out.add(n.id, b);
    freed = pd::saturating_add(freed, b);
  }
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

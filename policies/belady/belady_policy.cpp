// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// belady_policy.cpp — owns tierpool::belady_policy (an intrusive ordered set by forecast
// next use over a slab, the intrusive set of tensors lacking a forecast, the error propose() raises for them) and its
// registration as "belady" (register_belady). See belady_policy.hpp for the algorithm.
#include "belady_policy.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include <tierpool/policies/saturating.hpp>

namespace tierpool {

belady_policy::belady_policy(config cfg) noexcept : cfg_(cfg) {}

belady_policy::belady_policy(belady_policy const& other)
  : cfg_(other.cfg_),
    nodes_(other.nodes_),
    free_head_(other.free_head_),
    index_(other.index_),
    clock_(other.clock_)
{
  // The copied hooks are unlinked: relink in the same orders.
  policies::detail::relink_copy(other.nodes_, other.order_, nodes_, order_);
  policies::detail::relink_copy(other.nodes_, other.missing_, nodes_, missing_);
}

belady_policy& belady_policy::operator=(belady_policy const& other)
{
  return policies::detail::assign_by_copy(*this, other);
}

void belady_policy::note_forecast(node& n, bool has) noexcept
{
  // Linked into missing_ exactly while n.forecast is false.
  if (has && !n.forecast) {
    missing_.erase(missing_.iterator_to(n));
  } else if (!has && n.forecast) {
    missing_.insert(n);
  }
  n.forecast = has;
}

// Note [Pinned tensors leave Belady's order]
// Rationale: propose() walks the order from the furthest next use and skips pinned
// tensors. A replayed kernel leases all of its operands, so while a serving step holds
// tens of thousands of KV blocks every propose passed all of them: O(pinned) per
// eviction, over 90 s for a 19 M-request replay that lru runs in 20 s.
// Approach: as lru_policy does with its side list, a pinned tensor is out of order_ (it
// keeps its key); on_unpin puts it back where its forecast says. order_ holds exactly the
// unpinned tracked tensors, so propose() costs O(victims).
// Limitations: a pin or unpin is O(log n) instead of a flag.
void belady_policy::update(node& n, tensor_view const& v) noexcept
{
  ++clock_;
  n.bytes = v.bytes;
  note_forecast(n, v.next_use.has_value());
  if (!n.pinned) { order_.erase(order_.iterator_to(n)); }  // intrusive: unlink, re-key, relink in place
  n.k = key{v.next_use.value_or(no_next_use), clock_, v.id};
  n.pinned = v.pinned;
  if (!n.pinned) { order_.insert(n); }
}

void belady_policy::on_pin(tensor_id id) noexcept
{
  index_t const i = index_.find(id);
  if (i == npos || nodes_[i].pinned) { return; }
  nodes_[i].pinned = true;
  order_.erase(order_.iterator_to(nodes_[i]));
}

void belady_policy::on_unpin(tensor_id id) noexcept
{
  index_t const i = index_.find(id);
  if (i == npos || !nodes_[i].pinned) { return; }
  nodes_[i].pinned = false;
  order_.insert(nodes_[i]);
}

void belady_policy::on_insert(tensor_view const& v) noexcept
{
  if (index_t const i = index_.find(v.id); i != npos) {
    update(nodes_[i], v);
    return;
  }
  ++clock_;
  // Hooks are noexcept: out of host memory here (slab or index growth) terminates.
  index_t const i = policies::detail::acquire_intrusive_slot(nodes_, free_head_, order_, missing_);
  node& n = nodes_[i];
  n.k = key{v.next_use.value_or(no_next_use), clock_, v.id};
  n.bytes = v.bytes;
  n.next = npos;
  n.pinned = v.pinned;
  n.forecast = true;  // not in missing_ yet; note_forecast links it when needed
  n.live = true;
  index_.insert(v.id, i);
  if (!n.pinned) { order_.insert(n); }
  note_forecast(n, v.next_use.has_value());
}

void belady_policy::on_access(tensor_view const& v) noexcept
{
  if (index_t const i = index_.find(v.id); i != npos) { update(nodes_[i], v); }
}

void belady_policy::on_erase(tensor_id id) noexcept
{
  index_t const i = index_.find(id);
  if (i == npos) { return; }
  node& n = nodes_[i];
  if (!n.pinned) { order_.erase(order_.iterator_to(n)); }
  if (!n.forecast) { missing_.erase(missing_.iterator_to(n)); }
  index_.erase(id);
  n.live = false;
  n.pinned = false;
  n.forecast = true;
  policies::detail::slab_release(nodes_, free_head_, i);
}

void belady_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  if (req.bytes_needed == 0) { return; }
  if (!missing_.empty()) {
    throw logic_error("belady: tensor " + std::to_string(static_cast<std::uint64_t>(missing_.begin()->k.id)) +
                      " has no next-use forecast; Belady's MIN needs a driver that provides one (tierpool replay "
                      "does; pass next-use hints with pool::set_next_use) \xE2\x80\x94 use lru or repeat instead");
  }
  policies::detail::propose_unpinned(order_, req, out);
}

bool belady_policy::validate() const noexcept
{
  auto const tracked = [&](node const& n) {
    return !(&n < nodes_.data()) && slot_of(n) < nodes_.size() && n.live && index_.find(n.k.id) == slot_of(n);
  };
  // The order: every member a tracked node of this slab, in strictly increasing key order.
  key const* prev_key = nullptr;
  for (node const& n : order_) {
    if (!tracked(n) || n.pinned) { return false; }
    if (prev_key != nullptr && !(*prev_key < n.k)) { return false; }
    prev_key = &n.k;
  }
  // missing_: tracked nodes without a forecast, by strictly increasing id.
  node const* prev_missing = nullptr;
  for (node const& n : missing_) {
    if (!tracked(n) || n.forecast) { return false; }
    if (prev_missing != nullptr && !(prev_missing->k.id < n.k.id)) { return false; }
    prev_missing = &n;
  }
  std::size_t live = 0;
  std::size_t pinned = 0;
  std::size_t without = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {  // checking only: slab order does not matter
    node const& n = nodes_[i];
    if (!n.live) { continue; }
    ++live;
    if (n.pinned) { ++pinned; }
    if (index_.find(n.k.id) != i) { return false; }
    if (!n.forecast) { ++without; }
  }
  if (order_.size() + pinned != live || index_.size() != live || without != missing_.size()) { return false; }
  return policies::detail::slab_accounted(nodes_, free_head_, live);
}

namespace policies {

void register_belady(policy_registry& registry)
{
  registry.add("belady",
               "Belady's MIN: evicts the tensor used furthest in the future (needs next-use forecasts, as tierpool "
               "replay gives)",
               {}, [](policy_params const&) { return any_eviction_policy{belady_policy{}}; });
}

}  // namespace policies
}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// belady_policy.cpp — owns tierpool::belady_policy (an intrusive ordered set by forecast
// next use over a slab, the intrusive set of tensors lacking a forecast, the error propose() raises for them) and its
// registration as "belady" (register_belady). See belady_policy.hpp for the algorithm.
#include "belady_policy.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace tierpool {
namespace {

constexpr std::size_t saturating_add(std::size_t a, std::size_t b) noexcept
{
  return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max() : a + b;
}

}  // namespace

belady_policy::belady_policy(config cfg) noexcept : cfg_(cfg) {}

belady_policy::belady_policy(belady_policy const& other)
  : cfg_(other.cfg_),
    nodes_(other.nodes_),
    free_head_(other.free_head_),
    index_(other.index_),
    clock_(other.clock_)
{
  // The copied hooks are unlinked; relink in the same orders (already sorted: push_back).
  for (node const& n : other.order_) { order_.push_back(nodes_[other.slot_of(n)]); }
  for (node const& n : other.missing_) { missing_.push_back(nodes_[other.slot_of(n)]); }
}

belady_policy& belady_policy::operator=(belady_policy const& other)
{
  if (this != &other) {
    belady_policy copy(other);
    *this = std::move(copy);
  }
  return *this;
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

void belady_policy::update(node& n, tensor_view const& v) noexcept
{
  ++clock_;
  n.bytes = v.bytes;
  n.pinned = v.pinned;
  note_forecast(n, v.next_use.has_value());
  order_.erase(order_.iterator_to(n));  // intrusive: unlink, re-key, relink in place
  n.k = key{v.next_use.value_or(no_next_use), clock_, v.id};
  order_.insert(n);
}

void belady_policy::on_insert(tensor_view const& v) noexcept
{
  if (index_t const i = index_.find(v.id); i != npos) {
    update(nodes_[i], v);
    return;
  }
  ++clock_;
  // Hooks are noexcept: out of host memory here (slab or index growth) terminates.
  index_t i = free_head_;
  if (i != npos) {
    free_head_ = nodes_[i].next;
  } else {
    if (nodes_.size() == nodes_.capacity()) { policies::detail::grow_intrusive_slab(nodes_, order_, missing_); }
    i = static_cast<index_t>(nodes_.size());
    nodes_.emplace_back();  // within capacity: no node moves
  }
  node& n = nodes_[i];
  n.k = key{v.next_use.value_or(no_next_use), clock_, v.id};
  n.bytes = v.bytes;
  n.next = npos;
  n.pinned = v.pinned;
  n.forecast = true;  // not in missing_ yet; note_forecast links it when needed
  n.live = true;
  index_.insert(v.id, i);
  order_.insert(n);
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
  order_.erase(order_.iterator_to(n));
  if (!n.forecast) { missing_.erase(missing_.iterator_to(n)); }
  index_.erase(id);
  n.live = false;
  n.pinned = false;
  n.forecast = true;
  n.next = free_head_;
  free_head_ = i;
}

void belady_policy::on_pin(tensor_id id) noexcept
{
  if (index_t const i = index_.find(id); i != npos) { nodes_[i].pinned = true; }
}

void belady_policy::on_unpin(tensor_id id) noexcept
{
  if (index_t const i = index_.find(id); i != npos) { nodes_[i].pinned = false; }
}

void belady_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  if (req.bytes_needed == 0) { return; }
  if (!missing_.empty()) {
    throw logic_error("belady: tensor " + std::to_string(static_cast<std::uint64_t>(missing_.begin()->k.id)) +
                      " has no next-use forecast; Belady's MIN needs a driver that provides one (tierpool replay "
                      "does; pass next-use hints with pool::set_next_use) \xE2\x80\x94 use lru or repeat instead");
  }
  std::size_t freed = 0;
  for (auto it = order_.begin(); it != order_.end() && freed < req.bytes_needed; ++it) {
    if (it->pinned) { continue; }
    out.add(it->k.id, it->bytes);
    freed = saturating_add(freed, it->bytes);
  }
}

bool belady_policy::validate() const noexcept
{
  auto const tracked = [&](node const& n) {
    return !(&n < nodes_.data()) && slot_of(n) < nodes_.size() && n.live && index_.find(n.k.id) == slot_of(n);
  };
  // The order: every member a tracked node of this slab, in strictly increasing key order.
  key const* prev_key = nullptr;
  for (node const& n : order_) {
    if (!tracked(n)) { return false; }
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
  std::size_t without = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {  // checking only: slab order does not matter
    node const& n = nodes_[i];
    if (!n.live) { continue; }
    ++live;
    if (index_.find(n.k.id) != i) { return false; }
    if (!n.forecast) { ++without; }
  }
  if (order_.size() != live || index_.size() != live || without != missing_.size()) { return false; }
  std::size_t free_slots = 0;
  for (index_t i = free_head_; i != npos; i = nodes_[i].next) {
    if (i >= nodes_.size() || nodes_[i].live || free_slots > nodes_.size()) { return false; }
    ++free_slots;
  }
  return live + free_slots == nodes_.size();
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

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// belady_policy.cpp — owns tierpool::belady_policy (an ordered set by forecast next use,
// the set of tensors lacking a forecast, the error propose() raises for them) and its
// registration as "belady" (register_belady). See belady_policy.hpp for the algorithm.
#include "belady_policy.hpp"

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

void belady_policy::note_forecast(tensor_id id, bool has) noexcept
{
  // Hooks are noexcept: out of host memory on this (error) path terminates.
  if (has) {
    if (!missing_.empty()) { missing_.erase(id); }
  } else {
    missing_.insert(id);
  }
}

void belady_policy::update(state& s, tensor_view const& v) noexcept
{
  ++clock_;
  s.bytes = v.bytes;
  s.pinned = v.pinned;
  s.forecast = v.next_use.has_value();
  note_forecast(v.id, s.forecast);
  auto nh = order_.extract(s.k);  // no allocation: the node is reused
  s.k = key{v.next_use.value_or(no_next_use), clock_, v.id};
  if (nh.empty()) {  // unreachable: every tracked tensor is in the order
    order_.insert(s.k);
    return;
  }
  nh.value() = s.k;
  order_.insert(std::move(nh));
}

void belady_policy::on_insert(tensor_view const& v) noexcept
{
  if (auto const it = tensors_.find(v.id); it != tensors_.end()) {
    update(it->second, v);
    return;
  }
  ++clock_;
  key const k{v.next_use.value_or(no_next_use), clock_, v.id};
  tensors_.emplace(v.id, state{k, v.bytes, v.pinned, v.next_use.has_value()});
  order_.insert(k);
  note_forecast(v.id, v.next_use.has_value());
}

void belady_policy::on_access(tensor_view const& v) noexcept
{
  if (auto const it = tensors_.find(v.id); it != tensors_.end()) { update(it->second, v); }
}

void belady_policy::on_erase(tensor_id id) noexcept
{
  auto const it = tensors_.find(id);
  if (it == tensors_.end()) { return; }
  order_.erase(it->second.k);
  if (!it->second.forecast) { missing_.erase(id); }
  tensors_.erase(it);
}

void belady_policy::on_pin(tensor_id id) noexcept
{
  if (auto const it = tensors_.find(id); it != tensors_.end()) { it->second.pinned = true; }
}

void belady_policy::on_unpin(tensor_id id) noexcept
{
  if (auto const it = tensors_.find(id); it != tensors_.end()) { it->second.pinned = false; }
}

void belady_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  if (req.bytes_needed == 0) { return; }
  if (!missing_.empty()) {
    throw logic_error("belady: tensor " + std::to_string(static_cast<std::uint64_t>(*missing_.begin())) +
                      " has no next-use forecast; Belady's MIN needs a driver that provides one (tierpool replay "
                      "does; pass next-use hints with pool::set_next_use) \xE2\x80\x94 use lru or repeat instead");
  }
  std::size_t freed = 0;
  for (auto it = order_.begin(); it != order_.end() && freed < req.bytes_needed; ++it) {
    state const& s = tensors_.find(it->id)->second;
    if (s.pinned) { continue; }
    out.add(it->id, s.bytes);
    freed = saturating_add(freed, s.bytes);
  }
}

bool belady_policy::validate() const noexcept
{
  for (key const& k : order_) {
    auto const it = tensors_.find(k.id);
    if (it == tensors_.end() || !(it->second.k == k)) { return false; }
  }
  std::size_t without = 0;
  for (auto const& [id, s] : tensors_) {  // checking only: the order does not matter
    if (s.k.id != id) { return false; }
    if (!s.forecast) {
      ++without;
      if (missing_.count(id) != 1) { return false; }
    }
  }
  return order_.size() == tensors_.size() && without == missing_.size();
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

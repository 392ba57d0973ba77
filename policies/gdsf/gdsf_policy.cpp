// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// gdsf_policy.cpp — owns tierpool::gdsf_policy (H = L + frequency * cost / size in an
// ordered set, L committed when the first tensor of the order leaves) and its registration
// as "gdsf" (register_gdsf). See gdsf_policy.hpp for the algorithm and
// policies/gdsf/README.md.
#include "gdsf_policy.hpp"

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

gdsf_policy::gdsf_policy() noexcept : gdsf_policy(config{}) {}

gdsf_policy::gdsf_policy(config cfg) noexcept : cfg_(cfg) {}

double gdsf_policy::cost_of(tensor_view const& v) const noexcept
{
  cost_model m = cfg_.cost;
  if (m == cost_model::transfer) {
    if (v.transfer_cost != 0) { return static_cast<double>(v.transfer_cost); }
    m = cfg_.fallback;
  }
  return m == cost_model::bytes ? static_cast<double>(std::max<std::size_t>(v.bytes, 1)) : 1.0;
}

double gdsf_policy::priority_of(std::uint64_t frequency, double cost, std::size_t bytes) const noexcept
{
  return inflation_ + static_cast<double>(frequency) * cost / static_cast<double>(std::max<std::size_t>(bytes, 1));
}

void gdsf_policy::rekey(state& s, key const& k) noexcept
{
  auto nh = order_.extract(s.k);  // no allocation: the node is reused
  s.k = k;
  if (nh.empty()) {  // unreachable: every tracked tensor is in the order
    order_.insert(k);
    return;
  }
  nh.value() = k;
  order_.insert(std::move(nh));
}

std::optional<double> gdsf_policy::priority(tensor_id id) const noexcept
{
  auto const it = tensors_.find(id);
  if (it == tensors_.end()) { return std::nullopt; }
  return it->second.k.h;
}

void gdsf_policy::on_insert(tensor_view const& v) noexcept
{
  if (tensors_.find(v.id) != tensors_.end()) {
    on_access(v);
    return;
  }
  ++clock_;
  key const k{priority_of(1, cost_of(v), v.bytes), clock_, v.id};
  // Hooks are noexcept: out of host memory here terminates.
  tensors_.emplace(v.id, state{k, v.bytes, 1, v.pinned});
  order_.insert(k);
}

void gdsf_policy::on_access(tensor_view const& v) noexcept
{
  auto const it = tensors_.find(v.id);
  if (it == tensors_.end()) { return; }
  state& s = it->second;
  ++clock_;
  bool const correlated = cfg_.correlation_window != 0 && clock_ - s.k.seq <= cfg_.correlation_window;
  if (!correlated) { ++s.frequency; }
  s.bytes = v.bytes;
  s.pinned = v.pinned;
  rekey(s, key{priority_of(s.frequency, cost_of(v), v.bytes), clock_, v.id});
}

void gdsf_policy::on_erase(tensor_id id) noexcept
{
  auto const it = tensors_.find(id);
  if (it == tensors_.end()) { return; }
  state const& s = it->second;
  if (first_evictable() == s.k.id) { inflation_ = std::max(inflation_, s.k.h); }  // L <- H(victim)
  order_.erase(s.k);
  tensors_.erase(it);
}

void gdsf_policy::on_pin(tensor_id id) noexcept
{
  if (auto const it = tensors_.find(id); it != tensors_.end()) { it->second.pinned = true; }
}

void gdsf_policy::on_unpin(tensor_id id) noexcept
{
  if (auto const it = tensors_.find(id); it != tensors_.end()) { it->second.pinned = false; }
}

std::optional<tensor_id> gdsf_policy::first_evictable() const noexcept
{
  for (key const& k : order_) {
    if (!tensors_.find(k.id)->second.pinned) { return k.id; }
  }
  return std::nullopt;
}

void gdsf_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  std::size_t freed = 0;
  for (auto it = order_.begin(); it != order_.end() && freed < req.bytes_needed; ++it) {
    state const& s = tensors_.find(it->id)->second;
    if (s.pinned) { continue; }
    out.add(it->id, s.bytes);
    freed = saturating_add(freed, s.bytes);
  }
}

bool gdsf_policy::validate() const noexcept
{
  for (key const& k : order_) {
    auto const it = tensors_.find(k.id);
    if (it == tensors_.end() || !(it->second.k == k)) { return false; }
  }
  for (auto const& [id, s] : tensors_) {  // checking only: the order does not matter
    if (s.k.id != id || s.frequency == 0) { return false; }
  }
  return order_.size() == tensors_.size();
}

namespace policies {
namespace {

gdsf_policy::cost_model parse_cost(std::string const& text, char const* param, bool allow_transfer)
{
  if (text == "transfer" && allow_transfer) { return gdsf_policy::cost_model::transfer; }
  if (text == "one") { return gdsf_policy::cost_model::one; }
  if (text == "bytes") { return gdsf_policy::cost_model::bytes; }
  throw logic_error(std::string("gdsf: ") + param + " must be " + (allow_transfer ? "transfer, one or bytes" : "one or bytes") +
                    ", got '" + text + "'");
}

}  // namespace

void register_gdsf(policy_registry& registry)
{
  registry.add(
    "gdsf",
    "GreedyDual-Size-Frequency (Cherkasova 1998): evicts the lowest L + frequency * cost / size, L rising on eviction",
    {
      {"cost", parameter_type::string, "transfer",
       "cost of a miss: transfer (tensor_view::transfer_cost, else the fallback), one, or bytes"},
      {"fallback", parameter_type::string, "bytes", "cost when transfer_cost is unknown (0): bytes or one"},
      {"correlation_window", parameter_type::unsigned_integer, "1",
       "an access within this many policy events of the previous one does not count (0 = every access counts)"},
    },
    [](policy_params const& p) {
      gdsf_policy::config cfg;
      cfg.cost = parse_cost(p.get<std::string>("cost"), "cost", true);
      cfg.fallback = parse_cost(p.get<std::string>("fallback"), "fallback", false);
      cfg.correlation_window = p.get<std::uint64_t>("correlation_window");
      return any_eviction_policy{gdsf_policy{cfg}};
    });
}

}  // namespace policies
}  // namespace tierpool

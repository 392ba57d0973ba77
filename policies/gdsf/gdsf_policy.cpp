// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// gdsf_policy.cpp — owns tierpool::gdsf_policy (H = L + frequency * cost / size in an
// intrusive ordered set over a slab, L committed when the first tensor of the order leaves) and its registration
// as "gdsf" (register_gdsf). See gdsf_policy.hpp for the algorithm and
// policies/gdsf/README.md.
#include "gdsf_policy.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include <tierpool/policies/saturating.hpp>

namespace tierpool {

gdsf_policy::gdsf_policy() noexcept : gdsf_policy(config{}) {}

gdsf_policy::gdsf_policy(config cfg) noexcept : cfg_(cfg) {}

gdsf_policy::gdsf_policy(gdsf_policy const& other)
  : cfg_(other.cfg_),
    nodes_(other.nodes_),
    free_head_(other.free_head_),
    index_(other.index_),
    inflation_(other.inflation_),
    clock_(other.clock_)
{
  // The copied hooks are unlinked: relink in the same order.
  policies::detail::relink_copy(other.nodes_, other.order_, nodes_, order_);
}

gdsf_policy& gdsf_policy::operator=(gdsf_policy const& other)
{
  return policies::detail::assign_by_copy(*this, other);
}

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

void gdsf_policy::rekey(node& n, key const& k) noexcept
{
  order_.erase(order_.iterator_to(n));  // intrusive: unlink, re-key, relink in place
  n.k = k;
  order_.insert(n);
}

std::optional<double> gdsf_policy::priority(tensor_id id) const noexcept
{
  index_t const i = index_.find(id);
  if (i == npos) { return std::nullopt; }
  return nodes_[i].k.h;
}

void gdsf_policy::on_insert(tensor_view const& v) noexcept
{
  if (index_.contains(v.id)) {
    on_access(v);
    return;
  }
  ++clock_;
  // Hooks are noexcept: out of host memory here (slab or index growth) terminates.
  index_t const i = policies::detail::acquire_intrusive_slot(nodes_, free_head_, order_);
  node& n = nodes_[i];
  n.k = key{priority_of(1, cost_of(v), v.bytes), clock_, v.id};
  n.bytes = v.bytes;
  n.frequency = 1;
  n.next = npos;
  n.pinned = v.pinned;
  n.live = true;
  index_.insert(v.id, i);
  order_.insert(n);
}

void gdsf_policy::on_access(tensor_view const& v) noexcept
{
  index_t const i = index_.find(v.id);
  if (i == npos) { return; }
  node& s = nodes_[i];
  ++clock_;
  bool const correlated = cfg_.correlation_window != 0 && clock_ - s.k.seq <= cfg_.correlation_window;
  if (!correlated) { ++s.frequency; }
  s.bytes = v.bytes;
  s.pinned = v.pinned;
  rekey(s, key{priority_of(s.frequency, cost_of(v), v.bytes), clock_, v.id});
}

void gdsf_policy::on_erase(tensor_id id) noexcept
{
  index_t const i = index_.find(id);
  if (i == npos) { return; }
  node& n = nodes_[i];
  if (first_evictable() == n.k.id) { inflation_ = std::max(inflation_, n.k.h); }  // L <- H(victim)
  order_.erase(order_.iterator_to(n));
  index_.erase(id);
  n.live = false;
  n.pinned = false;
  policies::detail::slab_release(nodes_, free_head_, i);
}

std::optional<tensor_id> gdsf_policy::first_evictable() const noexcept
{
  for (node const& n : order_) {
    if (!n.pinned) { return n.k.id; }
  }
  return std::nullopt;
}

void gdsf_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  policies::detail::propose_unpinned(order_, req, out);
}

bool gdsf_policy::validate() const noexcept
{
  // The order: every member a tracked node of this slab, in strictly increasing key order.
  key const* prev_key = nullptr;
  for (node const& n : order_) {
    if (&n < nodes_.data() || slot_of(n) >= nodes_.size() || !n.live) { return false; }
    if (index_.find(n.k.id) != slot_of(n)) { return false; }
    if (prev_key != nullptr && !(*prev_key < n.k)) { return false; }
    prev_key = &n.k;
  }
  std::size_t live = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {  // checking only: slab order does not matter
    node const& n = nodes_[i];
    if (!n.live) { continue; }
    ++live;
    if (index_.find(n.k.id) != i || n.frequency == 0) { return false; }
  }
  if (order_.size() != live || index_.size() != live) { return false; }
  return policies::detail::slab_accounted(nodes_, free_head_, live);
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

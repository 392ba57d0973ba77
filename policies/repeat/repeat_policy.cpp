// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// repeat_policy.cpp — owns tierpool::repeat_policy (per-tensor reuse distances and their
// phase, predicted next use in an intrusive ordered set, the history of evicted tensors,
// all over one slab)
// and its registration as "repeat" (register_repeat). See repeat_policy.hpp for the
// algorithm and policies/repeat/README.md for the design.
#include "repeat_policy.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include <tierpool/policies/saturating.hpp>

namespace tierpool {
namespace {

// Two reuse distances of the same phase: equal within 1/8 (jitter from merged accesses).
constexpr bool close(std::uint64_t a, std::uint64_t b) noexcept
{
  std::uint64_t const diff = a > b ? a - b : b - a;
  return diff <= std::max(a, b) / 8;
}

}  // namespace

repeat_policy::repeat_policy() noexcept : repeat_policy(config{}) {}

repeat_policy::repeat_policy(config cfg) noexcept : cfg_(cfg) {}

repeat_policy::repeat_policy(repeat_policy const& other)
  : cfg_(other.cfg_),
    nodes_(other.nodes_),
    free_head_(other.free_head_),
    index_(other.index_),
    history_(other.history_),
    clock_(other.clock_),
    avg_distance_(other.avg_distance_)
{
  // The copied hooks are unlinked: relink in the same order.
  policies::detail::relink_copy(other.nodes_, other.order_, nodes_, order_);
}

repeat_policy& repeat_policy::operator=(repeat_policy const& other)
{
  return policies::detail::assign_by_copy(*this, other);
}

repeat_policy::index_t repeat_policy::lookup(tensor_id id) const noexcept
{
  return index_.find(id);
}

std::uint64_t repeat_policy::grace() const noexcept { return cfg_.grace != 0 ? cfg_.grace : avg_distance_ / 2; }

std::optional<std::uint64_t> repeat_policy::predicted_use(tensor_id id) const noexcept
{
  index_t const i = lookup(id);
  if (i == npos || !nodes_[i].resident || nodes_[i].k.at == kUnknown) { return std::nullopt; }
  return nodes_[i].k.at;
}

void repeat_policy::observe(node& n, std::uint64_t pos) noexcept
{
  std::uint64_t const d = pos - n.last;
  n.last = pos;
  if (n.unused) {  // its first use: the prefetch before it was not one
    n.unused = false;
    return;
  }
  if (d <= cfg_.correlation_window) { return; }  // the same use, reported twice
  n.dist = {d, n.dist[0], n.dist[1], n.dist[2]};
  // Moving average with weight 1/16, in integers (deterministic everywhere).
  avg_distance_ = d >= avg_distance_ ? avg_distance_ + (d - avg_distance_) / 16 : avg_distance_ - (avg_distance_ - d) / 16;
  if (avg_distance_ == 0) { avg_distance_ = 1; }
}

repeat_policy::key repeat_policy::predict(node const& n) const noexcept
{
  if (n.dist[0] == 0) { return key{kUnknown, n.last, n.id}; }
  std::uint64_t next = n.dist[0];  // no phase found: the last distance
  for (std::size_t k = 1; k < n.dist.size(); ++k) {
    if (n.dist[k] != 0 && close(n.dist[0], n.dist[k])) {  // the distances repeat with period k
      next = n.dist[k - 1];
      break;
    }
  }
  std::uint64_t const at = next > kUnknown - 1 - n.last ? kUnknown - 1 : n.last + next;
  return key{at, n.last, n.id};
}

void repeat_policy::forget_oldest() noexcept
{
  index_t const i = history_.back;
  policies::detail::unlink(nodes_, history_, i);
  node& n = nodes_[i];
  index_.erase(n.id);
  n = node{};
  policies::detail::slab_release(nodes_, free_head_, i);
}

// Note [Prefetches are not uses]
//   Rationale: positions count the events the policy sees, and an insert was one: a use.
//   A prefetch inserts a tensor ahead of its use, at a point that depends on the planner's
//   timing and on whether the tensor was evicted at all, and the use follows as an access.
//   Counted as a use, the prefetch put a short, varying distance (prefetch to use) among
//   the tensor's reuse distances, so the phase match (d0 = dk) failed or matched the wrong
//   phase, and the predicted next use moved with the prefetches: with `plan` the same
//   iteration of transformer-train (hidden=512 seq=2048, ten iterations, 50 %) took 95 ms
//   in its third period and 118 ms from its seventh on. Approach: the engine marks a
//   prefetch's copy-in (tensor_view::prefetch, set from tensor_record::filling_ahead around
//   the prefetch's fill); repeat gives it no position and learns no distance from it, and
//   a tensor first seen through a prefetch learns nothing at its first use either.
//   Measured (virtual clock, pcie4, `scripts/planner_rows.py`, 50 rows with repeat,
//   against the same rows before; bench/results/prefetch-not-a-use-cpu-2026-12-07.md):
//   `plan` against `none` geomean 0.9934 -> 0.9836 (max 1.116 -> 1.103), `oracle` 0.9553
//   -> 0.9446 (max 1.298 -> 1.230); llm-infer-stream at 25 % with `plan` 5430.5 -> 5150.8
//   ms. On the ten-iteration runs: that transformer row 1.067x -> 1.006x of `none`,
//   mlp-train (12 iterations) at 50 % 1.011x -> 0.974x. Costs: GPT-2 small (by hand) at
//   25 % with `plan` 2928.1 -> 3151.2 ms. lru and belady read no such field: their rows
//   are unchanged to the bit.
void repeat_policy::on_insert(tensor_view const& v) noexcept
{
  index_t i = lookup(v.id);
  if (i != npos && nodes_[i].resident) {
    on_access(v);
    return;
  }
  // A prefetch's insert is not a use (tensor_view::prefetch): it takes no position and
  // teaches no distance, so that the use after it measures the reuse distance from the
  // use before (Note [Prefetches are not uses]).
  std::uint64_t const pos = v.prefetch ? clock_ : ++clock_;
  // Hooks are noexcept: out of host memory here terminates.
  if (i != npos) {  // remembered: out of the history list, learn the distance across the absence
    policies::detail::unlink(nodes_, history_, i);
    if (!v.prefetch) { observe(nodes_[i], pos); }
  } else {
    i = policies::detail::acquire_intrusive_slot(nodes_, free_head_, order_);
    nodes_[i] = node{};
    nodes_[i].id = v.id;
    nodes_[i].last = pos;
    nodes_[i].live = true;
    nodes_[i].unused = v.prefetch;
    index_.insert(v.id, i);
  }
  node& n = nodes_[i];
  n.bytes = v.bytes;
  n.pinned = v.pinned;
  n.resident = true;
  n.k = predict(n);
  if (!n.pinned) { order_.insert(n); }  // a pinned tensor is out of the order until unpinned
}

void repeat_policy::on_access(tensor_view const& v) noexcept
{
  index_t const i = lookup(v.id);
  if (i == npos || !nodes_[i].resident) { return; }
  node& n = nodes_[i];
  observe(n, ++clock_);
  n.bytes = v.bytes;
  if (!n.pinned) { order_.erase(order_.iterator_to(n)); }  // intrusive: unlink, re-key, relink in place
  n.k = predict(n);
  n.pinned = v.pinned;
  if (!n.pinned) { order_.insert(n); }
}

void repeat_policy::on_pin(tensor_id id) noexcept
{
  index_t const i = pin_target(id);
  if (i == policies::detail::no_slot || nodes_[i].pinned) { return; }
  nodes_[i].pinned = true;
  order_.erase(order_.iterator_to(nodes_[i]));
}

void repeat_policy::on_unpin(tensor_id id) noexcept
{
  index_t const i = pin_target(id);
  if (i == policies::detail::no_slot || !nodes_[i].pinned) { return; }
  nodes_[i].pinned = false;
  order_.insert(nodes_[i]);
}

void repeat_policy::on_erase(tensor_id id) noexcept
{
  index_t const i = lookup(id);
  if (i == npos || !nodes_[i].resident) { return; }
  node& n = nodes_[i];
  if (!n.pinned) { order_.erase(order_.iterator_to(n)); }
  n.resident = false;
  n.pinned = false;
  policies::detail::link_front_via<&node::prev, &node::next>(nodes_, history_, i);
  while (history_.count > cfg_.history) { forget_oldest(); }
}

void repeat_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  if (req.bytes_needed == 0) { return; }
  std::size_t freed = 0;
  auto take = [&](node const& n) {
    if (n.pinned) { return; }
    out.add(n.id, n.bytes);
    freed = policies::detail::saturating_add(freed, n.bytes);
  };
  std::uint64_t const g = grace();
  std::uint64_t const threshold = clock_ > g ? clock_ - g : 0;           // at < threshold: overdue
  auto const unknown = order_.lower_bound(key{kUnknown, 0, tensor_id{0}});
  auto const overdue_end = order_.lower_bound(key{threshold, 0, tensor_id{0}});  // <= unknown
  // (1) no history yet, least recently used first.
  for (auto it = unknown; it != order_.end() && freed < req.bytes_needed; ++it) { take(*it); }
  // (2) overdue: the prediction failed; most overdue first.
  for (auto it = order_.begin(); it != overdue_end && freed < req.bytes_needed; ++it) { take(*it); }
  // (3) furthest predicted use first.
  for (auto it = std::make_reverse_iterator(unknown); it != std::make_reverse_iterator(overdue_end) && freed < req.bytes_needed;
       ++it) {
    take(*it);
  }
}

bool repeat_policy::validate() const noexcept
{
  // The order: every member a resident node of this slab, in strictly increasing key order.
  key const* prev_key = nullptr;
  for (node const& n : order_) {
    if (&n < nodes_.data() || slot_of(n) >= nodes_.size() || !n.live || !n.resident || n.pinned) { return false; }
    if (prev_key != nullptr && !(*prev_key < n.k)) { return false; }
    prev_key = &n.k;
  }
  std::size_t resident = 0;
  std::size_t pinned = 0;
  std::size_t live = 0;
  bool const slots_ok = policies::detail::live_slots_ok(nodes_, index_, live, [&](node const& n) {
    if (!n.resident) { return !n.pinned; }
    ++resident;
    if (n.pinned) {  // out of the order
      ++pinned;
      return n.k == predict(n);
    }
    auto const it = order_.find(n.k);
    return it != order_.end() && &*it == &n && n.k == predict(n);
  });
  if (!slots_ok) { return false; }
  if (resident != order_.size() + pinned || live != index_.size()) { return false; }
  if (!policies::detail::slab_list_ok(nodes_, history_, index_, [](node const& n) { return !n.resident; })) { return false; }
  if (history_.count + resident != live || history_.count > cfg_.history) { return false; }
  return policies::detail::slab_accounted(nodes_, free_head_, live);
}

namespace policies {

void register_repeat(policy_registry& registry)
{
  registry.add(
    "repeat",
    "Tensor-aware: learns each tensor's repeating reuse distance (training iterations) and evicts the one predicted "
    "to be used furthest away",
    {
      {"history", parameter_type::unsigned_integer, "65536",
       "evicted tensors whose reuse history is remembered (oldest forgotten first)"},
      {"grace", parameter_type::unsigned_integer, "0",
       "policy events a predicted use may be late before it counts as failed (0 = half the average reuse distance)"},
      {"correlation_window", parameter_type::unsigned_integer, "1",
       "an access within this many policy events of the previous one is the same use"},
    },
    [](policy_params const& p) {
      repeat_policy::config cfg;
      cfg.history = p.get<std::uint64_t>("history");
      cfg.grace = p.get<std::uint64_t>("grace");
      cfg.correlation_window = p.get<std::uint64_t>("correlation_window");
      if (cfg.history > (std::uint64_t{1} << 31)) {
        throw logic_error("repeat: history must be at most 2^31 tensors, got " + std::to_string(cfg.history));
      }
      return any_eviction_policy{repeat_policy{cfg}};
    });
}

}  // namespace policies
}  // namespace tierpool

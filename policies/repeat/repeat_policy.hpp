// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file repeat_policy.hpp
 * @brief A tensor-aware policy for repeating workloads (training iterations):
 *        `tierpool::repeat_policy`, registered as `"repeat"`. Include as
 *        `<tierpool/policies/repeat_policy.hpp>`.
 *
 * @ingroup policies
 *
 * Training repeats the same sequence of tensor uses every iteration, and a tensor's uses
 * within one iteration repeat too (a weight: forward, then backward). Where LRU evicts
 * exactly the tensor a loop needs next, Belady's MIN would evict the one needed furthest
 * away; `repeat` approximates MIN by predicting each tensor's next use from its own past.
 * The policy numbers the events it sees (inserts and accesses: the *position*). For each
 * tensor it keeps the position of its last use and its last four reuse distances d0 (the
 * newest) ... d3. The distances of a tensor used k times per iteration repeat with period
 * k, so the policy looks for the smallest k in 1..3 with d0 = dk (within 1/8) and predicts
 * the next distance as d(k-1), the one that followed the same phase last time; without a
 * match it predicts d0. Predicted next use = last position + that distance. History
 * survives eviction: an evicted tensor is remembered (up to `history` of them, oldest
 * forgotten first), so the distance across its absence is learned when it returns.
 * Victims, in order: (1) tensors with no reuse seen yet, least recently used first (new
 * tensors; for activations created each iteration the least recent is the one backward
 * needs last); (2) tensors whose predicted use is overdue by more than `grace` events (the
 * prediction failed: the tensor is treated as not coming back soon), most overdue first;
 * (3) the rest, furthest predicted use first, as MIN would. An access within
 * `correlation_window` events of the previous one is the same use (the pool reports an
 * allocation and its first acquire as two events): it moves the last position, records no
 * distance. Pinned tensors keep their place; propose() walks past them.
 * Limitations: positions count only the events of this tier's policy, so a tensor's
 * distances are in "this tier's events"; a new tensor id every iteration (activations that
 * are freed and reallocated) carries no history; phases beyond three uses per iteration
 * are predicted from the last distance only.
 *
 * @see L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", IBM Systems Journal 5(2), 1966 (MIN)
 * @see A. Jain, C. Lin, "Back to the Future: Leveraging Belady's Algorithm for Improved Cache Replacement", ISCA 2016 (learning from past MIN decisions)
 * @see C.-C. Huang, G. Jin, J. Li, "SwapAdvisor: Pushing Deep Learning Beyond the GPU Memory Limit via Smart Swapping", ASPLOS 2020 (iterations repeat)
 * @see policies/repeat/README.md
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/intrusive/set.hpp>

#include <tierpool/export.hpp>
#include <tierpool/detail/id_index.hpp>
#include <tierpool/policies/intrusive_slab.hpp>
#include <tierpool/policies/slab_list.hpp>
#include <tierpool/policies/policy_base.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

/**
 * @brief Predicts each tensor's next use from its repeating reuse distances and evicts the
 *        one predicted furthest away.
 *
 * Complexity: on_access O(log n); on_insert O(log n) (amortized: the slab grows by
 * doubling, see Note [Intrusive order over a growing slab]); on_erase O(log n); on_pin,
 * on_unpin O(1); propose O(log n + victims + pinned tensors passed). No hook allocates in
 * a steady state (slab slots are reused through a free list; the order is intrusive).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole state (O(n), the order is relinked).
 *
 * The order is a boost::intrusive set over the slab, grown by
 * policies::detail::grow_intrusive_slab(): see Note [Intrusive order over a growing slab]
 * in policies/detail/intrusive_slab.hpp.
 *
 * @code
 * tierpool::repeat_policy r;
 * // ... after a loop over tensors 1..10 with room for 6 has run once, the policy evicts
 * // the most recently used tensor of the loop (needed furthest away), not the oldest.
 * @endcode
 */
class TIERPOOL_EXPORT repeat_policy : public policies::detail::flag_pins<repeat_policy> {
 public:
  /// @brief Configuration (registry parameters of the same names).
  struct config {
    /// Evicted tensors remembered (their last position and distances), oldest forgotten first.
    std::uint64_t history{65536};
    /// Events a predicted use may be late before the prediction counts as failed;
    /// 0 = half the average reuse distance seen (a moving average).
    std::uint64_t grace{0};
    /// An access within this many events of the tensor's previous one is the same use.
    std::uint64_t correlation_window{1};
  };

  /// @brief An empty policy with the default configuration.
  repeat_policy() noexcept;
  /// @brief An empty policy. @param cfg Configuration.
  explicit repeat_policy(config cfg) noexcept;
  /// @brief Copy the whole state (the order is relinked over the copied slab).
  /// @throws std::bad_alloc
  repeat_policy(repeat_policy const& other);
  /// @brief Move; `other` may only be assigned to or destroyed afterwards.
  repeat_policy(repeat_policy&& other) noexcept = default;
  /// @brief Copy-assign the whole state. @throws std::bad_alloc (this is then unchanged)
  repeat_policy& operator=(repeat_policy const& other);
  /// @brief Move-assign; `other` may only be assigned to or destroyed afterwards.
  repeat_policy& operator=(repeat_policy&& other) noexcept = default;
  ~repeat_policy() = default;

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: a tensor became resident (a remembered one learns the distance across its
  //   absence); a resident id counts as an access.
  // - on_access: a use: learn the reuse distance, predict the next use. Unknown id: no-op.
  // - on_erase: a resident tensor left: remember its history. Unknown id: no-op.
  // - on_pin: mark pinned (never proposed). Idempotent; unknown id: no-op.
  // - on_unpin: clear the pin. Idempotent; unknown id: no-op.
  // - propose: append unpinned tensors in the order of the file comment (no history, then
  //   overdue, then furthest predicted use) until `req.bytes_needed` is covered (everything
  //   evictable when it cannot be; nothing for 0).
  void on_insert(tensor_view const& v) noexcept;
  void on_access(tensor_view const& v) noexcept;
  void on_erase(tensor_id id) noexcept;
  /// @brief Pinned: out of the order until on_unpin (as belady: Note [Pinned tensors leave
  ///        Belady's order]). Idempotent; unknown or not resident: no-op.
  void on_pin(tensor_id id) noexcept;
  /// @brief Back into the order at its prediction. Idempotent; unknown: no-op.
  void on_unpin(tensor_id id) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief Events seen so far (the current position).
  [[nodiscard]] std::uint64_t position() const noexcept { return clock_; }
  /// @brief Predicted position of a resident tensor's next use; std::nullopt when it is
  ///        not resident or has no reuse history yet.
  [[nodiscard]] std::optional<std::uint64_t> predicted_use(tensor_id id) const noexcept;
  /// @brief The grace in use (events).
  [[nodiscard]] std::uint64_t grace() const noexcept;
  /// @brief Resident tensors tracked (pinned or not).
  [[nodiscard]] std::size_t size() const noexcept { return order_.size(); }
  /// @brief Evicted tensors remembered.
  [[nodiscard]] std::size_t remembered() const noexcept { return history_.count; }

  /// @brief Check every invariant (the order against resident tensors, the history list,
  ///        index, free list). O(n); for tests.
  [[nodiscard]] bool validate() const noexcept;

 private:
  friend flag_pins;
  static constexpr std::string_view policy_name = "repeat";  // name()
  [[nodiscard]] policies::detail::slab_slot pin_target(tensor_id id) const noexcept  // resident only
  {
    policies::detail::slab_slot const i = index_.find(id);
    return i != policies::detail::no_slot && nodes_[i].resident ? i : policies::detail::no_slot;
  }
  using index_t = std::uint32_t;
  static constexpr index_t npos = std::numeric_limits<index_t>::max();
  static constexpr std::uint64_t kUnknown = std::numeric_limits<std::uint64_t>::max();

  struct key {
    std::uint64_t at;   // predicted position; kUnknown = no history
    std::uint64_t seq;  // last position: LRU order among unknowns, then ties
    tensor_id id;
    bool operator<(key const& o) const noexcept
    {
      if (at != o.at) { return at < o.at; }
      if (seq != o.seq) { return seq < o.seq; }
      return id < o.id;
    }
    bool operator==(key const& o) const noexcept = default;
  };
  // The order's hook (Note [Intrusive order over a growing slab]).
  using order_hook = boost::intrusive::set_base_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>>;
  struct node : order_hook {
    tensor_id id{};
    std::size_t bytes{0};
    std::uint64_t last{0};                // position of the last use
    std::array<std::uint64_t, 4> dist{};  // reuse distances, newest first; 0 = none
    key k{};
    index_t prev{npos};  // history list (evicted tensors), towards the newest
    index_t next{npos};  // towards the oldest; free-list link for free slots
    bool resident{false};
    bool pinned{false};
    bool live{false};
    bool unused{false};  // first seen through a prefetch, not used yet: its first use teaches no distance
  };
  using key_of_node = policies::detail::key_member<node, key>;
  using order_set = boost::intrusive::set<node, boost::intrusive::key_of_value<key_of_node>>;


  void observe(node& n, std::uint64_t pos) noexcept;  // learn a reuse at `pos`
  [[nodiscard]] key predict(node const& n) const noexcept;
  void forget_oldest() noexcept;
  [[nodiscard]] index_t lookup(tensor_id id) const noexcept;
  [[nodiscard]] index_t slot_of(node const& n) const noexcept { return policies::detail::slot_of(nodes_, n); }

  config cfg_;
  std::vector<node> nodes_;
  index_t free_head_{npos};
  tierpool::detail::id_index index_;  // resident and remembered; never iterated
  policies::detail::move_safe_set<order_set> order_;                             // resident tensors by predicted use (intrusive)
  policies::detail::slab_list history_;            // remembered (evicted) tensors, newest at front
  std::uint64_t clock_{0};                        // events seen (positions)
  std::uint64_t avg_distance_{0};                 // moving average of reuse distances (1/16 weight)
};

namespace policies {
/// @brief Register `"repeat"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_repeat(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::repeat_policy>, "repeat_policy must satisfy tierpool::eviction_policy");

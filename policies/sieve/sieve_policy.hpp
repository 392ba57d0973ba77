// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file sieve_policy.hpp
 * @brief SIEVE eviction: `tierpool::sieve_policy`, registered as `"sieve"`.
 *        Include as `<tierpool/policies/sieve_policy.hpp>`.
 *
 * @ingroup policies
 *
 * SIEVE (Zhang, Yang, Yue, Vigfusson, Rashmi, "SIEVE is Simpler than LRU: an Efficient
 * Turn-Key Eviction Algorithm for Web Caches", NSDI 2024) keeps one FIFO queue with a
 * *visited* bit per object and a *hand*. New objects enter at the head, unvisited; a hit
 * only sets the bit. To evict, the hand, starting at the tail, moves toward the head:
 * a visited object has its bit cleared and *stays where it is*; the first unvisited one
 * is evicted, and the hand stays at its position (the next object toward the head),
 * wrapping to the tail after the head. Unlike CLOCK, retained objects are not moved to the
 * head, so new objects and survivors are kept apart ("lazy promotion and quick demotion").
 * This version differs from the paper in three ways. (1) **Sized proposals**: evictions
 * repeat until the victims' bytes cover `bytes_needed`. (2) **The hand moves on erase**:
 * propose changes no state; it walks the queue read-only, and when the engine erases the
 * tensor the hand would evict next, the hand's movement (clearing the bits it passes) is
 * applied then (see Note [SIEVE's hand moves on erase]). (3) **Pinned tensors leave the
 * queue** and re-enter at the head on `on_unpin`, keeping their visited bit; where the
 * paper's hand would skip an in-use object in place, this keeps propose free of pinned
 * tensors.
 *
 * Note [SIEVE's hand moves on erase]
 * ----------------------------------
 * Rationale: SIEVE changes state while it evicts (bits cleared, hand moved), but propose
 * may not, and the engine erases victims later (after their write-back), possibly with
 * other erases (frees) in between. Approach: split the queue at the hand into A = [hand ..
 * head] and B = [tail .. hand), the order in which the hand will meet them, and keep p1 and
 * p2, the first unvisited tensor in A and in B. The hand's next victim is p1, else p2,
 * else (every bit set) the hand's own tensor after a full lap. propose reads the victims
 * in that order (all unvisited tensors, then the visited ones in the same circular order,
 * as a full lap has cleared them). on_erase(x) compares x with the next victim in O(1):
 * if it is, the hand's movement up to x is applied now (clear the bits it passes, evict
 * x, hand at x's successor); if not (a free, or an out-of-order victim), x is unlinked and
 * the hand stays. p1 and p2 only move forward between evictions, so keeping them costs
 * O(1) amortized per access. Erasing the proposed victims in order yields exactly the
 * state the paper's algorithm reaches.
 * Limitations: the policy cannot tell an eviction from a free: freeing exactly the next
 * victim moves the hand as its eviction would. When the engine skips a victim (in flight)
 * and erases a later one, the hand does not move at all, where the paper's hand would have
 * passed the skipped object. The tests compare propose + in-order erases with a direct
 * implementation of the paper's pseudocode on random traces.
 *
 * @see Y. Zhang, J. Yang, Y. Yue, Y. Vigfusson, K. V. Rashmi, "SIEVE is Simpler than LRU: an Efficient Turn-Key Eviction Algorithm for Web Caches", NSDI 2024
 * @see policies/sieve/README.md
 */
#pragma once

#include <cstddef>
#include <string_view>

#include <tierpool/export.hpp>
#include <tierpool/policies/hand_queue.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

/**
 * @brief SIEVE eviction over the tensors of one tier.
 *
 * Complexity: on_access, on_pin, on_unpin O(1) amortized (one hash lookup; the scan
 * pointers only move forward), no allocation; on_erase O(1) amortized (clearing the bits
 * the hand passes is paid by the accesses that set them); on_insert O(1) amortized (one
 * hash node); propose O(victims + visited tensors passed).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole queue and the hand.
 *
 * @code
 * tierpool::sieve_policy sieve;
 * sieve.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});
 * sieve.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100});
 * sieve.on_access({.id = tierpool::tensor_id{1}, .bytes = 100});   // visited
 * tierpool::eviction_proposal out;
 * sieve.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{2}}
 * @endcode
 */
class TIERPOOL_EXPORT sieve_policy : public policies::detail::hand_queue {
 public:
  /// @brief Configuration: SIEVE has no parameters.
  struct config {};

  /// @brief An empty policy: tensors enter at the head of the queue.
  sieve_policy() noexcept : sieve_policy(config{}) {}
  /// @brief An empty policy. @param cfg Configuration (empty).
  explicit sieve_policy(config cfg) noexcept : hand_queue(policies::detail::entry_point::at_back), cfg_(cfg) {}

  // The hooks, propose, size, evictable_count, pinned_count, contains, hand() and validate()
  // are hand_queue's (and slab_policy's): a tensor enters at the head of the queue,
  // unvisited; on_erase moves the hand when it erases the hand's next victim (Note [SIEVE's
  // hand moves on erase]).

  /// @brief "sieve".
  [[nodiscard]] std::string_view name() const noexcept { return "sieve"; }
  /// @brief The configuration.
  [[nodiscard]] config const& get_config() const noexcept { return cfg_; }
  /// @brief True when `id` is tracked and its visited bit is set.
  [[nodiscard]] bool visited(tensor_id id) const noexcept { return marked(id); }

 private:
  config cfg_;
};

namespace policies {
/// @brief Register `"sieve"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_sieve(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::sieve_policy>, "sieve_policy must satisfy tierpool::eviction_policy");

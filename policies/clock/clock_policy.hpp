// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file clock_policy.hpp
 * @brief CLOCK (second chance) eviction: `tierpool::clock_policy`, registered as `"clock"`.
 *        Include as `<tierpool/policies/clock_policy.hpp>`.
 *
 * @ingroup policies
 *
 * CLOCK (Corbató, "A Paging Experiment with the Multics System", MIT Project MAC report
 * MAC-M-384, 1968), also called second chance, keeps the resident pages in a circle of
 * frames with one *reference* bit each and a *hand*. A hit sets the bit. To evict, the
 * hand sweeps: a referenced page has its bit cleared and is passed (its second chance),
 * the first unreferenced page is evicted, and the new page takes its frame, just behind
 * the hand, so that it is the last one the hand will meet. Seen as a queue, CLOCK is FIFO
 * with reinsertion: a passed page goes to the newest end. A new page starts unreferenced
 * (the miss that loaded it is not a hit), as in libCacheSim's Clock. This version differs
 * from the textbook in three ways. (1) **Sized proposals**: evictions repeat until the
 * victims' bytes cover `bytes_needed`. (2) **The hand moves on erase**: propose changes
 * no state; it walks the circle read-only, and when the engine erases the tensor the hand
 * would evict next, the sweep up to it (clearing the bits it passes) is applied then (see
 * Note [CLOCK's hand moves on erase]). (3) **Pinned tensors leave the circle** and
 * re-enter just behind the hand on `on_unpin`, keeping their bit, where the textbook
 * hand skips a locked page in place; propose therefore never walks past pinned tensors.
 * One reference bit only (no multi-bit "GCLOCK" counter).
 *
 * Note [CLOCK's hand moves on erase]
 * ----------------------------------
 * Rationale: CLOCK changes state while it evicts (bits cleared, hand moved), but propose
 * may not, and the engine erases victims later (after their write-back), possibly with
 * other erases (frees) in between. Approach: the circle is a list cut at the hand into A
 * = [hand .. back] and B = [front .. hand), the order in which the hand will meet them; a
 * new tensor goes at the end of B. p1 and p2 are the first unreferenced tensor in A and
 * in B. The hand's next victim is p1, else p2, else (every bit set) the hand's own tensor
 * after a full sweep. propose reads the victims in that order (the unreferenced tensors,
 * then the referenced ones in the same circular order, as a full sweep has cleared them).
 * on_erase(x) compares x with the next victim in O(1): if it is, the sweep up to x is
 * applied now (clear the bits passed, evict x, hand at x's successor); if not (a free, or
 * an out-of-order victim), x is unlinked and the hand stays. p1 and p2 only move forward
 * between evictions, so keeping them costs O(1) amortized per access. Erasing the
 * proposed victims in order yields exactly the state the textbook algorithm reaches.
 * Limitations: the policy cannot tell an eviction from a free: freeing exactly the next
 * victim moves the hand as its eviction would. When the engine skips a victim (in flight)
 * and erases a later one, the hand does not move at all, where the textbook hand would
 * have passed the skipped page. The tests compare propose + in-order erases with a direct
 * implementation of the textbook algorithm on random traces.
 *
 * @see F. J. Corbató, "A Paging Experiment with the Multics System", MIT Project MAC MAC-M-384, 1968
 * @see A. S. Tanenbaum, H. Bos, "Modern Operating Systems", 4th ed., 2014, section 3.4.5 (the clock algorithm)
 * @see policies/clock/README.md
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
 * @brief CLOCK eviction over the tensors of one tier.
 *
 * Complexity: on_access, on_pin, on_unpin O(1) amortized (one hash lookup; the scan
 * pointers only move forward), no allocation; on_erase O(1) amortized (clearing the bits
 * the hand passes is paid by the accesses that set them); on_insert O(1) amortized (one
 * hash node); propose O(victims + referenced tensors passed).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole queue and the hand.
 *
 * @code
 * tierpool::clock_policy clock;
 * clock.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});
 * clock.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100});
 * clock.on_access({.id = tierpool::tensor_id{1}, .bytes = 100});   // referenced
 * tierpool::eviction_proposal out;
 * clock.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{2}}
 * @endcode
 */
class TIERPOOL_EXPORT clock_policy : public policies::detail::hand_queue {
 public:
  /// @brief Configuration: CLOCK has no parameters.
  struct config {};

  /// @brief An empty policy: tensors enter just behind the hand.
  clock_policy() noexcept : clock_policy(config{}) {}
  /// @brief An empty policy. @param cfg Configuration (empty).
  explicit clock_policy(config cfg) noexcept : hand_queue(policies::detail::entry_point::behind_hand), cfg_(cfg) {}

  // The hooks, propose, size, evictable_count, pinned_count, contains, hand() and validate()
  // are hand_queue's (and slab_policy's): a tensor enters just behind the hand, unreferenced; on_erase
  // moves the hand when it erases the hand's next victim (Note [CLOCK's hand moves on erase]).

  /// @brief "clock".
  [[nodiscard]] std::string_view name() const noexcept { return "clock"; }
  /// @brief The configuration.
  [[nodiscard]] config const& get_config() const noexcept { return cfg_; }
  /// @brief True when `id` is tracked and its referenced bit is set.
  [[nodiscard]] bool referenced(tensor_id id) const noexcept { return marked(id); }

 private:
  config cfg_;
};

namespace policies {
/// @brief Register `"clock"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_clock(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::clock_policy>, "clock_policy must satisfy tierpool::eviction_policy");

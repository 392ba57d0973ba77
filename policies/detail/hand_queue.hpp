// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file hand_queue.hpp
 * @brief tierpool::policies::detail::hand_queue: the queue, one bit per tensor and the
 *        sweeping hand shared by `clock_policy` and `sieve_policy`. Not API.
 *        Include as `<tierpool/policies/hand_queue.hpp>` (only the two policy headers do).
 *
 * @ingroup policies
 *
 * CLOCK and SIEVE keep the same state (a queue split at the hand into A = [hand .. back]
 * and B = [front .. hand), one bit per tensor, the scan pointers p1 and p2) and evict the
 * same way; they differ only in where a tensor (new, or unpinned) enters the queue: just
 * behind the hand, the end of B, for CLOCK (`entry_point::behind_hand`), at the back, the
 * end of A, for SIEVE (`entry_point::at_back`). See Note [CLOCK's hand moves on erase] in
 * clock_policy.hpp and Note [SIEVE's hand moves on erase] in sieve_policy.hpp.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include <tierpool/export.hpp>
#include <tierpool/policies/policy_base.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool::policies::detail {

/// @brief hand_queue's slab node.
struct hand_node {
  tensor_id id{};
  std::size_t bytes{0};
  slab_slot prev{no_slot};  // towards the list's front
  slab_slot next{no_slot};  // towards the list's back; free-list link for free slots
  bool marked{false};
  bool pinned{false};
  bool live{false};
};

/// @brief Where a tensor enters the queue (on insert or unpin).
enum class entry_point : std::uint8_t {
  behind_hand,  ///< CLOCK: the last position the hand will meet (the end of B).
  at_back,      ///< SIEVE: the head of the queue (the end of A).
};

/**
 * @brief The hand-and-bit queue of CLOCK and SIEVE over the tensors of one tier.
 *
 * Complexity: as documented on clock_policy and sieve_policy.
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole queue and the hand.
 * clock_policy and sieve_policy derive from it and add only their name and config.
 */
class TIERPOOL_EXPORT hand_queue : public slab_policy<hand_queue, hand_node> {
 public:
  /// @brief An empty queue whose tensors enter at `entry`.
  explicit hand_queue(entry_point entry) noexcept : entry_(entry) {}

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: a tensor became resident (unmarked; pinned when `v.pinned`). A known id
  //   counts as an access.
  // - on_access: a use: sets the bit; adopts `v.bytes` and `v.pinned`. Unknown id: no-op.
  // - on_erase: forget a tensor; moves the hand when it is the hand's next victim. Unknown
  //   id: no-op.
  // - propose: append the tensors the hand would evict, in order, until their bytes cover
  //   `req.bytes_needed` (nothing when it is 0), or all unpinned ones when they cannot.
  // - on_pin, on_unpin (an unpinned tensor re-enters at the entry point, keeping its bit),
  //   size, evictable_count, pinned_count, contains, validate: slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief True when `id` is tracked and its bit (CLOCK: referenced, SIEVE: visited) is set.
  [[nodiscard]] bool marked(tensor_id id) const noexcept;
  /// @brief The tensor under the hand; 0 when empty.
  [[nodiscard]] tensor_id hand() const noexcept { return hand_ == npos ? tensor_id{0} : nodes_[hand_].id; }
 private:
  friend slab_policy;
  using list = slab_list;  // B then A

  void link_before(list& l, index_t i, index_t at) noexcept;  // at == npos: at the back
  void unlink(list& l, index_t i) noexcept;
  [[nodiscard]] index_t first_unmarked(index_t from, index_t stop) const noexcept;
  void enter(index_t i) noexcept;    // into the queue, at the entry point
  void leave(index_t i) noexcept;    // out of the queue, the hand not moving past anything
  void evict(index_t i) noexcept;    // out of the queue as the hand's victim

  void access(index_t i, tensor_view const& v) noexcept;  // on_access of a resident tensor
  void erase(index_t i) noexcept;                          // on_erase of a resident tensor

  // The order (Note [One base for the slab policies]).
  void order_leave(index_t i) noexcept { leave(i); }
  void order_enter(index_t i) noexcept { enter(i); }
  void order_resize(index_t /*i*/, std::size_t from, std::size_t to) noexcept { queue_.resize(from, to); }
  [[nodiscard]] std::size_t order_count() const noexcept { return queue_.count; }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept;  // the queue, the hand, both scan pointers

  entry_point entry_;
  list queue_;               // unpinned tensors: B then A
  // The hand: A = [hand_ .. back], B = [front .. hand_). hand_ == npos iff the queue is empty.
  index_t hand_{npos};
  index_t p1_{npos};  // first unmarked in A, npos if none
  index_t p2_{npos};  // first unmarked in B, npos if none
};

}  // namespace tierpool::policies::detail

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
#include <limits>
#include <unordered_map>
#include <vector>

#include <tierpool/export.hpp>
#include <tierpool/policies/slab_list.hpp>
#include <tierpool/detail/id_index.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool::policies::detail {

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
 */
class TIERPOOL_EXPORT hand_queue {
 public:
  /// @brief An empty queue whose tensors enter at `entry`.
  explicit hand_queue(entry_point entry) noexcept : entry_(entry) {}

  /// @brief A tensor became resident (unmarked; pinned when `v.pinned`). A known id counts as an access.
  void on_insert(tensor_view const& v) noexcept;
  /// @brief A use: sets the bit; adopts `v.bytes` and `v.pinned`. Unknown id: no-op.
  void on_access(tensor_view const& v) noexcept;
  /// @brief Forget a tensor; moves the hand when it is the hand's next victim. Unknown id: no-op.
  void on_erase(tensor_id id) noexcept;
  /// @brief Take a tensor out of the queue. Idempotent; unknown id: no-op.
  void on_pin(tensor_id id) noexcept;
  /// @brief Return a pinned tensor at the entry point, keeping its bit. Idempotent; unknown id: no-op.
  void on_unpin(tensor_id id) noexcept;
  /**
   * @brief Append the tensors the hand would evict, in order, until their bytes cover
   *        `req.bytes_needed` (nothing when it is 0), or all unpinned ones when they cannot.
   * @throws std::bad_alloc only when `out` must grow and the host is out of memory
   */
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief Tensors tracked (pinned or not).
  [[nodiscard]] std::size_t size() const noexcept { return queue_.count + pinned_.count; }
  /// @brief Tensors that may be proposed.
  [[nodiscard]] std::size_t evictable_count() const noexcept { return queue_.count; }
  /// @brief Pinned tensors tracked.
  [[nodiscard]] std::size_t pinned_count() const noexcept { return pinned_.count; }
  /// @brief True when `id` is tracked.
  [[nodiscard]] bool contains(tensor_id id) const noexcept { return index_.contains(id); }
  /// @brief True when `id` is tracked and its bit (CLOCK: referenced, SIEVE: visited) is set.
  [[nodiscard]] bool marked(tensor_id id) const noexcept;
  /// @brief The tensor under the hand; 0 when empty.
  [[nodiscard]] tensor_id hand() const noexcept { return hand_ == npos ? tensor_id{0} : nodes_[hand_].id; }
  /// @brief Check every invariant (links, counts, byte sums, pinned flags, the index, the free
  ///        list, the hand, both scan pointers). O(n); for tests. @return True when consistent.
  [[nodiscard]] bool validate() const noexcept;

 private:
  using index_t = std::uint32_t;
  static constexpr index_t npos = std::numeric_limits<index_t>::max();

  struct node {
    tensor_id id{};
    std::size_t bytes{0};
    index_t prev{npos};  // towards the list's front
    index_t next{npos};  // towards the list's back; free-list link for free slots
    bool marked{false};
    bool pinned{false};
    bool live{false};
  };
  // A doubly-linked list over slab positions, B then A. Invariant: count == #nodes
  // reachable from front; bytes_high * 2^64 + bytes_low == exact sum of their bytes.
  using list = slab_list;

  void link_before(list& l, index_t i, index_t at) noexcept;  // at == npos: at the back
  void unlink(list& l, index_t i) noexcept;
  [[nodiscard]] index_t first_unmarked(index_t from, index_t stop) const noexcept;
  void enter(index_t i) noexcept;    // into the queue, at the entry point
  void leave(index_t i) noexcept;    // out of the queue, the hand not moving past anything
  void evict(index_t i) noexcept;    // out of the queue as the hand's victim
  void set_pinned(index_t i, bool pinned) noexcept;
  [[nodiscard]] index_t lookup(tensor_id id) const noexcept;

  entry_point entry_;
  std::vector<node> nodes_;  // slab; size() == live + free
  index_t free_head_{npos};  // free slots chained through node::next
  tierpool::detail::id_index index_;  // id -> slab position; never iterated
  list queue_;               // unpinned tensors: B then A
  list pinned_;              // pinned tensors; order irrelevant
  // The hand: A = [hand_ .. back], B = [front .. hand_). hand_ == npos iff the queue is empty.
  index_t hand_{npos};
  index_t p1_{npos};  // first unmarked in A, npos if none
  index_t p2_{npos};  // first unmarked in B, npos if none
};

}  // namespace tierpool::policies::detail

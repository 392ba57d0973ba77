// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file slab_list.hpp
 * @brief tierpool::policies::detail::slab_list and its link / unlink helpers: the intrusive
 *        doubly-linked list over slab positions that fifo, s3fifo, two_q and the CLOCK /
 *        SIEVE hand_queue keep their tensors in, and the slab's free list (also used by lfu
 *        and random). Not API.
 *        Include as `<tierpool/policies/slab_list.hpp>` (only policy headers do).
 *
 * @ingroup policies
 *
 * A policy keeps its nodes in a `std::vector<Node>` (the slab) and links them by position.
 * `Node` must have `slab_slot prev`, `slab_slot next` and `std::size_t bytes`. A list keeps
 * its count and the exact sum of its nodes' bytes in two words (bytes_high * 2^64 +
 * bytes_low), so that removing a huge tensor after an overflow stays exact.
 * Thread safety: none (the owning policy is externally synchronized). Nothing here throws
 * or allocates.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace tierpool::policies::detail {

/// @brief A position in a policy's slab.
using slab_slot = std::uint32_t;
/// @brief No position: the end of a list, an empty list, an absent tensor.
inline constexpr slab_slot no_slot = std::numeric_limits<slab_slot>::max();

/**
 * @brief The ends, length and exact byte sum of a doubly-linked list over slab positions.
 *        Invariant: count == #nodes reachable from front; bytes_high * 2^64 + bytes_low ==
 *        exact sum of their bytes.
 */
struct slab_list {
  slab_slot front{no_slot};  ///< First node (oldest, for a FIFO), or no_slot.
  slab_slot back{no_slot};   ///< Last node (newest, for a FIFO), or no_slot.
  std::size_t count{0};      ///< Nodes linked.
  std::size_t bytes_low{0};  ///< Low word of the byte sum.
  std::size_t bytes_high{0}; ///< High word of the byte sum (carries).

  /// @brief Add `n` bytes to the sum.
  void add(std::size_t n) noexcept
  {
    bytes_low += n;
    if (bytes_low < n) { ++bytes_high; }
  }
  /// @brief Subtract `n` bytes (previously added) from the sum.
  void sub(std::size_t n) noexcept
  {
    if (bytes_low < n) { --bytes_high; }
    bytes_low -= n;
  }
  /// @brief The byte sum, saturated at SIZE_MAX.
  [[nodiscard]] std::size_t bytes() const noexcept
  {
    return bytes_high != 0 ? std::numeric_limits<std::size_t>::max() : bytes_low;
  }
  /// @brief The byte sum as a double (for ratios).
  [[nodiscard]] double wide() const noexcept
  {
    return static_cast<double>(bytes_low) + static_cast<double>(bytes_high) * 18446744073709551616.0;
  }
};

/// @brief Link node `i` into `l` just before node `at` (at the back when `at` is no_slot).
template <class Node>
void link_before(std::vector<Node>& nodes, slab_list& l, slab_slot i, slab_slot at) noexcept
{
  Node& n = nodes[i];
  n.next = at;
  n.prev = at == no_slot ? l.back : nodes[at].prev;
  if (n.prev != no_slot) {
    nodes[n.prev].next = i;
  } else {
    l.front = i;
  }
  if (at != no_slot) {
    nodes[at].prev = i;
  } else {
    l.back = i;
  }
  ++l.count;
  l.add(n.bytes);
}

/// @brief Link node `i` at the back of `l`.
template <class Node>
void link_back(std::vector<Node>& nodes, slab_list& l, slab_slot i) noexcept
{
  link_before(nodes, l, i, no_slot);
}

/// @brief Unlink node `i` from `l` (its links become no_slot).
template <class Node>
void unlink(std::vector<Node>& nodes, slab_list& l, slab_slot i) noexcept
{
  Node& n = nodes[i];
  if (n.prev != no_slot) {
    nodes[n.prev].next = n.next;
  } else {
    l.front = n.next;
  }
  if (n.next != no_slot) {
    nodes[n.next].prev = n.prev;
  } else {
    l.back = n.prev;
  }
  n.prev = no_slot;
  n.next = no_slot;
  --l.count;
  l.sub(n.bytes);
}

/**
 * @brief Take a slot for a new node: the head of the free list (chained through
 *        `Node::next`), or a new one at the end of the slab. The slot's contents are stale.
 * @throws std::bad_alloc when the slab must grow and cannot (policies call this from
 *         noexcept hooks: the host then terminates)
 */
template <class Node>
slab_slot slab_acquire(std::vector<Node>& nodes, slab_slot& free_head)
{
  if (free_head != no_slot) {
    slab_slot const i = free_head;
    free_head = nodes[i].next;
    return i;
  }
  auto const i = static_cast<slab_slot>(nodes.size());
  nodes.emplace_back();
  return i;
}

/// @brief Put slot `i` (already unlinked and marked dead) at the head of the free list.
template <class Node>
void slab_release(std::vector<Node>& nodes, slab_slot& free_head, slab_slot i) noexcept
{
  nodes[i].next = free_head;
  free_head = i;
}

/**
 * @brief Walk the free list for validate(): every slot on it in range and not `live`, no cycle.
 * @param free_slots Set to the number of free slots.
 * @return False when the free list is corrupt.
 */
template <class Node>
[[nodiscard]] bool slab_free_list_ok(std::vector<Node> const& nodes, slab_slot free_head, std::size_t& free_slots) noexcept
{
  free_slots = 0;
  for (slab_slot i = free_head; i != no_slot; i = nodes[i].next) {
    if (i >= nodes.size() || nodes[i].live || free_slots > nodes.size()) { return false; }
    ++free_slots;
  }
  return true;
}

}  // namespace tierpool::policies::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file slab_list.hpp
 * @brief tierpool::policies::detail::slab_list and its link / unlink helpers: the intrusive
 *        doubly-linked list over slab positions that fifo, s3fifo, two_q, lirs, repeat
 *        (its history) and the CLOCK / SIEVE hand_queue keep their tensors in (with its
 *        validate() walk and the trimming of a ghost list), and the slab's free list (also
 *        used by lfu, random, gdsf and belady).
 *        Not API.
 *        Include as `<tierpool/policies/slab_list.hpp>` (only policy headers do).
 *
 * @ingroup policies
 *
 * A policy keeps its nodes in a `std::vector<Node>` (the slab) and links them by position.
 * `Node` must have `slab_slot prev`, `slab_slot next` and `std::size_t bytes` (the `_via`
 * helpers take the two links as member pointers instead, for nodes on two lists). A list keeps
 * its count and the exact sum of its nodes' bytes in two words (bytes_high * 2^64 +
 * bytes_low), so that removing a huge tensor after an overflow stays exact.
 * Thread safety: none (the owning policy is externally synchronized). Nothing here throws
 * or allocates.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
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
  /// @brief A linked node's bytes change from `from` to `to`.
  void resize(std::size_t from, std::size_t to) noexcept
  {
    sub(from);
    add(to);
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

/**
 * @brief Link node `i` into `l` just before node `at` (at the back when `at` is no_slot),
 *        through the link members `Prev` and `Next` (for nodes on several lists at once).
 * @tparam Prev Member pointer to the node's link towards `front`.
 * @tparam Next Member pointer to the node's link towards `back`.
 */
template <auto Prev, auto Next, class Node, class A>
void link_before_via(std::vector<Node, A>& nodes, slab_list& l, slab_slot i, slab_slot at) noexcept
{
  Node& n = nodes[i];
  n.*Next = at;
  n.*Prev = at == no_slot ? l.back : nodes[at].*Prev;
  if (n.*Prev != no_slot) {
    nodes[n.*Prev].*Next = i;
  } else {
    l.front = i;
  }
  if (at != no_slot) {
    nodes[at].*Prev = i;
  } else {
    l.back = i;
  }
  ++l.count;
  l.add(n.bytes);
}

/// @brief Link node `i` at the front of `l` through the link members `Prev` and `Next`
///        (link_before_via() at the front, without its general case: LRU's promotion).
template <auto Prev, auto Next, class Node, class A>
void link_front_via(std::vector<Node, A>& nodes, slab_list& l, slab_slot i) noexcept
{
  Node& n = nodes[i];
  n.*Prev = no_slot;
  n.*Next = l.front;
  if (l.front != no_slot) {
    nodes[l.front].*Prev = i;
  } else {
    l.back = i;
  }
  l.front = i;
  ++l.count;
  l.add(n.bytes);
}

/// @brief Link node `i` at the front of `l`.
template <class Node, class A>
void link_front(std::vector<Node, A>& nodes, slab_list& l, slab_slot i) noexcept
{
  link_front_via<&Node::prev, &Node::next>(nodes, l, i);
}

/// @brief Unlink node `i` from `l` through the link members `Prev` and `Next` (they become no_slot).
template <auto Prev, auto Next, class Node, class A>
void unlink_via(std::vector<Node, A>& nodes, slab_list& l, slab_slot i) noexcept
{
  Node& n = nodes[i];
  if (n.*Prev != no_slot) {
    nodes[n.*Prev].*Next = n.*Next;
  } else {
    l.front = n.*Next;
  }
  if (n.*Next != no_slot) {
    nodes[n.*Next].*Prev = n.*Prev;
  } else {
    l.back = n.*Prev;
  }
  n.*Prev = no_slot;
  n.*Next = no_slot;
  --l.count;
  l.sub(n.bytes);
}

/// @brief Link node `i` into `l` just before node `at` (at the back when `at` is no_slot).
template <class Node, class A>
void link_before(std::vector<Node, A>& nodes, slab_list& l, slab_slot i, slab_slot at) noexcept
{
  link_before_via<&Node::prev, &Node::next>(nodes, l, i, at);
}

/// @brief Link node `i` at the back of `l`.
template <class Node, class A>
void link_back(std::vector<Node, A>& nodes, slab_list& l, slab_slot i) noexcept
{
  link_before(nodes, l, i, no_slot);
}

/// @brief Unlink node `i` from `l` (its links become no_slot).
template <class Node, class A>
void unlink(std::vector<Node, A>& nodes, slab_list& l, slab_slot i) noexcept
{
  unlink_via<&Node::prev, &Node::next>(nodes, l, i);
}

/**
 * @brief Unlink the front node of `l` while the bytes of `l` exceed `limit` (a ghost list
 *        trimmed to its size), handing each unlinked slot to `drop` (which frees it).
 * @param drop Called as `drop(slot)` after the node is unlinked; must not touch `l`.
 */
template <class Node, class A, class Drop>
void drop_front_while_over(std::vector<Node, A>& nodes, slab_list& l, double limit, Drop&& drop) noexcept
{
  while (l.count != 0 && l.wide() > limit) {
    slab_slot const g = l.front;
    unlink(nodes, l, g);
    drop(g);
  }
}

/**
 * @brief Walk `l` for validate() through the links `Prev` and `Next`: every slot in range
 *        and live, the back links, `index.find(id) == slot`, `node_ok(node)`, and the
 *        list's back, count and exact byte sum.
 * @param index Anything with `find(tensor_id) -> slab_slot` (a detail::id_index).
 * @param node_ok Called once per node, front to back (it may count); false fails the walk.
 * @return False when the list is inconsistent.
 */
template <auto Prev, auto Next, class Node, class A, class Index, class NodeOk>
[[nodiscard]] bool slab_list_ok_via(std::vector<Node, A> const& nodes, slab_list const& l, Index const& index,
                                    NodeOk&& node_ok) noexcept
{
  std::size_t count = 0;
  slab_list sum;
  slab_slot prev = no_slot;
  for (slab_slot i = l.front; i != no_slot; i = nodes[i].*Next) {
    if (i >= nodes.size() || count > nodes.size()) { return false; }
    Node const& n = nodes[i];
    if (!n.live || n.*Prev != prev || !node_ok(n)) { return false; }
    if (index.find(n.id) != i) { return false; }
    sum.add(n.bytes);
    prev = i;
    ++count;
  }
  return l.back == prev && l.count == count && l.bytes_low == sum.bytes_low && l.bytes_high == sum.bytes_high;
}

/// @brief slab_list_ok_via() through `Node::prev` and `Node::next`.
template <class Node, class A, class Index, class NodeOk>
[[nodiscard]] bool slab_list_ok(std::vector<Node, A> const& nodes, slab_list const& l, Index const& index, NodeOk&& node_ok) noexcept
{
  return slab_list_ok_via<&Node::prev, &Node::next>(nodes, l, index, std::forward<NodeOk>(node_ok));
}

/**
 * @brief Walk the live slots for validate(): each one's index entry points back at it and
 *        `node_ok(node)` holds (it may count).
 * @param live Set to the number of live slots seen.
 * @return False at the first slot that fails.
 */
template <class Node, class A, class Index, class NodeOk>
[[nodiscard]] bool live_slots_ok(std::vector<Node, A> const& nodes, Index const& index, std::size_t& live,
                                 NodeOk&& node_ok) noexcept
{
  live = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Node const& n = nodes[i];
    if (!n.live) { continue; }
    ++live;
    if (index.find(n.id) != i || !node_ok(n)) { return false; }
  }
  return true;
}

/// @brief The free-list link of a free slot: `Node::next`, or the member `Next` when it is
///        not nullptr (a node whose `next` belongs to a list it stays on).
template <auto Next, class Node>
[[nodiscard]] auto& free_link(Node& n) noexcept
{
  if constexpr (std::is_same_v<decltype(Next), std::nullptr_t>) {
    return n.next;
  } else {
    return n.*Next;
  }
}

/**
 * @brief Take a slot for a new node: the head of the free list (chained through
 *        `Node::next`, or through the member pointer `Next` when given), or a new one at
 *        the end of the slab. The slot's contents are stale.
 * @throws std::bad_alloc when the slab must grow and cannot (policies call this from
 *         noexcept hooks: the host then terminates)
 */
template <auto Next = nullptr, class Node, class A>
slab_slot slab_acquire(std::vector<Node, A>& nodes, slab_slot& free_head)
{
  if (free_head != no_slot) {
    slab_slot const i = free_head;
    free_head = free_link<Next>(nodes[i]);
    return i;
  }
  auto const i = static_cast<slab_slot>(nodes.size());
  nodes.emplace_back();
  return i;
}

/// @brief Put slot `i` (already unlinked and marked dead) at the head of the free list
///        (chained through free_link<Next>()).
template <auto Next = nullptr, class Node, class A>
void slab_release(std::vector<Node, A>& nodes, slab_slot& free_head, slab_slot i) noexcept
{
  free_link<Next>(nodes[i]) = free_head;
  free_head = i;
}

/**
 * @brief Walk the free list for validate(): every slot on it in range and not `live`, no cycle.
 * @param free_slots Set to the number of free slots.
 * @return False when the free list is corrupt.
 */
template <auto Next = nullptr, class Node, class A>
[[nodiscard]] bool slab_free_list_ok(std::vector<Node, A> const& nodes, slab_slot free_head, std::size_t& free_slots) noexcept
{
  free_slots = 0;
  for (slab_slot i = free_head; i != no_slot; i = free_link<Next>(nodes[i])) {
    if (i >= nodes.size() || nodes[i].live || free_slots > nodes.size()) { return false; }
    ++free_slots;
  }
  return true;
}

/**
 * @brief The closing check of validate(): the free list (chained through free_link<Next>())
 *        is consistent, and the slab holds exactly `live` nodes in use plus the free slots.
 * @return False when a slot is lost or the free list is corrupt.
 */
template <auto Next = nullptr, class Node, class A>
[[nodiscard]] bool slab_accounted(std::vector<Node, A> const& nodes, slab_slot free_head, std::size_t live) noexcept
{
  std::size_t free_slots = 0;
  return slab_free_list_ok<Next>(nodes, free_head, free_slots) && live + free_slots == nodes.size();
}

}  // namespace tierpool::policies::detail

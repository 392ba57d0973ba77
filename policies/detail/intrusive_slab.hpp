// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file intrusive_slab.hpp
 * @brief tierpool::policies::detail::move_safe_set, key_member, grow_intrusive_slab(),
 *        acquire_intrusive_slot(), relink_copy() and assign_by_copy(): what the policies
 *        that keep a boost::intrusive::set over a std::vector slab share (`gdsf`,
 *        `belady`, `repeat`); the slab's free list is slab_list.hpp's. Not API. Include as
 *        `<tierpool/policies/intrusive_slab.hpp>` (only those policy headers do).
 *
 * @ingroup policies
 *
 * Note [Intrusive order over a growing slab]
 * ------------------------------------------
 * Rationale: the order is a boost::intrusive::set whose hook lives in the slab node, so
 * inserting or re-keying a tensor allocates nothing; but its links are addresses, and the
 * slab is a std::vector that moves its nodes when it grows. Approach: grow only when no free
 * slot is left, and then (grow_intrusive_slab) record every set as slab positions, empty it,
 * reallocate (capacity doubles) and relink the nodes in the same order with push_back:
 * O(n) per doubling, O(1) amortized per insert. Hooks use normal_link, so clearing a set
 * and destroying it touch no node: moving a policy is safe (a vector move keeps its
 * buffer; a move_safe_set empties itself before it is moved into); copies relink
 * explicitly. Limitations: a node reference taken before an insert may dangle after it.
 */
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <tierpool/policies/saturating.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/policies/slab_list.hpp>

namespace tierpool::policies::detail {

/**
 * @brief A boost::intrusive set whose move-assignment first empties the target.
 *
 * A plain intrusive set swaps headers on move-assignment, which writes into the old root
 * node; when the owning policy is move-assigned, the slab holding that node has just been
 * freed by the slab's own move. Clearing first is O(1) with normal_link and touches no node.
 * Thread safety: as the underlying set (none). Copying is deleted: copies relink explicitly.
 * @tparam Set A boost::intrusive set type with normal_link hooks.
 */
template <class Set>
struct move_safe_set : Set {
  /// @brief An empty set.
  move_safe_set() = default;
  move_safe_set(move_safe_set const&) = delete;
  /// @brief Take over `other`'s nodes (the hook addresses do not change).
  move_safe_set(move_safe_set&&) noexcept = default;
  move_safe_set& operator=(move_safe_set const&) = delete;
  /// @brief Empty this set (touching no node), then take over `other`'s nodes.
  move_safe_set& operator=(move_safe_set&& other) noexcept
  {
    this->clear();
    Set::operator=(std::move(other));
    return *this;
  }
  ~move_safe_set() = default;
};

/**
 * @brief The key_of_value extractor of an intrusive set ordered by the node member `k`.
 * @tparam Node The slab node (with a `Key k` member).
 * @tparam Key  The set's key type.
 */
template <class Node, class Key>
struct key_member {
  using type = Key;  ///< The key type, for boost::intrusive::key_of_value.
  /// @brief The node's key.
  Key const& operator()(Node const& n) const noexcept { return n.k; }
};

/// @brief The slab position of `n`, a node of `nodes`.
template <class Node>
[[nodiscard]] slab_slot slot_of(std::vector<Node> const& nodes, Node const& n) noexcept
{
  return static_cast<slab_slot>(&n - nodes.data());
}

/**
 * @brief Double the capacity of `nodes` (at least 16) and relink every node of `sets` in
 *        the order it had (Note [Intrusive order over a growing slab]).
 *
 * Call only when `nodes.size() == nodes.capacity()`, before the push that needs room, so
 * that the scratch lists and the reallocation happen once per doubling.
 * @param nodes The slab; every node linked into `sets` lives in it.
 * @param sets  The intrusive sets over `nodes` (each keeps its order: push_back relinks).
 * @throws std::bad_alloc when the slab or a scratch list cannot grow; the sets are then
 *         empty only if the failure came after they were cleared (the reallocation), so
 *         callers treat it as fatal (the hooks are noexcept and terminate)
 */
template <class Node, class... Sets>
void grow_intrusive_slab(std::vector<Node>& nodes, Sets&... sets)
{
  auto const record = [&](auto const& set) {
    std::vector<std::uint32_t> order;
    order.reserve(set.size());
    for (Node const& n : set) { order.push_back(slot_of(nodes, n)); }
    return order;
  };
  std::vector<std::uint32_t> orders[sizeof...(Sets)] = {record(sets)...};
  (sets.clear(), ...);  // normal_link: touches no node
  nodes.reserve(std::max<std::size_t>(16, nodes.size() * 2));
  std::size_t k = 0;
  auto const relink = [&](auto& set) {
    for (std::uint32_t const i : orders[k]) { set.push_back(nodes[i]); }
    ++k;
  };
  (relink(sets), ...);
}

/**
 * @brief Take a slot for a new node: the head of the free list (chained through
 *        `Node::next`), or a new one at the end of the slab, growing it first with
 *        grow_intrusive_slab() when it is full (so that the push moves no node). The slot's
 *        contents are stale.
 * @param sets The intrusive sets over `nodes`.
 * @throws std::bad_alloc as grow_intrusive_slab() (callers treat it as fatal)
 */
template <class Node, class... Sets>
slab_slot acquire_intrusive_slot(std::vector<Node>& nodes, slab_slot& free_head, Sets&... sets)
{
  if (free_head == no_slot && nodes.size() == nodes.capacity()) { grow_intrusive_slab(nodes, sets...); }
  return slab_acquire(nodes, free_head);  // within capacity: no node moves
}

/**
 * @brief After `to_nodes` was copied from `from_nodes` (the copied hooks are unlinked),
 *        link into `to` the copies of `from`'s nodes, in `from`'s order.
 * @throws nothing beyond the set's push_back (none for intrusive sets)
 */
template <class Node, class Set>
void relink_copy(std::vector<Node> const& from_nodes, Set const& from, std::vector<Node>& to_nodes, Set& to) noexcept
{
  for (Node const& n : from) { to.push_back(to_nodes[slot_of(from_nodes, n)]); }  // already sorted: push_back
}

/**
 * @brief Copy-assignment through the copy constructor and the move-assignment (the sets'
 *        hooks cannot be copied member-wise): `self` is unchanged when the copy throws.
 * @return `self`.
 * @throws std::bad_alloc from `T`'s copy constructor
 */
template <class T>
T& assign_by_copy(T& self, T const& other)
{
  if (&self != &other) {
    T copy(other);
    self = std::move(copy);
  }
  return self;
}

/**
 * @brief propose() over an ordered set holding pinned tensors too: add the unpinned nodes
 *        in set order until their bytes cover `req.bytes_needed` (all of them when they
 *        cannot). Node needs `pinned`, `bytes` and `k.id`.
 * @throws std::bad_alloc only when `out` must grow
 */
template <class Set>
void propose_unpinned(Set const& order, eviction_request const& req, eviction_proposal& out)
{
  std::size_t freed = 0;
  for (auto it = order.begin(); it != order.end() && freed < req.bytes_needed; ++it) {
    if (it->pinned) { continue; }
    out.add(it->k.id, it->bytes);
    freed = saturating_add(freed, it->bytes);
  }
}

}  // namespace tierpool::policies::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file intrusive_slab.hpp
 * @brief tierpool::policies::detail::move_safe_set and grow_intrusive_slab(): the two pieces
 *        the policies that keep a boost::intrusive::set over a std::vector slab share
 *        (`gdsf`, `belady`, `repeat`). Not API. Include as
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
  auto const slot = [&](Node const& n) { return static_cast<std::uint32_t>(&n - nodes.data()); };
  auto const record = [&](auto const& set) {
    std::vector<std::uint32_t> order;
    order.reserve(set.size());
    for (Node const& n : set) { order.push_back(slot(n)); }
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

}  // namespace tierpool::policies::detail

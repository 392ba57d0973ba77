// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file policy_base.hpp
 * @brief tierpool::policies::detail::slab_policy: the CRTP base of the slab policies. It
 *        owns what every one of them kept alike (the slab, the id index, the pinned
 *        tensors' count and exact byte sum, on_pin / on_unpin, the counters and the
 *        common half of validate()); the policy keeps only its ordering.
 *        Not API. Include as `<tierpool/policies/policy_base.hpp>` (only policy headers do).
 *
 * @ingroup policies
 *
 * Note [One base for the slab policies]
 * -------------------------------------
 * Rationale: lru, fifo, clock, sieve, s3fifo, two_q, random, lfu, arc and lirs each wrote
 * the same glue around the shared slab and index: a pinned side list, on_pin / on_unpin
 * that move a tensor between it and the order, size / evictable_count / pinned_count /
 * contains, the slot taken and freed around the index, and validate()'s walk of the slab,
 * the free list and the index. Written ten times, it drifted (two pinned-list orders, three
 * byte-sum structs) and was most of the policies' duplicated lines.
 * Approach: `slab_policy<Derived, Node>` owns the slab (`nodes_`; lru's on huge pages: Note
 * [Big arrays on huge pages]), its free list, the index (`index_`) and the pinned set
 * (`pinned_`: a count and exact byte sum; pinned tensors are out of the order, and since no
 * policy ever walked its pinned list, no list is kept). The derived policy keeps its
 * ordering and tells the base, through a few private members it befriends the base for:
 * - `policy_name` (static constexpr string_view) and `cfg_`: name() and get_config().
 * - `access(i, view)` / `erase(i)`: on_access / on_erase of resident slot `i` (the base did
 *   the lookup; unknown ids and ghosts never reach them). Without `erase`, on_erase takes
 *   the tensor out of the order and frees its slot.
 * - `order_leave(i)` / `order_enter(i)`: take unpinned tensor `i` out of the order (it is
 *   being pinned) / put it back (unpinned: *where* it re-enters is the policy's decision).
 * - `order_resize(i, from, to)` (optional): an unpinned tensor's bytes change in the order's
 *   byte sums (called before `bytes` changes).
 * - `order_count()`: unpinned resident tensors (evictable_count()).
 * - `order_ok(held)`: validate the order; `held` = live slots the order accounts for
 *   (resident unpinned tensors and ghosts).
 * - `keeps_pinned_in_order` (optional, `static constexpr bool`): true when pinned tensors stay
 *   in the order, skipped by propose (arc, lirs: their bytes count in the lists' sums). Then
 *   pinning moves nothing (no `order_leave` / `order_enter`), `order_resize` is called for
 *   pinned tensors too, and `order_ok` counts them out of `held`.
 * - `is_ghost_node(node)` (optional, static): a live slot that is remembered, not resident (2Q's
 *   A1out, S3-FIFO's G, ARC's B1/B2, LIRS's non-resident HIR). contains() and on_pin skip it.
 * `Node` has the members `id`, `bytes`, `pinned`, `live` and the free-list link: `next`, or
 * the member `FreeNext` names (lirs: `s_next`).
 * Limitations: gdsf, belady and repeat keep their tensors in boost::intrusive sets over a
 * slab that must relink on growth (intrusive_slab.hpp) and are not on this base.
 * Thread safety: none (the policy is externally synchronized). Nothing here throws except
 * where a slot or index cell must be allocated (admit()), which the noexcept hooks turn
 * into std::terminate when the host is out of memory.
 */
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include <tierpool/detail/big_array.hpp>
#include <tierpool/detail/id_index.hpp>
#include <tierpool/policies/saturating.hpp>
#include <tierpool/policies/slab_list.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool::policies::detail {

/**
 * @brief CRTP base of a slab policy (Note [One base for the slab policies]).
 * @tparam Derived The policy; befriends this base for its `order_*` members.
 * @tparam Node The slab node (members `id`, `bytes`, `pinned`, `live`, the free-list link).
 * @tparam FreeNext Member pointer to the free-list link; nullptr: `Node::next`.
 * @tparam Alloc The slab's allocator: std::allocator, or detail::big_array_allocator for a
 *         policy whose slab is worth huge pages (lru: Note [Big arrays on huge pages]).
 */
template <class Derived, class Node, auto FreeNext = nullptr, class Alloc = std::allocator<Node>>
class slab_policy {
 public:
  /// @brief A use of a resident tensor: the policy's `access(slot, view)`. Unknown id or
  ///        ghost: no-op.
  void on_access(tensor_view const& v) noexcept
  {
    if (slab_slot const i = resident_slot(v.id); i != no_slot) { derived().access(i, v); }
  }
  /// @brief A resident tensor left the tier: the policy's `erase(slot)` (which may keep a
  ///        ghost). Unknown id or ghost: no-op.
  void on_erase(tensor_id id) noexcept
  {
    slab_slot const i = resident_slot(id);
    if (i == no_slot) { return; }
    if constexpr (requires(Derived& d) { d.erase(i); }) {
      derived().erase(i);
    } else {  // no erase(): out of the index (its cell is hot: the lookup just read it), the order, the slab
      index_.erase(id);
      if (!nodes_[i].pinned) { derived().order_leave(i); }
      free_slot(i);
    }
  }
  /// @brief Take a tensor out of the eviction order. Idempotent; unknown id or ghost: no-op.
  void on_pin(tensor_id id) noexcept
  {
    if (slab_slot const i = resident_slot(id); i != no_slot) { set_pinned(i, true); }
  }
  /// @brief Return a pinned tensor to the order where the policy puts unpinned tensors.
  ///        Idempotent; unknown id or ghost: no-op.
  void on_unpin(tensor_id id) noexcept
  {
    if (slab_slot const i = resident_slot(id); i != no_slot) { set_pinned(i, false); }
  }

  /// @brief The registry name (the policy's `policy_name`).
  [[nodiscard]] std::string_view name() const noexcept { return Derived::policy_name; }
  /// @brief The configuration (the policy's `cfg_`).
  [[nodiscard]] auto const& get_config() const noexcept { return derived().cfg_; }

  /// @brief Resident tensors tracked (pinned or not; ghosts not counted).
  [[nodiscard]] std::size_t size() const noexcept { return derived().order_count() + pinned_.count; }
  /// @brief Tensors that may be proposed (resident, unpinned).
  [[nodiscard]] std::size_t evictable_count() const noexcept { return derived().order_count(); }
  /// @brief Pinned tensors tracked.
  [[nodiscard]] std::size_t pinned_count() const noexcept { return pinned_.count; }
  /// @brief True when `id` is remembered as a ghost (not resident); always false for a
  ///        policy without ghosts.
  [[nodiscard]] bool is_ghost(tensor_id id) const noexcept
  {
    slab_slot const i = index_.find(id);
    return i != no_slot && ghost(nodes_[i]);
  }
  /// @brief True when `id` is resident here (a ghost is not).
  [[nodiscard]] bool contains(tensor_id id) const noexcept { return resident_slot(id) != no_slot; }

  /**
   * @brief Check every invariant: the order (the policy's order_ok()), the pinned set's
   *        count and byte sum, each live slot's index entry, the index size, the free list
   *        and that every slot is accounted for. O(slab); for tests.
   * @return True when consistent.
   */
  [[nodiscard]] bool validate() const noexcept
  {
    std::size_t held = 0;
    if (!derived().order_ok(held)) { return false; }
    std::size_t live = 0;
    slab_list pinned;  // recomputed count and byte sum
    bool const slots_ok = live_slots_ok(nodes_, index_, live, [&](Node const& n) {
      if (n.pinned) {
        ++pinned.count;
        pinned.add(n.bytes);
      }
      return !(n.pinned && ghost(n));
    });
    if (!slots_ok) { return false; }
    if (pinned.count != pinned_.count || pinned.bytes_low != pinned_.bytes_low || pinned.bytes_high != pinned_.bytes_high) {
      return false;
    }
    if (held + pinned.count != live || index_.size() != live) { return false; }
    return slab_accounted<FreeNext>(nodes_, free_head_, live);
  }

 protected:
  slab_policy() = default;

  using node = Node;              ///< the slab node
  using index_t = slab_slot;      ///< a slot of the slab
  using slot = slab_slot;         ///< the same, shorter
  static constexpr slab_slot npos = no_slot;  ///< no slot

  /// @brief The slot of `id`, ghosts included, or no_slot.
  [[nodiscard]] slab_slot find(tensor_id id) const noexcept { return index_.find(id); }
  /// @brief The slot of `id` when it is resident (not a ghost), or no_slot.
  [[nodiscard]] slab_slot resident_slot(tensor_id id) const noexcept
  {
    slab_slot const i = index_.find(id);
    return i != no_slot && ghost(nodes_[i]) ? no_slot : i;
  }

  /**
   * @brief Take a slot for the new tensor `v` and index it: the node is value-initialized
   *        with `id`, `bytes`, `pinned` and `live` set; a pinned tensor joins the pinned
   *        set. The caller fills the rest and, unless `v.pinned`, links it into its order.
   * @throws std::bad_alloc when the slab or the index cannot grow (hooks: terminate)
   */
  slab_slot admit(tensor_view const& v)
  {
    slab_slot const i = slab_acquire<FreeNext>(nodes_, free_head_);
    Node& n = nodes_[i];
    n = Node{};
    n.id = v.id;
    put_bytes(n, v.bytes);
    n.pinned = v.pinned;
    n.live = true;
    index_.insert(v.id, i);
    if (v.pinned) { pin_add(n.bytes); }
    return i;
  }

  /// @brief Forget slot `i`: out of the pinned set when pinned (an unpinned node must be out
  ///        of the order already), out of the index, onto the free list.
  void release(slab_slot i) noexcept
  {
    index_.erase(nodes_[i].id);
    free_slot(i);
  }

  /// @brief release() for a slot already out of the index.
  void free_slot(slab_slot i) noexcept
  {
    Node& n = nodes_[i];
    if (n.pinned) { pin_sub(n.bytes); }
    n.live = false;
    n.pinned = false;
    n.bytes = 0;
    slab_release<FreeNext>(nodes_, free_head_, i);
  }

  /// @brief Pin or unpin resident slot `i` (no-op when unchanged): an unpinned tensor leaves
  ///        the order (`order_leave`), an unpinned one re-enters it (`order_enter`).
  void set_pinned(slab_slot i, bool pinned) noexcept
  {
    Node& n = nodes_[i];
    if (n.pinned == pinned) { return; }
    if (pinned) {
      if constexpr (!keeps_pinned()) { derived().order_leave(i); }
      n.pinned = true;
      pin_add(n.bytes);
    } else {
      pin_sub(n.bytes);
      n.pinned = false;
      if constexpr (!keeps_pinned()) { derived().order_enter(i); }
    }
  }

  /// @brief Count slot `i`, unpinned and out of the order (a remembered id that comes back
  ///        pinned), as pinned.
  void adopt_pinned(slab_slot i) noexcept
  {
    nodes_[i].pinned = true;
    pin_add(nodes_[i].bytes);
  }

  /// @brief Set resident slot `i`'s bytes, keeping the pinned set's or the order's sums.
  void set_bytes(slab_slot i, std::size_t bytes) noexcept
  {
    Node& n = nodes_[i];
    if (n.bytes == bytes) { return; }
    if (n.pinned) { pinned_.resize(n.bytes, bytes); }
    if constexpr (requires(Derived& d) { d.order_resize(i, bytes, bytes); }) {
      if (!n.pinned || keeps_pinned()) { derived().order_resize(i, n.bytes, bytes); }
    }
    put_bytes(n, bytes);
  }

  /// @brief order_ok() of a policy whose order is the one list `l` of its unpinned tensors.
  [[nodiscard]] bool one_list_ok(slab_list const& l, std::size_t& held) const noexcept
  {
    held = l.count;
    return slab_list_ok(nodes_, l, index_, [](Node const& n) { return !n.pinned; });
  }

  /**
   * @brief The common proposal walk: from slot `from`, following `next(slot)`, add each
   *        node until their bytes cover `req.bytes_needed` (nothing when it is 0), or the
   *        walk ends (no_slot). Each victim's index cell is prefetched: the engine erases a
   *        claimed victim next.
   * @throws std::bad_alloc only when `out` must grow
   */
  template <class Next>
  void propose_walk(eviction_request const& req, eviction_proposal& out, slab_slot from, Next&& next) const
  {
    std::size_t freed = 0;
    for (slab_slot i = from; i != no_slot && freed < req.bytes_needed; i = next(i)) {
      Node const& n = nodes_[i];
      index_.prefetch(n.id);
      out.add(n.id, n.bytes);
      freed = saturating_add(freed, n.bytes);
    }
  }

  std::vector<Node, Alloc> nodes_;  ///< slab; size() == live + free
  slab_slot free_head_{no_slot};        ///< free slots chained through Node::next
  tierpool::detail::id_index index_;    ///< id -> slot (ghosts too); never iterated
  slab_list pinned_;                    ///< pinned resident tensors: count and exact byte sum (links unused)

 private:
  [[nodiscard]] Derived& derived() noexcept { return static_cast<Derived&>(*this); }
  [[nodiscard]] Derived const& derived() const noexcept { return static_cast<Derived const&>(*this); }
  [[nodiscard]] static constexpr bool keeps_pinned() noexcept
  {
    if constexpr (requires { Derived::keeps_pinned_in_order; }) {
      return Derived::keeps_pinned_in_order;
    } else {
      return false;
    }
  }
  [[nodiscard]] static bool ghost(Node const& n) noexcept
  {
    if constexpr (requires { Derived::is_ghost_node(n); }) {
      return Derived::is_ghost_node(n);
    } else {
      return false;
    }
  }
  /// Store `bytes` in `n`: a node whose size is a narrower bit-field (lru_node: 62 bits,
  /// `Node::max_bytes`) is handed sizes that fit it, kept_bytes(); the mask only says so.
  static void put_bytes(Node& n, std::size_t bytes) noexcept
  {
    if constexpr (requires { Node::max_bytes; }) {
      n.bytes = bytes & Node::max_bytes;
    } else {
      n.bytes = bytes;
    }
  }
  void pin_add(std::size_t bytes) noexcept
  {
    ++pinned_.count;
    pinned_.add(bytes);
  }
  void pin_sub(std::size_t bytes) noexcept
  {
    --pinned_.count;
    pinned_.sub(bytes);
  }
};

/**
 * @brief name(), get_config(), on_pin and on_unpin of a policy that keeps pinned tensors in
 *        its order and only flags them: gdsf, belady and repeat, whose boost::intrusive sets
 *        over a relinking slab (intrusive_slab.hpp) are not on slab_policy.
 *
 * The policy befriends this base and provides `policy_name`, `cfg_`, `nodes_` (nodes with a
 * `pinned` member) and `pin_target(id)`: the slot whose flag a pin sets, or no_slot (unknown,
 * or not resident).
 */
template <class Derived>
class flag_pins {
 public:
  /// @brief Mark pinned (never proposed; it keeps its place). Idempotent; unknown id: no-op.
  void on_pin(tensor_id id) noexcept { set(id, true); }
  /// @brief Clear the pin. Idempotent; unknown id: no-op.
  void on_unpin(tensor_id id) noexcept { set(id, false); }
  /// @brief The registry name (the policy's `policy_name`).
  [[nodiscard]] std::string_view name() const noexcept { return Derived::policy_name; }
  /// @brief The configuration (the policy's `cfg_`).
  [[nodiscard]] auto const& get_config() const noexcept { return static_cast<Derived const&>(*this).cfg_; }

 private:
  void set(tensor_id id, bool pinned) noexcept
  {
    auto& d = static_cast<Derived&>(*this);
    if (slab_slot const i = d.pin_target(id); i != no_slot) { d.nodes_[i].pinned = pinned; }
  }
};

}  // namespace tierpool::policies::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file arc_policy.hpp
 * @brief Adaptive Replacement Cache: `tierpool::arc_policy`, registered as `"arc"`.
 *        Include as `<tierpool/policies/arc_policy.hpp>`.
 *
 * @ingroup policies
 *
 * ARC (Megiddo & Modha) keeps two recency lists of resident items, T1 (seen once
 * recently) and T2 (seen at least twice), and two ghost lists of recently evicted ids,
 * B1 and B2. A hit moves an item to the front of T2. A miss that finds the id in a ghost
 * list is evidence that the matching side was too small: a B1 hit raises the target size
 * `p` of T1 by max(|B2|/|B1|, 1), a B2 hit lowers it by max(|B1|/|B2|, 1). REPLACE evicts
 * the LRU end of T1 while |T1| > p, else the LRU end of T2; the ghost lists are trimmed
 * so that |T1| + |B1| <= c and |T1| + |T2| + |B1| + |B2| <= 2c. This version differs from
 * the paper in five ways. (1) **Bytes, not pages**: every |X| is a byte sum, and a ghost
 * hit moves `p` by the ratio times the size of the tensor that hit (a page is one unit in
 * the paper; a tensor is its bytes here); the ratio uses |B1| and |B2| as they were when
 * the miss arrived, before the evictions made for it, as in the paper. (2) **The capacity c is derived**: a policy is not
 * told its tier's size, so with `capacity = 0` c is the largest number of resident bytes the
 * policy has seen (T1 + T2, pinned included). In an oversubscribed steady state the tier
 * fills before anything is evicted, so this is the tier's usable size; before the first
 * eviction nothing depends on c except ghost trimming, and there are no ghosts yet. Give
 * `capacity` explicitly when the tier is shared with other users. (3) **The incoming id
 * comes with the request**: the engine asks for victims before it reports the insert, so
 * REPLACE learns which tensor is coming from `eviction_request::incoming`; for a ghost it
 * runs with `p` as the hit will adapt it, and with the tie rule "x in B2 and |T1| = p", as
 * the paper's REPLACE(x, p) does. `p_` itself moves at on_insert. A request that does not
 * name the tensor (an engine that does not know it) gets REPLACE with the current `p`: the
 * adaptation then lags one miss. (4) **Correlated references**: the pool reports an allocation and
 * the first acquire of a tensor as two events, which would promote every tensor to T2 and
 * turn ARC into LRU; an access within `correlation_window` policy events of the tensor's
 * previous event (1 = the very next event) refreshes it in its own list instead of
 * promoting it, as 2Q's correlated reference period does. 0 gives the paper's behaviour.
 * (5) **Pinned tensors stay in their lists** (the lists are ARC's state) and propose()
 * walks past them: propose costs O(victims + pinned tensors passed).
 *
 * @see N. Megiddo, D. S. Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", USENIX FAST 2003
 * @see T. Johnson, D. Shasha, "2Q: A Low Overhead High Performance Buffer Management Replacement Algorithm", VLDB 1994 (correlated references)
 * @see policies/arc/README.md
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <tierpool/export.hpp>
#include <tierpool/policies/policy_base.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {
namespace policies::detail {
/// @brief Which ARC list a tensor is in: arc_policy::list_id.
enum class arc_list_id : std::uint8_t {
  t1,  ///< resident, seen once recently
  t2,  ///< resident, seen at least twice
  b1,  ///< ghost of an eviction from T1
  b2,  ///< ghost of an eviction from T2
};
/// @brief arc_policy's slab node (outside the class: the CRTP base needs it complete).
struct arc_node {
  tensor_id id{};
  std::size_t bytes{0};
  std::uint64_t last_event{0};  // clock_ at the tensor's last insert/access
  slab_slot prev{no_slot};      // towards MRU (front)
  slab_slot next{no_slot};      // towards LRU (back); free-list link for free slots
  arc_list_id list{arc_list_id::t1};
  bool pinned{false};
  bool live{false};
};
}  // namespace policies::detail

/**
 * @brief Adaptive Replacement Cache over the tensors of one tier, sized in bytes.
 *
 * Complexity: every hook O(1) expected (one hash lookup and list relinking); on_access
 * never allocates; on_insert allocates one hash node for a new id (a ghost id reuses its
 * slot); trimming ghosts frees hash nodes. propose O(victims + pinned tensors passed).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole state.
 *
 * @code
 * tierpool::arc_policy arc{{.capacity = 300}};
 * arc.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});
 * tierpool::eviction_proposal out;
 * arc.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{1}}
 * @endcode
 */
class TIERPOOL_EXPORT arc_policy : public policies::detail::slab_policy<arc_policy, policies::detail::arc_node> {
 public:
  /// @brief Configuration (registry parameters of the same names).
  struct config {
    /// The cache size c in bytes; 0 = the largest resident bytes seen (see the file comment).
    std::uint64_t capacity{0};
    /// An access within this many policy events of the tensor's previous insert or access
    /// is the same reference: it refreshes the tensor in its list, no promotion to T2.
    /// 0 = the paper (every re-access promotes).
    std::uint64_t correlation_window{1};
  };

  /// @brief Which ARC list a tensor is in (for tests and tools): t1, t2 (resident), b1, b2 (ghosts).
  using list_id = policies::detail::arc_list_id;

  /// @brief An empty policy with the default configuration.
  arc_policy() noexcept;
  /// @brief An empty policy. @param cfg Configuration.
  explicit arc_policy(config cfg) noexcept;

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: a new id enters T1; a ghost id enters T2 and adapts `p`; a resident id is
  //   updated and counts as an access.
  // - on_access: a use: promote to T2 (or refresh, within the correlation window). Unknown or
  //   ghost id: no-op. Adopts `v.bytes` and `v.pinned`.
  // - on_erase: a resident tensor left: it becomes a ghost (T1 -> B1, T2 -> B2). Unknown or
  //   ghost id: no-op.
  // - propose: append victims by REPLACE: the LRU end of T1 while the T1 bytes not yet taken
  //   exceed `p`, else the LRU end of T2 (the other list when one runs out), skipping pinned
  //   tensors, until `req.bytes_needed` is covered (everything evictable when it cannot be;
  //   nothing for 0). With `req.incoming` a ghost, `p` is first adapted for its hit (and the
  //   paper's tie rule applies for a B2 hit).
  // - on_pin / on_unpin (a pinned tensor keeps its place in T1 or T2, and its bytes count
  //   there, but is never proposed), size (T1 + T2), evictable_count, pinned_count, contains
  //   (ghosts excluded), validate: slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;


  /// @brief The cache size c in use (bytes): the configured one, or the largest resident bytes seen.
  [[nodiscard]] std::uint64_t capacity_bytes() const noexcept;
  /// @brief The adaptive target size of T1 (bytes), in [0, c].
  [[nodiscard]] double target_t1_bytes() const noexcept { return p_; }
  /// @brief Bytes in a list (saturating at SIZE_MAX).
  [[nodiscard]] std::size_t bytes_in(list_id which) const noexcept { return list_of(which).bytes(); }
  /// @brief Tensors (resident or ghost) in a list, most recent first. O(n), allocates; for tests.
  [[nodiscard]] std::vector<tensor_id> contents(list_id which) const;

 private:
  friend slab_policy;
  static constexpr std::string_view policy_name = "arc";  // name()
  using list = policies::detail::slab_list;  // MRU at front, LRU at back

  [[nodiscard]] list& list_of(list_id which) noexcept;
  [[nodiscard]] list const& list_of(list_id which) const noexcept;
  void link_front(list_id which, index_t i) noexcept;
  void unlink(index_t i) noexcept;
  [[nodiscard]] static bool is_ghost(list_id l) noexcept { return l == list_id::b1 || l == list_id::b2; }
  void touch(index_t i, tensor_view const& v) noexcept;  // access to a resident tensor
  void drop(index_t i) noexcept;                          // forget a ghost entirely
  void trim_ghosts() noexcept;
  // p after a hit on ghost node n (B1 raises it, B2 lowers it, by the ratio of the ghost
  // lists as the miss arrived times `size`), clamped to [0, c].
  [[nodiscard]] double adapted_p(node const& n, double size) const noexcept;

  void access(index_t i, tensor_view const& v) noexcept;  // on_access of a resident tensor
  void erase(index_t i) noexcept;                          // on_erase of a resident tensor

  // The order (Note [One base for the slab policies]). ARC keeps pinned tensors in their
  // list (their bytes count in |T1| and |T2|) and skips them in propose: pinning moves nothing.
  static constexpr bool keeps_pinned_in_order = true;
  [[nodiscard]] static bool is_ghost_node(node const& n) noexcept { return is_ghost(n.list); }
  [[nodiscard]] std::size_t order_count() const noexcept { return t1_.count + t2_.count - pinned_.count; }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept;

  config cfg_;
  list t1_, t2_, b1_, b2_;
  double p_{0.0};                  // target bytes of T1, 0 <= p_ <= c
  std::uint64_t high_water_{0};    // largest T1 + T2 bytes seen (saturating)
  std::uint64_t clock_{0};         // policy events (inserts and accesses)
  // |B1| and |B2| when the current miss arrived: the ghost lists before the evictions that
  // make room for it (the first on_erase since the last insert or access records them), so
  // that a ghost hit's delta uses the sizes Figure 4 uses, not those after REPLACE.
  double b1_at_miss_{0.0};
  double b2_at_miss_{0.0};
  bool evicting_{false};           // an on_erase came after the last insert or access
};

namespace policies {
/// @brief Register `"arc"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_arc(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::arc_policy>, "arc_policy must satisfy tierpool::eviction_policy");

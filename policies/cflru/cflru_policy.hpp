// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file cflru_policy.hpp
 * @brief Clean-first LRU eviction: `tierpool::cflru_policy`, registered as `"cflru"`.
 *        Include as `<tierpool/policies/cflru_policy.hpp>`.
 *
 * @ingroup policies
 *
 * CFLRU (Park et al., CASES 2006) was made for flash, where writing a page back costs far
 * more than reading it: the least recently used part of the LRU list (the *clean-first
 * window*) gives up its clean pages first, and a dirty page there is evicted only when no
 * clean one is left in the window. A tier has the same asymmetry whenever its write-back
 * link is the busy one: a clean tensor is dropped for nothing now (another tier holds its
 * bytes), a dirty one is written back first. The price is paid later: a clean victim that
 * is used again is copied back in.
 *
 * This version: (1) **the window is in bytes**: the least recent `window` fraction of the
 * evictable bytes (0 is plain LRU; 1, the default, takes every clean tensor before any
 * dirty one: on the replay traces it moved the rows most, policies/cflru/README.md). (2) **Dirty as the policy sees it**: a tensor is dirty from an insert or an
 * access that writes (`tensor_view::write_access`) until it is inserted again; the policy
 * is not told of write-backs that leave a copy resident (early write-backs, demote to the
 * tier below), so such a tensor still counts as dirty. (3) Promotion, pins and sized
 * proposals as `lru` (every access promotes; pinned tensors leave the list and return at
 * the most recent end).
 *
 * @see S.-Y. Park, D. Jung, J.-U. Kang, J.-S. Kim, J. Lee, "CFLRU: a replacement algorithm
 *      for flash memory", CASES 2006
 * @see policies/cflru/README.md
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <tierpool/export.hpp>
#include <tierpool/policies/policy_base.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {
namespace policies::detail {
/// @brief cflru_policy's slab node (outside the class: the CRTP base needs it complete).
struct cflru_node {
  tensor_id id{};
  std::size_t bytes{0};
  std::uint64_t stamp{0};   // when it entered its list (the policy's promotion count): recency across the two
  slab_slot prev{no_slot};  // towards the most recent end (front) of its list
  slab_slot next{no_slot};  // towards the least recent end (back); free-list link for free slots
  bool pinned{false};
  bool live{false};
  bool dirty{false};  // written since it was inserted (tensor_view::write_access); which list holds it
};
}  // namespace policies::detail

/**
 * @brief Clean-first LRU over the tensors of one tier.
 *
 * Complexity: on_access, on_erase, on_pin, on_unpin O(1) expected (one hash lookup);
 * on_insert O(1) amortized; propose O(victims) with `window` 1 (clean and dirty tensors
 * are on two recency lists), O(tensors in the window + victims) below 1 (a merge of the
 * two lists by recency).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole ordering.
 *
 * @code
 * tierpool::cflru_policy p{{.window = 0.5}};
 * p.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100, .write_access = true});  // dirty
 * p.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100});                       // clean
 * p.on_insert({.id = tierpool::tensor_id{3}, .bytes = 100});
 * p.on_insert({.id = tierpool::tensor_id{4}, .bytes = 100});
 * tierpool::eviction_proposal out;
 * p.propose({.bytes_needed = 100}, out);  // out.victims == {tensor_id{2}}: 1 is dirty
 * @endcode
 */
class TIERPOOL_EXPORT cflru_policy
  : public policies::detail::slab_policy<cflru_policy, policies::detail::cflru_node> {
 public:
  /// @brief Configuration (registry parameters of the same names).
  struct config {
    /// The clean-first window: the least recent fraction of the evictable bytes, in [0, 1].
    /// 1 (the default, the best of those measured on the replay traces): every clean
    /// tensor goes before any dirty one.
    double window{1.0};
  };

  /// @brief An empty policy with the default configuration.
  cflru_policy() noexcept;
  /**
   * @brief An empty policy.
   * @param cfg Configuration.
   * @throws tierpool::logic_error if `cfg.window` is not in [0, 1]
   */
  explicit cflru_policy(config cfg);

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: it enters at the most recent end (or the pinned set when `v.pinned`),
  //   dirty when `v.write_access`. A known id is updated, promoted, and dirty or clean
  //   as the view says (a new copy).
  // - on_access: a use: promoted; a write makes it dirty. Unknown id: no-op.
  // - on_erase: forget a tensor. Unknown id: no-op.
  // - propose: the clean tensors of the window, least recent first, until their bytes cover
  //   `req.bytes_needed`; then the other tensors in LRU order (every evictable tensor when
  //   they cannot; nothing for 0 bytes).
  // - on_pin, on_unpin (an unpinned tensor returns at the most recent end), size,
  //   evictable_count, pinned_count, contains, validate: slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief Sum of the evictable tensors' bytes (saturating at SIZE_MAX).
  [[nodiscard]] std::size_t evictable_bytes() const noexcept;
  /// @brief Whether a resident tensor counts as dirty (false when unknown).
  [[nodiscard]] bool is_dirty(tensor_id id) const noexcept;

 private:
  friend slab_policy;
  static constexpr std::string_view policy_name = "cflru";  // name()

  void access(slot i, tensor_view const& v) noexcept;  // on_access of a resident tensor
  // The least recent tensor of the two lists not yet passed (a and b: each list's cursor,
  // moved to its next more recent tensor when taken); no_slot when both are done.
  [[nodiscard]] slot older_of(slot& a, slot& b) const noexcept;

  // The order (Note [One base for the slab policies]): evictable tensors, on the clean or
  // the dirty list by their flag, each MRU at front.
  policies::detail::slab_list& list_of(slot i) noexcept { return nodes_[i].dirty ? dirty_ : clean_; }
  void order_leave(slot i) noexcept { policies::detail::unlink(nodes_, list_of(i), i); }
  void order_enter(slot i) noexcept
  {
    nodes_[i].stamp = ++stamp_;
    policies::detail::link_front(nodes_, list_of(i), i);
  }
  void order_resize(slot i, std::size_t from, std::size_t to) noexcept { list_of(i).resize(from, to); }
  [[nodiscard]] std::size_t order_count() const noexcept { return clean_.count + dirty_.count; }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept;

  config cfg_;
  policies::detail::slab_list clean_;  // evictable clean tensors, MRU at front, LRU at back
  policies::detail::slab_list dirty_;  // evictable dirty tensors, the same
  std::uint64_t stamp_{0};             // entries into the lists so far
};

namespace policies {
/// @brief Register `"cflru"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_cflru(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::cflru_policy>, "cflru_policy must satisfy tierpool::eviction_policy");

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file random_policy.hpp
 * @brief Uniformly random eviction: `tierpool::random_policy`, registered as `"random"`.
 *        Include as `<tierpool/policies/random_policy.hpp>`.
 *
 * @ingroup policies
 *
 * Random replacement evicts a resident item chosen uniformly at random. Belady's 1966
 * study (IBM Systems Journal) used it as the no-information baseline, and it remains the
 * baseline of every replacement study since (it has no scan pathology and no state per
 * access). This version differs from the textbook in three ways. (1) **Deterministic**:
 * the choice is a counter-based hash (SplitMix64) of the seed, the number of erases the
 * policy has seen, and the victim's rank in the proposal, so the same event sequence gives
 * the same proposals, and proposing twice gives the same victims (see Note [Random
 * proposals without state]). (2) **Sized proposals**: victims are drawn without replacement
 * until their bytes cover `bytes_needed`, every evictable tensor when they cannot; the
 * draw is uniform over tensors, not over bytes. (3) **Pinned tensors leave the pool of
 * candidates** (`on_pin`, or a pinned flag in a view) and return on `on_unpin`.
 *
 * Note [Random proposals without state]
 * -------------------------------------
 * Rationale: propose must not change state (asking again returns the same victims), so
 * it cannot advance an RNG; yet two successive eviction rounds must not draw the same
 * sequence. Approach: the k-th victim of a proposal is position k of a partial
 * Fisher-Yates shuffle of the candidate array whose k-th swap index is
 * `k + splitmix64(seed, erases, k) mod (n - k)`. `erases` counts on_erase of tracked
 * tensors, so every eviction (or free) moves to fresh randomness. propose performs the
 * swaps on the array, then undoes them in reverse order before it returns (also when
 * `out` fails to grow), so the array, the only thing the draw depends on, is unchanged.
 * Limitations: the candidate array's order depends on the insert/erase history (erase
 * swaps the last candidate into the hole), which is deterministic but not canonical: two
 * policies holding the same tensors after different histories draw differently.
 *
 * @see L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", IBM Systems Journal 5(2), 1966
 * @see G. L. Steele, D. Lea, C. H. Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014 (SplitMix64)
 * @see policies/random/README.md
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
/// @brief random_policy's slab node (outside the class: the CRTP base needs it complete).
struct random_node {
  tensor_id id{};
  std::size_t bytes{0};
  slab_slot pos{no_slot};   // position in candidates_, no_slot when pinned or free
  slab_slot next{no_slot};  // free-list link for free slots
  bool pinned{false};
  bool live{false};
};
}  // namespace policies::detail

/**
 * @brief Uniformly random, seeded, deterministic eviction over the tensors of one tier.
 *
 * Complexity: every hook O(1) expected (one hash lookup), no allocation except one hash
 * node and amortized array growth on insert; propose O(victims).
 * Thread safety: externally synchronized (called under the tier's lock); propose permutes
 * and restores an internal array, so even two const calls must not overlap.
 * Ownership: a value; copying copies the candidates and the erase counter.
 *
 * @code
 * tierpool::random_policy rnd{{.seed = 7}};
 * rnd.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});
 * rnd.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100});
 * tierpool::eviction_proposal out;
 * rnd.propose({.bytes_needed = 100}, out);   // one of the two, the same one every time
 * @endcode
 */
class TIERPOOL_EXPORT random_policy : public policies::detail::slab_policy<random_policy, policies::detail::random_node> {
 public:
  /// @brief Configuration (registry parameters of the same names).
  struct config {
    /// Seed of the counter-based hash that draws victims.
    std::uint64_t seed{42};
  };

  /// @brief An empty policy with the default seed.
  random_policy() noexcept;
  /// @brief An empty policy. @param cfg Configuration.
  explicit random_policy(config cfg) noexcept;

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: it becomes a candidate (unless `v.pinned`). A known id is updated (size,
  //   pinned flag).
  // - on_access: a use: adopts `v.bytes` and `v.pinned`. Unknown id: no-op.
  // - on_erase: forget a tensor and advance the draw (see the Note). Unknown id: no-op.
  // - propose: append randomly drawn unpinned tensors (without replacement) to `out` until
  //   their bytes cover `req.bytes_needed` (nothing when it is 0), or all of them when they
  //   cannot (the draw is undone before returning: the policy is left unchanged).
  // - on_pin (stop proposing a tensor), on_unpin (a candidate again), size, evictable_count,
  //   pinned_count, contains, validate: slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

 private:
  friend slab_policy;
  static constexpr std::string_view policy_name = "random";  // name()

  void add_candidate(index_t i) noexcept;
  void remove_candidate(index_t i) noexcept;
  [[nodiscard]] std::size_t swap_index(std::size_t k, std::size_t n) const noexcept;

  void access(index_t i, tensor_view const& v) noexcept;  // on_access of a resident tensor
  void erase(index_t i) noexcept;                          // on_erase of a resident tensor

  // The order (Note [One base for the slab policies]): the candidate array.
  void order_leave(index_t i) noexcept { remove_candidate(i); }
  void order_enter(index_t i) noexcept { add_candidate(i); }
  [[nodiscard]] std::size_t order_count() const noexcept { return candidates_.size(); }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept;

  config cfg_;
  // Slab positions of the unpinned tensors; nodes_[candidates_[p]].pos == p. Mutable:
  // propose permutes it and restores it before returning (Note [Random proposals without state]).
  mutable std::vector<index_t> candidates_;
  std::uint64_t erases_{0};  // on_erase calls for tracked tensors: the draw's counter
};

namespace policies {
/// @brief Register `"random"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_random(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::random_policy>, "random_policy must satisfy tierpool::eviction_policy");

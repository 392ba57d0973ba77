// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file lirs_policy.hpp
 * @brief Low Inter-reference Recency Set: `tierpool::lirs_policy`, registered as `"lirs"`.
 *        Include as `<tierpool/policies/lirs_policy.hpp>`.
 *
 * @ingroup policies
 *
 * LIRS (Jiang & Zhang) ranks blocks by inter-reference recency (IRR: how many other
 * blocks were used between a block's last two uses) instead of recency alone. Blocks with
 * low IRR form the LIR set and take most of the cache (L_lirs); the rest, L_hirs (1% in the
 * paper), holds resident HIR blocks in a FIFO queue Q, which is where victims come from.
 * A recency stack S holds LIR blocks and recently seen HIR blocks, resident or not; it is
 * *pruned* so that its bottom is always an LIR block. A HIR block used while it is still in
 * S has an IRR lower than the bottom LIR block's recency, so it becomes LIR and that bottom
 * block becomes HIR (to the end of Q). A miss evicts the front of Q; the victim stays in S
 * as a non-resident HIR entry, so that a quick return is recognised. Scans and loops larger
 * than the cache therefore pass through Q without disturbing the LIR set.
 * This version differs from the paper in five ways. (1) **Bytes, not blocks**: the LIR set
 * holds at most L_lirs = c - hir_ratio * c bytes, and becoming LIR demotes bottom LIR
 * tensors until it fits again (one block in the paper). (2) **The capacity c is derived**,
 * as in `arc`: with `capacity = 0` it is the largest resident bytes seen; while a tier fills
 * up a new tensor becomes LIR only while the LIR bytes stay within L_lirs of that, so about
 * hir_ratio of what is resident is HIR from the start, as in the paper's steady state.
 * (3) **Non-resident entries are bounded**: the paper lets S grow; here the non-resident
 * HIR entries of S hold at most `ghost_ratio * c` bytes, the oldest dropped first.
 * (4) **Correlated references** (see `arc`): an access within `correlation_window` events
 * of the tensor's previous one moves it to the top of S without changing its status, so
 * that the pool's allocate-then-acquire does not make every tensor LIR. (5) **Fallback and
 * pins**: when Q cannot cover a request, victims continue from the bottom LIR tensor
 * upwards (the paper never needs this with equal-sized blocks); pinned tensors keep their
 * place and status and propose() walks past them.
 *
 * @see S. Jiang, X. Zhang, "LIRS: An Efficient Low Inter-reference Recency Set Replacement Policy to Improve Buffer Cache Performance", SIGMETRICS 2002
 * @see policies/lirs/README.md
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <tierpool/export.hpp>
#include <tierpool/policies/policy_base.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {
namespace policies::detail {
/// @brief A tensor's LIRS status: lirs_policy::status.
enum class lirs_status : std::uint8_t {
  lir,           ///< resident, low inter-reference recency
  hir,           ///< resident, high inter-reference recency (in Q)
  non_resident,  ///< evicted HIR tensor still remembered in S
};
/// @brief lirs_policy's slab node (outside the class: the CRTP base needs it complete).
struct lirs_node {
  tensor_id id{};
  std::size_t bytes{0};
  std::uint64_t last_event{0};
  slab_slot s_prev{no_slot};  // stack S: towards the top
  slab_slot s_next{no_slot};  // towards the bottom; free-list link for free slots
  slab_slot l_prev{no_slot};  // the status list (lir_, q_ or ghosts_): towards its front
  slab_slot l_next{no_slot};
  lirs_status st{lirs_status::hir};
  bool in_s{false};
  bool pinned{false};
  bool live{false};
};
}  // namespace policies::detail

/**
 * @brief LIRS over the tensors of one tier, sized in bytes.
 *
 * Complexity: every hook O(1) amortized (one hash lookup, list relinking; pruning removes
 * each stack entry at most once per insertion); on_access never allocates; on_insert
 * allocates one hash node for a new id. propose O(victims + pinned tensors passed).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole state.
 *
 * @code
 * tierpool::lirs_policy lirs{{.capacity = 300, .hir_ratio = 0.3}};
 * lirs.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});   // LIR
 * lirs.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100});   // LIR
 * lirs.on_insert({.id = tierpool::tensor_id{3}, .bytes = 100});   // HIR (L_lirs = 210 bytes)
 * tierpool::eviction_proposal out;
 * lirs.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{3}}
 * @endcode
 */
class TIERPOOL_EXPORT lirs_policy
  : public policies::detail::slab_policy<lirs_policy, policies::detail::lirs_node, &policies::detail::lirs_node::s_next> {
 public:
  /// @brief Configuration (registry parameters of the same names).
  struct config {
    /// The cache size c in bytes; 0 = the largest resident bytes seen.
    std::uint64_t capacity{0};
    /// Share of c for resident HIR tensors (L_hirs / c); the paper uses 1%. In [0, 1).
    double hir_ratio{0.01};
    /// Non-resident HIR entries kept in the stack, in bytes, as a multiple of c. >= 0.
    double ghost_ratio{1.0};
    /// An access within this many policy events of the tensor's previous one is the same
    /// reference (no status change). 0 = the paper.
    std::uint64_t correlation_window{1};
  };

  /// @brief A tensor's LIRS status (for tests and tools): lir, hir (resident), non_resident.
  using status = policies::detail::lirs_status;

  /// @brief An empty policy with the default configuration.
  lirs_policy() noexcept;
  /// @brief An empty policy. @param cfg Configuration (validated by the registry).
  explicit lirs_policy(config cfg) noexcept;

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: a tensor became resident (a remembered one becomes LIR); a resident id
  //   counts as an access.
  // - on_access: a use. Unknown or non-resident id: no-op. Adopts `v.bytes` and `v.pinned`.
  // - on_erase: a resident tensor left: a HIR one still in S is remembered, anything else is
  //   forgotten. Unknown or non-resident id: no-op.
  // - propose: append resident HIR tensors from the front of Q (oldest first), then LIR
  //   tensors from the bottom of S up, skipping pinned ones, until `req.bytes_needed` is
  //   covered (everything evictable when it cannot be; nothing for 0).
  // - on_pin / on_unpin (a pinned tensor keeps its place in S and its status list but is
  //   never proposed), size (resident tensors), evictable_count, pinned_count, contains
  //   (non-resident entries excluded), validate: slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;


  /// @brief The cache size c in use (bytes).
  [[nodiscard]] std::uint64_t capacity_bytes() const noexcept { return cfg_.capacity != 0 ? cfg_.capacity : high_water_; }
  /// @brief Status of a tracked tensor; std::nullopt when unknown.
  [[nodiscard]] std::optional<status> status_of(tensor_id id) const noexcept;
  /// @brief The stack S, top (most recent) first. O(n), allocates; for tests.
  [[nodiscard]] std::vector<tensor_id> stack() const;
  /// @brief The queue Q, front (next victim) first. O(n), allocates; for tests.
  [[nodiscard]] std::vector<tensor_id> queue() const;
  /// @brief Bytes of the LIR tensors (saturating).
  [[nodiscard]] std::size_t lir_bytes() const noexcept { return lir_.bytes(); }

 private:
  friend slab_policy;
  static constexpr std::string_view policy_name = "lirs";  // name()
  // A doubly-linked list over slab positions, front = the end nodes are linked at; it keeps
  // its count and exact byte sum. Nodes are on two at once (S, and one status list), hence
  // the link members passed to link_front / unlink.
  using list = policies::detail::slab_list;

  template <index_t node::*Prev, index_t node::*Next>
  void link_front(list& l, index_t i) noexcept;
  template <index_t node::*Prev, index_t node::*Next>
  void unlink(list& l, index_t i) noexcept;
  [[nodiscard]] list& list_of(status st) noexcept;
  [[nodiscard]] list const& list_of(status st) const noexcept;

  void s_to_top(index_t i) noexcept;           // (re)insert at the top of S
  void set_status(index_t i, status st) noexcept;
  void prune() noexcept;                       // drop HIR entries at the bottom of S
  void fit_lir(index_t keep) noexcept;         // demote bottom LIR tensors (not `keep`) until L_lirs fits
  void trim_ghosts() noexcept;
  void forget(index_t i) noexcept;             // out of every list, slot freed
  void access_resident(index_t i, tensor_view const& v) noexcept;
  void note_resident() noexcept;               // update the high-water mark
  [[nodiscard]] double lir_limit() const noexcept;

  void access(index_t i, tensor_view const& v) noexcept;  // on_access of a resident tensor
  void erase(index_t i) noexcept;                          // on_erase of a resident tensor

  // The order (Note [One base for the slab policies]): S and the status lists; pinned
  // tensors stay in them and propose skips them.
  static constexpr bool keeps_pinned_in_order = true;
  [[nodiscard]] static bool is_ghost_node(node const& n) noexcept { return n.st == status::non_resident; }
  void order_resize(index_t i, std::size_t from, std::size_t to) noexcept;
  [[nodiscard]] std::size_t order_count() const noexcept { return lir_.count + q_.count - pinned_.count; }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept;

  config cfg_;
  list s_;        // stack S (byte sums unused), front = top
  list lir_;      // LIR tensors in S order, front = top; back = bottom of S
  list q_;        // resident HIR tensors, front = Q's end (newest), back = Q's front (next victim)
  list ghosts_;   // non-resident HIR entries of S, front = newest
  std::uint64_t high_water_{0};
  std::uint64_t clock_{0};
};

namespace policies {
/// @brief Register `"lirs"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_lirs(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::lirs_policy>, "lirs_policy must satisfy tierpool::eviction_policy");

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file two_q_policy.hpp
 * @brief 2Q eviction (the full version): `tierpool::two_q_policy`, registered as `"two_q"`.
 *        Include as `<tierpool/policies/two_q_policy.hpp>`.
 *
 * @ingroup policies
 *
 * 2Q (Johnson & Shasha, VLDB 1994) keeps new items in a FIFO, A1in; an access while an
 * item is in A1in is treated as correlated with its first reference and changes nothing.
 * When A1in holds more than Kin, its oldest item is evicted and its id is remembered in a
 * ghost FIFO, A1out (at most Kout entries). An item that misses while its id is in A1out
 * has proven a second, uncorrelated reference and enters Am, an LRU list; otherwise
 * evictions come from the LRU end of Am. The paper recommends Kin = 25% and Kout = 50% of
 * the buffer. This is the "full version" (A1in, A1out, Am), not the simplified one. It
 * differs from the paper in four ways. (1) **Bytes, not pages**: |A1in|, |Am| and |A1out|
 * are byte sums (a ghost counts the bytes its tensor had), and Kin and Kout are fractions
 * of the bytes the policy currently holds in A1in + Am, since a policy is not told its
 * tier's capacity; with evictions, the tier is full, so this is the buffer size. (2)
 * **Sized proposals**: the paper's reclaim step is repeated until the victims' bytes cover
 * `bytes_needed`, on a read-only simulation of the byte sums. (3) **The A1out move happens
 * on erase**: propose changes no state, so an A1in tensor enters A1out when the engine
 * erases it *and* it is the tensor 2Q would evict then (the oldest of A1in while
 * |A1in| > Kin); a tensor freed by its owner leaves no ghost (see Note [2Q ghosts are
 * made on erase]). (4) **Pinned tensors leave their queue** and return, on `on_unpin`, at
 * the newest end of the queue they belong to; the ratios count only unpinned tensors.
 *
 * Note [2Q ghosts are made on erase]
 * ----------------------------------
 * Rationale: the only state 2Q changes when it evicts is A1out (Am evictions leave no
 * trace), and propose may not change state. Approach: on_erase(x) asks the question
 * reclaimfor would: is x the front of A1in, and does A1in exceed Kin (or is Am empty)?
 * If so, x was evicted by 2Q's rule, and its id goes to the back of A1out, which is then
 * trimmed to Kout. The check is O(1). Because propose simulates the same rule on the
 * same byte sums, erasing the proposed victims in order makes every A1in victim a ghost.
 * Limitations: an A1in victim erased out of order (the engine skipped an earlier one)
 * leaves no ghost, and a tensor freed while it is the A1in front when A1in exceeds Kin
 * does leave one (harmless: its id does not come back).
 *
 * @see T. Johnson, D. Shasha, "2Q: A Low Overhead High Performance Buffer Management Replacement Algorithm", VLDB 1994
 * @see policies/two_q/README.md
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
/// @brief two_q_policy's slab node (outside the class: the CRTP base needs it complete).
struct two_q_node {
  enum class queue : std::uint8_t { a1in, am, a1out };
  tensor_id id{};
  std::size_t bytes{0};
  slab_slot prev{no_slot};  // towards the oldest / least recent end (front)
  slab_slot next{no_slot};  // towards the newest end (back); free-list link for free slots
  queue q{queue::a1in};     // the queue it belongs to (also while pinned)
  bool pinned{false};
  bool live{false};
};
}  // namespace policies::detail

/**
 * @brief 2Q (A1in FIFO, A1out ghost FIFO, Am LRU) over the tensors of one tier.
 *
 * Complexity: every hook O(1) expected (one hash lookup; trimming A1out is amortized
 * against the ghosts added); on_access never allocates; on_insert allocates one hash node
 * for a new id (a ghost reuses its slot); propose O(victims).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole state.
 *
 * @code
 * tierpool::two_q_policy q{{.kin = 0.25, .kout = 0.5}};
 * q.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});
 * tierpool::eviction_proposal out;
 * q.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{1}}
 * @endcode
 */
class TIERPOOL_EXPORT two_q_policy : public policies::detail::slab_policy<two_q_policy, policies::detail::two_q_node> {
 public:
  /// @brief Configuration (registry parameters of the same names).
  struct config {
    /// A1in's share of the held bytes above which A1in is evicted from, in (0, 1).
    double kin{0.25};
    /// A1out's size, as a fraction of the held bytes (ghost bytes), in [0, 16].
    double kout{0.5};
  };

  /// @brief An empty policy with the paper's parameters.
  two_q_policy() noexcept;
  /**
   * @brief An empty policy.
   * @param cfg Configuration.
   * @throws tierpool::logic_error if `kin` is not in (0, 1) or `kout` not in [0, 16]
   */
  explicit two_q_policy(config cfg);

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: into Am when its id is in A1out, else at the back of A1in. A known resident
  //   id is updated and counts as an access.
  // - on_access: a use: moves an Am tensor to the most recent end; nothing in A1in. Adopts
  //   `v.bytes` and `v.pinned`. Unknown id: no-op.
  // - on_erase: forget a resident tensor; remember it in A1out when 2Q evicted it (Note [2Q
  //   ghosts are made on erase]). Unknown or ghost id: no-op.
  // - propose: append the tensors 2Q would evict, in order, until their bytes cover
  //   `req.bytes_needed` (nothing when it is 0), or all unpinned ones when they cannot.
  // - on_pin, on_unpin (an unpinned tensor returns at the newest end of its own queue), size,
  //   evictable_count, pinned_count, contains (ghosts excluded), validate: slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief Unpinned tensors in A1in.
  [[nodiscard]] std::size_t a1in_count() const noexcept { return a1in_.count; }
  /// @brief Unpinned tensors in Am.
  [[nodiscard]] std::size_t am_count() const noexcept { return am_.count; }
  /// @brief Ghost ids in A1out.
  [[nodiscard]] std::size_t ghost_count() const noexcept { return a1out_.count; }

 private:
  friend slab_policy;
  static constexpr std::string_view policy_name = "two_q";  // name()
  using queue = node::queue;
  using list = policies::detail::slab_list;  // oldest at front

  [[nodiscard]] list& queue_of(node const& n) noexcept;  // a1in_, am_ or a1out_, whatever the pin
  [[nodiscard]] bool evict_from_a1in(list const& a1in, list const& am) const noexcept;
  void trim_ghosts() noexcept;

  void access(index_t i, tensor_view const& v) noexcept;  // on_access of a resident tensor
  void erase(index_t i) noexcept;                          // on_erase of a resident tensor

  // The order (Note [One base for the slab policies]).
  [[nodiscard]] static bool is_ghost_node(node const& n) noexcept { return n.q == queue::a1out; }
  void order_leave(index_t i) noexcept { policies::detail::unlink(nodes_, queue_of(nodes_[i]), i); }
  void order_enter(index_t i) noexcept { policies::detail::link_back(nodes_, queue_of(nodes_[i]), i); }
  void order_resize(index_t i, std::size_t from, std::size_t to) noexcept { queue_of(nodes_[i]).resize(from, to); }
  [[nodiscard]] std::size_t order_count() const noexcept { return a1in_.count + am_.count; }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept;

  config cfg_;
  list a1in_;    // FIFO of first-time tensors, unpinned
  list am_;      // LRU of re-referenced tensors, unpinned, least recent at front
  list a1out_;   // ghost FIFO: ids of tensors evicted from A1in, oldest at front
};

namespace policies {
/// @brief Register `"two_q"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_two_q(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::two_q_policy>, "two_q_policy must satisfy tierpool::eviction_policy");

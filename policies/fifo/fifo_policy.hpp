// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file fifo_policy.hpp
 * @brief First-in, first-out eviction: `tierpool::fifo_policy`, registered as `"fifo"`.
 *        Include as `<tierpool/policies/fifo_policy.hpp>`.
 *
 * @ingroup policies
 *
 * FIFO evicts the tensor that became resident first; accesses do not change the order.
 * It is the oldest replacement rule (Belady's 1966 study of replacement algorithms for
 * virtual storage, IBM Systems Journal, uses it as a baseline) and, as Yang et al. argue
 * ("FIFO queues are all you need for cache eviction", SOSP 2023), the base on which
 * CLOCK, SIEVE and S3-FIFO are built. This version differs from the textbook in three
 * ways. (1) **Sized proposals**: victims are taken from the oldest end until their bytes
 * cover `bytes_needed` (every evictable tensor when they cannot). (2) **Pinned tensors
 * leave the queue** (`on_pin`, or a pinned flag in a view) and re-enter at the newest end
 * on `on_unpin`: pins reach a policy only when the engine met a pinned victim, i.e. a
 * tensor in use at the oldest end, and re-entering it at the newest end is what FIFO
 * does with an object that is inserted again. (3) **A re-insert of a resident id** updates
 * its size and pinned flag and counts as an access, which FIFO ignores: it keeps its place.
 *
 * @see L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", IBM Systems Journal 5(2), 1966
 * @see J. Yang, Y. Zhang, Z. Qiu, Y. Yue, K. V. Rashmi, "FIFO queues are all you need for cache eviction", SOSP 2023
 * @see policies/fifo/README.md
 */
#pragma once

#include <cstddef>
#include <string_view>

#include <tierpool/export.hpp>
#include <tierpool/policies/policy_base.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {
namespace policies::detail {
/// @brief fifo_policy's slab node (outside the class: the CRTP base needs it complete).
struct fifo_node {
  tensor_id id{};
  std::size_t bytes{0};
  slab_slot prev{no_slot};  // towards the oldest end (front)
  slab_slot next{no_slot};  // towards the newest end (back); free-list link for free slots
  bool pinned{false};
  bool live{false};
};
}  // namespace policies::detail

/**
 * @brief First-in, first-out eviction over the tensors of one tier.
 *
 * Complexity: on_access, on_erase, on_pin, on_unpin O(1) expected (one hash lookup), no
 * allocation; on_insert O(1) amortized (one hash node); propose O(victims).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole queue.
 *
 * @code
 * tierpool::fifo_policy fifo;
 * fifo.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100, .last_access = 1});
 * fifo.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100, .last_access = 2});
 * fifo.on_access({.id = tierpool::tensor_id{1}, .bytes = 100, .last_access = 3});
 * tierpool::eviction_proposal out;
 * fifo.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{1}}
 * @endcode
 */
class TIERPOOL_EXPORT fifo_policy : public policies::detail::slab_policy<fifo_policy, policies::detail::fifo_node> {
 public:
  /// @brief Configuration: FIFO has no parameters.
  struct config {};

  /// @brief An empty policy.
  fifo_policy() noexcept;
  /// @brief An empty policy. @param cfg Configuration (empty).
  explicit fifo_policy(config cfg) noexcept;

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: it enters at the newest end (or the pinned set when `v.pinned`). A known id
  //   is updated (size, pinned flag) and keeps its place.
  // - on_access: a use: adopts `v.bytes` and `v.pinned`; the order does not change. Unknown
  //   id: no-op.
  // - on_erase: forget a tensor. Unknown id: no-op.
  // - propose: append the oldest unpinned tensors to `out` until their bytes cover
  //   `req.bytes_needed` (nothing when it is 0), or all of them when they cannot.
  // - on_pin, on_unpin (an unpinned tensor re-enters at the newest end), size,
  //   evictable_count, pinned_count, contains, validate: slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief Sum of the evictable tensors' bytes (saturating at SIZE_MAX).
  [[nodiscard]] std::size_t evictable_bytes() const noexcept { return queue_.bytes(); }

 private:
  friend slab_policy;
  static constexpr std::string_view policy_name = "fifo";  // name()

  void access(slot i, tensor_view const& v) noexcept;  // on_access of a resident tensor

  // The order (Note [One base for the slab policies]): evictable tensors, oldest at front.
  void order_leave(slot i) noexcept { policies::detail::unlink(nodes_, queue_, i); }
  void order_enter(slot i) noexcept { policies::detail::link_back(nodes_, queue_, i); }
  void order_resize(slot /*i*/, std::size_t from, std::size_t to) noexcept { queue_.resize(from, to); }
  [[nodiscard]] std::size_t order_count() const noexcept { return queue_.count; }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept { return one_list_ok(queue_, held); }

  config cfg_;
  policies::detail::slab_list queue_;  // evictable, oldest at front
};

namespace policies {
/// @brief Register `"fifo"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_fifo(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::fifo_policy>, "fifo_policy must satisfy tierpool::eviction_policy");

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
#include <cstdint>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <tierpool/export.hpp>
#include <tierpool/policies/slab_list.hpp>
#include <tierpool/detail/id_index.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

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
class TIERPOOL_EXPORT fifo_policy {
 public:
  /// @brief Configuration: FIFO has no parameters.
  struct config {};

  /// @brief An empty policy.
  fifo_policy() noexcept;
  /// @brief An empty policy. @param cfg Configuration (empty).
  explicit fifo_policy(config cfg) noexcept;

  /**
   * @brief A tensor became resident: it enters at the newest end (or the pinned list when
   *        `v.pinned`). A known id is updated (size, pinned flag) and keeps its place.
   * @param v The tensor.
   */
  void on_insert(tensor_view const& v) noexcept;
  /// @brief A use: adopts `v.bytes` and `v.pinned`; the order does not change. Unknown id: no-op.
  void on_access(tensor_view const& v) noexcept;
  /// @brief Forget a tensor. Unknown id: no-op.
  void on_erase(tensor_id id) noexcept;
  /// @brief Take a tensor out of the queue. Idempotent; unknown id: no-op.
  void on_pin(tensor_id id) noexcept;
  /// @brief Return a pinned tensor at the newest end. Idempotent; unknown id: no-op.
  void on_unpin(tensor_id id) noexcept;

  /**
   * @brief Append the oldest unpinned tensors to `out` until their bytes cover
   *        `req.bytes_needed` (nothing when it is 0), or all of them when they cannot.
   * @param req What to free; only `bytes_needed` is used.
   * @param out Proposal to append to (the caller clears it).
   * @throws std::bad_alloc only when `out` must grow and the host is out of memory
   */
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief "fifo".
  [[nodiscard]] std::string_view name() const noexcept { return "fifo"; }
  /// @brief The configuration.
  [[nodiscard]] config const& get_config() const noexcept { return cfg_; }
  /// @brief Tensors tracked (pinned or not).
  [[nodiscard]] std::size_t size() const noexcept { return queue_.count + pinned_.count; }
  /// @brief Tensors that may be proposed.
  [[nodiscard]] std::size_t evictable_count() const noexcept { return queue_.count; }
  /// @brief Sum of the evictable tensors' bytes (saturating at SIZE_MAX).
  [[nodiscard]] std::size_t evictable_bytes() const noexcept { return queue_.bytes(); }
  /// @brief Pinned tensors tracked.
  [[nodiscard]] std::size_t pinned_count() const noexcept { return pinned_.count; }
  /// @brief True when `id` is tracked.
  [[nodiscard]] bool contains(tensor_id id) const noexcept { return index_.contains(id); }

  /**
   * @brief Check every invariant: links, counts, byte sums, pinned flags, the index, the
   *        free list. O(n); for tests.
   * @return True when consistent.
   */
  [[nodiscard]] bool validate() const noexcept;

 private:
  using index_t = std::uint32_t;
  static constexpr index_t npos = std::numeric_limits<index_t>::max();

  struct node {
    tensor_id id{};
    std::size_t bytes{0};
    index_t prev{npos};  // towards the oldest end (front)
    index_t next{npos};  // towards the newest end (back); free-list link for free slots
    bool pinned{false};
    bool live{false};
  };
  // A doubly-linked list over slab positions, oldest at front.
  // Invariant: count == #nodes reachable from front; bytes_high * 2^64 + bytes_low == exact
  // sum of their bytes (two words: removing a huge tensor after an overflow stays exact).
  using list = policies::detail::slab_list;

  void link_back(list& l, index_t i) noexcept;
  void unlink(list& l, index_t i) noexcept;
  [[nodiscard]] list& list_of(node const& n) noexcept { return n.pinned ? pinned_ : queue_; }
  void set_bytes(index_t i, std::size_t bytes) noexcept;
  void set_pinned(index_t i, bool pinned) noexcept;
  [[nodiscard]] index_t lookup(tensor_id id) const noexcept;

  config cfg_;
  std::vector<node> nodes_;   // slab; size() == live + free
  index_t free_head_{npos};   // free slots chained through node::next
  tierpool::detail::id_index index_;  // id -> slab position; never iterated
  list queue_;                // evictable, oldest at front
  list pinned_;               // pinned; order irrelevant
};

namespace policies {
/**
 * @brief Register `"fifo"` (no parameters) in `registry`. Called by
 *        register_builtin_policies().
 * @param registry The registry.
 * @throws tierpool::logic_error if "fifo" is already registered
 */
TIERPOOL_EXPORT void register_fifo(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::fifo_policy>, "fifo_policy must satisfy tierpool::eviction_policy");

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file lru_policy.hpp
 * @brief Least-recently-used eviction: `tierpool::lru_policy`, registered as `"lru"`.
 *        Include as `<tierpool/policies/lru_policy.hpp>`.
 *
 * @ingroup policies
 *
 * The textbook LRU keeps every resident item on one recency list, moves an item to the
 * front on each access, and evicts from the back. This version differs in four ways.
 * (1) **Pinned tensors leave the list**: `on_pin` moves a tensor to a side list and
 * `on_unpin` puts it back at the most-recently-used end (the end of a lease is a use),
 * so `propose` never walks past a pinned tensor and costs O(victims), where CacheLib's
 * MMLru skips in-use items during its eviction walk. (2) **Promotion is rate-limited and
 * selective**, as in CacheLib's MMLru (`lruRefreshTime`, `updateOnWrite`/`updateOnRead`):
 * an access moves a tensor only when `refresh_interval` ticks have passed since its last
 * promotion, and only for the access kinds the config allows; this keeps hot tensors
 * from churning the list and lets write-once outputs age. (3) **Proposals are sized**:
 * victims are taken from the cold end until their bytes cover the request, and every
 * evictable tensor is proposed when they cannot. (4) **No pointers, no per-access
 * allocation**: nodes live in a slab indexed by 32-bit positions with a free list, and
 * a flat open-addressing index (detail::id_index: id and position side by side in one
 * cell, a lookup reads one cache line) maps ids to positions; an access is one probe and
 * at most four index writes, an insert allocates nothing once warm. Proposals
 * depend only on the event sequence (the index is never iterated), as replay requires.
 *
 * @see N. Megiddo, D. Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST 2003 (LRU as baseline)
 * @see CacheLib `cachelib/allocator/MMLru.h` (refresh time, update on read/write)
 * @see policies/lru/README.md for the design and its limits
 */
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include <tierpool/detail/big_array.hpp>
#include <tierpool/export.hpp>
#include <tierpool/policies/policy_base.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {
namespace policies::detail {
/// @brief lru_policy's slab node (outside the class: the CRTP base needs it complete):
///        24 bytes, the two flags sharing a word with the size. The promotion tick lives
///        beside the slab (lru_policy::ticks_), and only when `refresh_interval != 0`.
struct lru_node {
  /// The largest promotion tick kept: later ticks are stored as this one (2^62 ns of the
  /// backend clock is 146 years).
  static constexpr tick max_promoted_at = (tick{1} << 62) - 1;
  /// The largest size kept in the node (62 bits). No tier holds a tensor of 2^62 bytes (4
  /// EiB); should a view carry a larger size (tests do), the node keeps this value and the
  /// policy keeps the exact size beside it (lru_policy::huge_), so proposals and sums stay
  /// exact.
  static constexpr std::size_t max_bytes = (std::size_t{1} << 62) - 1;

  tensor_id id{};
  std::size_t bytes : 62 {0};  // the tensor's size, at most max_bytes (see there)
  bool pinned : 1 {false};
  bool live : 1 {false};
  slab_slot prev{no_slot};    // towards MRU (front)
  slab_slot next{no_slot};    // towards LRU (back); free-list link for free slots

  /// @brief Tick `t` as kept for a promotion (saturated at max_promoted_at).
  [[nodiscard]] static constexpr tick kept_tick(tick t) noexcept { return t < max_promoted_at ? t : max_promoted_at; }
  /// @brief Size `b` as kept in the node (saturated at max_bytes).
  [[nodiscard]] static constexpr std::size_t kept_bytes(std::size_t b) noexcept { return b < max_bytes ? b : max_bytes; }
};
static_assert(sizeof(lru_node) == 24, "lru_node is 24 bytes (id, size and flags, two links)");
}  // namespace policies::detail

/**
 * @brief Least-recently-used eviction over the tensors of one tier.
 *
 * Complexity: on_access, on_erase, on_pin, on_unpin O(1) expected (one hash lookup), no
 * allocation; on_insert O(1) amortized (one hash node, slab growth amortized); propose
 * O(victims).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole ordering.
 *
 * @code
 * tierpool::lru_policy lru{{.refresh_interval = 0, .promote_on_write = true}};
 * lru.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100, .last_access = 1});
 * lru.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100, .last_access = 2});
 * lru.on_access({.id = tierpool::tensor_id{1}, .bytes = 100, .last_access = 3});
 * tierpool::eviction_proposal out;
 * lru.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{2}}
 * @endcode
 */
class TIERPOOL_EXPORT lru_policy
  : public policies::detail::slab_policy<lru_policy, policies::detail::lru_node, nullptr,
                                         tierpool::detail::big_array_allocator<policies::detail::lru_node>> {
 public:
  /// @brief Configuration (registry parameters of the same names).
  struct config {
    /// Promote a tensor at most once per this many ticks (0 = on every access). An access
    /// within the interval of the last promotion leaves the order unchanged.
    tick refresh_interval{0};
    /// Promote on read accesses (`tensor_view::write_access == false`).
    bool promote_on_read{true};
    /// Promote on write accesses (`tensor_view::write_access == true`).
    bool promote_on_write{true};
  };

  /// @brief An empty policy with the default configuration.
  lru_policy() noexcept;
  /**
   * @brief An empty policy.
   * @param cfg Configuration.
   */
  explicit lru_policy(config cfg) noexcept;

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: it enters at the most-recently-used end (or the pinned set when
  //   `v.pinned`). A known id is updated and promoted.
  // - on_access: a use: promote per config. Adopts `v.pinned` and `v.bytes`. Unknown id:
  //   no-op.
  // - on_erase: forget a tensor. Unknown id: no-op.
  // - propose: append least-recently-used unpinned tensors to `out` until their bytes cover
  //   `req.bytes_needed` (nothing when it is 0), or all of them when they cannot.
  // - on_pin, on_unpin (an unpinned tensor returns at the most-recently-used end), size,
  //   evictable_count, pinned_count, contains, validate: slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief Sum of the evictable tensors' bytes (saturating at SIZE_MAX).
  [[nodiscard]] std::size_t evictable_bytes() const noexcept;

  /// @brief slab_policy::validate(), and the side arrays: one promotion tick per slot when
  ///        `refresh_interval != 0` (none otherwise), one exact size per live node kept at
  ///        lru_node::max_bytes with a larger size. O(slab); for tests.
  [[nodiscard]] bool validate() const noexcept;

 private:
  friend slab_policy;
  static constexpr std::string_view policy_name = "lru";  // name()

  void access(slot i, tensor_view const& v) noexcept;  // on_access of a resident tensor
  void erase(slot i) noexcept;                          // on_erase of a resident tensor
  void resize(slot i, std::size_t bytes) noexcept;      // set_bytes(), the exact size of a huge one beside
  void promote_at(slot i, tick t) noexcept
  {
    if (cfg_.refresh_interval != 0) { ticks_[i] = node::kept_tick(t); }
  }
  [[nodiscard]] std::size_t bytes_of(slot i) const noexcept;  // the exact size of live slot i

  // The order (Note [One base for the slab policies]): evictable tensors, MRU at front.
  void order_leave(slot i) noexcept { policies::detail::unlink(nodes_, lru_, i); }
  void order_enter(slot i) noexcept { policies::detail::link_front(nodes_, lru_, i); }  // at the MRU end
  void order_resize(slot /*i*/, std::size_t from, std::size_t to) noexcept { lru_.resize(from, to); }
  [[nodiscard]] std::size_t order_count() const noexcept { return lru_.count; }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept { return one_list_ok(lru_, held); }

  config cfg_;
  policies::detail::slab_list lru_;  // evictable, MRU at front, LRU at back
  // Tick of each slot's last move to the MRU end (lru_node::kept_tick), indexed by slot and
  // as long as nodes_ when refresh_interval != 0; empty (nothing per tensor) otherwise.
  std::vector<tick, tierpool::detail::big_array_allocator<tick>> ticks_;
  // (slot, exact size) of each live node whose size exceeds lru_node::max_bytes (the node
  // keeps max_bytes); empty on any real machine.
  std::vector<std::pair<slot, std::size_t>> huge_;
};

namespace policies {
/// @brief Register `"lru"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_lru(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::lru_policy>, "lru_policy must satisfy tierpool::eviction_policy");

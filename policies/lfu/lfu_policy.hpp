// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file lfu_policy.hpp
 * @brief Least-frequently-used eviction: `tierpool::lfu_policy`, registered as `"lfu"`.
 *        Include as `<tierpool/policies/lfu_policy.hpp>`.
 *
 * @ingroup policies
 *
 * LFU evicts the item used the fewest times; among equally frequent items this version
 * evicts the least recently used (it entered its frequency class first). It uses the O(1)
 * structure of Shah, Mitra and Matani ("An O(1) algorithm for implementing the LFU cache
 * eviction scheme", 2010): an ascending list of frequency buckets, each holding its items
 * in recency order, so that an access moves an item to the next bucket in O(1) and the
 * victim is the front of the first bucket. This version differs from the textbook in four
 * ways. (1) **Frequency counts this policy's events**: an insert counts 1 and every
 * access or re-insert adds 1 (the view's `access_count`, which the pool keeps across
 * tiers, is not used, so a tensor demoted to this tier starts afresh here). There is no
 * aging: a tensor hot long ago stays until colder ones are gone (use `lru`, `arc` or
 * `s3fifo` where popularity shifts). (2) **Sized proposals**: victims from the lowest
 * frequency up until their bytes cover `bytes_needed`. (3) **Pinned tensors leave their
 * bucket's list** but stay counted in the bucket, so that the bucket, and with it the
 * tensor's frequency class, survives; accesses while pinned still count; `on_unpin`
 * returns the tensor at the most recent end of its bucket. propose skips buckets that hold
 * only pinned tensors. (4) **Slabs, no pointers**: items and buckets live in two slabs
 * with free lists; an access allocates nothing.
 *
 * @see K. Shah, A. Mitra, D. Matani, "An O(1) algorithm for implementing the LFU cache eviction scheme", 2010
 * @see policies/lfu/README.md
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
/// @brief lfu_policy's slab node (outside the class: the CRTP base needs it complete).
struct lfu_node {
  tensor_id id{};
  std::size_t bytes{0};
  slab_slot bucket{no_slot};  // the bucket of this tensor's frequency
  slab_slot prev{no_slot};    // towards the least recent end of the bucket
  slab_slot next{no_slot};    // towards the most recent end; free-list link for free slots
  bool pinned{false};
  bool live{false};
};
}  // namespace policies::detail

/**
 * @brief Least-frequently-used eviction (LRU among equals) over the tensors of one tier.
 *
 * Complexity: on_access, on_pin, on_unpin, on_erase O(1) expected (one hash lookup), no
 * allocation once the bucket slab has grown to the number of distinct frequencies;
 * on_insert O(1) amortized (one hash node); propose O(victims + buckets holding only
 * pinned tensors).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole structure.
 *
 * @code
 * tierpool::lfu_policy lfu;
 * lfu.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});
 * lfu.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100});
 * lfu.on_access({.id = tierpool::tensor_id{1}, .bytes = 100});
 * tierpool::eviction_proposal out;
 * lfu.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{2}}
 * @endcode
 */
class TIERPOOL_EXPORT lfu_policy : public policies::detail::slab_policy<lfu_policy, policies::detail::lfu_node> {
 public:
  /// @brief Configuration: LFU has no parameters.
  struct config {};

  /// @brief An empty policy.
  lfu_policy() noexcept;
  /// @brief An empty policy. @param cfg Configuration (empty).
  explicit lfu_policy(config cfg) noexcept;

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: a tensor became resident with frequency 1, most recent in its class (or
  //   pinned when `v.pinned`). A known id is updated and counts as an access.
  // - on_access: a use: frequency + 1; adopts `v.bytes` and `v.pinned`. Unknown id: no-op.
  // - on_erase: forget a tensor. Unknown id: no-op.
  // - propose: append unpinned tensors, least frequent first (least recent first among
  //   equals), until their bytes cover `req.bytes_needed` (nothing when it is 0), or all of
  //   them when they cannot.
  // - on_pin (out of its bucket's list; it keeps its frequency), on_unpin (back at the most
  //   recent end of its bucket), size, evictable_count, pinned_count, contains, validate:
  //   slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief Frequency of a tracked tensor (0 when unknown).
  [[nodiscard]] std::uint64_t frequency(tensor_id id) const noexcept;
  /// @brief Number of frequency buckets in use.
  [[nodiscard]] std::size_t bucket_count() const noexcept { return bucket_count_; }

 private:
  friend slab_policy;
  static constexpr std::string_view policy_name = "lfu";  // name()

  struct bucket {
    std::uint64_t freq{0};
    index_t prev{npos};   // lower frequency
    index_t next{npos};   // higher frequency; free-list link for free buckets
    index_t front{npos};  // least recent unpinned tensor of this frequency
    index_t back{npos};   // most recent
    std::size_t items{0};   // unpinned tensors in the list
    std::size_t pinned{0};  // pinned tensors of this frequency (not in the list)
  };

  void link_item(index_t b, index_t i) noexcept;    // at the most recent end
  void unlink_item(index_t b, index_t i) noexcept;
  void attach(index_t b, index_t i) noexcept;       // into bucket b, list or pinned count
  void detach(index_t i) noexcept;                  // out of its bucket, freeing it if empty
  [[nodiscard]] index_t bucket_after(index_t b, std::uint64_t freq) noexcept;  // existing or new
  void free_bucket(index_t b) noexcept;
  void bump(index_t i) noexcept;

  void access(index_t i, tensor_view const& v) noexcept;  // on_access of a resident tensor
  void erase(index_t i) noexcept;                          // on_erase of a resident tensor

  // The order (Note [One base for the slab policies]): the buckets' lists.
  void order_leave(index_t i) noexcept;
  void order_enter(index_t i) noexcept;  // the most recent end of its frequency class
  [[nodiscard]] std::size_t order_count() const noexcept { return index_.size() - pinned_.count; }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept;

  config cfg_;
  std::vector<bucket> buckets_;  // bucket slab
  index_t free_bucket_{npos};    // free bucket slots chained through bucket::next
  index_t lowest_{npos};         // bucket of the lowest frequency
  std::size_t bucket_count_{0};  // linked buckets
};

namespace policies {
/// @brief Register `"lfu"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_lfu(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::lfu_policy>, "lfu_policy must satisfy tierpool::eviction_policy");

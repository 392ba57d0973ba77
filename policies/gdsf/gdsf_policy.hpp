// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file gdsf_policy.hpp
 * @brief GreedyDual-Size-Frequency: `tierpool::gdsf_policy`, registered as `"gdsf"`.
 *        Include as `<tierpool/policies/gdsf_policy.hpp>`.
 *
 * @ingroup policies
 *
 * GDSF (Cherkasova) gives every cached object a priority H = L + frequency * cost / size and
 * evicts the lowest. L is the cache's "inflation" value: on each eviction it rises to the
 * evicted object's H, so objects that are not used age relative to newly set priorities
 * without touching them. Small, frequently used, expensive-to-fetch objects stay; large,
 * cold, cheap ones go. Here the cost of a tensor is what a miss costs: moving it back in,
 * `tensor_view::transfer_cost` (ticks over its links) when the driver gives one.
 * This version differs from the paper in four ways. (1) **Cost** is a parameter:
 * `transfer` (default) uses `transfer_cost`, and when that is 0 (unknown) the `fallback`:
 * `bytes` (a cost proportional to size: the size cancels and H = L + frequency, an LFU
 * with aging) or `one` (GDS with unit cost: small tensors are favoured). `one` and `bytes`
 * force that cost for every tensor. (2) **L is committed in on_erase**, because proposing
 * must not change state: when the engine removes the tensor that is first in the order
 * (the lowest H), L becomes its H. A tensor removed from elsewhere in the order (freed, not
 * evicted) leaves L unchanged, so that frees do not age the cache. (3) **Frequency** counts
 * the inserts and accesses the policy has seen since the tensor became resident in this
 * tier (the paper counts hits since the object entered the cache); an access within
 * `correlation_window` events of the previous one does not count (the pool reports an
 * allocation and its first acquire as two events). (4) **Ties** go to the least recently
 * used, then the smaller id. Pinned tensors keep their place (no allocation on a pin or
 * unpin); propose() and the L update walk past them.
 *
 * @see L. Cherkasova, "Improving WWW Proxies Performance with Greedy-Dual-Size-Frequency Caching Policy", HP Labs HPL-98-69, 1998
 * @see P. Cao, S. Irani, "Cost-Aware WWW Proxy Caching Algorithms", USITS 1997 (GreedyDual-Size)
 * @see policies/gdsf/README.md
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/intrusive/set.hpp>

#include <tierpool/export.hpp>
#include <tierpool/detail/id_index.hpp>
#include <tierpool/policies/intrusive_slab.hpp>
#include <tierpool/policies/policy_base.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

/**
 * @brief GreedyDual-Size-Frequency over the tensors of one tier.
 *
 * Complexity: on_access O(log n); on_insert O(log n) (amortized: the slab grows by
 * doubling, see Note [Intrusive order over a growing slab]); on_erase O(log n + pinned
 * tensors at the front); on_pin, on_unpin O(1); propose O(victims + pinned tensors
 * passed). No hook allocates in a steady state: per-tensor state lives in a slab reused
 * through a free list, found through a detail::id_index, and the order is intrusive.
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole state (O(n), the order is relinked).
 *
 * The order is a boost::intrusive set over the slab, grown by
 * policies::detail::grow_intrusive_slab(): see Note [Intrusive order over a growing slab]
 * in policies/detail/intrusive_slab.hpp.
 *
 * @code
 * tierpool::gdsf_policy gdsf{{.cost = tierpool::gdsf_policy::cost_model::one}};
 * gdsf.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});   // H = 0 + 1 * 1/100
 * gdsf.on_insert({.id = tierpool::tensor_id{2}, .bytes = 10});    // H = 0 + 1 * 1/10
 * tierpool::eviction_proposal out;
 * gdsf.propose({.bytes_needed = 1}, out);   // out.victims == {tensor_id{1}}
 * @endcode
 */
class TIERPOOL_EXPORT gdsf_policy : public policies::detail::flag_pins<gdsf_policy> {
 public:
  /// @brief Where a tensor's cost comes from.
  enum class cost_model : std::uint8_t {
    transfer,  ///< tensor_view::transfer_cost; the fallback when it is 0
    one,       ///< 1 for every tensor (GreedyDual-Size with unit cost)
    bytes,     ///< the tensor's bytes (H = L + frequency)
  };

  /// @brief Configuration (registry parameters of the same names).
  struct config {
    cost_model cost{cost_model::transfer};     ///< the cost in H
    cost_model fallback{cost_model::bytes};    ///< cost when `transfer` finds 0 (one or bytes)
    /// An access within this many policy events of the previous one does not count as a
    /// use (0 = every access counts).
    std::uint64_t correlation_window{1};
  };

  /// @brief An empty policy with the default configuration.
  gdsf_policy() noexcept;
  /// @brief An empty policy. @param cfg Configuration.
  explicit gdsf_policy(config cfg) noexcept;
  /// @brief Copy the whole state (the order is relinked over the copied slab).
  /// @throws std::bad_alloc
  gdsf_policy(gdsf_policy const& other);
  /// @brief Move; `other` may only be assigned to or destroyed afterwards.
  gdsf_policy(gdsf_policy&& other) noexcept = default;
  /// @brief Copy-assign the whole state. @throws std::bad_alloc (this is then unchanged)
  gdsf_policy& operator=(gdsf_policy const& other);
  /// @brief Move-assign; `other` may only be assigned to or destroyed afterwards.
  gdsf_policy& operator=(gdsf_policy&& other) noexcept = default;
  ~gdsf_policy() = default;

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: a tensor became resident with frequency 1 (a resident id counts as an
  //   access).
  // - on_access: a use: frequency + 1, H recomputed with the current L. Unknown id: no-op.
  // - on_erase: forget a tensor; L rises to its H when it was first in the order. Unknown id:
  //   no-op.
  // - on_pin: mark pinned (never proposed; it keeps its H). Idempotent; unknown id: no-op.
  // - on_unpin: clear the pin. Idempotent; unknown id: no-op.
  // - propose: append the unpinned tensors of lowest H first until `req.bytes_needed` is
  //   covered (everything evictable when it cannot be; nothing for 0).
  void on_insert(tensor_view const& v) noexcept;
  void on_access(tensor_view const& v) noexcept;
  void on_erase(tensor_id id) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief The inflation value L.
  [[nodiscard]] double inflation() const noexcept { return inflation_; }
  /// @brief H of a tracked tensor; std::nullopt when unknown.
  [[nodiscard]] std::optional<double> priority(tensor_id id) const noexcept;
  /// @brief Tensors tracked (pinned or not).
  [[nodiscard]] std::size_t size() const noexcept { return index_.size(); }

  /// @brief Check the order against the tensors (one entry per tensor, in key order), the
  ///        index and the slab's free list. O(n); for tests.
  [[nodiscard]] bool validate() const noexcept;

 private:
  friend flag_pins;
  static constexpr std::string_view policy_name = "gdsf";  // name()
  [[nodiscard]] policies::detail::slab_slot pin_target(tensor_id id) const noexcept { return index_.find(id); }
  struct key {
    double h;
    std::uint64_t seq;  // policy event of the last use: ties go to the least recent
    tensor_id id;
    bool operator<(key const& o) const noexcept
    {
      if (h != o.h) { return h < o.h; }
      if (seq != o.seq) { return seq < o.seq; }
      return id < o.id;
    }
    bool operator==(key const& o) const noexcept = default;
  };
  using index_t = std::uint32_t;
  static constexpr index_t npos = std::numeric_limits<index_t>::max();
  // The order's hook (Note [Intrusive order over a growing slab]).
  using order_hook = boost::intrusive::set_base_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>>;
  struct node : order_hook {
    key k{};
    std::size_t bytes{0};
    std::uint64_t frequency{0};
    index_t next{npos};  // free-list link for free slots
    bool pinned{false};
    bool live{false};
  };
  using key_of_node = policies::detail::key_member<node, key>;
  using order_set = boost::intrusive::set<node, boost::intrusive::key_of_value<key_of_node>>;


  [[nodiscard]] double cost_of(tensor_view const& v) const noexcept;
  [[nodiscard]] double priority_of(std::uint64_t frequency, double cost, std::size_t bytes) const noexcept;
  void rekey(node& n, key const& k) noexcept;
  [[nodiscard]] std::optional<tensor_id> first_evictable() const noexcept;
  [[nodiscard]] index_t slot_of(node const& n) const noexcept { return policies::detail::slot_of(nodes_, n); }

  config cfg_;
  std::vector<node> nodes_;           // slab; size() == tracked + free
  index_t free_head_{npos};           // free slots chained through node::next
  tierpool::detail::id_index index_;  // id -> slab position; never iterated
  policies::detail::move_safe_set<order_set> order_;                 // every tensor, lowest H first (intrusive)
  double inflation_{0.0};                         // L
  std::uint64_t clock_{0};
};

namespace policies {
/// @brief Register `"gdsf"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_gdsf(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::gdsf_policy>, "gdsf_policy must satisfy tierpool::eviction_policy");

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file belady_policy.hpp
 * @brief Belady's MIN from next-use forecasts: `tierpool::belady_policy`, registered as
 *        `"belady"`. Include as `<tierpool/policies/belady_policy.hpp>`.
 *
 * @ingroup policies
 *
 * Belady's MIN evicts the item whose next use lies furthest in the future; with equal-sized
 * items and a single cache it misses least of all policies, which makes it the yardstick
 * that `tierpool replay` reports every other policy against. It needs the future: here
 * `tensor_view::next_use`, a forecast the driver gives with every insert and access
 * (`tierpool replay` knows the trace; a program can call `pool::set_next_use`).
 * This version differs from the textbook in three ways. (1) **Sizes**: victims are taken
 * furthest-next-use first until the bytes are covered; with tensors of different sizes this
 * is no longer optimal (the optimal variable-size problem is NP-hard), but it is the usual
 * reference point. Tensors forecast never to be used again (`no_next_use`) go first; ties go
 * to the least recently reported, then the smaller id. (2) **A missing forecast is an
 * error, not a guess**: a tensor whose latest event carried no forecast (`next_use` empty)
 * makes propose() throw tierpool::logic_error naming it (the one logic_error the policy
 * contract allows, see eviction_policy), because any guess would make the "optimal" figure
 * a lie. A later event with a forecast clears it. (3) **Forecasts are only as fresh as the
 * last event**: a forecast is the value at the tensor's latest insert or access.
 * Pinned tensors keep their place; propose() walks past them.
 *
 * @see L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", IBM Systems Journal 5(2), 1966
 * @see R. L. Mattson et al., "Evaluation techniques for storage hierarchies", IBM Systems Journal 9(2), 1970 (MIN as a stack algorithm)
 * @see policies/belady/README.md
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
 * @brief Belady's MIN over the tensors of one tier, from the driver's forecasts.
 *
 * Complexity: on_access O(log n); on_insert O(log n) (amortized: the slab grows by
 * doubling, see Note [Intrusive order over a growing slab]); on_erase, on_pin,
 * on_unpin O(log n); propose O(victims). An event without a forecast links the
 * tensor into a second intrusive set, by id (the error path). No hook allocates in a
 * steady state: per-tensor state lives in a slab reused through a free list, found through
 * a detail::id_index, and both sets are intrusive.
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole state (O(n), the sets are relinked).
 *
 * The order and the missing-forecast set are boost::intrusive sets over the slab, grown by
 * policies::detail::grow_intrusive_slab(): see Note [Intrusive order over a growing slab]
 * in policies/detail/intrusive_slab.hpp.
 *
 * @code
 * tierpool::belady_policy min;
 * min.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100, .next_use = 50});
 * min.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100, .next_use = 20});
 * tierpool::eviction_proposal out;
 * min.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{1}}
 * @endcode
 */
class TIERPOOL_EXPORT belady_policy : public policies::detail::flag_pins<belady_policy> {
 public:
  /// @brief Configuration (the policy has no parameters).
  struct config {};

  /// @brief An empty policy.
  belady_policy() noexcept = default;
  /// @brief An empty policy. @param cfg Configuration (empty).
  explicit belady_policy(config cfg) noexcept;
  /// @brief Copy the whole state (the sets are relinked over the copied slab).
  /// @throws std::bad_alloc
  belady_policy(belady_policy const& other);
  /// @brief Move; `other` may only be assigned to or destroyed afterwards.
  belady_policy(belady_policy&& other) noexcept = default;
  /// @brief Copy-assign the whole state. @throws std::bad_alloc (this is then unchanged)
  belady_policy& operator=(belady_policy const& other);
  /// @brief Move-assign; `other` may only be assigned to or destroyed afterwards.
  belady_policy& operator=(belady_policy&& other) noexcept = default;
  ~belady_policy() = default;

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: a tensor became resident, with its forecast (a resident id counts as an
  //   access); `v.next_use` empty records a missing forecast.
  // - on_access: a use: adopt the new forecast, `v.bytes` and `v.pinned`. Unknown id: no-op.
  // - on_erase: forget a tensor. Unknown id: no-op.
  // - on_pin: mark pinned (never proposed). Idempotent; unknown id: no-op.
  // - on_unpin: clear the pin. Idempotent; unknown id: no-op.
  // - propose: append unpinned tensors, furthest next use first, until `req.bytes_needed` is
  //   covered (everything evictable when it cannot be; nothing for 0). Throws
  //   tierpool::logic_error when `req.bytes_needed > 0` and a tracked tensor has no forecast
  //   (the message names it and
  //   says how to give one).
  void on_insert(tensor_view const& v) noexcept;
  void on_access(tensor_view const& v) noexcept;
  void on_erase(tensor_id id) noexcept;
  /// @brief Pinned: out of the order until on_unpin (Note [Pinned tensors leave Belady's
  ///        order], belady_policy.cpp). Idempotent; unknown id: no-op.
  void on_pin(tensor_id id) noexcept;
  /// @brief Back into the order at its forecast. Idempotent; unknown id: no-op.
  void on_unpin(tensor_id id) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief Tracked tensors whose latest event carried no forecast.
  [[nodiscard]] std::size_t missing_forecasts() const noexcept { return missing_.size(); }
  /// @brief Tensors tracked (pinned or not).
  [[nodiscard]] std::size_t size() const noexcept { return index_.size(); }

  /// @brief Check the order and the missing-forecast set against the tensors, the index
  ///        and the slab's free list. O(n); for tests.
  [[nodiscard]] bool validate() const noexcept;

 private:
  friend flag_pins;
  static constexpr std::string_view policy_name = "belady";  // name()
  [[nodiscard]] policies::detail::slab_slot pin_target(tensor_id id) const noexcept { return index_.find(id); }
  struct key {
    tick next;          // forecast; no_next_use (never again) sorts first
    std::uint64_t seq;  // policy event of the last report: ties go to the least recent
    tensor_id id;
    bool operator<(key const& o) const noexcept  // furthest next use first
    {
      if (next != o.next) { return next > o.next; }
      if (seq != o.seq) { return seq < o.seq; }
      return id < o.id;
    }
    bool operator==(key const& o) const noexcept = default;
  };
  using index_t = std::uint32_t;
  static constexpr index_t npos = std::numeric_limits<index_t>::max();
  // The sets' hooks (Note [Intrusive order over a growing slab]).
  struct order_tag;
  struct missing_tag;
  using order_hook = boost::intrusive::set_base_hook<boost::intrusive::tag<order_tag>,
                                                     boost::intrusive::link_mode<boost::intrusive::normal_link>>;
  using missing_hook = boost::intrusive::set_base_hook<boost::intrusive::tag<missing_tag>,
                                                       boost::intrusive::link_mode<boost::intrusive::normal_link>>;
  struct node : order_hook, missing_hook {
    key k{};
    std::size_t bytes{0};
    index_t next{npos};  // free-list link for free slots
    bool pinned{false};
    bool forecast{false};  // false: linked into missing_
    bool live{false};
  };
  using key_of_node = policies::detail::key_member<node, key>;
  struct id_of_node {
    using type = tensor_id;
    tensor_id operator()(node const& n) const noexcept { return n.k.id; }
  };
  using order_set = boost::intrusive::set<node, boost::intrusive::base_hook<order_hook>,
                                          boost::intrusive::key_of_value<key_of_node>>;
  using missing_set = boost::intrusive::set<node, boost::intrusive::base_hook<missing_hook>,
                                            boost::intrusive::key_of_value<id_of_node>>;


  void update(node& n, tensor_view const& v) noexcept;
  void note_forecast(node& n, bool has) noexcept;
  [[nodiscard]] index_t slot_of(node const& n) const noexcept { return policies::detail::slot_of(nodes_, n); }

  config cfg_{};
  std::vector<node> nodes_;           // slab; size() == tracked + free
  index_t free_head_{npos};           // free slots chained through node::next
  tierpool::detail::id_index index_;  // id -> slab position; never iterated
  policies::detail::move_safe_set<order_set> order_;                 // every unpinned tensor, furthest next use first (intrusive)
  policies::detail::move_safe_set<missing_set> missing_;             // tracked tensors without a forecast, by id (intrusive)
  std::uint64_t clock_{0};
};

namespace policies {
/// @brief Register `"belady"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_belady(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::belady_policy>, "belady_policy must satisfy tierpool::eviction_policy");

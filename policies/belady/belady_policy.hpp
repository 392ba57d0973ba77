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
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include <tierpool/export.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

/**
 * @brief Belady's MIN over the tensors of one tier, from the driver's forecasts.
 *
 * Complexity: on_access O(log n), no allocation while forecasts are given (the ordered
 * set's node is extracted and re-inserted); on_insert O(log n), allocates a hash node and a
 * set node; on_erase O(log n); on_pin, on_unpin O(1); propose O(victims + pinned passed).
 * An event without a forecast inserts into a small ordered set of such tensors (the error
 * path).
 * Thread safety: externally synchronized (called under the tier's lock).
 * Ownership: a value; copying copies the whole state.
 *
 * @code
 * tierpool::belady_policy min;
 * min.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100, .next_use = 50});
 * min.on_insert({.id = tierpool::tensor_id{2}, .bytes = 100, .next_use = 20});
 * tierpool::eviction_proposal out;
 * min.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{1}}
 * @endcode
 */
class TIERPOOL_EXPORT belady_policy {
 public:
  /// @brief Configuration (the policy has no parameters).
  struct config {};

  /// @brief An empty policy.
  belady_policy() noexcept = default;
  /// @brief An empty policy. @param cfg Configuration (empty).
  explicit belady_policy(config cfg) noexcept;

  /// @brief A tensor became resident, with its forecast (a resident id counts as an
  ///        access). @param v The tensor; `v.next_use` empty records a missing forecast.
  void on_insert(tensor_view const& v) noexcept;
  /// @brief A use: adopt the new forecast, `v.bytes` and `v.pinned`. Unknown id: no-op.
  void on_access(tensor_view const& v) noexcept;
  /// @brief Forget a tensor. Unknown id: no-op.
  void on_erase(tensor_id id) noexcept;
  /// @brief Mark pinned (never proposed). Idempotent; unknown id: no-op.
  void on_pin(tensor_id id) noexcept;
  /// @brief Clear the pin. Idempotent; unknown id: no-op.
  void on_unpin(tensor_id id) noexcept;

  /**
   * @brief Append unpinned tensors, furthest next use first, until `req.bytes_needed` is
   *        covered (everything evictable when it cannot be; nothing for 0).
   * @param req What to free; only `bytes_needed` is used.
   * @param out Proposal to append to (the caller clears it).
   * @throws tierpool::logic_error when `req.bytes_needed > 0` and a tracked tensor has no
   *         forecast (the message names it and says how to give one)
   * @throws std::bad_alloc only when `out` must grow
   */
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief "belady".
  [[nodiscard]] std::string_view name() const noexcept { return "belady"; }
  /// @brief The configuration.
  [[nodiscard]] config const& get_config() const noexcept { return cfg_; }
  /// @brief Tracked tensors whose latest event carried no forecast.
  [[nodiscard]] std::size_t missing_forecasts() const noexcept { return missing_.size(); }
  /// @brief Tensors tracked (pinned or not).
  [[nodiscard]] std::size_t size() const noexcept { return tensors_.size(); }

  /// @brief Check the order and the missing-forecast set against the tensors. O(n); for tests.
  [[nodiscard]] bool validate() const noexcept;

 private:
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
  struct state {
    key k;
    std::size_t bytes;
    bool pinned;
    bool forecast;
  };

  void update(state& s, tensor_view const& v) noexcept;
  void note_forecast(tensor_id id, bool has) noexcept;

  config cfg_{};
  std::unordered_map<tensor_id, state> tensors_;  // never iterated on a decision path
  std::set<key> order_;                           // every tensor, furthest next use first
  std::set<tensor_id> missing_;                   // tracked tensors without a forecast
  std::uint64_t clock_{0};
};

namespace policies {
/**
 * @brief Register `"belady"` (no parameters). Called by register_builtin_policies().
 * @param registry The registry.
 * @throws tierpool::logic_error if "belady" is already registered
 */
TIERPOOL_EXPORT void register_belady(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::belady_policy>, "belady_policy must satisfy tierpool::eviction_policy");

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file fault_injector.hpp
 * @brief Private: the sim backend's reproducible fault injector and call counters.
 */
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <tierpool/backends/sim_backend.hpp>

#include "util/thread_shard.hpp"

namespace tierpool::detail {

/**
 * @brief Counts fallible calls per kind and decides which fail.
 *
 * Thread safety: every member is safe to call concurrently (one mutex; with no rule
 * installed, check() only counts, in the calling thread's shard, with no lock).
 * Determinism: for a rule with probability p, the decision for its i-th matching call is
 * hash(seed, rule index, i) < p, independent of other rules and of timing.
 */
class fault_injector {
 public:
  /// @brief Validate `opts` (probabilities in [0, 1]); throws tierpool::logic_error otherwise.
  static void validate(sim_fault_options const& opts);

  /// @brief Replace the rules; each rule's match count restarts at 0. Throws like validate().
  void set(sim_fault_options opts);
  /// @brief Remove every rule.
  void clear() noexcept;
  /**
   * @brief Count one call of `kind` and decide whether it fails.
   * @param why When the call must fail, receives a description (may stay unchanged otherwise).
   * @return true when the call must fail with status::injected_fault.
   */
  [[nodiscard]] bool check(sim_call kind, std::string* why) noexcept
  {
    if (!armed_.load(std::memory_order_acquire)) [[likely]] {  // no rule: count only (inline, no lock)
      std::size_t const sh = thread_shard();
      bump(counts_[sh].n[static_cast<std::size_t>(kind)], std::uint64_t{1}, sh);
      return false;
    }
    return check_armed(kind, why);
  }

  /// @brief Counted calls of `kind` (`any`: all kinds).
  [[nodiscard]] std::uint64_t count(sim_call kind) const noexcept;
  /// @brief Zero the per-kind counters.
  void reset_counts() noexcept;
  /// @brief Calls failed so far.
  [[nodiscard]] std::uint64_t injected() const noexcept;

 private:
  /// check() with rules installed (under mtx_).
  [[nodiscard]] bool check_armed(sim_call kind, std::string* why) noexcept;

  struct rule_state {
    sim_fault_rule rule;
    std::uint64_t seen{0};  // matching calls since the rule was installed
  };
  mutable std::mutex mtx_;
  std::uint64_t seed_{0};
  std::vector<rule_state> rules_;
  std::atomic<bool> armed_{false};  // !rules_.empty(), readable without mtx_
  // Calls per kind, counted per thread shard (util/thread_shard.hpp: one writer per shard
  // but the last, so a count is a plain load and store, not a locked add, on every call of
  // the backend); count() sums them less `base_`, the sums at reset_counts() (which never
  // writes a shard, so it cannot lose a concurrent call's count).
  struct alignas(128) count_shard {
    std::array<std::atomic<std::uint64_t>, sim_call_count> n{};
  };
  std::array<count_shard, kShards + 1> counts_{};
  std::array<std::atomic<std::uint64_t>, sim_call_count> base_{};
  [[nodiscard]] std::uint64_t total(std::size_t kind) const noexcept;
  std::uint64_t injected_{0};
};

}  // namespace tierpool::detail

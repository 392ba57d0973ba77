// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file low_memory.hpp
 * @brief Internal: the low-memory callbacks of one pool (pool::add_low_memory_callback),
 *        the last step of the out-of-memory ladder, run with no pool lock held (Note
 *        [Low-memory callbacks run unlocked], core/detail/pool_impl.cpp).
 *
 * Owns: the registered callbacks (a leaf lock) and the count of times they ran. Calls
 * only the callbacks, never while holding its lock.
 */
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <tierpool/pool.hpp>

namespace tierpool::detail {

/// @brief The callbacks. Every member is internally synchronized.
class low_memory_callbacks {
 public:
  /// @brief Register `cb`. @return its id. @throws logic_error for an empty callback
  std::uint64_t add(low_memory_callback cb);
  /// @brief Remove the callback `id` (unknown ids: nothing). A run in progress may still call it.
  void remove(std::uint64_t id);
  /// @brief True when at least one callback is registered (one relaxed load).
  [[nodiscard]] bool any() const noexcept { return count_.load(std::memory_order_relaxed) != 0; }
  /// @brief Call every callback with `ev`, in registration order. Not re-entered: a call
  ///        from inside a callback of this thread runs none.
  /// @return true when any ran. @throws what a callback throws (the rest do not run)
  bool run(low_memory_event const& ev);
  /// @brief Runs so far (pool_stats::low_memory_callbacks).
  [[nodiscard]] std::uint64_t calls() const noexcept { return calls_.load(std::memory_order_relaxed); }

 private:
  std::mutex mtx_;  ///< a leaf lock
  std::vector<std::pair<std::uint64_t, std::shared_ptr<low_memory_callback>>> callbacks_;  ///< under mtx_
  std::uint64_t next_id_{1};                                                               ///< under mtx_
  std::atomic<std::size_t> count_{0};
  std::atomic<std::uint64_t> calls_{0};
};

}  // namespace tierpool::detail

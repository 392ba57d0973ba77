// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file spin_mutex.hpp
 * @brief Internal: tierpool::detail::spin_mutex, a lock for critical sections of a few
 *        dozen instructions that never block inside (the event pool's cache, the virtual
 *        timeline's tables).
 *
 * A std::mutex costs two atomic read-modify-writes and a library call per lock/unlock
 * pair; this costs one exchange to lock and a plain release store to unlock, which a
 * miss-heavy replay (several such locks per request) notices. A waiter spins on a load
 * and yields the processor between attempts, so a preempted holder costs waiters time
 * slices, not a busy core. Not for sections that may wait (a backend synchronize) or run
 * long: use std::mutex there.
 */
#pragma once

#include <atomic>
#include <thread>

namespace tierpool::detail {

/// @brief Test-and-test-and-set lock; meets Lockable (std::lock_guard, std::unique_lock).
///        Not recursive; thread-safe; never throws.
class spin_mutex {
 public:
  spin_mutex() noexcept = default;
  spin_mutex(spin_mutex const&) = delete;
  spin_mutex& operator=(spin_mutex const&) = delete;
  ~spin_mutex() = default;

  /// @brief Take the lock, yielding while another thread holds it.
  void lock() noexcept
  {
    while (busy_.exchange(true, std::memory_order_acquire)) {
      while (busy_.load(std::memory_order_relaxed)) { std::this_thread::yield(); }
    }
  }
  /// @brief Take the lock if it is free. @return true when taken.
  [[nodiscard]] bool try_lock() noexcept
  {
    return !busy_.load(std::memory_order_relaxed) && !busy_.exchange(true, std::memory_order_acquire);
  }
  /// @brief Release the lock (the calling thread holds it).
  void unlock() noexcept { busy_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> busy_{false};
};

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file record_mutex.hpp
 * @brief Internal: tierpool::detail::record_mutex, a one-word blocking lock for tensor
 *        records (Note [A one-word record lock]).
 */
// Note [A one-word record lock]
// -----------------------------
// Rationale: a pool keeps one lock per tensor, and a million-tensor pool (a paged KV
// cache) pays for it a million times: std::mutex is 40 bytes (a pthread mutex), most of a
// cache line of every record. A record lock may be held across a host wait (a copy the
// request depends on), so a spin lock will not do: a waiter must sleep.
// Approach: the classic three-state futex lock (Drepper, "Futexes Are Tricky", mutex 2):
// 0 free, 1 held, 2 held with possible sleepers. lock() is one compare-exchange when free;
// otherwise it spins briefly (a record section is usually short), then marks the word 2
// and sleeps in std::atomic::wait (a futex on Linux for a 4-byte word). unlock() is one
// exchange, and wakes a sleeper only when the word was 2.
// Limitations: not fair (neither is std::mutex); ThreadSanitizer sees the acquire and
// release of the atomic word (happens-before is exact) but not a mutex, so its
// lock-order (deadlock) reports do not cover record locks; record_lock keeps the pool's
// own re-entry check.
#pragma once

#include <atomic>
#include <cstdint>

namespace tierpool::detail {

/// @brief A 4-byte blocking lock; meets Lockable (std::lock_guard, std::unique_lock).
///        Not recursive; thread-safe; never throws.
class record_mutex {
 public:
  record_mutex() noexcept = default;
  record_mutex(record_mutex const&) = delete;
  record_mutex& operator=(record_mutex const&) = delete;
  ~record_mutex() = default;

  /// @brief Take the lock, sleeping while another thread holds it.
  void lock() noexcept
  {
    std::uint32_t c = 0;
    if (word_.compare_exchange_strong(c, 1, std::memory_order_acquire, std::memory_order_relaxed)) [[likely]] {
      return;
    }
    lock_contended(c);
  }
  /// @brief Take the lock if it is free. @return true when taken.
  [[nodiscard]] bool try_lock() noexcept
  {
    std::uint32_t c = 0;
    return word_.load(std::memory_order_relaxed) == 0 &&
           word_.compare_exchange_strong(c, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  /// @brief Release the lock (the calling thread holds it).
  void unlock() noexcept
  {
    if (word_.exchange(0, std::memory_order_release) == 2) [[unlikely]] { word_.notify_one(); }
  }

 private:
  void lock_contended(std::uint32_t c) noexcept
  {
    for (int spin = 0; spin < 100; ++spin) {  // short sections: a few hundred ns of patience
      if (c == 0 && word_.compare_exchange_weak(c, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
        return;
      }
      if (c == 2) { break; }  // others sleep already: join them
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      c = word_.load(std::memory_order_relaxed);
    }
    // Mark "held, with sleepers" and sleep until the holder's unlock; whoever takes the
    // lock from here on leaves the word at 2, so its unlock wakes the next sleeper.
    c = word_.exchange(2, std::memory_order_acquire);
    while (c != 0) {
      word_.wait(2, std::memory_order_relaxed);
      c = word_.exchange(2, std::memory_order_acquire);
    }
  }

  std::atomic<std::uint32_t> word_{0};
};

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file host_faults.hpp
 * @brief Internal: exceptions thrown by host callables (pool::enqueue_host) that no
 *        synchronize() has reported yet, per stream (Note [Exceptions of host callables],
 *        host_faults.cpp).
 *
 * Shared (std::shared_ptr) by the stream registry and every callable still queued: a
 * callable may finish after its stream was destroyed or its pool is gone. Every member is
 * internally synchronized (one leaf mutex); messages are logged with it released.
 */
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include <tierpool/types.hpp>

namespace tierpool::detail {

/// @brief The exceptions of host callables, per stream, until synchronize() reports them.
class host_faults {
 public:
  /// @brief The epoch of `s` for a callable queued on it now (makes `s`'s entry).
  /// @throws std::bad_alloc
  [[nodiscard]] std::uint64_t enlist(stream_handle s);
  /// @brief A callable queued on `s` at `epoch` threw `e`: kept for synchronize(s), or
  ///        logged now when no synchronize can report it (the stream was retired since,
  ///        or the pool closed). Never throws.
  void capture(stream_handle s, std::uint64_t epoch, std::exception_ptr e) noexcept;
  /// @brief The first exception kept for `s` (null: none) and how many more were thrown
  ///        after it; both are cleared.
  [[nodiscard]] std::exception_ptr take(stream_handle s, std::uint64_t& more) noexcept;
  /// @brief `s` is destroyed: log what is kept for it; later exceptions of callables
  ///        queued before are logged as they come.
  void retire(stream_handle s) noexcept;
  /// @brief The pool is gone: log everything kept; later exceptions are logged as they come.
  void close() noexcept;

  /// @brief what() of an exception, or a phrase for one not derived from std::exception.
  [[nodiscard]] static std::string describe(std::exception_ptr const& e);

 private:
  struct entry {
    stream_handle stream{};
    std::uint64_t epoch{0};      ///< bumped by retire(): callables queued before are orphans
    std::exception_ptr first{};  ///< the first exception not reported yet
    std::uint64_t more{0};       ///< exceptions after it, not kept
  };
  /// One message per entry with an exception (with mtx_ released).
  static void log_unreported(std::vector<entry> const& lost, char const* why) noexcept;

  std::mutex mtx_;  // leaf
  std::vector<entry> entries_;              ///< streams that had callables queued
  std::atomic<std::size_t> pending_{0};     ///< entries holding an exception: take() skips the lock at 0
  bool closed_{false};                      ///< under mtx_
};

}  // namespace tierpool::detail

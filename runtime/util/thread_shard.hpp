// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file thread_shard.hpp
 * @brief Internal: the hit path's shards — a small number per thread, so that figures and
 *        buffers written on every acquire have one writer each (no locked instruction).
 */
#pragma once

#include <atomic>
#include <cstddef>

namespace tierpool::detail {

/**
 * @brief Shards of the hit path (Note [The hit path takes no shared lock], copy_engine.cpp in migration/).
 *
 * A thread uses shard thread_shard() (assigned round-robin at its first pool call, so the
 * first kShards threads never share one). Each shard sits on its own 128-byte pair of cache
 * lines (adjacent-line prefetch makes 64 bytes too few).
 */
inline constexpr std::size_t kShards = 16;
/// Shard kShards (the last) is shared by every thread after the first kShards ones; the
/// others have one writer each, so their figures are updated without a locked instruction.
[[nodiscard]] std::size_t assign_thread_shard() noexcept;  // thread_shard.cpp: the next free one
[[nodiscard]] inline std::size_t thread_shard() noexcept
{
  thread_local std::size_t const mine = assign_thread_shard();  // inlined: one TLS load on the hot path
  return mine;
}

/// @brief Add `d` to a figure of shard `shard` (a plain load + store when it has one writer).
template <class T>
inline void bump(std::atomic<T>& c, T d, std::size_t shard) noexcept
{
  if (shard < kShards) [[likely]] {
    c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  } else {
    c.fetch_add(d, std::memory_order_relaxed);
  }
}

}  // namespace tierpool::detail

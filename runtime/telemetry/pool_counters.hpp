// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file pool_counters.hpp
 * @brief Internal: the figures a pool counts as it works (hits, misses, bytes and copies
 *        moved, prefetches, retries), read without locks by pool::stats().
 *
 * Owns: the counters. Written by core and migration with relaxed atomics; the per-shard
 * ones (hits, misses, prefetch hits and late, bytes and copies moved) by one writer each
 * (util/thread_shard.hpp).
 * The per-tier figures live with each tier (tier_state); the tenants' with the tenant ledger.
 */
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "util/thread_shard.hpp"

namespace tierpool::detail {

/// @brief A shard's figures: written by its own threads (relaxed), summed by stats().
struct alignas(128) counter_shard {
  std::atomic<std::uint64_t> hits{0}, misses{0}, prefetch_hits{0}, prefetch_late{0};  // acquires + failures = hits + misses
  std::atomic<std::uint64_t> clock{0};  // backend clock (ticks) as last read by this shard's acquires (Note [Last use], pool_snapshot.cpp)
  // Bytes and copies across the device boundary (h2d, d2h) and between tiers (up, down):
  // counted per copy, on the miss path (four locked adds a copy when they were shared).
  std::atomic<std::uint64_t> bytes_h2d{0}, bytes_d2h{0}, copies_h2d{0}, copies_d2h{0};
  std::atomic<std::uint64_t> bytes_up{0}, bytes_down{0}, copies_up{0}, copies_down{0};
  // Device acquires whose planner step found another thread's step under way and skipped
  // (Note [A planner step never waits for another thread's], pool_impl.cpp).
  std::atomic<std::uint64_t> planner_busy{0};
};
static_assert(sizeof(counter_shard) == 128, "a shard is one 128-byte pair of cache lines");

/// @brief The counted figures of one pool (pool_stats, telemetry.hpp, says what each means).
struct pool_counters {
  std::array<counter_shard, kShards + 1> shards{};  ///< hits, misses, prefetch hits / late, copies
  std::atomic<std::uint64_t> prefetches{0}, prefetch_wasted{0};
  std::atomic<std::uint64_t> prefetch_queued{0}, prefetch_dropped{0};
  std::atomic<std::uint64_t> predicted_prefetches{0};
  std::atomic<std::uint64_t> planned_prefetches{0}, planned_prefetch_bytes{0}, plan_harm_skips{0}, plan_no_room{0};
  std::atomic<std::uint64_t> early_write_backs{0}, early_write_back_bytes{0};
  std::atomic<std::uint64_t> early_write_backs_wasted{0}, early_write_back_wasted_bytes{0};
  // Prefetches used, judged in device time where the backend knows it (virtual clock).
  std::atomic<std::uint64_t> prefetch_on_time_device{0}, prefetch_late_device{0}, prefetch_lateness_ns{0};
  std::atomic<std::uint64_t> prefetch_lead_ns{0};  // on-time prefetches: completion to use, device time
  std::atomic<std::uint64_t> prefetch_wasted_bytes{0};
  std::atomic<std::uint64_t> managed_prefetches{0}, managed_prefetch_bytes{0};
  std::atomic<std::uint64_t> busy_retries{0};
  std::atomic<std::uint64_t> pressure_shrinks{0}, pressure_released_bytes{0};  ///< pool::check_memory_pressure
  std::atomic<std::uint64_t> write_throughs{0}, write_through_bytes{0}, write_through_misses{0};  ///< tensor_options::write_through
  // Eviction actions and recompute (pool_stats::evicted_*, rebuilds, ...).
  std::atomic<std::uint64_t> evicted_dropped{0}, evicted_moved{0}, evicted_compressed{0};
  std::atomic<std::uint64_t> evicted_recompute{0}, evicted_recompute_bytes{0};
  std::atomic<std::uint64_t> rebuilds{0}, rebuild_failures{0}, rebuild_ns{0}, recipes_ended{0};
  std::atomic<std::uint64_t> discards{0}, evicted_discarded{0}, evicted_discarded_bytes{0};  ///< pool::discard
  std::atomic<std::uint64_t> acquire_failures{0};  ///< counted acquires that threw (pool_stats::acquire_failures)
  std::atomic<std::uint64_t> live_tensors{0};
  std::atomic<std::uint64_t> live_tensor_bytes{0};
};

}  // namespace tierpool::detail

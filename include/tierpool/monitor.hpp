// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file monitor.hpp
 * @brief Reading the live figures pools publish (what `tierpool top` shows).
 *
 * Every pool (unless pool_options::publish says otherwise) keeps a small shared-memory
 * segment, `/dev/shm/tierpool.PID.N`, with its pool_stats, refreshed every
 * publish_options::interval_ms and on pool::publish(). Any process of the same machine
 * (or container) may read it: no GPU tool or driver is involved, so it works where
 * nvidia-smi shows nothing. See docs/chapters/monitoring.md.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/export.hpp>
#include <tierpool/telemetry.hpp>

namespace tierpool {

/// @brief A segment that is not a readable tierpool stats segment (missing, too small,
///        another program's, another layout version, or being rewritten for too long).
struct TIERPOOL_EXPORT stats_segment_error : logic_error {
  using logic_error::logic_error;
};

/// @brief One pool's published figures, as a reader sees them.
struct published_pool {
  std::string segment;           ///< segment name (under /dev/shm), e.g. "tierpool.4242.1"
  std::int64_t pid{0};           ///< the process that owns the pool
  bool alive{false};             ///< that process still runs (else the segment is stale)
  std::string name;              ///< publish_options::name, or the program's name
  std::string backend;           ///< "sim" or "cuda"
  std::string device;            ///< backend_caps::device_name
  std::uint32_t interval_ms{0};  ///< the pool's refresh period (0: only on pool::publish())
  std::uint64_t updates{0};      ///< copies written so far
  double uptime_seconds{0.0};    ///< pool age at the last update
  double age_seconds{0.0};       ///< time since the last update (reader's clock)
  std::uint32_t tier_count{0};   ///< tiers in the pool (stats.tiers holds at most 16)
  std::uint32_t tenant_count{0}; ///< tenants in the pool (stats.tenants holds at most 16)
  pool_stats stats;              ///< the figures at the last update
};

/// @brief What scan_published_pools() found.
struct published_scan {
  std::vector<published_pool> pools;  ///< readable segments, by pid then name
  std::vector<std::string> skipped;   ///< "segment: why" for each one that could not be read
};

/**
 * @brief Read one segment.
 * @param segment Its name under /dev/shm ("tierpool.PID.N").
 * @return Its figures.
 * @throws stats_segment_error when it is missing or not a readable tierpool stats segment.
 * Thread-safe; never blocks the writer.
 */
[[nodiscard]] TIERPOOL_EXPORT published_pool read_published_pool(std::string const& segment);

/**
 * @brief Read every segment under /dev/shm.
 * @param include_exited Also return segments whose process has exited (left by a crash).
 * @return The pools, and the segments that could not be read with why.
 */
[[nodiscard]] TIERPOOL_EXPORT published_scan scan_published_pools(bool include_exited = false);

/**
 * @brief Remove the segments of processes that have exited (a crashed program leaves its
 *        segment behind; a pool removes its own when it closes).
 * @return The names removed.
 */
TIERPOOL_EXPORT std::vector<std::string> remove_exited_pools();

/**
 * @brief A pool's figures as JSON (the same document as pool::summary_json() without
 *        "backend").
 * @param stats The figures.
 * @return Compact JSON text.
 */
[[nodiscard]] TIERPOOL_EXPORT std::string to_json(pool_stats const& stats);

}  // namespace tierpool

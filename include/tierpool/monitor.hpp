// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file monitor.hpp
 * @brief Reading the live figures pools publish (what `tierpool top` shows).
 *
 * Every pool (unless pool_options::publish says otherwise) keeps a small shared-memory
 * segment, `/dev/shm/tierpool.PID.N`, with its pool_stats, refreshed every
 * publish_options::interval_ms and on pool::publish(). Processes of the same machine (or
 * container) that may read it — its owner's, root's, and with publish_options::group that
 * group's — can: no GPU tool or driver is involved, so it works where nvidia-smi shows
 * nothing. See docs/chapters/monitoring.md.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/export.hpp>
#include <tierpool/telemetry.hpp>

namespace tierpool {

/// @brief A segment that is not a readable tierpool stats segment (missing, not a regular
///        file, not permitted, too small, another program's, another layout version, or
///        being rewritten for too long).
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
  /// What the reader corrected in what the segment said ("stall_seconds was NaN; shown
  /// as 0"); empty for a segment a pool wrote. Text fields are always made printable:
  /// control characters and bytes that are not UTF-8 appear as `\xNN` (a newline as `\n`).
  std::vector<std::string> problems;
};

/// @brief What scan_published_pools() found.
struct published_scan {
  std::vector<published_pool> pools;  ///< readable segments, by pid then name
  std::vector<std::string> skipped;   ///< "segment: why" for each one that could not be read
};

/// @brief The directory segments are made and looked for in: `/dev/shm` unless
///        set_stats_segment_directory() changed it.
[[nodiscard]] TIERPOOL_EXPORT std::string stats_segment_directory();

/**
 * @brief Make this process's pools and readers use `dir` instead of `/dev/shm` (tests;
 *        `tierpool top --shm-dir`, e.g. a container's /dev/shm seen from the host).
 * @param dir A directory; empty restores `/dev/shm`.
 * Pools made before keep the segment they have. Thread-safe.
 */
TIERPOOL_EXPORT void set_stats_segment_directory(std::string const& dir);

/**
 * @brief Read one segment.
 * @param segment Its name under /dev/shm ("tierpool.PID.N").
 * @return Its figures.
 * @throws stats_segment_error when it is missing or not a readable tierpool stats segment:
 *         not named like one, not a regular file (a FIFO, a link: never opened, so never
 *         waited on), not permitted to read (the message says so, with its mode and
 *         owner), too small, another program's, another layout version, or stuck mid-write.
 * Thread-safe; never blocks, neither the writer nor the caller.
 */
[[nodiscard]] TIERPOOL_EXPORT published_pool read_published_pool(std::string const& segment);

/**
 * @brief Read every segment under /dev/shm.
 * @param include_exited Also return segments whose process has exited (left by a crash).
 * @return The pools, and the segments that could not be read with why.
 */
[[nodiscard]] TIERPOOL_EXPORT published_scan scan_published_pools(bool include_exited = false);

/// @brief What clean_exited_pools() did.
struct published_cleanup {
  std::vector<std::string> removed;  ///< the segments removed
  std::vector<std::string> failed;   ///< "segment: why" for each stale one that could not be (another user's)
};

/**
 * @brief Remove the segments of processes that have exited (a crashed program leaves its
 *        segment behind; a pool removes its own when it closes).
 * @return The names removed, and those that could not be with why (in /dev/shm, which is
 *         sticky, only a segment's owner or root may remove it).
 */
[[nodiscard]] TIERPOOL_EXPORT published_cleanup clean_exited_pools();

/// @brief clean_exited_pools().removed.
TIERPOOL_EXPORT std::vector<std::string> remove_exited_pools();

/**
 * @brief A pool's figures as JSON (the same document as pool::summary_json() without
 *        "backend").
 * @param stats The figures.
 * @return Compact JSON text.
 */
[[nodiscard]] TIERPOOL_EXPORT std::string to_json(pool_stats const& stats);

}  // namespace tierpool

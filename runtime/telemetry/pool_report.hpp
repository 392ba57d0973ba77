// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file pool_report.hpp
 * @brief Internal: the text and JSON forms of a pool's figures (pool::summary(),
 *        pool::summary_json(), tierpool::to_json(pool_stats)): pure functions of pool_stats.
 */
#pragma once

#include <string>
#include <string_view>

#include <tierpool/telemetry.hpp>

namespace tierpool::detail {

/// @brief The summary table: one line per tier, then the pool's counters and tenants.
[[nodiscard]] std::string format_summary(pool_stats const& st, std::string_view backend);
/// @brief The JSON object of `st` with the backend's name first ("backend").
[[nodiscard]] std::string format_summary_json(pool_stats const& st, std::string_view backend);

}  // namespace tierpool::detail

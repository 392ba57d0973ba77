// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file parse.hpp
 * @brief Byte sizes as text: parsing ("512MiB", "2GiB", "1.5GB") for options and
 *        environment variables (`TIERPOOL_DEVICE_BYTES`), and formatting for reports.
 *
 * Not API: used by the pool, the CLI and tests; may change without notice.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <tierpool/export.hpp>

namespace tierpool::detail {

/**
 * @brief Parse a byte size.
 *
 * Grammar: blanks, a decimal number (digits, optionally `.` and up to 6 fraction digits),
 * optional blanks, an optional unit, blanks. Units (case-insensitive): `B`; binary `K`,
 * `KiB`, `M`, `MiB`, `G`, `GiB`, `T`, `TiB` (powers of 1024); decimal `KB`, `MB`, `GB`,
 * `TB` (powers of 1000). A fractional result is rounded down to whole bytes.
 *
 * @param text The text, e.g. "512MiB", "2 GiB", "1.5GB", "4096".
 * @return The size in bytes.
 * @throws tierpool::logic_error if the text is empty, malformed, has an unknown unit, or
 *         the value does not fit in std::size_t; the message quotes the text and lists the
 *         accepted units.
 * Thread safety: reentrant.
 */
[[nodiscard]] TIERPOOL_EXPORT std::size_t parse_byte_size(std::string_view text);

/**
 * @brief Format a byte count for people: "512 B", "1.5 KiB", "16.0 GiB" (binary units,
 *        one decimal above bytes).
 * @param bytes The count.
 * @return The text.
 * Thread safety: reentrant.
 */
[[nodiscard]] TIERPOOL_EXPORT std::string format_byte_size(std::uint64_t bytes);

}  // namespace tierpool::detail

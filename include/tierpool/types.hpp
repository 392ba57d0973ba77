// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file types.hpp
 * @brief Strong identifier and handle types, the logical clock, and byte literals.
 *
 * Streams and events cross the API as opaque handles so that no public header needs a
 * CUDA header: a CPU-only consumer compiles against them unchanged.
 */
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>

namespace tierpool {

/// @brief Identifies a tensor inside one pool. Never reused while the pool lives.
enum class tensor_id : std::uint64_t {};

/// @brief Index of a tier in a pool's tier list (0 = fastest).
enum class tier_id : std::uint32_t {};

/// @brief Logical time in nanoseconds of the backend clock (virtual on a virtual-clock
///        sim backend, steady_clock otherwise). Never wall-clock time of day.
using tick = std::uint64_t;

/**
 * @brief Opaque stream handle. The value 0 is the backend's default stream, which always
 *        exists. For the CUDA backend a non-zero value is a `cudaStream_t`.
 */
struct stream_handle {
  std::uintptr_t value{0};  ///< the backend's stream (0: the default stream)

  /// @brief True for the default stream.
  [[nodiscard]] constexpr bool is_default() const noexcept { return value == 0; }
  /// @brief Handles compare by value.
  friend constexpr auto operator<=>(stream_handle, stream_handle) noexcept = default;
};

/// @brief Opaque event handle. 0 is "no event". For the CUDA backend a `cudaEvent_t`.
struct event_handle {
  std::uintptr_t value{0};  ///< the backend's event (0: none)

  /// @brief True when the handle refers to an event.
  [[nodiscard]] constexpr explicit operator bool() const noexcept { return value != 0; }
  /// @brief Handles compare by value.
  friend constexpr auto operator<=>(event_handle, event_handle) noexcept = default;
};

/// @brief Byte-size literals: `64_MiB`, `2_GiB`.
inline namespace literals {
/// @brief `v` KiB in bytes.
constexpr std::size_t operator""_KiB(unsigned long long v) noexcept { return static_cast<std::size_t>(v) << 10U; }
/// @brief `v` MiB in bytes.
constexpr std::size_t operator""_MiB(unsigned long long v) noexcept { return static_cast<std::size_t>(v) << 20U; }
/// @brief `v` GiB in bytes.
constexpr std::size_t operator""_GiB(unsigned long long v) noexcept { return static_cast<std::size_t>(v) << 30U; }
}  // namespace literals

}  // namespace tierpool

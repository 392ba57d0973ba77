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
#include <iosfwd>
#include <string>
#if __has_include(<version>)
#include <version>
#endif
#if defined(__cpp_lib_format)
#include <format>
#endif

namespace tierpool {

/// @brief Identifies a tensor inside one pool. Never reused while the pool lives.
enum class tensor_id : std::uint64_t {};

/// @brief Index of a tier in a pool's tier list (0 = fastest).
enum class tier_id : std::uint32_t {};

// -- printing ids --
/// @brief The id's number in decimal ("42"), as the pool's messages and snapshots name it.
[[nodiscard]] inline std::string to_string(tensor_id id) { return std::to_string(static_cast<std::uint64_t>(id)); }
/// @brief The tier's index in decimal ("0" for the fastest tier).
[[nodiscard]] inline std::string to_string(tier_id id) { return std::to_string(static_cast<std::uint32_t>(id)); }
/// @brief Write the id's number (as to_string). Needs `<ostream>` where it is used.
template <class CharT, class Traits>
std::basic_ostream<CharT, Traits>& operator<<(std::basic_ostream<CharT, Traits>& os, tensor_id id)
{
  return os << static_cast<std::uint64_t>(id);
}
/// @brief Write the tier's index (as to_string). Needs `<ostream>` where it is used.
template <class CharT, class Traits>
std::basic_ostream<CharT, Traits>& operator<<(std::basic_ostream<CharT, Traits>& os, tier_id id)
{
  return os << static_cast<std::uint32_t>(id);
}

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

#if defined(__cpp_lib_format)
// std::format("{}", id) where the standard library has <format> (GCC 13, not GCC 12): the
// number, with the integer format specs ("{:>6}"). Elsewhere use to_string or operator<<.
namespace std {
template <class CharT>
struct formatter<tierpool::tensor_id, CharT> : formatter<std::uint64_t, CharT> {
  template <class FormatContext>
  auto format(tierpool::tensor_id id, FormatContext& ctx) const
  {
    return formatter<std::uint64_t, CharT>::format(static_cast<std::uint64_t>(id), ctx);
  }
};
template <class CharT>
struct formatter<tierpool::tier_id, CharT> : formatter<std::uint32_t, CharT> {
  template <class FormatContext>
  auto format(tierpool::tier_id id, FormatContext& ctx) const
  {
    return formatter<std::uint32_t, CharT>::format(static_cast<std::uint32_t>(id), ctx);
  }
};
}  // namespace std
#endif

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// checked_options.hpp — numeric command-line options with a range, shared by the
// `tierpool` commands. Boost.ProgramOptions reads "-1" into an unsigned option as 2^32 - 1
// (lexical_cast wraps), so such options are declared as text (po::value<std::string>) and
// converted here: a sign, a fraction, trailing text or a value outside [lo, hi] is refused
// with a message naming the option and its valid range, e.g.
//
//   --runs must be an integer in 1..1000, got '-1'
//
// The error is a tierpool::logic_error: main() prints "tierpool: error: ..." and exits 2.
#pragma once

#include <tierpool/error.hpp>

#include <charconv>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace tierpool::cli {

/**
 * @brief `text` as an integer of type T in [lo, hi].
 * @param option The option's name as the user types it ("--runs").
 * @param text   What was given.
 * @throws tierpool::logic_error naming the option, the range and the text
 */
template <std::integral T>
[[nodiscard]] T parse_checked(std::string_view option, std::string_view text, T lo, T hi)
{
  auto const fail = [&]() -> T {
    throw logic_error(std::string(option) + " must be an integer in " + std::to_string(lo) + ".." +
                      std::to_string(hi) + ", got '" + std::string(text) + "'");
  };
  std::string_view t = text;
  if (!t.empty() && t.front() == '+') { t.remove_prefix(1); }  // "+3" is 3; "+-3" stays refused
  if (t.empty() || t.front() == '+' || (std::unsigned_integral<T> && t.front() == '-')) { return fail(); }
  T v{};
  auto const r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc{} || r.ptr != t.data() + t.size() || v < lo || v > hi) { return fail(); }
  return v;
}

}  // namespace tierpool::cli

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// parse.cpp — owns the byte-size text format of include/tierpool/detail/parse.hpp:
// parse_byte_size() (options, TIERPOOL_DEVICE_BYTES) and format_byte_size() (reports).
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>

#include <array>
#include <cctype>
#include <cstdio>
#include <limits>
#include <string>

namespace tierpool::detail {
namespace {

struct unit {
  std::string_view name;
  std::uint64_t multiplier;
};

constexpr std::uint64_t kKi = 1024;
constexpr std::uint64_t kK = 1000;
constexpr std::array<unit, 13> kUnits{{
  {"b", 1},
  {"k", kKi}, {"kib", kKi}, {"kb", kK},
  {"m", kKi * kKi}, {"mib", kKi * kKi}, {"mb", kK * kK},
  {"g", kKi * kKi * kKi}, {"gib", kKi * kKi * kKi}, {"gb", kK * kK * kK},
  {"t", kKi * kKi * kKi * kKi}, {"tib", kKi * kKi * kKi * kKi}, {"tb", kK * kK * kK * kK},
}};
// Fraction digits are capped so that fraction * multiplier (< 1e6 * 2^40) fits in 64 bits.
constexpr std::size_t kMaxFractionDigits = 6;

[[noreturn]] void bad(std::string_view text, char const* why)
{
  throw logic_error("invalid byte size '" + std::string(text) + "': " + why +
                    " (expected a number with an optional unit B, KiB, MiB, GiB, TiB, K, M, G, T, KB, MB, GB or TB,"
                    " e.g. 512MiB or 2GiB)");
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::size_t parse_byte_size(std::string_view text)
{
  std::size_t i = 0;
  std::size_t const n = text.size();
  while (i < n && is_blank(text[i])) { ++i; }
  if (i == n || !is_digit(text[i])) { bad(text, "it does not start with a digit"); }

  std::uint64_t whole = 0;
  for (; i < n && is_digit(text[i]); ++i) {
    auto const d = static_cast<std::uint64_t>(text[i] - '0');
    if (whole > (std::numeric_limits<std::uint64_t>::max() - d) / 10) { bad(text, "the value is too large"); }
    whole = whole * 10 + d;
  }
  std::uint64_t fraction = 0;
  std::uint64_t fraction_scale = 1;
  if (i < n && text[i] == '.') {
    ++i;
    std::size_t digits = 0;
    for (; i < n && is_digit(text[i]); ++i, ++digits) {
      if (digits >= kMaxFractionDigits) { bad(text, "too many fraction digits (at most 6)"); }
      fraction = fraction * 10 + static_cast<std::uint64_t>(text[i] - '0');
      fraction_scale *= 10;
    }
    if (digits == 0) { bad(text, "a '.' must be followed by digits"); }
  }
  while (i < n && is_blank(text[i])) { ++i; }
  std::string suffix;
  for (; i < n && !is_blank(text[i]); ++i) {
    suffix.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))));
  }
  while (i < n && is_blank(text[i])) { ++i; }
  if (i != n) { bad(text, "unexpected text after the unit"); }

  std::uint64_t multiplier = 1;
  if (!suffix.empty()) {
    bool found = false;
    for (auto const& u : kUnits) {
      if (u.name == suffix) {
        multiplier = u.multiplier;
        found = true;
        break;
      }
    }
    if (!found) { bad(text, "unknown unit"); }
  }
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(whole, multiplier, &bytes)) { bad(text, "the value is too large"); }
  std::uint64_t const extra = fraction * multiplier / fraction_scale;
  if (__builtin_add_overflow(bytes, extra, &bytes)) { bad(text, "the value is too large"); }
  if (bytes > std::numeric_limits<std::size_t>::max()) { bad(text, "the value is too large"); }
  return static_cast<std::size_t>(bytes);
}

std::string format_byte_size(std::uint64_t bytes)
{
  static constexpr std::array<char const*, 5> names{"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < kKi) { return std::to_string(bytes) + " B"; }
  std::size_t u = 0;
  auto value = static_cast<double>(bytes);
  while (value >= 1024.0 && u + 1 < names.size()) {
    value /= 1024.0;
    ++u;
  }
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.1f %s", value, names[u]);
  return buf.data();
}

}  // namespace tierpool::detail

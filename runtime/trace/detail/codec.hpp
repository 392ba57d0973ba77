// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// codec.hpp — encoders of the native encodings and the reader factories behind
// open_reader(). Not API. The encodings themselves are specified in docs/chapters/traces.md.
#pragma once

#include "trace/detail/byte_source.hpp"

#include <tierpool/trace.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tierpool::trace::detail {

// ---- text ----------------------------------------------------------------------------

/// The first line of every native text trace.
inline constexpr std::string_view kTextHeader = "# tierpool-trace v1";
/// What the text header starts with, whatever its version.
inline constexpr std::string_view kTextHeaderPrefix = "# tierpool-trace v";
/// Longest line a text or csv reader accepts; protects against a binary file read as text.
/// Holds the longest name (kMaxNameBytes) even when every byte is escaped as \xHH.
inline constexpr std::size_t kMaxLineBytes = std::size_t{8} << 20U;

/// Append the text encoding of `e` (no newline) to `out`.
void append_text(std::string& out, event const& e);

// ---- binary --------------------------------------------------------------------------
//
// header : "TPTRACE\0"  u32 version (LE)  u32 flags (LE, 0)                     16 bytes
// record : tag  [time: zigzag varint delta]  main fields  [stream varint]  [extras]
// tag    : bits 0-2 kind, bits 3-4 mode, bit 5 has time, bit 6 has stream, bit 7 has extras

inline constexpr std::string_view kBinaryMagic{"TPTRACE\0", 8};
inline constexpr std::size_t kBinaryHeaderBytes = 16;
/// Longest name a binary record may carry (a corrupt length must not allocate gigabytes).
inline constexpr std::uint64_t kMaxNameBytes = std::uint64_t{1} << 20U;

inline constexpr unsigned kTagKindMask = 0x07U;
inline constexpr unsigned kTagModeShift = 3U;
inline constexpr unsigned kTagModeMask = 0x18U;
inline constexpr unsigned kTagHasTime = 0x20U;
inline constexpr unsigned kTagHasStream = 0x40U;
inline constexpr unsigned kTagHasExtras = 0x80U;

// Extras mask bits (varint), values follow in this order.
inline constexpr unsigned kExtraTier = 0x01U;
inline constexpr unsigned kExtraTensor = 0x02U;
inline constexpr unsigned kExtraBytes = 0x04U;
inline constexpr unsigned kExtraDuration = 0x08U;
inline constexpr unsigned kExtraName = 0x10U;
/// event::hints (allocate only), one byte: the bit was spare in the first release of
/// version 1, whose readers reject it as an unknown extra-field bit. A file without hints
/// never sets it, so such files are byte-identical to those of that release.
inline constexpr unsigned kExtraHints = 0x20U;
inline constexpr unsigned kExtraKnown = 0x3FU;

/// The 16-byte binary header.
void append_binary_header(std::string& out);
/// Append the binary record of `e`; `prev_time` is the delta base, updated when `e` has a time.
void append_binary(std::string& out, event const& e, std::uint64_t& prev_time);

/// Append `v` as a LEB128 varint.
inline void append_varint(std::string& out, std::uint64_t v)
{
  while (v >= 0x80U) {
    out.push_back(static_cast<char>((v & 0x7FU) | 0x80U));
    v >>= 7U;
  }
  out.push_back(static_cast<char>(v));
}

// ---- reader factories ----------------------------------------------------------------

[[nodiscard]] std::unique_ptr<reader> make_text_reader(byte_source src);
[[nodiscard]] std::unique_ptr<reader> make_binary_reader(byte_source src);
[[nodiscard]] std::unique_ptr<reader> make_oracle_general_reader(byte_source src);
[[nodiscard]] std::unique_ptr<reader> make_csv_reader(byte_source src, csv_options const& options);

/// Keyword of an access mode in the text encoding: "read", "rw", "wd".
[[nodiscard]] std::string_view mode_keyword(access_kind m) noexcept;

/// Reset every field of `e` to its default, keeping the name's capacity.
inline void reset_event(event& e) noexcept
{
  e.kind = event_kind::access;
  e.mode = access_kind::read;
  e.stream = 0;
  e.tier = no_tier;
  e.tensor = 0;
  e.bytes = 0;
  e.time_ns = 0;
  e.duration_ns = 0;
  e.hints = 0;
  if (!e.name.empty()) { e.name.clear(); }
}

/// Why `e.hints` is invalid (a hint on another kind than allocate, an unknown bit,
/// recomputable without a duration, lossy with no-compress), or empty when it is valid.
[[nodiscard]] std::string_view hints_problem(event const& e) noexcept;

/// The text names of the hint bits, in the order the writer lists them.
struct hint_name {
  std::string_view word;
  std::uint8_t bit;
};
inline constexpr hint_name kHintNames[] = {
  {"recompute", hint_recomputable},
  {"lossy", hint_lossy_ok},
  {"nocompress", hint_no_compress},
};

}  // namespace tierpool::trace::detail

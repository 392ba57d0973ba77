// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// frame.hpp — the header every codec frame starts with, and the per-codec halves of
// compress / decompress (lossless.cpp, q8_block.cpp) that codec.cpp dispatches to.
//
// Note [Codec frames]
// ~~~~~~~~~~~~~~~~~~~
// A compressed tensor may sit in a lower tier for a long time, and the bytes that come back
// from a file or another process are not to be trusted. So every frame says what it is:
//
//   offset  bytes  field
//   0       4      magic "TPCF"
//   4       1      version (1)
//   5       1      codec (codec_kind)
//   6       2      reserved, 0
//   8       4      q8: values per block; 0 for other codecs
//   12      4      reserved, 0
//   16      8      the original byte count
//
// (integers little-endian, as the machines tierpool runs on are.) decompress() checks the
// header against what it was asked for before it touches the payload: a buffer from
// another codec or of another size is refused with a typed error instead of being
// decoded into an output of the wrong size. The lossless payloads carry their library's
// own content checksum (codec_params::checksum), so a flipped bit is found, not returned.
#pragma once

#include <tierpool/codec.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tierpool::codec_detail {

inline constexpr std::uint8_t frame_version = 1;

struct frame_header {
  codec_kind kind{codec_kind::none};
  std::uint32_t q8_block{0};
  std::uint64_t original_bytes{0};
};

void write_header(std::span<std::byte> out, frame_header const& h) noexcept;
// The header of `frame`; throws codec_error (truncated, bad_header) when it is not one.
[[nodiscard]] frame_header read_header(std::span<std::byte const> frame);

[[noreturn]] void fail(codec_failure f, std::string const& what);

// Payload bounds and coders. `out` / `in` exclude the header.
[[nodiscard]] std::size_t lz4_bound(std::size_t bytes, codec_params const& p);
[[nodiscard]] std::size_t lz4_compress(std::span<std::byte const> in, std::span<std::byte> out, codec_params const& p);
void lz4_decompress(std::span<std::byte const> in, std::span<std::byte> out);

[[nodiscard]] std::size_t zstd_bound(std::size_t bytes);
[[nodiscard]] std::size_t zstd_compress(std::span<std::byte const> in, std::span<std::byte> out, codec_params const& p);
void zstd_decompress(std::span<std::byte const> in, std::span<std::byte> out);

[[nodiscard]] std::size_t q8_payload_bytes(std::size_t bytes, std::uint32_t block) noexcept;
[[nodiscard]] std::size_t q8_compress(std::span<std::byte const> in, std::span<std::byte> out, std::uint32_t block);
void q8_decompress(std::span<std::byte const> in, std::span<std::byte> out, std::uint32_t block);

}  // namespace tierpool::codec_detail

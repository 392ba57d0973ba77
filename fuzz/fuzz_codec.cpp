// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// fuzz_codec.cpp — libFuzzer target for the codecs (include/tierpool/codec.hpp). The
// properties, for any input:
//
//   1. decompress() of any bytes, into any output size, returns or throws
//      tierpool::codec_error; nothing else escapes, nothing crashes, nothing is written
//      outside the output (ASan + UBSan; guard bytes around the output).
//   2. Lossless codecs round-trip every byte of the input.
//   3. A lossless frame (checksums on) with one byte changed or cut short either throws
//      codec_error or decodes to the original bytes: never to wrong bytes.
//
// The first byte picks the codec and the mode; two more pick a position and a mask.
#include <tierpool/codec.hpp>
#include <tierpool/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <cstdio>
#include <vector>

namespace {

constexpr std::size_t kGuard = 32;
constexpr std::size_t kMaxOut = std::size_t{1} << 20U;
std::string last_error;  // the last decode's error, printed when a property fails

[[noreturn]] void fail(char const* property)
{
  std::fprintf(stderr, "fuzz_codec: %s (last error: %s)\n", property, last_error.c_str());
  std::abort();
}

// Decode into an output of `n` bytes between guards; true when it decoded.
bool decode_guarded(tierpool::codec_kind k, std::span<std::byte const> frame, std::size_t n, std::vector<std::byte>& out)
{
  std::vector<std::byte> buf(n + 2 * kGuard, std::byte{0x5A});
  bool ok = true;
  try {
    tierpool::decompress(k, frame, std::span(buf).subspan(kGuard, n));
  } catch (tierpool::codec_error const& e) {
    last_error = e.what();
    ok = false;
  }
  for (std::size_t i = 0; i < kGuard; ++i) {
    if (buf[i] != std::byte{0x5A} || buf[kGuard + n + i] != std::byte{0x5A}) { std::abort(); }
  }
  out.assign(buf.begin() + kGuard, buf.begin() + static_cast<std::ptrdiff_t>(kGuard + n));
  return ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  if (size < 3) { return 0; }
  auto const sel = data[0];
  std::size_t const pos = static_cast<std::size_t>(data[1]) | (static_cast<std::size_t>(data[2]) << 8U);
  std::span<std::byte const> const body(reinterpret_cast<std::byte const*>(data) + 3, size - 3);
  auto const kind = static_cast<tierpool::codec_kind>(sel & 3U);
  std::vector<std::byte> out;

  if ((sel & 4U) != 0U) {
    // 1. The body as a frame, into the size its header claims (capped) or a size of the input's choosing.
    std::size_t n = pos % 4096;
    if ((sel & 8U) != 0U) {
      try {
        n = tierpool::decompressed_size(body);
      } catch (tierpool::codec_error const&) {
        return 0;
      }
      if (n > kMaxOut) { return 0; }
    }
    (void)decode_guarded(kind, body, n, out);
    return 0;
  }

  // 2. Compress the body, then decode it whole, changed in one byte, and cut short.
  tierpool::codec_params p;
  p.q8_block = 8U << ((sel >> 4U) & 7U);  // 8 .. 1024
  p.zstd_level = (sel & 0x80U) != 0U ? -3 : 3;
  p.lz4_high = (sel & 0x40U) != 0U;
  std::vector<std::byte> frame(tierpool::max_compressed_size(kind, body.size(), p));
  try {
    frame.resize(tierpool::compress(kind, body, frame, p));
  } catch (tierpool::codec_error const&) {
    if (kind != tierpool::codec_kind::q8_block) { fail("a lossless codec refused its input"); }
    return 0;
  }
  if (!decode_guarded(kind, frame, body.size(), out)) { fail("a frame compress() wrote did not decode"); }
  bool const lossless = tierpool::is_lossless(kind);
  if (lossless && !std::equal(out.begin(), out.end(), body.begin())) { fail("a lossless round trip changed bytes"); }

  std::vector<std::byte> changed = frame;
  changed[pos % changed.size()] ^= std::byte{static_cast<unsigned char>(size > 3 ? data[3] | 1U : 1U)};
  if (decode_guarded(kind, changed, body.size(), out) && kind != tierpool::codec_kind::none && lossless &&
      !std::equal(out.begin(), out.end(), body.begin())) {
    fail("a changed byte decoded to wrong bytes without an error");
  }
  std::span<std::byte const> const cut = std::span<std::byte const>(frame).first(pos % frame.size());
  if (decode_guarded(kind, cut, body.size(), out)) { fail("a proper prefix of a frame decoded"); }
  return 0;
}

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// q8_block.cpp — the lossy codec: float32 values as int8 codes, one absmax scale per block.
//
// Note [q8 block quantization]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The values are cut into blocks of codec_params::q8_block (the last may be shorter). For a
// block whose largest magnitude is `a`, scale = a / 127 and each value x is stored as
// code = round(x / scale) in -127..127 (-128 is never written); it decodes to code * scale.
// The error of every value is therefore at most scale / 2 = a / 254, plus float rounding
// (x * (1 / scale) and code * scale each round once): |error| <= a / 254 + a * 2^-22. A block
// of small values keeps small errors, whatever the rest of the tensor holds. The scale is
// rounded down, so 127 * scale <= a: a block near FLT_MAX does not decode to infinity. The
// payload is every block's scale (float32), then every code (int8): 4 / (1 + 4 / block)
// times smaller than the input (3.94x for 256-value blocks).
//
// NaN and infinity have no code, and a tensor that holds one has a bug or an overflow the
// user wants to see, not a silently finite copy. So compress() refuses such input with
// codec_failure::non_finite, naming the first such value; the pool then keeps the tensor
// raw or uses a lossless codec. decompress() likewise refuses a frame whose scales are not
// finite and non-negative (codec_failure::corrupt). A block whose absmax is 0 (all zeros,
// the common case after ReLU) has scale 0 and decodes to exact zeros; a block so small that
// 127 / a overflows is divided instead of multiplied.
//
// q8 frames carry no checksum: a flipped code decodes to a value inside its block's range.
// The header and the exact payload size are checked.
#include "codec/frame.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace tierpool::codec_detail {
namespace {

std::size_t block_count(std::size_t values, std::uint32_t block) noexcept { return (values + block - 1) / block; }

float load(std::byte const* p) noexcept
{
  float v = 0.0F;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

std::size_t q8_payload_bytes(std::size_t bytes, std::uint32_t block) noexcept
{
  std::size_t const values = (bytes + sizeof(float) - 1) / sizeof(float);
  return block_count(values, block) * sizeof(float) + values;
}

std::size_t q8_compress(std::span<std::byte const> in, std::span<std::byte> out, std::uint32_t block)
{
  if (in.size() % sizeof(float) != 0) {
    fail(codec_failure::not_float32,
         "codec q8: " + std::to_string(in.size()) + " bytes are not a whole number of float32 values");
  }
  std::size_t const n = in.size() / sizeof(float);
  std::size_t const blocks = block_count(n, block);
  std::byte* const scales = out.data();
  auto* const codes = reinterpret_cast<std::int8_t*>(out.data() + blocks * sizeof(float));
  for (std::size_t b = 0; b < blocks; ++b) {
    std::size_t const first = b * block;
    std::size_t const len = std::min<std::size_t>(block, n - first);
    std::byte const* const values = in.data() + first * sizeof(float);  // maybe unaligned: load()
    // The largest magnitude as the largest bit pattern without its sign: for finite floats
    // the order of the patterns is the order of the values, and NaN and infinity lie above
    // every finite one. An integer max vectorizes; a float max may not (NaN).
    std::uint32_t max_bits = 0;
    for (std::size_t i = 0; i < len; ++i) {
      std::uint32_t u = 0;
      std::memcpy(&u, values + i * sizeof(float), sizeof(u));
      max_bits = std::max(max_bits, u & 0x7FFFFFFFU);
    }
    float absmax = 0.0F;
    std::memcpy(&absmax, &max_bits, sizeof(absmax));
    if (max_bits >= 0x7F800000U) {
      std::size_t i = 0;
      while (std::isfinite(load(values + i * sizeof(float)))) { ++i; }
      fail(codec_failure::non_finite, "codec q8: value " + std::to_string(first + i) + " is " +
                                        (std::isnan(load(values + i * sizeof(float))) ? "NaN" : "infinite") +
                                        " (q8 quantizes finite values only)");
    }
    // Rounded down, so that 127 * scale never exceeds absmax (nor overflows to infinity
    // when absmax is near FLT_MAX).
    float scale = absmax / 127.0F;
    if (static_cast<double>(scale) * 127.0 > static_cast<double>(absmax)) { scale = std::nextafter(scale, 0.0F); }
    std::memcpy(scales + b * sizeof(float), &scale, sizeof(float));
    std::int8_t* const c = codes + first;
    float const inv = 1.0F / scale;
    if (absmax == 0.0F || scale == 0.0F) {
      std::memset(c, 0, len);
    } else if (inv <= FLT_MAX) {
      // |x * inv| <= 127 * (1 + 2^-22): rounded half away from zero, at most 127. The integer
      // clamp only guards that bound.
      for (std::size_t i = 0; i < len; ++i) {
        float const q = load(values + i * sizeof(float)) * inv;
        c[i] = static_cast<std::int8_t>(std::clamp(static_cast<std::int32_t>(q + std::copysign(0.5F, q)), -127, 127));
      }
    } else {
      for (std::size_t i = 0; i < len; ++i) {
        float const q = load(values + i * sizeof(float)) / scale;
        c[i] = static_cast<std::int8_t>(std::clamp(static_cast<std::int32_t>(q + std::copysign(0.5F, q)), -127, 127));
      }
    }
  }
  return blocks * sizeof(float) + n;
}

void q8_decompress(std::span<std::byte const> in, std::span<std::byte> out, std::uint32_t block)
{
  if (out.size() % sizeof(float) != 0) {
    fail(codec_failure::corrupt, "codec q8: the frame holds " + std::to_string(out.size()) +
                                   " bytes, not a whole number of float32 values");
  }
  std::size_t const n = out.size() / sizeof(float);
  std::size_t const blocks = block_count(n, block);
  std::size_t const expect = blocks * sizeof(float) + n;
  if (in.size() < expect) {
    fail(codec_failure::truncated, "codec q8: " + std::to_string(in.size()) + " payload bytes, " +
                                     std::to_string(expect) + " expected");
  }
  if (in.size() > expect) {
    fail(codec_failure::corrupt, "codec q8: " + std::to_string(in.size() - expect) + " bytes after the payload");
  }
  auto const* const codes = reinterpret_cast<std::int8_t const*>(in.data() + blocks * sizeof(float));
  for (std::size_t b = 0; b < blocks; ++b) {
    float const scale = load(in.data() + b * sizeof(float));
    if (!(scale >= 0.0F && scale <= FLT_MAX)) {
      fail(codec_failure::corrupt, "codec q8: block " + std::to_string(b) + " has scale " + std::to_string(scale));
    }
    std::size_t const first = b * block;
    std::size_t const len = std::min<std::size_t>(block, n - first);
    std::int8_t const* const c = codes + first;
    std::byte* const dst = out.data() + first * sizeof(float);
    for (std::size_t i = 0; i < len; ++i) {
      float const v = static_cast<float>(c[i]) * scale;
      std::memcpy(dst + i * sizeof(float), &v, sizeof(float));
    }
  }
}

}  // namespace tierpool::codec_detail

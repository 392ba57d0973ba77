// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// codec_tests.cpp — include/tierpool/codec.hpp: names, lossless round trips of every byte,
// truncated and corrupt frames (a typed error, never a crash or an overrun; CI runs this
// under ASan + UBSan), q8's error bound and its refusal of NaN and infinity, and the
// measurement functions.
#include <tierpool/codec.hpp>
#include <tierpool/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using tierpool::codec_error;
using tierpool::codec_failure;
using tierpool::codec_kind;
using tierpool::codec_params;
using bytes = std::vector<std::byte>;

// ---- data ---------------------------------------------------------------------------

enum class data_kind { random, zeros, activations, moments };

std::string name_of(data_kind k)
{
  switch (k) {
    case data_kind::random: return "random";
    case data_kind::zeros: return "zeros";
    case data_kind::activations: return "activations";
    case data_kind::moments: return "moments";
  }
  return "?";
}

// Float-like data of `n` bytes (any n: the tail past the last whole float is random bytes).
// activations: ReLU outputs, about half exact zeros; moments: Adam's second moment, small
// positive values of similar exponent.
bytes make_data(data_kind k, std::size_t n, std::uint32_t seed = 7)
{
  bytes b(n);
  std::mt19937 rng{seed};
  if (k == data_kind::zeros) { return b; }
  if (k == data_kind::random) {
    for (auto& x : b) { x = static_cast<std::byte>(rng() & 0xFFU); }
    return b;
  }
  std::normal_distribution<float> normal{0.0F, 1.0F};
  std::size_t const floats = n / sizeof(float);
  for (std::size_t i = 0; i < floats; ++i) {
    float v = normal(rng);
    if (k == data_kind::activations) {
      v = std::max(v, 0.0F);
    } else {
      v = 1e-6F * v * v + 1e-9F;
    }
    std::memcpy(b.data() + i * sizeof(float), &v, sizeof(float));
  }
  for (std::size_t i = floats * sizeof(float); i < n; ++i) { b[i] = static_cast<std::byte>(rng() & 0xFFU); }
  return b;
}

std::vector<float> normal_floats(std::size_t n, std::uint32_t seed, float scale = 1.0F)
{
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal{0.0F, scale};
  std::vector<float> v(n);
  for (auto& x : v) { x = normal(rng); }
  return v;
}

std::span<std::byte const> as_bytes(std::vector<float> const& v) { return std::as_bytes(std::span(v)); }

bytes frame_of(codec_kind k, std::span<std::byte const> in, codec_params const& p = {})
{
  bytes out(tierpool::max_compressed_size(k, in.size(), p));
  out.resize(tierpool::compress(k, in, out, p));
  return out;
}

struct lossless_config {
  std::string name;
  codec_kind kind;
  codec_params params;
};

std::vector<lossless_config> lossless_configs()
{
  std::vector<lossless_config> c;
  c.push_back({"none", codec_kind::none, {}});
  c.push_back({"lz4", codec_kind::lz4, {}});
  codec_params hc;
  hc.lz4_high = true;
  c.push_back({"lz4-hc9", codec_kind::lz4, hc});
  codec_params lz4_nosum;
  lz4_nosum.checksum = false;
  c.push_back({"lz4-nochecksum", codec_kind::lz4, lz4_nosum});
  c.push_back({"zstd3", codec_kind::zstd, {}});
  for (int level : {-5, 1, 9}) {
    codec_params z;
    z.zstd_level = level;
    c.push_back({"zstd" + std::to_string(level), codec_kind::zstd, z});
  }
  codec_params zstd_nosum;
  zstd_nosum.checksum = false;
  c.push_back({"zstd-nochecksum", codec_kind::zstd, zstd_nosum});
  return c;
}

std::vector<std::size_t> const kSizes = {0, 1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 255, 1000, 4095, 4096, 4097, 65537,
                                         1U << 20, (4U << 20) + 13};  // the last crosses lz4's 4 MiB block

// ---- names --------------------------------------------------------------------------

TEST(CodecNames, RoundTripAndAlias)
{
  for (auto k : {codec_kind::none, codec_kind::lz4, codec_kind::zstd, codec_kind::q8_block}) {
    EXPECT_EQ(tierpool::parse_codec_kind(tierpool::to_string(k)), k);
  }
  EXPECT_EQ(tierpool::parse_codec_kind("q8_block"), codec_kind::q8_block);
  EXPECT_EQ(tierpool::to_string(codec_kind::q8_block), "q8");
  EXPECT_TRUE(tierpool::is_lossless(codec_kind::zstd));
  EXPECT_FALSE(tierpool::is_lossless(codec_kind::q8_block));
}

TEST(CodecNames, UnknownNameIsTypedErrorNamingTheValidOnes)
{
  try {
    (void)tierpool::parse_codec_kind("brotli");
    FAIL() << "no throw";
  } catch (tierpool::logic_error const& e) {
    EXPECT_STREQ(e.what(), "unknown codec 'brotli' (valid: none, lz4, zstd, q8)");
  }
  EXPECT_THROW((void)tierpool::parse_codec_kind(""), tierpool::logic_error);
  EXPECT_THROW((void)tierpool::parse_codec_kind("LZ4"), tierpool::logic_error);
}

TEST(CodecNames, Lists)
{
  auto const l = tierpool::parse_codec_list("zstd,lz4,q8");
  ASSERT_EQ(l.size(), 3U);
  EXPECT_EQ(l[0], codec_kind::zstd);
  EXPECT_EQ(l[2], codec_kind::q8_block);
  EXPECT_THROW((void)tierpool::parse_codec_list("lz4,lz4"), tierpool::logic_error);
  EXPECT_THROW((void)tierpool::parse_codec_list("lz4,"), tierpool::logic_error);
  EXPECT_THROW((void)tierpool::parse_codec_list(""), tierpool::logic_error);
  EXPECT_THROW((void)tierpool::parse_codec_list("lz4,gzip"), tierpool::logic_error);
}

TEST(CodecNames, FailureNames)
{
  EXPECT_EQ(tierpool::to_string(codec_failure::truncated), "truncated");
  EXPECT_EQ(tierpool::to_string(codec_failure::non_finite), "non_finite");
  codec_error const e{codec_failure::corrupt, "x"};
  EXPECT_EQ(e.failure(), codec_failure::corrupt);
  EXPECT_STREQ(e.what(), "x [corrupt]");
}

// ---- parameters and output sizes ----------------------------------------------------

TEST(CodecParams, OutOfRangeIsLogicError)
{
  codec_params p;
  p.zstd_level = 23;
  EXPECT_THROW((void)tierpool::max_compressed_size(codec_kind::zstd, 10, p), tierpool::logic_error);
  p = {};
  p.lz4_high = true;
  p.lz4_hc_level = 13;
  EXPECT_THROW((void)tierpool::max_compressed_size(codec_kind::lz4, 10, p), tierpool::logic_error);
  p = {};
  p.q8_block = 4;
  EXPECT_THROW((void)tierpool::max_compressed_size(codec_kind::q8_block, 16, p), tierpool::logic_error);
  p.q8_block = 65537;
  EXPECT_THROW((void)tierpool::max_compressed_size(codec_kind::q8_block, 16, p), tierpool::logic_error);
  EXPECT_THROW((void)tierpool::max_compressed_size(static_cast<codec_kind>(9), 16), tierpool::logic_error);
  // Sizes no frame can hold: a logic_error, not a bound that wrapped around.
  for (auto k : {codec_kind::none, codec_kind::lz4, codec_kind::zstd, codec_kind::q8_block}) {
    EXPECT_THROW((void)tierpool::max_compressed_size(k, SIZE_MAX), tierpool::logic_error) << tierpool::to_string(k);
    EXPECT_THROW((void)tierpool::max_compressed_size(k, SIZE_MAX - 10), tierpool::logic_error);
  }
}

TEST(CodecParams, OutputSmallerThanBoundIsLogicError)
{
  bytes const in = make_data(data_kind::zeros, 1000);
  for (auto k : {codec_kind::none, codec_kind::lz4, codec_kind::zstd, codec_kind::q8_block}) {
    bytes out(tierpool::max_compressed_size(k, in.size()) - 1);
    EXPECT_THROW((void)tierpool::compress(k, in, out), tierpool::logic_error) << tierpool::to_string(k);
  }
}

// ---- lossless round trips -----------------------------------------------------------

TEST(CodecLossless, RoundTripsEveryByteAtManySizes)
{
  for (auto const& c : lossless_configs()) {
    for (auto dk : {data_kind::random, data_kind::zeros, data_kind::activations, data_kind::moments}) {
      for (std::size_t n : kSizes) {
        if (c.params.zstd_level >= 9 && n > 65537) { continue; }  // slow, and says nothing new
        SCOPED_TRACE(c.name + " " + name_of(dk) + " " + std::to_string(n) + " bytes");
        bytes const in = make_data(dk, n);
        bytes const f = frame_of(c.kind, in, c.params);
        EXPECT_LE(f.size(), tierpool::max_compressed_size(c.kind, n, c.params));
        EXPECT_EQ(tierpool::decompressed_size(f), n);
        bytes out(n, std::byte{0xAB});
        tierpool::decompress(c.kind, f, out);
        ASSERT_TRUE(out == in);
        if (dk == data_kind::zeros && n >= 4096 && c.kind != codec_kind::none) {
          EXPECT_LT(f.size() * 20, n);  // zeros compress
        }
      }
    }
  }
}

TEST(CodecLossless, UnalignedBuffers)
{
  bytes const src = make_data(data_kind::activations, 10001);
  std::span<std::byte const> const in = std::span(src).subspan(1);
  for (auto k : {codec_kind::lz4, codec_kind::zstd}) {
    bytes f(tierpool::max_compressed_size(k, in.size()) + 3);
    std::size_t const n = tierpool::compress(k, in, std::span(f).subspan(3));
    bytes out(in.size() + 1);
    tierpool::decompress(k, std::span<std::byte const>(f).subspan(3, n), std::span(out).subspan(1));
    EXPECT_TRUE(std::equal(in.begin(), in.end(), out.begin() + 1));
  }
}

// ---- broken frames: typed errors, never a crash or a write past the output ------------

// decompress() into an output with guard bytes on both sides; the guards must survive.
void decode_guarded(codec_kind k, std::span<std::byte const> frame, std::size_t n, bytes const* expect)
{
  constexpr std::size_t guard = 64;
  bytes buf(n + 2 * guard, std::byte{0x5A});
  std::span<std::byte> const out = std::span(buf).subspan(guard, n);
  bool threw = false;
  try {
    tierpool::decompress(k, frame, out);
  } catch (codec_error const&) {
    threw = true;
  }
  for (std::size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(buf[i], std::byte{0x5A});
    ASSERT_EQ(buf[guard + n + i], std::byte{0x5A});
  }
  if (!threw && expect != nullptr) {
    // A change the decoder did not notice must not have changed the bytes (checksums).
    ASSERT_TRUE(std::equal(out.begin(), out.end(), expect->begin())) << "decoded wrong bytes without an error";
  }
}

TEST(CodecBroken, EveryTruncationIsATypedError)
{
  for (auto k : {codec_kind::none, codec_kind::lz4, codec_kind::zstd, codec_kind::q8_block}) {
    for (auto dk : {data_kind::activations, data_kind::random}) {
      if (k == codec_kind::q8_block && dk == data_kind::random) { dk = data_kind::moments; }  // random bytes hold NaNs
      bytes const in = make_data(dk, 5000);
      bytes const f = frame_of(k, in);
      for (std::size_t len = 0; len < f.size(); ++len) {
        SCOPED_TRACE(std::string(tierpool::to_string(k)) + " " + name_of(dk) + " cut to " + std::to_string(len));
        bytes const cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len));
        bytes out(in.size());
        try {
          tierpool::decompress(k, cut, out);
          FAIL() << "a truncated frame decoded";
        } catch (codec_error const& e) {
          if (len < tierpool::codec_header_bytes || k != codec_kind::zstd) {
            EXPECT_EQ(e.failure(), codec_failure::truncated) << e.what();
          } else {
            // zstd: a cut inside a block may read as a bad block before the missing end.
            EXPECT_TRUE(e.failure() == codec_failure::truncated || e.failure() == codec_failure::corrupt) << e.what();
          }
        }
      }
    }
  }
}

TEST(CodecBroken, EveryFlippedByteIsAnErrorOrHarmless)
{
  for (auto k : {codec_kind::lz4, codec_kind::zstd}) {
    for (auto dk : {data_kind::activations, data_kind::moments, data_kind::random}) {
      bytes const in = make_data(dk, 3000, 11);
      bytes const f = frame_of(k, in);
      for (std::size_t i = 0; i < f.size(); ++i) {
        for (std::uint8_t mask : {std::uint8_t{0x01}, std::uint8_t{0x80}, std::uint8_t{0xFF}}) {
          SCOPED_TRACE(std::string(tierpool::to_string(k)) + " " + name_of(dk) + " byte " + std::to_string(i));
          bytes g = f;
          g[i] ^= static_cast<std::byte>(mask);
          decode_guarded(k, g, in.size(), &in);
        }
      }
    }
  }
}

TEST(CodecBroken, GarbageAfterAValidHeader)
{
  std::mt19937 rng{3};
  for (auto k : {codec_kind::none, codec_kind::lz4, codec_kind::zstd, codec_kind::q8_block}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{16}, std::size_t{4096}}) {
      bytes const valid = frame_of(k, make_data(data_kind::moments, n));
      for (int trial = 0; trial < 200; ++trial) {
        bytes g(valid.begin(), valid.begin() + tierpool::codec_header_bytes);
        g.resize(tierpool::codec_header_bytes + rng() % 300);
        for (std::size_t i = tierpool::codec_header_bytes; i < g.size(); ++i) { g[i] = static_cast<std::byte>(rng()); }
        decode_guarded(k, g, n, nullptr);
      }
    }
  }
}

// Found by fuzz/fuzz_codec.cpp (Note [A failed lz4 decode discards its context]): after a
// decode that failed midway, an empty lz4 frame (no content size field) failed to decode.
TEST(CodecBroken, AFailedDecodeLeavesNothingBehind)
{
  for (auto k : {codec_kind::lz4, codec_kind::zstd}) {
    bytes const in = make_data(data_kind::activations, 5000);
    bytes const f = frame_of(k, in);
    bytes const empty = frame_of(k, {});
    for (std::size_t cut : {std::size_t{40}, f.size() / 2, f.size() - 1}) {
      bytes out(in.size());
      EXPECT_THROW(tierpool::decompress(k, std::span(f).first(cut), out), codec_error);
      EXPECT_NO_THROW(tierpool::decompress(k, empty, {})) << tierpool::to_string(k) << " after a cut at " << cut;
      tierpool::decompress(k, f, out);
      EXPECT_TRUE(out == in);
    }
    bytes small(10);  // a frame decoding to more than the output, stopped midway
    EXPECT_THROW(tierpool::decompress(k, f, small), codec_error);
    EXPECT_NO_THROW(tierpool::decompress(k, empty, {}));
  }
}

TEST(CodecBroken, HeaderChecks)
{
  bytes const in = make_data(data_kind::activations, 4096);
  bytes const f = frame_of(codec_kind::lz4, in);
  bytes out(in.size());
  auto failure_of = [&](codec_kind k, bytes const& frame, std::size_t n) {
    bytes o(n);
    try {
      tierpool::decompress(k, frame, o);
    } catch (codec_error const& e) {
      return std::string(tierpool::to_string(e.failure()));
    }
    return std::string("none");
  };
  EXPECT_EQ(failure_of(codec_kind::zstd, f, in.size()), "wrong_codec");
  EXPECT_EQ(failure_of(codec_kind::lz4, f, in.size() - 4), "size_mismatch");
  EXPECT_EQ(failure_of(codec_kind::lz4, f, in.size() + 1), "size_mismatch");
  bytes bad = f;
  bad[0] = std::byte{'X'};
  EXPECT_EQ(failure_of(codec_kind::lz4, bad, in.size()), "bad_header");
  bad = f;
  bad[4] = std::byte{2};  // version
  EXPECT_EQ(failure_of(codec_kind::lz4, bad, in.size()), "bad_header");
  bad = f;
  bad[5] = std::byte{77};  // codec
  EXPECT_EQ(failure_of(codec_kind::lz4, bad, in.size()), "bad_header");
  bad = f;
  bad.push_back(std::byte{0});  // a byte after the frame
  EXPECT_EQ(failure_of(codec_kind::lz4, bad, in.size()), "corrupt");
  bytes const z = frame_of(codec_kind::zstd, in);
  bad = z;
  bad.push_back(std::byte{0});
  EXPECT_EQ(failure_of(codec_kind::zstd, bad, in.size()), "corrupt");
  bytes const none = frame_of(codec_kind::none, in);
  bad = none;
  bad.push_back(std::byte{0});
  EXPECT_EQ(failure_of(codec_kind::none, bad, in.size()), "corrupt");
  EXPECT_THROW((void)tierpool::decompressed_size(std::span(f).first(10)), codec_error);
  EXPECT_EQ(tierpool::decompressed_size(f), in.size());
}

// ---- q8 -----------------------------------------------------------------------------

// Per value: |decoded - x| <= absmax(block) / 254 + absmax(block) * 2^-22 (half a code step,
// plus the two float roundings of Note [q8 block quantization]).
void expect_within_block_bound(std::vector<float> const& x, std::vector<float> const& y, std::uint32_t block)
{
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t first = 0; first < x.size(); first += block) {
    std::size_t const last = std::min<std::size_t>(x.size(), first + block);
    float absmax = 0.0F;
    for (std::size_t i = first; i < last; ++i) { absmax = std::max(absmax, std::fabs(x[i])); }
    double const bound = static_cast<double>(absmax) * (1.0 / 254.0 + 0x1.0p-22) + 1e-44;
    for (std::size_t i = first; i < last; ++i) {
      ASSERT_LE(std::fabs(static_cast<double>(y[i]) - static_cast<double>(x[i])), bound)
        << "value " << i << " of block at " << first << ": " << x[i] << " -> " << y[i] << ", absmax " << absmax;
    }
  }
}

std::vector<float> q8_round_trip(std::vector<float> const& x, codec_params const& p,
                                 tierpool::codec_error_report* report = nullptr)
{
  bytes const f = [&] {
    bytes out(tierpool::max_compressed_size(codec_kind::q8_block, x.size() * sizeof(float), p));
    out.resize(tierpool::compress(codec_kind::q8_block, as_bytes(x), out, p, report));
    return out;
  }();
  std::vector<float> y(x.size());
  tierpool::decompress(codec_kind::q8_block, f, std::as_writable_bytes(std::span(y)));
  return y;
}

TEST(CodecQ8, ErrorWithinHalfAStepOfEachBlocksAbsmax)
{
  for (std::uint32_t block : {8U, 64U, 256U, 4096U}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{255}, std::size_t{1000},
                          std::size_t{100'003}}) {
      SCOPED_TRACE("block " + std::to_string(block) + ", " + std::to_string(n) + " values");
      // Blocks of very different magnitudes: the bound is per block.
      std::vector<float> x = normal_floats(n, 5);
      for (std::size_t i = 0; i < n; ++i) { x[i] *= std::pow(10.0F, static_cast<float>((i / 300) % 9) - 4.0F); }
      codec_params p;
      p.q8_block = block;
      tierpool::codec_error_report r;
      std::vector<float> const y = q8_round_trip(x, p, &r);
      expect_within_block_bound(x, y, block);
      EXPECT_EQ(r.values, n);
      auto const direct = tierpool::compare_float32(as_bytes(x), as_bytes(y));
      EXPECT_EQ(r.max_abs_error, direct.max_abs_error);
      EXPECT_EQ(r.rms_error, direct.rms_error);
      EXPECT_LE(r.max_abs_error, r.max_abs_value * (1.0 / 254.0 + 0x1.0p-22));
      if (n >= 1000) {
        EXPECT_GT(r.rms_error, 0.0);
        EXPECT_LT(r.relative_rms_error, 0.02);
      }
    }
  }
}

TEST(CodecQ8, RatioAndLayout)
{
  std::vector<float> const x = normal_floats(256 * 1000, 9);
  bytes const f = frame_of(codec_kind::q8_block, as_bytes(x));
  EXPECT_EQ(f.size(), tierpool::codec_header_bytes + 1000 * 4 + 256 * 1000);
  EXPECT_EQ(f.size(), tierpool::max_compressed_size(codec_kind::q8_block, x.size() * 4));
  // Codes are -127..127: -128 is never written.
  for (std::size_t i = tierpool::codec_header_bytes + 4000; i < f.size(); ++i) {
    ASSERT_NE(static_cast<std::int8_t>(f[i]), -128);
  }
}

TEST(CodecQ8, ZerosAndReluZerosStayExact)
{
  std::vector<float> x = normal_floats(5000, 2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i < 1024 || x[i] < 0.0F) { x[i] = 0.0F; }
  }
  std::vector<float> const y = q8_round_trip(x, {});
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] == 0.0F) { ASSERT_EQ(y[i], 0.0F) << i; }
    ASSERT_GE(y[i], 0.0F);  // no sign flips
  }
}

TEST(CodecQ8, ExtremeMagnitudes)
{
  // Subnormals (127 / absmax overflows), FLT_MAX (scale near the top), and negative zero.
  std::vector<float> x = {1e-42F, -3e-43F, 0.0F, 7e-45F, FLT_MAX, -FLT_MAX, 1.0F, -0.0F};
  codec_params p;
  p.q8_block = 8;
  std::vector<float> y = q8_round_trip({x.begin(), x.begin() + 4}, p);
  for (float v : y) { EXPECT_TRUE(std::isfinite(v)); }
  for (std::size_t i = 0; i < 4; ++i) { EXPECT_LE(std::fabs(y[i] - x[i]), 1e-42F); }
  y = q8_round_trip(x, p);
  for (float v : y) { EXPECT_TRUE(std::isfinite(v)); }
  expect_within_block_bound(x, y, 8);
}

TEST(CodecQ8, NanAndInfinityAreRefusedNamingTheValue)
{
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> x = normal_floats(1000, 4);
    x[777] = bad;
    bytes out(tierpool::max_compressed_size(codec_kind::q8_block, x.size() * 4));
    try {
      (void)tierpool::compress(codec_kind::q8_block, as_bytes(x), out);
      FAIL() << "no throw for " << bad;
    } catch (codec_error const& e) {
      EXPECT_EQ(e.failure(), codec_failure::non_finite);
      EXPECT_NE(std::string(e.what()).find("value 777 is " + std::string(std::isnan(bad) ? "NaN" : "infinite")),
                std::string::npos)
        << e.what();
    }
  }
  // Lossless codecs keep NaN and infinity bit for bit.
  std::vector<float> x = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1.0F};
  for (auto k : {codec_kind::lz4, codec_kind::zstd}) {
    bytes const f = frame_of(k, as_bytes(x));
    std::vector<float> y(3);
    tierpool::decompress(k, f, std::as_writable_bytes(std::span(y)));
    EXPECT_EQ(std::memcmp(x.data(), y.data(), sizeof(float) * 3), 0);
  }
}

TEST(CodecQ8, NotFloat32AndCorruptScales)
{
  bytes const seven = make_data(data_kind::random, 7);
  bytes out(tierpool::max_compressed_size(codec_kind::q8_block, 7));
  try {
    (void)tierpool::compress(codec_kind::q8_block, seven, out);
    FAIL();
  } catch (codec_error const& e) {
    EXPECT_EQ(e.failure(), codec_failure::not_float32);
  }
  std::vector<float> const x = normal_floats(1000, 1);
  bytes f = frame_of(codec_kind::q8_block, as_bytes(x));
  float const nan = std::numeric_limits<float>::quiet_NaN();
  float const neg = -1.0F;
  for (float s : {nan, neg}) {
    bytes g = f;
    std::memcpy(g.data() + tierpool::codec_header_bytes + 4, &s, 4);  // block 1's scale
    std::vector<float> y(x.size());
    try {
      tierpool::decompress(codec_kind::q8_block, g, std::as_writable_bytes(std::span(y)));
      FAIL();
    } catch (codec_error const& e) {
      EXPECT_EQ(e.failure(), codec_failure::corrupt);
    }
  }
  bytes g = f;
  std::uint32_t const block = 3;  // a block size compress() never writes
  std::memcpy(g.data() + 8, &block, 4);
  std::vector<float> y(x.size());
  EXPECT_THROW(tierpool::decompress(codec_kind::q8_block, g, std::as_writable_bytes(std::span(y))), codec_error);
}

TEST(CodecQ8, UnalignedInput)
{
  std::vector<float> const x = normal_floats(999, 8);
  bytes buf(x.size() * 4 + 1);
  std::memcpy(buf.data() + 1, x.data(), x.size() * 4);
  std::span<std::byte const> const in = std::span<std::byte const>(buf).subspan(1);
  bytes const f = frame_of(codec_kind::q8_block, in);
  bytes out(in.size() + 1);
  tierpool::decompress(codec_kind::q8_block, f, std::span(out).subspan(1));
  std::vector<float> y(x.size());
  std::memcpy(y.data(), out.data() + 1, y.size() * 4);
  expect_within_block_bound(x, y, 256);
}

// ---- measurement --------------------------------------------------------------------

TEST(CodecMeasure, ProfilesEachCodec)
{
  bytes const in = make_data(data_kind::activations, 1U << 20);
  for (auto k : {codec_kind::none, codec_kind::lz4, codec_kind::zstd, codec_kind::q8_block}) {
    tierpool::codec_measure_options o;
    o.reps = 3;
    auto const p = tierpool::measure_codec(k, in, o);
    SCOPED_TRACE(std::string(tierpool::to_string(k)));
    EXPECT_EQ(p.kind, k);
    EXPECT_EQ(p.input_bytes, in.size());
    ASSERT_EQ(p.compress.runs_gbps.size(), 3U);
    ASSERT_EQ(p.decompress.runs_gbps.size(), 3U);
    EXPECT_LE(p.compress.min_gbps, p.compress.median_gbps);
    EXPECT_LE(p.compress.median_gbps, p.compress.max_gbps);
    EXPECT_GT(p.decompress.min_gbps, 0.0);
    EXPECT_NEAR(p.ratio, static_cast<double>(in.size()) / static_cast<double>(p.compressed_bytes), 1e-12);
    if (tierpool::is_lossless(k)) {
      EXPECT_TRUE(p.round_trip_exact);
      EXPECT_EQ(p.error.values, 0U);
    } else {
      EXPECT_FALSE(p.round_trip_exact);
      EXPECT_EQ(p.error.values, in.size() / 4);
      EXPECT_GT(p.error.max_abs_error, 0.0);
      EXPECT_GT(p.ratio, 3.9);
    }
    if (k == codec_kind::none) { EXPECT_LT(p.ratio, 1.0); }
    if (k == codec_kind::zstd || k == codec_kind::lz4) { EXPECT_GT(p.ratio, 1.3); }  // half zeros
  }
  auto const m = tierpool::measure_memcpy(in, 4);
  EXPECT_EQ(m.runs_gbps.size(), 4U);
  EXPECT_GT(m.median_gbps, 0.0);
}

TEST(CodecMeasure, ZeroRepsAndEmptyInput)
{
  bytes const in = make_data(data_kind::zeros, 64);
  tierpool::codec_measure_options o;
  o.reps = 0;
  EXPECT_THROW((void)tierpool::measure_codec(codec_kind::lz4, in, o), tierpool::logic_error);
  EXPECT_THROW((void)tierpool::measure_memcpy(in, 0), tierpool::logic_error);
  o.reps = 2;
  auto const p = tierpool::measure_codec(codec_kind::zstd, {}, o);
  EXPECT_EQ(p.ratio, 0.0);
  EXPECT_TRUE(p.round_trip_exact);
}

}  // namespace

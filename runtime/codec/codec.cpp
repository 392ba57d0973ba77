// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// codec.cpp — codec names, the frame header (Note [Codec frames], frame.hpp), and the
// dispatch of compress / decompress to each codec.
#include "codec/frame.hpp"

#include <tierpool/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tierpool {

namespace {

constexpr char kMagic[4] = {'T', 'P', 'C', 'F'};

struct named_codec {
  std::string_view name;
  codec_kind kind;
};
constexpr named_codec kNames[] = {
  {"none", codec_kind::none}, {"lz4", codec_kind::lz4}, {"zstd", codec_kind::zstd},
  {"q8", codec_kind::q8_block}, {"q8_block", codec_kind::q8_block},
};

void check_params(codec_kind kind, codec_params const& p)
{
  switch (kind) {
    case codec_kind::zstd:
      if (p.zstd_level < -7 || p.zstd_level > 22) {
        throw logic_error("codec zstd: level must be in -7..22, got " + std::to_string(p.zstd_level));
      }
      break;
    case codec_kind::lz4:
      if (p.lz4_high && (p.lz4_hc_level < 3 || p.lz4_hc_level > 12)) {
        throw logic_error("codec lz4: HC level must be in 3..12, got " + std::to_string(p.lz4_hc_level));
      }
      break;
    case codec_kind::q8_block:
      if (p.q8_block < 8 || p.q8_block > 65536) {
        throw logic_error("codec q8: block must be 8..65536 values, got " + std::to_string(p.q8_block));
      }
      break;
    case codec_kind::none:
      break;
    default:
      throw logic_error("codec: unknown codec_kind " + std::to_string(static_cast<unsigned>(kind)));
  }
}

std::size_t payload_bound(codec_kind kind, std::size_t bytes, codec_params const& p)
{
  switch (kind) {
    case codec_kind::none: return bytes;
    case codec_kind::lz4: return codec_detail::lz4_bound(bytes, p);
    case codec_kind::zstd: return codec_detail::zstd_bound(bytes);
    case codec_kind::q8_block: return codec_detail::q8_payload_bytes(bytes, p.q8_block);
  }
  return bytes;
}

}  // namespace

std::string_view to_string(codec_kind kind) noexcept
{
  switch (kind) {
    case codec_kind::none: return "none";
    case codec_kind::lz4: return "lz4";
    case codec_kind::zstd: return "zstd";
    case codec_kind::q8_block: return "q8";
  }
  return "unknown";
}

codec_kind parse_codec_kind(std::string_view name)
{
  for (auto const& n : kNames) {
    if (n.name == name) { return n.kind; }
  }
  throw logic_error("unknown codec '" + std::string(name) + "' (valid: none, lz4, zstd, q8)");
}

std::vector<codec_kind> parse_codec_list(std::string_view names)
{
  std::vector<codec_kind> out;
  std::size_t pos = 0;
  while (pos <= names.size()) {
    std::size_t const comma = std::min(names.find(',', pos), names.size());
    codec_kind const k = parse_codec_kind(names.substr(pos, comma - pos));
    if (std::find(out.begin(), out.end(), k) != out.end()) {
      throw logic_error("codec '" + std::string(to_string(k)) + "' given twice in '" + std::string(names) + "'");
    }
    out.push_back(k);
    pos = comma + 1;
  }
  return out;
}

std::string_view to_string(codec_failure f) noexcept
{
  switch (f) {
    case codec_failure::truncated: return "truncated";
    case codec_failure::bad_header: return "bad_header";
    case codec_failure::wrong_codec: return "wrong_codec";
    case codec_failure::size_mismatch: return "size_mismatch";
    case codec_failure::corrupt: return "corrupt";
    case codec_failure::non_finite: return "non_finite";
    case codec_failure::not_float32: return "not_float32";
  }
  return "unknown";
}

codec_error::codec_error(codec_failure failure, std::string const& what_arg)
    : std::runtime_error(what_arg + " [" + std::string(to_string(failure)) + "]"), failure_(failure)
{
}

namespace codec_detail {

void fail(codec_failure f, std::string const& what) { throw codec_error(f, what); }

void write_header(std::span<std::byte> out, frame_header const& h) noexcept
{
  std::byte* p = out.data();
  std::memset(p, 0, codec_header_bytes);
  std::memcpy(p, kMagic, 4);
  p[4] = std::byte{frame_version};
  p[5] = static_cast<std::byte>(h.kind);
  std::memcpy(p + 8, &h.q8_block, 4);
  std::memcpy(p + 16, &h.original_bytes, 8);
}

frame_header read_header(std::span<std::byte const> frame)
{
  if (frame.size() < codec_header_bytes) {
    fail(codec_failure::truncated, "codec frame of " + std::to_string(frame.size()) + " bytes is shorter than its " +
                                     std::to_string(codec_header_bytes) + "-byte header");
  }
  std::byte const* p = frame.data();
  if (std::memcmp(p, kMagic, 4) != 0) { fail(codec_failure::bad_header, "not a tierpool codec frame (bad magic)"); }
  if (p[4] != std::byte{frame_version}) {
    fail(codec_failure::bad_header, "codec frame version " + std::to_string(static_cast<unsigned>(p[4])) +
                                      " (this build reads version " + std::to_string(frame_version) + ")");
  }
  auto const k = static_cast<unsigned>(p[5]);
  if (k > static_cast<unsigned>(codec_kind::q8_block)) {
    fail(codec_failure::bad_header, "codec frame of unknown codec " + std::to_string(k));
  }
  frame_header h;
  h.kind = static_cast<codec_kind>(k);
  std::memcpy(&h.q8_block, p + 8, 4);
  std::memcpy(&h.original_bytes, p + 16, 8);
  return h;
}

}  // namespace codec_detail

std::size_t max_compressed_size(codec_kind kind, std::size_t bytes, codec_params const& params)
{
  check_params(kind, params);
  // Past what the libraries can bound (zstd's limit is about 2^63 bytes on 64-bit), a
  // bound would wrap around: refuse it rather than let an output be sized by it.
  std::size_t const payload = bytes <= (std::size_t{1} << 62U) ? payload_bound(kind, bytes, params) : 0;
  if (payload < bytes / 8 || payload > SIZE_MAX - codec_header_bytes) {
    throw logic_error("codec " + std::string(to_string(kind)) + ": " + std::to_string(bytes) +
                      " bytes are more than a frame can hold");
  }
  return codec_header_bytes + payload;
}

std::size_t compress(codec_kind kind, std::span<std::byte const> in, std::span<std::byte> out,
                     codec_params const& params, codec_error_report* report)
{
  std::size_t const need = max_compressed_size(kind, in.size(), params);
  if (out.size() < need) {
    throw logic_error("codec " + std::string(to_string(kind)) + ": output of " + std::to_string(out.size()) +
                      " bytes, compressing " + std::to_string(in.size()) + " bytes needs max_compressed_size() = " +
                      std::to_string(need));
  }
  codec_detail::frame_header h;
  h.kind = kind;
  h.original_bytes = in.size();
  std::span<std::byte> const payload = out.subspan(codec_header_bytes);
  std::size_t written = 0;
  switch (kind) {
    case codec_kind::none:
      if (!in.empty()) { std::memcpy(payload.data(), in.data(), in.size()); }
      written = in.size();
      break;
    case codec_kind::lz4: written = codec_detail::lz4_compress(in, payload, params); break;
    case codec_kind::zstd: written = codec_detail::zstd_compress(in, payload, params); break;
    case codec_kind::q8_block:
      h.q8_block = params.q8_block;
      written = codec_detail::q8_compress(in, payload, params.q8_block);
      break;
  }
  codec_detail::write_header(out, h);
  std::size_t const total = codec_header_bytes + written;
  if (report != nullptr) {
    *report = {};
    if (kind == codec_kind::q8_block) {
      std::vector<std::byte> decoded(in.size());
      decompress(kind, out.first(total), decoded);
      *report = compare_float32(in, decoded);
    }
  }
  return total;
}

std::size_t decompressed_size(std::span<std::byte const> frame)
{
  return static_cast<std::size_t>(codec_detail::read_header(frame).original_bytes);
}

void decompress(codec_kind kind, std::span<std::byte const> in, std::span<std::byte> out)
{
  codec_detail::frame_header const h = codec_detail::read_header(in);
  if (h.kind != kind) {
    codec_detail::fail(codec_failure::wrong_codec, "a " + std::string(to_string(h.kind)) +
                                                     " frame given to the " + std::string(to_string(kind)) + " decoder");
  }
  if (h.original_bytes != out.size()) {
    codec_detail::fail(codec_failure::size_mismatch, "codec " + std::string(to_string(kind)) + ": the frame holds " +
                                                       std::to_string(h.original_bytes) + " bytes, the output is " +
                                                       std::to_string(out.size()));
  }
  std::span<std::byte const> const payload = in.subspan(codec_header_bytes);
  switch (kind) {
    case codec_kind::none:
      if (payload.size() < out.size()) {
        codec_detail::fail(codec_failure::truncated, "codec none: " + std::to_string(payload.size()) +
                                                       " payload bytes for " + std::to_string(out.size()));
      }
      if (payload.size() > out.size()) {
        codec_detail::fail(codec_failure::corrupt, "codec none: " + std::to_string(payload.size() - out.size()) +
                                                     " bytes after the payload");
      }
      if (!out.empty()) { std::memcpy(out.data(), payload.data(), out.size()); }
      break;
    case codec_kind::lz4: codec_detail::lz4_decompress(payload, out); break;
    case codec_kind::zstd: codec_detail::zstd_decompress(payload, out); break;
    case codec_kind::q8_block:
      if (h.q8_block < 8 || h.q8_block > 65536) {
        codec_detail::fail(codec_failure::bad_header, "codec q8: frame block size " + std::to_string(h.q8_block) +
                                                        " outside 8..65536");
      }
      codec_detail::q8_decompress(payload, out, h.q8_block);
      break;
  }
}

codec_error_report compare_float32(std::span<std::byte const> original, std::span<std::byte const> decoded)
{
  if (original.size() != decoded.size() || original.size() % sizeof(float) != 0) {
    throw logic_error("compare_float32: " + std::to_string(original.size()) + " and " + std::to_string(decoded.size()) +
                      " bytes are not the same whole number of float32 values");
  }
  codec_error_report r;
  r.values = original.size() / sizeof(float);
  double sum_err2 = 0.0;
  double sum_val2 = 0.0;
  for (std::size_t i = 0; i < r.values; ++i) {
    float a = 0.0F;
    float b = 0.0F;
    std::memcpy(&a, original.data() + i * sizeof(float), sizeof(float));
    std::memcpy(&b, decoded.data() + i * sizeof(float), sizeof(float));
    double const e = std::fabs(static_cast<double>(b) - static_cast<double>(a));
    r.max_abs_error = std::max(r.max_abs_error, e);
    r.max_abs_value = std::max(r.max_abs_value, std::fabs(static_cast<double>(a)));
    sum_err2 += e * e;
    sum_val2 += static_cast<double>(a) * static_cast<double>(a);
  }
  if (r.values != 0) {
    r.rms_error = std::sqrt(sum_err2 / static_cast<double>(r.values));
    r.rms_value = std::sqrt(sum_val2 / static_cast<double>(r.values));
  }
  r.relative_rms_error = r.rms_value > 0.0 ? r.rms_error / r.rms_value : 0.0;
  return r;
}

}  // namespace tierpool

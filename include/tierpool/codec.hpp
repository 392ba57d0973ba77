// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file codec.hpp
 * @brief Codecs a tensor can be compressed with when it leaves a tier (issue 17, "Eviction
 *        actions"), and the measurement of their ratio and throughput on real data.
 *
 * Two lossless codecs (lz4, zstd) round-trip every byte; the lossy codec q8_block stores
 * float32 values as 8-bit codes with one absmax scale per block, and reports its error.
 * Every compressed buffer is a *frame*: a 24-byte header (magic, codec, block size, the
 * original byte count) and the codec's payload, so decompress() can refuse a buffer that
 * is not what it expects instead of writing garbage (docs/chapters/codecs.md).
 *
 * Errors: a bad argument (an unknown codec name, a parameter out of range, an output span
 * too small) is a tierpool::logic_error; a buffer that cannot be decoded (corrupt,
 * truncated, another codec's frame, another size) is a tierpool::codec_error. Neither ever
 * writes outside the output span.
 *
 * Thread safety: every function here is reentrant; calls on disjoint buffers may run on
 * any number of threads at once.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <tierpool/export.hpp>

namespace tierpool {

/// @brief A codec: how a tensor's bytes are stored in a lower tier.
enum class codec_kind : std::uint8_t {
  none = 0,      ///< the bytes as they are (a frame header, then a copy)
  lz4 = 1,       ///< LZ4 frame format, lossless (fast; HC when codec_params::lz4_high)
  zstd = 2,      ///< Zstandard, lossless (better ratio; codec_params::zstd_level)
  q8_block = 3,  ///< lossy: float32 as int8 codes with one absmax scale per block
};

/// @brief The codec's name: "none", "lz4", "zstd", "q8".
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(codec_kind kind) noexcept;

/**
 * @brief The codec named `name` ("none", "lz4", "zstd", "q8"; "q8_block" too).
 * @throws tierpool::logic_error naming the name and the valid ones.
 */
[[nodiscard]] TIERPOOL_EXPORT codec_kind parse_codec_kind(std::string_view name);

/**
 * @brief A comma-separated list of codec names ("lz4,zstd,q8"), in order, no repeats.
 * @throws tierpool::logic_error for an unknown or repeated name, or an empty list.
 */
[[nodiscard]] TIERPOOL_EXPORT std::vector<codec_kind> parse_codec_list(std::string_view names);

/// @brief True for the codecs whose decompress() gives back every byte (none, lz4, zstd).
[[nodiscard]] constexpr bool is_lossless(codec_kind kind) noexcept { return kind != codec_kind::q8_block; }

/// @brief A codec's settings. Each codec reads only its own; the defaults are what the pool uses.
struct codec_params {
  int zstd_level{3};            ///< zstd: compression level, 1..22 (negative: zstd's fast levels, down to -7)
  bool lz4_high{false};         ///< lz4: use the high-compression (HC) compressor
  int lz4_hc_level{9};          ///< lz4 HC: compression level, 3..12
  bool checksum{true};          ///< lz4 and zstd: a content checksum, verified by decompress()
  std::uint32_t q8_block{256};  ///< q8: float32 values per block (one scale each), 8..65536
};

/**
 * @brief Why a buffer could not be decoded (codec_error::failure()); bad compress input
 *        (non_finite, not_float32) too.
 */
enum class codec_failure : std::uint8_t {
  truncated,       ///< shorter than its header, or than its header says
  bad_header,      ///< not a tierpool codec frame (magic or version), or an unknown codec
  wrong_codec,     ///< a frame of another codec than the one asked for
  size_mismatch,   ///< the frame decodes to another byte count than the output span's
  corrupt,         ///< the payload does not decode (the library refused it, a checksum differs)
  non_finite,      ///< q8: the input holds a NaN or an infinity (quantization refuses them)
  not_float32,     ///< q8: the input is not a whole number of float32 values
};

/// @brief Lower-case name of a failure ("truncated", "corrupt", ...).
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(codec_failure f) noexcept;

/// @brief A frame that cannot be decoded, or input a lossy codec refuses (codec_failure).
class TIERPOOL_EXPORT codec_error : public std::runtime_error {
 public:
  /**
   * @param failure What went wrong.
   * @param what_arg The diagnosis (the codec, the sizes involved, the library's message).
   */
  codec_error(codec_failure failure, std::string const& what_arg);
  /// @brief What went wrong.
  [[nodiscard]] codec_failure failure() const noexcept { return failure_; }

 private:
  codec_failure failure_;
};

/// @brief Bytes of a frame's header (every codec's output starts with one).
inline constexpr std::size_t codec_header_bytes = 24;

/**
 * @brief The most bytes compress() can write for `bytes` of input: size the output span
 *        with this.
 * @throws tierpool::logic_error for parameters out of range, or more than 2^62 bytes.
 */
[[nodiscard]] TIERPOOL_EXPORT std::size_t max_compressed_size(codec_kind kind, std::size_t bytes,
                                                              codec_params const& params = {});

/**
 * @brief The error q8_block made on one buffer: the decoded values against the originals.
 *
 * For a block whose absmax is `a`, every value's error is at most `a / 254 + a * 2^-22`
 * (half a code step, plus float rounding). Lossless codecs have no report.
 */
struct codec_error_report {
  std::size_t values{0};         ///< float32 values compared
  double max_abs_error{0.0};     ///< largest |decoded - original|
  double rms_error{0.0};         ///< root mean square of decoded - original
  double rms_value{0.0};         ///< root mean square of the originals (the error's scale)
  double relative_rms_error{0.0};  ///< rms_error / rms_value (0 when every value is 0)
  double max_abs_value{0.0};     ///< largest |original|
};

/**
 * @brief Compress `in` into `out` as one frame.
 * @param kind The codec.
 * @param in The bytes to compress (for q8_block: float32 values, any alignment).
 * @param out Where the frame goes; at least max_compressed_size(kind, in.size(), params) bytes.
 * @param params The codec's settings.
 * @param report q8_block only, optional: receives the error of this compression (computed
 *        by decoding the frame just written; it costs a decode).
 * @return Bytes written to `out` (the frame's size).
 * @throws tierpool::logic_error if `out` is smaller than max_compressed_size(kind, in.size(),
 *         params) or a parameter is out of range.
 * @throws tierpool::codec_error for q8_block input that is not float32 (not_float32) or
 *         holds a NaN or infinity (non_finite); nothing useful is in `out` then.
 */
TIERPOOL_EXPORT std::size_t compress(codec_kind kind, std::span<std::byte const> in, std::span<std::byte> out,
                                     codec_params const& params = {}, codec_error_report* report = nullptr);

/**
 * @brief The byte count the frame `frame` decodes to, from its header.
 * @throws tierpool::codec_error (truncated, bad_header) if it is not a frame.
 */
[[nodiscard]] TIERPOOL_EXPORT std::size_t decompressed_size(std::span<std::byte const> frame);

/**
 * @brief Decode the frame `in`, written by compress(kind, ...), into `out`, whose size must
 *        be the original's exactly.
 *
 * Never writes outside `out`; on failure `out`'s content is unspecified.
 * @throws tierpool::codec_error on a frame that is truncated, not a frame, of another
 *         codec, of another size, or corrupt (a checksum differs, the library refuses it).
 */
TIERPOOL_EXPORT void decompress(codec_kind kind, std::span<std::byte const> in, std::span<std::byte> out);

/**
 * @brief The error q8_block makes on `original` when it decodes to `decoded` (both float32,
 *        same length).
 * @throws tierpool::logic_error if the sizes differ or are not a whole number of floats.
 */
[[nodiscard]] TIERPOOL_EXPORT codec_error_report compare_float32(std::span<std::byte const> original,
                                                                 std::span<std::byte const> decoded);

/// @brief Repeated timings of one operation: every run, and their median and spread.
struct throughput_stats {
  std::vector<double> runs_gbps;  ///< each repetition's throughput, GB/s (10^9 bytes of input per second)
  double median_gbps{0.0};        ///< median of runs_gbps
  double min_gbps{0.0};           ///< slowest run
  double max_gbps{0.0};           ///< fastest run
};

/// @brief How measure_codec() and measure_memcpy() time.
struct codec_measure_options {
  unsigned reps{5};         ///< timed repetitions (at least 1); an untimed warm-up run comes first
  codec_params params{};    ///< the codec's settings
};

/**
 * @brief A codec measured on one buffer: ratio, compress and decompress throughput
 *        (per repetition, median, spread), and for q8_block its error.
 *
 * Throughputs count the *original* bytes in both directions, so a codec's figures compare
 * directly with memcpy's and with a link's bandwidth.
 */
struct codec_profile {
  codec_kind kind{codec_kind::none};  ///< the codec
  codec_params params{};              ///< its settings
  std::size_t input_bytes{0};         ///< bytes compressed
  std::size_t compressed_bytes{0};    ///< the frame's size (header included)
  double ratio{0.0};                  ///< input_bytes / compressed_bytes (0 for empty input)
  throughput_stats compress;          ///< compress throughput
  throughput_stats decompress;        ///< decompress throughput
  bool round_trip_exact{false};       ///< the decoded bytes equal the input (lossless codecs must)
  codec_error_report error{};         ///< q8_block: its error; zeros for lossless codecs
};

/**
 * @brief Measure `kind` on `data`: one warm-up, then `options.reps` timed compressions and
 *        decompressions, then a check of the decoded bytes (lossless) or the error (q8).
 * @throws tierpool::logic_error for reps 0 or parameters out of range.
 * @throws tierpool::codec_error as compress() does (q8_block on non-float32 or non-finite data).
 */
[[nodiscard]] TIERPOOL_EXPORT codec_profile measure_codec(codec_kind kind, std::span<std::byte const> data,
                                                          codec_measure_options const& options = {});

/**
 * @brief memcpy of `data` into another buffer, timed as measure_codec() times a codec: the
 *        baseline a codec's throughput is compared with in the same run.
 * @throws tierpool::logic_error for reps 0.
 */
[[nodiscard]] TIERPOOL_EXPORT throughput_stats measure_memcpy(std::span<std::byte const> data, unsigned reps);

}  // namespace tierpool

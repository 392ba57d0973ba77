// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// measure.cpp — a codec's ratio and throughput measured on a buffer (measure_codec), and
// memcpy timed the same way (measure_memcpy).
//
// Note [Codec figures are measured]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Issue 17 chooses an eviction action by cost: the time to compress, move the smaller
// frame, and decompress, against the time to move the raw bytes. A ratio or throughput
// declared per codec would be wrong for every tensor unlike the one it was declared on
// (activations after ReLU are half zeros, Adam's second moment is all positive and smooth,
// weights are near-random mantissas), so they are measured on the tensor's own kind of data.
// Each measurement runs once untimed (page faults of the output, the per-thread contexts),
// then `reps` times; the median is the figure, min and max its spread. memcpy of the same
// buffer, timed the same way in the same run, is the yardstick: a codec slower than memcpy
// by more than its ratio cannot beat a plain copy on a link as fast as memory.
#include <tierpool/codec.hpp>
#include <tierpool/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace tierpool {
namespace {

using clock_type = std::chrono::steady_clock;

double gbps(std::size_t bytes, clock_type::duration d) noexcept
{
  double const s = std::chrono::duration<double>(d).count();
  return s > 0.0 ? static_cast<double>(bytes) / s / 1e9 : 0.0;
}

throughput_stats summarize(std::vector<double> runs)
{
  throughput_stats t;
  t.runs_gbps = runs;
  if (runs.empty()) { return t; }
  std::sort(runs.begin(), runs.end());
  std::size_t const n = runs.size();
  t.median_gbps = n % 2 == 1 ? runs[n / 2] : 0.5 * (runs[n / 2 - 1] + runs[n / 2]);
  t.min_gbps = runs.front();
  t.max_gbps = runs.back();
  return t;
}

void check_reps(unsigned reps)
{
  if (reps == 0) { throw logic_error("codec measurement: reps must be at least 1"); }
}

}  // namespace

codec_profile measure_codec(codec_kind kind, std::span<std::byte const> data, codec_measure_options const& options)
{
  check_reps(options.reps);
  codec_profile p;
  p.kind = kind;
  p.params = options.params;
  p.input_bytes = data.size();
  std::vector<std::byte> frame(max_compressed_size(kind, data.size(), options.params));
  std::vector<std::byte> decoded(data.size());
  // Warm-up: faults in both buffers and creates this thread's codec contexts.
  std::size_t n = compress(kind, data, frame, options.params);
  decompress(kind, std::span<std::byte const>(frame).first(n), decoded);
  std::vector<double> c_runs;
  std::vector<double> d_runs;
  for (unsigned r = 0; r < options.reps; ++r) {
    auto const t0 = clock_type::now();
    n = compress(kind, data, frame, options.params);
    auto const t1 = clock_type::now();
    decompress(kind, std::span<std::byte const>(frame).first(n), decoded);
    auto const t2 = clock_type::now();
    c_runs.push_back(gbps(data.size(), t1 - t0));
    d_runs.push_back(gbps(data.size(), t2 - t1));
  }
  p.compressed_bytes = n;
  p.ratio = n != 0 && !data.empty() ? static_cast<double>(data.size()) / static_cast<double>(n) : 0.0;
  p.compress = summarize(std::move(c_runs));
  p.decompress = summarize(std::move(d_runs));
  p.round_trip_exact = data.empty() || std::memcmp(decoded.data(), data.data(), data.size()) == 0;
  if (kind == codec_kind::q8_block) { p.error = compare_float32(data, decoded); }
  return p;
}

throughput_stats measure_memcpy(std::span<std::byte const> data, unsigned reps)
{
  check_reps(reps);
  std::vector<std::byte> dst(data.size());
  if (!data.empty()) { std::memcpy(dst.data(), data.data(), data.size()); }  // warm-up
  std::vector<double> runs;
  for (unsigned r = 0; r < reps; ++r) {
    auto const t0 = clock_type::now();
    if (!data.empty()) { std::memcpy(dst.data(), data.data(), data.size()); }
    auto const t1 = clock_type::now();
    // Keep the copy observable, so it is not optimized away.
    asm volatile("" : : "r"(dst.data()) : "memory");
    runs.push_back(gbps(data.size(), t1 - t0));
  }
  return summarize(std::move(runs));
}

}  // namespace tierpool

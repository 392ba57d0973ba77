// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// codec_command.cpp — `tierpool codec measure`: each codec's ratio, compress and decompress
// throughput (median and spread over repetitions) and q8's error, on real tensors, beside
// memcpy of the same bytes in the same run (Note [Codec figures are measured],
// runtime/codec/measure.cpp; docs/chapters/codecs.md).

// GCC 12's false -Wnull-dereference in Boost.ProgramOptions' string notify (see bench_arena_command.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "checked_options.hpp"
#include "commands.hpp"
#include "workloads/mlp_tensors.hpp"

#include <tierpool/codec.hpp>
#include <tierpool/error.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace tierpool::cli {

namespace po = boost::program_options;
namespace wl = tierpool::workloads;

namespace {

struct data_result {
  wl::named_tensor_data const* data;
  double zero_fraction;  // of the float32 values
  throughput_stats memcpy_stats;
  std::vector<codec_profile> profiles;
  std::vector<std::string> skipped;  // "q8: <why>"
};

double zero_fraction(std::vector<std::byte> const& b)
{
  std::size_t const n = b.size() / sizeof(float);
  if (n == 0) { return 0.0; }
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float v = 0.0F;
    std::memcpy(&v, b.data() + i * sizeof(float), sizeof(float));
    zeros += v == 0.0F ? 1 : 0;
  }
  return static_cast<double>(zeros) / static_cast<double>(n);
}

boost::json::object stats_json(throughput_stats const& t)
{
  boost::json::array runs;
  for (double v : t.runs_gbps) { runs.push_back(v); }
  return {{"median_gbps", t.median_gbps}, {"min_gbps", t.min_gbps}, {"max_gbps", t.max_gbps}, {"runs_gbps", runs}};
}

double per(double a, double b) { return b > 0.0 ? a / b : 0.0; }

std::string codec_label(codec_profile const& p)
{
  switch (p.kind) {
    case codec_kind::lz4: return p.params.lz4_high ? "lz4-hc" + std::to_string(p.params.lz4_hc_level) : "lz4";
    case codec_kind::zstd:  // negative levels as zstd's command line names them (--fast=N)
      return p.params.zstd_level < 0 ? "zstd-fast" + std::to_string(-p.params.zstd_level)
                                     : "zstd-" + std::to_string(p.params.zstd_level);
    case codec_kind::q8_block: return "q8-" + std::to_string(p.params.q8_block);
    case codec_kind::none: return "none";
  }
  return "?";
}

boost::json::object to_json(std::string const& source, unsigned reps, std::vector<data_result> const& results)
{
  boost::json::array data;
  for (auto const& r : results) {
    boost::json::array codecs;
    for (auto const& p : r.profiles) {
      boost::json::object c;
      c["codec"] = to_string(p.kind);
      c["label"] = codec_label(p);
      c["params"] = {{"zstd_level", p.params.zstd_level}, {"lz4_high", p.params.lz4_high},
                     {"lz4_hc_level", p.params.lz4_hc_level}, {"checksum", p.params.checksum},
                     {"q8_block", p.params.q8_block}};
      c["lossless"] = is_lossless(p.kind);
      c["input_bytes"] = p.input_bytes;
      c["compressed_bytes"] = p.compressed_bytes;
      c["ratio"] = p.ratio;
      c["compress"] = stats_json(p.compress);
      c["decompress"] = stats_json(p.decompress);
      c["compress_vs_memcpy"] = per(p.compress.median_gbps, r.memcpy_stats.median_gbps);
      c["decompress_vs_memcpy"] = per(p.decompress.median_gbps, r.memcpy_stats.median_gbps);
      c["round_trip_exact"] = p.round_trip_exact;
      if (p.kind == codec_kind::q8_block) {
        c["error"] = {{"values", p.error.values},
                      {"max_abs_error", p.error.max_abs_error},
                      {"rms_error", p.error.rms_error},
                      {"relative_rms_error", p.error.relative_rms_error},
                      {"rms_value", p.error.rms_value},
                      {"max_abs_value", p.error.max_abs_value}};
      }
      codecs.push_back(std::move(c));
    }
    boost::json::array skipped;
    for (auto const& s : r.skipped) { skipped.push_back(boost::json::string(s)); }
    boost::json::object d;
    d["name"] = r.data->name;
    d["bytes"] = r.data->bytes.size();
    d["zero_fraction"] = r.zero_fraction;
    d["memcpy"] = stats_json(r.memcpy_stats);
    d["codecs"] = std::move(codecs);
    d["skipped"] = std::move(skipped);
    data.push_back(std::move(d));
  }
  return {{"source", source}, {"reps", reps}, {"data", std::move(data)}};
}

void print_table(std::string const& source, unsigned reps, std::vector<data_result> const& results)
{
  std::printf("codec measure: source %s, %u repetitions each (median, [min..max]); GB/s = 10^9 original bytes/s\n",
              source.c_str(), reps);
  for (auto const& r : results) {
    std::printf("\n%s: %.2f MiB, %.1f %% zeros; memcpy %.2f GB/s [%.2f..%.2f]\n", r.data->name.c_str(),
                static_cast<double>(r.data->bytes.size()) / 1048576.0, 100.0 * r.zero_fraction,
                r.memcpy_stats.median_gbps, r.memcpy_stats.min_gbps, r.memcpy_stats.max_gbps);
    std::printf("  %-9s %7s  %-24s %7s  %-24s %7s  %s\n", "codec", "ratio", "compress GB/s", "/memcpy",
                "decompress GB/s", "/memcpy", "error");
    for (auto const& p : r.profiles) {
      char c[64];
      char d[64];
      std::snprintf(c, sizeof c, "%.3f [%.3f..%.3f]", p.compress.median_gbps, p.compress.min_gbps, p.compress.max_gbps);
      std::snprintf(d, sizeof d, "%.3f [%.3f..%.3f]", p.decompress.median_gbps, p.decompress.min_gbps,
                    p.decompress.max_gbps);
      std::string err = p.round_trip_exact ? "exact" : "NOT EXACT";
      if (p.kind == codec_kind::q8_block) {
        char e[128];
        std::snprintf(e, sizeof e, "max %.3g, rms %.3g, rel rms %.3g", p.error.max_abs_error, p.error.rms_error,
                      p.error.relative_rms_error);
        err = e;
      }
      std::printf("  %-9s %7.3f  %-24s %7.3f  %-24s %7.3f  %s\n", codec_label(p).c_str(), p.ratio, c,
                  per(p.compress.median_gbps, r.memcpy_stats.median_gbps), d,
                  per(p.decompress.median_gbps, r.memcpy_stats.median_gbps), err.c_str());
    }
    for (auto const& s : r.skipped) { std::printf("  skipped %s\n", s.c_str()); }
  }
}

}  // namespace

int codec_measure_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool codec measure: each codec's ratio, compress and decompress throughput (median and\n"
    "spread over repetitions) and q8's error, beside memcpy of the same bytes, on real tensors:\n"
    "the demo's MLP trained on the host (--source demo: activations, Adam's moments, weights),\n"
    "or files (--input: float32 .npy, or raw bytes). See docs/chapters/codecs.md.\n\n"
    "options");
  std::string codecs_text = "lz4,zstd,q8";
  std::vector<std::string> inputs;
  std::string source;
  std::string reps_text = "5";
  std::string zstd_level_text = std::to_string(codec_params{}.zstd_level);
  std::string lz4_hc_text = "0";
  std::string q8_block_text = std::to_string(codec_params{}.q8_block);
  std::string steps_text = std::to_string(wl::mlp_tensor_options{}.steps);
  std::string batch_text = std::to_string(wl::mlp_tensor_options{}.batch);
  std::string width_text = std::to_string(wl::mlp_tensor_options{}.width);
  std::string dump_dir;
  desc.add_options()
    ("help,h", "this text")
    ("codec,c", po::value(&codecs_text)->default_value(codecs_text), "codecs to measure, comma-separated: none, lz4, zstd, q8")
    ("input,i", po::value(&inputs), "a tensor file (float32 .npy, or raw bytes); may be repeated")
    ("source", po::value(&source), "demo: train the demo's MLP and measure its tensors (the default without --input)")
    ("reps,r", po::value(&reps_text)->default_value(reps_text), "timed repetitions per codec, 1..1000")
    ("zstd-level", po::value(&zstd_level_text)->default_value(zstd_level_text), "zstd level, -7..22")
    ("lz4-hc", po::value(&lz4_hc_text)->default_value(lz4_hc_text), "lz4: 0 = the fast compressor, 3..12 = HC at that level")
    ("q8-block", po::value(&q8_block_text)->default_value(q8_block_text), "q8: float32 values per scale, 8..65536")
    ("no-checksum", "lz4, zstd: no content checksum (the pool keeps it on)")
    ("steps", po::value(&steps_text)->default_value(steps_text), "demo: Adam steps before the tensors are read, 1..10000")
    ("batch", po::value(&batch_text)->default_value(batch_text), "demo: samples in the batch, 1..65536")
    ("width", po::value(&width_text)->default_value(width_text), "demo: hidden width, 1..8192")
    ("dump", po::value(&dump_dir), "demo: also write each tensor kind to DIR/<name>.npy")
    ("json", "print one JSON object instead of the tables");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool codec measure: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  if (!source.empty() && source != "demo") {
    throw logic_error("--source must be 'demo', got '" + source + "'");
  }
  if (!source.empty() && !inputs.empty()) { throw logic_error("give --input or --source demo, not both"); }
  if (source.empty() && inputs.empty()) { source = "demo"; }

  std::vector<codec_kind> const kinds = parse_codec_list(codecs_text);
  auto const reps = parse_checked<unsigned>("--reps", reps_text, 1, 1000);
  codec_params params;
  params.zstd_level = parse_checked<int>("--zstd-level", zstd_level_text, -7, 22);
  int const hc = parse_checked<int>("--lz4-hc", lz4_hc_text, 0, 12);
  if (hc != 0 && hc < 3) { throw logic_error("--lz4-hc must be 0 or 3..12, got '" + lz4_hc_text + "'"); }
  params.lz4_high = hc != 0;
  if (hc != 0) { params.lz4_hc_level = hc; }
  params.q8_block = parse_checked<std::uint32_t>("--q8-block", q8_block_text, 8, 65536);
  params.checksum = vm.count("no-checksum") == 0;

  std::vector<wl::named_tensor_data> data;
  if (source == "demo") {
    wl::mlp_tensor_options mo;
    mo.steps = parse_checked<unsigned>("--steps", steps_text, 1, 10000);
    mo.batch = parse_checked<std::size_t>("--batch", batch_text, 1, 65536);
    mo.width = parse_checked<std::size_t>("--width", width_text, 1, 8192);
    data = wl::train_mlp_tensors(mo);
    source = "demo (MLP " + std::to_string(mo.layers) + " x " + std::to_string(mo.width) + ", batch " +
             std::to_string(mo.batch) + ", " + std::to_string(mo.steps) + " Adam steps, loss " +
             std::to_string(data.front().loss_first) + " -> " + std::to_string(data.front().loss_last) + ")";
    if (!dump_dir.empty()) {
      for (auto const& t : data) {
        std::vector<float> v(t.bytes.size() / sizeof(float));
        std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(float));
        wl::write_npy_float32(dump_dir + "/" + t.name + ".npy", v);
      }
    }
  } else {
    for (auto const& path : inputs) { data.push_back(wl::read_tensor_file(path)); }
    source = "files";
  }

  std::vector<data_result> results;
  results.reserve(data.size());
  for (auto const& t : data) {
    data_result r{&t, zero_fraction(t.bytes), measure_memcpy(t.bytes, reps), {}, {}};
    for (codec_kind k : kinds) {
      codec_measure_options mo;
      mo.reps = reps;
      mo.params = params;
      try {
        r.profiles.push_back(measure_codec(k, t.bytes, mo));
      } catch (codec_error const& e) {
        // q8 on data that is not finite float32: reported, not fatal (the pool would not use it there).
        r.skipped.push_back(std::string(to_string(k)) + ": " + e.what());
      }
    }
    results.push_back(std::move(r));
  }
  if (vm.count("json") != 0) {
    std::cout << boost::json::serialize(to_json(source, reps, results)) << '\n';
  } else {
    print_table(source, reps, results);
  }
  for (auto const& r : results) {
    for (auto const& p : r.profiles) {
      if (is_lossless(p.kind) && !p.round_trip_exact) { return 1; }  // never: a lossless codec lost bytes
    }
  }
  return 0;
}

}  // namespace tierpool::cli

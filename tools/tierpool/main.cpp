// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// main.cpp — the `tierpool` command line. It only dispatches: every command is a thin
// layer over the library (see commands.hpp).
#include "commands.hpp"

#include <tierpool/error.hpp>
#include <tierpool/version.hpp>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct command {
  std::vector<std::string_view> path;  // e.g. {"bench", "arena"}
  int (*run)(int, char**);
  char const* summary;
};

command const commands[] = {
  {{"info"}, tierpool::cli::info_command, "backend in use and why, devices, NUMA nodes, default tiers"},
  {{"policies"}, tierpool::cli::policies_command, "eviction policies with their parameters (--plugin PATH, --json)"},
  {{"bench", "arena"}, tierpool::cli::bench_arena_command,
   "arena sub-allocator workloads (rand50, rand85, dnn-static, dnn-dyn, dnn-tight)"},
  {{"bench", "hitpath"}, tierpool::cli::bench_hitpath_command,
   "pool hit path: acquire + release of a resident tensor, 1 and N threads"},
  {{"bench", "copy"}, tierpool::cli::bench_copy_command, "pool migration throughput against memcpy"},
  {{"bench", "scale"}, tierpool::cli::bench_scale_command,
   "what a tensor costs as the pool grows to millions: metadata, allocate, miss, fits, validate"},
  {{"trace", "gen"}, tierpool::cli::trace_gen_command,
   "generate a workload trace (mlp-train, transformer-train, llm-infer-stream, kv-paging, random-reuse)"},
  {{"trace", "convert"}, tierpool::cli::trace_convert_command, "convert a trace (oracleGeneral, csv, text, binary)"},
  {{"trace", "stat"}, tierpool::cli::trace_stat_command, "requests, objects, working set, peak live bytes of a trace"},
  {{"replay"}, tierpool::cli::replay_command, "replay a trace per policy x capacity (pool or cache mode)"},
  {{"top"}, tierpool::cli::top_command, "live figures of the pools running on this machine (shared memory)"},
  {{"snapshot", "view"}, tierpool::cli::snapshot_view_command,
   "pool snapshots (pool::snapshot_json) per tier, or their layout over time (--svg)"},
  {{"codec", "measure"}, tierpool::cli::codec_measure_command,
   "codec ratio, throughput and q8 error on real tensors, beside memcpy (lz4, zstd, q8)"},
  {{"suite", "run"}, tierpool::cli::suite_run_command,
   "the benchmark suite on each device (GPU or simulated preset): one JSON bundle per device"},
  {{"suite", "report"}, tierpool::cli::suite_report_command,
   "bundles side by side: tables, ratios to a baseline, CSV, one HTML page with plots"},
  {{"suite", "calibrate"}, tierpool::cli::suite_calibrate_command,
   "a bundle's measured link as a device preset for the simulator (suite run --devices sim:FILE.json)"},
};

void print_usage(std::FILE* out)
{
  std::fprintf(out, "tierpool %s — a tiered GPU memory pool\n\nusage: tierpool <command> [options]\n\ncommands:\n",
               tierpool::version_string);
  for (auto const& c : commands) {
    std::string name;
    for (auto p : c.path) { name += std::string(p) + " "; }
    std::fprintf(out, "  %-16s%s\n", name.c_str(), c.summary);
  }
  std::fprintf(out, "\n`tierpool <command> --help` describes a command's options.\n");
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("tierpool %s\n", tierpool::version_string);
    return 0;
  }
  for (auto const& c : commands) {
    auto const depth = static_cast<int>(c.path.size());
    if (argc <= depth) { continue; }
    bool match = true;
    for (int i = 0; i < depth; ++i) {
      if (c.path[static_cast<std::size_t>(i)] != argv[i + 1]) { match = false; break; }
    }
    if (!match) { continue; }
    std::string const self = "tierpool";
    try {
      // Hand the command its own argv: argv[0] names the command, then its options.
      return c.run(argc - depth, argv + depth);
    } catch (tierpool::logic_error const& e) {
      std::fprintf(stderr, "tierpool: error: %s\n", e.what());
      return 2;
    } catch (std::exception const& e) {
      std::fprintf(stderr, "tierpool: error: %s\n", e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "tierpool: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}

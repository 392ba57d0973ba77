// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// bench_arena_command.cpp — `tierpool bench arena`: option parsing and printing for the
// arena workloads of docs/chapters/benchmarks.md. Generation, trace I/O and measurement live in
// workloads/arena_workloads.cpp; this file only wires them to the command line.

// GCC 12 reports a false -Wnull-dereference inside std::string assignment when it inlines
// Boost.ProgramOptions' typed_value<std::string>::notify; the pragma must precede the
// includes because the diagnostic is located in the library headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "bench_common.hpp"
#include "checked_options.hpp"
#include "commands.hpp"
#include "workloads/arena_workloads.hpp"

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace tierpool::cli {

namespace po = boost::program_options;
namespace wl = tierpool::workloads;

namespace {

constexpr unsigned kMaxRuns = 1000;
constexpr std::size_t kMaxOps = 100'000'000;  // generated traces reserve this many operations

void print_table(std::string const& name, std::uint64_t seed, bool from_trace, wl::alloc_trace const& t,
                 wl::arena_figures const& f)
{
  auto const& o = f.outcome;
  std::printf("arena workload %s", name.c_str());
  if (!from_trace) { std::printf(" (seed %llu)", static_cast<unsigned long long>(seed)); }
  std::printf(": %llu operations, capacity %llu B, alignment %llu B\n",
              static_cast<unsigned long long>(o.operations), static_cast<unsigned long long>(t.capacity),
              static_cast<unsigned long long>(t.alignment));
  std::printf("  %-28s %10.1f   (min %.1f, max %.1f over %zu runs)\n", "ns per allocate+free pair",
              f.ns_per_pair_median, f.ns_per_pair_min, f.ns_per_pair_max, f.ns_per_pair_runs.size());
  std::printf("  %-28s %10.0f / %.0f / %.0f   (per operation, steady_clock included)\n", "p50 / p99 / p99.9 ns",
              f.p50_ns, f.p99_ns, f.p999_ns);
  std::printf("  %-28s %10llu   of %llu allocations%s\n", "failed allocations",
              static_cast<unsigned long long>(o.failures), static_cast<unsigned long long>(o.allocations),
              f.failures_consistent ? "" : " (differed between runs!)");
  double const ratio = o.peak_live != 0 ? static_cast<double>(o.highest_offset) / static_cast<double>(o.peak_live) : 0.0;
  std::printf("  %-28s %10.4f   (highest offset %llu B / peak live %llu B)\n", "peak footprint", ratio,
              static_cast<unsigned long long>(o.highest_offset), static_cast<unsigned long long>(o.peak_live));
  std::printf("  %-28s %10.4f   (max %.4f, %llu samples every 10,000 ops)\n", "fragmentation mean", o.frag_mean,
              o.frag_max, static_cast<unsigned long long>(o.frag_samples));
  std::printf("  %-28s %10s\n", "arena valid at end", o.valid_at_end ? "yes" : "NO");
}

boost::json::object to_json(std::string const& name, std::uint64_t seed, wl::alloc_trace const& t,
                            wl::arena_figures const& f)
{
  auto const& o = f.outcome;
  boost::json::object j;
  j["workload"] = name;
  j["seed"] = seed;
  j["operations"] = o.operations;
  j["allocations"] = o.allocations;
  j["capacity"] = t.capacity;
  j["alignment"] = t.alignment;
  j["slots"] = t.slot_count;
  j["runs"] = f.ns_per_pair_runs.size();
  j["ns_per_pair"] = f.ns_per_pair_median;
  j["ns_per_pair_spread"] = boost::json::object{{"min", f.ns_per_pair_min}, {"max", f.ns_per_pair_max}};
  boost::json::array runs;
  for (double v : f.ns_per_pair_runs) { runs.push_back(v); }
  j["ns_per_pair_runs"] = std::move(runs);
  j["p50_ns"] = f.p50_ns;
  j["p99_ns"] = f.p99_ns;
  j["p999_ns"] = f.p999_ns;
  j["failures"] = o.failures;
  j["failures_consistent"] = f.failures_consistent;
  j["peak_footprint"] = o.highest_offset;
  j["peak_live_bytes"] = o.peak_live;
  j["footprint_ratio"] =
    o.peak_live != 0 ? static_cast<double>(o.highest_offset) / static_cast<double>(o.peak_live) : 0.0;
  j["frag_mean"] = o.frag_mean;
  j["frag_max"] = o.frag_max;
  j["frag_samples"] = o.frag_samples;
  j["valid"] = o.valid_at_end;
  return j;
}

// --through-pool: the trace of each seed replayed through a pool with no compaction, the
// defaults (compaction as the last resort) and compaction on
// (Note [Compaction]), beside the arena alone with its default scan and exact best fit.
struct pool_seed_run {
  std::uint64_t seed{0};
  std::uint64_t operations{0};
  std::uint64_t arena_failures{0};     // the arena alone, its options as given
  std::uint64_t best_fit_failures{0};  // the arena alone, whole lists scanned (exact best fit)
  wl::pool_arena_outcome off;   // no compaction
  wl::pool_arena_outcome dflt;  // the defaults: compaction only before a failure
  wl::pool_arena_outcome on;    // pool_options::compaction: before evicting
};

bench_common::spread spread_of(std::vector<pool_seed_run> const& runs, double (*f)(pool_seed_run const&))
{
  std::vector<double> v;
  v.reserve(runs.size());
  for (pool_seed_run const& r : runs) { v.push_back(f(r)); }
  return bench_common::summarize(std::move(v));
}

using pool_outcome = wl::pool_arena_outcome;

// The three runs of a seed, as columns: no compaction, the defaults, compaction on.
constexpr std::array<std::pair<char const*, pool_outcome pool_seed_run::*>, 3> kPoolColumns{{
  {"compaction off", &pool_seed_run::off},
  {"default (last resort)", &pool_seed_run::dflt},
  {"compaction on", &pool_seed_run::on},
}};

bench_common::spread spread_of(std::vector<pool_seed_run> const& runs, pool_outcome pool_seed_run::* column,
                               double (*f)(pool_outcome const&))
{
  std::vector<double> v;
  v.reserve(runs.size());
  for (pool_seed_run const& r : runs) { v.push_back(f(r.*column)); }
  return bench_common::summarize(std::move(v));
}

struct pool_row {
  char const* name;
  double (*of)(pool_outcome const&);
  bool fraction;
};

std::vector<pool_row> pool_rows()
{
  return {
    {"fragmented evictions", [](pool_outcome const& o) { return double(o.fragmented_evictions); }, false},
    {"failures", [](pool_outcome const& o) { return double(o.failures); }, false},
    {"evictions", [](pool_outcome const& o) { return double(o.evictions); }, false},
    {"fragmentation mean", [](pool_outcome const& o) { return o.frag_mean; }, true},
    {"fragmentation max", [](pool_outcome const& o) { return o.frag_max; }, true},
    {"compactions", [](pool_outcome const& o) { return double(o.compactions); }, false},
    {"tensors moved", [](pool_outcome const& o) { return double(o.compacted_tensors); }, false},
    {"GiB moved", [](pool_outcome const& o) { return double(o.compacted_bytes) / double(1ULL << 30U); }, true},
    {"frag. before compact()", [](pool_outcome const& o) { return o.end_frag_before; }, true},
    {"frag. after compact()", [](pool_outcome const& o) { return o.end_frag_after; }, true},
    {"compact() moved", [](pool_outcome const& o) { return double(o.end_moved); }, false},
    {"replay seconds", [](pool_outcome const& o) { return o.seconds; }, true},
  };
}

std::string cell(bench_common::spread const& s, bool fraction)
{
  char buf[96];
  if (fraction) {
    std::snprintf(buf, sizeof buf, "%.4f (%.4f-%.4f)", s.median, s.min, s.max);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f (%.0f-%.0f)", s.median, s.min, s.max);
  }
  return buf;
}

void print_pool_table(std::string const& name, wl::alloc_trace const& t, std::vector<pool_seed_run> const& runs,
                      bool device_only)
{
  std::printf("arena workload %s through a pool: %zu seed(s) from %llu, %llu operations each; device tier %llu B in "
              "one chunk %s (sim, phantom memory)\n",
              name.c_str(), runs.size(), static_cast<unsigned long long>(runs.front().seed),
              static_cast<unsigned long long>(runs.front().operations), static_cast<unsigned long long>(t.capacity),
              device_only ? "alone (no tier below)" : "over a host tier 4x as large");
  std::printf("  median (min-max) over the seeds; \"compact()\": pool::compact of the device tier after the replay\n");
  std::printf("  %-26s", "");
  for (auto const& [title, column] : kPoolColumns) { std::printf(" %-30s", title); }
  std::printf("\n");
  for (pool_row const& row : pool_rows()) {
    std::printf("  %-26s", row.name);
    for (auto const& [title, column] : kPoolColumns) {
      std::printf(" %-30s", cell(spread_of(runs, column, row.of), row.fraction).c_str());
    }
    std::printf("\n");
  }
  std::printf("  %-26s %-30s\n", "arena alone: failures",
              cell(spread_of(runs, [](pool_seed_run const& r) { return double(r.arena_failures); }), false).c_str());
  std::printf("  %-26s %-30s\n", "  best fit: failures",
              cell(spread_of(runs, [](pool_seed_run const& r) { return double(r.best_fit_failures); }), false).c_str());
  std::printf("  per seed: seed, fragmented evictions off/default/on, failures off/default/on, arena/best-fit failures\n");
  auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  for (pool_seed_run const& r : runs) {
    std::printf("    %llu  %llu/%llu/%llu  %llu/%llu/%llu  %llu/%llu%s\n", u(r.seed), u(r.off.fragmented_evictions),
                u(r.dflt.fragmented_evictions), u(r.on.fragmented_evictions), u(r.off.failures), u(r.dflt.failures),
                u(r.on.failures), u(r.arena_failures), u(r.best_fit_failures),
                r.off.valid_at_end && r.dflt.valid_at_end && r.on.valid_at_end ? "" : "  (pool invalid at end!)");
  }
}

boost::json::object pool_json(std::string const& name, wl::alloc_trace const& t, std::vector<pool_seed_run> const& runs,
                              bool device_only)
{
  boost::json::object j;
  j["workload"] = name;
  j["through_pool"] = true;
  j["device_only"] = device_only;
  j["capacity"] = t.capacity;
  auto key = [](char const* n) {  // "frag. before compact()" -> "end_frag_before_compact"
    std::string k;
    for (char const* c = n; *c != '\0'; ++c) {
      bool const word = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
      if (word) {
        k += *c;
      } else if (!k.empty() && k.back() != '_') {
        k += '_';
      }
    }
    while (!k.empty() && k.back() == '_') { k.pop_back(); }
    return k;
  };
  constexpr std::array<char const*, 3> kKeys{"compaction_off", "compaction_default", "compaction_on"};
  for (std::size_t c = 0; c < kPoolColumns.size(); ++c) {
    boost::json::object col;
    for (pool_row const& row : pool_rows()) {
      bench_common::spread const a = spread_of(runs, kPoolColumns[c].second, row.of);
      col[key(row.name)] = a.median;
      col[key(row.name) + "_spread"] = bench_common::to_json(a);
    }
    j[kKeys[c]] = std::move(col);
  }
  bench_common::spread const af = spread_of(runs, [](pool_seed_run const& r) { return double(r.arena_failures); });
  bench_common::spread const bf = spread_of(runs, [](pool_seed_run const& r) { return double(r.best_fit_failures); });
  j["arena_failures"] = af.median;
  j["arena_failures_spread"] = bench_common::to_json(af);
  j["best_fit_failures"] = bf.median;
  j["best_fit_failures_spread"] = bench_common::to_json(bf);
  boost::json::array seeds;
  bool valid = true;
  for (pool_seed_run const& r : runs) {
    seeds.push_back(r.seed);
    valid = valid && r.off.valid_at_end && r.dflt.valid_at_end && r.on.valid_at_end;
  }
  j["seeds"] = std::move(seeds);
  j["valid"] = valid;
  return j;
}

}  // namespace

int bench_arena_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool bench arena: replay an arena workload (docs/chapters/benchmarks.md) and report\n"
    "time per allocate+free pair, per-operation percentiles, failures, footprint and\n"
    "fragmentation.\n\n"
    "options");
  std::string workload;
  std::string seed_text = "1000";
  std::string write_trace;
  std::string trace;
  std::string runs_text = "5";
  std::string ops_text = "0";
  std::string seeds_text = "5";
  std::string sl_log2_text = std::to_string(arena_options{}.second_level_log2);
  std::string scan_limit_text = std::to_string(arena_options{}.bin_scan_limit);
  desc.add_options()
    ("help,h", "this text")
    ("workload,w", po::value(&workload), "rand50 | rand85 | dnn-static | dnn-dyn | dnn-tight")
    ("seed,s", po::value(&seed_text)->default_value(seed_text), "run seed, 0..2^64-1 (recorded runs: 1000..1004)")
    ("trace", po::value(&trace), "replay this alloc-trace file instead of generating a workload")
    ("write-trace", po::value(&write_trace), "write the operations to this alloc-trace file")
    ("json", "print one JSON object instead of the table")
    ("runs,r", po::value(&runs_text)->default_value(runs_text), "timed runs, 1..1000; the median is reported")
    ("ops", po::value(&ops_text)->default_value(ops_text),
     "keep only the first N operations, 0..100000000 (0 = all; smoke tests)")
    ("through-pool", "replay through a pool (device tier of the trace's capacity over a host tier), compaction off "
                     "and on, beside the arena alone and exact best fit: fragmented evictions, failures, fragmentation")
    ("device-only", "--through-pool: no host tier below the device tier (a placement that finds no room fails)")
    ("seeds", po::value(&seeds_text)->default_value(seeds_text),
     "--through-pool: seeds from --seed, 1..100 (median and spread over them)")
    ("sl-log2", po::value(&sl_log2_text)->default_value(sl_log2_text), "arena second-level subdivisions, log2 (2..6)")
    ("scan-limit", po::value(&scan_limit_text)->default_value(scan_limit_text),
     "arena: blocks examined per bin for the tightest fit, 0..4294967295 (0 = whole lists)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool bench arena: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  if (workload.empty() == trace.empty()) {
    std::fprintf(stderr, "tierpool bench arena: give exactly one of --workload or --trace\n\n");
    std::cerr << desc << '\n';
    return 2;
  }
  // -1 given to an unsigned option wrapped (--runs -1 ran for ever); --runs 0 meant 1.
  auto const seed = parse_checked<std::uint64_t>("--seed", seed_text, 0, UINT64_MAX);
  auto const runs = parse_checked<unsigned>("--runs", runs_text, 1, kMaxRuns);
  auto const ops = parse_checked<std::size_t>("--ops", ops_text, 0, kMaxOps);
  auto const sl_log2 = parse_checked<std::uint32_t>("--sl-log2", sl_log2_text, 2, 6);
  auto const scan_limit = parse_checked<std::uint32_t>("--scan-limit", scan_limit_text, 0, UINT32_MAX);

  auto const seeds = parse_checked<unsigned>("--seeds", seeds_text, 1, 100);
  if (vm.count("through-pool") != 0) {
    bool const device_only = vm.count("device-only") != 0;
    wl::measure_options mo;
    mo.arena.second_level_log2 = sl_log2;
    mo.arena.bin_scan_limit = scan_limit;
    wl::measure_options best = mo;
    best.arena.bin_scan_limit = 0;
    std::vector<pool_seed_run> seed_runs;
    wl::alloc_trace t;
    std::string name;
    unsigned const n = trace.empty() ? seeds : 1U;
    for (unsigned i = 0; i < n; ++i) {
      if (!trace.empty()) {
        t = wl::read_alloc_trace(trace);
        if (ops != 0 && t.ops.size() > ops) { t.ops.resize(ops); }
        name = "trace:" + trace;
      } else {
        auto const w = wl::parse_arena_workload(workload);
        if (!w) {
          std::fprintf(stderr, "tierpool bench arena: unknown workload '%s'\n", workload.c_str());
          return 2;
        }
        t = wl::generate_arena_workload(*w, seed + i, ops);
        name = workload;
      }
      pool_seed_run r;
      r.seed = seed + i;
      r.operations = t.ops.size();
      r.arena_failures = wl::replay_arena(t, mo).failures;
      r.best_fit_failures = wl::replay_arena(t, best).failures;
      r.off = wl::replay_through_pool(t, wl::pool_compaction::off, device_only);
      r.dflt = wl::replay_through_pool(t, wl::pool_compaction::last_resort, device_only);
      r.on = wl::replay_through_pool(t, wl::pool_compaction::ladder, device_only);
      seed_runs.push_back(r);
    }
    if (vm.count("json") != 0) {
      std::cout << boost::json::serialize(pool_json(name, t, seed_runs, device_only)) << '\n';
    } else {
      print_pool_table(name, t, seed_runs, device_only);
    }
    bool valid = true;
    for (pool_seed_run const& r : seed_runs) { valid = valid && r.off.valid_at_end && r.on.valid_at_end; }
    return valid ? 0 : 1;
  }

  wl::alloc_trace t;
  std::string name;
  if (!trace.empty()) {
    t = wl::read_alloc_trace(trace);  // trace_format_error names the line; main() prints it
    if (ops != 0 && t.ops.size() > ops) { t.ops.resize(ops); }
    name = "trace:" + trace;
  } else {
    auto const w = wl::parse_arena_workload(workload);
    if (!w) {
      std::fprintf(stderr, "tierpool bench arena: unknown workload '%s' (rand50, rand85, dnn-static, dnn-dyn, dnn-tight)\n",
                   workload.c_str());
      return 2;
    }
    t = wl::generate_arena_workload(*w, seed, ops);
    name = workload;
  }
  if (!write_trace.empty()) { wl::write_alloc_trace(write_trace, t); }

  wl::measure_options mo;
  mo.runs = runs;
  mo.arena.second_level_log2 = sl_log2;
  mo.arena.bin_scan_limit = scan_limit;
  wl::arena_figures const fig = wl::measure_arena(t, mo);
  if (vm.count("json") != 0) {
    std::cout << boost::json::serialize(to_json(name, seed, t, fig)) << '\n';
  } else {
    print_table(name, seed, !trace.empty(), t, fig);
  }
  return fig.outcome.valid_at_end ? 0 : 1;
}

}  // namespace tierpool::cli

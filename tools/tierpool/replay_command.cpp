// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// replay_command.cpp — `tierpool replay TRACE`: replay a trace per policy × capacity with
// the replay library (include/tierpool/replay.hpp) and print the table; optionally write
// JSON, CSV and an SVG plot. Everything else (engines, grid, formats) lives in the library.

// GCC 12 reports a false -Wnull-dereference inside std::string assignment when it inlines
// Boost.ProgramOptions' typed_value<std::string>::notify (see bench_pool_command.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "checked_options.hpp"
#include "commands.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/replay.hpp>
#include <tierpool/trace.hpp>

#include <boost/program_options.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace tierpool::cli {

namespace po = boost::program_options;
namespace tr = tierpool::replay;

namespace {

// Policy specs are separated by ',', but a spec's own parameters are too
// ("lru:refresh_interval=10,promote_on_read=false"): an item with '=' and no ':' continues
// the previous spec. An empty item (",", "lru,,arc", "lru,") is refused: it silently meant
// the default before.
std::vector<std::string> split_policies(std::vector<std::string> const& args)
{
  std::vector<std::string> out;
  for (std::string const& a : args) {
    std::string_view rest = a;
    for (;;) {
      auto const comma = rest.find(',');
      std::string_view const item = rest.substr(0, comma);
      if (item.find_first_not_of(" \t") == std::string_view::npos) {
        throw logic_error("--policy '" + a + "' has an empty policy name (give names separated by single commas, e.g. lru,arc)");
      }
      bool const continues = item.find('=') != std::string_view::npos && item.find(':') == std::string_view::npos;
      if (continues && !out.empty()) {
        out.back() += ",";
        out.back() += item;
      } else {
        out.emplace_back(item);
      }
      if (comma == std::string_view::npos) { break; }
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

// Most worker threads --threads accepts.
constexpr unsigned kMaxThreads = 1024;
// Most passes --loop accepts (compile() also refuses a loop too long for its arrays).
constexpr std::uint32_t kMaxLoop = 1'000'000;

void write_file(std::string const& path, std::string const& text)
{
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) { throw logic_error("cannot create '" + path + "'"); }
  f << text;
  f.close();
  if (!f) { throw logic_error("cannot write '" + path + "'"); }
}

}  // namespace

int replay_command(int argc, char** argv)
{
  std::string trace_path;
  std::vector<std::string> policy_args;
  std::string capacities = "10%,25%,50%";
  std::string mode = "pool";
  std::string link = "pcie4";
  std::string prefetch = "none";
  std::string tiers;
  std::string format = "auto";
  std::string json_path;
  std::string csv_path;
  std::string plot_path;
  std::string loop_text = "1";
  std::string threads_text;

  po::options_description desc("tierpool replay TRACE [options]");
  // clang-format off
  desc.add_options()
    ("help,h", "this help")
    ("policy,p", po::value(&policy_args)->composing(),
     "eviction policies, comma-separated specs (lru,arc,lru:refresh_interval=1000); repeatable; default lru")
    ("capacity,c", po::value(&capacities),
     "device / cache capacities, comma-separated: P% of the working set or a byte size (64MiB); default 10%,25%,50%")
    ("mode,m", po::value(&mode), "pool (the real pool on a simulated device, default) or cache (plain object cache)")
    ("ignore-size", "cache mode: every object has size 1 (capacities and bytes count objects)")
    ("link", po::value(&link), "host<->device link: pcie4 (default), pcie5, nvlink-c2c, cxl, or BW,LAT (bytes/s,ns)")
    ("prefetch", po::value(&prefetch), "prefetch predictor (pool mode): none (default), sequence[:depth=N,budget=BYTES] (tierpool policies lists them)")
    ("tiers", po::value(&tiers), "pool mode: tiers between the device tier and the backing host tier, "
     "KIND=SIZE,... (pinned_host=32MiB; a live pool's default has a pinned tier of twice the device tier)")
    ("loop", po::value(&loop_text), "replay the trace this many times in a row, 1..1000000 (default 1)")
    ("format", po::value(&format), "trace format: auto (default), text, binary, oracle_general, csv")
    ("json", po::value(&json_path), "write the results as JSON (one object per row) to FILE")
    ("csv", po::value(&csv_path), "write the results as CSV to FILE")
    ("plot", po::value(&plot_path), "write an SVG plot (miss ratio and bytes moved vs capacity) to FILE")
    ("threads", po::value(&threads_text), "runs in parallel, 1..1024 (default: all hardware threads)")
    ("quiet,q", "no progress on stderr")
    ("trace", po::value(&trace_path), "the trace file (positional)");
  // clang-format on
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool replay: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  if (trace_path.empty()) {
    std::fprintf(stderr, "tierpool replay: no trace given\n\n");
    std::cerr << desc << '\n';
    return 2;
  }
  auto const loop = parse_checked<std::uint32_t>("--loop", loop_text, 1, kMaxLoop);
  unsigned const threads = threads_text.empty() ? 0U : parse_checked<unsigned>("--threads", threads_text, 1, kMaxThreads);

  tr::grid_options g;
  g.mode = tr::parse_replay_mode(mode);
  bool const ignore_size = vm.count("ignore-size") != 0;
  if (ignore_size && g.mode != tr::replay_mode::cache) {
    std::fprintf(stderr, "tierpool replay: --ignore-size needs --mode cache\n");
    return 2;
  }
  g.policies = split_policies(policy_args);
  if (g.policies.empty()) { g.policies = {"lru"}; }  // no --policy at all
  g.reference = "belady";  // the "vs belady" column: bytes moved relative to belady, when it runs
  g.capacities = tr::parse_capacities(capacities);
  std::string link_error;
  auto const lm = parse_link_model(link, &link_error);
  if (!lm) { throw logic_error("invalid --link '" + link + "': " + link_error); }
  g.link = *lm;
  g.prefetch = prefetch;
  g.staging = tr::parse_staging_tiers(tiers);
  if (!g.staging.empty() && g.mode != tr::replay_mode::pool) {
    std::fprintf(stderr, "tierpool replay: --tiers needs --mode pool\n");
    return 2;
  }
  if (mode == "pool") {
    (void)policy_registry::with_builtins().create_predictor(prefetch);  // unknown: the registry's typed error, up front
  }
  g.threads = threads;

  trace::reader_options ro;
  ro.fmt = trace::parse_format(format);
  auto const t0 = std::chrono::steady_clock::now();
  tr::compiled_trace const compiled = tr::compiled_trace::compile_file(
    trace_path, ro, {.loop = loop, .ignore_size = ignore_size, .pool = g.mode == tr::replay_mode::pool});
  auto const t1 = std::chrono::steady_clock::now();
  if (compiled.requests() == 0) {
    // A capacity of P% of nothing is 1 byte, which the pool refused as "capacity at least
    // 256 bytes (got 1)": say what is wrong instead.
    throw logic_error("trace '" + trace_path + "' " +
                      (compiled.events() == 0 ? std::string("is empty") :
                                        "has no accesses (" + std::to_string(compiled.events() / loop) + " events)") +
                      ": nothing to replay");
  }

  bool const progress = vm.count("quiet") == 0 && isatty(STDERR_FILENO) != 0;
  if (progress) {
    g.on_run_done = [](tr::replay_result const& r, std::size_t done, std::size_t total) {
      std::fprintf(stderr, "[%zu/%zu] %s @ %s: miss ratio %.4f (%.2f s)\n", done, total, r.policy.c_str(),
                   r.capacity_label.c_str(), r.miss_ratio(), r.wall_seconds);
    };
    auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    g.on_progress = [last, &g](std::size_t run, double fraction) {
      auto const now = std::chrono::steady_clock::now();
      if (now - *last < std::chrono::seconds(2) || fraction >= 1.0) { return; }
      *last = now;
      std::size_t const nc = g.capacities.size();
      std::fprintf(stderr, "  %s @ %s: %.0f%%\n", g.policies[run / nc].c_str(), g.capacities[run % nc].label.c_str(),
                   fraction * 100.0);
    };
  }

  std::vector<tr::replay_result> const results = tr::run_grid(compiled, g);

  std::string const unit = ignore_size ? " objects" : "";
  auto amount = [&](std::uint64_t v) {
    return ignore_size ? std::to_string(v) + unit : tierpool::detail::format_byte_size(v);
  };
  std::printf("replay %s: %llu events, %llu requests, %llu objects, working set %s, peak live %s%s\n",
              trace_path.c_str(), static_cast<unsigned long long>(compiled.events()),
              static_cast<unsigned long long>(compiled.requests()), static_cast<unsigned long long>(compiled.objects()),
              amount(compiled.working_set_bytes()).c_str(), amount(compiled.peak_live_bytes()).c_str(),
              loop > 1 ? (" (looped " + std::to_string(loop) + "x)").c_str() : "");
  std::printf("mode %s, link %s, prefetch %s%s; read and compiled in %.2f s\n\n", mode.c_str(), link.c_str(),
              prefetch.c_str(), tiers.empty() ? "" : (", tiers device," + tiers + ",host").c_str(),
              std::chrono::duration<double>(t1 - t0).count());
  std::fputs(tr::format_table(results).c_str(), stdout);
  std::fflush(stdout);
  // Unserved requests (objects larger than the capacity, or a device pinned full) moved no
  // bytes and took no time: such a row's makespan can be under its own ideal time.
  for (tr::replay_result const& r : results) {
    if (r.unserved == 0) { continue; }
    std::fprintf(stderr,
                 "tierpool replay: warning: %s at %s left %llu of %llu requests unserved; its bytes moved and "
                 "makespan leave them out (the makespan may be under the ideal time)\n",
                 r.policy.c_str(), r.capacity_label.c_str(), static_cast<unsigned long long>(r.unserved),
                 static_cast<unsigned long long>(r.requests));
  }

  if (!json_path.empty()) { write_file(json_path, tr::to_json(results)); }
  if (!csv_path.empty()) { write_file(csv_path, tr::to_csv(results)); }
  if (!plot_path.empty()) {
    std::string const name = trace_path.substr(trace_path.find_last_of('/') + 1);
    write_file(plot_path, tr::to_svg(results, "tierpool replay " + name + " (" + mode + " mode)"));
  }
  return 0;
}

}  // namespace tierpool::cli

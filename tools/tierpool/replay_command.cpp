// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// replay_command.cpp — `tierpool replay TRACE`: replay a trace per policy × capacity (and
// per mode: `--mode pool,uvm,uvm-hints` compiles the trace once and runs one grid per mode)
// with the replay library (include/tierpool/replay.hpp) and print the table; optionally
// write JSON, CSV and an SVG plot. Everything else (engines, grid, formats) lives in the
// library.

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

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace tierpool::cli {

namespace po = boost::program_options;
namespace tr = tierpool::replay;

namespace {

// A codec's figures from `tierpool codec measure --json` (docs/chapters/codecs.md):
// FILE:CODEC[:TENSOR]. The ratio, and the median compress / decompress rates in bytes/s.
struct codec_figures {
  double ratio{1.0};
  double compress_bps{0.0};
  double decompress_bps{0.0};
};

codec_figures measured_codec(std::string const& spec)
{
  std::string const what = "invalid --storage-codec '" + spec + "'";
  std::size_t const c1 = spec.rfind(':');
  if (c1 == std::string::npos || c1 == 0) { throw logic_error(what + ": give FILE:CODEC[:TENSOR]"); }
  std::string file = spec.substr(0, c1);
  std::string codec = spec.substr(c1 + 1);
  std::string tensor = "activations";
  if (std::size_t const c0 = file.rfind(':'); c0 != std::string::npos && c0 != 0) {  // FILE:CODEC:TENSOR
    tensor = codec;
    codec = file.substr(c0 + 1);
    file = file.substr(0, c0);
  }
  std::ifstream in(file);
  if (!in) { throw logic_error(what + ": cannot read '" + file + "'"); }
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  boost::json::value const v = boost::json::parse(text.str(), ec);
  if (ec || !v.is_object() || !v.as_object().contains("data") || !v.at("data").is_array()) {
    throw logic_error(what + ": '" + file + "' is not the JSON of `tierpool codec measure --json`");
  }
  std::vector<std::string> seen;
  for (auto const& d : v.at("data").as_array()) {
    if (!d.is_object() || !d.as_object().contains("name") || !d.at("name").is_string()) { continue; }
    std::string const name(d.at("name").as_string());
    seen.push_back(name);
    if (name != tensor || !d.as_object().contains("codecs") || !d.at("codecs").is_array()) { continue; }
    for (auto const& c : d.at("codecs").as_array()) {
      if (!c.is_object() || !c.as_object().contains("codec") || std::string(c.at("codec").as_string()) != codec) {
        continue;
      }
      try {
        codec_figures f;
        f.ratio = boost::json::value_to<double>(c.at("ratio"));
        f.compress_bps = boost::json::value_to<double>(c.at("compress").at("median_gbps")) * 1e9;
        f.decompress_bps = boost::json::value_to<double>(c.at("decompress").at("median_gbps")) * 1e9;
        if (!(f.ratio > 0.0) || !(f.compress_bps > 0.0) || !(f.decompress_bps > 0.0)) { throw std::out_of_range("value"); }
        f.ratio = std::max(f.ratio, 1.0);  // a codec that grows the bytes holds no more than raw
        return f;
      } catch (std::exception const&) {
        throw logic_error(what + ": codec '" + codec + "' of tensor '" + tensor + "' lacks a ratio or a rate");
      }
    }
    throw logic_error(what + ": no codec '" + codec + "' measured for tensor '" + tensor + "'");
  }
  std::string list;
  for (auto const& n : seen) { list += (list.empty() ? "" : ", ") + n; }
  throw logic_error(what + ": no tensor '" + tensor + "' in '" + file + "' (it has: " + list + ")");
}

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

// `--mode a,b,...`: each a replay mode, none twice; cache mode alone (its trace is compiled
// differently).
std::vector<tr::replay_mode> split_modes(std::string const& text)
{
  std::vector<tr::replay_mode> out;
  std::string_view rest = text;
  for (;;) {
    auto const comma = rest.find(',');
    tr::replay_mode const m = tr::parse_replay_mode(rest.substr(0, comma));
    if (std::find(out.begin(), out.end(), m) != out.end()) {
      throw logic_error("--mode '" + text + "' names " + std::string(tr::to_string(m)) + " twice");
    }
    out.push_back(m);
    if (comma == std::string_view::npos) { break; }
    rest.remove_prefix(comma + 1);
  }
  if (out.size() > 1 && std::find(out.begin(), out.end(), tr::replay_mode::cache) != out.end()) {
    throw logic_error("--mode '" + text +
                      "': cache mode cannot be mixed with the others (its trace is compiled as an object cache); "
                      "run it on its own");
  }
  return out;
}

// `--uvm-fault-us N`: microseconds, a finite number >= 0 (at most 1 s).
double parse_fault_us(std::string const& text)
{
  double v = 0.0;
  auto const r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size() || !std::isfinite(v) || v < 0.0 ||
      v > 1e6) {
    throw logic_error("--uvm-fault-us must be a number of microseconds in 0..1000000, got '" + text + "'");
  }
  return v;
}

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
  std::vector<std::string> prefetch_args;
  std::string tiers;
  std::string format = "auto";
  std::string json_path;
  std::string csv_path;
  std::string plot_path;
  std::string plot_ideal_path;
  std::string timeline_path;
  std::string loop_text = "1";
  std::string threads_text;
  std::string uvm_page_text = "64KiB";
  std::string uvm_fault_text = "25";
  std::string host_capacity_text;
  std::string storage_text;
  std::string storage_link_text;
  std::string storage_ratio_text;
  std::string storage_codec_text;

  po::options_description desc("tierpool replay TRACE [options]");
  // clang-format off
  desc.add_options()
    ("help,h", "this help")
    ("policy,p", po::value(&policy_args)->composing(),
     "eviction policies, comma-separated specs (lru,arc,lru:refresh_interval=1000); repeatable; default lru")
    ("capacity,c", po::value(&capacities),
     "device / cache capacities, comma-separated: P% of the working set or a byte size (64MiB); default 10%,25%,50%")
    ("mode,m", po::value(&mode), "pool (the real pool on a simulated device, default), cache (plain object cache), "
     "uvm (CUDA managed memory, demand paging) or uvm-hints (managed memory with prefetch hints); a comma-separated "
     "list runs each (pool,uvm,uvm-hints; not cache with others)")
    ("uvm-page", po::value(&uvm_page_text), "uvm modes: the page (fault granularity), a power of two >= 4KiB: 64KiB (default) or 2MiB")
    ("uvm-fault-us", po::value(&uvm_fault_text), "uvm modes: cost of one fault batch in microseconds (default 25)")
    ("uvm-drop-clean", "uvm modes: evictions copy only dirty pages back (default: every page, as the driver does)")
    ("ignore-size", "cache mode: every object has size 1 (capacities and bytes count objects)")
    ("link", po::value(&link), "host<->device link: pcie4 (default), pcie5, nvlink-c2c, cxl, or BW,LAT (bytes/s,ns)")
    ("prefetch", po::value(&prefetch_args)->composing(),
     "prefetch predictors (pool mode), comma-separated specs, each a set of rows: none (default), "
     "sequence[:depth=N], plan (the transfer planner), oracle (the planner with the trace's future); "
     "repeatable (tierpool policies lists them)")
    ("tiers", po::value(&tiers), "pool mode: tiers between the device tier and the backing host tier, "
     "KIND=SIZE,... (pinned_host=32MiB; a live pool's default has a pinned tier of twice the device tier)")
    ("host-capacity", po::value(&host_capacity_text), "pool mode: the backing host tier's capacity, P% of the "
     "working set or a byte size (default: room for every tensor); smaller, it evicts into --storage")
    ("storage", po::value(&storage_text), "pool mode: a storage tier of this size below the host tier (1TiB), its "
     "copies timed as a PCIe 4 NVMe drive (7 GB/s read, 5 GB/s write, 80 us)")
    ("storage-link", po::value(&storage_link_text), "pool mode, with --storage: its read and write links, "
     "READ/WRITE, each a preset or BW,LAT (bytes/s,ns): for a compressed tier, the codec's decompress and "
     "compress rates as `tierpool codec measure` gives them (0.9e9,0/0.27e9,0)")
    ("storage-ratio", po::value(&storage_ratio_text), "pool mode, with --storage: the tier stores compressed "
     "copies at this ratio (>= 1; `tierpool codec measure`): it holds SIZE x RATIO of tensors")
    ("storage-codec", po::value(&storage_codec_text), "pool mode, with --storage: a compressed tier whose ratio "
     "and rates are measured ones: FILE:CODEC[:TENSOR], FILE the output of `tierpool codec measure --json`, CODEC "
     "lz4|zstd|q8|none, TENSOR the measured tensor kind (default activations); instead of --storage-ratio/-link")
    ("no-recompute", "pool mode: swap only; without it, tensors the trace marks recomputable are dropped "
     "instead of written back when rebuilding costs less (their cost runs as compute on the asking stream)")
    ("compaction", "pool mode: the pool compacts the device tier before it evicts (pool_options::compaction, off "
     "by default): device-to-device moves instead of transfers where the free and vacated bytes cover a request")
    ("no-trace-prefetch", "pool mode: skip the trace's own prefetch events (a recorded program's prefetch "
     "calls), so that the rows compare the --prefetch predictors alone")
    ("loop", po::value(&loop_text), "replay the trace this many times in a row, 1..1000000 (default 1)")
    ("format", po::value(&format), "trace format: auto (default), text, binary, oracle_general, csv")
    ("json", po::value(&json_path), "write the results as JSON (one object per row) to FILE")
    ("csv", po::value(&csv_path), "write the results as CSV to FILE")
    ("plot", po::value(&plot_path), "write an SVG plot (miss ratio and bytes moved vs capacity) to FILE")
    ("plot-ideal", po::value(&plot_ideal_path),
     "write an SVG plot of makespan / ideal vs capacity, one line per mode, prefetch and policy, to FILE")
    ("activity", "pool mode: record each run's copies and kernels and print where the device time went "
     "(kernels alone, copies hidden behind kernels, copies alone per link, idle); the JSON and CSV get the same figures")
    ("timeline", po::value(&timeline_path), "pool mode: as --activity, and write every run's copies and kernels to "
     "FILE as Chrome trace-event JSON (open it in ui.perfetto.dev or chrome://tracing)")
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

  std::vector<tr::replay_mode> const modes = split_modes(mode);
  bool const has_pool = std::find(modes.begin(), modes.end(), tr::replay_mode::pool) != modes.end();
  bool const has_uvm = std::any_of(modes.begin(), modes.end(), [](tr::replay_mode m) { return tr::is_uvm(m); });
  tr::grid_options g;
  g.mode = modes.front();
  {
    std::uint64_t page = 0;
    try {
      page = tierpool::detail::parse_byte_size(uvm_page_text);
    } catch (logic_error const& e) {
      throw logic_error("invalid --uvm-page '" + uvm_page_text + "': " + e.what());
    }
    if (page < 4096 || (page & (page - 1)) != 0) {
      throw logic_error("invalid --uvm-page '" + uvm_page_text + "': the page must be a power of two of at least 4KiB (64KiB, 2MiB)");
    }
    g.uvm_page_bytes = page;
    g.uvm_fault_ns = parse_fault_us(uvm_fault_text) * 1e3;
    tr::check_uvm_options(g.uvm_page_bytes, g.uvm_fault_ns);
    g.uvm_drop_clean = vm.count("uvm-drop-clean") != 0;
  }
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
  std::vector<std::string> prefetchers = split_policies(prefetch_args);
  if (prefetchers.empty()) { prefetchers = {"none"}; }
  std::string prefetch;
  for (std::string const& p : prefetchers) { prefetch += (prefetch.empty() ? "" : ",") + p; }
  g.prefetch = prefetchers.front();
  g.staging = tr::parse_staging_tiers(tiers);
  if (!g.staging.empty() && !has_pool) {
    std::fprintf(stderr, "tierpool replay: --tiers needs --mode pool\n");
    return 2;
  }
  if (!host_capacity_text.empty()) { g.host_capacity = tr::parse_capacity(host_capacity_text); }
  if (!storage_text.empty()) {
    try {
      g.storage_bytes = tierpool::detail::parse_byte_size(storage_text);
    } catch (logic_error const& e) {
      throw logic_error("invalid --storage '" + storage_text + "': " + e.what());
    }
    if (g.storage_bytes == 0) { throw logic_error("invalid --storage '" + storage_text + "': the size must be > 0"); }
  }
  if (!storage_link_text.empty()) {
    if (g.storage_bytes == 0) { throw logic_error("--storage-link needs --storage"); }
    std::size_t const slash = storage_link_text.find('/');
    if (slash == std::string::npos) {
      throw logic_error("invalid --storage-link '" + storage_link_text + "': give READ/WRITE, e.g. 0.9e9,0/0.27e9,0");
    }
    std::string err;
    auto const rd = parse_link_model(storage_link_text.substr(0, slash), &err);
    if (!rd) { throw logic_error("invalid --storage-link '" + storage_link_text + "' (read): " + err); }
    auto const wr = parse_link_model(storage_link_text.substr(slash + 1), &err);
    if (!wr) { throw logic_error("invalid --storage-link '" + storage_link_text + "' (write): " + err); }
    g.storage_read_link = *rd;
    g.storage_write_link = *wr;
  }
  if (!storage_ratio_text.empty()) {
    if (g.storage_bytes == 0) { throw logic_error("--storage-ratio needs --storage"); }
    std::size_t used = 0;
    double r = 0.0;
    try {
      r = std::stod(storage_ratio_text, &used);
    } catch (std::exception const&) {
      used = 0;
    }
    if (used != storage_ratio_text.size() || !(r >= 1.0) || r > 1e6) {
      throw logic_error("invalid --storage-ratio '" + storage_ratio_text + "': a number in [1, 1000000]");
    }
    g.storage_ratio = r;
  }
  if (!storage_codec_text.empty()) {
    if (g.storage_bytes == 0) { throw logic_error("--storage-codec needs --storage"); }
    if (!storage_ratio_text.empty() || !storage_link_text.empty()) {
      throw logic_error("--storage-codec gives the ratio and the links: not with --storage-ratio or --storage-link");
    }
    auto const f = measured_codec(storage_codec_text);
    g.storage_ratio = f.ratio;
    g.storage_read_link = link_model{f.decompress_bps, 0};
    g.storage_write_link = link_model{f.compress_bps, 0};
  }
  g.recompute = vm.count("no-recompute") == 0;
  g.compaction = vm.count("compaction") != 0;
  g.trace_prefetches = vm.count("no-trace-prefetch") == 0;
  if ((g.host_capacity || g.storage_bytes != 0) && (!has_pool || modes.size() != 1)) {
    std::fprintf(stderr, "tierpool replay: --host-capacity and --storage need --mode pool\n");
    return 2;
  }
  bool const activity = vm.count("activity") != 0 || !timeline_path.empty();
  if (activity && !has_pool) {
    std::fprintf(stderr, "tierpool replay: --activity and --timeline need --mode pool (a run on the simulated device)\n");
    return 2;
  }
  if (!g.trace_prefetches && !has_pool) {
    std::fprintf(stderr, "tierpool replay: --no-trace-prefetch needs --mode pool (UVM modes never replay them)\n");
    return 2;
  }
  if (g.compaction && !has_pool) {
    std::fprintf(stderr, "tierpool replay: --compaction needs --mode pool (the pool's device tier)\n");
    return 2;
  }
  g.record_activity = activity;
  g.record_timeline = !timeline_path.empty();  // the spans kept only to be written
  if (prefetch != "none" && !has_pool) {
    std::fprintf(stderr, "tierpool replay: --prefetch needs --mode pool (uvm-hints models the user's prefetches)\n");
    return 2;
  }
  if (has_pool) {
    for (std::string const& p : prefetchers) {
      (void)policy_registry::with_builtins().create_predictor(p);  // unknown: the registry's typed error, up front
    }
  }
  g.threads = threads;

  trace::reader_options ro;
  ro.fmt = trace::parse_format(format);
  auto const t0 = std::chrono::steady_clock::now();
  tr::compiled_trace const compiled = tr::compiled_trace::compile_file(
    trace_path, ro, {.loop = loop, .ignore_size = ignore_size, .pool = g.mode != tr::replay_mode::cache});
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

  // One grid per mode, concatenated. --prefetch and --tiers are the pool's; a UVM mode
  // evicts LRU pages as the driver does, so it runs the policy lru only.
  std::vector<tr::replay_result> results;
  std::vector<std::string> const policies = g.policies;
  for (tr::replay_mode const m : modes) {
    // A pool mode runs once per prefetcher; a UVM mode once.
    std::vector<std::string> const pfs = tr::is_uvm(m) ? std::vector<std::string>{"none"} : prefetchers;
    for (std::string const& pf : pfs) {
      tr::grid_options gm = g;
      gm.mode = m;
      gm.prefetch = pf;
      if (tr::is_uvm(m)) {
        gm.policies = {"lru"};
        gm.staging.clear();
      }
      g.policies = gm.policies;  // what the progress callback names
      std::vector<tr::replay_result> part = tr::run_grid(compiled, gm);
      results.insert(results.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    }
  }
  g.policies = policies;
  if (has_uvm && vm.count("quiet") == 0 &&
      std::any_of(policies.begin(), policies.end(), [](std::string const& p) { return p != "lru"; })) {
    std::fprintf(stderr, "tierpool replay: note: uvm modes evict LRU pages as the driver does: their rows run lru only\n");
  }
  // A UVM row's bytes moved against the pool's belady at the same capacity.
  if (modes.size() > 1) {
    for (tr::replay_result& r : results) {
      if (r.moved_vs_belady || !tr::is_uvm(r.mode)) { continue; }
      for (tr::replay_result const& b : results) {
        if (b.mode != tr::replay_mode::pool || b.policy != g.reference || b.capacity_label != r.capacity_label) { continue; }
        std::uint64_t const ref = b.bytes_h2d + b.bytes_d2h;
        std::uint64_t const mine = r.bytes_h2d + r.bytes_d2h;
        if (ref != 0) {
          r.moved_vs_belady = static_cast<double>(mine) / static_cast<double>(ref);
        } else if (mine == 0) {
          r.moved_vs_belady = 1.0;
        }
        break;
      }
    }
  }

  std::string const unit = ignore_size ? " objects" : "";
  auto amount = [&](std::uint64_t v) {
    return ignore_size ? std::to_string(v) + unit : tierpool::detail::format_byte_size(v);
  };
  std::printf("replay %s: %llu events, %llu requests, %llu objects, working set %s, peak live %s%s\n",
              trace_path.c_str(), static_cast<unsigned long long>(compiled.events()),
              static_cast<unsigned long long>(compiled.requests()), static_cast<unsigned long long>(compiled.objects()),
              amount(compiled.working_set_bytes()).c_str(), amount(compiled.peak_live_bytes()).c_str(),
              loop > 1 ? (" (looped " + std::to_string(loop) + "x)").c_str() : "");
  std::string uvm_text;
  if (has_uvm) {
    char buf[128];
    std::snprintf(buf, sizeof buf, ", uvm page %s, fault %g us%s", tierpool::detail::format_byte_size(g.uvm_page_bytes).c_str(),
                  g.uvm_fault_ns * 1e-3, g.uvm_drop_clean ? ", clean pages dropped" : "");
    uvm_text = buf;
  }
  std::printf("mode %s, link %s, prefetch %s%s%s; read and compiled in %.2f s (%s)\n\n", mode.c_str(), link.c_str(),
              prefetch.c_str(), tiers.empty() ? "" : (", tiers device," + tiers + ",host").c_str(), uvm_text.c_str(),
              std::chrono::duration<double>(t1 - t0).count(),
              tierpool::detail::format_byte_size(compiled.compiled_bytes()).c_str());
  std::fputs(tr::format_table(results).c_str(), stdout);
  std::fflush(stdout);
  // Unserved requests (objects larger than the capacity, or a device pinned full) moved no
  // bytes and took no time: such a row's makespan can be under its own ideal time.
  for (tr::replay_result const& r : results) {
    if (r.unserved == 0) { continue; }
    std::fprintf(stderr,
                 "tierpool replay: warning: %s%s at %s left %llu of %llu requests unserved; its bytes moved and "
                 "makespan leave them out (the makespan may be under the ideal time)\n",
                 r.policy.c_str(), modes.size() > 1 ? (" (" + std::string(tr::to_string(r.mode)) + ")").c_str() : "",
                 r.capacity_label.c_str(), static_cast<unsigned long long>(r.unserved),
                 static_cast<unsigned long long>(r.requests));
  }

  if (activity) {
    std::printf("\nwhere the device time went (kernels on any stream; copies on the h2d and d2h links):\n");
    std::fputs(tr::format_activity(results).c_str(), stdout);
    std::fflush(stdout);
  }
  if (!timeline_path.empty()) { write_file(timeline_path, tr::to_chrome_trace(results)); }
  if (!json_path.empty()) { write_file(json_path, tr::to_json(results)); }
  if (!csv_path.empty()) { write_file(csv_path, tr::to_csv(results)); }
  std::string const name = trace_path.substr(trace_path.find_last_of('/') + 1);
  if (!plot_path.empty()) {
    // One line per policy: with several modes or prefetchers, a policy's name carries its
    // mode and its prefetcher (else the rows of one policy made one zigzag line).
    std::vector<tr::replay_result> plotted = results;
    for (tr::replay_result& r : plotted) {
      std::string suffix;
      if (modes.size() > 1) { suffix = std::string(tr::to_string(r.mode)); }
      if (prefetchers.size() > 1 && !tr::is_uvm(r.mode)) { suffix += (suffix.empty() ? "" : ", ") + std::string("prefetch ") + r.prefetch; }
      if (!suffix.empty()) { r.policy += " (" + suffix + ")"; }
    }
    write_file(plot_path, tr::to_svg(plotted, "tierpool replay " + name + " (" + mode + " mode)"));
  }
  if (!plot_ideal_path.empty()) {
    write_file(plot_ideal_path, tr::to_ideal_svg(results, "tierpool replay " + name + ": makespan / ideal (" + mode + " mode)"));
  }
  return 0;
}

}  // namespace tierpool::cli

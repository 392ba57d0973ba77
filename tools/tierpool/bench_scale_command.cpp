// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// bench_scale_command.cpp — `tierpool bench scale`: what one tensor costs the pool as the
// pool grows to a million of them (docs/chapters/benchmarks.md, "Scale").
//
// For each tensor count n, a fresh pool on the sim backend with phantom memory and the
// virtual clock (so the figures measure the pool, not the simulator's memory or its copy
// threads): a device tier of --device-bytes, filled first, and a host tier for the rest.
// Then, per run:
// - allocate n tensors with the device tier full (they land in the host tier): ns each,
//   and the process's resident memory growth over them divided by n (the pool's metadata
//   per tensor: records, index, tiers' blocks, the policies' entries; the program's own
//   vector of handles is made before, so it is not counted);
// - acquire + release through all of them in order, once untimed then timed (--ops at
//   most): a miss that evicts when the device tier cannot hold them, a hit when it can;
// - pool::fits(--fits-bytes) on the device tier, and validate(), each timed.
// Each run is a child process of its own (fresh memory); the median over --runs runs is
// printed with its spread. Figures of one build alone say
// little: run two builds side by side (bench/results/ holds such tables).

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"  // see bench_pool_command.cpp
#endif

#include "bench_common.hpp"
#include "checked_options.hpp"
#include "commands.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace tierpool::cli {

namespace po = boost::program_options;
namespace json = boost::json;
using detail::format_byte_size;

namespace {

using namespace bench_common;

// Resident set size of this process in bytes (/proc/self/statm), 0 where unreadable.
std::size_t resident_bytes()
{
  std::ifstream in("/proc/self/statm");
  std::size_t pages = 0;
  std::size_t rss = 0;
  if (!(in >> pages >> rss)) { return 0; }
  long const page = sysconf(_SC_PAGESIZE);
  return rss * static_cast<std::size_t>(page > 0 ? page : 4096);
}

struct scale_setup {
  std::size_t tensor_bytes{4_KiB};
  std::size_t device_bytes{64_MiB};
  std::size_t fits_bytes{64_KiB};
  std::size_t ops{200'000};
  bool wall{false};  // --sim real-wall: real memory and the wall clock (the simulator's own cost shows)
};

struct scale_run {
  double alloc_ns{0.0};      // per allocate, device full
  double meta_bytes{0.0};    // RSS growth per tensor
  double acquire_ns{0.0};    // per acquire + release
  double miss_ratio{0.0};    // misses / acquires of the timed pass
  double fits_ms{0.0};       // per fits() (median of the calls after the first)
  double fits_first_ms{0.0}; // the first fits() (it may set up what later calls use)
  double validate_ms{0.0};   // one validate()
  double free_ns{0.0};       // per free
  bool valid{true};
};

scale_run run_once(std::size_t n, scale_setup const& c)
{
  pool_options o;
  o.backend = backend_choice::sim;
  o.read_environment = false;  // the figures must not depend on TIERPOOL_* variables
  o.notice = fallback_notice::silent;
  o.sim.memory = c.wall ? sim_memory_mode::real : sim_memory_mode::phantom;
  o.sim.clock = c.wall ? sim_clock_mode::wall : sim_clock_mode::virtual_clock;
  if (c.wall) { o.sim.links = sim_links::unthrottled(); }
  std::size_t const fillers = c.device_bytes / c.tensor_bytes;
  o.sim.device_bytes = c.device_bytes + 64_MiB;
  std::size_t const host = (n + fillers + 16) * c.tensor_bytes * 2;
  o.tiers = {tier_options{.kind = tier_kind::device, .capacity_bytes = c.device_bytes, .name = "device"},
             tier_options{.kind = tier_kind::host, .capacity_bytes = host, .name = "host"}};
  pool p{std::move(o)};
  stream_handle const s = p.create_stream();
  std::vector<tensor> fill;
  fill.reserve(fillers);
  for (std::size_t i = 0; i < fillers; ++i) { fill.push_back(p.allocate(c.tensor_bytes)); }

  scale_run r;
  // The program's handles are its own memory, not the pool's: made (and their pages
  // touched) before the first figure, filled in place after it.
  std::vector<tensor> ts(n);
  std::size_t const rss0 = resident_bytes();
  auto const t0 = clock_type::now();
  for (std::size_t i = 0; i < n; ++i) { ts[i] = p.allocate(c.tensor_bytes); }
  auto const t1 = clock_type::now();
  std::size_t const rss1 = resident_bytes();
  r.alloc_ns = elapsed_ns(t0, t1) / static_cast<double>(n);
  r.meta_bytes = rss1 > rss0 ? static_cast<double>(rss1 - rss0) / static_cast<double>(n) : 0.0;

  std::size_t const ops = c.ops;  // cycling through the tensors as often as it takes
  auto pass = [&](std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      lease l = p.acquire(ts[i % n], access_mode::read, s);
      keep(l.data());
    }
  };
  pass(n);  // untimed: the steady state (all resident when they fit, else misses)
  p.synchronize(s);
  auto const before = p.stats();
  auto const t2 = clock_type::now();
  pass(ops);
  auto const t3 = clock_type::now();
  p.synchronize(s);
  auto const after = p.stats();
  r.acquire_ns = elapsed_ns(t2, t3) / static_cast<double>(ops);
  r.miss_ratio = static_cast<double>(after.misses - before.misses) / static_cast<double>(ops);

  constexpr int kFits = 6;
  std::vector<double> fits;
  for (int i = 0; i < kFits; ++i) {
    auto const a = clock_type::now();
    fit_report const f = p.fits(c.fits_bytes, tier_id{0});
    auto const b = clock_type::now();
    keep(&f);
    fits.push_back(elapsed_ns(a, b) / 1e6);
  }
  r.fits_first_ms = fits.front();
  r.fits_ms = summarize(std::vector<double>(fits.begin() + 1, fits.end())).median;
  auto const t4 = clock_type::now();
  r.valid = p.validate();
  auto const t5 = clock_type::now();
  r.validate_ms = elapsed_ns(t4, t5) / 1e6;
  auto const t6 = clock_type::now();
  ts.clear();
  auto const t7 = clock_type::now();
  r.free_ns = elapsed_ns(t6, t7) / static_cast<double>(n);
  fill.clear();
  p.destroy_stream(s);
  p.close();
  return r;
}

// One run in a child process of its own (fork, the result back through a pipe): this
// process makes no pool, so every run starts from the same fresh memory. In one process
// a later run would find the records, slot arrays and the tiers' nodes an earlier pool left
// in the process's slabs and allocator, and the metadata figure would count almost nothing.
// @throws tierpool::logic_error when the child cannot be made or fails.
scale_run run_isolated(std::size_t n, scale_setup const& c)
{
  int fds[2];
  if (::pipe(fds) != 0) { throw logic_error("bench scale: pipe failed"); }
  std::cout.flush();
  std::fflush(nullptr);
  pid_t const pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw logic_error("bench scale: fork failed");
  }
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    try {
      scale_run const r = run_once(n, c);
      code = ::write(fds[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r) ? 0 : 3;
    } catch (std::exception const& e) {
      std::fprintf(stderr, "tierpool bench scale: %s\n", e.what());
      code = 4;
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  scale_run r;
  ssize_t const got = ::read(fds[0], &r, sizeof r);
  ::close(fds[0]);
  int status = 0;
  (void)::waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw logic_error("bench scale: the run of " + std::to_string(n) + " tensors failed in its child process");
  }
  return r;
}

std::vector<std::size_t> parse_counts(std::string const& text)
{
  std::vector<std::size_t> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t const comma = std::min(text.find(',', pos), text.size());
    out.push_back(parse_checked<std::size_t>("--tensors", text.substr(pos, comma - pos), 1, 10'000'000));
    pos = comma + 1;
  }
  return out;
}

}  // namespace

int bench_scale_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool bench scale: what one tensor costs the pool as the pool grows (sim backend,\n"
    "phantom memory, virtual clock; docs/chapters/benchmarks.md, \"Scale\"). For each count:\n"
    "allocate with the device tier full (ns, and metadata bytes per tensor from the\n"
    "process's resident memory), acquire + release of each in turn (a miss that evicts when\n"
    "they cannot all be resident), pool::fits() and validate() (ms). The TIERPOOL_*\n"
    "variables are ignored.\n\noptions");
  std::string tensors_text = "10000,100000,1000000";
  std::string tensor_bytes_text = "4KiB";
  std::string device_bytes_text = "64MiB";
  std::string fits_bytes_text = "64KiB";
  std::string ops_text = "200000";
  std::string runs_text = "3";
  std::string sim_text = "phantom-virtual";
  desc.add_options()
    ("help,h", "this text")
    ("tensors", po::value(&tensors_text)->default_value(tensors_text), "tensor counts, comma-separated (1..10000000 each)")
    ("tensor-bytes", po::value(&tensor_bytes_text)->default_value(tensor_bytes_text), "size of each tensor")
    ("device-bytes", po::value(&device_bytes_text)->default_value(device_bytes_text), "device tier capacity")
    ("fits-bytes", po::value(&fits_bytes_text)->default_value(fits_bytes_text), "the size pool::fits() is asked about")
    ("ops", po::value(&ops_text)->default_value(ops_text), "timed acquires per run, in tensor order, cycling (1..100000000)")
    ("runs,r", po::value(&runs_text)->default_value(runs_text), "runs per count (1..100); the median is reported")
    ("sim", po::value(&sim_text)->default_value(sim_text),
     "phantom-virtual (the pool's own cost) | real-wall (real bytes, wall clock, unthrottled links: the simulator's cost too)")
    ("json", "print one JSON object instead of the table");
  po::variables_map vm;
  if (!parse_args("scale", desc, argc, argv, vm)) { return 2; }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  scale_setup c;
  std::vector<std::size_t> counts;
  unsigned runs = 0;
  try {
    counts = parse_counts(tensors_text);
    runs = parse_checked<unsigned>("--runs", runs_text, 1, 100);
    c.ops = parse_checked<std::size_t>("--ops", ops_text, 1, 100'000'000);
    c.tensor_bytes = detail::parse_byte_size(tensor_bytes_text);
    c.device_bytes = detail::parse_byte_size(device_bytes_text);
    c.fits_bytes = detail::parse_byte_size(fits_bytes_text);
  } catch (logic_error const& e) {
    return usage_error("scale", e.what());
  }
  if (sim_text == "real-wall") {
    c.wall = true;
  } else if (sim_text != "phantom-virtual") {
    return usage_error("scale", ("unknown --sim '" + sim_text + "' (valid: phantom-virtual, real-wall)").c_str());
  }
  if (c.tensor_bytes == 0 || c.fits_bytes == 0) { return usage_error("scale", "sizes must be at least 1 byte"); }
  if (c.device_bytes < c.tensor_bytes) { return usage_error("scale", "--device-bytes must hold one tensor"); }

  bool const as_json = vm.count("json") != 0;
  if (!as_json) {
    std::printf("pool scale: %s tensors, device tier %s (full before timing), sim %s\n",
                format_byte_size(c.tensor_bytes).c_str(), format_byte_size(c.device_bytes).c_str(),
                c.wall ? "real memory, wall clock, unthrottled links" : "phantom memory, virtual clock");
    std::printf("median (min-max) of %u run(s)\n", runs);
    std::printf("%10s  %22s  %22s  %22s  %5s  %22s  %22s  %22s\n", "tensors", "metadata, B/tensor", "allocate, ns",
                "acquire+release, ns", "miss", "fits, ms", "first fits, ms", "validate, ms");
  }
  json::array rows;
  bool all_valid = true;
  auto cell = [](spread const& s, char const* fmt) {
    char buf[128];
    char a[32];
    char b[32];
    char m[32];
    std::snprintf(m, sizeof m, fmt, s.median);
    std::snprintf(a, sizeof a, fmt, s.min);
    std::snprintf(b, sizeof b, fmt, s.max);
    std::snprintf(buf, sizeof buf, "%s (%s-%s)", m, a, b);
    return std::string(buf);
  };
  for (std::size_t n : counts) {
    std::vector<double> meta, alloc, acq, miss, fits, first, val, freed;
    for (unsigned r = 0; r < runs; ++r) {
      scale_run const x = run_isolated(n, c);
      meta.push_back(x.meta_bytes);
      alloc.push_back(x.alloc_ns);
      acq.push_back(x.acquire_ns);
      miss.push_back(x.miss_ratio);
      fits.push_back(x.fits_ms);
      first.push_back(x.fits_first_ms);
      val.push_back(x.validate_ms);
      freed.push_back(x.free_ns);
      all_valid = all_valid && x.valid;
    }
    spread const sm = summarize(meta), sa = summarize(alloc), sq = summarize(acq), sx = summarize(miss),
                 sf = summarize(fits), s1 = summarize(first), sv = summarize(val), sd = summarize(freed);
    if (as_json) {
      rows.push_back(json::object{{"tensors", n},
                                  {"metadata_bytes_per_tensor", sm.median},
                                  {"metadata_spread", to_json(sm)},
                                  {"allocate_ns", sa.median},
                                  {"allocate_spread", to_json(sa)},
                                  {"acquire_release_ns", sq.median},
                                  {"acquire_release_spread", to_json(sq)},
                                  {"miss_ratio", sx.median},
                                  {"fits_ms", sf.median},
                                  {"fits_spread", to_json(sf)},
                                  {"fits_first_ms", s1.median},
                                  {"fits_first_spread", to_json(s1)},
                                  {"validate_ms", sv.median},
                                  {"validate_spread", to_json(sv)},
                                  {"free_ns", sd.median},
                                  {"free_spread", to_json(sd)}});
    } else {
      std::printf("%10zu  %22s  %22s  %22s  %5.2f  %22s  %22s  %22s\n", n, cell(sm, "%.0f").c_str(),
                  cell(sa, "%.0f").c_str(), cell(sq, "%.0f").c_str(), sx.median, cell(sf, "%.3f").c_str(),
                  cell(s1, "%.1f").c_str(), cell(sv, "%.1f").c_str());
      std::fflush(stdout);
    }
  }
  if (as_json) {
    json::object j{{"benchmark", "scale"},
                   {"sim", c.wall ? "real-wall" : "phantom-virtual"},
                   {"tensor_bytes", c.tensor_bytes},
                   {"device_bytes", c.device_bytes},
                   {"fits_bytes", c.fits_bytes},
                   {"runs", runs},
                   {"valid", all_valid},
                   {"rows", std::move(rows)}};
    std::cout << json::serialize(j) << '\n';
  } else {
    std::printf("pool valid at end of every run: %s\n", all_valid ? "yes" : "NO");
  }
  return all_valid ? 0 : 1;
}

}  // namespace tierpool::cli

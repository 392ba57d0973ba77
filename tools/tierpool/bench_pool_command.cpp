// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// bench_pool_command.cpp — `tierpool bench hitpath` and `tierpool bench copy`: the pool's
// runtime overhead workloads of docs/chapters/benchmarks.md.
//
// - hitpath: acquire + release of a resident tensor, ns per pair, 1 thread and N threads
//   side by side in every run (the ratio is the figure to compare, not the absolute time).
// - copy: bytes the pool moves between its device tier and a host tier per second, against
//   std::memcpy of the same bytes between two host buffers, alternating within every run.
//
// Both build a pool on the sim backend (real memory, wall clock, unthrottled links) unless
// --backend or TIERPOOL_BACKEND names another; the pool itself is only used through its
// public header (include/tierpool/pool.hpp). The pool reads the TIERPOOL_* variables
// (kEnvironmentHelp) except the two the commands decide: the backend and the tier sizes.

// GCC 12 reports a false -Wnull-dereference inside std::string assignment when it inlines
// Boost.ProgramOptions' typed_value<std::string>::notify; the pragma must precede the
// includes because the diagnostic is located in the library headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "bench_common.hpp"
#include "checked_options.hpp"
#include "commands.hpp"

#include <tierpool/backend_factory.hpp>
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::cli {

namespace po = boost::program_options;
namespace json = boost::json;
using detail::format_byte_size;

namespace {

using bench_common::clock_type;
using bench_common::elapsed_ns;
using bench_common::keep;
using bench_common::parse_args;
using bench_common::spread;
using bench_common::summarize;
using bench_common::to_json;
using bench_common::usage_error;

// ---- options shared by both commands ----------------------------------------------

// The backend: --backend, else TIERPOOL_BACKEND, else sim (a benchmark must not silently
// change machine model, so the default is not `auto`).
struct backend_pick {
  backend_choice choice{backend_choice::sim};
  std::string requested{"sim (default)"};
};

backend_pick pick_backend(std::string const& flag)
{
  backend_pick b;
  if (!flag.empty()) {
    b.choice = parse_backend_choice(flag);  // logic_error names the valid values
    b.requested = "--backend " + flag;
  } else if (auto env = backend_choice_from_env()) {
    b.choice = *env;
    b.requested = "TIERPOOL_BACKEND=" + std::string(to_string(*env));
  }
  return b;
}

// The --help paragraph on the environment (docs/chapters/benchmarks.md says the same).
constexpr char const* kEnvironmentHelp =
  "Environment: TIERPOOL_BACKEND is the default of --backend; TIERPOOL_DEVICE_BYTES is\n"
  "ignored (the command sizes its tiers); TIERPOOL_POLICY, TIERPOOL_PREFETCH, TIERPOOL_TRACE,\n"
  "TIERPOOL_PUBLISH, TIERPOOL_PUBLISH_GROUP and TIERPOOL_COMPACTION apply to its pool as to\n"
  "any (an invalid value is an error naming the variable). A trace that cannot be written\n"
  "completely fails the command (exit 1).\n\n";

// --device: the device ordinal (CUDA's, or the simulated device's: 0..255).
constexpr char const* kDeviceHelp = "device to run on: CUDA device N, or simulated device N on sim (0..255)";

pool_options base_options(backend_pick const& b, std::size_t device_bytes, int device)
{
  pool_options o;
  o.backend = b.choice;
  o.device = device;
  // The command picks the backend (above: its default is sim, not auto) and sizes every
  // tier; the pool reads the other variables (policy, prefetch, trace, publish, its group).
  o.ignore_environment = {"TIERPOOL_BACKEND", "TIERPOOL_DEVICE_BYTES"};
  o.notice = fallback_notice::silent;  // a trace failure is reported by finish() instead
  o.sim.memory = sim_memory_mode::real;
  o.sim.clock = sim_clock_mode::wall;
  o.sim.links = sim_links::unthrottled();
  o.sim.device_bytes = std::max(o.sim.device_bytes, device_bytes);
  return o;
}

std::string backend_line(pool const& p)
{
  auto const& caps = p.backend().caps();
  return caps.name + " (" + caps.device_name + ")";
}

// Closes the pool (its trace is whole only then) and returns why its trace was not
// recorded completely ("" when it was, or none was recorded).
std::string finish(pool& p)
{
  p.close();
  return p.tracing_error();
}

// The command's exit status: 1 when its result is invalid or the trace incomplete (said on stderr).
int exit_status(char const* name, bool ok, std::string const& trace_failure)
{
  if (!trace_failure.empty()) {
    std::cout.flush();  // after the results (a pipe buffers them)
    std::fflush(stdout);
    std::fprintf(stderr, "tierpool bench %s: the trace (TIERPOOL_TRACE) was not recorded completely: %s\n", name,
                 trace_failure.c_str());
  }
  return ok && trace_failure.empty() ? 0 : 1;
}

// ---- bench hitpath ------------------------------------------------------------------

struct thread_context {
  stream_handle stream{};
  std::vector<tensor> tensors;
};

// Runs `threads` threads (contexts 0..threads-1), each doing `ops` acquire+release pairs on
// its own resident tensors, started together; returns the mean over threads of each
// thread's ns per pair.
double time_hit_loops(pool& p, std::vector<thread_context> const& ctx, unsigned threads, std::size_t ops)
{
  std::vector<double> ns(threads, 0.0);
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (unsigned w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      auto const& c = ctx[w];
      auto const k = c.tensors.size();
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (!go.load(std::memory_order_acquire)) { std::this_thread::yield(); }
      std::size_t j = 0;
      auto const t0 = clock_type::now();
      for (std::size_t i = 0; i < ops; ++i) {
        auto l = p.acquire(c.tensors[j], access_mode::read, c.stream);
        keep(l.data());
        if (++j == k) { j = 0; }
      }
      auto const t1 = clock_type::now();
      ns[w] = elapsed_ns(t0, t1) / static_cast<double>(ops);
    });
  }
  while (ready.load(std::memory_order_acquire) != threads) { std::this_thread::yield(); }
  go.store(true, std::memory_order_release);
  for (auto& t : workers) { t.join(); }
  double sum = 0.0;
  for (double v : ns) { sum += v; }
  return sum / static_cast<double>(threads);
}

}  // namespace

int bench_hitpath_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool bench hitpath: time acquire + release of a tensor already resident on the\n"
    "device tier (the pool's hit path, docs/chapters/benchmarks.md), in ns per pair and\n"
    "per thread.\n"
    "With --threads N > 1, 1 thread and N threads run side by side in every run and the\n"
    "ratio N-thread / 1-thread is reported.\n\n" +
    std::string(kEnvironmentHelp) + "options");
  unsigned threads = 1;
  std::string runs_text = "5";  // text: -1 read into an unsigned wraps (checked_options.hpp)
  std::string ops_text = "1000000";
  std::size_t tensors_per_thread = 1;
  std::string tensor_bytes_text = "64KiB";
  std::string backend_flag;
  std::string device_text = "0";  // text, checked by parse_checked ("-1", "1x" and "one" are refused)
  desc.add_options()
    ("help,h", "this text")
    ("threads,t", po::value(&threads)->default_value(threads), "threads acquiring at once (1..64)")
    ("runs,r", po::value(&runs_text)->default_value(runs_text), "timed runs (1..1000); the median is reported")
    ("ops", po::value(&ops_text)->default_value(ops_text), "acquire+release pairs per thread per run (1..1000000000)")
    ("tensors-per-thread", po::value(&tensors_per_thread)->default_value(tensors_per_thread),
     "resident tensors each thread cycles through (1..4096)")
    ("tensor-bytes", po::value(&tensor_bytes_text)->default_value(tensor_bytes_text), "size of each tensor")
    ("backend", po::value(&backend_flag), "sim | cuda | auto (default: TIERPOOL_BACKEND, else sim)")
    ("device", po::value(&device_text)->default_value(device_text), kDeviceHelp)
    ("fits", "ask pool::fits() once before timing: the device tier then keeps its register of pinned copies, "
             "which every pin and unpin updates (Note [A register of pinned copies])")
    ("json", "print one JSON object instead of the table");
  po::variables_map vm;
  if (!parse_args("hitpath", desc, argc, argv, vm)) { return 2; }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  if (threads == 0 || threads > 64) { return usage_error("hitpath", "--threads must be in 1..64"); }
  unsigned runs = 0;
  std::size_t ops = 0;
  int device = 0;
  try {
    runs = parse_checked<unsigned>("--runs", runs_text, 1, 1000);
    ops = parse_checked<std::size_t>("--ops", ops_text, 1, 1'000'000'000);
    device = parse_checked<int>("--device", device_text, 0, 255);
  } catch (logic_error const& e) {
    return usage_error("hitpath", e.what());
  }
  if (tensors_per_thread == 0 || tensors_per_thread > 4096) {
    return usage_error("hitpath", "--tensors-per-thread must be in 1..4096");
  }
  std::size_t const tensor_bytes = detail::parse_byte_size(tensor_bytes_text);
  if (tensor_bytes == 0) { return usage_error("hitpath", "--tensor-bytes must be at least 1 byte"); }

  // Device tier: room for every tensor, twice over (no eviction can happen); host tier below.
  std::size_t const resident = tensor_bytes * tensors_per_thread * threads;
  std::size_t const device_cap = std::max<std::size_t>(2 * resident + 1_MiB, 16_MiB);
  auto const pick = pick_backend(backend_flag);
  pool_options o = base_options(pick, device_cap, device);
  o.tiers = {tier_options{.kind = tier_kind::device, .capacity_bytes = device_cap},
             tier_options{.kind = tier_kind::host, .capacity_bytes = device_cap}};
  pool p{std::move(o)};

  std::vector<thread_context> ctx(threads);
  for (unsigned w = 0; w < threads; ++w) {
    ctx[w].stream = p.create_stream();
    for (std::size_t i = 0; i < tensors_per_thread; ++i) {
      ctx[w].tensors.push_back(
        p.allocate(tensor_bytes, {.name = "hit" + std::to_string(w) + "." + std::to_string(i)}));
      { auto l = p.acquire(ctx[w].tensors.back(), access_mode::read, ctx[w].stream); }
    }
    p.synchronize(ctx[w].stream);
  }

  bool const with_fits = vm.count("fits") != 0;
  if (with_fits) { (void)p.fits(tensor_bytes, tier_id{0}); }
  // Warm-up (untimed): caches, branch predictors, the pool's first-query flags.
  std::size_t const warm = std::min<std::size_t>(ops, 20'000);
  (void)time_hit_loops(p, ctx, threads, warm);
  if (threads > 1) { (void)time_hit_loops(p, ctx, 1, warm); }

  auto const before = p.stats();
  std::vector<double> one;
  std::vector<double> many;
  std::vector<double> ratio;
  for (unsigned r = 0; r < runs; ++r) {
    if (threads == 1) {
      one.push_back(time_hit_loops(p, ctx, 1, ops));
      continue;
    }
    // Alternate which goes first, so drift in the machine's state hits both alike.
    double a = 0.0;
    double b = 0.0;
    if (r % 2 == 0) {
      a = time_hit_loops(p, ctx, 1, ops);
      b = time_hit_loops(p, ctx, threads, ops);
    } else {
      b = time_hit_loops(p, ctx, threads, ops);
      a = time_hit_loops(p, ctx, 1, ops);
    }
    one.push_back(a);
    many.push_back(b);
    ratio.push_back(b / a);
  }
  auto const after = p.stats();
  for (auto const& c : ctx) { p.synchronize(c.stream); }
  bool const valid = p.validate();

  spread const s1 = summarize(one);
  spread const sn = threads == 1 ? s1 : summarize(many);
  spread const sr = threads == 1 ? summarize(std::vector<double>(runs, 1.0)) : summarize(ratio);
  std::uint64_t const expected = static_cast<std::uint64_t>(ops) * runs * (threads == 1 ? 1U : threads + 1U);
  std::uint64_t const acquires = after.acquires - before.acquires;
  std::uint64_t const hits = after.hits - before.hits;
  std::uint64_t const misses = after.misses - before.misses;
  std::uint64_t const busy_skips = after.planner_busy_skips - before.planner_busy_skips;  // a planner's steps skipped
  std::uint64_t const relearns = after.planner_relearns - before.planner_relearns;
  std::string const segment = p.stats_segment();
  for (auto& c : ctx) {
    c.tensors.clear();  // free the tensors before their stream and the pool go
    p.destroy_stream(c.stream);
  }
  std::string const trace_failure = finish(p);

  if (vm.count("json") != 0) {
    json::object j;
    j["benchmark"] = "hitpath";
    j["backend"] = p.backend().caps().name;
    j["threads"] = threads;
    j["runs"] = runs;
    j["ops"] = ops;
    j["tensors_per_thread"] = tensors_per_thread;
    j["tensor_bytes"] = tensor_bytes;
    j["fits_register"] = with_fits;
    j["ns_per_pair"] = sn.median;
    j["ns_per_pair_spread"] = to_json(sn);
    j["ns_per_pair_1thread"] = s1.median;
    j["ns_per_pair_1thread_spread"] = to_json(s1);
    j["ratio_to_1thread"] = sr.median;
    j["ratio_to_1thread_spread"] = to_json(sr);
    j["acquires"] = acquires;
    j["hits"] = hits;
    j["misses"] = misses;
    j["expected_acquires"] = expected;
    j["planner_state"] = after.planner_state;
    j["planner_busy_skips"] = busy_skips;
    j["planner_relearns"] = relearns;
    j["published"] = !segment.empty();
    j["trace_error"] = trace_failure;
    j["valid"] = valid;
    std::cout << json::serialize(j) << '\n';
  } else {
    std::printf("pool hit path: acquire + release of a resident %s tensor, backend %s\n",
                format_byte_size(tensor_bytes).c_str(), backend_line(p).c_str());
    std::printf("  %zu pairs per thread per run, %zu tensor(s) per thread, %u runs%s\n", ops, tensors_per_thread,
                runs, with_fits ? ", register of pinned copies on (--fits)" : "");
    std::printf("  %-30s %10.1f   (min %.1f, max %.1f)\n", "ns per pair, 1 thread", s1.median, s1.min, s1.max);
    if (threads > 1) {
      char label[64];
      std::snprintf(label, sizeof label, "ns per pair, %u threads", threads);
      std::printf("  %-30s %10.1f   (min %.1f, max %.1f; per thread)\n", label, sn.median, sn.min, sn.max);
      std::printf("  %-30s %10.2f   (min %.2f, max %.2f; per run, side by side)\n", "ratio to 1 thread", sr.median,
                  sr.min, sr.max);
    }
    std::printf("  %-30s %10llu   of %llu acquires (%llu misses)%s\n", "hits", static_cast<unsigned long long>(hits),
                static_cast<unsigned long long>(acquires), static_cast<unsigned long long>(misses),
                acquires == expected ? "" : " (acquire count differs from the loops!)");
    if (!after.planner_state.empty()) {  // TIERPOOL_PREFETCH=plan|oracle
      std::printf("  %-30s %10llu   (planner %s at the end; steps that met another thread's)\n", "planner busy skips",
                  static_cast<unsigned long long>(busy_skips), after.planner_state.c_str());
      std::printf("  %-30s %10llu\n", "planner relearns", static_cast<unsigned long long>(relearns));
    }
    std::printf("  %-30s %10s\n", "published", segment.empty() ? "no" : "yes");
    std::printf("  %-30s %10s\n", "pool valid at end", valid ? "yes" : "NO");
  }
  return exit_status("hitpath", valid, trace_failure);
}

// ---- bench copy ---------------------------------------------------------------------

namespace {

struct copy_setup {
  std::size_t tensor_bytes{0};
  std::size_t tensors{0};
  std::size_t device_tier_bytes{0};
  std::size_t slots{0};  // tensors the device tier holds at once
};

struct pool_phase {
  double ns{0.0};
  std::size_t h2d{0};
  std::size_t d2h{0};
};

// Moves every tensor up (acquire read_write on `s`: a copy-in; it makes the lower copy
// stale, so leaving the device needs a write-back) and down again (eviction by the next
// acquires, then demote() of the rest), and waits until every byte is home on the host tier.
pool_phase run_pool_phase(pool& p, std::vector<tensor> const& ts, stream_handle s)
{
  auto const before = p.stats();
  auto const t0 = clock_type::now();
  for (auto const& t : ts) {
    auto l = p.acquire(t, access_mode::read_write, s);
    keep(l.data());
  }
  p.synchronize(s);
  for (auto const& t : ts) { p.demote(t, tier_id{1}); }
  for (auto const& t : ts) {  // wait for the write-backs: host leases are synchronous
    auto h = p.acquire_host(t, access_mode::read);
    keep(h.data());
  }
  auto const t1 = clock_type::now();
  auto const after = p.stats();
  return {elapsed_ns(t0, t1), after.bytes_h2d - before.bytes_h2d, after.bytes_d2h - before.bytes_d2h};
}

// The same bytes with std::memcpy: each tensor's host buffer into a device-sized slot, and
// each slot back to its host buffer once the slot is needed again (or at the end).
double run_memcpy_phase(std::byte* host, std::byte* slots, copy_setup const& c)
{
  auto const t0 = clock_type::now();
  for (std::size_t i = 0; i < c.tensors; ++i) {
    std::size_t const slot = i % c.slots;
    if (i >= c.slots) {  // write the slot's previous occupant back first
      std::memcpy(host + (i - c.slots) * c.tensor_bytes, slots + slot * c.tensor_bytes, c.tensor_bytes);
    }
    std::memcpy(slots + slot * c.tensor_bytes, host + i * c.tensor_bytes, c.tensor_bytes);
  }
  std::size_t const first_left = c.tensors > c.slots ? c.tensors - c.slots : 0;
  for (std::size_t i = first_left; i < c.tensors; ++i) {
    std::memcpy(host + i * c.tensor_bytes, slots + (i % c.slots) * c.tensor_bytes, c.tensor_bytes);
  }
  auto const t1 = clock_type::now();
  keep(host);
  keep(slots);
  return elapsed_ns(t0, t1);
}

std::byte pattern(std::size_t tensor, std::size_t offset) noexcept
{
  return static_cast<std::byte>((tensor * 131U + offset * 7U + 1U) & 0xFFU);
}

}  // namespace

int bench_copy_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool bench copy: bytes per second the pool moves between its device tier and a\n"
    "host tier (copy-in, write-back on eviction and demotion; counted by the pool's\n"
    "bytes_h2d / bytes_d2h), against std::memcpy of the same bytes between two host\n"
    "buffers, alternating in every run (docs/chapters/benchmarks.md).\n\n" +
    std::string(kEnvironmentHelp) + "options");
  std::string bytes_text = "256MiB";
  std::string tensor_bytes_text = "4MiB";
  std::string device_bytes_text;
  std::string lower = "pinned_host";
  std::string backend_flag;
  std::string device_text = "0";
  std::string runs_text = "5";  // text: -1 read into an unsigned wraps (checked_options.hpp)
  desc.add_options()
    ("help,h", "this text")
    ("bytes", po::value(&bytes_text)->default_value(bytes_text), "total bytes of the tensors")
    ("tensor-bytes", po::value(&tensor_bytes_text)->default_value(tensor_bytes_text), "size of each tensor")
    ("device-bytes", po::value(&device_bytes_text),
     "device tier capacity (default: a quarter of --bytes, at least 2 tensors)")
    ("lower", po::value(&lower)->default_value(lower), "kind of the host tier: pinned_host | host")
    ("runs,r", po::value(&runs_text)->default_value(runs_text), "timed runs (1..1000); the median is reported")
    ("backend", po::value(&backend_flag), "sim | cuda | auto (default: TIERPOOL_BACKEND, else sim)")
    ("device", po::value(&device_text)->default_value(device_text), kDeviceHelp)
    ("json", "print one JSON object instead of the table");
  po::variables_map vm;
  if (!parse_args("copy", desc, argc, argv, vm)) { return 2; }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  unsigned runs = 0;
  int device = 0;
  try {
    runs = parse_checked<unsigned>("--runs", runs_text, 1, 1000);
    device = parse_checked<int>("--device", device_text, 0, 255);
  } catch (logic_error const& e) {
    return usage_error("copy", e.what());
  }
  tier_kind lower_kind = tier_kind::pinned_host;
  if (lower == "host") {
    lower_kind = tier_kind::host;
  } else if (lower != "pinned_host") {
    std::fprintf(stderr, "tierpool bench copy: unknown --lower '%s' (valid: pinned_host, host)\n", lower.c_str());
    return 2;
  }

  copy_setup c;
  std::size_t const total_requested = detail::parse_byte_size(bytes_text);
  c.tensor_bytes = detail::parse_byte_size(tensor_bytes_text);
  if (c.tensor_bytes == 0) { return usage_error("copy", "--tensor-bytes must be at least 1 byte"); }
  if (total_requested < 2 * c.tensor_bytes) {
    return usage_error("copy", "--bytes must hold at least 2 tensors of --tensor-bytes");
  }
  c.tensors = total_requested / c.tensor_bytes;
  std::size_t const total = c.tensors * c.tensor_bytes;
  std::size_t const requested_device =
    device_bytes_text.empty() ? total / 4 : detail::parse_byte_size(device_bytes_text);
  c.slots = std::max<std::size_t>(2, requested_device / c.tensor_bytes);
  if (c.slots > c.tensors) { c.slots = c.tensors; }
  // The arena aligns every block to 256 bytes: give each slot its rounded size.
  std::size_t const rounded_tensor = (c.tensor_bytes + 255U) / 256U * 256U;
  c.device_tier_bytes = c.slots * rounded_tensor;
  std::size_t const lower_cap = total + total / 4 + 16_MiB;

  auto const pick = pick_backend(backend_flag);
  pool_options o = base_options(pick, c.device_tier_bytes + 16_MiB, device);
  o.tiers = {tier_options{.kind = tier_kind::device, .capacity_bytes = c.device_tier_bytes},
             tier_options{.kind = lower_kind, .capacity_bytes = lower_cap}};
  pool p{std::move(o)};
  stream_handle const s = p.create_stream();

  std::vector<tensor> ts;
  ts.reserve(c.tensors);
  for (std::size_t i = 0; i < c.tensors; ++i) {
    ts.push_back(p.allocate(c.tensor_bytes, {.name = "copy" + std::to_string(i), .preferred_tier = tier_id{1}}));
    auto h = p.acquire_host(ts.back(), access_mode::write_discard);
    auto* b = h.as<std::byte>();
    for (std::size_t k = 0; k < c.tensor_bytes; ++k) { b[k] = pattern(i, k); }
  }

  // Two host buffers of the same sizes for memcpy, touched first so neither side pays
  // for first-touch page faults in the timed runs.
  auto host = std::make_unique_for_overwrite<std::byte[]>(total);
  auto slots = std::make_unique_for_overwrite<std::byte[]>(c.slots * c.tensor_bytes);
  std::memset(host.get(), 1, total);
  std::memset(slots.get(), 2, c.slots * c.tensor_bytes);

  // Warm-up (untimed): faults in the device tier's chunks and the copy streams.
  (void)run_pool_phase(p, ts, s);
  (void)run_memcpy_phase(host.get(), slots.get(), c);

  std::vector<double> pool_gbps;
  std::vector<double> memcpy_gbps;
  std::vector<double> ratio;
  std::size_t moved_min = SIZE_MAX;
  std::size_t moved_max = 0;
  pool_phase last{};
  for (unsigned r = 0; r < runs; ++r) {
    pool_phase ph{};
    double mc_ns = 0.0;
    if (r % 2 == 0) {
      ph = run_pool_phase(p, ts, s);
      mc_ns = run_memcpy_phase(host.get(), slots.get(), c);
    } else {
      mc_ns = run_memcpy_phase(host.get(), slots.get(), c);
      ph = run_pool_phase(p, ts, s);
    }
    std::size_t const moved = ph.h2d + ph.d2h;
    moved_min = std::min(moved_min, moved);
    moved_max = std::max(moved_max, moved);
    last = ph;
    double const pg = static_cast<double>(moved) / ph.ns;  // bytes per ns = GB/s
    double const mg = static_cast<double>(2 * total) / mc_ns;
    pool_gbps.push_back(pg);
    memcpy_gbps.push_back(mg);
    ratio.push_back(pg / mg);
  }

  // The bytes must have survived every trip.
  bool intact = true;
  for (std::size_t i = 0; i < c.tensors && intact; ++i) {
    auto h = p.acquire_host(ts[i], access_mode::read);
    auto const* b = h.as<std::byte>();
    for (std::size_t k = 0; k < c.tensor_bytes; k += 4093) {
      if (b[k] != pattern(i, k)) { intact = false; break; }
    }
    if (b[c.tensor_bytes - 1] != pattern(i, c.tensor_bytes - 1)) { intact = false; }
  }
  bool const valid = p.validate();
  auto const st = p.stats();
  std::string const segment = p.stats_segment();
  ts.clear();
  p.destroy_stream(s);
  std::string const trace_failure = finish(p);

  spread const sp = summarize(pool_gbps);
  spread const sm = summarize(memcpy_gbps);
  spread const sr = summarize(ratio);
  std::size_t const expected_moved = 2 * total;

  if (vm.count("json") != 0) {
    json::object j;
    j["benchmark"] = "copy";
    j["backend"] = p.backend().caps().name;
    j["bytes"] = total;
    j["tensor_bytes"] = c.tensor_bytes;
    j["tensors"] = c.tensors;
    j["device_tier_bytes"] = c.device_tier_bytes;
    j["lower_tier"] = lower;
    j["runs"] = runs;
    j["pool_gbps"] = sp.median;
    j["pool_gbps_spread"] = to_json(sp);
    j["memcpy_gbps"] = sm.median;
    j["memcpy_gbps_spread"] = to_json(sm);
    j["ratio"] = sr.median;
    j["ratio_spread"] = to_json(sr);
    j["bytes_moved_per_run"] = json::object{{"min", moved_min}, {"max", moved_max}, {"expected", expected_moved}};
    j["bytes_h2d_last_run"] = last.h2d;
    j["bytes_d2h_last_run"] = last.d2h;
    j["evictions"] = st.tiers.empty() ? 0 : st.tiers.front().evictions;
    j["reuses_in_order"] = st.tiers.empty() ? 0 : st.tiers.front().reuses_in_order;
    j["stall_seconds"] = st.stall_seconds;
    j["published"] = !segment.empty();
    j["trace_error"] = trace_failure;
    j["bytes_intact"] = intact;
    j["valid"] = valid;
    std::cout << json::serialize(j) << '\n';
  } else {
    std::printf("pool copy throughput: %zu tensors x %s = %s, device tier %s (%zu tensors), lower tier %s\n",
                c.tensors, format_byte_size(c.tensor_bytes).c_str(), format_byte_size(total).c_str(),
                format_byte_size(c.device_tier_bytes).c_str(), c.slots, lower.c_str());
    std::printf("  backend %s; %u runs, pool and memcpy alternating in each\n", backend_line(p).c_str(), runs);
    std::printf("  %-26s %10.2f   (min %.2f, max %.2f)\n", "pool GB/s", sp.median, sp.min, sp.max);
    std::printf("  %-26s %10.2f   (min %.2f, max %.2f)\n", "memcpy GB/s", sm.median, sm.min, sm.max);
    std::printf("  %-26s %10.2f   (min %.2f, max %.2f; per run, side by side)\n", "ratio pool / memcpy", sr.median,
                sr.min, sr.max);
    std::printf("  %-26s %10s   (last run: h2d %s, d2h %s; expected %s)%s\n", "bytes moved per run",
                format_byte_size(moved_max).c_str(), format_byte_size(last.h2d).c_str(),
                format_byte_size(last.d2h).c_str(), format_byte_size(expected_moved).c_str(),
                moved_min == moved_max ? "" : " (differed between runs)");
    std::printf("  %-26s %10llu   (device blocks reused behind a running write-back, no host wait)\n",
                "reuses in stream order",
                static_cast<unsigned long long>(st.tiers.empty() ? 0 : st.tiers.front().reuses_in_order));
    std::printf("  %-26s %10.3f   (host time blocked in pool calls, all runs)\n", "stall seconds", st.stall_seconds);
    std::printf("  %-26s %10s\n", "bytes intact", intact ? "yes" : "NO");
    std::printf("  %-26s %10s\n", "published", segment.empty() ? "no" : "yes");
    std::printf("  %-26s %10s\n", "pool valid at end", valid ? "yes" : "NO");
  }
  return exit_status("copy", intact && valid, trace_failure);
}

}  // namespace tierpool::cli

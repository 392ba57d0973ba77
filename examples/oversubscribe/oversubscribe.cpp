// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// oversubscribe — trains a small MLP with Adam whose working set (weights, activations,
// gradients, optimizer state) is several times the device tier, and proves that the
// tiered pool moved every byte correctly: each step's loss, read back through the pool,
// must equal bit for bit the loss of a reference run of the same computation on a pool
// whose device tier holds everything (no evictions). Ends with the pool's summary.
//
// Runs on the default backend: the GPU with the demo's CUDA kernels where there is one
// (and the build has them), the simulated device with host kernels elsewhere.
// `--check-kernels` instead compares the backend's kernels with the host's (kernel_check).
#include <tierpool/pool.hpp>
#include <tierpool/tierpool.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compute_backend.hpp"
#include "kernel_check.hpp"
#include "mlp.hpp"

namespace {

using namespace tierpool::literals;

constexpr int kExitOk = 0;
constexpr int kExitMismatch = 1;  // a loss or the final parameters differ from the reference
constexpr int kExitUsage = 2;
constexpr int kExitError = 3;     // out of memory, backend failure, ...
constexpr int kExitSkipped = 77;  // --check-kernels: no device or no kernels to check (CTest SKIP_RETURN_CODE)

constexpr double kDefaultOversubscription = 4.0;  // the issue asks for a working set >= 4x the device tier

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct options {
  oversubscribe::mlp_config model{};
  std::size_t iterations{5};
  std::optional<std::size_t> device_bytes{};
  std::optional<double> oversubscription{};
  std::string policy{};
  std::string backend{};
  int device{0};  ///< --device: the device ordinal (CUDA's, or the simulated device's)
  std::string link{};
  std::string json{};
  std::string trace{};  ///< --trace, else TIERPOOL_TRACE
  std::string snapshot{};  ///< --snapshot: the pool's snapshot after training, as JSON
  std::string dump_tensors{};  ///< --dump-tensors: the reference model's tensors after training, as .npy files
  bool virtual_clock{false};  ///< --virtual-clock: the sim's deterministic timeline
  bool hide_device_times{false};  ///< --hide-device-times: the pool measures device times with events
  bool kernel_time{false};    ///< --kernel-time: on the virtual clock, kernels occupy their streams (a roofline)
  oversubscribe::kernel_roofline roofline{};  ///< --kernel-roofline: the roofline kernels are timed on
  tierpool::sim_host_costs host_costs{};      ///< --host-costs: the virtual clock's host time per call
  bool skip_math{false};                      ///< --skip-math: kernels compute nothing (timing runs)
  bool check_kernels{false};
  bool help{false};
};

char const* const kUsage = R"(usage: oversubscribe [options]

Trains an MLP with Adam on a tiered pool whose device tier is a fraction of the working
set, and checks every step's loss bit for bit against a run with unlimited device memory.

  --iterations N        training steps (default 5)
  --model NAME          mlp (default) or transformer: transformer-shaped blocks (Q, K,
                        V, attention scores, context, output, a 4x wide MLP) of the
                        same kernels
  --layers L            linear layers (default 16); transformer blocks (default 4)
  --width W             hidden width (default 512; transformer 256)
  --batch B             batch size (default 64); transformer sequences (default 8)
  --seq T               the transformer's tokens per sequence (default 64)
  --classes C           output classes (default 10)
  --seed S              seed of weights, inputs and labels (default 1)
  --device-bytes SIZE   device tier capacity, e.g. 16MiB (default: working set / 4,
                        or TIERPOOL_DEVICE_BYTES when set)
  --oversubscription X  device tier = working set / X (instead of --device-bytes)
  --policy NAME         eviction policy spec (default: TIERPOOL_POLICY, else lru)
  --backend NAME        auto, sim or cuda (default: TIERPOOL_BACKEND, else auto)
  --device N            the device to run on: CUDA device N, or simulated device N on
                        the sim (default 0)
  --link MODEL          sim only: throttle host<->device copies, e.g. pcie4 or 25e9,2000
  --no-prefetch         do not prefetch the next operation's tensors
  --json FILE           write the results and the pool's statistics as JSON
  --trace FILE          record the oversubscribed pool's calls as a trace (.tpt text,
                        .tpb binary; default: TIERPOOL_TRACE) for tierpool replay
  --snapshot FILE       write the oversubscribed pool's snapshot after training (where
                        every tensor lives, every tier's blocks) as JSON, for
                        tierpool snapshot view FILE [--svg OUT.svg]
  --dump-tensors DIR    after training, write every layer's activations, Adam moments
                        and weights (from the reference run: the same bits) as float32
                        .npy files in DIR, for tierpool codec measure --input
  --virtual-clock       sim only: the deterministic virtual timeline instead of the wall
                        clock (the same pool decisions on every run; what replay uses)
  --hide-device-times   with --virtual-clock: the pool does not see the device times ahead,
                        as on a GPU; a planner (TIERPOOL_PREFETCH=plan) measures them with
                        timed events once they have run (docs/chapters/policies.md)
  --kernel-time         with --virtual-clock: each kernel occupies its stream for its time
                        on a GPU-like roofline (50 TFLOP/s, 3 TB/s), and the demo reports
                        the virtual time against the reference's (the time streams waited);
                        the recorded trace has no kernel durations, so replay then differs
  --kernel-roofline F,B the roofline kernels are timed on: F FLOP/s and B bytes/s, e.g.
                        67e12,4.8e12 (default 50e12,3e12); what --kernel-time charges,
                        and on any backend the JSON's roofline_seconds_per_iteration
  --host-costs LIST     with --virtual-clock: the host's time per call, e.g.
                        kernel=10us,copy=6us,event=1.6us (also host_func=; default 0:
                        a host that takes no time); a kernel is the demo's launch
  --skip-math           with --virtual-clock: the kernels take their time but compute
                        nothing, so the run is fast and not verified (what
                        tierpool suite calibrate runs: the pool's calls and the times)
  --check-kernels       instead of training, run each kernel of the backend (the CUDA
                        kernels on a GPU) on random inputs and compare it with the host
                        kernels and with a second run of itself
  --help                this text

Environment: every TIERPOOL_* variable of the pool applies (docs/chapters/tiers.md), and
a flag wins over its variable: TIERPOOL_BACKEND, TIERPOOL_DEVICE_BYTES, TIERPOOL_POLICY
and TIERPOOL_TRACE are the defaults of --backend, --device-bytes, --policy and --trace;
TIERPOOL_PREFETCH adds a predictor to the demo's own prefetches (--no-prefetch stops only
those); TIERPOOL_PUBLISH=0 stops publishing live figures for tierpool top. An invalid
value is an error naming the variable (exit 2).

Exit status: 0 verified, 1 a loss differs from the reference, 2 usage (or an invalid
TIERPOOL_* value), 3 runtime error (also: the trace could not be written completely);
with --check-kernels: 0 all kernels agree, 1 some do not, 77 skipped (no CUDA device or
no CUDA kernels with --backend cuda).
)";

// ---- text helpers ---------------------------------------------------------------------

std::string lower(std::string_view s)
{
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// "512MiB", "1.5GB", "4096": binary units K/KiB/M/MiB/G/GiB/T/TiB, decimal KB/MB/GB/TB.
std::size_t parse_bytes(std::string_view text, std::string_view what)
{
  std::string const t = lower(text);
  std::size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) != 0 || t[i] == '.')) { ++i; }
  double value = 0.0;
  if (i == 0 || std::sscanf(t.substr(0, i).c_str(), "%lf", &value) != 1) {
    throw usage_error(std::string(what) + ": '" + std::string(text) + "' is not a byte size (e.g. 64MiB)");
  }
  std::string unit = t.substr(i);
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  double scale = 0.0;
  if (unit.empty() || unit == "b") { scale = 1.0; }
  else if (unit == "k" || unit == "kib") { scale = 0x1.0p10; }
  else if (unit == "m" || unit == "mib") { scale = 0x1.0p20; }
  else if (unit == "g" || unit == "gib") { scale = 0x1.0p30; }
  else if (unit == "t" || unit == "tib") { scale = 0x1.0p40; }
  else if (unit == "kb") { scale = 1e3; }
  else if (unit == "mb") { scale = 1e6; }
  else if (unit == "gb") { scale = 1e9; }
  else if (unit == "tb") { scale = 1e12; }
  else {
    throw usage_error(std::string(what) + ": unknown unit '" + unit + "' in '" + std::string(text) +
                      "' (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
  }
  double const bytes = value * scale;
  if (!(bytes >= 1.0) || bytes > 0x1.0p62) {
    throw usage_error(std::string(what) + ": '" + std::string(text) + "' is out of range");
  }
  return static_cast<std::size_t>(bytes);
}

std::string format_bytes(std::uint64_t bytes)
{
  char buf[32];
  auto const b = static_cast<double>(bytes);
  if (bytes < 1_KiB) { std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes)); }
  else if (bytes < 1_MiB) { std::snprintf(buf, sizeof buf, "%.1f KiB", b / 0x1.0p10); }
  else if (bytes < 1_GiB) { std::snprintf(buf, sizeof buf, "%.1f MiB", b / 0x1.0p20); }
  else { std::snprintf(buf, sizeof buf, "%.2f GiB", b / 0x1.0p30); }
  return buf;
}

template <class T>
T parse_number(std::string_view text, std::string_view what)
{
  T value{};
  auto const [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    throw usage_error(std::string(what) + ": '" + std::string(text) + "' is not a number");
  }
  return value;
}

std::string json_string(std::string_view s)
{
  std::string out = "\"";
  for (char const c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_double(double v)
{
  if (!std::isfinite(v)) { return "null"; }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// ---- options --------------------------------------------------------------------------

/// --kernel-roofline F,B: FLOP/s and bytes/s, two finite numbers > 0.
oversubscribe::kernel_roofline parse_roofline(std::string_view text)
{
  std::string const v(text);
  auto const comma = v.find(',');
  auto number = [&](std::string const& part) {
    char* end = nullptr;
    double const x = std::strtod(part.c_str(), &end);
    if (part.empty() || end != part.c_str() + part.size() || !std::isfinite(x) || !(x > 0.0)) {
      throw usage_error("--kernel-roofline: '" + v + "' is not FLOPS,BYTES_PER_SECOND (two numbers > 0, e.g. 67e12,4.8e12)");
    }
    return x;
  };
  if (comma == std::string::npos) {
    throw usage_error("--kernel-roofline: '" + v + "' is not FLOPS,BYTES_PER_SECOND (two numbers > 0, e.g. 67e12,4.8e12)");
  }
  return {number(v.substr(0, comma)), number(v.substr(comma + 1))};
}

/// --host-costs kernel=T,copy=T,event=T,host_func=T: the simulated host's time per call
/// (sim_host_costs); T is a number with ns, us, ms or s. Names may be left out (0).
tierpool::sim_host_costs parse_host_costs(std::string_view text)
{
  std::string const v(text);
  auto bad = [&](std::string const& why) {
    return usage_error("--host-costs: '" + v + "': " + why +
                       " (expected NAME=TIME,... with NAME kernel, copy, event or host_func and TIME like 6us)");
  };
  tierpool::sim_host_costs c;
  for (std::size_t at = 0; at < v.size();) {
    std::size_t const comma = std::min(v.find(',', at), v.size());
    std::string const item = v.substr(at, comma - at);
    at = comma + 1;
    std::size_t const eq = item.find('=');
    if (eq == std::string::npos) { throw bad("'" + item + "' has no '='"); }
    std::string const name = item.substr(0, eq);
    std::string const time = item.substr(eq + 1);
    char* end = nullptr;
    double const x = std::strtod(time.c_str(), &end);
    std::string const unit(end);
    double const scale = unit == "ns" ? 1.0 : unit == "us" ? 1e3 : unit == "ms" ? 1e6 : unit == "s" ? 1e9 : -1.0;
    if (end == time.c_str() || scale < 0 || !std::isfinite(x) || x < 0 || x * scale > 1e12) {
      throw bad("'" + time + "' is not a time >= 0 with a unit (ns, us, ms, s)");
    }
    auto const ns = static_cast<tierpool::tick>(std::llround(x * scale));
    if (name == "kernel") { c.compute = ns; }
    else if (name == "copy") { c.copy = ns; }
    else if (name == "event") { c.event = ns; }
    else if (name == "host_func") { c.host_func = ns; }
    else { throw bad("unknown call '" + name + "'"); }
  }
  return c;
}

options parse_options(int argc, char** argv)
{
  options o;
  struct {
    bool layers = false, width = false, batch = false, seq = false;
  } given;
  std::vector<std::string_view> const args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::optional<std::string_view> inline_value;
    if (auto const eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto value = [&]() -> std::string_view {
      if (inline_value) { return *inline_value; }
      if (i + 1 >= args.size()) { throw usage_error(std::string(arg) + " needs a value"); }
      return args[++i];
    };
    auto positive = [&](std::string_view what) {
      auto const n = parse_number<std::size_t>(value(), what);
      if (n == 0) { throw usage_error(std::string(what) + " must be positive"); }
      return n;
    };
    if (arg == "--help" || arg == "-h") { o.help = true; }
    else if (arg == "--iterations") { o.iterations = positive(arg); }
    else if (arg == "--layers") { o.model.layers = positive(arg); given.layers = true; }
    else if (arg == "--width") { o.model.width = positive(arg); given.width = true; }
    else if (arg == "--batch") { o.model.batch = positive(arg); given.batch = true; }
    else if (arg == "--seq") { o.model.seq = positive(arg); given.seq = true; }
    else if (arg == "--model") {
      std::string_view const m = value();
      if (m == "mlp") { o.model.model = oversubscribe::model_kind::mlp; }
      else if (m == "transformer") { o.model.model = oversubscribe::model_kind::transformer; }
      else { throw usage_error("--model: '" + std::string(m) + "' is not a model (mlp, transformer)"); }
    }
    else if (arg == "--classes") { o.model.classes = positive(arg); }
    else if (arg == "--seed") { o.model.seed = parse_number<std::uint64_t>(value(), arg); }
    else if (arg == "--device-bytes") { o.device_bytes = parse_bytes(value(), arg); }
    else if (arg == "--oversubscription") {
      std::string const v(value());
      char* end = nullptr;
      double const x = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(x >= 1.0) || !std::isfinite(x)) {
        throw usage_error("--oversubscription: '" + v + "' is not a number >= 1");
      }
      o.oversubscription = x;
    }
    else if (arg == "--policy") { o.policy = value(); }
    else if (arg == "--backend") { o.backend = value(); }
    else if (arg == "--device") {
      std::string_view const v = value();
      int d = -1;
      auto const [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
      if (ec != std::errc{} || end != v.data() + v.size() || d < 0) {
        throw usage_error("--device: '" + std::string(v) + "' is not a device ordinal (an integer >= 0)");
      }
      o.device = d;
    }
    else if (arg == "--link") { o.link = value(); }
    else if (arg == "--no-prefetch") { o.model.prefetch = false; }
    else if (arg == "--json") { o.json = value(); }
    else if (arg == "--trace") { o.trace = value(); }
    else if (arg == "--snapshot") { o.snapshot = value(); }
    else if (arg == "--dump-tensors") { o.dump_tensors = value(); }
    else if (arg == "--virtual-clock") { o.virtual_clock = true; }
    else if (arg == "--kernel-time") { o.kernel_time = true; }
    else if (arg == "--hide-device-times") { o.hide_device_times = true; }
    else if (arg == "--kernel-roofline") { o.roofline = parse_roofline(value()); }
    else if (arg == "--host-costs") { o.host_costs = parse_host_costs(value()); }
    else if (arg == "--skip-math") { o.skip_math = true; }
    else if (arg == "--check-kernels") { o.check_kernels = true; }
    else { throw usage_error("unknown option '" + std::string(args[i]) + "' (see --help)"); }
    if (inline_value && (arg == "--help" || arg == "-h" || arg == "--no-prefetch" || arg == "--check-kernels" ||
                         arg == "--virtual-clock" || arg == "--kernel-time" || arg == "--skip-math" ||
                         arg == "--hide-device-times")) {
      throw usage_error(std::string(arg) + " takes no value");
    }
  }
  if (o.model.model == oversubscribe::model_kind::transformer) {
    // The transformer's own defaults (Note [A transformer-shaped loop] in transformer.cpp):
    // 4 blocks of width 256, 8 sequences of 64 tokens; a working set of about the MLP's.
    if (!given.layers) { o.model.layers = 4; }
    if (!given.width) { o.model.width = 256; }
    if (!given.batch) { o.model.batch = 8; }
  } else if (given.seq) {
    throw usage_error("--seq is the transformer's (--model transformer)");
  }
  if (o.kernel_time && !o.virtual_clock) { throw usage_error("--kernel-time needs --virtual-clock"); }
  if (o.hide_device_times && !o.virtual_clock) { throw usage_error("--hide-device-times needs --virtual-clock"); }
  if (!o.host_costs.none() && !o.virtual_clock) { throw usage_error("--host-costs needs --virtual-clock"); }
  if (o.skip_math && !o.virtual_clock) { throw usage_error("--skip-math needs --virtual-clock"); }
  if (o.skip_math && o.check_kernels) { throw usage_error("--skip-math and --check-kernels exclude each other"); }
  if (o.device_bytes && o.oversubscription) {
    throw usage_error("give --device-bytes or --oversubscription, not both");
  }
  if (o.model.classes > static_cast<std::size_t>(INT32_MAX)) { throw usage_error("--classes is too large"); }
  return o;
}

char const* env(char const* name)
{
  char const* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// ---- pools ----------------------------------------------------------------------------

constexpr std::size_t round_up(std::size_t v, std::size_t to) noexcept { return (v + to - 1) / to * to; }

/// A backend of `kind` ("sim" or "cuda") on device `device` whose device can hold `device_bytes`.
std::shared_ptr<tierpool::backend> make_backend(tierpool::backend_choice choice, int device, std::size_t device_bytes,
                                                std::optional<tierpool::link_model> const& link,
                                                tierpool::fallback_notice notice, std::string* reason,
                                                bool virtual_clock = false, tierpool::sim_host_costs host_costs = {},
                                                bool hide_device_times = false)
{
  tierpool::sim_options so;
  if (virtual_clock) { so.clock = tierpool::sim_clock_mode::virtual_clock; }
  so.hide_device_times = hide_device_times;
  so.host_costs = host_costs;
  // The simulated card is larger than the device tier, as a real one would be: the
  // tier's capacity, not the card, is what the demo oversubscribes.
  so.device_bytes = std::max(so.device_bytes, round_up(2 * device_bytes, 1_MiB));
  so.memory = tierpool::sim_memory_mode::real;  // the kernels compute on these bytes
  if (link) { so.links = tierpool::sim_links::from_host_link(*link); }
  auto sel = tierpool::select_backend(choice, so, device, notice);
  if (reason != nullptr) { *reason = sel.reason; }
  return std::shared_ptr<tierpool::backend>(std::move(sel.backend));
}

/// Options of a three-tier pool (device, pinned host, host) on `be`; the pinned tier holds
/// `pinned_bytes` (0: the pool's default, twice the device tier). Note [Pinned room for the
/// spill]: the demo gives it the whole working set, so that the device tier spills into
/// pinned memory only. With the default (twice a device tier of a quarter of the working
/// set) a quarter of the tensors went on to the pageable tier, and on an H200 each copy to
/// or from pageable memory took 200-250 us a MiB (a host function per copy, Note [Pageable
/// copies through pinned staging] in the CUDA backend) against 24-27 us pinned: the 4x run
/// was 10 times the reference. The host tier stays below as the backing tier. The pool reads the
/// TIERPOOL_* variables (TIERPOOL_PREFETCH, TIERPOOL_PUBLISH, ...), less those the demo
/// decides itself, so that its flags win over them: TIERPOOL_DEVICE_BYTES and
/// TIERPOOL_BACKEND (read in run(): they size and choose the backend `be`), TIERPOOL_POLICY
/// when --policy is given, and TIERPOOL_TRACE when --trace is given or the pool does not
/// record (`record`: only the oversubscribed pool does).
tierpool::pool_options pool_options_for(std::shared_ptr<tierpool::backend> be, std::size_t device_bytes,
                                        std::size_t pinned_bytes, options const& o, bool record)
{
  tierpool::pool_options po;
  po.tiers = {
    {.kind = tierpool::tier_kind::device, .capacity_bytes = device_bytes, .name = "device"},
    {.kind = tierpool::tier_kind::pinned_host, .capacity_bytes = pinned_bytes, .name = "pinned_host"},
    {.kind = tierpool::tier_kind::host, .name = "host"},
  };
  po.ignore_environment = {"TIERPOOL_DEVICE_BYTES", "TIERPOOL_BACKEND"};
  if (!o.policy.empty()) {
    po.policy = o.policy;
    po.ignore_environment.emplace_back("TIERPOOL_POLICY");
  }
  if (!record || !o.trace.empty()) {
    po.trace_path = record ? o.trace : std::string();
    po.ignore_environment.emplace_back("TIERPOOL_TRACE");
  }
  po.backend_object = std::move(be);
  po.notice = tierpool::fallback_notice::silent;  // the demo reports pool.tracing_error() itself
  return po;
}

std::uint64_t total_evictions(tierpool::pool_stats const& s)
{
  std::uint64_t n = 0;
  for (auto const& t : s.tiers) { n += t.evictions; }
  return n;
}

// `tierpool replay --tiers` for this pool's layout: its host tiers between the device tier
// and the last (backing) tier, as KIND=BYTES.
std::string replay_tiers(tierpool::pool_stats const& s)
{
  std::string out;
  for (std::size_t i = 1; i + 1 < s.tiers.size(); ++i) {
    tierpool::tier_stats const& t = s.tiers[i];
    if (t.kind != tierpool::tier_kind::pinned_host && t.kind != tierpool::tier_kind::host) { continue; }
    out += (out.empty() ? "" : ",") + std::string(tierpool::to_string(t.kind)) + "=" + std::to_string(t.capacity_bytes);
  }
  return out;
}

bool same_bits(double a, double b) noexcept { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// Note [Steady state]
//   The first iteration pays once for what a long run pays once: the kernels' lazy loading
//   on a GPU, first touches of pinned and device memory, the pool's first placements. On the
//   H200 a 5-iteration run at 2x took 6.3 ms an iteration and a 20-iteration one 4.5 ms
//   (bench/results/gpu-2026-12-04). The steady state is the mean of iterations 2..N (the
//   only one when N = 1); `tierpool suite` reports it as the iteration time.
struct iteration_times {
  std::vector<double> all;
  void add(double s) { all.push_back(s); }
  [[nodiscard]] double last() const { return all.empty() ? 0.0 : all.back(); }
  [[nodiscard]] double steady() const
  {
    if (all.empty()) { return 0.0; }
    if (all.size() == 1) { return all.front(); }
    return std::accumulate(all.begin() + 1, all.end(), 0.0) / static_cast<double>(all.size() - 1);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- the run --------------------------------------------------------------------------

/// --policy, else TIERPOOL_POLICY, else "" (the pool's default).
std::string policy_of(options const& o)
{
  if (!o.policy.empty()) { return o.policy; }
  char const* const from_env = env("TIERPOOL_POLICY");
  return from_env != nullptr ? from_env : "";
}

/// --backend, else TIERPOOL_BACKEND, else automatic.
tierpool::backend_choice backend_choice_of(options const& o)
{
  if (!o.backend.empty()) { return tierpool::parse_backend_choice(o.backend); }
  if (auto const from_env = tierpool::backend_choice_from_env()) { return *from_env; }
  return tierpool::backend_choice::automatic;
}

std::optional<tierpool::link_model> link_of(options const& o)
{
  if (o.link.empty()) { return std::nullopt; }
  std::string why;
  auto link = tierpool::parse_link_model(o.link, &why);
  if (!link) { throw usage_error("--link: " + why); }
  return link;
}

/// --check-kernels: the backend's kernels against the host's, on a pool with a device
/// tier of 32 MiB. Skipped (exit 77) when CUDA was asked for and there is no device or
/// the build has no CUDA kernels.
int run_kernel_check(options const& o)
{
  constexpr std::size_t kCheckDeviceBytes = 32_MiB;
  tierpool::backend_choice const choice = backend_choice_of(o);
  std::string reason;
  std::shared_ptr<tierpool::backend> be;
  try {
    be = make_backend(choice, o.device, kCheckDeviceBytes, link_of(o), tierpool::fallback_notice::silent, &reason);
  } catch (tierpool::backend_error const& e) {
    if (choice != tierpool::backend_choice::cuda) { throw; }
    std::printf("SKIP: %s\n", e.what());
    return kExitSkipped;
  }
  std::string why;
  auto compute = oversubscribe::make_compute_backend(*be, &why, o.kernel_time, o.roofline, !o.skip_math);
  if (!compute) {
    if (be->caps().name == "cuda" && !oversubscribe::has_cuda_kernels()) {
      std::printf("SKIP: %s\n", why.c_str());
      return kExitSkipped;
    }
    throw std::runtime_error("no kernels to check: " + why);
  }
  tierpool::pool pool{pool_options_for(be, kCheckDeviceBytes, 0, o, false)};
  std::printf("check-kernels: backend %s (%s); kernels: %s\n", be->caps().name.c_str(), reason.c_str(),
              std::string(compute->name()).c_str());
  oversubscribe::kernel_check_result const r = oversubscribe::check_kernels(pool, *compute, stdout);
  if (r.failed != 0) {
    std::printf("FAILED: %zu of %zu kernel cases differ from the host kernels or between two runs\n", r.failed,
                r.cases);
    return kExitMismatch;
  }
  std::printf("kernels ok: %zu cases within tolerance of the host kernels (%zu bit-identical to them) and "
              "bit-identical between two runs\n",
              r.cases, r.bit_identical);
  return kExitOk;
}

int run(options const& o)
{
  oversubscribe::mlp_config const& cfg = o.model;
  std::size_t const working_set = oversubscribe::mlp_trainer::working_set_bytes(cfg);
  std::size_t const largest_op = oversubscribe::mlp_trainer::largest_operation_bytes(cfg);

  // Device tier: --device-bytes, --oversubscription, TIERPOOL_DEVICE_BYTES, working set / 4.
  std::size_t device_bytes = 0;
  char const* env_device = env("TIERPOOL_DEVICE_BYTES");
  if (o.device_bytes) { device_bytes = *o.device_bytes; }
  else if (o.oversubscription) { device_bytes = static_cast<std::size_t>(static_cast<double>(working_set) / *o.oversubscription); }
  else if (env_device != nullptr) { device_bytes = parse_bytes(env_device, "TIERPOOL_DEVICE_BYTES"); }
  else { device_bytes = static_cast<std::size_t>(static_cast<double>(working_set) / kDefaultOversubscription); }
  device_bytes = std::max<std::size_t>(device_bytes / 256 * 256, 256);  // rounded down: never less oversubscribed
  if (device_bytes < largest_op) {
    bool const mlp = cfg.model == oversubscribe::model_kind::mlp;
    std::fprintf(stderr,
                 "oversubscribe: a device tier of %s is too small: one operation (%s) leases %s at once; use "
                 "--device-bytes %s or more, a smaller --width, or more --layers\n",
                 format_bytes(device_bytes).c_str(),
                 mlp ? "Adam on a layer: its weights, gradient and two moments" : "the largest of a block's",
                 format_bytes(largest_op).c_str(), format_bytes(round_up(largest_op + largest_op / 4, 1_MiB)).c_str());
    return kExitUsage;
  }

  std::string const policy = policy_of(o);
  tierpool::backend_choice choice = backend_choice_of(o);
  std::optional<tierpool::link_model> const link = link_of(o);

  // The backend, and kernels that can run on it: on the CUDA backend the demo's CUDA
  // kernels (cuda_kernels.cu) when the build has them and they run on this GPU.
  std::string reason;
  auto be = make_backend(choice, o.device, device_bytes, link, tierpool::fallback_notice::silent, &reason,
                         o.virtual_clock, o.host_costs, o.hide_device_times);  // reason printed below
  std::string why;
  auto compute = oversubscribe::make_compute_backend(*be, &why, o.kernel_time, o.roofline, !o.skip_math);
  if (!compute) {
    if (be->caps().name == "sim") { throw std::runtime_error("no kernels for this backend: " + why); }
    // Decision: without GPU kernels that run on this device (a build without CUDA kernels,
    // or without code for this GPU's architecture) the CUDA device cannot compute, so the
    // demo runs on the simulated device rather than doing nothing (see README.md).
    std::printf("note: %s; running on the simulated device instead\n", why.c_str());
    choice = tierpool::backend_choice::sim;
    be = make_backend(choice, o.device, device_bytes, link, tierpool::fallback_notice::silent, &reason);
    compute = oversubscribe::make_compute_backend(*be, &why, o.kernel_time, o.roofline, !o.skip_math);
  }
  std::string const backend_name = be->caps().name;

  // The reference: the same backend kind and code, with a device tier that holds
  // everything, so nothing is ever evicted.
  std::size_t const ref_device_bytes = round_up(working_set + working_set / 4 + 1_MiB, 1_MiB);
  auto ref_be = make_backend(be->caps().name == "sim" ? tierpool::backend_choice::sim : tierpool::backend_choice::cuda,
                             o.device, ref_device_bytes, link, tierpool::fallback_notice::silent, nullptr,
                             o.virtual_clock, o.host_costs);
  auto ref_compute = oversubscribe::make_compute_backend(*ref_be, &why, o.kernel_time, o.roofline, !o.skip_math);
  if (!ref_compute) { throw std::runtime_error("no kernels for the reference run: " + why); }

  // The pinned tier: room for the whole working set (Note [Pinned room for the spill]).
  tierpool::pool_options opts = pool_options_for(be, device_bytes, ref_device_bytes, o, true);  // only this pool records
  opts.publish.name = "oversubscribe";  // both pools show in `tierpool top` while the demo runs
  tierpool::pool pool{std::move(opts)};
  compute->route_through(&pool);  // --kernel-time: each kernel is a compute event of the recording (--trace)
  tierpool::pool_options ref_opts = pool_options_for(ref_be, ref_device_bytes, ref_device_bytes, o, false);
  ref_opts.publish.name = "oversubscribe (reference)";
  tierpool::pool ref_pool{std::move(ref_opts)};
  std::string const segment = pool.stats_segment();  // empty with TIERPOOL_PUBLISH=0

  std::size_t const tier_bytes = pool.stats().tiers.at(0).capacity_bytes;
  if (tier_bytes != device_bytes) {
    std::printf("note: asked for a device tier of %s, the pool made it %s\n", format_bytes(device_bytes).c_str(),
                format_bytes(tier_bytes).c_str());
  }
  double const oversubscription = static_cast<double>(working_set) / static_cast<double>(tier_bytes);

  if (cfg.model == oversubscribe::model_kind::transformer) {
    std::printf("oversubscribe: transformer-shaped, %zu blocks of width %zu, %zu sequences of %zu tokens, %zu classes, "
                "Adam; %zu iterations%s\n",
                cfg.layers, cfg.width, cfg.batch, cfg.seq, cfg.classes, o.iterations, cfg.prefetch ? "" : ", no prefetch");
  } else {
    std::printf("oversubscribe: MLP %zu x %zu, batch %zu, %zu classes, Adam; %zu iterations%s\n", cfg.layers,
                cfg.width, cfg.batch, cfg.classes, o.iterations, cfg.prefetch ? "" : ", no prefetch");
  }
  std::printf("backend: %s (%s); kernels: %s; policy: %s\n", backend_name.c_str(), reason.c_str(),
              std::string(compute->name()).c_str(), policy.empty() ? "lru (default)" : policy.c_str());
  std::printf("working set %s on a device tier of %s: oversubscription %.2fx\n", format_bytes(working_set).c_str(),
              format_bytes(tier_bytes).c_str(), oversubscription);
  {
    std::string const off = pool.publishing_error().empty() ? "TIERPOOL_PUBLISH=0" : pool.publishing_error();
    std::string const live = segment.empty() ? "not published (" + off + ")" : "/dev/shm/" + segment + " (tierpool top)";
    std::printf("live figures: %s\n", live.c_str());
  }

  oversubscribe::mlp_trainer ref{ref_pool, *ref_compute, cfg};
  // Held by pointer: it ends (its stream and leases) before the pool closes, below.
  auto tiered_ptr = std::make_unique<oversubscribe::mlp_trainer>(pool, *compute, cfg);
  oversubscribe::mlp_trainer& tiered = *tiered_ptr;
  std::printf("reference: the same run on a device tier of %s (no evictions)\n\n", format_bytes(ref_device_bytes).c_str());

  std::printf("%4s  %-14s %-14s %-5s  %21s  %9s  %13s\n", "iter", "loss", "reference", "match",
              "moved h2d / d2h", "evictions", "prefetch hits");
  std::vector<double> losses;
  std::vector<double> ref_losses;
  bool verified = true;
  double tiered_seconds = 0.0;
  double ref_seconds = 0.0;
  // Each iteration's time (the wall clock; on the virtual clock also the device's time), for
  // the steady state: the first iteration pays for what a long run pays once (Note [Steady
  // state]).
  iteration_times wall;
  iteration_times ref_wall;
  iteration_times virt;
  iteration_times ref_virt;
  bool const virtual_time = be->caps().virtual_clock && ref_be->caps().virtual_clock;
  auto* const sim_be = dynamic_cast<tierpool::sim_backend*>(be.get());
  auto* const sim_ref = dynamic_cast<tierpool::sim_backend*>(ref_be.get());
  std::array<std::uint64_t, tierpool::sim_call_count> calls0{};
  std::array<std::uint64_t, tierpool::sim_call_count> ref_calls0{};
  for (std::size_t k = 0; k < tierpool::sim_call_count; ++k) {
    if (sim_be != nullptr) { calls0[k] = sim_be->call_count(static_cast<tierpool::sim_call>(k)); }
    if (sim_ref != nullptr) { ref_calls0[k] = sim_ref->call_count(static_cast<tierpool::sim_call>(k)); }
  }
  double const roofline_before = ref_compute->roofline_seconds();
  std::uint64_t const kernels_before = ref_compute->kernels();
  tierpool::pool_stats before = pool.stats();
  for (std::size_t it = 1; it <= o.iterations; ++it) {
    auto t0 = std::chrono::steady_clock::now();
    tierpool::tick v0 = ref_be->now();
    double const ref_loss = ref.step();
    ref_wall.add(seconds_since(t0));
    ref_seconds += ref_wall.last();
    if (virtual_time) { ref_virt.add(static_cast<double>(ref_be->now() - v0) * 1e-9); }
    t0 = std::chrono::steady_clock::now();
    v0 = be->now();
    double const loss = tiered.step();
    wall.add(seconds_since(t0));
    tiered_seconds += wall.last();
    if (virtual_time) { virt.add(static_cast<double>(be->now() - v0) * 1e-9); }

    bool const match = same_bits(loss, ref_loss);
    verified = verified && match;
    losses.push_back(loss);
    ref_losses.push_back(ref_loss);
    tierpool::pool_stats const now = pool.stats();
    std::string const moved =
      format_bytes(now.bytes_h2d - before.bytes_h2d) + " / " + format_bytes(now.bytes_d2h - before.bytes_d2h);
    std::string const hits = std::to_string(now.prefetch_hits - before.prefetch_hits) + "/" +
                             std::to_string(now.prefetches - before.prefetches);
    std::printf("%4zu  %-14.10f %-14.10f %-5s  %21s  %9llu  %13s\n", it, loss, ref_loss, match ? "yes" : "NO",
                moved.c_str(), static_cast<unsigned long long>(total_evictions(now) - total_evictions(before)),
                hits.c_str());
    std::fflush(stdout);
    before = now;
  }

  double const roofline_per_iteration =
    (ref_compute->roofline_seconds() - roofline_before) / static_cast<double>(o.iterations);
  // The simulated backend's calls per iteration, by kind (what --host-costs charges; the
  // fit in `tierpool suite calibrate` multiplies them by a GPU's host time per call).
  auto calls_json = [&](tierpool::sim_backend const* sb, std::array<std::uint64_t, tierpool::sim_call_count> const& c0) {
    if (sb == nullptr) { return std::string("null"); }
    std::string j = "{";
    for (tierpool::sim_call const k : {tierpool::sim_call::compute, tierpool::sim_call::copy, tierpool::sim_call::event,
                                       tierpool::sim_call::host_func}) {
      auto const i = static_cast<std::size_t>(k);
      double const n = static_cast<double>(sb->call_count(k) - c0[i]) / static_cast<double>(o.iterations);
      j += (j.size() > 1 ? ", \"" : "\"") + std::string(k == tierpool::sim_call::compute ? "kernel" : tierpool::to_string(k)) +
           "\": " + json_double(n);
    }
    return j + "}";
  };
  std::string const calls = calls_json(sim_be, calls0);
  std::string const ref_calls = calls_json(sim_ref, ref_calls0);
  double const kernels_per_iteration =
    static_cast<double>(ref_compute->kernels() - kernels_before) / static_cast<double>(o.iterations);

  // Statistics of the training only: taken before the parameter check reads everything back.
  tierpool::pool_stats const stats = pool.stats();
  std::string const summary = pool.summary();
  std::string const summary_json = pool.summary_json();
  tierpool::pool_snapshot const snapshot = pool.snapshot();  // where the tensors are after training
  std::uint64_t const digest = tiered.parameter_digest();
  std::uint64_t const ref_digest = ref.parameter_digest();
  // From the reference: its tensors have the same bits, and its reads leave the
  // oversubscribed pool's figures and trace as they were.
  if (!o.dump_tensors.empty()) { ref.dump_tensors(o.dump_tensors); }
  bool const params_match = digest == ref_digest;
  std::uint64_t const ref_evictions = total_evictions(ref_pool.stats());
  // The whole recorded run, the parameter check's reads included: what a replay of the
  // --trace file reproduces (docs/chapters/replay.md).
  tierpool::pool_stats const run_end = pool.stats();

  std::printf("\n%s\n", summary.c_str());
  std::printf("moved %s host->device (%llu copies) and %s device->host (%llu copies); %llu evictions\n",
              format_bytes(stats.bytes_h2d).c_str(), static_cast<unsigned long long>(stats.copies_h2d),
              format_bytes(stats.bytes_d2h).c_str(), static_cast<unsigned long long>(stats.copies_d2h),
              static_cast<unsigned long long>(total_evictions(stats)));
  std::printf("prefetch: %llu issued, %llu hits, %llu late, %llu wasted, %llu predicted (TIERPOOL_PREFETCH); "
              "pool stall %.3f s\n",
              static_cast<unsigned long long>(stats.prefetches), static_cast<unsigned long long>(stats.prefetch_hits),
              static_cast<unsigned long long>(stats.prefetch_late),
              static_cast<unsigned long long>(stats.prefetch_wasted),
              static_cast<unsigned long long>(stats.predicted_prefetches), stats.stall_seconds);
  std::printf("time: %.2f s oversubscribed (%.3f s/iteration), %.2f s reference\n", tiered_seconds,
              tiered_seconds / static_cast<double>(o.iterations), ref_seconds);
  if (o.iterations >= 2) {
    iteration_times const& a = virtual_time ? virt : wall;
    iteration_times const& r = virtual_time ? ref_virt : ref_wall;
    std::printf("steady state (iterations 2-%zu, %s): %.3f ms/iteration oversubscribed, %.3f ms reference\n",
                o.iterations, virtual_time ? "virtual clock" : "wall clock", a.steady() * 1e3, r.steady() * 1e3);
  }
  // On the virtual clock: the simulated device's time (kernels by a roofline, copies by the
  // link model; Note [Kernel time on the virtual clock], host_kernels.cpp). The reference
  // fits, so what the oversubscribed run takes beyond it is time its streams waited.
  double const virtual_s = be->caps().virtual_clock ? static_cast<double>(be->now()) * 1e-9 : 0.0;
  double const ref_virtual_s = ref_be->caps().virtual_clock ? static_cast<double>(ref_be->now()) * 1e-9 : 0.0;
  if (o.kernel_time && virtual_s > 0.0 && ref_virtual_s > 0.0) {
    std::printf("virtual time: %.3f ms oversubscribed, %.3f ms reference: the streams waited %.3f ms (%.1f %% of the "
                "run)\n",
                virtual_s * 1e3, ref_virtual_s * 1e3, (virtual_s - std::min(virtual_s, ref_virtual_s)) * 1e3,
                100.0 * (virtual_s - std::min(virtual_s, ref_virtual_s)) / virtual_s);
  }
  {
    // Where the tensors live after training, from the snapshot: per tier, the tensors whose
    // newest copy is there (their home) and how many of them are dirty (evicting them would
    // write them back).
    std::printf("where the tensors live after training (pool::snapshot, by newest copy):\n");
    std::printf("  %-12s %8s %12s %8s\n", "tier", "tensors", "bytes", "dirty");
    for (tierpool::tier_snapshot const& t : snapshot.tiers) {
      std::size_t count = 0;
      std::size_t dirty = 0;
      std::uint64_t bytes = 0;
      for (tierpool::tensor_snapshot const& ts : snapshot.tensors) {
        if (ts.home != t.tier) { continue; }
        ++count;
        bytes += ts.bytes;
        dirty += ts.dirty ? 1U : 0U;
      }
      std::printf("  %-12s %8zu %12s %8zu\n", t.name.c_str(), count, format_bytes(bytes).c_str(), dirty);
    }
  }
  if (!o.snapshot.empty()) {
    tierpool::write_snapshot(snapshot, o.snapshot);  // snapshot_error (exit 2) when it cannot be written
    std::printf("snapshot written to %s (tierpool snapshot view %s)\n", o.snapshot.c_str(), o.snapshot.c_str());
  }
  std::printf("parameters after training: digest %016llx, reference %016llx (%s)\n",
              static_cast<unsigned long long>(digest), static_cast<unsigned long long>(ref_digest),
              params_match ? "identical" : "DIFFERENT");
  {
    // "How much still fits": what a program sizing its next batch would ask the pool.
    std::size_t const act = static_cast<std::size_t>(cfg.batch) * static_cast<std::size_t>(cfg.width) * sizeof(float);
    tierpool::fit_report const room = pool.fits(act);
    std::printf("room in the device tier for one layer's activations (%s): %zu more now, %zu after eviction "
                "(limit: %s)\n",
                format_bytes(act).c_str(), room.fits_now, room.fits_after_eviction, std::string(to_string(room.limit)).c_str());
  }
  if (ref_evictions != 0) {
    std::printf("note: the reference pool evicted %llu times; it was meant to hold everything\n",
                static_cast<unsigned long long>(ref_evictions));
  }
  verified = verified && params_match;

  // Close the pool: the trace (--trace, TIERPOOL_TRACE) is whole only then, its last
  // buffered events written; a write error anywhere in the run shows in tracing_error().
  tiered_ptr.reset();
  pool.close();
  std::string const trace_failure = pool.tracing_error();

  if (!o.json.empty()) {
    std::ostringstream js;
    auto list = [](std::vector<double> const& v) {
      std::string s = "[";
      for (std::size_t i = 0; i < v.size(); ++i) { s += (i == 0 ? "" : ", ") + json_double(v[i]); }
      return s + "]";
    };
    js << "{\n"
       << "  \"oversubscription\": " << json_double(oversubscription) << ",\n"
       << "  \"verified\": " << (verified && !o.skip_math ? "true" : "false") << ",\n"
       << "  \"math\": " << (o.skip_math ? "false" : "true") << ",\n"
       << "  \"parameters_match\": " << (params_match ? "true" : "false") << ",\n"
       << "  \"iterations\": " << o.iterations << ",\n"
       << "  \"losses\": " << list(losses) << ",\n"
       << "  \"reference_losses\": " << list(ref_losses) << ",\n"
       << "  \"device_bytes\": " << tier_bytes << ",\n"
       << "  \"working_set_bytes\": " << working_set << ",\n"
       << "  \"backend\": " << json_string(backend_name) << ",\n"
       << "  \"kernels\": " << json_string(compute->name()) << ",\n"
       << "  \"policy\": " << json_string(policy.empty() ? "lru" : policy) << ",\n"
       << "  \"prefetch\": " << (cfg.prefetch ? "true" : "false") << ",\n"
       << "  \"model\": " << json_string(cfg.model == oversubscribe::model_kind::transformer ? "transformer" : "mlp")
       << ", \"seq\": " << cfg.seq << ",\n"
       << "  \"layers\": " << cfg.layers << ", \"width\": " << cfg.width << ", \"batch\": " << cfg.batch
       << ", \"classes\": " << cfg.classes << ", \"seed\": " << cfg.seed << ",\n"
       << "  \"bytes_h2d\": " << stats.bytes_h2d << ",\n"
       << "  \"bytes_d2h\": " << stats.bytes_d2h << ",\n"
       << "  \"copies_h2d\": " << stats.copies_h2d << ",\n"
       << "  \"copies_d2h\": " << stats.copies_d2h << ",\n"
       << "  \"evictions\": " << total_evictions(stats) << ",\n"
       << "  \"prefetches\": " << stats.prefetches << ",\n"
       << "  \"prefetch_hits\": " << stats.prefetch_hits << ",\n"
       << "  \"prefetch_late\": " << stats.prefetch_late << ",\n"
       << "  \"prefetch_wasted\": " << stats.prefetch_wasted << ",\n"
       << "  \"predicted_prefetches\": " << stats.predicted_prefetches << ",\n"
       << "  \"stats_segment\": " << json_string(segment) << ",\n"
       << "  \"trace_error\": " << json_string(trace_failure) << ",\n"
       << "  \"stall_seconds\": " << json_double(stats.stall_seconds) << ",\n"
       << "  \"seconds\": " << json_double(tiered_seconds) << ",\n"
       << "  \"reference_seconds\": " << json_double(ref_seconds) << ",\n"
       << "  \"virtual_seconds\": " << json_double(virtual_s) << ",\n"
       << "  \"reference_virtual_seconds\": " << json_double(ref_virtual_s) << ",\n"
       << "  \"iteration_seconds\": " << list(wall.all) << ",\n"
       << "  \"reference_iteration_seconds\": " << list(ref_wall.all) << ",\n"
       << "  \"virtual_iteration_seconds\": " << list(virt.all) << ",\n"
       << "  \"reference_virtual_iteration_seconds\": " << list(ref_virt.all) << ",\n"
       << "  \"steady_seconds_per_iteration\": " << json_double(wall.steady()) << ",\n"
       << "  \"reference_steady_seconds_per_iteration\": " << json_double(ref_wall.steady()) << ",\n"
       << "  \"virtual_steady_seconds_per_iteration\": " << json_double(virt.steady()) << ",\n"
       << "  \"reference_virtual_steady_seconds_per_iteration\": " << json_double(ref_virt.steady()) << ",\n"
       << "  \"kernel_roofline\": {\"flops_per_second\": " << json_double(o.roofline.flops_per_second)
       << ", \"bytes_per_second\": " << json_double(o.roofline.bytes_per_second) << "},\n"
       << "  \"roofline_seconds_per_iteration\": " << json_double(roofline_per_iteration) << ",\n"
       << "  \"kernels_per_iteration\": " << json_double(kernels_per_iteration) << ",\n"
       << "  \"calls_per_iteration\": " << calls << ",\n"
       << "  \"reference_calls_per_iteration\": " << ref_calls << ",\n"
       << "  \"run_totals\": {\"bytes_h2d\": " << run_end.bytes_h2d << ", \"bytes_d2h\": " << run_end.bytes_d2h
       << ", \"copies_h2d\": " << run_end.copies_h2d << ", \"copies_d2h\": " << run_end.copies_d2h
       << ", \"device_evictions\": " << (run_end.tiers.empty() ? 0 : run_end.tiers[0].evictions)
       << ", \"replay_tiers\": " << json_string(replay_tiers(run_end)) << "},\n"
       << "  \"pool\": " << (summary_json.empty() ? "null" : summary_json) << "\n"
       << "}\n";
    std::ofstream out(o.json);
    out << js.str();
    if (!out) {
      std::fprintf(stderr, "oversubscribe: cannot write %s\n", o.json.c_str());
      return kExitError;
    }
  }

  if (!trace_failure.empty()) {
    std::fprintf(stderr, "oversubscribe: the trace was not recorded completely: %s\n", trace_failure.c_str());
  }
  if (o.skip_math) {  // nothing computed: nothing to verify
    std::printf("not verified: --skip-math (the kernels took their time and computed nothing)\n");
    return trace_failure.empty() ? kExitOk : kExitError;
  }
  if (!verified) {
    std::printf("FAILED: the oversubscribed run differs from the reference (see the match column "
                "and the parameter digests)\n");
    return kExitMismatch;
  }
  if (!trace_failure.empty()) { return kExitError; }
  std::printf("verified: %zu losses and the final parameters are bit-identical to the reference run "
              "(oversubscription %.2fx)\n",
              o.iterations, oversubscription);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv)
{
  try {
    options const o = parse_options(argc, argv);
    if (o.help) {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    return o.check_kernels ? run_kernel_check(o) : run(o);
  } catch (usage_error const& e) {
    std::fprintf(stderr, "oversubscribe: %s\n", e.what());
    return kExitUsage;
  } catch (tierpool::out_of_memory const& e) {
    std::fprintf(stderr, "oversubscribe: out of memory: %s\n", e.what());
    return kExitError;
  } catch (tierpool::logic_error const& e) {
    std::fprintf(stderr, "oversubscribe: %s\n", e.what());
    return kExitUsage;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "oversubscribe: %s\n", e.what());
    return kExitError;
  }
}

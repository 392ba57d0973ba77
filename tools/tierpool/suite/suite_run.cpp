// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_run.cpp — `tierpool suite run`: the suite's workloads on each selected device, one
// JSON bundle per device (docs/chapters/suite.md; the bundle's schema is there).
//
// Devices are CUDA ordinals or simulated presets (`sim:NAME`, suite_presets.cpp). Each
// workload measures through the public API: pools on the device's backend, the replay
// (simulated by nature), the arena. A workload that a device cannot run (the replay-based
// ones on a GPU, the demo when its binary is missing) or that no longer fits the budget is
// listed under `skipped` with the reason. The budget is shared by every device: each gets
// an equal share of what is left when its turn comes.
//
// Note [Timing on both clocks]
//   Rationale: on a simulated preset the figures must be the device's modelled time (the
//   virtual clock: deterministic, independent of this host), on a GPU the measured time.
//   Approach: `device_timer` reads backend::now() around work that ends in a
//   synchronize when the backend is a virtual-clock sim (now() moves to the completion
//   time), and std::chrono::steady_clock otherwise. Limitations: host-side work between
//   the reads (enqueueing) is not device time on a virtual clock, and is on a GPU.
#include "checked_options.hpp"
#include "commands.hpp"
#include "device_facts.hpp"
#include "suite/suite_demo.hpp"
#include "suite/suite_mpi.hpp"
#include "suite/suite_presets.hpp"

#include "workloads/arena_workloads.hpp"

#include <tierpool/backend_factory.hpp>
#include <tierpool/backends/cuda_backend.hpp>
#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/replay.hpp>
#include <tierpool/topology.hpp>
#include <tierpool/trace_gen.hpp>
#include <tierpool/version.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <unistd.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tierpool::cli {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;
namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

// 2: oversub-train's iteration time is the steady state (iterations 2..4, Note [Steady state]
//    in the demo), with first_iteration_time and reference_iteration_time beside it, and the
//    demo's transformer-shaped model beside its MLP.
constexpr int kSuiteVersion = 2;

// ---- options -------------------------------------------------------------------------

struct run_config {
  std::vector<suite::device_spec> devices;
  double budget_s{300.0};
  std::string out_dir{"suite-out"};
  std::vector<std::string> only;
  bool quick{false};
  bool quiet{false};
  std::uint64_t seed{1};
  std::string demo_path;
  std::string nvbandwidth_path;  ///< NVIDIA's nvbandwidth, run beside the link workload on a GPU
  bool mpi{false};
  bool all_devices{false};  ///< --devices all (each rank then takes its node's local device)
};

// ---- figures -------------------------------------------------------------------------

struct figure {
  std::string name;
  std::string unit;
  std::vector<double> samples;
  json::object params;
};

struct workload_result {
  std::string name;
  std::string title;
  json::object plot;
  std::vector<figure> figures;
  std::string note;  ///< a part that did not run, and why (goes to `skipped`)
};

json::object to_json(figure const& f)
{
  std::vector<double> s = f.samples;
  std::sort(s.begin(), s.end());
  double const median = s.empty() ? 0.0 : (s.size() % 2 == 1 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2);
  json::object o;
  o["name"] = f.name;
  o["unit"] = f.unit;
  o["value"] = median;
  o["min"] = s.empty() ? 0.0 : s.front();
  o["max"] = s.empty() ? 0.0 : s.back();
  o["reps"] = s.size();
  o["params"] = f.params;
  return o;
}

// ---- the device under test -------------------------------------------------------------

// One device's backend and how to time work on it (Note [Timing on both clocks]).
class device_under_test {
 public:
  explicit device_under_test(suite::device_spec const& d) : spec_(d)
  {
    if (d.simulated) {
      sim_options o = suite::sim_options_for(*d.preset);
      sim_ = std::make_shared<sim_backend>(o);
      be_ = sim_;
    } else {
      std::string why;
      std::unique_ptr<backend> b = make_cuda_backend(d.cuda_ordinal, &why);
      if (!b) { throw logic_error("suite run: CUDA device " + std::to_string(d.cuda_ordinal) + " cannot be used: " + why); }
      be_ = std::shared_ptr<backend>(std::move(b));
    }
  }
  [[nodiscard]] backend& be() const noexcept { return *be_; }
  [[nodiscard]] std::shared_ptr<backend> const& shared() const noexcept { return be_; }
  [[nodiscard]] suite::device_spec const& spec() const noexcept { return spec_; }
  /// Seconds `work` takes on the device; `work` ends with a synchronize.
  template <class F>
  [[nodiscard]] double time(F&& work) const
  {
    if (sim_) {
      tick const t0 = sim_->now();
      work();
      return static_cast<double>(sim_->now() - t0) * 1e-9;
    }
    auto const t0 = clock_type::now();
    work();
    return std::chrono::duration<double>(clock_type::now() - t0).count();
  }

 private:
  suite::device_spec spec_;
  std::shared_ptr<sim_backend> sim_;
  std::shared_ptr<backend> be_;
};

void check(status st, char const* what)
{
  if (st != status::ok) { throw backend_error(st, std::string("suite run: ") + what); }
}

// A buffer of one memory kind on the device's backend, freed at scope exit.
class raw_buffer {
 public:
  raw_buffer(backend& be, tier_kind kind, std::size_t bytes) : be_(be), kind_(kind), bytes_(bytes)
  {
    check(be_.allocate(kind, bytes, &ptr_), "allocating a buffer");
  }
  ~raw_buffer() { be_.deallocate(kind_, ptr_, bytes_); }
  raw_buffer(raw_buffer const&) = delete;
  raw_buffer& operator=(raw_buffer const&) = delete;
  [[nodiscard]] void* get() const noexcept { return ptr_; }

 private:
  backend& be_;
  tier_kind kind_;
  std::size_t bytes_;
  void* ptr_{nullptr};
};

// ---- workload: link --------------------------------------------------------------------

std::vector<std::size_t> link_sizes(bool quick)
{
  std::vector<std::size_t> s;
  for (std::size_t b = 4096; b <= (256U << 20U); b *= quick ? 16 : 4) { s.push_back(b); }
  if (s.back() != (256U << 20U)) { s.push_back(256U << 20U); }
  return s;
}

struct link_case {
  tier_kind host;
  bool h2d;
  bool bidi;
};

json::object link_params(link_case const& c, std::string_view path, std::size_t bytes)
{
  json::object p;
  p["pair"] = std::string("device-") + std::string(to_string(c.host));
  p["direction"] = c.h2d ? "h2d" : "d2h";
  p["mode"] = c.bidi ? "bidi" : "uni";
  p["path"] = path;
  p["bytes"] = bytes;
  return p;
}

// Baseline: the backend's own async copy (cudaMemcpyAsync on a GPU), on one stream; with
// `bidi`, an equal copy the other way on a second stream at the same time.
double baseline_copy_seconds(device_under_test const& d, link_case const& c, std::size_t bytes, raw_buffer& dev,
                             raw_buffer& host, raw_buffer& dev2, raw_buffer& host2, stream_handle s1, stream_handle s2)
{
  backend& be = d.be();
  return d.time([&] {
    copy_desc a{};
    a.bytes = bytes;
    a.dst = c.h2d ? dev.get() : host.get();
    a.src = c.h2d ? host.get() : dev.get();
    a.dst_kind = c.h2d ? tier_kind::device : c.host;
    a.src_kind = c.h2d ? c.host : tier_kind::device;
    check(be.copy_async(a, s1), "a baseline copy");
    if (c.bidi) {
      copy_desc b{};
      b.bytes = bytes;
      b.dst = c.h2d ? host2.get() : dev2.get();
      b.src = c.h2d ? dev2.get() : host2.get();
      b.dst_kind = c.h2d ? c.host : tier_kind::device;
      b.src_kind = c.h2d ? tier_kind::device : c.host;
      check(be.copy_async(b, s2), "a baseline copy (other direction)");
    }
    check(be.synchronize_stream(s1), "synchronizing");
    if (c.bidi) { check(be.synchronize_stream(s2), "synchronizing"); }
  });
}

// Through the pool: a copy-in (acquire on a stream of a tensor held in the host tier) or a
// write-back (demote of a dirty device copy); with `bidi`, a second tensor moves the other
// way at once. The two tensors are used on two streams, as a program overlapping a copy-in
// with a write-back would: the write-back waits for its tensor's last use on its stream.
double pool_copy_seconds(device_under_test const& d, pool& p, link_case const& c, tensor const& a, tensor const& b,
                         stream_handle s_up, stream_handle s_down)
{
  // The tensor moving up starts below (clean: demote drops the device copy), the one
  // moving down starts dirty on the device. A host lease of a copy in the host tier waits
  // for the write-back that made it.
  tensor const& up = c.h2d ? a : b;
  tensor const& down = c.h2d ? b : a;
  p.demote(up, tier_id{1});
  if (c.bidi || !c.h2d) {
    { lease l = p.acquire(down, access_mode::read_write, s_down); }
    p.synchronize(s_down);
  }
  { lease h = p.acquire_host(up, access_mode::read); }
  return d.time([&] {
    if (c.h2d || c.bidi) { lease l = p.acquire(up, access_mode::read, s_up); }
    if (!c.h2d || c.bidi) { p.demote(down, tier_id{1}); }
    p.synchronize(s_up);
    if (!c.h2d || c.bidi) { lease h = p.acquire_host(down, access_mode::read); }
  });
}

// ---- nvbandwidth (NVIDIA's reference tool), beside the link workload on a GPU -------------

// The testcases the link workload's pinned figures compare with: copy engines, pinned host
// memory, uni- and bidirectional, at one buffer size.
constexpr std::size_t kNvbandwidthMiB = 256;
struct nvbw_case {
  char const* name;
  bool h2d;
  bool bidi;
};
constexpr nvbw_case kNvbwCases[] = {
  {"host_to_device_memcpy_ce", true, false},
  {"device_to_host_memcpy_ce", false, false},
  {"host_to_device_bidirectional_memcpy_ce", true, true},
  {"device_to_host_bidirectional_memcpy_ce", false, true},
};

std::string run_capture(std::vector<std::string> args)
{
  std::string cmd;
  for (std::string const& a : args) {
    std::string q = "'";
    for (char c : a) { q += c == '\'' ? std::string("'\\''") : std::string(1, c); }
    cmd += q + "' ";
  }
  cmd += "2>/dev/null";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) { throw logic_error("cannot run " + args.front()); }
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) != 0;) { out.append(buf, n); }
  int const st = pclose(p);
  if (st != 0) { throw logic_error(args.front() + " exited with status " + std::to_string(st)); }
  return out;
}

// nvbandwidth -j's figures for the GPU `column`: {"nvbandwidth": {"testcases": [{"name",
// "status", "bandwidth_matrix": [[GB/s as text, ...]]}]}} (host rows, device columns).
std::vector<figure> nvbandwidth_figures(std::string const& exe, int column)
{
  std::vector<std::string> args = {exe, "-j", "-i", "3", "-b", std::to_string(kNvbandwidthMiB)};
  for (nvbw_case const& c : kNvbwCases) { args.insert(args.end(), {"-t", c.name}); }
  std::string const text = run_capture(args);
  boost::system::error_code ec;
  json::value const v = json::parse(text, ec);
  json::value const* cases = ec ? nullptr : v.is_object() && v.as_object().contains("nvbandwidth")
                                               ? v.at("nvbandwidth").as_object().if_contains("testcases")
                                               : nullptr;
  if (cases == nullptr || !cases->is_array()) { throw logic_error(exe + " -j gave no testcases"); }
  std::vector<figure> out;
  for (json::value const& tc : cases->as_array()) {
    json::object const* o = tc.if_object();
    if (o == nullptr || !o->contains("name") || !o->contains("bandwidth_matrix")) { continue; }
    auto const it = std::find_if(std::begin(kNvbwCases), std::end(kNvbwCases),
                                 [&](nvbw_case const& c) { return o->at("name").as_string() == c.name; });
    json::array const* m = o->at("bandwidth_matrix").if_array();
    if (it == std::end(kNvbwCases) || m == nullptr || m->empty() || !m->front().is_array()) { continue; }
    json::array const& row = m->front().as_array();
    if (static_cast<std::size_t>(column) >= row.size() || !row[static_cast<std::size_t>(column)].is_string()) { continue; }
    double const gbps = std::strtod(row[static_cast<std::size_t>(column)].as_string().c_str(), nullptr);
    if (!(gbps > 0)) { continue; }
    link_case const c{tier_kind::pinned_host, it->h2d, it->bidi};
    out.push_back({"bandwidth", "GB/s", {gbps}, link_params(c, "nvbandwidth", kNvbandwidthMiB << 20U)});
  }
  if (out.empty()) { throw logic_error(exe + " -j gave none of the copy-engine testcases for device " + std::to_string(column)); }
  return out;
}

workload_result run_link(device_under_test const& d, run_config const& cfg)
{
  workload_result w{"link", "Link bandwidth per tier pair and direction (tierpool against plain async copies)", {}, {}, {}};
  w.plot["x"] = "bytes";
  w.plot["x_label"] = "transfer size";
  w.plot["x_log"] = true;
  w.plot["split"] = json::array{"pair"};
  w.plot["series"] = json::array{"direction", "mode", "path"};
  int const reps = 3;
  backend& be = d.be();
  stream_handle s1{};
  stream_handle s2{};
  check(be.create_stream(&s1), "creating a stream");
  check(be.create_stream(&s2), "creating a stream");
  std::vector<std::size_t> const sizes = link_sizes(cfg.quick);
  std::size_t const biggest = sizes.back();
  for (tier_kind const host : {tier_kind::pinned_host, tier_kind::host, tier_kind::managed}) {
    raw_buffer dev(be, tier_kind::device, biggest);
    raw_buffer dev2(be, tier_kind::device, biggest);
    raw_buffer hb(be, host, biggest);
    raw_buffer hb2(be, host, biggest);
    for (std::size_t const bytes : sizes) {
      pool_options po;
      po.backend_object = d.shared();
      po.read_environment = false;
      po.publish.enabled = false;
      po.tiers = {
        tier_options{.kind = tier_kind::device, .capacity_bytes = 4 * bytes + (1U << 20U), .chunk_bytes = 4 * bytes + (1U << 20U)},
        tier_options{.kind = host, .capacity_bytes = 4 * bytes + (1U << 20U), .chunk_bytes = 4 * bytes + (1U << 20U)},
      };
      pool p(po);
      stream_handle const ps = p.create_stream();
      stream_handle const ps2 = p.create_stream();
      // No preferred tier: a tensor placed in a managed tier on purpose would be used there
      // in place (its pages steered), and the pair's copies are what is measured here.
      tensor const ta = p.allocate(bytes);
      tensor const tb = p.allocate(bytes);
      for (bool const h2d : {true, false}) {
        for (bool const bidi : {false, true}) {
          link_case const c{host, h2d, bidi};
          figure fb{"bandwidth", "GB/s", {}, link_params(c, "baseline", bytes)};
          figure ft{"bandwidth", "GB/s", {}, link_params(c, "tierpool", bytes)};
          for (int r = 0; r < reps; ++r) {
            double const tb_s = baseline_copy_seconds(d, c, bytes, dev, hb, dev2, hb2, s1, s2);
            double const tt_s = pool_copy_seconds(d, p, c, ta, tb, ps, ps2);
            fb.samples.push_back(tb_s > 0 ? static_cast<double>(bytes) / tb_s * 1e-9 : 0.0);
            ft.samples.push_back(tt_s > 0 ? static_cast<double>(bytes) / tt_s * 1e-9 : 0.0);
          }
          figure ratio{"tierpool_vs_baseline", "x", {}, link_params(c, "tierpool", bytes)};
          ratio.params.erase("path");
          for (std::size_t r = 0; r < fb.samples.size(); ++r) {
            ratio.samples.push_back(fb.samples[r] > 0 ? ft.samples[r] / fb.samples[r] : 0.0);
          }
          w.figures.push_back(std::move(fb));
          w.figures.push_back(std::move(ft));
          w.figures.push_back(std::move(ratio));
        }
      }
    }
  }
  be.destroy_stream(s1);
  be.destroy_stream(s2);
  // nvbandwidth measures a GPU: on a CUDA device only (TIERPOOL_SUITE_NVBANDWIDTH_ON_SIM=1
  // lets a test feed a fake one to a preset). Its absence or failure is said in `skipped`.
  bool const want = !d.spec().simulated || std::getenv("TIERPOOL_SUITE_NVBANDWIDTH_ON_SIM") != nullptr;
  if (want && !cfg.nvbandwidth_path.empty()) {
    try {
      for (figure& f : nvbandwidth_figures(cfg.nvbandwidth_path, std::max(0, d.spec().cuda_ordinal))) {
        w.figures.push_back(std::move(f));
      }
    } catch (std::exception const& e) {
      w.note = std::string("nvbandwidth: ") + e.what();
    }
  } else if (want) {
    w.note = "nvbandwidth: not found (bench/gpu/build_nvbandwidth.sh builds it; --nvbandwidth PATH)";
  }
  return w;
}

// ---- workloads on the replay (a simulation, also on a GPU machine: skipped there) -------

replay::compiled_trace generated(std::string_view gen, std::vector<std::string> const& params, std::uint64_t seed)
{
  std::vector<trace::event> const ev = trace::generate(gen, trace::parse_generator_params(params), seed);
  return replay::compiled_trace::compile(ev);
}

// The same, streamed through a binary trace file in `scratch` and compiled as it is read:
// the events are never all in memory (the serving preset's 19 M events took 2 GB as a
// vector, twice its compiled arrays).
replay::compiled_trace generated_via_file(std::string_view gen, std::vector<std::string> const& params,
                                          std::uint64_t seed, fs::path const& scratch)
{
  fs::path const file = scratch / (std::string(gen) + ".tpb");
  {
    trace::writer w(file, trace::format::binary);
    trace::generate(gen, trace::parse_generator_params(params), seed, [&w](trace::event const& e) { w.write(e); });
    w.close();
  }
  replay::compiled_trace t = replay::compiled_trace::compile_file(file);
  std::error_code ec;
  fs::remove(file, ec);
  return t;
}

std::string ratio_label(double x)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

struct replay_config {
  std::string policy;
  std::string prefetch;
  replay::replay_mode mode{replay::replay_mode::pool};
};

replay::replay_result replay_once(replay::compiled_trace const& t, suite::device_preset const& preset,
                                  std::uint64_t capacity, replay_config const& rc)
{
  replay::run_options o;
  o.mode = rc.mode;
  o.policy = rc.policy;
  o.prefetch = rc.prefetch;
  o.capacity_bytes = std::max<std::uint64_t>(capacity, 4096);
  o.link = preset.host_link;
  return replay::run(t, o);
}

json::object replay_params(std::string_view model, replay_config const& rc, double x)
{
  json::object p;
  p["model"] = model;
  p["policy"] = rc.policy;
  p["prefetch"] = rc.prefetch;
  p["mode"] = std::string(replay::to_string(rc.mode));
  p["oversubscription"] = x;
  return p;
}

// Iteration time against oversubscription, per model and configuration, on the replay.
workload_result run_replay_train(device_under_test const& d, run_config const& cfg)
{
  workload_result w{"replay-train",
                    "Oversubscribed training on the replay: iteration time against oversubscription (simulated)",
                    {}, {}, {}};
  w.plot["x"] = "oversubscription";
  w.plot["x_label"] = "working set / device tier";
  w.plot["x_log"] = false;
  w.plot["split"] = json::array{"model"};
  w.plot["series"] = json::array{"policy", "prefetch", "mode"};
  std::vector<double> const ratios = cfg.quick ? std::vector<double>{1, 2, 4} : std::vector<double>{1, 1.5, 2, 4, 8};
  struct model {
    char const* name;
    char const* gen;
    std::vector<std::string> params;
    double iterations;
  };
  std::vector<model> const models = {
    {"transformer-train", "transformer-train", {"iterations=2"}, 2},
    {"mlp-train", "mlp-train", {"iterations=2"}, 2},
  };
  std::vector<replay_config> const configs = {
    {"lru", "none"}, {"lru", "plan"}, {"belady", "none"},
    {"lru", "none", replay::replay_mode::uvm}, {"lru", "none", replay::replay_mode::uvm_hints},
  };
  for (model const& m : models) {
    replay::compiled_trace const t = generated(m.gen, m.params, cfg.seed);
    for (replay_config const& rc : configs) {
      double reference = 0.0;
      for (double const x : ratios) {
        replay::replay_result const r =
          replay_once(t, *d.spec().preset, static_cast<std::uint64_t>(static_cast<double>(t.peak_live_bytes()) / x), rc);
        json::object p = replay_params(m.name, rc, x);
        w.figures.push_back({"iteration_time", "s", {r.makespan_seconds / m.iterations}, p});
        w.figures.push_back({"stall", "s", {r.stall_seconds / m.iterations}, p});
        w.figures.push_back({"bytes_moved", "B", {static_cast<double>(r.bytes_h2d + r.bytes_d2h) / m.iterations}, p});
        w.figures.push_back({"makespan_vs_ideal", "x", {r.makespan_vs_ideal()}, p});
        if (x == 1.0) { reference = r.makespan_seconds; }
        if (reference > 0) { w.figures.push_back({"vs_unlimited", "x", {r.makespan_seconds / reference}, p}); }
      }
    }
  }
  return w;
}

// Layer-streamed inference and a paged KV cache, on the replay.
enum class serving_kind { infer_stream, kv_paging, kv_serving };

workload_result run_replay_serving(device_under_test const& d, run_config const& cfg, serving_kind kind,
                                   fs::path const& scratch)
{
  bool const kv = kind != serving_kind::infer_stream;
  bool const serving = kind == serving_kind::kv_serving;
  std::string_view const model = kv ? "kv-paging" : "llm-infer-stream";
  workload_result w;
  w.name = serving ? "kv-serving" : kv ? "kv-paging" : "infer-stream";
  w.title = serving ? "Paged KV cache at serving scale, kv-paging preset=serving (the replay, simulated)"
            : kv    ? "Paged KV cache (the replay, simulated)"
                    : "Layer-streamed inference, weights per step (the replay, simulated)";
  std::vector<double> ratios{2, 4};
  if (!cfg.quick) { ratios = {1.5, 2, 4, 8}; }
  std::vector<replay_config> configs{{"lru", "none"}, {"belady", "none"}, {"repeat", "plan"}};
  if (serving) {
    // The serving preset (about 90,000 live 256 KiB blocks, 18.9 M requests) takes about
    // 30 s a run on a development machine, so fewer runs: s3fifo is the replay chapter's
    // best online policy there, belady the fewest misses.
    ratios = {2};
    if (!cfg.quick) { ratios = {2, 4}; }
    configs = {{"lru", "none"}, {"s3fifo", "none"}};
    if (!cfg.quick) { configs.push_back({"belady", "none"}); }
  }
  replay::compiled_trace const t = serving ? generated_via_file("kv-paging", {"preset=serving"}, cfg.seed, scratch)
                                   : kv    ? generated("kv-paging", {"requests=40"}, cfg.seed)
                                           : generated("llm-infer-stream", {}, cfg.seed);
  for (replay_config const& rc : configs) {
    for (double const x : ratios) {
      replay::replay_result const r =
        replay_once(t, *d.spec().preset, static_cast<std::uint64_t>(static_cast<double>(t.peak_live_bytes()) / x), rc);
      json::object p = replay_params(model, rc, x);
      if (serving) { p["preset"] = "serving"; }
      w.figures.push_back({"makespan", "s", {r.makespan_seconds}, p});
      w.figures.push_back({"makespan_vs_ideal", "x", {r.makespan_vs_ideal()}, p});
      w.figures.push_back({"hit_ratio", "ratio", {r.hit_ratio()}, p});
    }
  }
  return w;
}

// ---- workload: the oversubscription demo (a child process) --------------------------------

workload_result run_demo_train(device_under_test const& d, run_config const& cfg, fs::path const& scratch)
{
  workload_result w{"oversub-train",
                    "Oversubscribed training: the demo's MLP and its transformer-shaped model with Adam, iteration time "
                    "against oversubscription",
                    {}, {}, {}};
  w.plot["x"] = "oversubscription";
  w.plot["x_label"] = "working set / device tier";
  w.plot["x_log"] = false;
  w.plot["split"] = json::array{"model"};
  w.plot["series"] = json::array{"policy", "prefetch"};
  std::vector<double> const ratios = cfg.quick ? std::vector<double>{1, 2, 4} : std::vector<double>{1, 1.5, 2, 4, 8};
  struct conf {
    char const* model;  // the demo's --model
    char const* policy;
    bool prefetch;
  };
  // The transformer-shaped model (Note [A transformer-shaped loop] in the demo) with the
  // default and without prefetch. On a preset its runs skip the math (--skip-math: the same
  // calls and times; its host kernels would take minutes), so they are not verified there.
  std::vector<conf> const confs = {{"mlp", "lru", true},         {"mlp", "lru", false},
                                   {"mlp", "repeat", true},      {"transformer", "lru", true},
                                   {"transformer", "lru", false}};
  for (conf const& c : confs) {
    bool const transformer = std::string_view(c.model) == "transformer";
    bool const skip_math = transformer && d.spec().simulated;
    for (double const x : ratios) {
      std::vector<std::string> args = {"--model", c.model, "--oversubscription", ratio_label(x), "--policy", c.policy,
                                       "--iterations", std::to_string(suite::kDemoIterations)};
      if (!c.prefetch) { args.emplace_back("--no-prefetch"); }
      if (d.spec().simulated) { suite::append_sim_demo_args(*d.spec().preset, args); }
      else {
        args.insert(args.end(), {"--backend", "cuda", "--device", std::to_string(d.spec().cuda_ordinal)});
      }
      if (skip_math) { args.emplace_back("--skip-math"); }
      std::string why;
      std::optional<json::object> const r =
        suite::run_demo(cfg.demo_path, args, (scratch / "demo.json").string(), &why);
      if (!r) {
        // One configuration the demo cannot run (out of memory for fragmentation, say) is
        // named in `skipped` with its error; the other rows still run.
        w.note += std::string(w.note.empty() ? "" : "; ") + "demo-" + c.model + " " + c.policy +
                  (c.prefetch ? " next-op " : " none ") + ratio_label(x) + "x failed: " + why;
        continue;
      }
      suite::demo_times const t = suite::demo_times_of(*r, d.spec().simulated);
      double const iters = std::max(1.0, suite::num(*r, "iterations"));
      json::object p;
      p["model"] = transformer ? "demo-transformer" : "demo-mlp";
      p["policy"] = c.policy;
      p["prefetch"] = c.prefetch ? "next-op" : "none";
      p["oversubscription"] = x;
      w.figures.push_back({"iteration_time", "s", {t.steady}, p});
      w.figures.push_back({"first_iteration_time", "s", {t.first}, p});
      w.figures.push_back({"reference_iteration_time", "s", {t.reference_steady}, p});
      w.figures.push_back({"host_stall", "s", {suite::num(*r, "stall_seconds") / iters}, p});  // the host's waits (wall clock)
      w.figures.push_back({"bytes_moved", "B", {(suite::num(*r, "bytes_h2d") + suite::num(*r, "bytes_d2h")) / iters}, p});
      if (t.reference_steady > 0) { w.figures.push_back({"vs_unlimited", "x", {t.steady / t.reference_steady}, p}); }
      if (!skip_math) {
        json::value const* ok = r->if_contains("verified");
        w.figures.push_back(
          {"losses_bit_identical", "bool", {ok != nullptr && ok->is_bool() && ok->as_bool() ? 1.0 : 0.0}, p});
      }
    }
  }
  return w;
}

// ---- workload: the allocator (host CPU figures) ----------------------------------------

// The pool's hit path on the device's backend: acquire + release of a resident tensor on a
// stream, host time per pair (what every access of a tensor already on the device costs).
figure hit_path(device_under_test const& d, run_config const& cfg)
{
  pool_options po;
  po.backend_object = d.shared();
  po.read_environment = false;
  po.publish.enabled = false;
  po.tiers = {tier_options{.kind = tier_kind::device, .capacity_bytes = 64U << 20U, .chunk_bytes = 64U << 20U},
              tier_options{.kind = tier_kind::host, .capacity_bytes = 64U << 20U, .chunk_bytes = 64U << 20U}};
  pool p(po);
  stream_handle const s = p.create_stream();
  tensor const t = p.allocate(4096);
  { lease l = p.acquire(t, access_mode::read, s); }
  p.synchronize(s);
  int const n = cfg.quick ? 100'000 : 400'000;
  figure f{"hit_path_ns_per_pair", "ns", {}, json::object{{"workload", "pool-hit"}, {"tensor_bytes", 4096}}};
  for (int rep = 0; rep < (cfg.quick ? 3 : 5); ++rep) {
    auto const t0 = clock_type::now();
    for (int i = 0; i < n; ++i) { lease l = p.acquire(t, access_mode::read, s); }
    f.samples.push_back(std::chrono::duration<double, std::nano>(clock_type::now() - t0).count() / n);
  }
  p.synchronize(s);
  return f;
}

workload_result run_allocator(device_under_test const& d, run_config const& cfg)
{
  workload_result w{"allocator", "The arena sub-allocator and the pool's hit path: time per pair (host CPU)", {}, {}, {}};
  w.figures.push_back(hit_path(d, cfg));
  for (auto const wl : {workloads::arena_workload::rand50, workloads::arena_workload::dnn_static}) {
    workloads::alloc_trace const t = workloads::generate_arena_workload(wl, 1000, cfg.quick ? 200'000 : 0);
    workloads::measure_options mo;
    mo.runs = cfg.quick ? 3 : 5;
    mo.per_op_timing = false;
    workloads::arena_figures const f = workloads::measure_arena(t, mo);
    json::object p;
    p["workload"] = std::string(workloads::to_string(wl));
    w.figures.push_back({"ns_per_pair", "ns", f.ns_per_pair_runs, p});
    w.figures.push_back({"failures", "count", {static_cast<double>(f.outcome.failures)}, p});
  }
  return w;
}

// ---- the suite -------------------------------------------------------------------------

struct workload_def {
  char const* name;
  double quick_s;  // about how long it takes (sim presets; a GPU is in the same range)
  double full_s;
  bool sim_only;   // the replay: a simulation whatever the device
  bool needs_demo;
};

constexpr workload_def kWorkloads[] = {
  {"link", 1.0, 3.0, false, false},
  {"oversub-train", 40.0, 100.0, false, true},
  {"replay-train", 2.0, 5.0, true, false},
  {"infer-stream", 1.0, 3.0, true, false},
  {"kv-paging", 2.0, 5.0, true, false},
  {"kv-serving", 75.0, 200.0, true, false},
  {"allocator", 2.0, 6.0, false, false},
};

std::string now_utc()
{
  std::time_t const t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json::object machine_fingerprint()
{
  json::object m;
  char host[256] = {};
  (void)gethostname(host, sizeof host - 1);
  m["hostname"] = host;
  std::ifstream cpu("/proc/cpuinfo");
  std::string line;
  std::string model;
  while (std::getline(cpu, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  m["cpu"] = model;
  m["cores"] = std::thread::hardware_concurrency();
  long const pages = sysconf(_SC_PHYS_PAGES);
  long const page = sysconf(_SC_PAGE_SIZE);
  m["host_memory_bytes"] = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  try {
    m["numa_nodes"] = topology::discover().numa_nodes().size();
  } catch (...) {
    m["numa_nodes"] = 1;
  }
  return m;
}

json::object tierpool_fingerprint()
{
  json::object t;
  t["version"] = version_string;
  json::object b;
#if defined(TIERPOOL_CLI_BUILD_TYPE)
  b["build_type"] = TIERPOOL_CLI_BUILD_TYPE;
#endif
  b["compiler"] = std::string(__VERSION__);
  b["cuda"] = cuda_device_count() >= 0;
  t["build"] = b;
  return t;
}

json::object device_fingerprint(suite::device_spec const& d, backend& be)
{
  json::object o;
  o["id"] = d.id;
  o["simulated"] = d.simulated;
  std::size_t free_b = 0;
  std::size_t total_b = 0;
  (void)be.device_memory_info(&free_b, &total_b);
  o["memory_bytes"] = total_b;
  o["numa_node"] = d.simulated ? -1 : be.caps().host_numa_node;
  if (d.simulated) {
    o["name"] = d.preset->title;
    json::object l;
    l["name"] = d.preset->link_name;
    l["h2d_bytes_per_second"] = d.preset->host_link.bandwidth_bytes_per_s;
    l["d2h_bytes_per_second"] = d.preset->d2h().bandwidth_bytes_per_s;
    l["latency_seconds"] = static_cast<double>(d.preset->host_link.latency_ns) * 1e-9;
    l["d2h_latency_seconds"] = static_cast<double>(d.preset->d2h().latency_ns) * 1e-9;
    o["link"] = l;
    o["driver_version"] = nullptr;
    o["runtime_version"] = nullptr;
    auto const [flops, bytes] = suite::kernel_roofline_of(*d.preset);
    o["kernel_roofline"] = json::object{{"flops_per_second", flops}, {"bytes_per_second", bytes}};
    if (!d.preset->host_costs.none()) {
      sim_host_costs const& h = d.preset->host_costs;
      o["host_costs"] = json::object{{"kernel_seconds", static_cast<double>(h.compute) * 1e-9},
                                     {"copy_seconds", static_cast<double>(h.copy) * 1e-9},
                                     {"event_seconds", static_cast<double>(h.event) * 1e-9},
                                     {"host_func_seconds", static_cast<double>(h.host_func) * 1e-9}};
    }
  } else {
    o["name"] = be.caps().device_name.empty() ? "CUDA device " + std::to_string(d.cuda_ordinal) : be.caps().device_name;
    backend_caps const& caps = be.caps();
    json::object l{{"name", "measured"}};
    for (auto const& [k, v] : pcie_json(caps)) { l[k] = v; }
    o["link"] = l;
    o["compute_capability"] = std::to_string(caps.compute_capability_major) + "." +
                              std::to_string(caps.compute_capability_minor);
    o["driver_version"] = cuda_version_json(caps.driver_version);
    o["runtime_version"] = cuda_version_json(caps.runtime_version);
    // The stock preset's roofline for this GPU (its vendor figures), for `suite calibrate`.
    if (auto const r = suite::kernel_roofline_for_gpu(o["name"].as_string())) {
      o["kernel_roofline"] = json::object{{"flops_per_second", r->first}, {"bytes_per_second", r->second}};
    }
  }
  return o;
}

std::string file_name(std::string id)
{
  for (char& ch : id) {
    if (ch == ':' || ch == '/' || ch == ' ') { ch = '-'; }
  }
  return id + ".json";
}

// Runs the suite on one device within `budget_s`; returns the bundle.
json::object run_device(suite::device_spec const& spec, run_config const& cfg, double budget_s, bool* failed)
{
  auto const t0 = clock_type::now();
  auto left = [&] { return budget_s - std::chrono::duration<double>(clock_type::now() - t0).count(); };
  device_under_test d(spec);
  fs::path const scratch = fs::temp_directory_path() / ("tierpool-suite-" + std::to_string(getpid()));
  fs::create_directories(scratch);
  json::array done;
  json::array skipped;
  auto skip = [&](char const* name, std::string reason) {
    skipped.push_back(json::object{{"workload", name}, {"reason", std::move(reason)}});
    if (!cfg.quiet) { std::fprintf(stderr, "  %-14s skipped: %s\n", name, skipped.back().as_object().at("reason").as_string().c_str()); }
  };
  for (workload_def const& wd : kWorkloads) {
    if (!cfg.only.empty() && std::find(cfg.only.begin(), cfg.only.end(), wd.name) == cfg.only.end()) { continue; }
    double const need = cfg.quick ? wd.quick_s : wd.full_s;
    if (wd.sim_only && !spec.simulated) {
      skip(wd.name, "a replay is a simulation: it runs on simulated presets (a GPU's figures come from the measured workloads)");
      continue;
    }
    if (wd.needs_demo && cfg.demo_path.empty()) {
      skip(wd.name, "the oversubscription demo was not found (build examples, or give --demo PATH)");
      continue;
    }
    if (left() < need) {
      char why[160];
      std::snprintf(why, sizeof why, "budget: %.1f s left for this device, it needs about %.0f s", std::max(0.0, left()), need);
      skip(wd.name, why);
      continue;
    }
    if (!cfg.quiet) { std::fprintf(stderr, "  %-14s ...", wd.name); }
    auto const w0 = clock_type::now();
    std::string_view const name = wd.name;
    workload_result r;
    try {
      r = name == "link"            ? run_link(d, cfg)
          : name == "oversub-train" ? run_demo_train(d, cfg, scratch)
          : name == "replay-train"  ? run_replay_train(d, cfg)
          : name == "infer-stream"  ? run_replay_serving(d, cfg, serving_kind::infer_stream, scratch)
          : name == "kv-paging"     ? run_replay_serving(d, cfg, serving_kind::kv_paging, scratch)
          : name == "kv-serving"    ? run_replay_serving(d, cfg, serving_kind::kv_serving, scratch)
                                    : run_allocator(d, cfg);
    } catch (std::exception const& e) {  // the other workloads still run; the bundle says what failed
      if (!cfg.quiet) { std::fprintf(stderr, " failed\n"); }
      skip(wd.name, std::string("failed: ") + e.what());
      *failed = true;
      continue;
    }
    if (!r.note.empty()) { skip(wd.name, r.note); }
    double const took = std::chrono::duration<double>(clock_type::now() - w0).count();
    if (!cfg.quiet) { std::fprintf(stderr, " %zu figures in %.1f s\n", r.figures.size(), took); }
    json::object o;
    o["name"] = r.name;
    o["title"] = r.title;
    if (!r.plot.empty()) { o["plot"] = r.plot; }
    o["seconds"] = took;
    json::array figs;
    for (figure const& f : r.figures) { figs.push_back(to_json(f)); }
    o["figures"] = std::move(figs);
    done.push_back(std::move(o));
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  json::object b;
  b["format"] = "tierpool-suite-bundle";
  b["suite_version"] = kSuiteVersion;
  b["suite_preset"] = cfg.quick ? "quick" : "full";
  b["created_utc"] = now_utc();
  b["tierpool"] = tierpool_fingerprint();
  b["machine"] = machine_fingerprint();
  b["device"] = device_fingerprint(spec, d.be());
  b["budget_seconds"] = budget_s;
  b["elapsed_seconds"] = std::chrono::duration<double>(clock_type::now() - t0).count();
  b["workloads"] = std::move(done);
  b["skipped"] = std::move(skipped);
  return b;
}

double parse_budget(std::string const& text)
{
  std::string t = text;
  double mult = 1.0;
  if (!t.empty() && (t.back() == 's' || t.back() == 'm' || t.back() == 'h')) {
    mult = t.back() == 'm' ? 60.0 : t.back() == 'h' ? 3600.0 : 1.0;
    t.pop_back();
  }
  char* end = nullptr;
  double const v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !(v > 0) || v * mult > 86400.0 * 7) {
    throw logic_error("--budget must be a positive duration such as 90s, 5m or 1h (at most a week), got '" + text + "'");
  }
  return v * mult;
}

// The devices rank R runs under --mpi: R, R + N, ... of the list; with fewer devices than
// ranks, device R mod count; with `all` (CUDA devices of the rank's node), the node-local
// rank's device.
std::vector<suite::device_spec> rank_devices(run_config const& cfg, suite::mpi_world const& w)
{
  std::vector<suite::device_spec> out;
  std::size_t const n = cfg.devices.size();
  if (cfg.all_devices && !cfg.devices.front().simulated) {
    char const* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    std::size_t const lr = local != nullptr ? std::strtoul(local, nullptr, 10) : static_cast<std::size_t>(w.rank);
    out.push_back(cfg.devices[lr % n]);
    return out;
  }
  for (std::size_t i = static_cast<std::size_t>(w.rank); i < n; i += static_cast<std::size_t>(w.size)) {
    out.push_back(cfg.devices[i]);
  }
  if (out.empty()) { out.push_back(cfg.devices[static_cast<std::size_t>(w.rank) % n]); }
  return out;
}

std::string find_nvbandwidth()
{
  if (char const* e = std::getenv("TIERPOOL_NVBANDWIDTH"); e != nullptr && *e != '\0') { return e; }
  std::error_code ec;
  fs::path const self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(self.parent_path() / "nvbandwidth", ec)) { return (self.parent_path() / "nvbandwidth").string(); }
  if (char const* path = std::getenv("PATH"); path != nullptr) {
    for (std::string_view rest = path; !rest.empty();) {
      std::size_t const colon = rest.find(':');
      fs::path const cand = fs::path(std::string(rest.substr(0, colon))) / "nvbandwidth";
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
      if (fs::exists(cand, ec)) { return cand.string(); }
    }
  }
  return {};
}

void print_list()
{
  std::printf("workloads (suite version %d):\n", kSuiteVersion);
  for (workload_def const& w : kWorkloads) {
    std::printf("  %-14s about %.0f s (quick) / %.0f s (full)%s\n", w.name, w.quick_s, w.full_s,
                w.sim_only ? "; simulated presets only" : "");
  }
  std::printf("\nsimulated device presets (--devices sim:NAME):\n");
  for (suite::device_preset const& p : suite::presets()) { std::printf("  %-12s %s\n", p.name.data(), p.title.data()); }
}

}  // namespace

int suite_run_command(int argc, char** argv)
{
  std::string devices = "all";
  std::string budget = "5m";
  std::string only;
  std::string preset = "full";
  std::string seed_text = "1";
  run_config cfg;
  po::options_description desc("tierpool suite run [options]");
  // clang-format off
  desc.add_options()
    ("help,h", "this help")
    ("devices", po::value(&devices), "all (default: every CUDA device, or when there is none the simulated presets "
     "h200-sxm and gh200), or a comma-separated list of CUDA ordinals and sim:PRESET (--list names them)")
    ("budget", po::value(&budget), "time for the whole run, shared by the devices: 90s, 5m (default), 1h")
    ("preset", po::value(&preset), "quick (fewer sizes and ratios: about a minute per device) or full (default)")
    ("only", po::value(&only), "run only these workloads, comma-separated (--list names them)")
    ("out", po::value(&cfg.out_dir), "folder for the bundles, one DEVICE.json each (default suite-out)")
    ("demo", po::value(&cfg.demo_path), "the oversubscription demo binary (default: found beside tierpool, or TIERPOOL_DEMO)")
    ("nvbandwidth", po::value(&cfg.nvbandwidth_path), "NVIDIA's nvbandwidth binary, run beside the link workload on a "
     "GPU (default: beside tierpool, on PATH, or TIERPOOL_NVBANDWIDTH)")
    ("seed", po::value(&seed_text), "seed of the generated traces (default 1)")
    ("mpi", "one rank per device under mpirun: rank R takes the devices R, R + N, ... of the list (with `all`, "
     "its node's local device), and rank 0 writes every rank's bundle (needs a build with TIERPOOL_ENABLE_MPI)")
    ("list", "list the workloads and the simulated presets")
    ("quiet,q", "no progress on stderr");
  // clang-format on
  suite::mpi_world world;
  if (std::any_of(argv + 1, argv + argc, [](char const* a) { return std::string_view(a) == "--mpi"; })) {
    try {
      world = suite::mpi_start(&argc, &argv);
      cfg.mpi = true;
    } catch (std::exception const& e) {
      std::fprintf(stderr, "tierpool suite run: %s\n", e.what());
      return 2;
    }
  }
  struct finish_guard {
    ~finish_guard() { suite::mpi_finish(); }
  } const finish;
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool suite run: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0U) {
    std::cout << desc << '\n';
    return 0;
  }
  if (vm.count("list") != 0U) {
    print_list();
    return 0;
  }
  try {
    cfg.quiet = vm.count("quiet") != 0U;
    if (preset != "quick" && preset != "full") { throw logic_error("--preset must be quick or full, got '" + preset + "'"); }
    cfg.quick = preset == "quick";
    cfg.budget_s = parse_budget(budget);
    cfg.seed = parse_checked<std::uint64_t>("--seed", seed_text, 0, ~std::uint64_t{0});
    cfg.devices = suite::parse_devices(devices);
    cfg.all_devices = devices == "all";
    for (std::string_view rest = only; !rest.empty();) {
      std::size_t const comma = rest.find(',');
      std::string name(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      if (std::none_of(std::begin(kWorkloads), std::end(kWorkloads), [&](workload_def const& w) { return name == w.name; })) {
        throw logic_error("--only: unknown workload '" + name + "' (tierpool suite run --list names them)");
      }
      cfg.only.push_back(name);
    }
    if (cfg.demo_path.empty()) { cfg.demo_path = suite::find_demo(); }
    if (cfg.nvbandwidth_path.empty()) { cfg.nvbandwidth_path = find_nvbandwidth(); }
    double shortest = 1e30;
    for (workload_def const& w : kWorkloads) {
      if (cfg.only.empty() || std::find(cfg.only.begin(), cfg.only.end(), w.name) != cfg.only.end()) {
        shortest = std::min(shortest, cfg.quick ? w.quick_s : w.full_s);
      }
    }
    if (cfg.budget_s / static_cast<double>(cfg.devices.size()) < shortest) {
      char msg[200];
      std::snprintf(msg, sizeof msg, "--budget %s is too short for any workload on %zu device(s): the shortest needs about %.0f s per device",
                    budget.c_str(), cfg.devices.size(), shortest);
      throw logic_error(msg);
    }
    fs::create_directories(cfg.out_dir);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tierpool suite run: %s\n", e.what());
    return 2;
  }
  std::vector<suite::device_spec> const mine = cfg.mpi ? rank_devices(cfg, world) : cfg.devices;
  if (cfg.mpi) { cfg.quiet = cfg.quiet || world.rank != 0; }
  auto const t0 = clock_type::now();
  int rc = 0;
  json::array written;  // {"file", "bundle"} per device of this rank
  for (std::size_t i = 0; i < mine.size(); ++i) {
    suite::device_spec const& dev = mine[i];
    double const used = std::chrono::duration<double>(clock_type::now() - t0).count();
    double const share = (cfg.budget_s - used) / static_cast<double>(mine.size() - i);
    if (!cfg.quiet) { std::fprintf(stderr, "%s (%zu of %zu, %.0f s):\n", dev.id.c_str(), i + 1, mine.size(), share); }
    try {
      bool failed = false;
      json::object b = run_device(dev, cfg, share, &failed);
      if (failed) { rc = 1; }
      std::string name = file_name(dev.id);
      if (cfg.mpi) {
        b["mpi"] = json::object{{"rank", world.rank}, {"size", world.size}, {"host", world.host}};
        name = "rank" + std::to_string(world.rank) + "-" + name;
      }
      written.push_back(json::object{{"file", name}, {"bundle", std::move(b)}});
    } catch (std::exception const& e) {
      std::fprintf(stderr, "tierpool suite run: %s: %s\n", dev.id.c_str(), e.what());
      rc = 1;
    }
  }
  // Every rank's bundles to rank 0 (without --mpi: this process's), which writes them.
  std::vector<std::string> const all = cfg.mpi ? suite::mpi_gather(json::serialize(written))
                                               : std::vector<std::string>{json::serialize(written)};
  std::vector<std::string> files;
  for (std::string const& text : all) {
    json::value const parsed = json::parse(text);
    for (json::value const& v : parsed.as_array()) {
      fs::path const out = fs::path(cfg.out_dir) / std::string(v.at("file").as_string());
      std::ofstream f(out);
      f << json::serialize(v.at("bundle")) << '\n';
      if (!f) {
        std::fprintf(stderr, "tierpool suite run: cannot write %s\n", out.string().c_str());
        rc = 1;
        continue;
      }
      std::printf("%s\n", out.string().c_str());
      files.push_back(out.string());
    }
  }
  // Under --mpi, rank 0 also writes the merged report of every rank's bundles.
  if (cfg.mpi && world.rank == 0 && !files.empty()) {
    std::string const html = (fs::path(cfg.out_dir) / "report.html").string();
    std::string const csv = (fs::path(cfg.out_dir) / "report.csv").string();
    std::vector<std::string> args = {"tierpool suite report"};
    args.insert(args.end(), files.begin(), files.end());
    args.insert(args.end(), {"--html", html, "--csv", csv, "--quiet"});
    std::vector<char*> av;
    for (std::string& a : args) { av.push_back(a.data()); }
    av.push_back(nullptr);
    if (suite_report_command(static_cast<int>(args.size()), av.data()) != 0) {
      rc = 1;
    } else {
      std::printf("%s\n%s\n", html.c_str(), csv.c_str());
    }
  }
  if (cfg.mpi) { rc = suite::mpi_max(rc); }
  return rc;
}

}  // namespace tierpool::cli

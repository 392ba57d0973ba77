// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_gen.cpp — owns the workload table of include/tierpool/trace_gen.hpp (names,
// parameters, defaults), parameter parsing, and generate(). The workloads themselves are
// in trace_gen_dnn.cpp (mlp-train, transformer-train, llm-infer-stream) and
// trace_gen_serving.cpp (kv-paging, random-reuse).
#include "trace/detail/generator.hpp"

#include <tierpool/detail/parse.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace tierpool::trace {
namespace {

using gp = generator_param_info;

constexpr std::array<gp, 9> kMlpParams{{
  {"layers", "8", "dense layers L"},
  {"width", "2048", "layer width W (weights are W x W)"},
  {"batch", "256", "batch size B (activations are B x W)"},
  {"iterations", "3", "training iterations"},
  {"dtype_bytes", "4", "bytes per element (4 = fp32)"},
  {"tflops", "20", "device rate in TFLOP/s for compute durations"},
  {"hints", "1", "1: activations kept for backward are recomputable (at their forward time) and lossy-ok; 0: off"},
  {"streams", "1", "2: each gradient is all-reduced on a second stream as backward produces it (data parallel)"},
  {"comm_gbps", "25", "all-reduce bus bandwidth in GB/s with streams=2 (a ring moves twice the gradient's bytes)"},
}};

constexpr std::array<gp, 10> kTransformerParams{{
  {"blocks", "12", "transformer blocks"},
  {"hidden", "768", "hidden size h (about 12 h^2 parameters per block)"},
  {"seq", "1024", "sequence length s"},
  {"batch", "4", "micro-batch b (stored activations about 34 s b h bytes per block)"},
  {"dtype_bytes", "2", "bytes per weight / gradient element (2 = fp16 / bf16); Adam moments are fp32"},
  {"iterations", "2", "training iterations"},
  {"tflops", "100", "device rate in TFLOP/s for compute durations"},
  {"hints", "1", "1: stored activations are recomputable (at their block's forward time) and lossy-ok; 0: off"},
  {"streams", "1", "2: each gradient is all-reduced on a second stream as backward produces it (data parallel)"},
  {"comm_gbps", "25", "all-reduce bus bandwidth in GB/s with streams=2 (a ring moves twice the gradient's bytes)"},
}};

constexpr std::array<gp, 8> kLlmParams{{
  {"layers", "24", "decoder layers (weights read once per step, in order)"},
  {"hidden", "2048", "hidden size h (12 h^2 weights per layer)"},
  {"dtype_bytes", "2", "bytes per element (2 = fp16)"},
  {"batch", "1", "sequences decoded together"},
  {"prompt", "128", "prompt tokens (prefill)"},
  {"steps", "64", "decoding steps (one token each)"},
  {"kv_block_tokens", "16", "tokens per KV-cache block (one block tensor per layer)"},
  {"tflops", "100", "device rate in TFLOP/s for compute durations"},
}};

constexpr std::array<gp, 14> kKvParams{{
  {"requests", "64", "requests served"},
  {"arrival", "0.5", "mean arrivals per decoding step (Poisson)"},
  {"max_batch", "16", "sequences decoded at once; later arrivals wait"},
  {"prompt_min", "32", "shortest prompt, tokens"},
  {"prompt_max", "512", "longest prompt, tokens (uniform)"},
  {"output_min", "16", "shortest output, tokens"},
  {"output_max", "256", "longest output, tokens (uniform)"},
  {"block_tokens", "16", "tokens per KV block"},
  {"token_bytes", "128KiB", "KV bytes per token (all layers)"},
  {"weight_bytes", "0", "model weights read every step (0 = none)"},
  {"token_ns", "200000", "compute per decoded token, ns"},
  {"prefill_token_ns", "20000", "compute per prompt token at admission, ns"},
  {"block_pool", "0", "1: finished sequences' blocks go to a free list new blocks are taken from (a preallocated KV "
                      "cache), instead of being freed"},
  {"discard_blocks", "1", "with block_pool=1, 1: a block put on the free list is discarded (pool::discard), so an "
                          "eviction drops it unwritten; 0: it is kept as is"},
}};

// About 90,000 live KV blocks at once, as a serving engine on one large GPU holds (issue
// 19): 4,096 sequences decoded together, arrivals that keep the batch full, 16 KiB of KV
// per token (a small GQA model), 256 KiB blocks: 22 GiB of KV live at the peak.
constexpr std::array<generator_preset, 1> kKvPresets{{
  {"serving", "about 90,000 live 256 KiB blocks: 4,096 sequences at once, arrivals keeping the batch full",
   "requests=6000 arrival=30 max_batch=4096 token_bytes=16KiB"},
}};

constexpr std::array<gp, 7> kRandomParams{{
  {"tensors", "256", "tensors in the working set"},
  {"min_bytes", "64KiB", "smallest tensor"},
  {"max_bytes", "4MiB", "largest tensor (uniform, rounded to 4 KiB)"},
  {"accesses", "100000", "accesses after setup"},
  {"skew", "0.9", "Zipf exponent over a random ranking of the tensors (0 = uniform)"},
  {"write_ratio", "0.2", "fraction of accesses that read and write"},
  {"compute_ns", "0", "compute after each access, ns (0 = no compute events)"},
}};

constexpr std::array<workload_info, 5> kWorkloads{{
  {"mlp-train", "dense MLP training: forward, backward in reverse, Adam step (docs/chapters/benchmarks.md)", kMlpParams, false},
  {"transformer-train", "GPT-style blocks: forward, backward, Adam step with fp32 moments", kTransformerParams,
   false},
  {"llm-infer-stream", "layer-streamed decoding: every layer's weights once per step, KV cache grows", kLlmParams,
   false},
  {"kv-paging", "serving: requests arrive and finish, fixed-size KV blocks appended and freed", kKvParams, true,
   kKvPresets},
  {"random-reuse", "Zipf accesses over a working set of random-sized tensors (no structure)", kRandomParams, true},
}};

}  // namespace

std::span<workload_info const> workloads() noexcept { return kWorkloads; }

generator_params parse_generator_params(std::span<std::string const> items)
{
  generator_params out;
  for (auto const& item : items) {
    auto const eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw logic_error("generator parameter '" + item + "' must be key=value");
    }
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

namespace detail {

param_reader::param_reader(workload_info const& info, generator_params const& params) : info_(info), params_(params)
{
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto const& key = params[i].first;
    bool known = false;
    for (auto const& p : info.params) { known = known || p.key == key; }
    if (!known) {
      std::string valid;
      for (auto const& p : info.params) { valid += (valid.empty() ? "" : ", ") + std::string(p.key); }
      throw logic_error("unknown parameter '" + key + "' for workload " + std::string(info.name) + " (valid: " +
                        valid + ")");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (params[j].first == key) { throw logic_error("parameter '" + key + "' given twice"); }
    }
  }
}

std::string_view param_reader::value(std::string_view key) const
{
  for (auto const& [k, v] : params_) {
    if (k == key) { return v; }
  }
  for (auto const& p : info_.params) {
    if (p.key == key) { return p.default_value; }
  }
  throw logic_error("internal: workload " + std::string(info_.name) + " has no parameter '" + std::string(key) + "'");
}

void param_reader::bad(std::string_view key, std::string_view value, std::string const& expected) const
{
  throw logic_error("bad value '" + std::string(value) + "' for " + std::string(info_.name) + " parameter '" +
                    std::string(key) + "' (expected " + expected + ")");
}

std::uint64_t param_reader::count(std::string_view key, std::uint64_t min, std::uint64_t max) const
{
  auto const v = value(key);
  std::uint64_t n = 0;
  auto const r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (r.ec != std::errc{} || r.ptr != v.data() + v.size() || n < min || n > max) {
    bad(key, v, "an integer in " + std::to_string(min) + ".." + std::to_string(max));
  }
  return n;
}

std::uint64_t param_reader::bytes(std::string_view key, std::uint64_t min, std::uint64_t max) const
{
  auto const v = value(key);
  std::uint64_t n = 0;
  try {
    n = tierpool::detail::parse_byte_size(v);
  } catch (logic_error const&) {
    bad(key, v, "a byte size such as 4096, 64KiB or 2MiB");
  }
  if (n < min || n > max) {
    bad(key, v, "a byte size in " + std::to_string(min) + ".." + std::to_string(max) + " bytes");
  }
  return n;
}

double param_reader::real(std::string_view key, double min, double max) const
{
  auto const v = value(key);
  double d = 0.0;
  auto const r = std::from_chars(v.data(), v.data() + v.size(), d);
  if (r.ec != std::errc{} || r.ptr != v.data() + v.size() || !(d >= min && d <= max)) {
    bad(key, v, "a number in " + std::to_string(min) + ".." + std::to_string(max));
  }
  return d;
}

std::uint64_t random_source::poisson(double mean)
{
  double const limit = std::exp(-mean);
  std::uint64_t k = 0;
  double prod = uniform();
  while (prod > limit) {
    ++k;
    prod *= uniform();
  }
  return k;
}

std::uint64_t flops_to_ns(double flops, double tflops) noexcept
{
  double const ns = flops / (tflops * 1e3);  // flops / (tflops * 1e12) seconds * 1e9
  if (!(ns >= 1.0)) { return 1; }
  if (ns >= 1.8e19) { return std::numeric_limits<std::uint64_t>::max(); }
  return static_cast<std::uint64_t>(std::llround(ns));
}

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, char const* what)
{
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw logic_error(std::string("generator: ") + what + " does not fit in 64 bits; use smaller parameters");
  }
  return r;
}

}  // namespace detail

void generate(std::string_view workload, generator_params const& params, std::uint64_t seed, event_sink const& sink)
{
  workload_info const* info = nullptr;
  for (auto const& w : kWorkloads) {
    if (w.name == workload) { info = &w; }
  }
  if (info == nullptr) {
    std::string valid;
    for (auto const& w : kWorkloads) { valid += (valid.empty() ? "" : ", ") + std::string(w.name); }
    throw logic_error("unknown workload '" + std::string(workload) + "' (valid: " + valid + ")");
  }
  // preset=NAME: its values first, the explicit keys over them.
  generator_params merged;
  std::string_view preset;
  for (auto const& [k, v] : params) {
    if (k == "preset") {
      preset = v;
    } else {
      merged.emplace_back(k, v);
    }
  }
  if (!preset.empty()) {
    generator_preset const* found = nullptr;
    std::string names;
    for (auto const& pr : info->presets) {
      if (pr.name == preset) { found = &pr; }
      names += (names.empty() ? "" : ", ") + std::string(pr.name);
    }
    if (found == nullptr) {
      throw logic_error("workload '" + std::string(info->name) + "': unknown preset '" + std::string(preset) + "' (" +
                        (names.empty() ? std::string("it has none") : "valid: " + names) + ")");
    }
    std::string_view rest = found->values;
    while (!rest.empty()) {
      std::size_t const sp = std::min(rest.find(' '), rest.size());
      std::string_view const item = rest.substr(0, sp);
      rest.remove_prefix(std::min(sp + 1, rest.size()));
      std::size_t const eq = item.find('=');
      std::string const key(item.substr(0, eq));
      bool given = false;
      for (auto const& [k, v] : merged) { given = given || k == key; }
      if (!given) { merged.emplace_back(key, std::string(item.substr(eq + 1))); }
    }
  }
  detail::param_reader const p(*info, merged);
  detail::emitter out(sink);
  if (info->name == "mlp-train") {
    detail::generate_mlp_train(p, out);
  } else if (info->name == "transformer-train") {
    detail::generate_transformer_train(p, out);
  } else if (info->name == "llm-infer-stream") {
    detail::generate_llm_infer_stream(p, out);
  } else if (info->name == "kv-paging") {
    detail::generate_kv_paging(p, seed, out);
  } else {
    detail::generate_random_reuse(p, seed, out);
  }
}

std::vector<event> generate(std::string_view workload, generator_params const& params, std::uint64_t seed)
{
  std::vector<event> events;
  generate(workload, params, seed, [&events](event const& e) { events.push_back(e); });
  return events;
}

}  // namespace tierpool::trace

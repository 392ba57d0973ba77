// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_gen_dnn.cpp — the DNN-shaped generators of the tiering workloads (docs/chapters/benchmarks.md): mlp-train,
// transformer-train and llm-infer-stream. No randomness: the seed does not matter. The
// exact tensors and access order of each are listed in docs/chapters/traces.md.
#include "trace/detail/generator.hpp"

#include <string>
#include <vector>

namespace tierpool::trace::detail {
namespace {

constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 24U;   // 16 Mi: keeps products of dims in range
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 20U; // layers, iterations, steps
constexpr double kAdamFlopsPerParam = 12.0;  // Adam update: moments, bias correction, sqrt, divide, axpy
constexpr std::uint8_t kActivationHints = hint_recomputable | hint_lossy_ok;

// Note [activation hints]
// With hints=1 (the default) the training generators mark each activation kept for
// backward with hint_recomputable | hint_lossy_ok and duration_ns = the compute time of the
// forward op that produced it: the same figure as that op's compute event, so dropping it
// and running that op again costs what the trace already charged once. The cost is of that
// one op; its inputs must be present (or recomputed in turn, which the replay accounts).
// Activations tolerate 8-bit storage (the usual assumption of activation compression).
// Weights, gradients, Adam moments, the input batch, x0 (freed before backward) and dx are
// hints 0: not recomputable, lossless compression allowed.

std::string label(char const* prefix, std::uint64_t i) { return prefix + std::to_string(i); }

// The persistent tensors of layers 1..n trained with Adam: weights w, gradients g, moments
// m and v (index 0 unused). Both training generators lay them out and use them alike.
struct adam_layers {
  std::vector<std::uint64_t> w, g, m, v;

  // "init": alloc w, g, m, v per layer (named by `name(kind, l)`), then wd w, m, v per layer.
  template <class Name>
  adam_layers(emitter& out, std::uint64_t n, std::uint64_t weight_bytes, std::uint64_t moment_bytes, Name name)
    : w(n + 1), g(n + 1), m(n + 1), v(n + 1)
  {
    out.phase("init");
    for (std::uint64_t l = 1; l <= n; ++l) {
      w[l] = out.alloc(weight_bytes, name('w', l));
      g[l] = out.alloc(weight_bytes, name('g', l));
      m[l] = out.alloc(moment_bytes, name('m', l));
      v[l] = out.alloc(moment_bytes, name('v', l));
    }
    for (std::uint64_t l = 1; l <= n; ++l) {
      out.wd(w[l]);
      out.wd(m[l]);
      out.wd(v[l]);
    }
  }

  [[nodiscard]] std::uint64_t layers() const noexcept { return w.size() - 1; }

  // "optimizer": per layer read g (rw with a gradient all-reduce: Note [Gradients reduced on
  // a second stream]), rw m, rw v, rw w, compute.
  void step(emitter& out, std::uint64_t opt_ns, bool reduced) const
  {
    out.phase("optimizer");
    for (std::uint64_t l = 1; l <= layers(); ++l) {
      out.access(g[l], reduced ? access_kind::read_write : access_kind::read);
      out.rw(m[l]);
      out.rw(v[l]);
      out.rw(w[l]);
      out.compute(opt_ns);
    }
  }

  // "teardown": free every layer's tensors.
  void free_all(emitter& out) const
  {
    out.phase("teardown");
    for (std::uint64_t l = 1; l <= layers(); ++l) {
      out.free(w[l]);
      out.free(g[l]);
      out.free(m[l]);
      out.free(v[l]);
    }
  }
};

// Note [Gradients reduced on a second stream]
// streams=2 models data-parallel training (PyTorch DDP, DeepSpeed): as backward produces a
// layer's gradient, a communication stream (trace stream 1) all-reduces it in place while
// stream 0 goes on with the layers below: rw g_l, then compute 2 x bytes(g_l) / comm_gbps
// (a ring all-reduce over many ranks moves about twice the buffer each way). The
// optimizer's access to g_l becomes rw: the step zeroes the gradient bucket after reading
// it, as DDP's buckets are. The two writes give the replay its cross-stream order with
// what the trace format has (a write waits for the earlier uses on other streams,
// docs/chapters/streams.md): the all-reduce waits for the kernel that wrote g_l, and the
// optimizer for the all-reduce. Everything else runs on stream 0, in stream order.
struct grad_reduction {
  bool on{false};
  std::uint64_t ns{0};  // one all-reduce of a gradient

  grad_reduction(param_reader const& p, std::uint64_t grad_bytes)
    : on(p.count("streams", 1, 2) == 2)
  {
    double const gbps = p.real("comm_gbps", 1e-6, 1e9);
    // bytes / (GB/s) = ns: flops_to_ns's division with the rate in thousands, which also
    // saturates a time past 2^64 ns instead of overflowing the conversion
    ns = flops_to_ns(2.0 * static_cast<double>(grad_bytes), gbps / 1e3);
  }

  // After the backward kernel that wrote g: its all-reduce on stream 1.
  void after_backward(emitter& out, std::uint64_t g) const
  {
    if (!on) { return; }
    out.rw(g, 1);
    out.compute(ns, 1);
  }
};

}  // namespace

// Note [mlp-train shape]
// Per layer l = 1..L: w_l, g_l, m_l, v_l (W x W each, persistent) and a_l (B x W, one per
// iteration); a_0 is the input batch. Forward: alloc a_l, read w_l, read a_{l-1}, wd a_l,
// compute 2BW^2. Backward (l = L..1; a_L is freed first, the loss consumed it): read
// a_{l-1}, read w_l, wd g_l, compute 4BW^2, free a_{l-1}. Optimizer (l = 1..L): read g_l,
// rw m_l, rw v_l, rw w_l, compute 12 W^2. streams=2: Note [Gradients reduced on a second
// stream].
// Hints (Note [activation hints]): a_1..a_{L-1}, read in backward, are recomputable at
// the forward time 2BW^2 and lossy-ok; a_0 (the input) and a_L (freed first) have none.
void generate_mlp_train(param_reader const& p, emitter& out)
{
  std::uint64_t const layers = p.count("layers", 1, kMaxCount);
  std::uint64_t const width = p.count("width", 1, kMaxDim);
  std::uint64_t const batch = p.count("batch", 1, kMaxDim);
  std::uint64_t const iterations = p.count("iterations", 1, kMaxCount);
  std::uint64_t const dtype = p.count("dtype_bytes", 1, 16);
  double const tflops = p.real("tflops", 1e-6, 1e9);
  bool const hints = p.count("hints", 0, 1) == 1;

  std::uint64_t const weight_bytes = checked_mul(checked_mul(width, width, "W*W"), dtype, "weight bytes");
  grad_reduction const reduce(p, weight_bytes);
  std::uint64_t const act_bytes = checked_mul(checked_mul(batch, width, "B*W"), dtype, "activation bytes");
  double const w2 = static_cast<double>(width) * static_cast<double>(width);
  double const bw2 = static_cast<double>(batch) * w2;
  std::uint64_t const fwd_ns = flops_to_ns(2.0 * bw2, tflops);
  std::uint64_t const bwd_ns = flops_to_ns(4.0 * bw2, tflops);
  std::uint64_t const opt_ns = flops_to_ns(kAdamFlopsPerParam * w2, tflops);

  adam_layers const layer_state(out, layers, weight_bytes, weight_bytes,
                       [](char kind, std::uint64_t l) { return std::string(1, kind) + std::to_string(l); });
  auto const& w = layer_state.w;
  auto const& g = layer_state.g;
  std::vector<std::uint64_t> a(layers + 1);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    out.phase(label("iter ", it));
    out.phase("forward");
    a[0] = out.alloc(act_bytes, "a0");
    out.wd(a[0]);  // the input batch
    for (std::uint64_t l = 1; l <= layers; ++l) {
      bool const kept = hints && l < layers;  // read again in backward
      a[l] = out.alloc(act_bytes, label("a", l), kept ? kActivationHints : 0, kept ? fwd_ns : 0);
      out.read(w[l]);
      out.read(a[l - 1]);
      out.wd(a[l]);
      out.compute(fwd_ns);
    }
    out.phase("backward");
    out.free(a[layers]);
    for (std::uint64_t l = layers; l >= 1; --l) {
      out.read(a[l - 1]);
      out.read(w[l]);
      out.wd(g[l]);
      out.compute(bwd_ns);
      reduce.after_backward(out, g[l]);
      out.free(a[l - 1]);
    }
    layer_state.step(out, opt_ns, reduce.on);
  }
  layer_state.free_all(out);
}

// Note [transformer-train shape]
// Per block l = 1..N: W_l and G_l (12 h^2 x dtype), M_l and V_l (12 h^2 x 4, fp32 Adam
// moments), persistent; S_l, the activations stored for backward (34 s b h bytes, the
// usual estimate without recomputation), one per iteration. x0 (s b h x dtype) is the
// embedding output, dx (same size) the activation gradient flowing backward.
// Forward: alloc x0, wd x0; per block: alloc S_l, read W_l, read S_{l-1} (x0 for block 1),
// wd S_l, compute 24 b s h^2 + 4 b s^2 h; x0 is freed after block 1.
// Backward (l = N..1): alloc dx, wd dx first; per block read S_l, read W_l, rw dx, wd G_l,
// compute 2x forward, free S_l; free dx. Optimizer: read G_l, rw M_l, rw V_l, rw W_l.
// streams=2: Note [Gradients reduced on a second stream].
// Hints (Note [activation hints]): every S_l is recomputable at the block's forward time
// (24 b s h^2 + 4 b s^2 h flops) and lossy-ok; x0 and dx have none.
void generate_transformer_train(param_reader const& p, emitter& out)
{
  std::uint64_t const blocks = p.count("blocks", 1, kMaxCount);
  std::uint64_t const hidden = p.count("hidden", 1, kMaxDim);
  std::uint64_t const seq = p.count("seq", 1, kMaxDim);
  std::uint64_t const batch = p.count("batch", 1, kMaxDim);
  std::uint64_t const dtype = p.count("dtype_bytes", 1, 16);
  std::uint64_t const iterations = p.count("iterations", 1, kMaxCount);
  double const tflops = p.real("tflops", 1e-6, 1e9);
  bool const hints = p.count("hints", 0, 1) == 1;

  std::uint64_t const params = checked_mul(12, checked_mul(hidden, hidden, "h*h"), "12 h^2");
  std::uint64_t const weight_bytes = checked_mul(params, dtype, "weight bytes");
  grad_reduction const reduce(p, weight_bytes);
  std::uint64_t const moment_bytes = checked_mul(params, 4, "moment bytes");
  std::uint64_t const sbh = checked_mul(checked_mul(seq, batch, "s*b"), hidden, "s*b*h");
  std::uint64_t const stored_bytes = checked_mul(34, sbh, "34 s b h");
  std::uint64_t const hidden_bytes = checked_mul(sbh, dtype, "s b h x dtype");
  double const h = static_cast<double>(hidden);
  double const bs = static_cast<double>(batch) * static_cast<double>(seq);
  double const fwd_flops = 24.0 * bs * h * h + 4.0 * bs * static_cast<double>(seq) * h;
  std::uint64_t const fwd_ns = flops_to_ns(fwd_flops, tflops);
  std::uint64_t const bwd_ns = flops_to_ns(2.0 * fwd_flops, tflops);
  std::uint64_t const opt_ns = flops_to_ns(kAdamFlopsPerParam * static_cast<double>(params), tflops);

  adam_layers const layer_state(out, blocks, weight_bytes, moment_bytes,
                       [](char kind, std::uint64_t l) { return label("block", l) + '.' + kind; });
  auto const& w = layer_state.w;
  auto const& g = layer_state.g;
  std::vector<std::uint64_t> s(blocks + 1);
  for (std::uint64_t it = 0; it < iterations; ++it) {
    out.phase(label("iter ", it));
    out.phase("forward");
    s[0] = out.alloc(hidden_bytes, "x0");
    out.wd(s[0]);
    for (std::uint64_t l = 1; l <= blocks; ++l) {
      s[l] = out.alloc(stored_bytes, label("block", l) + ".act", hints ? kActivationHints : 0, hints ? fwd_ns : 0);
      out.read(w[l]);
      out.read(s[l - 1]);
      out.wd(s[l]);
      out.compute(fwd_ns);
      if (l == 1) { out.free(s[0]); }
    }
    out.phase("backward");
    std::uint64_t const dx = out.alloc(hidden_bytes, "dx");
    out.wd(dx);
    for (std::uint64_t l = blocks; l >= 1; --l) {
      out.read(s[l]);
      out.read(w[l]);
      out.rw(dx);
      out.wd(g[l]);
      out.compute(bwd_ns);
      reduce.after_backward(out, g[l]);
      out.free(s[l]);
    }
    out.free(dx);
    layer_state.step(out, opt_ns, reduce.on);
  }
  layer_state.free_all(out);
}

// Note [llm-infer-stream shape]
// Weights W_l (12 h^2 x dtype) of every layer, written once at load; x (batch h dtype), the
// hidden state. The KV cache of layer l is a list of blocks of kv_block_tokens tokens
// (2 h dtype batch bytes per token each). Prefill: wd x; per layer read W_l, alloc and wd
// the blocks holding the prompt, rw x, compute. Each decoding step: per layer read W_l,
// read the layer's full blocks, then the block receiving the new token (alloc + wd when it
// starts a block, else rw), rw x, compute 24 h^2 batch + 4 ctx h batch.
void generate_llm_infer_stream(param_reader const& p, emitter& out)
{
  std::uint64_t const layers = p.count("layers", 1, kMaxCount);
  std::uint64_t const hidden = p.count("hidden", 1, kMaxDim);
  std::uint64_t const dtype = p.count("dtype_bytes", 1, 16);
  std::uint64_t const batch = p.count("batch", 1, kMaxDim);
  std::uint64_t const prompt = p.count("prompt", 1, kMaxDim);
  std::uint64_t const steps = p.count("steps", 1, kMaxDim);
  std::uint64_t const block_tokens = p.count("kv_block_tokens", 1, kMaxDim);
  double const tflops = p.real("tflops", 1e-6, 1e9);

  std::uint64_t const weight_bytes =
    checked_mul(checked_mul(12, checked_mul(hidden, hidden, "h*h"), "12 h^2"), dtype, "weight bytes");
  std::uint64_t const x_bytes = checked_mul(checked_mul(batch, hidden, "batch*h"), dtype, "hidden state bytes");
  std::uint64_t const kv_block_bytes =
    checked_mul(checked_mul(2, x_bytes, "2 h dtype batch"), block_tokens, "KV block bytes");
  double const h = static_cast<double>(hidden);
  double const b = static_cast<double>(batch);

  out.phase("load");
  std::vector<std::uint64_t> w(layers);
  for (std::uint64_t l = 0; l < layers; ++l) { w[l] = out.alloc(weight_bytes, label("layer", l) + ".w"); }
  for (std::uint64_t l = 0; l < layers; ++l) { out.wd(w[l]); }
  std::uint64_t const x = out.alloc(x_bytes, "x");
  std::vector<std::vector<std::uint64_t>> kv(layers);

  out.phase("prefill");
  out.wd(x);
  std::uint64_t const prompt_blocks = (prompt + block_tokens - 1) / block_tokens;
  double const pr = static_cast<double>(prompt);
  std::uint64_t const prefill_ns = flops_to_ns(24.0 * h * h * b * pr + 2.0 * pr * pr * h * b, tflops);
  for (std::uint64_t l = 0; l < layers; ++l) {
    out.read(w[l]);
    for (std::uint64_t k = 0; k < prompt_blocks; ++k) {
      kv[l].push_back(out.alloc(kv_block_bytes, label("layer", l) + ".kv" + std::to_string(k)));
      out.wd(kv[l].back());
    }
    out.rw(x);
    out.compute(prefill_ns);
  }

  for (std::uint64_t step = 0; step < steps; ++step) {
    out.phase(label("step ", step));
    std::uint64_t const position = prompt + step;  // 0-based index of the new token
    bool const new_block = position % block_tokens == 0;
    double const ctx = static_cast<double>(position + 1);
    std::uint64_t const step_ns = flops_to_ns(24.0 * h * h * b + 4.0 * ctx * h * b, tflops);
    for (std::uint64_t l = 0; l < layers; ++l) {
      auto& blocks = kv[l];
      out.read(w[l]);
      std::size_t const full = new_block ? blocks.size() : blocks.size() - 1;
      for (std::size_t k = 0; k < full; ++k) { out.read(blocks[k]); }
      if (new_block) {
        blocks.push_back(out.alloc(kv_block_bytes, label("layer", l) + ".kv" + std::to_string(blocks.size())));
        out.wd(blocks.back());
      } else {
        out.rw(blocks.back());
      }
      out.rw(x);
      out.compute(step_ns);
    }
  }

  out.phase("teardown");
  for (auto const& blocks : kv) {
    for (auto id : blocks) { out.free(id); }
  }
  out.free(x);
  for (auto id : w) { out.free(id); }
}

}  // namespace tierpool::trace::detail

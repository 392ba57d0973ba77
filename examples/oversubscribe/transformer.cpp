// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// transformer — the demo's second model: a stack of transformer-shaped blocks built from
// the same kernels as the MLP, so that it runs wherever the MLP does, the GPU included
// (entry: mlp_trainer::build_transformer).
//
// Note [A transformer-shaped loop]
//   What a transformer's training step asks of memory is its tensors' sizes and the order
//   it touches them in: per block, the Q, K and V projections, a (batch x seq x seq) map
//   of attention scores, the context, the output projection, an MLP four times as wide,
//   and in the backward pass the same in reverse with a gradient for each, then Adam over
//   six weight matrices per block (each with its gradient and two moments). This model has
//   exactly those tensors and that order. Its arithmetic is simpler, because the demo's
//   kernels are gemm, bias, ReLU, softmax cross-entropy and Adam: the scores pass through
//   a ReLU instead of a softmax, with no 1/sqrt(d) scale (the initial weights are scaled
//   down instead), and there are no residual connections or layer norms. Every step's
//   gradients are the exact gradients of that function, so the loss falls as it trains,
//   and the run is checked bit for bit against unlimited memory like the MLP's. Tokens
//   are `batch` sequences of `seq`; the head classifies every token.
#include "mlp.hpp"

#include "splitmix64.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace oversubscribe {
namespace {

using tierpool::access_mode;

// Per block, the parameters (each W then its bias, out x in) and the activations.
enum param_slot : std::size_t { p_q, p_k, p_v, p_o, p_up, p_down, kParamsPerBlock };
enum act_slot : std::size_t { a_q, a_k, a_v, a_scores, a_ctx, a_o, a_h, a_x, kActsPerBlock };

struct shape {
  std::size_t in;
  std::size_t out;
};

shape param_shape(std::size_t slot, std::size_t d) noexcept
{
  switch (slot) {
    case p_up: return {d, 4 * d};
    case p_down: return {4 * d, d};
    default: return {d, d};
  }
}

std::size_t param_floats(shape s) noexcept { return (s.in + 1) * s.out; }

std::size_t act_floats(std::size_t slot, mlp_config const& c) noexcept
{
  std::size_t const n = c.batch * c.seq;
  switch (slot) {
    case a_scores: return c.batch * c.seq * c.seq;
    case a_h: return n * 4 * c.width;
    default: return n * c.width;
  }
}

}  // namespace

std::size_t mlp_trainer::transformer_working_set(mlp_config const& c)
{
  std::size_t const n = c.batch * c.seq;
  std::size_t total = n * c.width * sizeof(float) + n * sizeof(std::int32_t);  // input, labels
  for (std::size_t l = 0; l < c.layers; ++l) {
    for (std::size_t p = 0; p < kParamsPerBlock; ++p) { total += 4 * param_floats(param_shape(p, c.width)) * sizeof(float); }
    for (std::size_t a = 0; a < kActsPerBlock; ++a) { total += 2 * act_floats(a, c) * sizeof(float); }
  }
  total += 4 * param_floats({c.width, c.classes}) * sizeof(float);  // the head
  total += 2 * n * c.classes * sizeof(float);                      // logits and their gradient
  return total;
}

std::size_t mlp_trainer::transformer_largest_operation(mlp_config const& c)
{
  auto const f = [](std::size_t floats) { return floats * sizeof(float); };
  std::size_t const x = f(act_floats(a_x, c));
  std::size_t const h = f(act_floats(a_h, c));
  std::size_t const s = f(act_floats(a_scores, c));
  std::size_t const pd = f(param_floats({c.width, c.width}));
  std::size_t const p4 = f(param_floats({c.width, 4 * c.width}));
  std::size_t const head = f(param_floats({c.width, c.classes}));
  std::size_t const logits = f(c.batch * c.seq * c.classes);
  return std::max({x + 3 * pd + 3 * x,                 // forward Q, K, V
                   4 * x + 2 * s,                      // backward of the scores
                   2 * x + 2 * h + 2 * p4,             // backward of the up projection
                   x + 3 * pd + 3 * x + 3 * pd + x,    // backward of Q, K, V
                   4 * p4,                             // Adam of a 4d x d matrix
                   x + 2 * head + 2 * logits + x});    // backward of the head
}

void mlp_trainer::build_transformer()
{
  mlp_config const& c = cfg_;
  std::size_t const d = c.width;
  std::size_t const n = c.batch * c.seq;
  std::size_t const t = c.seq;
  input_ = make_tensor(n * d * sizeof(float), "input");
  labels_ = make_tensor(n * sizeof(std::int32_t), "labels");
  static constexpr char const* kParamNames[] = {"wq", "wk", "wv", "wo", "w_up", "w_down"};
  static constexpr char const* kActNames[] = {"q", "k", "v", "scores", "ctx", "o", "h", "x"};
  std::vector<shape> shapes;
  auto add_param = [&](shape sh, std::string const& name) {
    std::size_t const bytes = param_floats(sh) * sizeof(float);
    w_.push_back(make_tensor(bytes, name));
    grad_w_.push_back(make_tensor(bytes, "grad_" + name));
    adam_m_.push_back(make_tensor(bytes, "adam_m_" + name));
    adam_v_.push_back(make_tensor(bytes, "adam_v_" + name));
    shapes.push_back(sh);
  };
  for (std::size_t l = 0; l < c.layers; ++l) {
    std::string const b = std::to_string(l);
    for (std::size_t p = 0; p < kParamsPerBlock; ++p) { add_param(param_shape(p, d), kParamNames[p] + b); }
    for (std::size_t a = 0; a < kActsPerBlock; ++a) {
      act_.push_back(make_tensor(act_floats(a, c) * sizeof(float), kActNames[a] + b));
      grad_act_.push_back(make_tensor(act_floats(a, c) * sizeof(float), std::string("grad_") + kActNames[a] + b));
    }
  }
  add_param({d, c.classes}, "w_head");
  act_.push_back(make_tensor(n * c.classes * sizeof(float), "logits"));
  grad_act_.push_back(make_tensor(n * c.classes * sizeof(float), "grad_logits"));

  // Initial values, deterministic from the seed: inputs in [-1, 1], a label per token,
  // weights uniform with variance 1/(3 fan-in) (Q and K further scaled down by 1/sqrt(d),
  // V by 1/seq: the scale the scores lack), biases zero, moments zero.
  splitmix64 rng{c.seed};
  {
    auto h = pool_.acquire_host(input_, access_mode::write_discard);
    float* x = h.as<float>();
    for (std::size_t i = 0; i < n * d; ++i) { x[i] = rng.uniform(-1.0F, 1.0F); }
  }
  {
    auto h = pool_.acquire_host(labels_, access_mode::write_discard);
    auto* y = h.as<std::int32_t>();
    for (std::size_t i = 0; i < n; ++i) { y[i] = static_cast<std::int32_t>(rng.next() % c.classes); }
  }
  for (std::size_t i = 0; i < w_.size(); ++i) {
    shape const sh = shapes[i];
    double scale = std::sqrt(1.0 / static_cast<double>(sh.in));
    std::size_t const slot = i % kParamsPerBlock;
    if (i < c.layers * kParamsPerBlock && (slot == p_q || slot == p_k)) { scale /= std::sqrt(static_cast<double>(d)); }
    if (i < c.layers * kParamsPerBlock && slot == p_v) { scale /= static_cast<double>(t); }
    auto h = pool_.acquire_host(w_[i], access_mode::write_discard);
    float* w = h.as<float>();
    auto const limit = static_cast<float>(scale);
    for (std::size_t k = 0; k < sh.in * sh.out; ++k) { w[k] = rng.uniform(-limit, limit); }
    std::fill(w + sh.in * sh.out, w + param_floats(sh), 0.0F);
  }
  for (std::size_t i = 0; i < w_.size(); ++i) {
    for (tierpool::tensor const* m : {&adam_m_[i], &adam_v_[i]}) {
      auto h = pool_.acquire_host(*m, access_mode::write_discard);
      std::memset(h.data(), 0, h.bytes());
    }
  }

  // ---- the operations ----
  auto fp = [](tierpool::lease const& ls) { return ls.as<float>(); };
  auto W = [&](std::size_t l, std::size_t p) -> tierpool::tensor const* { return &w_[l * kParamsPerBlock + p]; };
  auto dW = [&](std::size_t l, std::size_t p) -> tierpool::tensor const* { return &grad_w_[l * kParamsPerBlock + p]; };
  auto A = [&](std::size_t l, std::size_t a) -> tierpool::tensor const* { return &act_[l * kActsPerBlock + a]; };
  auto dA = [&](std::size_t l, std::size_t a) -> tierpool::tensor const* { return &grad_act_[l * kActsPerBlock + a]; };
  auto X = [&](std::size_t l) -> tierpool::tensor const* { return l == 0 ? &input_ : A(l - 1, a_x); };  // block l's input
  auto dX = [&](std::size_t l) -> tierpool::tensor const* { return dA(l - 1, a_x); };
  std::size_t const head = c.layers * kParamsPerBlock;
  auto const r = access_mode::read;
  auto const rw = access_mode::read_write;
  auto const wd = access_mode::write_discard;
  // y = x · W^T + b for a W of out x in.
  auto linear = [this, fp, n](tierpool::lease const& x, tierpool::lease const& w, tierpool::lease const& y, shape sh) {
    compute_.gemm(stream_, transpose::no, transpose::yes, n, sh.out, sh.in, fp(x), fp(w), fp(y), false);
    compute_.bias_add(stream_, fp(y), fp(w) + sh.out * sh.in, n, sh.out);
  };
  // dW = dy^T · x, db = sum of dy; dx = dy · W (added to dx when `accumulate`).
  auto linear_grad = [this, fp, n](tierpool::lease const& x, tierpool::lease const& w, tierpool::lease const& dy,
                                   tierpool::lease const& dw, tierpool::lease const* dx, bool accumulate, shape sh) {
    compute_.gemm(stream_, transpose::yes, transpose::no, sh.out, sh.in, n, fp(dy), fp(x), fp(dw), false);
    compute_.bias_grad(stream_, fp(dy), fp(dw) + sh.out * sh.in, n, sh.out);
    if (dx != nullptr) { compute_.gemm(stream_, transpose::no, transpose::no, n, sh.in, sh.out, fp(dy), fp(w), fp(*dx), accumulate); }
  };
  shape const sd{d, d};
  shape const sup{d, 4 * d};
  shape const sdown{4 * d, d};

  mark_phase("forward");
  for (std::size_t l = 0; l < c.layers; ++l) {
    ops_.push_back({{{X(l), r}, {W(l, p_q), r}, {W(l, p_k), r}, {W(l, p_v), r}, {A(l, a_q), wd}, {A(l, a_k), wd}, {A(l, a_v), wd}},
                    [=](std::vector<tierpool::lease> const& ls) {
                      for (std::size_t i = 0; i < 3; ++i) { linear(ls[0], ls[1 + i], ls[4 + i], sd); }
                    }});
    ops_.push_back({{{A(l, a_q), r}, {A(l, a_k), r}, {A(l, a_scores), wd}},
                    [this, fp, c, d, t](std::vector<tierpool::lease> const& ls) {
                      for (std::size_t b = 0; b < c.batch; ++b) {  // scores_b = q_b · k_b^T
                        compute_.gemm(stream_, transpose::no, transpose::yes, t, t, d, fp(ls[0]) + b * t * d,
                                      fp(ls[1]) + b * t * d, fp(ls[2]) + b * t * t, false);
                      }
                      compute_.relu_fwd(stream_, fp(ls[2]), c.batch * t * t);
                    }});
    ops_.push_back({{{A(l, a_scores), r}, {A(l, a_v), r}, {A(l, a_ctx), wd}},
                    [this, fp, c, d, t](std::vector<tierpool::lease> const& ls) {
                      for (std::size_t b = 0; b < c.batch; ++b) {  // ctx_b = scores_b · v_b
                        compute_.gemm(stream_, transpose::no, transpose::no, t, d, t, fp(ls[0]) + b * t * t,
                                      fp(ls[1]) + b * t * d, fp(ls[2]) + b * t * d, false);
                      }
                    }});
    ops_.push_back({{{A(l, a_ctx), r}, {W(l, p_o), r}, {A(l, a_o), wd}},
                    [=](std::vector<tierpool::lease> const& ls) { linear(ls[0], ls[1], ls[2], sd); }});
    ops_.push_back({{{A(l, a_o), r}, {W(l, p_up), r}, {A(l, a_h), wd}},
                    [=, this](std::vector<tierpool::lease> const& ls) {
                      linear(ls[0], ls[1], ls[2], sup);
                      compute_.relu_fwd(stream_, fp(ls[2]), n * 4 * d);
                    }});
    ops_.push_back({{{A(l, a_h), r}, {W(l, p_down), r}, {A(l, a_x), wd}},
                    [=](std::vector<tierpool::lease> const& ls) { linear(ls[0], ls[1], ls[2], sdown); }});
  }
  shape const shead{d, c.classes};
  tierpool::tensor const* logits = &act_.back();
  tierpool::tensor const* dlogits = &grad_act_.back();
  ops_.push_back({{{X(c.layers), r}, {&w_[head], r}, {logits, wd}},
                  [=](std::vector<tierpool::lease> const& ls) { linear(ls[0], ls[1], ls[2], shead); }});
  mark_phase("backward");
  ops_.push_back({{{logits, r}, {&labels_, r}, {dlogits, wd}},
                  [this, fp, n, c](std::vector<tierpool::lease> const& ls) {
                    compute_.softmax_xent_grad(stream_, fp(ls[0]), ls[1].as<std::int32_t>(), fp(ls[2]), n, c.classes);
                  }});
  ops_.push_back({{{X(c.layers), r}, {&w_[head], r}, {dlogits, r}, {&grad_w_[head], wd}, {dX(c.layers), wd}},
                  [=](std::vector<tierpool::lease> const& ls) { linear_grad(ls[0], ls[1], ls[2], ls[3], &ls[4], false, shead); }});
  for (std::size_t l = c.layers; l-- > 0;) {
    ops_.push_back({{{A(l, a_h), r}, {W(l, p_down), r}, {dA(l, a_x), r}, {dW(l, p_down), wd}, {dA(l, a_h), wd}},
                    [=](std::vector<tierpool::lease> const& ls) { linear_grad(ls[0], ls[1], ls[2], ls[3], &ls[4], false, sdown); }});
    ops_.push_back({{{A(l, a_o), r}, {W(l, p_up), r}, {A(l, a_h), r}, {dA(l, a_h), rw}, {dW(l, p_up), wd}, {dA(l, a_o), wd}},
                    [=, this](std::vector<tierpool::lease> const& ls) {
                      compute_.relu_bwd(stream_, fp(ls[3]), fp(ls[2]), n * 4 * d);
                      linear_grad(ls[0], ls[1], ls[3], ls[4], &ls[5], false, sup);
                    }});
    ops_.push_back({{{A(l, a_ctx), r}, {W(l, p_o), r}, {dA(l, a_o), r}, {dW(l, p_o), wd}, {dA(l, a_ctx), wd}},
                    [=](std::vector<tierpool::lease> const& ls) { linear_grad(ls[0], ls[1], ls[2], ls[3], &ls[4], false, sd); }});
    ops_.push_back({{{A(l, a_scores), r}, {A(l, a_v), r}, {dA(l, a_ctx), r}, {dA(l, a_scores), wd}, {dA(l, a_v), wd}},
                    [this, fp, c, d, t](std::vector<tierpool::lease> const& ls) {
                      for (std::size_t b = 0; b < c.batch; ++b) {
                        float const* s = fp(ls[0]) + b * t * t;
                        float const* v = fp(ls[1]) + b * t * d;
                        float const* dctx = fp(ls[2]) + b * t * d;
                        // dscores_b = dctx_b · v_b^T; dv_b = scores_b^T · dctx_b
                        compute_.gemm(stream_, transpose::no, transpose::yes, t, t, d, dctx, v, fp(ls[3]) + b * t * t, false);
                        compute_.gemm(stream_, transpose::yes, transpose::no, t, d, t, s, dctx, fp(ls[4]) + b * t * d, false);
                      }
                    }});
    ops_.push_back({{{A(l, a_q), r}, {A(l, a_k), r}, {A(l, a_scores), r}, {dA(l, a_scores), rw}, {dA(l, a_q), wd}, {dA(l, a_k), wd}},
                    [this, fp, c, d, t](std::vector<tierpool::lease> const& ls) {
                      compute_.relu_bwd(stream_, fp(ls[3]), fp(ls[2]), c.batch * t * t);
                      for (std::size_t b = 0; b < c.batch; ++b) {
                        float const* ds = fp(ls[3]) + b * t * t;
                        // dq_b = dscores_b · k_b; dk_b = dscores_b^T · q_b
                        compute_.gemm(stream_, transpose::no, transpose::no, t, d, t, ds, fp(ls[1]) + b * t * d,
                                      fp(ls[4]) + b * t * d, false);
                        compute_.gemm(stream_, transpose::yes, transpose::no, t, d, t, ds, fp(ls[0]) + b * t * d,
                                      fp(ls[5]) + b * t * d, false);
                      }
                    }});
    operation qkv;
    qkv.uses = {{X(l), r},        {W(l, p_q), r},  {W(l, p_k), r},  {W(l, p_v), r},  {dA(l, a_q), r},
                {dA(l, a_k), r},  {dA(l, a_v), r}, {dW(l, p_q), wd}, {dW(l, p_k), wd}, {dW(l, p_v), wd}};
    if (l > 0) { qkv.uses.push_back({dX(l), wd}); }
    qkv.launch = [=](std::vector<tierpool::lease> const& ls) {
      tierpool::lease const* dx = l > 0 ? &ls[10] : nullptr;
      for (std::size_t i = 0; i < 3; ++i) { linear_grad(ls[0], ls[1 + i], ls[4 + i], ls[7 + i], dx, i > 0, sd); }
    };
    ops_.push_back(std::move(qkv));
  }
  // Adam over every parameter, the first block's first (the backward pass ended there).
  mark_phase("optimizer");
  for (std::size_t i = 0; i < w_.size(); ++i) { add_adam(i, param_floats(shapes[i])); }
}

}  // namespace oversubscribe

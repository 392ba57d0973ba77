// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// mlp — the demo's model: tensors in a tierpool pool, one training step as a list of
// stream-ordered operations, each leasing its tensors and prefetching the next one's
// (entry: mlp_trainer::step).
#include "mlp.hpp"

#include "host_kernels.hpp"
#include "splitmix64.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace oversubscribe {
namespace {

using tierpool::access_mode;

constexpr std::uint64_t kFnvOffset = 0xCBF29CE484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001B3ULL;

std::size_t param_floats(std::size_t in, std::size_t out) noexcept { return (in + 1) * out; }  // W, then bias

}  // namespace

mlp_trainer::mlp_trainer(tierpool::pool& pool, compute_backend& compute, mlp_config cfg)
    : pool_(pool), compute_(compute), cfg_(cfg)
{
  if (cfg_.layers == 0 || cfg_.width == 0 || cfg_.batch == 0 || cfg_.classes == 0 || cfg_.seq == 0) {
    throw std::invalid_argument("layers, width, batch, seq and classes must be positive");
  }
  stream_ = pool_.create_stream();
  pool_.note_phase("init");
  virtual_clock_ = pool_.backend().caps().virtual_clock;
  for (tierpool::event& e : done_) { e = pool_.create_event(); }
  if (cfg_.model == model_kind::transformer) {
    build_transformer();
    return;
  }
  std::size_t const b = cfg_.batch;
  input_ = make_tensor(b * cfg_.width * sizeof(float), "input");
  labels_ = make_tensor(b * sizeof(std::int32_t), "labels");
  for (std::size_t l = 0; l < cfg_.layers; ++l) {
    std::size_t const pbytes = param_floats(cfg_.width, out_dim(l)) * sizeof(float);
    std::string const n = std::to_string(l);
    w_.push_back(make_tensor(pbytes, "w" + n));
    grad_w_.push_back(make_tensor(pbytes, "grad_w" + n));
    adam_m_.push_back(make_tensor(pbytes, "adam_m" + n));
    adam_v_.push_back(make_tensor(pbytes, "adam_v" + n));
    act_.push_back(make_tensor(b * out_dim(l) * sizeof(float), "act" + n));
    grad_act_.push_back(make_tensor(b * out_dim(l) * sizeof(float), "grad_act" + n));
  }
  initialise();
  build_operations();
}

mlp_trainer::~mlp_trainer()
{
  try {
    leases_.clear();
    pool_.synchronize(stream_);  // host functions still to run reference *this
  } catch (...) {
    // Destructors must not throw; a failed synchronize leaves nothing better to do.
  }
  ops_.clear();
  w_.clear();
  grad_w_.clear();
  adam_m_.clear();
  adam_v_.clear();
  act_.clear();
  grad_act_.clear();
  input_ = {};
  labels_ = {};
  try {
    pool_.destroy_stream(stream_);
  } catch (...) {
  }
}

std::size_t mlp_trainer::working_set_bytes(mlp_config const& cfg)
{
  if (cfg.model == model_kind::transformer) { return transformer_working_set(cfg); }
  std::size_t total = cfg.batch * cfg.width * sizeof(float) + cfg.batch * sizeof(std::int32_t);
  for (std::size_t l = 0; l < cfg.layers; ++l) {
    std::size_t const out = l + 1 == cfg.layers ? cfg.classes : cfg.width;
    total += 4 * param_floats(cfg.width, out) * sizeof(float);  // w, grad_w, adam_m, adam_v
    total += 2 * cfg.batch * out * sizeof(float);               // act, grad_act
  }
  return total;
}

std::size_t mlp_trainer::largest_operation_bytes(mlp_config const& cfg)
{
  if (cfg.model == model_kind::transformer) { return transformer_largest_operation(cfg); }
  std::size_t largest = 0;
  std::size_t const act_in = cfg.batch * cfg.width * sizeof(float);
  for (std::size_t l = 0; l < cfg.layers; ++l) {
    std::size_t const out = l + 1 == cfg.layers ? cfg.classes : cfg.width;
    std::size_t const p = param_floats(cfg.width, out) * sizeof(float);
    std::size_t const act_out = cfg.batch * out * sizeof(float);
    largest = std::max({largest,
                        p + act_in + act_out,                // forward: w, x, y
                        act_in + 2 * p + 2 * act_out + act_in,  // backward: x, w, y, dy, dw, dx
                        4 * p});                            // adam: w, m, v, g
  }
  return largest;
}

std::size_t mlp_trainer::out_dim(std::size_t layer) const noexcept
{
  return layer + 1 == cfg_.layers ? cfg_.classes : cfg_.width;
}

tierpool::tensor const& mlp_trainer::layer_input(std::size_t layer) const noexcept
{
  return layer == 0 ? input_ : act_[layer - 1];
}

tierpool::tensor mlp_trainer::make_tensor(std::size_t bytes, std::string name)
{
  return pool_.allocate(bytes, {.name = std::move(name)});
}

void mlp_trainer::initialise()
{
  splitmix64 rng{cfg_.seed};
  {
    auto h = pool_.acquire_host(input_, access_mode::write_discard);
    float* x = h.as<float>();
    for (std::size_t i = 0; i < cfg_.batch * cfg_.width; ++i) { x[i] = rng.uniform(-1.0F, 1.0F); }
  }
  {
    auto h = pool_.acquire_host(labels_, access_mode::write_discard);
    auto* y = h.as<std::int32_t>();
    for (std::size_t i = 0; i < cfg_.batch; ++i) { y[i] = static_cast<std::int32_t>(rng.next() % cfg_.classes); }
  }
  for (std::size_t l = 0; l < cfg_.layers; ++l) {
    std::size_t const in = cfg_.width;
    std::size_t const out = out_dim(l);
    {
      // He-uniform weights (ReLU), zero bias.
      auto h = pool_.acquire_host(w_[l], access_mode::write_discard);
      float* w = h.as<float>();
      auto const limit = static_cast<float>(std::sqrt(6.0 / static_cast<double>(in)));
      for (std::size_t i = 0; i < in * out; ++i) { w[i] = rng.uniform(-limit, limit); }
      std::fill(w + in * out, w + (in + 1) * out, 0.0F);
    }
    for (tierpool::tensor const* t : {&adam_m_[l], &adam_v_[l]}) {
      auto h = pool_.acquire_host(*t, access_mode::write_discard);
      std::memset(h.data(), 0, h.bytes());
    }
  }
}

void mlp_trainer::build_operations()
{
  std::size_t const b = cfg_.batch;
  std::size_t const in = cfg_.width;
  std::size_t const last = cfg_.layers - 1;
  auto f = [](tierpool::lease const& l) { return l.as<float>(); };

  // Forward: y_l = relu(x_l · W_l^T + b_l) (no ReLU on the last layer: logits).
  mark_phase("forward");
  for (std::size_t l = 0; l <= last; ++l) {
    std::size_t const out = out_dim(l);
    ops_.push_back({{{&w_[l], access_mode::read}, {&layer_input(l), access_mode::read},
                     {&act_[l], access_mode::write_discard}},
                    [this, f, l, b, in, out, last](std::vector<tierpool::lease> const& ls) {
                      float const* w = f(ls[0]);
                      compute_.gemm(stream_, transpose::no, transpose::yes, b, out, in, f(ls[1]), w, f(ls[2]), false);
                      compute_.bias_add(stream_, f(ls[2]), w + out * in, b, out);
                      if (l != last) { compute_.relu_fwd(stream_, f(ls[2]), b * out); }
                    }});
  }
  // Loss gradient: d logits = (softmax - onehot) / batch.
  mark_phase("backward");
  ops_.push_back({{{&act_[last], access_mode::read}, {&labels_, access_mode::read},
                   {&grad_act_[last], access_mode::write_discard}},
                  [this, f, b](std::vector<tierpool::lease> const& ls) {
                    compute_.softmax_xent_grad(stream_, f(ls[0]), ls[1].as<std::int32_t>(), f(ls[2]), b,
                                               cfg_.classes);
                  }});
  // Backward, last layer first: dz = dy ⊙ relu'(y); dW = dz^T · x; db = Σ dz; dx = dz · W.
  for (std::size_t l = last + 1; l-- > 0;) {
    std::size_t const out = out_dim(l);
    bool const hidden = l != last;
    operation op;
    op.uses = {{&layer_input(l), access_mode::read},
               {&w_[l], access_mode::read},
               {&act_[l], access_mode::read},
               {&grad_act_[l], hidden ? access_mode::read_write : access_mode::read},
               {&grad_w_[l], access_mode::write_discard}};
    if (l > 0) { op.uses.push_back({&grad_act_[l - 1], access_mode::write_discard}); }
    op.launch = [this, f, l, b, in, out, hidden](std::vector<tierpool::lease> const& ls) {
      float const* x = f(ls[0]);
      float const* w = f(ls[1]);
      float* dz = f(ls[3]);
      float* dw = f(ls[4]);
      if (hidden) { compute_.relu_bwd(stream_, dz, f(ls[2]), b * out); }
      compute_.gemm(stream_, transpose::yes, transpose::no, out, in, b, dz, x, dw, false);
      compute_.bias_grad(stream_, dz, dw + out * in, b, out);
      if (l > 0) { compute_.gemm(stream_, transpose::no, transpose::no, b, in, out, dz, w, f(ls[5]), false); }
    };
    ops_.push_back(std::move(op));
  }
  // Adam, first layer first (the backward pass ended there, so its tensors are warm).
  mark_phase("optimizer");
  for (std::size_t l = 0; l <= last; ++l) { add_adam(l, param_floats(in, out_dim(l))); }
}

void mlp_trainer::add_adam(std::size_t param, std::size_t floats)
{
  ops_.push_back({{{&w_[param], access_mode::read_write}, {&adam_m_[param], access_mode::read_write},
                   {&adam_v_[param], access_mode::read_write}, {&grad_w_[param], access_mode::read}},
                  [this, floats](std::vector<tierpool::lease> const& ls) {
                    adam_params p;
                    p.lr = cfg_.lr;
                    auto const t = static_cast<double>(steps_);
                    p.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta1), t));
                    p.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta2), t));
                    compute_.adam_step(stream_, ls[0].as<float>(), ls[1].as<float>(), ls[2].as<float>(),
                                       ls[3].as<float>(), floats, p);
                  }});
}

double mlp_trainer::step()
{
  ++steps_;
  if (cfg_.prefetch) {
    for (use const& u : ops_.front().uses) {
      if (u.access != access_mode::write_discard) { pool_.prefetch(*u.tensor); }
    }
  }
  // The phases go into the pool's recording (--trace), so that a replay splits its figures
  // by them and has a phase floor (docs/chapters/replay.md, "The phase floor").
  pool_.note_phase("iter " + std::to_string(steps_ - 1));
  std::size_t next_phase = 0;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    for (; next_phase < phases_.size() && phases_[next_phase].op == i; ++next_phase) {
      pool_.note_phase(phases_[next_phase].name);
    }
    run(i);
  }
  pool_.synchronize(stream_);

  // The loss comes from bytes read back through the pool, wherever they are now.
  auto logits = pool_.acquire_host(act_.back(), access_mode::read);
  auto labels = pool_.acquire_host(labels_, access_mode::read);
  std::size_t const rows = cfg_.model == model_kind::transformer ? cfg_.batch * cfg_.seq : cfg_.batch;
  return host_kernels::softmax_xent_loss(logits.as<float>(), labels.as<std::int32_t>(), rows, cfg_.classes);
}

void mlp_trainer::run(std::size_t index)
{
  operation const& op = ops_[index];
  leases_.clear();
  if (cfg_.model == model_kind::transformer) {
    // pool::acquire_all leases largest first: an operation's small tensors placed first can
    // split a small device tier so that no run is left for its large ones (the
    // transformer's up-projection backward at 8x: 6.7 MiB free, no 2 MiB block). The
    // leases come back in the uses' order.
    items_.clear();
    for (use const& u : op.uses) { items_.push_back({u.tensor, u.access}); }
    leases_ = pool_.acquire_all(items_, stream_);
  } else {
    for (use const& u : op.uses) { leases_.push_back(pool_.acquire(*u.tensor, u.access, stream_)); }
  }
  op.launch(leases_);
  mark_done();
  // The kernels are queued: ending the leases now is safe, since the pool moves no byte
  // until the work already enqueued on stream_ has completed.
  leases_.clear();

  if (cfg_.prefetch && index + 1 < ops_.size()) {
    for (use const& u : ops_[index + 1].uses) {
      if (u.access != access_mode::write_discard) { pool_.prefetch(*u.tensor); }
    }
  }
  // Stay at most two operations ahead of the stream: the prefetch above then overlaps the
  // operation still running, and the next acquire finds its copy done (a prefetch hit).
  wait_until_at_most(1);
}

// Note [Throttling with events]
// The host stays at most `outstanding` operations ahead of the stream. Each operation is
// followed by a record of one event of a small ring; waiting for operation n polls its
// event. Until 2026-12-04 a host function after each operation counted completions: on an
// H200 that doubled even the reference run's iteration time (3.34 ms against 1.58 with
// events, 20 iterations), since a host function holds its stream until the driver's
// callback thread has run it and the demo's host then waited for that round trip at every
// operation. An event costs the stream nothing. The poll yields instead of blocking in
// event::synchronize(), which would count the demo's own pacing as pool stall time. On the
// simulator's virtual clock, time moves only when the host synchronizes (host functions
// ran at enqueue there, so the demo never waited): no wait at all.
void mlp_trainer::mark_done()
{
  done_[enqueued_ % done_.size()].record(stream_);
  ++enqueued_;
}

void mlp_trainer::wait_until_at_most(std::uint64_t outstanding)
{
  if (virtual_clock_ || enqueued_ <= outstanding) { return; }
  tierpool::event const& e = done_[(enqueued_ - 1 - outstanding) % done_.size()];
  while (!e.query()) { std::this_thread::yield(); }
}

std::uint64_t mlp_trainer::parameter_digest()
{
  pool_.synchronize(stream_);
  std::uint64_t h = kFnvOffset;
  for (tierpool::tensor const& t : w_) {
    auto l = pool_.acquire_host(t, access_mode::read);
    auto const* p = static_cast<unsigned char const*>(l.data());
    for (std::size_t i = 0; i < l.bytes(); ++i) { h = (h ^ p[i]) * kFnvPrime; }
  }
  return h;
}

void mlp_trainer::dump_tensors(std::string const& dir)
{
  pool_.synchronize(stream_);
  auto write = [&](tierpool::tensor const& t, std::string const& name) {
    auto l = pool_.acquire_host(t, access_mode::read);
    // numpy's .npy, version 1.0: magic, version, header length, a dict padded so that the
    // data starts at a multiple of 64 bytes, then the values (little-endian float32).
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                         std::to_string(l.bytes() / sizeof(float)) + ",), }";
    while ((10 + header.size() + 1) % 64 != 0) { header += ' '; }
    header += '\n';
    std::string const path = dir + "/" + name + ".npy";
    std::ofstream f(path, std::ios::binary);
    char const len[2] = {static_cast<char>(header.size() & 0xFFU), static_cast<char>(header.size() >> 8U)};
    f.write("\x93NUMPY\x01\x00", 8);
    f.write(len, 2);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    f.write(static_cast<char const*>(l.data()), static_cast<std::streamsize>(l.bytes() / sizeof(float) * sizeof(float)));
    if (!f) { throw std::runtime_error("cannot write '" + path + "'"); }
  };
  for (std::size_t i = 0; i < act_.size(); ++i) { write(act_[i], "act" + std::to_string(i)); }
  for (std::size_t i = 0; i < w_.size(); ++i) {
    std::string const n = std::to_string(i);
    write(adam_m_[i], "adam_m" + n);
    write(adam_v_[i], "adam_v" + n);
    write(w_[i], "w" + n);
  }
}

}  // namespace oversubscribe

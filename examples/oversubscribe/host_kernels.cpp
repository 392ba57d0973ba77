// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// host_kernels — the MLP's math as plain loops, and host_compute_backend, which queues
// each kernel on a backend stream with launch_host_func (entry: make_host_compute_backend).
//
// Every reduction runs in one fixed order, so two runs over the same bytes give the same
// bits; that is what lets the demo compare an oversubscribed run with a reference run
// bit for bit.
#include "host_kernels.hpp"

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/pool.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

namespace oversubscribe::host_kernels {

void gemm(transpose ta, transpose tb, std::size_t m, std::size_t n, std::size_t k, float const* a, float const* b,
          float* c, bool accumulate, std::vector<float>& scratch)
{
  // Rows of op(b) must be contiguous for the vectorisable inner loop: transpose b once.
  float const* bn = b;
  if (tb == transpose::yes) {
    scratch.resize(k * n);
    for (std::size_t j = 0; j < n; ++j) {
      float const* bj = b + j * k;
      for (std::size_t p = 0; p < k; ++p) { scratch[p * n + j] = bj[p]; }
    }
    bn = scratch.data();
  }
  for (std::size_t i = 0; i < m; ++i) {
    float* ci = c + i * n;
    if (!accumulate) { std::fill(ci, ci + n, 0.0F); }
    for (std::size_t p = 0; p < k; ++p) {
      float const aip = ta == transpose::no ? a[i * k + p] : a[p * m + i];
      float const* bp = bn + p * n;
      for (std::size_t j = 0; j < n; ++j) { ci[j] += aip * bp[j]; }
    }
  }
}

void bias_add(float* y, float const* bias, std::size_t rows, std::size_t cols)
{
  for (std::size_t r = 0; r < rows; ++r) {
    float* yr = y + r * cols;
    for (std::size_t j = 0; j < cols; ++j) { yr[j] += bias[j]; }
  }
}

void bias_grad(float const* dy, float* dbias, std::size_t rows, std::size_t cols)
{
  std::fill(dbias, dbias + cols, 0.0F);
  for (std::size_t r = 0; r < rows; ++r) {
    float const* dr = dy + r * cols;
    for (std::size_t j = 0; j < cols; ++j) { dbias[j] += dr[j]; }
  }
}

void relu_fwd(float* y, std::size_t n)
{
  for (std::size_t i = 0; i < n; ++i) { y[i] = y[i] > 0.0F ? y[i] : 0.0F; }
}

void relu_bwd(float* dy, float const* y, std::size_t n)
{
  for (std::size_t i = 0; i < n; ++i) { dy[i] = y[i] > 0.0F ? dy[i] : 0.0F; }
}

void softmax_xent_grad(float const* logits, std::int32_t const* labels, float* dlogits, std::size_t rows,
                       std::size_t classes)
{
  double const inv_rows = 1.0 / static_cast<double>(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    float const* x = logits + r * classes;
    float* d = dlogits + r * classes;
    double const mx = *std::max_element(x, x + classes);
    double sum = 0.0;
    for (std::size_t j = 0; j < classes; ++j) { sum += std::exp(static_cast<double>(x[j]) - mx); }
    auto const label = static_cast<std::size_t>(labels[r]);
    for (std::size_t j = 0; j < classes; ++j) {
      double const p = std::exp(static_cast<double>(x[j]) - mx) / sum;
      d[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * inv_rows);
    }
  }
}

double softmax_xent_loss(float const* logits, std::int32_t const* labels, std::size_t rows, std::size_t classes)
{
  double total = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    float const* x = logits + r * classes;
    double const mx = *std::max_element(x, x + classes);
    double sum = 0.0;
    for (std::size_t j = 0; j < classes; ++j) { sum += std::exp(static_cast<double>(x[j]) - mx); }
    auto const label = static_cast<std::size_t>(labels[r]);
    total += mx + std::log(sum) - static_cast<double>(x[label]);
  }
  return total / static_cast<double>(rows);
}

void adam_step(float* w, float* m, float* v, float const* g, std::size_t n, adam_params const& p)
{
  float const one_minus_b1 = 1.0F - p.beta1;
  float const one_minus_b2 = 1.0F - p.beta2;
  for (std::size_t i = 0; i < n; ++i) {
    float const gi = g[i];
    float const mi = p.beta1 * m[i] + one_minus_b1 * gi;
    float const vi = p.beta2 * v[i] + one_minus_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float const m_hat = mi / p.bias_correction1;
    float const v_hat = vi / p.bias_correction2;
    w[i] -= p.lr * m_hat / (std::sqrt(v_hat) + p.eps);
  }
}

}  // namespace oversubscribe::host_kernels

namespace oversubscribe {
namespace {

/// Queues each kernel as a host function; the job owns its arguments and deletes itself.
// Note [Kernel time on the virtual clock]
//   On the sim's virtual clock a host function takes no time, so the run would look like
//   copies alone. With --kernel-time each kernel also occupies its stream (sim_backend::compute_async) for
//   its time on a roofline, max(FLOPs / FLOP/s, bytes touched / B/s), with the costs stated in
//   compute_backend.hpp. The default roofline is a datacentre GPU's (fp32 without tensor
//   cores, HBM3: 50 TFLOP/s, 3 TB/s), stated, not measured; --kernel-roofline gives a suite
//   preset's or a calibrated one (docs/chapters/suite.md, "Calibration"). On a wall clock
//   the kernels' own run time is the time.
class host_compute_backend final : public compute_backend {
 public:
  host_compute_backend(tierpool::backend& be, bool kernel_time, kernel_roofline roofline, bool math)
    : compute_backend(roofline),
      be_(be),
      math_(math),
      sim_(kernel_time && be.caps().virtual_clock ? dynamic_cast<tierpool::sim_backend*>(&be) : nullptr)
  {
  }

  [[nodiscard]] std::string_view name() const noexcept override { return "host"; }
  void route_through(tierpool::pool* p) noexcept override { pool_ = p; }

 protected:
  void do_gemm(tierpool::stream_handle stream, double seconds, transpose ta, transpose tb, std::size_t m,
               std::size_t n, std::size_t k, float const* a, float const* b, float* c, bool accumulate) override
  {
    enqueue(stream, [=] {
      thread_local std::vector<float> scratch;  // one per stream worker thread
      host_kernels::gemm(ta, tb, m, n, k, a, b, c, accumulate, scratch);
    });
    occupy(stream, seconds);
  }
  void do_bias_add(tierpool::stream_handle stream, double seconds, float* y, float const* bias, std::size_t rows,
                   std::size_t cols) override
  {
    enqueue(stream, [=] { host_kernels::bias_add(y, bias, rows, cols); });
    occupy(stream, seconds);
  }
  void do_bias_grad(tierpool::stream_handle stream, double seconds, float const* dy, float* dbias, std::size_t rows,
                    std::size_t cols) override
  {
    enqueue(stream, [=] { host_kernels::bias_grad(dy, dbias, rows, cols); });
    occupy(stream, seconds);
  }
  void do_relu_fwd(tierpool::stream_handle stream, double seconds, float* y, std::size_t n) override
  {
    enqueue(stream, [=] { host_kernels::relu_fwd(y, n); });
    occupy(stream, seconds);
  }
  void do_relu_bwd(tierpool::stream_handle stream, double seconds, float* dy, float const* y, std::size_t n) override
  {
    enqueue(stream, [=] { host_kernels::relu_bwd(dy, y, n); });
    occupy(stream, seconds);
  }
  void do_softmax_xent_grad(tierpool::stream_handle stream, double seconds, float const* logits,
                            std::int32_t const* labels, float* dlogits, std::size_t rows, std::size_t classes) override
  {
    enqueue(stream, [=] { host_kernels::softmax_xent_grad(logits, labels, dlogits, rows, classes); });
    occupy(stream, seconds);
  }
  void do_adam_step(tierpool::stream_handle stream, double seconds, float* w, float* m, float* v, float const* g,
                    std::size_t n, adam_params const& p) override
  {
    enqueue(stream, [=] { host_kernels::adam_step(w, m, v, g, n, p); });
    occupy(stream, seconds);
  }

 private:
  using job = std::function<void()>;

  static void run(void* user_data)
  {
    std::unique_ptr<job> const j{static_cast<job*>(user_data)};
    try {
      (*j)();
    } catch (std::exception const& e) {
      // A host function has nobody to throw to; the only failure is a scratch allocation.
      std::fprintf(stderr, "oversubscribe: host kernel failed: %s\n", e.what());
      std::abort();
    }
  }

  template <class F>
  void enqueue(tierpool::stream_handle stream, F&& f)
  {
    // Without the math (--skip-math) the host function is still enqueued, empty: the
    // backend sees the same calls in the same order.
    auto j = math_ ? std::make_unique<job>(std::forward<F>(f)) : std::make_unique<job>([] {});
    tierpool::status const s = be_.launch_host_func(stream, &run, j.get());
    if (s != tierpool::status::ok) {
      throw std::runtime_error("launch_host_func failed (" + std::string(tierpool::to_string(s)) +
                               "): " + be_.last_error());
    }
    (void)j.release();  // run() owns it now
  }

  // Note [Kernel time on the virtual clock].
  void occupy(tierpool::stream_handle stream, double seconds)
  {
    if (sim_ == nullptr) { return; }
    auto const ns = static_cast<tierpool::tick>(std::ceil(seconds * 1e9));
    if (pool_ != nullptr) {  // the same compute_async, and a compute event in the pool's recording
      pool_->note_compute(stream, ns);
      return;
    }
    tierpool::status const s = sim_->compute_async(stream, ns);
    if (s != tierpool::status::ok) {
      throw std::runtime_error("compute_async failed (" + std::string(tierpool::to_string(s)) + ")");
    }
  }

  tierpool::backend& be_;
  bool math_;                 // false: the kernels compute nothing (--skip-math)
  tierpool::sim_backend* sim_;  // the virtual clock's kernels take time (null: wall clock or CUDA)
  tierpool::pool* pool_{nullptr};  // route_through: kernels' time through pool::note_compute
};

}  // namespace

std::unique_ptr<compute_backend> make_host_compute_backend(tierpool::backend& be, bool kernel_time,
                                                           kernel_roofline roofline, bool math)
{
  return std::make_unique<host_compute_backend>(be, kernel_time, roofline, math);
}

}  // namespace oversubscribe

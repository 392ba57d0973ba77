// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file compute_backend.hpp
 * @brief The kernels the oversubscription demo's MLP needs, behind one interface, so that
 *        the same training loop runs its math on the host (the simulated device, whose
 *        "device memory" is host memory) or on a GPU (cuda_kernels.cu, on the CUDA backend).
 *
 * Every call is stream-ordered: it enqueues work on `stream` and returns at once; the
 * pointers must stay valid (their leases alive, or ended after this call: the pool keeps
 * bytes in place until work already enqueued on the lease's stream completes) until the
 * work has run. Matrices are row-major fp32.
 */
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <tierpool/backend.hpp>
#include <tierpool/types.hpp>

namespace tierpool {
class pool;
}  // namespace tierpool

namespace oversubscribe {

/// @brief Whether a gemm operand is used as stored or transposed.
enum class transpose : std::uint8_t { no, yes };

/// @brief Hyper-parameters of one Adam step, bias corrections already computed for the step.
struct adam_params {
  float lr{1e-3F};                ///< learning rate
  float beta1{0.9F};              ///< first-moment decay
  float beta2{0.999F};            ///< second-moment decay
  float eps{1e-8F};               ///< denominator guard
  float bias_correction1{1.0F};   ///< 1 - beta1^t
  float bias_correction2{1.0F};   ///< 1 - beta2^t
};

/**
 * @brief A roofline: a kernel takes max(FLOPs / flops_per_second, bytes / bytes_per_second).
 *
 * The default is a datacentre GPU's fp32 without tensor cores and HBM3, stated, not measured
 * (Note [Kernel time on the virtual clock], host_kernels.cpp). `--kernel-roofline` replaces
 * it (a suite preset's). The host's time to launch a kernel is not in it: that is the
 * simulated backend's host cost of a kernel (`--host-costs kernel=...`).
 */
struct kernel_roofline {
  double flops_per_second{50e12};  ///< arithmetic throughput, FLOP/s (> 0)
  double bytes_per_second{3e12};   ///< memory throughput, B/s (> 0)
  /// @brief A kernel's time on this roofline, in seconds.
  [[nodiscard]] double seconds(double flops, double bytes) const noexcept
  {
    return std::max(flops / flops_per_second, bytes / bytes_per_second);
  }
};

/**
 * @brief Stream-ordered fp32 kernels of an MLP: gemm, bias, ReLU, softmax cross-entropy
 *        gradient, and Adam.
 *
 * Each public call states the kernel's cost (FLOPs, bytes touched), adds its time on the
 * roofline to roofline_seconds(), and hands the work to the implementation (`do_*`). The
 * costs are stated once, here, for every implementation: the host kernels occupy the
 * virtual clock for that time, and on a GPU the same sum is what `tierpool suite calibrate`
 * divides the measured time by (docs/chapters/suite.md, "Calibration").
 *
 * Thread safety: one instance is used by one thread at a time (the demo's trainer).
 * Ownership: not copyable; holds a reference to the tierpool backend it enqueues on, which
 * must outlive it.
 * Stream semantics: each call enqueues on `stream` and returns without waiting; results
 * are visible to later work on the same stream. Every implementation computes bit-identical
 * results for identical inputs (a fixed summation order), which the demo's verification
 * relies on.
 */
class compute_backend {
 public:
  explicit compute_backend(kernel_roofline roofline = {}) noexcept : roofline_(roofline) {}
  compute_backend(compute_backend const&) = delete;
  compute_backend& operator=(compute_backend const&) = delete;
  virtual ~compute_backend() = default;

  /// @brief Short name ("host", "cuda").
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;

  /// @brief The roofline the kernels' costs are timed on.
  [[nodiscard]] kernel_roofline const& roofline() const noexcept { return roofline_; }
  /// @brief Every kernel enqueued so far, timed on roofline(), in seconds.
  [[nodiscard]] double roofline_seconds() const noexcept { return roofline_seconds_; }
  /// @brief How many kernels were enqueued so far.
  [[nodiscard]] std::uint64_t kernels() const noexcept { return kernels_; }
  /// @brief Route the kernels' time through `p` (pool::note_compute) instead of straight to
  ///        the simulated backend, so that `p`'s recording (`--trace`) carries each kernel as
  ///        a `compute` event. The host kernels on the virtual clock with --kernel-time use it;
  ///        other implementations ignore it. `p` must outlive the kernels enqueued after.
  virtual void route_through(tierpool::pool* p) noexcept { (void)p; }

  /**
   * @brief `c[m×n] = op(a)[m×k] · op(b)[k×n]`, or `c += ...` when `accumulate`.
   * @param ta  `no`: `a` is stored m×k; `yes`: stored k×m.
   * @param tb  `no`: `b` is stored k×n; `yes`: stored n×k.
   * @throws std::runtime_error if the work cannot be enqueued.
   */
  void gemm(tierpool::stream_handle stream, transpose ta, transpose tb, std::size_t m, std::size_t n, std::size_t k,
            float const* a, float const* b, float* c, bool accumulate)
  {
    do_gemm(stream, charge(2.0 * d(m) * d(n) * d(k), 4.0 * (d(m) * d(k) + d(k) * d(n) + 2.0 * d(m) * d(n))), ta, tb,
            m, n, k, a, b, c, accumulate);
  }
  /// @brief `y[r][j] += bias[j]` for a rows×cols `y`. @throws std::runtime_error as gemm.
  void bias_add(tierpool::stream_handle stream, float* y, float const* bias, std::size_t rows, std::size_t cols)
  {
    do_bias_add(stream, charge(d(rows) * d(cols), 8.0 * d(rows) * d(cols)), y, bias, rows, cols);
  }
  /// @brief `dbias[j] = sum_r dy[r][j]` for a rows×cols `dy`. @throws std::runtime_error as gemm.
  void bias_grad(tierpool::stream_handle stream, float const* dy, float* dbias, std::size_t rows, std::size_t cols)
  {
    do_bias_grad(stream, charge(d(rows) * d(cols), 4.0 * d(rows) * d(cols)), dy, dbias, rows, cols);
  }
  /// @brief `y = max(y, 0)` over `n` values. @throws std::runtime_error as gemm.
  void relu_fwd(tierpool::stream_handle stream, float* y, std::size_t n)
  {
    do_relu_fwd(stream, charge(d(n), 8.0 * d(n)), y, n);
  }
  /// @brief `dy = y > 0 ? dy : 0` over `n` values (`y` is the ReLU's output). @throws as gemm.
  void relu_bwd(tierpool::stream_handle stream, float* dy, float const* y, std::size_t n)
  {
    do_relu_bwd(stream, charge(d(n), 12.0 * d(n)), dy, y, n);
  }
  /**
   * @brief Gradient of the mean softmax cross-entropy over `rows` samples:
   *        `dlogits = (softmax(logits) - onehot(labels)) / rows`.
   * @throws std::runtime_error as gemm.
   */
  void softmax_xent_grad(tierpool::stream_handle stream, float const* logits, std::int32_t const* labels,
                         float* dlogits, std::size_t rows, std::size_t classes)
  {
    do_softmax_xent_grad(stream, charge(5.0 * d(rows) * d(classes), 8.0 * d(rows) * d(classes)), logits, labels,
                         dlogits, rows, classes);
  }
  /// @brief One Adam step over `n` parameters, updating `w`, `m` and `v` in place. @throws as gemm.
  void adam_step(tierpool::stream_handle stream, float* w, float* m, float* v, float const* g, std::size_t n,
                 adam_params const& p)
  {
    do_adam_step(stream, charge(12.0 * d(n), 28.0 * d(n)), w, m, v, g, n, p);
  }

 protected:
  // The implementations: enqueue the kernel; `seconds` is its time on roofline().
  virtual void do_gemm(tierpool::stream_handle stream, double seconds, transpose ta, transpose tb, std::size_t m,
                       std::size_t n, std::size_t k, float const* a, float const* b, float* c, bool accumulate) = 0;
  virtual void do_bias_add(tierpool::stream_handle stream, double seconds, float* y, float const* bias,
                           std::size_t rows, std::size_t cols) = 0;
  virtual void do_bias_grad(tierpool::stream_handle stream, double seconds, float const* dy, float* dbias,
                            std::size_t rows, std::size_t cols) = 0;
  virtual void do_relu_fwd(tierpool::stream_handle stream, double seconds, float* y, std::size_t n) = 0;
  virtual void do_relu_bwd(tierpool::stream_handle stream, double seconds, float* dy, float const* y,
                           std::size_t n) = 0;
  virtual void do_softmax_xent_grad(tierpool::stream_handle stream, double seconds, float const* logits,
                                    std::int32_t const* labels, float* dlogits, std::size_t rows,
                                    std::size_t classes) = 0;
  virtual void do_adam_step(tierpool::stream_handle stream, double seconds, float* w, float* m, float* v,
                            float const* g, std::size_t n, adam_params const& p) = 0;

 private:
  static double d(std::size_t x) noexcept { return static_cast<double>(x); }
  double charge(double flops, double bytes) noexcept
  {
    double const s = roofline_.seconds(flops, bytes);
    roofline_seconds_ += s;
    ++kernels_;
    return s;
  }

  kernel_roofline roofline_;
  double roofline_seconds_{0.0};
  std::uint64_t kernels_{0};
};

/**
 * @brief The kernels for `be`: host loops on a sim backend with real memory, CUDA kernels
 *        on the CUDA backend when this build has them.
 *
 * On the CUDA backend this makes the backend's device current on the calling thread and
 * loads the kernels' code for it (cuda_kernels::probe).
 *
 * @param be   The backend the pool runs on; must outlive the result.
 * @param why  Receives, when the result is null, why no kernels fit this backend.
 * @param kernel_time On the sim's virtual clock, make each host kernel occupy its stream
 *        for its time on a roofline (Note [Kernel time on the virtual clock], host_kernels.cpp).
 * @return The kernels, or null when none can run on `be` (phantom memory; CUDA without
 *         the demo's kernels compiled in, or compiled for other GPU architectures).
 */
[[nodiscard]] std::unique_ptr<compute_backend> make_compute_backend(tierpool::backend& be, std::string* why,
                                                                   bool kernel_time = false,
                                                                   kernel_roofline roofline = {}, bool math = true);

/// @brief True when this build compiled the demo's CUDA kernels.
[[nodiscard]] bool has_cuda_kernels() noexcept;

}  // namespace oversubscribe

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file cuda_kernels.hpp
 * @brief Launchers of the demo's CUDA kernels (cuda_kernels.cu), one per compute_backend
 *        operation, callable from plain C++.
 *
 * This header is the boundary between the nvcc-compiled kernels (C++17) and the rest of
 * the demo (C++20): it includes no CUDA header and no tierpool header. A stream crosses it
 * as `void*` (a `cudaStream_t`), an error as the `int` value of a `cudaError_t` (0 is
 * success). cuda_compute_backend.cpp turns these into the compute_backend interface.
 *
 * Every launcher first makes `ctx.device` the calling thread's current device (it does not
 * restore the previous one), clears the thread's last CUDA error, enqueues one kernel on
 * `ctx.stream` and returns `cudaGetLastError()`. A launcher with nothing to compute (an
 * empty output) enqueues nothing and returns 0. None of them waits for the kernel.
 *
 * Numerics: every output element is computed by one thread in one fixed order (no atomics),
 * with IEEE round-to-nearest intrinsics for each operation (no fused multiply-add), in the
 * same order as host_kernels.cpp. Two runs on the same inputs therefore give the same bits.
 *
 * Thread safety: the launchers keep no state; any thread may call them.
 */
#pragma once

#include <cstddef>
#include <cstdint>

namespace oversubscribe::cuda_kernels {

/// @brief Where a kernel runs: a `cudaStream_t` (never null: the legacy default stream is
///        not used) on CUDA device `device`.
struct launch_context {
  void* stream{nullptr};  ///< the cudaStream_t
  int device{0};          ///< the device ordinal the stream belongs to
};

/// @brief Adam's per-step constants (bias corrections already computed for the step).
struct adam_constants {
  float lr{0.0F};                ///< learning rate
  float beta1{0.0F};             ///< first-moment decay
  float beta2{0.0F};             ///< second-moment decay
  float eps{0.0F};               ///< denominator guard
  float bias_correction1{1.0F};  ///< 1 - beta1^t
  float bias_correction2{1.0F};  ///< 1 - beta2^t
};

/**
 * @brief Checks that the kernels can run on `device`: makes it current and loads the
 *        kernels' code for it (fails when this build has no code for its architecture).
 * @param[out] major,minor The device's compute capability (left unchanged on failure).
 * @return 0, or the cudaError_t of the first failing call.
 */
[[nodiscard]] int probe(int device, int* major, int* minor) noexcept;

/// @brief `c[m×n] = op(a) · op(b)` (`+=` when `accumulate`); `ta`/`tb`: the operand is stored transposed.
[[nodiscard]] int gemm(launch_context ctx, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k,
                       float const* a, float const* b, float* c, bool accumulate) noexcept;
/// @brief `y[r][j] += bias[j]`.
[[nodiscard]] int bias_add(launch_context ctx, float* y, float const* bias, std::size_t rows,
                           std::size_t cols) noexcept;
/// @brief `dbias[j] = sum_r dy[r][j]`, rows summed in order.
[[nodiscard]] int bias_grad(launch_context ctx, float const* dy, float* dbias, std::size_t rows,
                            std::size_t cols) noexcept;
/// @brief `y = y > 0 ? y : 0`.
[[nodiscard]] int relu_fwd(launch_context ctx, float* y, std::size_t n) noexcept;
/// @brief `dy = y > 0 ? dy : 0`.
[[nodiscard]] int relu_bwd(launch_context ctx, float* dy, float const* y, std::size_t n) noexcept;
/// @brief `dlogits = (softmax(logits) - onehot(labels)) / rows`, in double like the host.
[[nodiscard]] int softmax_xent_grad(launch_context ctx, float const* logits, std::int32_t const* labels,
                                    float* dlogits, std::size_t rows, std::size_t classes) noexcept;
/// @brief One Adam step over `n` parameters.
[[nodiscard]] int adam_step(launch_context ctx, float* w, float* m, float* v, float const* g, std::size_t n,
                            adam_constants const& p) noexcept;

/// @brief The name of a cudaError_t value (e.g. "cudaErrorNoKernelImageForDevice").
[[nodiscard]] char const* error_name(int code) noexcept;
/// @brief CUDA's description of a cudaError_t value.
[[nodiscard]] char const* error_text(int code) noexcept;

}  // namespace oversubscribe::cuda_kernels

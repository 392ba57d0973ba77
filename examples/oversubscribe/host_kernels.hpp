// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file host_kernels.hpp
 * @brief The demo's MLP math as plain, deterministic C++ loops (fp32, fixed summation
 *        order), and the compute_backend that runs them as stream-ordered host functions.
 *
 * The functions here compute immediately on the calling thread; host_compute_backend
 * queues them with backend::launch_host_func so that they run in stream order, after the
 * pool's copies that make their operands valid.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "compute_backend.hpp"

namespace oversubscribe::host_kernels {

/**
 * @brief `c[m×n] = op(a) · op(b)` (or `+=` when `accumulate`), row-major.
 *
 * Each `c[i][j]` sums over `p = 0..k-1` in order, so results are reproducible bit for
 * bit; the inner loop runs over `j` so the compiler can vectorise it without reassociating.
 *
 * @param scratch Reused buffer (a transposed copy of `b` when `tb == yes`).
 */
void gemm(transpose ta, transpose tb, std::size_t m, std::size_t n, std::size_t k, float const* a, float const* b,
          float* c, bool accumulate, std::vector<float>& scratch);
/// @brief `y[r][j] += bias[j]`.
void bias_add(float* y, float const* bias, std::size_t rows, std::size_t cols);
/// @brief `dbias[j] = sum_r dy[r][j]` (summed in row order).
void bias_grad(float const* dy, float* dbias, std::size_t rows, std::size_t cols);
/// @brief `y = max(y, 0)`.
void relu_fwd(float* y, std::size_t n);
/// @brief `dy = y > 0 ? dy : 0`.
void relu_bwd(float* dy, float const* y, std::size_t n);
/// @brief `dlogits = (softmax(logits) - onehot(labels)) / rows`.
void softmax_xent_grad(float const* logits, std::int32_t const* labels, float* dlogits, std::size_t rows,
                       std::size_t classes);
/// @brief Mean softmax cross-entropy of `rows` samples, in double (the reported loss).
[[nodiscard]] double softmax_xent_loss(float const* logits, std::int32_t const* labels, std::size_t rows,
                                       std::size_t classes);
/// @brief One Adam step (with bias correction) over `n` parameters.
void adam_step(float* w, float* m, float* v, float const* g, std::size_t n, adam_params const& p);

}  // namespace oversubscribe::host_kernels

namespace oversubscribe {

/**
 * @brief compute_backend running host_kernels as host functions on the backend's streams.
 * @param be A backend whose device memory the host can read and write (sim, real memory);
 *           must outlive the result.
 * @param kernel_time On the virtual clock: each kernel also occupies its stream for its
 *        time on `roofline` (Note [Kernel time on the virtual clock], host_kernels.cpp).
 * @param roofline The roofline the kernels are timed on.
 * @param math False: each kernel is an empty host function (its time is still charged):
 *        the backend sees the same calls, and no result is computed.
 * @return The backend; never null.
 */
[[nodiscard]] std::unique_ptr<compute_backend> make_host_compute_backend(tierpool::backend& be, bool kernel_time = false,
                                                                        kernel_roofline roofline = {},
                                                                        bool math = true);

}  // namespace oversubscribe

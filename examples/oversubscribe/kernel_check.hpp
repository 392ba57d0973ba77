// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file kernel_check.hpp
 * @brief `oversubscribe --check-kernels`: every operation of a compute_backend, run on
 *        tensors of a pool, compared with host_kernels on the same random inputs.
 */
#pragma once

#include <cstddef>
#include <cstdio>

#include <tierpool/pool.hpp>

#include "compute_backend.hpp"

namespace oversubscribe {

/// @brief What check_kernels found.
struct kernel_check_result {
  std::size_t cases{0};          ///< cases run
  std::size_t failed{0};         ///< cases outside the tolerance or not reproducible
  std::size_t bit_identical{0};  ///< cases whose every output value has the host's bits
};

/**
 * @brief Runs each operation of `compute` (gemm in all four transpose combinations, with
 *        and without accumulation, at awkward and at the demo's sizes; bias add and
 *        gradient; ReLU forward and backward; the softmax cross-entropy gradient; Adam)
 *        twice on tensors of `pool`, and compares the outputs with host_kernels on the
 *        same inputs (seeded with splitmix64, so every run uses the same numbers).
 *
 * A case passes when every output is within a small tolerance of the host's (the GPU may
 * round `exp` differently; everything else is expected to match exactly) and the two
 * device runs are bit-identical (what the demo's verification relies on). One line per case
 * goes to `out`: the largest error against the host, its tolerance, how many values have
 * the host's exact bits, and whether the two runs agree.
 *
 * Thread safety: uses `pool` from the calling thread only; `compute` as the demo does.
 * @param pool    A pool on the backend `compute` runs on, with room for 8 MiB of tensors.
 * @param compute The kernels under test.
 * @param out     Where the report goes.
 * @return Counts of cases, failures and bit-identical cases.
 * @throws tierpool::out_of_memory, tierpool::backend_error from the pool;
 *         std::runtime_error if a kernel cannot be launched.
 */
[[nodiscard]] kernel_check_result check_kernels(tierpool::pool& pool, compute_backend& compute, std::FILE* out);

}  // namespace oversubscribe

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cuda_check.hpp — private to runtime/backends/cuda: mapping cudaError_t to
// tierpool::status, describing an error, and TIERPOOL_CUDA_TRY. Never included from a
// public header (it includes the CUDA runtime header).
#pragma once

#include <tierpool/error.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace tierpool::detail::cuda {

/**
 * @brief Map a CUDA runtime error to the backend status it means for the runtime above.
 *
 * Driver / device absence becomes `no_device` (so selection can fall back to sim),
 * allocation failure `out_of_memory`, argument and handle errors `invalid_value`.
 */
[[nodiscard]] constexpr status to_status(cudaError_t e) noexcept
{
  switch (e) {
    case cudaSuccess: return status::ok;
    case cudaErrorNotReady: return status::not_ready;
    case cudaErrorMemoryAllocation: return status::out_of_memory;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorHostMemoryAlreadyRegistered:
    case cudaErrorHostMemoryNotRegistered: return status::invalid_value;
    case cudaErrorNotSupported:
    case cudaErrorNotPermitted:
    case cudaErrorCompatNotSupportedOnDevice: return status::not_supported;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorStubLibrary:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorSystemNotReady:
    case cudaErrorInitializationError: return status::no_device;
    default: return status::device_error;
  }
}

/// @brief "cudaErrorMemoryAllocation: out of memory" (cudaGetErrorName + cudaGetErrorString).
[[nodiscard]] inline std::string describe(cudaError_t e)
{
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

/**
 * @brief Clear the calling thread's last CUDA error after a failure we have handled, so
 *        that a later cudaGetLastError() in user code does not report it again. Sticky
 *        errors (a corrupted context) cannot be cleared and keep being returned.
 */
inline void clear_last_error() noexcept { (void)cudaGetLastError(); }

}  // namespace tierpool::detail::cuda

/**
 * @brief Evaluate a CUDA runtime call; on failure return `fail(err, "<expr>")` from the
 *        enclosing function. For use inside cuda_backend members, whose `fail` records the
 *        error for last_error() and returns the mapped tierpool::status.
 */
#define TIERPOOL_CUDA_TRY(expr)                                          \
  do {                                                                   \
    cudaError_t const tierpool_cuda_err_ = (expr);                       \
    if (tierpool_cuda_err_ != cudaSuccess) [[unlikely]] {                \
      return fail(tierpool_cuda_err_, #expr);                            \
    }                                                                    \
  } while (0)

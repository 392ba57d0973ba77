// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cuda_check.hpp — private to runtime/backends/cuda (and its tests): mapping cudaError_t
// to tierpool::status, describing an error, TIERPOOL_CUDA_TRY, and the pure translations
// of backend arguments into CUDA 13 arguments (memory locations, advice, copy routes), kept
// here so that they can be tested on a machine without a GPU. Never included from a public
// header (it includes the CUDA runtime header).
#pragma once

#include <tierpool/backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/tier.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace tierpool::detail::cuda {

/**
 * @brief Map a CUDA runtime error to the backend status it means for the runtime above.
 *
 * Driver / device absence becomes `no_device` (so selection can fall back to sim),
 * allocation failure `out_of_memory`, argument and handle errors (and calls a stream
 * capture forbids) `invalid_value`, a
 * capability the device or driver lacks `not_supported`, the sticky errors that end the
 * context (an illegal address or instruction, a faulted or timed-out kernel, an
 * uncorrectable ECC or NVLink error, a device-side assert) `device_lost`, everything else
 * `device_error`.
 *
 * Thread safety: pure. Throws nothing.
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
    case cudaErrorHostMemoryNotRegistered:
    // A call a stream capture forbids now (docs/chapters/backends.md, "Graph capture"):
    // the caller's misuse at this moment, not a fault of the device.
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnmatched:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorCapturedEvent:
    case cudaErrorStreamCaptureWrongThread: return status::invalid_value;
    case cudaErrorNotSupported:
    case cudaErrorNotPermitted:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorCallRequiresNewerDriver: return status::not_supported;  // one call, not the device
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorStubLibrary:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorSystemNotReady:
    case cudaErrorInitializationError: return status::no_device;
    // Sticky: the context is corrupt, every later call fails; the device's memory is gone
    // (the pool's Note [A lost device]).
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable: return status::device_lost;
    default: return status::device_error;
  }
}

/**
 * @brief "cudaErrorMemoryAllocation: out of memory" (cudaGetErrorName + cudaGetErrorString).
 * Thread safety: any thread. @throws std::bad_alloc.
 */
[[nodiscard]] inline std::string describe(cudaError_t e)
{
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

/**
 * @brief Clear the calling thread's last CUDA error after a failure `ours` we have
 *        handled, so that a later cudaGetLastError() in user code (a kernel launch check)
 *        does not report it again — but only when the pending error is `ours`
 *        (cudaPeekAtLastError): a pending error of the program's own (a launch it has not
 *        checked yet) stays for it to find. A failed call of ours does replace a pending
 *        error of the program's (CUDA keeps one per thread); a successful one leaves it.
 *        Sticky errors (a corrupted context) cannot be cleared and keep being returned by
 *        every call. No-op for cudaSuccess.
 * Thread safety: affects the calling thread only. Throws nothing.
 */
inline void clear_own_error(cudaError_t ours) noexcept
{
  if (ours != cudaSuccess && cudaPeekAtLastError() == ours) { (void)cudaGetLastError(); }
}

/// @brief True for the kinds the host reaches directly and CUDA does not own as device memory.
[[nodiscard]] constexpr bool is_host_side(tier_kind k) noexcept
{
  return k == tier_kind::host || k == tier_kind::pinned_host;
}

/**
 * @brief True when a copy between these kinds runs as a stream-ordered host function (a
 *        plain memcpy) rather than cudaMemcpyAsync: both sides on the host, pinned or
 *        pageable. cudaMemcpyAsync between two host ranges, pinned ones too, is
 *        synchronous with respect to the host (CUDA's API synchronization behavior), so it
 *        would block the caller instead of queueing (Note [Host copies run on the host],
 *        cuda_backend.cpp).
 * Thread safety: pure. Throws nothing.
 */
[[nodiscard]] constexpr bool copy_runs_on_host(tier_kind dst, tier_kind src) noexcept
{
  return is_host_side(dst) && is_host_side(src);
}

/**
 * @brief True when a copy between these kinds goes through the stream's pinned staging
 *        buffer (Note [Pageable copies through pinned staging], cuda_backend.cpp): one side
 *        pageable host memory, the other device or managed memory. cudaMemcpyAsync would
 *        block the caller for such a copy.
 * Thread safety: pure. Throws nothing.
 */
[[nodiscard]] constexpr bool copy_needs_staging(tier_kind dst, tier_kind src) noexcept
{
  return (dst == tier_kind::host && is_device_accessible(src)) || (src == tier_kind::host && is_device_accessible(dst));
}

/**
 * @brief The CUDA 13 `cudaMemLocation` for `where` on backend device `device`.
 *
 * - device and managed kinds: `cudaMemLocationTypeDevice`, id = `device`;
 * - host kinds with a NUMA node: `cudaMemLocationTypeHostNuma`, id = the node — unless
 *   `host_numa_allowed` is false (cudaMemAdviseSet/UnsetAccessedBy accept only Device and
 *   Host, every other type is cudaErrorInvalidValue), then `cudaMemLocationTypeHost`;
 * - host kinds without a node: `cudaMemLocationTypeHost` (id ignored by CUDA, set to 0).
 *
 * Thread safety: pure. Throws nothing.
 */
[[nodiscard]] constexpr cudaMemLocation location_for(memory_location where, int device,
                                                     bool host_numa_allowed = true) noexcept
{
  cudaMemLocation loc{};
  if (is_host_side(where.kind)) {
    if (where.numa_node >= 0 && host_numa_allowed) {
      loc.type = cudaMemLocationTypeHostNuma;
      loc.id = where.numa_node;
    } else {
      loc.type = cudaMemLocationTypeHost;
      loc.id = 0;
    }
  } else {
    loc.type = cudaMemLocationTypeDevice;
    loc.id = device;
  }
  return loc;
}

/**
 * @brief The cudaMemoryAdvise for `advice`; false (and `*out` unchanged) for a value
 *        outside the enumeration.
 * Thread safety: pure. Throws nothing.
 */
[[nodiscard]] constexpr bool to_cuda_advice(mem_advice advice, cudaMemoryAdvise* out) noexcept
{
  switch (advice) {
    case mem_advice::set_read_mostly: *out = cudaMemAdviseSetReadMostly; return true;
    case mem_advice::unset_read_mostly: *out = cudaMemAdviseUnsetReadMostly; return true;
    case mem_advice::set_preferred_location: *out = cudaMemAdviseSetPreferredLocation; return true;
    case mem_advice::unset_preferred_location: *out = cudaMemAdviseUnsetPreferredLocation; return true;
    case mem_advice::set_accessed_by: *out = cudaMemAdviseSetAccessedBy; return true;
    case mem_advice::unset_accessed_by: *out = cudaMemAdviseUnsetAccessedBy; return true;
  }
  return false;
}

/// @brief True when `advice` is one of the accessed-by pair (whose location may not be a host NUMA node).
[[nodiscard]] constexpr bool is_accessed_by(mem_advice advice) noexcept
{
  return advice == mem_advice::set_accessed_by || advice == mem_advice::unset_accessed_by;
}

}  // namespace tierpool::detail::cuda

/**
 * @brief Evaluate a CUDA runtime call; on failure return `fail(err, "<expr>")` from the
 *        enclosing function. For use inside cuda_backend members, whose `fail` records the
 *        error for last_error(), clears CUDA's last error and returns the mapped status.
 */
#define TIERPOOL_CUDA_TRY(expr)                                          \
  do {                                                                   \
    cudaError_t const tierpool_cuda_err_ = (expr);                       \
    if (tierpool_cuda_err_ != cudaSuccess) [[unlikely]] {                \
      return fail(tierpool_cuda_err_, #expr);                            \
    }                                                                    \
  } while (0)

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file cuda_backend.hpp
 * @brief The CUDA backend: tierpool::backend over the CUDA runtime API (static cudart).
 *
 * Declared only when the library was built with the CUDA backend
 * (`TIERPOOL_HAS_CUDA`, from <tierpool/config.hpp>). No CUDA header is included: streams
 * and events cross the interface as opaque handles (a non-zero stream_handle is a
 * `cudaStream_t`, an event_handle a `cudaEvent_t`).
 *
 * Behaviour worth knowing:
 * - The default stream `stream_handle{}` is a private non-blocking stream created by the
 *   backend, not CUDA's legacy NULL stream, so it never synchronizes with other streams.
 * - Streams are created non-blocking with a priority clamped to the device's range
 *   (lower values run first, as in CUDA). Events are created with timing disabled.
 * - `pinned_host` memory is cudaHostAlloc'd, or, when a NUMA node is given, allocated
 *   with hwloc on that node and then cudaHostRegister'ed. `host` memory is ordinary
 *   memory, hwloc-bound when a node is given.
 * - Copies between two host-side kinds (pinned or pageable) run as a stream-ordered host
 *   function (a plain memcpy), since cudaMemcpyAsync between host ranges would block the
 *   caller; copies between pageable memory and the device go through a pinned staging
 *   buffer of the stream; every other copy is cudaMemcpyAsync(cudaMemcpyDefault). The
 *   driver may run the host functions of all streams one at a time: none of the backend's
 *   waits for anything, and host functions given to launch_host_func must not wait for
 *   another stream's work either (backend.hpp, host_fn).
 * - Every call makes the device's primary context current for its duration and restores
 *   the caller's context afterwards (cuCtxPushCurrent / cuCtxPopCurrent, reached through
 *   cudaGetDriverEntryPointByVersion): the backend never calls cudaSetDevice, so a process
 *   that uses only GPU 1 never creates a context on GPU 0.
 * - adopt_stream() needs a live `cudaStream_t` of the backend's device: it refuses null,
 *   `cudaStreamLegacy`, `cudaStreamPerThread`, the backend's own streams and events, and a
 *   stream of another device; a destroyed or made-up handle cannot be told from a live one
 *   without undefined behaviour in CUDA itself, so passing one is undefined.
 * - is_capturing() is cudaStreamIsCapturing; capture_underway() asks it of every stream
 *   of the backend.
 * - `managed` capacity (caps().managed_bytes) is the free device memory at construction.
 */
#pragma once

#include <tierpool/config.hpp>

#if TIERPOOL_HAS_CUDA

#include <memory>
#include <string>

#include <tierpool/backend.hpp>
#include <tierpool/export.hpp>

namespace tierpool {

/**
 * @brief Create the CUDA backend for one device.
 *
 * Initializes the CUDA runtime, retains the device's primary context (kept for the life
 * of the process, as the runtime keeps its own) and probes the capabilities once. With
 * static cudart the library starts on machines without a driver: there the first CUDA
 * call fails with `cudaErrorInsufficientDriver` and this returns null with a reason.
 * Backends of several devices may live in one process; each touches only its own device.
 *
 * Thread safety: may be called from any thread. The returned backend's members may be
 * called concurrently from any thread (each pushes the device's primary context for its
 * calls and pops it after: the calling thread's current device and context are as before).
 *
 * @param device  CUDA device ordinal (>= 0).
 * @param why_not When non-null and the result is null, receives one line saying why,
 *                e.g. "no CUDA driver (cudaErrorInsufficientDriver: CUDA driver version is
 *                insufficient for CUDA runtime version)".
 * @return The backend, or null when there is no usable driver or device.
 * @throws std::bad_alloc only if memory for the backend object itself cannot be allocated.
 */
[[nodiscard]] TIERPOOL_EXPORT std::unique_ptr<backend> make_cuda_backend(int device, std::string* why_not = nullptr);

/**
 * @brief Number of CUDA devices visible to this process.
 * @param why_not When non-null and the result is 0, receives the reason (as make_cuda_backend's).
 * @return The count; 0 when there is no driver or no device.
 */
[[nodiscard]] TIERPOOL_EXPORT int cuda_device_count(std::string* why_not = nullptr);

}  // namespace tierpool

#endif  // TIERPOOL_HAS_CUDA

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file backend.hpp
 * @brief The device primitive layer: one small interface, two implementations
 *        (`sim`, always built; `cuda`, when the toolkit is found).
 *
 * Every function is `noexcept` and returns a `status`; the runtime above turns a failed
 * status into an exception with context. A virtual call is fine here: each call leads to
 * a device operation that costs microseconds or more, and the hot paths (arena, policy
 * ordering) never go through this interface.
 *
 * Thread safety: every member may be called concurrently from any thread.
 *
 * Stream semantics follow CUDA: work enqueued on one stream runs in order; streams are
 * ordered against each other only through events (`record_event` then
 * `stream_wait_event`). The default stream, `stream_handle{}`, always exists; unlike
 * CUDA's legacy default stream it does not synchronize with other streams.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <tierpool/error.hpp>
#include <tierpool/export.hpp>
#include <tierpool/tier.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

/// @brief Capabilities of a backend, filled once at construction and never re-probed.
struct backend_caps {
  std::string name;                       ///< "sim" or "cuda"
  std::string device_name;                ///< e.g. "NVIDIA H200" or "simulated device"
  int device_ordinal{0};                  ///< the device's ordinal: CUDA's, or sim_options::device_ordinal
  int compute_capability_major{0};        ///< 0 for sim
  int compute_capability_minor{0};        ///< 0 for sim
  std::size_t device_bytes{0};            ///< device memory the runtime may use (total)
  std::size_t pinned_host_bytes{0};       ///< pinned host limit; 0 = bounded only by the host
  std::size_t managed_bytes{0};           ///< managed memory limit; 0 = no managed memory
  std::size_t allocation_alignment{256};  ///< alignment of every allocation returned
  std::size_t copy_granularity{256};      ///< smallest efficient transfer, in bytes
  bool real_memory{true};                 ///< false: phantom memory (address ranges, no bytes)
  bool virtual_clock{false};              ///< true: now() is a deterministic simulated clock
  bool timed_events{false};               ///< event_elapsed() times events made by create_timed_event()
  bool has_managed{false};                ///< managed (unified) memory available
  bool has_managed_prefetch{false};       ///< prefetch_async / advise on managed memory work
  bool concurrent_managed_access{false};  ///< host and device may touch managed memory at once
  bool has_numa_binding{false};           ///< allocate(host, bytes, out, node) binds to node
  bool managed_shares_device{false};      ///< managed memory is device memory (a GPU): managed_bytes and device tiers draw on the same free bytes
  std::uint32_t max_copy_streams{16};     ///< streams the runtime should create at most
  int host_numa_node{-1};                 ///< the device's nearest NUMA node; -1 unknown
  int driver_version{0};                  ///< CUDA driver API version (cudaDriverGetVersion, e.g. 13000); 0 for sim
  int runtime_version{0};                 ///< CUDA runtime version linked in (e.g. 13000); 0 for sim
  std::string pci_bus_id;                 ///< "0000:5d:00.0" (cudaDeviceGetPCIBusId, lower case); empty for sim
};

/// @brief Where memory should go for prefetch / advise: a tier kind and, for host kinds, a NUMA node.
struct memory_location {
  tier_kind kind{tier_kind::device};  ///< the kind of memory the pages should move to
  int numa_node{-1};  ///< -1: any / current
};

/// @brief One copy. Both ranges must come from this backend (or be host memory for host kinds).
struct copy_desc {
  void* dst{nullptr};                     ///< destination (`bytes` writable bytes)
  void const* src{nullptr};               ///< source (`bytes` readable bytes; may not overlap dst)
  std::size_t bytes{0};                   ///< how many bytes; > 0
  tier_kind dst_kind{tier_kind::device};  ///< the kind of memory dst is in (picks the copy direction)
  tier_kind src_kind{tier_kind::host};    ///< the kind of memory src is in
};

/// @brief Advice on managed memory (mirrors cudaMemAdvise).
enum class mem_advice : std::uint8_t {
  set_read_mostly,
  unset_read_mostly,
  set_preferred_location,
  unset_preferred_location,
  set_accessed_by,
  unset_accessed_by,
};

/**
 * @brief A host function run in stream order. Must not call back into the backend.
 *
 * Must not wait for work of another stream either: a CUDA driver may run the host
 * functions of all streams on one thread, one at a time, so a host function that waits for
 * another stream's work (which may be a host function queued behind it) can deadlock
 * there, though it passes on a backend that gives every stream a thread of its own.
 * `sim_options::serialize_host_functions` makes the simulated device behave like that.
 */
using host_fn = void (*)(void* user_data);

/**
 * @brief The device primitive interface.
 *
 * Preconditions are checked and reported as `status::invalid_value`, never UB:
 * null out-pointers, zero bytes, handles not created by this backend.
 */
class TIERPOOL_EXPORT backend {
 public:
  backend() = default;
  backend(backend const&) = delete;
  backend& operator=(backend const&) = delete;
  virtual ~backend() = default;

  /// @brief Capabilities, fixed at construction.
  [[nodiscard]] virtual backend_caps const& caps() const noexcept = 0;

  /**
   * @brief Allocate `bytes` of memory of `kind`, aligned to caps().allocation_alignment.
   * @param kind The kind of memory (device, pinned_host, managed, host).
   * @param bytes How many bytes; > 0.
   * @param out Receives the pointer (null on failure).
   * @param numa_node For `host` / `pinned_host`: bind to this NUMA node (-1: no binding).
   * @return ok, invalid_value (bytes == 0, null out), out_of_memory, not_supported, or a fault.
   */
  [[nodiscard]] virtual status allocate(tier_kind kind, std::size_t bytes, void** out,
                                        int numa_node = -1) noexcept = 0;
  /// @brief Return memory from allocate(). `bytes` is the allocated size. Null is a no-op.
  virtual void deallocate(tier_kind kind, void* ptr, std::size_t bytes) noexcept = 0;
  /// @brief Free and total device memory as the device reports them now.
  [[nodiscard]] virtual status device_memory_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept = 0;

  /// @brief Create a stream. Lower `priority` values run first where the device supports it.
  [[nodiscard]] virtual status create_stream(stream_handle* out, int priority = 0) noexcept = 0;
  /// @brief Destroy a stream, as cudaStreamDestroy: returns at once; work already queued on
  ///        it still runs and its events complete. The default stream is a no-op.
  virtual void destroy_stream(stream_handle s) noexcept = 0;
  /// @brief Block the calling thread until all work queued on `s` has completed.
  [[nodiscard]] virtual status synchronize_stream(stream_handle s) noexcept = 0;
  /**
   * @brief Accept `native`, a stream the caller made with the device's own API (a
   *        `cudaStream_t` on the CUDA backend; on sim, the value of a handle from this
   *        backend's create_stream()), as a stream of this backend. The caller keeps
   *        ownership: it calls forget_stream() before destroying the native stream, and
   *        destroy_stream() is never called on it. Adopting a stream twice is harmless.
   * @param native The stream: a `cudaStream_t` on CUDA, a handle's value on sim.
   * @param out Receives the handle (`{}` on failure).
   * @return ok; invalid_value (null `out` or `native`, not a live stream, a stream of
   *         another device); not_supported (a backend without native streams: the default).
   */
  [[nodiscard]] virtual status adopt_stream(void* native, stream_handle* out) noexcept
  {
    (void)native;
    if (out != nullptr) { *out = stream_handle{}; }
    return status::not_supported;
  }
  /// @brief Stop using a stream from adopt_stream(): neither waits for nor destroys it.
  ///        Handles not adopted are ignored.
  virtual void forget_stream(stream_handle s) noexcept { (void)s; }

  /// @brief Create an event. A never-recorded event counts as complete.
  [[nodiscard]] virtual status create_event(event_handle* out) noexcept = 0;
  /// @brief Destroy an event. Pending records still complete harmlessly.
  virtual void destroy_event(event_handle e) noexcept = 0;
  /// @brief Capture the work queued on `s` so far; the event completes when it has run.
  [[nodiscard]] virtual status record_event(event_handle e, stream_handle s) noexcept = 0;
  /// @brief ok when the last record of `e` has completed, not_ready otherwise.
  [[nodiscard]] virtual status query_event(event_handle e) noexcept = 0;
  /// @brief Block the calling thread until the last record of `e` has completed.
  [[nodiscard]] virtual status synchronize_event(event_handle e) noexcept = 0;
  /// @brief Work queued on `s` after this call waits for the last record of `e` (no host stall).
  [[nodiscard]] virtual status stream_wait_event(stream_handle s, event_handle e) noexcept = 0;

  /// @brief Queue a copy on `s`. Ranges must not overlap.
  [[nodiscard]] virtual status copy_async(copy_desc const& d, stream_handle s) noexcept = 0;
  /// @brief Queue a migration of managed memory towards `to` on `s` (cudaMemPrefetchAsync).
  [[nodiscard]] virtual status prefetch_async(void* ptr, std::size_t bytes, memory_location to,
                                              stream_handle s) noexcept = 0;
  /// @brief Give advice on a managed range (cudaMemAdvise).
  [[nodiscard]] virtual status advise(void* ptr, std::size_t bytes, mem_advice advice,
                                      memory_location where) noexcept = 0;
  /// @brief Queue `fn(user_data)` on `s`; it runs after earlier work on `s` and before later work.
  [[nodiscard]] virtual status launch_host_func(stream_handle s, host_fn fn, void* user_data) noexcept = 0;

  /// @brief Current time of this backend's clock in nanoseconds (virtual or steady).
  [[nodiscard]] virtual tick now() const noexcept = 0;

  /// @brief Device time (the now() clock) at which the last record of `e` completes, when
  ///        the backend knows it ahead of time (sim's virtual clock); std::nullopt otherwise
  ///        (the default: a real device tells only whether it has completed).
  [[nodiscard]] virtual std::optional<tick> known_completion(event_handle e) const noexcept
  {
    (void)e;
    return std::nullopt;
  }
  /// @brief Device time at which the work queued on `s` so far completes, when known ahead
  ///        (sim's virtual clock); std::nullopt otherwise.
  [[nodiscard]] virtual std::optional<tick> known_stream_time(stream_handle s) const noexcept
  {
    (void)s;
    return std::nullopt;
  }
  /// @brief Create an event that event_elapsed() can time (a CUDA event without
  ///        cudaEventDisableTiming). The default: create_event().
  [[nodiscard]] virtual status create_timed_event(event_handle* out) noexcept { return create_event(out); }
  /**
   * @brief Device time from the completion of the last record of `from` to that of `to`
   *        (cudaEventElapsedTime), once both have completed: how a backend that does not know
   *        device times ahead measures them afterwards.
   * @param from, to Events from create_timed_event(), both recorded.
   * @param ns       Receives the time (0 when `to` completed first).
   * @return ok; not_ready while either has not completed; not_supported where events are not
   *         timed (the default, the sim's wall clock); invalid_value (null `ns`, unknown event).
   */
  [[nodiscard]] virtual status event_elapsed(event_handle from, event_handle to, tick* ns) noexcept
  {
    (void)from;
    (void)to;
    if (ns != nullptr) { *ns = 0; }
    return status::not_supported;
  }

  /**
   * @brief Whether `s` is being captured into a graph (cudaStreamIsCapturing: a capture
   *        active or already invalidated counts). While it is, CUDA forbids host waits and
   *        event queries on the capturing thread and anything on `s` that is not captured;
   *        the pool then acquires only what needs none of them (docs/chapters/backends.md,
   *        "Graph capture").
   * @param s   A stream of this backend (the default stream included).
   * @param out Receives the answer (false on failure).
   * @return ok; invalid_value (null `out`, unknown stream). The default: ok and false (a
   *         backend without graphs never captures).
   */
  [[nodiscard]] virtual status is_capturing(stream_handle s, bool* out) const noexcept
  {
    (void)s;
    if (out == nullptr) { return status::invalid_value; }
    *out = false;
    return status::ok;
  }
  /// @brief True while any stream of this backend (its own or adopted) is being captured
  ///        (is_capturing); the pool makes pool::prefetch a no-op then. The default: false.
  [[nodiscard]] virtual bool capture_underway() const noexcept { return false; }

  /// @brief Text describing the most recent failure on the calling thread ("" if none).
  [[nodiscard]] virtual std::string last_error() const = 0;
};

}  // namespace tierpool

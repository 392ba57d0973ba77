// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file sim_backend.hpp
 * @brief The simulated backend: real or phantom memory, a wall or virtual clock, link
 *        models per copy direction, and reproducible fault injection.
 *
 * The sim backend is always built. It is what the functional tests, the oversubscription
 * demo and `tierpool replay` run on (docs/chapters/backends.md). Two independent switches:
 *
 * - **memory**: `real` hands out host memory aligned to 256 bytes and copies bytes;
 *   `phantom` hands out address ranges from a fake, never dereferenced address space
 *   (no bytes), so an 80 GB card with a terabyte of tensors fits on a laptop.
 * - **clock**: `wall` runs each stream as an in-order queue on its own worker thread and
 *   optionally throttles copies to a link model (sleeping until the modelled completion
 *   time); `virtual_clock` is a deterministic discrete-event timeline where operations
 *   take effect at enqueue and carry a modelled completion time.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/export.hpp>
#include <tierpool/tier.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

/// @brief Whether sim allocations are backed by real host memory or are address ranges only.
enum class sim_memory_mode : std::uint8_t {
  real,     ///< host memory, aligned to 256; copies move bytes
  phantom,  ///< fake address ranges, never dereferenced; copies move no bytes
};

/// @brief Which clock drives the sim backend.
enum class sim_clock_mode : std::uint8_t {
  wall,           ///< worker thread per stream; now() = steady_clock ns since creation
  virtual_clock,  ///< deterministic discrete-event timeline; now() moves only on sync / advance
};

/**
 * @brief Model of one copy link (one direction): bandwidth and a fixed latency per copy.
 *
 * A copy of `b` bytes occupies the link for `latency_ns + ceil(b * 1e9 / bandwidth)` ns.
 * A bandwidth of 0 means "unthrottled": the copy takes `latency_ns` only.
 *
 * Thread safety: a plain value.
 */
struct link_model {
  double bandwidth_bytes_per_s{0.0};  ///< bytes per second; 0 = unthrottled
  tick latency_ns{0};                 ///< fixed cost per copy, ns

  /// @brief Time a copy of `bytes` occupies the link, in ns (latency included).
  [[nodiscard]] TIERPOOL_EXPORT tick transfer_ns(std::size_t bytes) const noexcept;
  /// @brief True when neither bandwidth nor latency is modelled (copies are instantaneous).
  [[nodiscard]] constexpr bool unthrottled() const noexcept
  {
    return bandwidth_bytes_per_s <= 0.0 && latency_ns == 0;
  }

  /// @brief PCIe 4.0 x16: about 25 GB/s, 2 us per copy.
  [[nodiscard]] static constexpr link_model pcie4() noexcept { return {25e9, 2'000}; }
  /// @brief PCIe 5.0 x16: about 50 GB/s, 2 us per copy.
  [[nodiscard]] static constexpr link_model pcie5() noexcept { return {50e9, 2'000}; }
  /// @brief NVLink-C2C (Grace Hopper): about 450 GB/s per direction, 1 us per copy.
  [[nodiscard]] static constexpr link_model nvlink_c2c() noexcept { return {450e9, 1'000}; }
  /// @brief CXL-attached far memory: about 30 GB/s, 5 us per copy.
  [[nodiscard]] static constexpr link_model cxl() noexcept { return {30e9, 5'000}; }
  /// @brief On-device (HBM) copy: about 2 TB/s, 2 us per copy (a copy kernel launch).
  [[nodiscard]] static constexpr link_model hbm() noexcept { return {2e12, 2'000}; }
  /// @brief Host memcpy between host buffers: about 10 GB/s, 500 ns per copy.
  [[nodiscard]] static constexpr link_model host_memcpy() noexcept { return {10e9, 500}; }
  /// @brief Reads from a PCIe 4.0 x4 NVMe drive: about 7 GB/s, 80 us per copy (sequential
  ///        read of the Samsung 980 PRO's datasheet, 7,000 MB/s; 80 us is a flash read at
  ///        queue depth 1). docs/chapters/tiers.md, "The storage tier".
  [[nodiscard]] static constexpr link_model nvme4_read() noexcept { return {7e9, 80'000}; }
  /// @brief Writes to a PCIe 4.0 x4 NVMe drive: about 5 GB/s (the 980 PRO's 5,000 MB/s
  ///        sequential write), 80 us per copy.
  [[nodiscard]] static constexpr link_model nvme4_write() noexcept { return {5e9, 80'000}; }

  /// @brief Equal when bandwidth and latency are.
  friend constexpr bool operator==(link_model const&, link_model const&) noexcept = default;
};

/**
 * @brief Parse a link description: a preset name (`pcie4`, `pcie5`, `nvlink-c2c`, `cxl`,
 *        `hbm`, `host`, `nvme4-read`, `nvme4-write`, `none`) or `BW,LAT` with bandwidth in bytes/s and latency in ns
 *        (e.g. `25e9,2000`; both non-negative and finite).
 * @param text  The description; surrounding blanks are ignored, preset names are
 *              case-insensitive.
 * @param error When non-null and parsing fails, receives a message saying why.
 * @return The model, or std::nullopt when `text` is not a valid description.
 * @throws std::bad_alloc only when the error message cannot be allocated.
 * Thread safety: reentrant.
 */
[[nodiscard]] TIERPOOL_EXPORT std::optional<link_model> parse_link_model(std::string_view text,
                                                                         std::string* error = nullptr);

/// @brief A copy direction of the simulated machine; each has its own link.
enum class sim_link : std::uint8_t {
  h2d,  ///< host-accessible kind -> device
  d2h,  ///< device -> host-accessible kind
  d2d,  ///< device -> device
  h2h,  ///< host-accessible kind -> host-accessible kind (set to cxl() to model far memory)
  s2h,  ///< storage -> any other kind: a read from the storage tier's file
  h2s,  ///< any other kind -> storage: a write to the storage tier's file
};
/// @brief Number of sim_link values.
inline constexpr std::size_t sim_link_count = 6;

/// @brief Lower-case name of a link ("h2d", "d2h", "d2d", "h2h", "s2h", "h2s").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(sim_link link) noexcept;

/// @brief The link a copy from `src` to `dst` memory uses (managed counts as host-side; a
///        copy from or to storage uses s2h or h2s).
[[nodiscard]] TIERPOOL_EXPORT sim_link link_for(tier_kind dst, tier_kind src) noexcept;

/// @brief One link model per copy direction.
struct sim_links {
  link_model h2d{};  ///< host -> device
  link_model d2h{};  ///< device -> host
  link_model d2d{};  ///< device -> device
  link_model h2h{};  ///< host -> host
  link_model s2h{};  ///< storage -> host (a file read)
  link_model h2s{};  ///< host -> storage (a file write)

  /// @brief Every link unthrottled (the wall-clock default).
  [[nodiscard]] static constexpr sim_links unthrottled() noexcept { return {}; }
  /// @brief h2d and d2h use `host_link`; d2d is hbm(), h2h is host_memcpy(); the storage
  ///        links are a PCIe 4 NVMe drive (link_model::nvme4_read(), nvme4_write()).
  [[nodiscard]] static constexpr sim_links from_host_link(link_model host_link) noexcept
  {
    return {host_link, host_link, link_model::hbm(), link_model::host_memcpy(), link_model::nvme4_read(),
            link_model::nvme4_write()};
  }
  /// @brief The model of one direction.
  [[nodiscard]] TIERPOOL_EXPORT link_model const& get(sim_link link) const noexcept;

  /// @brief Equal when every direction's model is.
  friend constexpr bool operator==(sim_links const&, sim_links const&) noexcept = default;
};

/**
 * @brief Kinds of fallible call that fault rules and call counters distinguish.
 *
 * | kind          | calls                                              |
 * |---------------|----------------------------------------------------|
 * | allocate      | allocate                                           |
 * | copy          | copy_async                                         |
 * | event         | create_event, record_event, stream_wait_event      |
 * | stream_create | create_stream                                      |
 * | prefetch      | prefetch_async, advise                             |
 * | host_func     | launch_host_func                                   |
 * | compute       | sim_backend::compute_async                         |
 * | any           | (rules only) every call above                      |
 *
 * A call is counted (and may be failed) only once its arguments and handles are valid:
 * a call rejected with invalid_value or not_supported counts nothing. The fault check
 * comes before the call's effect, so an allocate that would run out of memory is counted.
 */
enum class sim_call : std::uint8_t { allocate, copy, event, stream_create, prefetch, host_func, compute, any };
/// @brief Number of concrete call kinds (sim_call::any excluded).
inline constexpr std::size_t sim_call_count = 7;

/// @brief Lower-case name of a call kind ("allocate", "copy", ..., "any").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(sim_call kind) noexcept;

/**
 * @brief One fault rule. A matching call fails with status::injected_fault and has no
 *        side effect when either trigger fires.
 *
 * - `nth > 0`: fail the nth matching call (1-based) counted from when the rule was installed.
 * - `probability > 0`: fail each matching call with this probability. The decision for
 *   the i-th matching call is a pure function of (seed, rule index, i), so the same seed
 *   fails the same call indices in every run.
 */
struct sim_fault_rule {
  sim_call kind{sim_call::any};  ///< which calls the rule watches
  std::uint64_t nth{0};          ///< fail exactly this matching call (1-based); 0 = off
  double probability{0.0};       ///< fail each matching call with this probability, in [0, 1]
};

/// @brief Fault injection settings: a seed and a list of rules (all rules are checked).
struct sim_fault_options {
  std::uint64_t seed{0};              ///< seed of the probabilistic rules
  std::vector<sim_fault_rule> rules;  ///< empty: no faults
};

/**
 * @brief Host time the calls of each kind take on a virtual clock (Note [Host time per
 *        call], sim_backend.cpp): each such call moves now() forward by its cost before it
 *        takes effect, so work is enqueued no earlier than the host could have enqueued it.
 *
 * On a GPU a program whose kernels and copies are small is bound by the host: each CUDA
 * call costs microseconds, and the device waits for the next one. All zero (the default)
 * is a host that takes no time, as before. `tierpool suite calibrate` fits them to a
 * measured GPU (docs/chapters/suite.md, "Calibration").
 */
struct sim_host_costs {
  tick copy{0};       ///< copy_async, ns
  tick event{0};      ///< create_event, record_event, stream_wait_event, ns
  tick compute{0};    ///< compute_async (a kernel's launch), ns
  tick host_func{0};  ///< launch_host_func, ns
  /// @brief The cost of a call of `kind` (0 for the kinds not listed).
  [[nodiscard]] constexpr tick of(sim_call kind) const noexcept
  {
    switch (kind) {
      case sim_call::copy: return copy;
      case sim_call::event: return event;
      case sim_call::compute: return compute;
      case sim_call::host_func: return host_func;
      default: return 0;
    }
  }
  /// @brief True when every cost is zero.
  [[nodiscard]] constexpr bool none() const noexcept { return copy == 0 && event == 0 && compute == 0 && host_func == 0; }
  /// @brief Equal when every cost is.
  friend constexpr bool operator==(sim_host_costs const&, sim_host_costs const&) noexcept = default;
};

/// @brief Construction options of the sim backend (VMA-style create-info aggregate).
struct sim_options {
  std::size_t device_bytes{256_MiB};       ///< device capacity; allocations beyond -> out_of_memory
  std::size_t pinned_host_bytes{0};        ///< pinned host limit; 0 = unbounded
  std::size_t managed_bytes{256_MiB};      ///< managed capacity; 0 = no managed memory (not_supported)
  /// Report caps().managed_shares_device, as a GPU does (the pool then sizes a default
  /// managed tier beside its device tiers). The sim's memory stays separate either way.
  bool managed_shares_device{false};
  sim_memory_mode memory{sim_memory_mode::real};  ///< real bytes or phantom ranges
  sim_clock_mode clock{sim_clock_mode::wall};     ///< wall clock or virtual timeline
  /// Link models. Unset: wall clock -> sim_links::unthrottled(),
  /// virtual clock -> sim_links::from_host_link(link_model::pcie4()).
  std::optional<sim_links> links{};
  sim_fault_options faults{};              ///< faults active from construction
  std::uint32_t max_copy_streams{16};      ///< reported in caps()
  std::string device_name{};               ///< caps().device_name override; empty = generated
  /// Which simulated device this is, 0..255 (caps().device_ordinal). Backends of different
  /// ordinals are different devices: each refuses the other's streams and events (and,
  /// with phantom memory, pointers) with invalid_value and a last_error() naming the
  /// device they belong to. select_backend() sets it from its `device` argument
  /// (pool_options::device). A generated device_name names it from device 1 on
  /// ("simulated device 1 (...)"; device 0 keeps "simulated device (...)").
  int device_ordinal{0};
  /// caps().concurrent_managed_access: false models a GPU on which the host may not touch
  /// managed memory while any kernel runs (compute capability < 6, Windows, some Jetson
  /// boards). As there, prefetch_async and advise are then not supported; a pool refuses
  /// a managed tier on such a device (docs/chapters/tiers.md).
  bool concurrent_managed_access{true};
  /// Run the host functions of all streams one at a time, on one executor, in the order
  /// they become ready, as a CUDA driver may (Note [One host-function executor],
  /// wall_timeline.cpp; on a virtual clock they run at enqueue under one lock). A host
  /// function that waits for work of another stream then hangs, as it can on CUDA.
  bool serialize_host_functions{false};
  /// Hide the virtual clock's device times from the pool, as a real GPU does: known_completion
  /// and known_stream_time give nothing, and the pool measures device time with timed events
  /// (event_elapsed) once they complete, which on the virtual clock is when the host waits.
  /// For testing the pool's paths for a real device on the virtual clock; ignored on the wall clock.
  bool hide_device_times{false};
  /// Wall clock: a copy on an unthrottled link, or an event record, enqueued on an idle
  /// stream runs at once on the calling thread (Note [Idle streams run inline],
  /// wall_timeline.cpp). False hands every op to the stream's worker, so that copies are
  /// truly asynchronous (the stress tests run both ways). No effect on a virtual clock.
  bool inline_idle_copies{true};
  /// Virtual clock: keep every copy's and kernel's span of device time, for
  /// sim_backend::spans() (a timeline to draw, or summarize_activity). Off by default: a
  /// long run keeps one 40-byte span per copy and kernel. No effect on a wall clock.
  bool record_spans{false};
  /// Virtual clock: the host time each kind of call takes (sim_host_costs). No effect on a
  /// wall clock, where the host's time is its own.
  sim_host_costs host_costs{};
};

/// @brief The work captured on a sim stream (sim_backend::end_capture), to launch again
///        and again (sim_backend::launch_graph); the simulated counterpart of a
///        `cudaGraphExec_t`. Zero is no graph.
struct sim_graph {
  std::uint64_t value{0};  ///< 0: none
  /// @brief True for a graph from end_capture.
  [[nodiscard]] explicit constexpr operator bool() const noexcept { return value != 0; }
};

/// @brief Traffic of one link since construction.
struct sim_link_stats {
  std::uint64_t copies{0};   ///< copies (and prefetches) carried
  std::uint64_t bytes{0};    ///< bytes carried
  tick busy_ns{0};           ///< modelled occupancy, ns (sum of transfer_ns)
};

/// @brief What a span of simulated device time was spent on.
enum class sim_span_kind : std::uint8_t {
  copy,     ///< a copy on a link
  compute,  ///< a kernel (sim_backend::compute_async)
};

/// @brief One copy or kernel on the virtual clock (sim_options::record_spans).
struct sim_span {
  sim_span_kind kind{sim_span_kind::copy};  ///< copy or kernel
  sim_link link{sim_link::h2d};             ///< a copy's link (h2d for a kernel: unused)
  std::uint64_t stream{0};                  ///< the stream's handle value (0: the default stream)
  tick start{0};                            ///< when it started, ns of virtual time
  tick end{0};                              ///< when it completed
  std::uint64_t bytes{0};                   ///< a copy's bytes (0 for a kernel)
};

/**
 * @brief How device time was spent, from spans (summarize_activity): every instant of
 *        [0, end) is in exactly one state, a mask of what was busy then.
 *
 * State bits: 1 = some stream runs a kernel, 2 = the h2d link carries a copy, 4 = the d2h
 * link carries a copy (d2d and h2h copies are not counted). `ns[0]` is time when nothing
 * ran, `ns[2]` time when only a copy-in ran: a copy nothing hid.
 */
struct sim_activity {
  std::array<tick, 8> ns{};  ///< ns spent in each state (index: the mask)

  /// @brief Total time: `end`.
  [[nodiscard]] tick total_ns() const noexcept;
  /// @brief Time some kernel ran, with or without copies.
  [[nodiscard]] tick compute_ns() const noexcept;
  /// @brief Time a kernel ran while a link carried a copy: copies hidden behind compute.
  [[nodiscard]] tick overlapped_ns() const noexcept;
  /// @brief Time copies ran with no kernel: the copies' exposed (not hidden) time.
  [[nodiscard]] tick exposed_copy_ns() const noexcept;
};

/**
 * @brief Sum up where the time of [0, end) went, given the spans of one run.
 * @param spans Copies and kernels (sim_backend::spans()); any order; parts past `end` are cut.
 * @param end   The end of the run (its makespan).
 * @throws std::bad_alloc
 */
[[nodiscard]] TIERPOOL_EXPORT sim_activity summarize_activity(std::span<sim_span const> spans, tick end);
/**
 * @brief summarize_activity over the window [begin, end) only (a phase of a run).
 * @throws std::bad_alloc
 */
[[nodiscard]] TIERPOOL_EXPORT sim_activity summarize_activity(std::span<sim_span const> spans, tick begin, tick end);

/**
 * @brief The simulated backend.
 *
 * Thread safety: every member may be called concurrently from any thread.
 *
 * Ownership: not copyable or movable; owns its memory (freed at destruction), its streams
 * and, in wall mode, one worker thread per stream (the destructor drains and joins them).
 *
 * Stream semantics: as backend.hpp. Wall clock: a stream is an in-order queue run by its
 * worker thread; copies and host functions run there. Virtual clock: copies take effect at
 * enqueue (so data effects follow enqueue order, which respects stream order and event
 * waits) and get a completion time
 * `start + link.transfer_ns(bytes)`, where start is the first time from `max(now, stream
 * tail, waited events)` at which the link is idle for the whole copy (a ready copy may
 * fill a gap before one enqueued earlier on another stream that waits for an event); the
 * link is busy from start to completion. Host functions also run at enqueue (on the calling
 * thread, no lock held), so they observe bytes in enqueue order; now() moves only on
 * synchronize_stream / synchronize_event (to the awaited completion time) and advance_*.
 *
 * @code
 * tierpool::sim_options o;
 * o.clock = tierpool::sim_clock_mode::virtual_clock;
 * o.links = tierpool::sim_links::from_host_link(tierpool::link_model::pcie4());
 * tierpool::sim_backend be{o};
 * void* d = nullptr;
 * TIERPOOL_TRY(be.allocate(tierpool::tier_kind::device, 1_MiB, &d));
 * @endcode
 */
class TIERPOOL_EXPORT sim_backend final : public backend {
 public:
  /**
   * @brief Build a sim backend.
   * @param options Capacities, modes, links and faults.
   * @throws tierpool::logic_error if a link has a negative or non-finite bandwidth, a fault
   *         probability is outside [0, 1], or device_bytes is 0.
   * @throws std::system_error if the default stream's worker cannot be started (wall mode).
   */
  explicit sim_backend(sim_options options = {});
  /// @brief Drains every stream (wall: joins the workers), then frees all memory.
  ~sim_backend() override;
  sim_backend(sim_backend const&) = delete;
  sim_backend& operator=(sim_backend const&) = delete;

  // ---- backend interface (see backend.hpp) ----
  [[nodiscard]] backend_caps const& caps() const noexcept override;
  [[nodiscard]] status allocate(tier_kind kind, std::size_t bytes, void** out, int numa_node = -1) noexcept override;
  void deallocate(tier_kind kind, void* ptr, std::size_t bytes) noexcept override;
  [[nodiscard]] status device_memory_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept override;
  [[nodiscard]] status create_stream(stream_handle* out, int priority = 0) noexcept override;
  void destroy_stream(stream_handle s) noexcept override;
  [[nodiscard]] status synchronize_stream(stream_handle s) noexcept override;
  /// Sim's native streams are its own handles: `native` must be the value of a live stream
  /// from create_stream() (or the default stream's 0, refused as null). Adoption changes no
  /// ownership here; forget_stream() is a no-op.
  [[nodiscard]] status adopt_stream(void* native, stream_handle* out) noexcept override;
  [[nodiscard]] status create_event(event_handle* out) noexcept override;
  void destroy_event(event_handle e) noexcept override;
  [[nodiscard]] status record_event(event_handle e, stream_handle s) noexcept override;
  [[nodiscard]] status query_event(event_handle e) noexcept override;
  [[nodiscard]] status synchronize_event(event_handle e) noexcept override;
  [[nodiscard]] status stream_wait_event(stream_handle s, event_handle e) noexcept override;
  [[nodiscard]] status copy_async(copy_desc const& d, stream_handle s) noexcept override;
  [[nodiscard]] status prefetch_async(void* ptr, std::size_t bytes, memory_location to,
                                      stream_handle s) noexcept override;
  [[nodiscard]] status advise(void* ptr, std::size_t bytes, mem_advice advice,
                              memory_location where) noexcept override;
  [[nodiscard]] status launch_host_func(stream_handle s, host_fn fn, void* user_data) noexcept override;
  [[nodiscard]] tick now() const noexcept override;
  /// Virtual clock: event_time(e); wall clock or sim_options::hide_device_times: std::nullopt.
  [[nodiscard]] std::optional<tick> known_completion(event_handle e) const noexcept override
  {
    return hide_times_ ? std::nullopt : event_time(e);
  }
  /// Virtual clock: stream_tail(s); wall clock or sim_options::hide_device_times: std::nullopt.
  [[nodiscard]] std::optional<tick> known_stream_time(stream_handle s) const noexcept override
  {
    return hide_times_ ? std::nullopt : stream_tail(s);
  }
  /// Virtual clock: the difference of the two events' times once now() has passed both;
  /// wall clock: not_supported.
  [[nodiscard]] status event_elapsed(event_handle from, event_handle to, tick* ns) noexcept override;
  /// True between begin_capture(s) and end_capture(s).
  [[nodiscard]] status is_capturing(stream_handle s, bool* out) const noexcept override;
  [[nodiscard]] bool capture_underway() const noexcept override;
  [[nodiscard]] std::string last_error() const override;

  // ---- sim-only ----
  /**
   * @brief Queue a simulated kernel that occupies `s` for `duration` ns (no link).
   * @return ok, invalid_value (unknown stream), or injected_fault (kind compute).
   * Wall clock: the worker sleeps for `duration`. Virtual: the stream tail moves.
   */
  [[nodiscard]] status compute_async(stream_handle s, tick duration) noexcept;
  /// @brief The link models the copies are timed by (sim_options::links, resolved: a
  ///        virtual clock's default is sim_links::from_host_link(pcie4); a wall clock's, unthrottled).
  [[nodiscard]] sim_links const& links() const noexcept;
  /**
   * @brief Virtual clock only: move now() forward to `t` (no-op if `t <= now()`).
   * @return ok, or not_supported on a wall clock.
   */
  [[nodiscard]] status advance_to(tick t) noexcept;
  /// @brief Virtual clock only: advance_to(now() + d). @return ok or not_supported.
  [[nodiscard]] status advance_by(tick d) noexcept;
  /**
   * @brief Virtual clock only: completion time of the last record of `e` (0 if never
   *        recorded). @return std::nullopt for an unknown event or on a wall clock.
   */
  [[nodiscard]] std::optional<tick> event_time(event_handle e) const noexcept;
  /**
   * @brief Virtual clock only: completion time of the last work queued on `s`.
   * @return std::nullopt for an unknown stream or on a wall clock.
   */
  [[nodiscard]] std::optional<tick> stream_tail(stream_handle s) const noexcept;

  /**
   * @brief Start capturing `s`, as cudaStreamBeginCapture in thread-local mode: until
   *        end_capture(s), copies, kernels (compute_async) and host functions queued on
   *        `s` are recorded into a graph instead of running.
   *
   * Meanwhile the calls CUDA forbids are refused with invalid_value and *invalidate* the
   * capture (end_capture then fails, naming the first): on the calling thread, every host
   * wait or event query (synchronize_stream, synchronize_event, query_event) and
   * allocate / deallocate; from any thread, synchronize_stream(s), and record_event,
   * stream_wait_event or prefetch_async on `s` (the simulated graph holds copies, kernels
   * and host functions only). is_capturing() is always allowed.
   * @param s A stream from create_stream() (the default stream cannot be captured).
   * @return ok; invalid_value (unknown or default stream, already capturing).
   */
  [[nodiscard]] status begin_capture(stream_handle s) noexcept;
  /**
   * @brief End the capture of `s`.
   * @param s   The stream being captured.
   * @param out Receives the graph (`{}` on failure): its work runs each time it is launched.
   * @return ok; invalid_value (not capturing, null `out`, or the capture was invalidated:
   *         last_error() names the call that did it).
   */
  [[nodiscard]] status end_capture(stream_handle s, sim_graph* out) noexcept;
  /**
   * @brief Queue the work of graph `g` on `s`, in the order it was captured (the data
   *        effects of its copies and its host functions run again).
   * @param g The graph, from end_capture().
   * @param s The stream to run it on (not one being captured).
   * @return ok or invalid_value (unknown graph or stream, a stream being captured).
   */
  [[nodiscard]] status launch_graph(sim_graph g, stream_handle s) noexcept;
  /// @brief Forget graph `g` (launches already queued still run). Unknown graphs are ignored.
  void destroy_graph(sim_graph g) noexcept;
  /// @brief Calls that invalidated a capture since construction (see begin_capture).
  [[nodiscard]] std::uint64_t capture_violations() const noexcept;

  /**
   * @brief Replace the fault rules (takes effect for the next call; nth counts restart).
   * @throws tierpool::logic_error if a probability is outside [0, 1].
   */
  void set_faults(sim_fault_options faults);
  /// @brief Remove every fault rule.
  void clear_faults() noexcept;
  /// @brief Counted calls of `kind` since construction or reset_call_counts(); `any`: all kinds.
  [[nodiscard]] std::uint64_t call_count(sim_call kind) const noexcept;
  /// @brief Zero the call counters (fault rules keep their own counts).
  void reset_call_counts() noexcept;
  /// @brief Calls failed with injected_fault since construction.
  [[nodiscard]] std::uint64_t faults_injected() const noexcept;

  /// @brief Bytes currently allocated of `kind` (rounded up to 256 per allocation).
  [[nodiscard]] std::size_t allocated_bytes(tier_kind kind) const noexcept;
  /// @brief Number of live allocations of all kinds.
  [[nodiscard]] std::size_t live_allocations() const noexcept;
  /// @brief deallocate() calls rejected (foreign pointer or wrong kind) since construction.
  [[nodiscard]] std::uint64_t invalid_deallocations() const noexcept;
  /// @brief Operations accepted onto streams (copies, records, waits, host funcs, ...) since construction.
  [[nodiscard]] std::uint64_t enqueued_operations() const noexcept;
  /// @brief Traffic carried by `link` since construction.
  [[nodiscard]] sim_link_stats link_stats(sim_link link) const noexcept;
  /// @brief The options this backend was built with (links resolved, faults as at construction).
  [[nodiscard]] sim_options const& options() const noexcept;
  /**
   * @brief Virtual clock with sim_options::record_spans: every copy and kernel so far, in
   *        enqueue order. Empty otherwise (a wall clock records none).
   * @throws std::bad_alloc
   */
  [[nodiscard]] std::vector<sim_span> spans() const;

 private:
  struct impl;  // runtime/backends/sim/sim_backend.cpp
  std::unique_ptr<impl> impl_;
  bool hide_times_{false};  ///< sim_options::hide_device_times on a virtual clock
};

/**
 * @brief Build a sim backend.
 * @param options Capacities, modes, links and faults (see sim_options).
 * @return A new backend; never null.
 * @throws tierpool::logic_error on invalid options (see sim_backend::sim_backend).
 */
[[nodiscard]] TIERPOOL_EXPORT std::unique_ptr<backend> make_sim_backend(sim_options const& options = {});

}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file replay.hpp
 * @brief The replay simulator (docs/chapters/replay.md): a trace replayed per policy × capacity,
 *        either through the real tierpool::pool on a sim backend with phantom memory and a
 *        virtual clock ("pool mode"), or as a plain object cache ("cache mode"), with the
 *        figures of the tiering workloads (docs/chapters/benchmarks.md) and their table,
 *        JSON, CSV and SVG forms.
 *
 * @defgroup replay Replay
 * @{
 *
 * A replay has three steps. (1) compiled_trace::compile() turns trace events into compact
 * arrays once: trace ids become dense indices, every access carries the position of the
 * same tensor's next access (the forecast Belady's MIN needs), sizes are resolved.
 * (2) run() replays one (policy, capacity) pair; run_grid() replays every pair in
 * parallel (oneTBB), each run independent and deterministic. (3) format_table(),
 * to_json(), to_csv() and to_svg() render the results in grid order.
 *
 * Cache mode follows the object-cache semantics of libCacheSim-style simulators exactly
 * (see docs/chapters/replay.md): a hit does not change the cached size; a miss of an object
 * larger than the capacity is not admitted; otherwise victims proposed by the policy are
 * evicted until `used + size <= capacity` and the object is inserted.
 *
 * @code
 * namespace tr = tierpool::replay;
 * auto events = tierpool::trace::read_all("cloudphysics.oracleGeneral.bin");
 * auto trace = tr::compiled_trace::compile(events, {.loop = 1});
 * tr::grid_options g;
 * g.mode = tr::replay_mode::cache;
 * g.policies = {"lru", "arc"};
 * g.capacities = tr::parse_capacities("1%,10%,50%");
 * auto results = tr::run_grid(trace, g);
 * std::fputs(tr::format_table(results).c_str(), stdout);
 * @endcode
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/export.hpp>
#include <tierpool/tier.hpp>
#include <tierpool/trace.hpp>

namespace tierpool {

class policy_registry;

namespace replay {

namespace detail {
struct compiled_data;
}  // namespace detail

/// @brief How a trace is replayed.
enum class replay_mode : std::uint8_t {
  pool,   ///< the real tierpool::pool on a sim backend (phantom memory, virtual clock)
  cache,  ///< a plain object cache driven by the policy (no pool, no clock)
  /// CUDA managed memory without hints (demand paging, LRU page eviction): the UVM
  /// baseline, a model on its own virtual clock (docs/chapters/replay.md, "UVM baseline")
  uvm,
  /// CUDA managed memory with cudaMemPrefetchAsync of each kernel's operands one kernel ahead
  uvm_hints,
};

/// @brief "pool", "cache", "uvm" or "uvm-hints".
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(replay_mode m) noexcept;
/// @brief True for replay_mode::uvm and replay_mode::uvm_hints.
[[nodiscard]] constexpr bool is_uvm(replay_mode m) noexcept
{
  return m == replay_mode::uvm || m == replay_mode::uvm_hints;
}
/// @brief Parse "pool", "cache", "uvm" or "uvm-hints". @throws tierpool::logic_error naming the accepted values
[[nodiscard]] TIERPOOL_EXPORT replay_mode parse_replay_mode(std::string_view text);

/**
 * @brief A device capacity: absolute bytes, or a fraction of the trace's working set.
 *
 * The base of a fraction is the working set in cache mode (bytes of every distinct object
 * at its first size, or the object count with `ignore_size`) and the peak live bytes in
 * pool mode (equal to the working set for a trace that never frees). The result is
 * truncated to an integer.
 */
struct capacity_spec {
  bool relative{false};    ///< true: `fraction` of the base; false: `bytes`
  double fraction{0.0};    ///< in (0, 1] when relative (e.g. 0.1 for "10%")
  std::uint64_t bytes{0};  ///< when absolute
  std::string label;       ///< the text it was parsed from ("10%", "64MiB")

  /// @brief The capacity for a trace whose base is `base` (truncated; at least 1 when relative).
  [[nodiscard]] TIERPOOL_EXPORT std::uint64_t resolve(std::uint64_t base) const noexcept;
};

/**
 * @brief Parse one capacity: `P%` (0 < P <= 100, decimals allowed) or a byte size
 *        (`64MiB`, `4096`, see detail::parse_byte_size).
 * @throws tierpool::logic_error for malformed text, 0, or a percentage above 100
 */
[[nodiscard]] TIERPOOL_EXPORT capacity_spec parse_capacity(std::string_view text);
/// @brief Parse a comma-separated list of capacities. @throws tierpool::logic_error as parse_capacity, or for an empty list
[[nodiscard]] TIERPOOL_EXPORT std::vector<capacity_spec> parse_capacities(std::string_view list);

/// @brief Options of compiled_trace::compile().
struct compile_options {
  std::uint32_t loop{1};     ///< repeat the trace this many times (>= 1)
  bool ignore_size{false};   ///< every object has size 1 (cache mode only: capacities count objects)
  /// Also build the pool-mode array (32 bytes per event; the cache-mode array, 12 bytes per
  /// access, is always built). Not with ignore_size.
  bool pool{true};
};

/**
 * @brief A trace in the compact form the replay loops read: built once, shared read-only
 *        by every run.
 *
 * Thread safety: immutable after compile(); any number of runs may read it at once.
 * Ownership: a cheap handle (copies share the data).
 * Limits: at most 2^32 - 2 accesses (after looping) and 2^32 - 1 distinct ids.
 */
class TIERPOOL_EXPORT compiled_trace {
 public:
  /**
   * @brief Compile events (in order) into the replay form.
   * @param events The trace.
   * @param options Looping and size handling.
   * @return The compiled trace.
   * @throws tierpool::logic_error if `loop` is 0, the trace is too long (looping included;
   *         checked before anything is allocated), an access with `bytes == 0` names an id
   *         that was never allocated, an allocate has 0 bytes, a size passes 2^60 - 1 (not
   *         with ignore_size), or the working set, the peak live bytes, the requested bytes
   *         or the compute durations sum past 2^64 - 1
   */
  [[nodiscard]] static compiled_trace compile(std::span<trace::event const> events, compile_options options = {});
  /**
   * @brief Compile the events `events` yields to its end, without holding them: the memory
   *        is the compact arrays (with `loop` > 1, also 24 bytes per event of one pass).
   * @param events The trace, read to its end.
   * @param options Looping and size handling.
   * @param expected_events How many events to reserve for (a hint; 0: unknown).
   * @return The compiled trace.
   * @throws as compile(span), and what the reader throws (tierpool::trace_error: a malformed or truncated record, a read error)
   */
  [[nodiscard]] static compiled_trace compile(trace::reader& events, compile_options options = {},
                                              std::uint64_t expected_events = 0);
  /**
   * @brief open_reader(path, reader) and compile(reader&), reserving from the file's size
   *        where its records have a fixed size (oracleGeneral). A pipe or FIFO works.
   * @param path The trace file.
   * @param reader How to read it (format, as trace::open_reader).
   * @param options Looping and size handling.
   * @return The compiled trace.
   * @throws as open_reader and compile(reader&)
   */
  [[nodiscard]] static compiled_trace compile_file(std::filesystem::path const& path,
                                                   trace::reader_options const& reader = {},
                                                   compile_options options = {});

  /// @brief Events replayed (looping included).
  [[nodiscard]] std::uint64_t events() const noexcept;
  /// @brief Access events (requests), looping included.
  [[nodiscard]] std::uint64_t requests() const noexcept;
  /// @brief Distinct tensor / object ids.
  [[nodiscard]] std::uint64_t objects() const noexcept;
  /// @brief Sum over distinct ids of the first size (the object count with ignore_size).
  [[nodiscard]] std::uint64_t working_set_bytes() const noexcept;
  /// @brief SUM: host memory the compiled arrays take (what a replay holds for the trace).
  [[nodiscard]] std::uint64_t compiled_bytes() const noexcept;
  /// @brief Highest sum of the sizes of live ids (alive from allocate or first access to free).
  [[nodiscard]] std::uint64_t peak_live_bytes() const noexcept;
  /// @brief Sum of compute durations over all streams, ns.
  [[nodiscard]] std::uint64_t compute_ns() const noexcept;
  /// @brief Distinct trace streams of access and compute events.
  [[nodiscard]] std::uint32_t streams() const noexcept;
  /// @brief The options it was compiled with.
  [[nodiscard]] compile_options const& options() const noexcept;
  /// @brief The capacity `spec` means for this trace in `mode` (see capacity_spec).
  [[nodiscard]] std::uint64_t resolve(capacity_spec const& spec, replay_mode mode) const noexcept;

  /// @brief Internal arrays (runtime/replay/detail); opaque to users.
  [[nodiscard]] detail::compiled_data const& data() const noexcept { return *data_; }

 private:
  std::shared_ptr<detail::compiled_data const> data_;
};

/**
 * @brief Figures of one (policy, capacity) replay. Times are virtual (seconds of the
 *        simulated machine) except `wall_seconds` and `requests_per_second`.
 *
 * Units: COUNT or SUM of bytes, as each field says.
 */
struct replay_result {
  std::string policy;                  ///< the policy spec as given
  std::string prefetch{"none"};        ///< the prefetch predictor spec (pool mode; "none" otherwise)
  std::string capacity_label;          ///< the capacity as given ("10%", "64MiB")
  std::uint64_t capacity_bytes{0};     ///< SUM: resolved capacity (objects with ignore_size)
  replay_mode mode{replay_mode::pool}; ///< how it was replayed
  bool ignore_size{false};             ///< sizes were ignored: "bytes" count objects
  std::uint64_t events{0};             ///< COUNT: events replayed (accesses, allocates, frees, ...)
  std::uint64_t requests{0};           ///< COUNT: access events
  std::uint64_t hits{0};               ///< COUNT: accesses served from the device / cache
  std::uint64_t misses{0};             ///< COUNT: the other accesses (unserved ones included)
  std::uint64_t unserved{0};           ///< COUNT: accesses of an object larger than the capacity (never admitted)
  std::uint64_t bytes_requested{0};    ///< SUM: requested size of every access
  std::uint64_t bytes_missed{0};       ///< SUM: cache: requested size of every miss; pool: bytes acquires copied in
  std::uint64_t bytes_h2d{0};          ///< SUM: bytes copied into the device (cache: admitted misses that need their bytes)
  std::uint64_t bytes_d2h{0};          ///< SUM: bytes written back (cache: evicted objects written since their insert)
  std::uint64_t copies_h2d{0};         ///< COUNT: copies in bytes_h2d
  std::uint64_t copies_d2h{0};         ///< COUNT: copies in bytes_d2h
  std::uint64_t evictions{0};          ///< COUNT: objects / copies evicted from the device
  std::uint64_t prefetches{0};         ///< COUNT: pool mode: prefetches that issued a copy
  std::uint64_t prefetches_late{0};    ///< COUNT: pool mode: prefetched copies a stream had to wait for (device time)
  double prefetch_lateness_seconds{0.0};  ///< pool mode: how long, in all
  /// COUNT: pool mode: prefetched copies complete before the stream reached their use (device time)
  std::uint64_t prefetches_on_time{0};
  double prefetch_lead_seconds{0.0};  ///< pool mode: how long before their use those completed, in all
  std::uint64_t prefetches_wasted{0};     ///< COUNT: pool mode: prefetched copies evicted or freed unused
  std::uint64_t prefetch_wasted_bytes{0}; ///< SUM: pool mode: their bytes
  std::uint64_t planner_relearns{0};      ///< COUNT: pool mode: times the planner fell back and learned again
  /// COUNT: pool mode, `plan`: periods timed with and without planned prefetches (Note
  /// [Measuring whether prefetching pays])
  std::uint64_t planner_periods_prefetching{0};
  std::uint64_t planner_periods_without{0};  ///< COUNT
  std::uint64_t early_write_backs{0};  ///< COUNT: pool mode: write-backs the planner made early
  /// COUNT: pool mode: of those, written again or freed before their device copy left (eviction, demote, shrink)
  std::uint64_t early_write_backs_wasted{0};
  std::uint64_t early_write_back_wasted_bytes{0};  ///< SUM: pool mode: their bytes
  /// COUNT: pool mode: copies dropped for recompute (no write-back; pool_stats::evicted_recompute)
  std::uint64_t evicted_recompute{0};
  std::uint64_t rebuilds{0};           ///< COUNT: pool mode: recipes run (each its cost of compute on the asking stream)
  /// COUNT: pool mode: device-tier placements that evicted although the tier's free bytes
  /// covered the request (no free block held it: fragmentation; tier_stats::fragmented_evictions)
  std::uint64_t fragmented_evictions{0};
  std::uint64_t compactions{0};     ///< COUNT: pool mode: device-tier placements made by compacting (--compaction)
  std::uint64_t compacted_bytes{0}; ///< SUM: pool mode: bytes compaction moved within the device tier
  double compute_seconds{0.0};         ///< the longest stream's compute time
  double stall_seconds{0.0};           ///< time streams waited (see docs/chapters/replay.md)
  double makespan_seconds{0.0};        ///< virtual end time
  /// The ideal time, a floor no policy or prefetcher beats: pool mode max(the longest
  /// stream's compute, must_move_h2d on the h2d link, must_move_d2h on the d2h link); cache
  /// mode (one blocking timeline) their sum (docs/chapters/replay.md, "The ideal time").
  double ideal_seconds{0.0};
  /// Pool and UVM modes: a floor on any schedule's makespan from the trace's phase markers,
  /// which the ideal time does not see: write-backs wait for their data to be written and
  /// copy-ins for room (docs/chapters/replay.md, "The phase floor"); 0 where it does not
  /// apply (no markers, kernels on several streams). Never above the makespan.
  double phase_floor_seconds{0.0};
  std::uint64_t must_move_h2d{0};      ///< SUM: bytes any policy must copy in at this capacity (fractional Belady MIN)
  std::uint64_t must_move_d2h{0};      ///< SUM: bytes any policy must write back at this capacity
  /// (bytes_h2d + bytes_d2h) / the reference policy's on the same capacity; set by run_grid
  /// when grid_options::reference is among the policies (the CLI's reference is belady).
  std::optional<double> moved_vs_belady{};
  /// Pool mode with run_options::record_activity (or record_timeline): where the device's
  /// time went (exposed copies, copies hidden behind kernels, idle); absent otherwise.
  std::optional<sim_activity> activity{};
  /// With `activity`: the same per phase label (the trace's `phase LABEL` markers; labels
  /// that differ only in a trailing number are one, "step #"), summed over the label's
  /// windows, in first-seen order; "(start)" is the time before the first marker. Windows
  /// of no length are left out.
  struct phase_activity {
    std::string name;       ///< the label ("forward", "step #")
    sim_activity activity;  ///< its windows' states
  };
  std::vector<phase_activity> phase_activities{};  ///< per phase label (see phase_activity)
  /// Pool mode with run_options::record_timeline: every copy and kernel of the run (to_chrome_trace).
  std::shared_ptr<std::vector<sim_span> const> timeline{};
  /// With `timeline`: the sim stream handle value of each trace stream, by trace stream index.
  std::vector<std::uint64_t> timeline_streams{};
  /// With `activity`: the trace's phase markers (`phase LABEL` events) in order, each with
  /// the device time at which it falls: when every kernel and copy its trace streams had
  /// been given before it completes. A phase runs from its marker to the next one.
  struct phase_time {
    std::string name;  ///< the marker's label
    tick at{0};        ///< ns of virtual time
  };
  std::vector<phase_time> phases{};  ///< the markers and their device times (see phase_time)
  /// With `activity`: the device time of each iteration, in order. An iteration starts at
  /// each marker of the first label that recurs (labels merged as in phase_activities:
  /// "forward", or "step #"), and runs to the next one (the last to the makespan); the
  /// time before the first is not an iteration. Empty when no label recurs.
  std::vector<double> iteration_seconds{};
  /// @brief The sum of iteration_seconds from the second on: the run once a schedule could
  ///        be learned (0 with fewer than two iterations).
  [[nodiscard]] double steady_seconds() const noexcept
  {
    double s = 0.0;
    for (std::size_t k = 1; k < iteration_seconds.size(); ++k) { s += iteration_seconds[k]; }
    return s;
  }
  double wall_seconds{0.0};            ///< host time the run took
  double requests_per_second{0.0};     ///< requests / wall_seconds
  double events_per_second{0.0};       ///< events / wall_seconds

  /// @brief hits / requests (0 when there are none).
  [[nodiscard]] double hit_ratio() const noexcept
  {
    return requests == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(requests);
  }
  /// @brief misses / requests (0 when there are none).
  [[nodiscard]] double miss_ratio() const noexcept
  {
    return requests == 0 ? 0.0 : static_cast<double>(misses) / static_cast<double>(requests);
  }
  /// @brief makespan / ideal: 1 is as fast as any schedule can be (1 when the ideal is 0).
  [[nodiscard]] double makespan_vs_ideal() const noexcept
  {
    return ideal_seconds <= 0.0 ? 1.0 : makespan_seconds / ideal_seconds;
  }
  /// @brief bytes_missed / bytes_requested (0 when nothing was requested).
  [[nodiscard]] double byte_miss_ratio() const noexcept
  {
    return bytes_requested == 0 ? 0.0 : static_cast<double>(bytes_missed) / static_cast<double>(bytes_requested);
  }
};

/**
 * @brief A tier the replayed pool puts between its device tier and its backing host tier
 *        (pool mode), e.g. the pinned staging tier a live pool has by default.
 *
 * A recorded run replays to the live run's copies only with the live pool's tier layout:
 * with a pinned tier, a clean device copy whose pinned copy was dropped must be written back
 * again, which a two-tier replay never does.
 */
struct staging_tier {
  tier_kind kind{tier_kind::pinned_host};  ///< pinned_host or host (a device or managed tier is refused)
  std::uint64_t capacity_bytes{0};         ///< > 0, rounded down to 256 bytes
};

/**
 * @brief Parse `KIND=SIZE[,KIND=SIZE...]` (`pinned_host=32MiB`, `host=1GiB`), top tier first.
 *        An empty string gives no tiers.
 * @throws tierpool::logic_error naming the bad item: an unknown or refused kind, a missing
 *         or malformed size, or a size under 256 bytes
 */
[[nodiscard]] TIERPOOL_EXPORT std::vector<staging_tier> parse_staging_tiers(std::string_view list);

/// Default page (fault granularity) of the UVM baseline: 64 KiB.
inline constexpr std::uint64_t kUvmDefaultPageBytes = 64ULL * 1024ULL;
/// Default cost of one fault batch of the UVM baseline, ns: 25 us (Zheng et al., HPCA 2016,
/// report 20-50 us per far fault; Allen & Ge, SC 2021, measure fault-batch service times in
/// the tens of microseconds). See docs/chapters/replay.md, "UVM baseline".
inline constexpr double kUvmDefaultFaultNs = 25'000.0;

/**
 * @brief Check the UVM baseline's options.
 * @throws tierpool::logic_error if `page_bytes` is not a power of two of at least 4 KiB, or
 *         `fault_ns` is not finite, negative, or above 1e9 (1 s)
 */
TIERPOOL_EXPORT void check_uvm_options(std::uint64_t page_bytes, double fault_ns);

/// @brief Reports progress of one run: events done so far and the total.
using progress_fn = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// @brief Options of one run.
struct run_options {
  replay_mode mode{replay_mode::pool};       ///< pool, cache, uvm or uvm_hints
  /// Policy spec for the policy registry (UVM modes: only "lru", what the driver does).
  std::string policy{"lru"};
  std::uint64_t capacity_bytes{0};           ///< device / cache capacity (objects with ignore_size); > 0
  std::string capacity_label{};              ///< copied into the result
  link_model link{link_model::pcie4()};      ///< host <-> device link, both directions
  /// Prefetch predictor spec (pool mode): "none", "sequence:depth=8", ... — handed to the
  /// replayed pool as pool_options::prefetch (policy_registry::create_predictor).
  std::string prefetch{"none"};
  /// Pool mode: tiers between the device tier and the backing host tier (parse_staging_tiers).
  std::vector<staging_tier> staging{};
  /// Pool mode: the capacity of the backing host tier, bytes. 0 (default): room to spare
  /// (4 x the trace's peak live bytes + 1 GiB), so that it never evicts. Smaller, it evicts
  /// into the storage tier (storage_bytes), or the run ends in out_of_memory without one.
  std::uint64_t host_capacity_bytes{0};
  /// Pool mode: a storage tier of this capacity below the backing host tier (phantom: no
  /// file; its copies are timed on the sim's s2h and h2s links, a PCIe 4 NVMe drive:
  /// link_model::nvme4_read(), nvme4_write()). 0 (default): none.
  std::uint64_t storage_bytes{0};
  /// Pool mode, with storage_bytes: the storage tier's links, reads (storage -> host) and
  /// writes (host -> storage), instead of the NVMe drive: for a compressed tier, the codec's
  /// measured decompress and compress rates (`tierpool codec measure`; docs/chapters/codecs.md).
  std::optional<link_model> storage_read_link{};
  std::optional<link_model> storage_write_link{};  ///< see storage_read_link
  /// Pool mode, with storage_bytes: the storage tier holds compressed copies at this ratio
  /// (logical bytes per stored byte, as `tierpool codec measure` gives it): it holds
  /// storage_bytes x ratio of tensors. With storage_read_link / storage_write_link at the
  /// codec's rates, a compressed tier. >= 1.
  double storage_ratio{1.0};
  /// Pool mode: tensors the trace marks recomputable (allocate hints, with their cost) get a
  /// recipe after each write: the pool drops them instead of writing them back when that
  /// costs less (pool::set_recompute), and a rebuild runs their cost on the asking stream.
  /// false: swap only (the hints are ignored). Lossy and no-compress hints set
  /// tensor_options::lossy_compression and compressible either way.
  bool recompute{true};
  /// Pool mode: the pool compacts its tiers before it evicts (pool_options::compaction),
  /// waiting for vacated blocks where that lets it (Note [Compacting around vacated blocks],
  /// runtime/migration/placement.cpp). Off by default, as in a pool.
  bool compaction{false};
  /// Pool mode: the trace's own `prefetch` events (a recorded program's pool::prefetch
  /// calls) are replayed as pool::prefetch. false: they are skipped, so that the rows
  /// compare the prefetchers of `prefetch` alone (`tierpool replay --no-trace-prefetch`).
  bool trace_prefetches{true};
  policy_registry const* registry{nullptr};  ///< null: the built-in policies
  progress_fn progress{};                    ///< called about every 2^20 events (may be empty)
  /// Cache mode, tests: when non-null, receives 1 (hit) or 0 (miss) per request, in order.
  std::vector<std::uint8_t>* outcomes{nullptr};
  /// UVM modes: the page, the granularity of faults and migrations (a power of two >= 4 KiB;
  /// 2 MiB models the driver's large-page blocks).
  std::uint64_t uvm_page_bytes{kUvmDefaultPageBytes};
  /// UVM modes: the cost of one fault batch (one kernel's faults on one tensor), ns.
  double uvm_fault_ns{kUvmDefaultFaultNs};
  /// UVM modes: evicting or handing to the host copies only dirty pages and drops clean
  /// ones, as if a host copy were kept. Off (default): every page leaving the device is
  /// copied, as the driver does (a managed page has one copy).
  bool uvm_drop_clean{false};
  /// Pool mode: record every copy and kernel on the virtual clock (sim_options::record_spans,
  /// 40 bytes each while the run lasts) and sum them up into replay_result::activity,
  /// replay_result::phase_activities and replay_result::phases.
  bool record_activity{false};
  /// Pool mode: as record_activity, and keep the copies and kernels in
  /// replay_result::timeline (40 bytes each, for as long as the result lives).
  bool record_timeline{false};
};

/**
 * @brief Replay one (policy, capacity) pair.
 *
 * Deterministic: the same trace and options give the same figures (except the wall-time
 * ones). Cache mode calls a policy that opted in (`CONCRETE_TYPE`, lru among the built-ins)
 * through its concrete type (no indirect calls).
 *
 * @throws tierpool::logic_error for an unknown policy (the registry's message lists the
 *         registered ones), capacity 0, an unknown prefetch predictor, `ignore_size` in pool
 *         mode, staging tiers in cache mode, a policy that proposes no victim while the
 *         cache must evict, --prefetch or staging tiers in a UVM mode, a policy other than
 *         lru, bad UVM options (check_uvm_options) or a capacity under one page in a UVM
 *         mode, or (pool and UVM modes) a link so slow that the copies pass the simulated
 *         clock's range (2^61 ns): the lower bound's before the run, the run's after it
 * @throws tierpool::backend_error in pool mode if the sim backend fails
 */
[[nodiscard]] TIERPOOL_EXPORT replay_result run(compiled_trace const& trace, run_options const& options);

/// @brief Options of run_grid(): every policy × every capacity.
struct grid_options {
  replay_mode mode{replay_mode::pool};       ///< pool, cache, uvm or uvm_hints
  std::vector<std::string> policies{"lru"};  ///< specs, in output order
  std::vector<capacity_spec> capacities{};   ///< in output order
  link_model link{link_model::pcie4()};      ///< as run_options::link
  std::string prefetch{"none"};              ///< as run_options::prefetch
  std::vector<staging_tier> staging{};       ///< as run_options::staging
  /// As run_options::host_capacity_bytes, resolved per trace (P% of its working set, or
  /// bytes); empty: room to spare.
  std::optional<capacity_spec> host_capacity{};
  std::uint64_t storage_bytes{0};            ///< as run_options::storage_bytes
  std::optional<link_model> storage_read_link{};   ///< as run_options::storage_read_link
  std::optional<link_model> storage_write_link{};  ///< as run_options::storage_write_link
  double storage_ratio{1.0};                       ///< as run_options::storage_ratio
  bool recompute{true};                            ///< as run_options::recompute
  bool compaction{false};                          ///< as run_options::compaction
  bool trace_prefetches{true};                     ///< as run_options::trace_prefetches
  std::uint64_t uvm_page_bytes{kUvmDefaultPageBytes};  ///< as run_options::uvm_page_bytes
  double uvm_fault_ns{kUvmDefaultFaultNs};             ///< as run_options::uvm_fault_ns
  bool uvm_drop_clean{false};                          ///< as run_options::uvm_drop_clean
  bool record_activity{false};                         ///< as run_options::record_activity
  bool record_timeline{false};                         ///< as run_options::record_timeline
  unsigned threads{0};                       ///< worker threads; 0 = all hardware threads
  /// The policy spec `moved_vs_belady` divides by: when one of `policies` is exactly this
  /// spec, every result gets its bytes moved relative to that policy's on the same
  /// capacity. Empty: no reference. `tierpool replay` sets "belady" (its "vs belady" column).
  std::string reference{};
  policy_registry const* registry{nullptr};  ///< null: the built-in policies
  /// Called (serialized, from a worker thread) when a run finishes: its result, how many
  /// runs are done, and the total.
  std::function<void(replay_result const&, std::size_t done, std::size_t total)> on_run_done{};
  /// Called (serialized) with a run's grid index and its progress (fraction in [0, 1]).
  std::function<void(std::size_t run, double fraction)> on_progress{};
};

/**
 * @brief Replay every policy × capacity in parallel (tbb::parallel_for, one task per run).
 *
 * Every policy spec is built once before any run starts, so a bad spec fails fast.
 * Results come back in grid order (policy-major, then capacity) whatever the completion
 * order; `moved_vs_belady` is filled when a policy spec is exactly `options.reference`.
 *
 * @throws as run(); the first exception of any run is rethrown after the others stop
 */
[[nodiscard]] TIERPOOL_EXPORT std::vector<replay_result> run_grid(compiled_trace const& trace,
                                                                  grid_options const& options);

/// @brief A table for people, one row per result (columns: docs/chapters/replay.md).
[[nodiscard]] TIERPOOL_EXPORT std::string format_table(std::span<replay_result const> results);
/// @brief A JSON array with one object per result (keys: docs/chapters/replay.md).
[[nodiscard]] TIERPOOL_EXPORT std::string to_json(std::span<replay_result const> results);
/**
 * @brief The recorded timelines (replay_result::timeline) as one Chrome trace-event JSON
 *        file, for Perfetto (ui.perfetto.dev) or chrome://tracing: a process per result
 *        that has a timeline (named "policy · prefetch · capacity"), a lane per trace
 *        stream (its kernels) and per link (its copies, each with its bytes). Times are
 *        virtual microseconds.
 * @param results The runs; those without a timeline are left out.
 */
[[nodiscard]] TIERPOOL_EXPORT std::string to_chrome_trace(std::span<replay_result const> results);
/**
 * @brief Where each run's device time went, a line per result that has an activity
 *        summary (replay_result::activity), then a line per phase
 *        (replay_result::phase_activities): kernels alone, kernels with copies (hidden),
 *        copies alone by link (exposed), idle; seconds and shares of the makespan.
 */
[[nodiscard]] TIERPOOL_EXPORT std::string format_activity(std::span<replay_result const> results);
/// @brief CSV with a header line, one line per result (the JSON keys as columns).
[[nodiscard]] TIERPOOL_EXPORT std::string to_csv(std::span<replay_result const> results);
/**
 * @brief A self-contained SVG: capacity vs miss ratio (left) and capacity vs bytes moved
 *        (right), one polyline per policy, axes with ticks and labels, and a legend.
 * @param results The runs (any order; each policy's points are sorted by capacity).
 * @param title   Shown above the panels.
 */
[[nodiscard]] TIERPOOL_EXPORT std::string to_svg(std::span<replay_result const> results, std::string_view title);
/**
 * @brief A self-contained SVG of makespan / ideal (replay_result::makespan_vs_ideal) per
 *        capacity: one polyline per (mode, prefetch, policy), in first-seen order, over one
 *        column per capacity label (ordered by resolved bytes); reference lines at 1.0 (the
 *        ideal time, a floor) and 1.25 (the project's target); labelled axes and a legend.
 *        UVM rows are dashed (uvm) or dotted (uvm-hints); a run with unserved requests has a
 *        hollow marker. Each series is a `<g class="series" data-series="LABEL">`, each
 *        reference line a `<line class="reference" data-y="1">` (and `"1.25"`).
 * @param results The runs (any order).
 * @param title   Shown above the plot.
 */
[[nodiscard]] TIERPOOL_EXPORT std::string to_ideal_svg(std::span<replay_result const> results, std::string_view title);

}  // namespace replay
}  // namespace tierpool

/** @} */

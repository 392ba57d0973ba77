// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file arena_workloads.hpp
 * @brief The arena workloads (docs/chapters/benchmarks.md, "Arena workloads"): generation, the alloc-trace text
 *        format, and replay with measurement.
 *
 * Every allocator replays the same pre-generated trace of (allocate slot, bytes) and
 * (free slot) operations; generation happens before, and outside, the timed region. A
 * failed allocation leaves its slot empty and the slot's later free is a no-op.
 *
 * Thread safety: free functions with no shared state; safe to call concurrently on
 * different traces.
 */
#pragma once

#include <tierpool/arena.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tierpool::workloads {

/// @brief The arena workloads of docs/chapters/benchmarks.md.
enum class arena_workload : std::uint8_t { rand50, rand85, dnn_static, dnn_dyn, dnn_tight };

/// @brief CLI name of a workload ("rand50", "dnn-static", ...).
[[nodiscard]] std::string_view to_string(arena_workload w) noexcept;
/// @brief The workload named `name`, or std::nullopt for an unknown name.
[[nodiscard]] std::optional<arena_workload> parse_arena_workload(std::string_view name) noexcept;

/// @brief One operation of a trace.
struct alloc_op {
  std::uint64_t bytes{0};  ///< bytes to allocate; 0 for a free
  std::uint32_t slot{0};   ///< slot allocated or freed
  bool is_alloc{false};    ///< true: allocate `bytes` into `slot`; false: free `slot`
  friend bool operator==(alloc_op const&, alloc_op const&) = default;
};

/// @brief A whole trace: arena capacity, alignment of every request, and the operations.
struct alloc_trace {
  std::uint64_t capacity{0};    ///< arena capacity in bytes
  std::uint64_t alignment{256}; ///< alignment of every request
  std::uint32_t slot_count{0};  ///< slots used are < slot_count
  std::uint64_t peak_live{0};   ///< highest SUM of live bytes, assuming every allocation succeeds
  std::vector<alloc_op> ops;    ///< the operations, in order
  /// Empty: slot i is slot i of the file. Else slot i was numbered `slot_names[i]` in the
  /// file (parse_alloc_trace renumbers sparse slot numbers, in order, so that memory
  /// follows the slots a trace uses, not the largest number it names); write_alloc_trace
  /// writes the file's numbers back.
  std::vector<std::uint32_t> slot_names;
};

/**
 * @brief Generate a workload exactly as docs/chapters/benchmarks.md defines it.
 *
 * Random numbers come from std::mt19937_64 (the DNN model from seed 12345, the run from
 * `seed`), turned into doubles as `(x >> 11) * 2^-53` and into indices as
 * `floor(u * n)`, so a trace depends only on the seed, not on the standard library.
 *
 * @param w    The workload.
 * @param seed The run's seed (the recorded runs use 1000..1004).
 * @param max_ops If non-zero, keep only the first `max_ops` operations (smoke runs). The
 *             capacity of dnn-tight is still computed from the whole dnn-dyn trace.
 * @return The trace.
 */
[[nodiscard]] alloc_trace generate_arena_workload(arena_workload w, std::uint64_t seed, std::size_t max_ops = 0);

/// @brief A malformed alloc-trace file; the message names the file and the line.
class trace_format_error : public std::runtime_error {
 public:
  /// @param what_arg Full message. @param line 1-based line number (0: whole file).
  trace_format_error(std::string const& what_arg, std::size_t line)
    : std::runtime_error(what_arg), line_(line) {}
  /// @brief 1-based line number of the offending line; 0 when the file as a whole is wrong.
  [[nodiscard]] std::size_t line() const noexcept { return line_; }

 private:
  std::size_t line_;
};

/**
 * @brief Write `t` in the alloc-trace text format (header `# tierpool-alloc-trace v1`,
 *        `capacity N`, `alignment N`, then `a SLOT BYTES` / `f SLOT`, one per line).
 * @throws std::runtime_error if the file cannot be written.
 */
void write_alloc_trace(std::string const& path, alloc_trace const& t);

/**
 * @brief Parse alloc-trace text. `#` starts a comment; blank lines are ignored.
 * @param text The file's contents.
 * @param name The file's name, for messages.
 * Slots are names: when the numbers used are sparse (the largest is more than twice the
 * number of allocations), they are renumbered 0, 1, 2, ... in increasing order and
 * alloc_trace::slot_names keeps the file's numbers; memory is bounded by the input.
 *
 * @throws trace_format_error naming the line when the text is not a valid trace (bad
 *         header, unknown directive, bad number, zero bytes, a slot past 2^32 - 1,
 *         allocating a live slot, freeing a slot that is not live, operations before
 *         capacity/alignment, live bytes past 2^64 - 1).
 */
[[nodiscard]] alloc_trace parse_alloc_trace(std::string_view text, std::string_view name = "<trace>");

/// @brief Read and parse an alloc-trace file (any readable file: a pipe too).
/// @throws trace_format_error, std::runtime_error (I/O; "is a directory" for one).
[[nodiscard]] alloc_trace read_alloc_trace(std::string const& path);

/// @brief How to measure a replay.
struct measure_options {
  unsigned runs{5};                     ///< timed runs (median reported)
  std::uint64_t frag_interval{10'000};  ///< sample fragmentation every this many operations
  bool per_op_timing{true};             ///< time every operation in one extra run (p99, p99.9)
  arena_options arena{};                ///< arena configuration of every replay
};

/// @brief Outcome of one deterministic replay (no timing).
struct replay_outcome {
  std::uint64_t operations{0};       ///< operations replayed
  std::uint64_t allocations{0};      ///< allocate operations
  std::uint64_t failures{0};         ///< allocate operations that returned nothing
  std::uint64_t highest_offset{0};   ///< highest end offset (offset + size) of any allocation
  std::uint64_t peak_live{0};        ///< highest SUM of live reserved bytes
  double frag_mean{0.0};             ///< mean of the fragmentation samples
  double frag_max{0.0};              ///< max of the fragmentation samples
  std::uint64_t frag_samples{0};     ///< number of samples
  bool valid_at_end{false};          ///< arena::validate() after the replay
};

/// @brief Everything `tierpool bench arena` reports for one trace.
struct arena_figures {
  replay_outcome outcome;                 ///< failures, footprint, fragmentation
  std::vector<double> ns_per_pair_runs;   ///< per timed run: replay time / (operations / 2)
  double ns_per_pair_median{0.0};         ///< median over runs
  double ns_per_pair_min{0.0};            ///< fastest run
  double ns_per_pair_max{0.0};            ///< slowest run
  double p50_ns{0.0};                     ///< per-operation percentiles (steady_clock per op;
  double p99_ns{0.0};                     ///<   they include the clock's own cost)
  double p999_ns{0.0};
  double op_max_ns{0.0};                  ///< slowest single operation
  bool failures_consistent{true};         ///< every timed run failed the same allocations
};

/**
 * @brief Replay `t` once in a fresh arena, sampling figures (not timed).
 * @param t    The trace.
 * @param opts Arena configuration and sampling interval.
 */
[[nodiscard]] replay_outcome replay_arena(alloc_trace const& t, measure_options const& opts = {});

/**
 * @brief Replay `t` `opts.runs` times timing the whole replay, plus once with per-operation
 *        timing and once with sampling; return every figure.
 */
[[nodiscard]] arena_figures measure_arena(alloc_trace const& t, measure_options const& opts = {});

}  // namespace tierpool::workloads

namespace tierpool::workloads {

/// @brief Outcome of one replay of an arena trace through a pool (replay_through_pool).
struct pool_arena_outcome {
  std::uint64_t operations{0};            ///< operations replayed
  std::uint64_t allocations{0};           ///< allocate operations
  std::uint64_t failures{0};              ///< allocations that threw out_of_memory
  /// Placements that evicted although the device tier's free bytes covered the request
  /// (tier_stats::fragmented_evictions)
  std::uint64_t fragmented_evictions{0};
  std::uint64_t evictions{0};             ///< copies evicted from the device tier
  std::uint64_t compactions{0};           ///< placements the ladder made room for by compacting
  std::uint64_t compacted_tensors{0};     ///< copies moved within the device tier
  std::uint64_t compacted_bytes{0};       ///< their bytes
  double frag_mean{0.0};                  ///< mean of the device tier's external fragmentation samples
  double frag_max{0.0};                   ///< max of them
  std::uint64_t frag_samples{0};          ///< number of samples
  double seconds{0.0};                    ///< wall time of the replay
  bool valid_at_end{false};               ///< pool::validate() after the replay
  /// pool::compact of the device tier after the replay: its external fragmentation before
  /// and after, and the copies it moved
  double end_frag_before{0.0};
  double end_frag_after{0.0};             ///< see end_frag_before
  std::uint64_t end_moved{0};             ///< see end_frag_before
};

/// @brief The compaction a pool of replay_through_pool may do (docs/chapters/tiers.md, "Compaction").
enum class pool_compaction : std::uint8_t {
  off,          ///< none: pool_options::compaction and compact_before_failing off
  last_resort,  ///< the defaults: only before a request would fail (compact_before_failing)
  ladder,       ///< pool_options::compaction on: before evicting
};

/**
 * @brief Replay `t` through a pool (docs/chapters/tiers.md, "Compaction"): a device tier of
 *        the trace's capacity in one chunk (as the arena replays it) over a host tier four
 *        times as large (none with `device_only`), on the sim backend with phantom memory.
 *        Each allocation is a tensor placed on the device with the whole out-of-memory
 *        ladder (evicting to the host tier when it must; with no tier below, a placement
 *        that finds no room fails, as in the arena); each free frees it. After the replay,
 *        pool::compact of the device tier.
 * @param t          The trace.
 * @param compaction What compaction the pool may do (pool_compaction).
 * @param device_only No host tier below the device tier.
 * @param frag_interval Sample the device tier's fragmentation every this many operations.
 */
[[nodiscard]] pool_arena_outcome replay_through_pool(alloc_trace const& t, pool_compaction compaction,
                                                     bool device_only = false, std::uint64_t frag_interval = 10'000);

}  // namespace tierpool::workloads

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file trace.hpp
 * @brief The trace event schema (docs/chapters/traces.md): one versioned list of events that the pool
 *        records (`TIERPOOL_TRACE=path`), the generators write (`tierpool trace gen`), the
 *        importers produce (libCacheSim `oracleGeneral`, csv) and `tierpool replay` reads.
 *
 * @defgroup trace Traces
 * @{
 *
 * Encodings:
 * - **text** (`.tpt`): readable and diffable, one event a line, first line
 *   `# tierpool-trace v1`; `#` starts a comment. See docs/chapters/traces.md for the
 *   grammar.
 * - **binary** (`.tpb`): a 16-byte header (magic `"TPTRACE\0"`, `uint32` version,
 *   `uint32` flags) then little-endian records; compact and fast to read.
 * - **oracle_general** (import only): libCacheSim's fixed 24-byte records
 *   `uint32 time, uint64 obj_id, uint32 obj_size, int64 next_access_vtime`; each record
 *   becomes one `access` (read) event with `bytes` = the object size; size-0 records are
 *   skipped.
 * - **csv** (import only): columns chosen by csv_options.
 *
 * Every reader error is a tierpool::trace_error naming the file and the line (text, csv)
 * or byte offset (binary, oracle_general) where the input went wrong.
 *
 * Also here: summarize() (the figures of `tierpool trace stat`) and recorder (the
 * thread-safe writer behind `TIERPOOL_TRACE=path`). The generators of the tiering
 * workloads (docs/chapters/benchmarks.md) are in trace_gen.hpp. Implementation: runtime/trace/; guide: docs/chapters/traces.md.
 *
 * @code
 * auto r = tierpool::trace::open_reader("cloudphysics.oracleGeneral.bin");  // detected
 * tierpool::trace::event e;
 * while (r->next(e)) { ... }
 * @endcode
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <array>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/export.hpp>

namespace tierpool {

/// @brief A trace file is malformed, truncated, of an unknown version, or unreadable.
struct TIERPOOL_EXPORT trace_error : logic_error {
  using logic_error::logic_error;
};

namespace trace {

/// @brief Version of the event schema, written in every native file.
inline constexpr std::uint32_t schema_version = 1;

/// @brief What happened.
enum class event_kind : std::uint8_t {
  allocate,  ///< tensor `tensor` of `bytes` bytes created (optionally `name`, `tier` = preferred tier or none)
  free,      ///< tensor freed
  access,    ///< tensor used on `stream` with `mode`; `bytes` > 0 admits an unknown id (cache traces)
  prefetch,  ///< prefetch of `tensor` to tier `tier` requested
  compute,   ///< `duration_ns` of work on `stream`
  phase,     ///< marker: `name` begins (e.g. "iter 3", "forward")
  release,   ///< the lease of `tensor`'s latest access on `stream` ended (recorded runs; a
             ///< trace without release events holds each lease until the stream's next compute)
  discard,   ///< `tensor`'s bytes are dead until a write_discard access (pool::discard); its
             ///< next access must be write_discard (or it is freed). The last kind the binary
             ///< record tag has room for.
};

/// @brief How many event kinds there are (`discard` is the last): size every array indexed
///        by an event_kind with it.
inline constexpr std::size_t event_kind_count = static_cast<std::size_t>(event_kind::discard) + 1;

/// @brief How an access uses the tensor (same meaning as tierpool::access_mode).
enum class access_kind : std::uint8_t {
  read,           ///< reads only
  read_write,     ///< reads and writes
  write_discard,  ///< overwrites every byte
};

/// @name Eviction hints of an allocate event (event::hints)
// Eviction hints (event::hints of an allocate): what an eviction may do with the tensor
// besides moving it to a slower tier. 0 (no bit): not recomputable, lossless compression
// allowed: the default for every tensor. Readers reject a hint on another kind of event,
// an unknown bit, hint_recomputable without a duration, and hint_lossy_ok together with
// hint_no_compress.
/// @brief The tensor may be dropped and recomputed on its next use (activation
///        checkpointing); event::duration_ns of the allocate, which must be > 0, is what
///        recomputing it costs in ns.
inline constexpr std::uint8_t hint_recomputable = 1;
/// @brief The tensor tolerates lossy compression: it may be stored 8-bit quantized.
inline constexpr std::uint8_t hint_lossy_ok = 2;
/// @brief The tensor must not be compressed at all, not even losslessly.
inline constexpr std::uint8_t hint_no_compress = 4;
/// @brief Every hint bit this schema knows.
inline constexpr std::uint8_t hint_known = hint_recomputable | hint_lossy_ok | hint_no_compress;

/// @brief Sentinel for event::tier meaning "none given".
inline constexpr std::uint32_t no_tier = 0xFFFFFFFFU;

/// @brief event::stream of an access made by the host (pool::acquire_host), not on a stream.
inline constexpr std::uint32_t host_stream = 0xFFFFFFFFU;

/**
 * @brief One trace event. Fields a kind does not use are zero (or empty / no_tier).
 *
 * Tensor ids are trace-local (the recording pool's ids, or object ids of an imported
 * cache trace). Times are nanoseconds since the start of the run, 0 when unknown.
 */
struct event {
  event_kind kind{event_kind::access};  ///< what happened
  access_kind mode{access_kind::read};  ///< access only
  std::uint32_t stream{0};              ///< access, compute: trace-local stream number (0 = default)
  std::uint32_t tier{no_tier};          ///< prefetch: target tier; allocate: preferred tier
  std::uint64_t tensor{0};              ///< allocate, free, access, prefetch, release, discard
  std::uint64_t bytes{0};               ///< allocate: size; access: object size (0 = as allocated)
  std::uint64_t time_ns{0};             ///< when it happened (0 = unknown)
  std::uint64_t duration_ns{0};         ///< compute: its length; allocate: recompute cost (with hint_recomputable)
  std::string name{};                   ///< allocate: tensor name (optional); phase: label
  std::uint8_t hints{0};                ///< allocate only: hint_recomputable | hint_lossy_ok | hint_no_compress

  /// @brief Field-wise equality (tests, round trips).
  friend bool operator==(event const&, event const&) = default;
};

/// @brief File encodings.
enum class format : std::uint8_t {
  automatic,       ///< readers: detect from the content (magic / header line / 24-byte records)
  text,            ///< native text (.tpt)
  binary,          ///< native binary (.tpb)
  oracle_general,  ///< libCacheSim oracleGeneral (read only)
  csv,             ///< comma- or otherwise-separated values (read only)
};

/// @brief Parse "auto", "text", "binary", "oracle_general" (alias "oracleGeneral"), "csv".
/// @throws tierpool::logic_error naming the accepted values
[[nodiscard]] TIERPOOL_EXPORT format parse_format(std::string_view text);
/// @brief The name parse_format accepts for `f`.
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(format f) noexcept;
/// @brief "allocate", "free", "access", "prefetch", "compute", "phase", "release", "discard".
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(event_kind k) noexcept;

/// @brief Which csv columns hold what (0-based; -1 = absent). Each row is one access.
struct csv_options {
  char delimiter{','};    ///< column separator
  bool header{true};      ///< skip the first line
  int time_column{0};     ///< a decimal number (fractions allowed) of `time_unit_ns` units (-1: none)
  int id_column{1};       ///< object id: an unsigned integer, or any text (hashed)
  int size_column{2};     ///< bytes (-1: every object has `default_size`)
  int op_column{-1};      ///< "r"/"read"/"get" -> read, "w"/"write"/"set" -> read_write (-1: all reads)
  std::uint64_t default_size{1};  ///< bytes of every object when size_column is -1
  /// Nanoseconds per unit of the time column: 1'000'000'000 (default) = seconds, 1 = ns.
  std::uint64_t time_unit_ns{1'000'000'000};
};

/// @brief Options of open_reader.
struct reader_options {
  format fmt{format::automatic};  ///< the file's format; automatic: from its extension and first bytes
  csv_options csv{};              ///< columns, when the format is csv
};

/**
 * @brief A forward-only event source over one file.
 *
 * Thread safety: one reader per thread.
 */
class TIERPOOL_EXPORT reader {
 public:
  virtual ~reader() = default;
  /**
   * @brief Read the next event.
   * @param[out] out Filled when an event is returned.
   * @return false at a clean end of the input.
   * @throws tierpool::trace_error for malformed or truncated input (names line / offset)
   */
  virtual bool next(event& out) = 0;
  /**
   * @brief Read up to `out.size()` events; the fast path for large cache traces.
   *
   * The default calls next() in a loop; readers of fixed-size records override it. The
   * events' `name` strings are reused (assigned, never reallocated when they fit).
   * @return how many events were filled; fewer than `out.size()` only at the end.
   * @throws tierpool::trace_error as next()
   */
  virtual std::size_t next_batch(std::span<event> out);
  /// @brief The encoding being read (never `automatic`).
  [[nodiscard]] virtual format encoding() const noexcept = 0;
};

/**
 * @brief Open a trace for reading.
 *
 * The file is opened once: a pipe or a FIFO (`/dev/stdin`, `<(...)`) works, detection
 * peeking at its first bytes (without a size, non-text content is read as oracleGeneral).
 * @throws tierpool::trace_error if the file cannot be opened, is a directory, or its
 *         format is not detected
 */
[[nodiscard]] TIERPOOL_EXPORT std::unique_ptr<reader> open_reader(std::filesystem::path const& path,
                                                                  reader_options const& options = {});

/**
 * @brief Read a trace held in memory (tests, fuzzers, embedded traces).
 *
 * Detection with format::automatic looks at the content only (there is no extension):
 * native header line, native magic, else oracleGeneral when the size is a multiple of 24
 * and the bytes are not text.
 * @param bytes The encoded trace; must outlive the reader (it is not copied).
 * @param options Format and csv options.
 * @param name What error messages call the input, in place of a file name.
 * @throws tierpool::trace_error if the format is not detected
 */
[[nodiscard]] TIERPOOL_EXPORT std::unique_ptr<reader> open_memory_reader(std::string_view bytes,
                                                                         reader_options const& options = {},
                                                                         std::string name = "<memory>");

/**
 * @brief The format open_reader would choose for `path` with format::automatic.
 * @throws tierpool::trace_error if the file cannot be read or no format matches
 */
[[nodiscard]] TIERPOOL_EXPORT format detect_format(std::filesystem::path const& path);

/// @brief The output format for `path`: binary for a `.tpb` extension, else text.
[[nodiscard]] TIERPOOL_EXPORT format output_format_for(std::filesystem::path const& path) noexcept;

/// @brief Read a whole trace into memory. @throws tierpool::trace_error as reader::next
[[nodiscard]] TIERPOOL_EXPORT std::vector<event> read_all(std::filesystem::path const& path,
                                                          reader_options const& options = {});

/**
 * @brief Writes native traces (text or binary). Flushes on close() and destruction.
 *
 * Thread safety: externally synchronized (the pool's recorder serializes its calls).
 */
class TIERPOOL_EXPORT writer {
 public:
  /**
   * @brief Create (truncate) `path`.
   * @param path Output file.
   * @param fmt format::text, format::binary, or format::automatic (output_format_for(path)).
   * @throws tierpool::trace_error if it cannot be created; tierpool::logic_error for
   *         another format
   */
  writer(std::filesystem::path const& path, format fmt);
  ~writer();
  /// @brief Take over another writer's file.
  writer(writer&&) noexcept;
  /// @brief Close this writer's file (as the destructor does), then take over another's.
  writer& operator=(writer&&) noexcept;
  writer(writer const&) = delete;
  writer& operator=(writer const&) = delete;

  /**
   * @brief Append one event.
   * @throws tierpool::trace_error on a write error or after close();
   *         tierpool::logic_error if `e.name` is longer than 1 MiB, or `e.hints` is not
   *         valid (a hint on a non-allocate event, an unknown bit, hint_recomputable with
   *         duration_ns 0, hint_lossy_ok with hint_no_compress): readers reject those
   */
  void write(event const& e);
  /// @brief Hand buffered events to the operating system. @throws tierpool::trace_error on a write error
  void flush();
  /// @brief The encoding being written (text or binary).
  [[nodiscard]] format encoding() const noexcept;
  /// @brief Events written so far.
  [[nodiscard]] std::uint64_t events_written() const noexcept;
  /// @brief Flush and close; later writes throw. @throws tierpool::trace_error on a write error
  void close();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// @brief The text encoding of one event (one line, no newline), as the writer writes it.
[[nodiscard]] TIERPOOL_EXPORT std::string format_text(event const& e);

/**
 * @brief Figures of a whole trace, as `tierpool trace stat` prints them.
 *
 * An id is *live* from its allocate to its free. An access with `bytes` > 0 to an id that
 * is not live (a cache trace's object) makes it live at that size, until a free. The
 * "first size" of an id is the size it had when it was first seen.
 */
struct summary {
  std::uint64_t events{0};                          ///< COUNT all events
  std::array<std::uint64_t, event_kind_count> events_by_kind{};  ///< COUNT per event_kind (indexed by its value)
  std::uint64_t requests{0};                        ///< COUNT access events
  std::uint64_t reads{0};                           ///< COUNT accesses with access_kind::read
  std::uint64_t read_writes{0};                     ///< COUNT accesses with access_kind::read_write
  std::uint64_t write_discards{0};                  ///< COUNT accesses with access_kind::write_discard
  std::uint64_t tensors{0};                         ///< COUNT distinct ids of allocate events
  std::uint64_t objects{0};                         ///< COUNT distinct ids of access events (unique objects)
  std::uint64_t working_set_bytes{0};               ///< SUM over distinct ids (allocated or accessed) of the first size
  std::uint64_t allocated_bytes{0};                 ///< SUM of allocate sizes
  std::uint64_t peak_live_bytes{0};                 ///< highest SUM of the sizes of live ids
  std::uint64_t live_bytes_at_end{0};               ///< SUM of the sizes of ids live at the end
  std::uint64_t live_at_end{0};                     ///< COUNT ids live at the end (allocated, never freed)
  std::uint64_t compute_ns{0};                      ///< SUM of compute durations
  std::uint64_t compute_streams{0};                 ///< COUNT distinct streams of compute events
  std::uint64_t busiest_stream_compute_ns{0};       ///< MAX over streams of the SUM of their compute durations
  std::uint64_t recomputable_tensors{0};            ///< COUNT allocates with hint_recomputable
  std::uint64_t recomputable_bytes{0};              ///< SUM of their sizes
  std::uint64_t recompute_ns{0};                    ///< SUM of their duration_ns (the recompute costs)
  std::uint64_t lossy_ok_tensors{0};                ///< COUNT allocates with hint_lossy_ok
  std::uint64_t lossy_ok_bytes{0};                  ///< SUM of their sizes
  std::uint64_t first_time_ns{0};                   ///< smallest non-zero time (0: none)
  std::uint64_t last_time_ns{0};                    ///< largest time
  // Well-formedness: all zero for a trace where every use follows its allocate.
  std::uint64_t accesses_not_live{0};  ///< COUNT accesses with bytes == 0 to an id that is not live
  std::uint64_t frees_not_live{0};     ///< COUNT frees of an id that is not live
  std::uint64_t allocates_live{0};     ///< COUNT allocates of an id that is already live
  std::uint64_t prefetches_not_live{0};///< COUNT prefetches of an id that is not live
  std::uint64_t discards_not_live{0};  ///< COUNT discards of an id that is not live
  /// COUNT read or read_write accesses of a discarded id before a write_discard one (a pool
  /// refuses them: pool::discard)
  std::uint64_t reads_after_discard{0};
  /// True when a SUM above (working set, allocated, live or peak live bytes, compute, the hint sums) passed
  /// 2^64 - 1: it shows 2^64 - 1 (saturated) instead of wrapping.
  bool saturated{false};

  /// @brief Field-wise equality (tests).
  friend bool operator==(summary const&, summary const&) = default;
};

/**
 * @brief Accumulates a summary event by event.
 *
 * Thread safety: one instance per thread. Memory: one hash-map entry per distinct id.
 */
class TIERPOOL_EXPORT summarizer {
 public:
  summarizer();
  ~summarizer();
  /// @brief Take over another summarizer's state.
  summarizer(summarizer&&) noexcept;
  /// @brief Replace this summarizer's state with another's.
  summarizer& operator=(summarizer&&) noexcept;
  summarizer(summarizer const&) = delete;
  summarizer& operator=(summarizer const&) = delete;

  /// @brief Account one event.
  void add(event const& e);
  /// @brief The figures so far.
  [[nodiscard]] summary const& result() const noexcept { return summary_; }

 private:
  struct state;
  std::unique_ptr<state> state_;
  summary summary_{};
};

/// @brief Summarize a whole file. @throws tierpool::trace_error as reader::next
[[nodiscard]] TIERPOOL_EXPORT summary summarize(std::filesystem::path const& path, reader_options const& options = {});
/// @brief Summarize events in memory.
[[nodiscard]] TIERPOOL_EXPORT summary summarize(std::span<event const> events);

/**
 * @brief Thread-safe event recorder over a writer: what `TIERPOOL_TRACE=path` uses.
 *
 * The format follows the extension (`.tpb` binary, anything else text). The caller gives
 * each event its time (`event::time_ns`); the recorder only serializes the calls, so
 * events appear in the file in the order their record() calls took the lock.
 *
 * Failure: the first write error (a full disk, `/dev/full`) *stops* the recording. The
 * call that met it (record(), flush() or close()) throws it; the file is closed; error()
 * keeps the message from then on; and later record(), flush() and close() calls do nothing
 * and throw nothing (record() counts its event in events_dropped()). One failure, reported
 * once: a caller that reports what record() throws reports it a single time.
 *
 * Thread safety: every member may be called concurrently.
 *
 * @code
 * auto rec = tierpool::trace::recorder::from_environment();   // null unless TIERPOOL_TRACE is set
 * if (rec) {
 *   rec->record({.kind = tierpool::trace::event_kind::allocate, .tensor = 7, .bytes = 4096, .time_ns = now});
 * }
 * @endcode
 */
class TIERPOOL_EXPORT recorder {
 public:
  /**
   * @brief Create (truncate) `path` and write the header.
   * @throws tierpool::trace_error if it cannot be created
   */
  explicit recorder(std::filesystem::path path);
  /// @brief Flushes and closes; errors at this point are dropped (call close() to see them).
  ~recorder();
  recorder(recorder const&) = delete;
  recorder& operator=(recorder const&) = delete;

  /**
   * @brief A recorder on the path in environment variable `variable`, or null when it is
   *        unset or empty.
   * @throws tierpool::trace_error if the file cannot be created
   */
  [[nodiscard]] static std::unique_ptr<recorder> from_environment(char const* variable = "TIERPOOL_TRACE");

  /**
   * @brief Append one event (buffered); dropped, without a throw, once the recording stopped.
   * @throws tierpool::trace_error on the write error that stops the recording, or after
   *         close(); tierpool::logic_error if `e.name` is longer than 1 MiB (not recorded;
   *         the recording goes on)
   */
  void record(event const& e);
  /// @brief Hand buffered events to the operating system; nothing once stopped or closed.
  /// @throws tierpool::trace_error on the write error that stops the recording
  void flush();
  /// @brief Flush and close; later record() calls throw. Nothing once stopped or closed.
  /// @throws tierpool::trace_error on the write error that stops the recording
  void close();
  /// @brief The file being written.
  [[nodiscard]] std::filesystem::path const& path() const noexcept { return path_; }
  /// @brief Events recorded so far (after a failure: including those of the buffer it lost).
  [[nodiscard]] std::uint64_t events_recorded() const;
  /// @brief The write error that stopped the recording ("cannot write trace 'PATH': ..."); empty while it works.
  [[nodiscard]] std::string error() const;
  /// @brief Events record() dropped because the recording had stopped.
  [[nodiscard]] std::uint64_t events_dropped() const;

 private:
  void stop(char const* what) noexcept;  // with mtx_ held: keep the error, close the file

  std::filesystem::path path_;
  mutable std::mutex mtx_;
  writer writer_;               // guarded by mtx_
  std::string error_;           // guarded by mtx_; non-empty: stopped
  std::uint64_t dropped_{0};    // guarded by mtx_
  bool closed_{false};          // guarded by mtx_: close() was called
};

}  // namespace trace
}  // namespace tierpool

/** @} */

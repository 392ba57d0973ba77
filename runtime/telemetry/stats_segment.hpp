// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// stats_segment.hpp — the layout of the shared-memory segment a pool publishes its figures
// in (docs/chapters/monitoring.md), and its writer.
//
// Note [The stats segment is a seqlock of plain words]
// A pool writes one fixed-size, versioned record to /dev/shm/tierpool.<pid>.<n>; readers
// (`tierpool top`, tierpool::read_published_pool) read it with pread(2), never through a
// mapping: the file's owner may shrink it at any time, and a load from a mapped page past
// the end kills the reader with SIGBUS (a short read is an error about that segment only).
// Nothing is shared but the words: no mutex lives in the segment, so a reader can never
// block a writer, and a reader killed mid-read leaves nothing behind. The writer makes
// `seq` odd, writes the payload with release stores (std::atomic_ref, so a reader in the
// same process is no data race), makes `seq` even again (release); a reader reads `seq`,
// the payload, `seq` again (three system calls, ordered by acquire fences where the
// build allows fences), and retries unless both reads saw the same even value. On x86-64
// release stores are plain moves, so the copy costs what memcpy does. Strings are
// fixed, NUL-padded arrays inside the words; counts beyond the arrays are cut (the header
// says how many there were). A new layout gets a new `version`; readers refuse others.
#pragma once

#include <tierpool/telemetry.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace tierpool::telemetry {

inline constexpr std::uint64_t kMagic = 0x5354415453505054ULL;  // "TPPSTATS" little-endian
inline constexpr std::uint32_t kVersion = 7;  // 2: the transfer planner and device-time lateness; 3: policies, pressure; 4: storage bytes; 5: wasted early write-backs; 6: the planner's periods with and without prefetches; 7: planner steps skipped while another thread's ran
inline constexpr std::size_t kMaxTiers = 16;
inline constexpr std::size_t kMaxTenants = 16;
inline constexpr char kPrefix[] = "tierpool.";  // segment names: tierpool.<pid>.<n>

struct seg_tier {
  std::array<char, 32> name{};
  std::uint32_t kind{0};
  std::int32_t numa_node{-1};
  std::uint64_t capacity{0}, reserved{0}, used{0}, peak{0}, allocated{0}, freed{0};
  std::uint64_t pinned{0}, in_flight{0}, largest_free{0};
  double fragmentation{0.0};
  std::uint64_t resident{0}, evictions{0}, evictions_clean{0}, alloc_failures{0}, reuses_in_order{0};
  std::uint64_t bytes_written{0}, bytes_read{0};  ///< storage tiers: bytes written to and read from the file
  std::array<char, 128> policy{};  ///< the policy spec, all parameters (cut to fit)
};

struct seg_tenant {
  std::uint32_t tenant{0};
  std::uint32_t pad{0};
  std::uint64_t tensors{0}, live{0}, peak{0}, quota{0}, refusals{0};
};

/// What a reader copies out under the seqlock.
struct seg_payload {
  std::int64_t pid{0};
  std::uint64_t started_unix_ns{0};  ///< when the pool was built
  std::uint64_t updated_unix_ns{0};  ///< when this copy was written
  std::uint64_t updates{0};          ///< copies written so far
  std::uint32_t interval_ms{0};      ///< the writer's period (0: only on pool::publish())
  std::uint32_t tier_count{0};       ///< tiers in the pool (at most kMaxTiers are stored)
  std::uint32_t tenant_count{0};     ///< tenants in the pool (at most kMaxTenants are stored)
  std::uint32_t pad{0};
  std::array<char, 64> name{};
  std::array<char, 16> backend{};
  std::array<char, 64> device{};
  std::uint64_t tensors{0}, tensor_bytes{0}, acquires{0}, hits{0}, misses{0};
  std::uint64_t bytes_h2d{0}, bytes_d2h{0}, copies_h2d{0}, copies_d2h{0};
  std::uint64_t bytes_up{0}, bytes_down{0}, copies_up{0}, copies_down{0};
  std::uint64_t prefetches{0}, prefetch_hits{0}, prefetch_late{0}, prefetch_wasted{0};
  std::uint64_t prefetch_queued{0}, prefetch_dropped{0}, predicted_prefetches{0};
  std::uint64_t managed_prefetches{0}, managed_prefetch_bytes{0}, low_memory_callbacks{0};
  double stall_seconds{0.0};
  std::array<char, 16> planner_state{};  ///< "" without a planner
  std::uint64_t planner_period{0}, planner_relearns{0}, planner_mispredicted{0}, planner_busy_skips{0};
  std::uint64_t planner_prefetching{0}, planner_periods_prefetching{0}, planner_periods_without{0};
  double planner_period_seconds_prefetching{0.0}, planner_period_seconds_without{0.0};
  std::uint64_t planned_prefetches{0}, planned_prefetch_bytes{0}, plan_harm_skips{0}, plan_no_room{0};
  std::uint64_t early_write_backs{0}, early_write_back_bytes{0};
  std::uint64_t early_write_backs_wasted{0}, early_write_back_wasted_bytes{0};
  std::uint64_t prefetch_on_time_device{0}, prefetch_late_device{0};
  double prefetch_lateness_seconds{0.0};
  double prefetch_lead_seconds{0.0};
  std::uint64_t prefetch_wasted_bytes{0};
  std::array<char, 192> prefetch{};  ///< the predictor spec, all parameters (cut to fit)
  std::uint64_t pressure_shrinks{0}, pressure_released_bytes{0};
  std::array<seg_tier, kMaxTiers> tiers{};
  std::array<seg_tenant, kMaxTenants> tenants{};
};

/// The whole segment: a header a reader checks before anything else, then the payload.
struct segment_layout {
  std::uint64_t magic{0};    ///< kMagic, written last at creation
  std::uint32_t version{0};  ///< kVersion
  std::uint32_t bytes{0};    ///< sizeof(segment_layout)
  std::uint64_t seq{0};      ///< seqlock sequence: odd while the payload is written
  std::uint64_t reserved{0};
  seg_payload payload{};
};

static_assert(sizeof(seg_payload) % sizeof(std::uint64_t) == 0);
static_assert(sizeof(segment_layout) % sizeof(std::uint64_t) == 0);
static_assert(std::is_trivially_copyable_v<segment_layout>);

/// Fill a payload from a pool's figures (names cut to their arrays, lists to kMax*).
void fill_payload(seg_payload& p, pool_stats const& st);
/// The figures of a payload (the stored tiers and tenants).
[[nodiscard]] pool_stats stats_of(seg_payload const& p);
/// Copy `from` into `to` word by word with atomic accesses of the given orders (one side
/// is shared: the writer stores with release, the reader loads with acquire).
void copy_words(void* to, void const* from, std::size_t bytes, std::memory_order load_order,
                std::memory_order store_order) noexcept;
/// Copy a string into a fixed NUL-padded array (cut to fit, always terminated; a cut never
/// splits a UTF-8 sequence, so a valid name stays valid).
template <std::size_t N>
void put_string(std::array<char, N>& to, std::string const& s) noexcept
{
  to.fill('\0');
  std::size_t n = std::min(s.size(), N - 1);
  if (n < s.size()) {
    // Back off over continuation bytes (10xxxxxx) to the start of the sequence cut.
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0U) == 0x80U) { --n; }
  }
  s.copy(to.data(), n);
}
/// The string in a fixed array (up to its first NUL).
template <std::size_t N>
[[nodiscard]] std::string get_string(std::array<char, N> const& a)
{
  std::size_t n = 0;
  while (n < N && a[n] != '\0') { ++n; }
  return {a.data(), n};
}

/// Text a segment says, made safe to print and to put in JSON: valid UTF-8 is kept, except
/// control characters (C0, DEL, C1), which become `\xNN` (`\n` for a newline); each byte of
/// an invalid sequence becomes `\xNN`.
[[nodiscard]] std::string printable(std::string_view s);

/// Why opening the segment at `path` for reading failed with `err`, in words; for EACCES
/// and EPERM "not permitted to read it (mode, owner uid, group gid): ..." and how a pool
/// lets others read (publish_options::group).
[[nodiscard]] std::string classify_open_error(int err, std::string const& path);

/**
 * One pool's published segment and the thread that refreshes it.
 *
 * create() makes /dev/shm/tierpool.<pid>.<n> with its pages reserved (so that a full
 * /dev/shm is an error here, never a SIGBUS later), mode 0600, or 0640 owned by `group`
 * when that names a group (name or number), and returns null with `why` set when it
 * cannot (no /dev/shm, no space, no such group), leaving no file behind: publishing is
 * best effort and never fails a pool.
 * publish() writes `stats()` now (thread-safe; serialized). With interval_ms > 0 a thread
 * calls it every interval until stop(). The destructor stops the thread and removes the
 * segment.
 */
class publisher {
 public:
  /// @brief Figures source; called with no lock of the publisher held.
  using source = std::function<pool_stats()>;

  static std::unique_ptr<publisher> create(std::string const& name, std::string const& backend,
                                           std::string const& device, std::uint32_t interval_ms, source src,
                                           std::string& why, std::string const& group = {});
  ~publisher();
  publisher(publisher const&) = delete;
  publisher& operator=(publisher const&) = delete;

  /// @brief Write the current figures into the segment.
  void publish();
  /// @brief Stop the refresh thread (idempotent); the segment stays until destruction.
  void stop() noexcept;
  /// @brief The segment's name (without /dev/shm/).
  [[nodiscard]] std::string const& segment() const noexcept { return segment_; }

 private:
  publisher() = default;
  void run();

  std::string segment_;
  std::string path_;  // directory and name: where it was made, whatever the directory is now
  std::int64_t owner_pid_{0};  // a forked child inherits the object, not the thread or the segment
  void* base_{nullptr};
  std::size_t bytes_{0};
  source src_;
  std::mutex write_mtx_;   // serializes publish(); leaf
  seg_payload scratch_{};  // guarded by write_mtx_
  std::uint32_t interval_ms_{0};
  std::mutex stop_mtx_;
  std::condition_variable stop_cv_;
  bool stopping_{false};
  std::thread thread_;
};

}  // namespace tierpool::telemetry

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// compiled_data.hpp — internal: the compact arrays a compiled_trace holds, read by the
// cache and pool replay loops (runtime/replay/*.cpp). Not installed.
#pragma once

#include <tierpool/replay.hpp>

#include <tierpool/detail/big_array.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace tierpool::replay::detail {

/// "No next access" in cache_req::next and pool_op::next.
inline constexpr std::uint32_t kNoNext = std::numeric_limits<std::uint32_t>::max();

/// Largest size of a tensor or object (and the mask of a size in a 64-bit word).
inline constexpr std::uint64_t kMaxBytes = (1ULL << 60U) - 1U;

// cache_req::word: the size in the low 28 bits, flags in the top 4.
inline constexpr std::uint32_t kFreeFlag = 1U << 31U;     // not a request: the object is freed
inline constexpr std::uint32_t kWriteFlag = 1U << 30U;    // read_write or write_discard
inline constexpr std::uint32_t kDiscardFlag = 1U << 29U;  // write_discard: needs no copy-in
inline constexpr std::uint32_t kBornOnDeviceFlag = 1U << 28U;  // first access of a tensor allocated without a host preference
inline constexpr std::uint32_t kSizeMask = (1U << 28U) - 1U;
/// A size of kBigSize bytes or more: the request's size is the next entry of
/// compiled_data::big_sizes (in request order; see Note [Twelve-byte requests]).
inline constexpr std::uint32_t kBigSize = kSizeMask;

// Note [Twelve-byte requests]
// A cache-mode run holds one entry per request (2.3 M for the CloudPhysics trace looped 20
// times): the entry's size is what a run's memory is. Sizes below 256 MiB (every request of
// a block or object cache trace, most tensors) fit in 28 bits beside the flags; a larger one
// stores kBigSize and its size goes, in request order, to big_sizes. Every reader walks the
// array front to back, so a cursor into big_sizes finds it without a search: one branch,
// never taken on a cache trace. 16 bytes a request before (a 64-bit size word).

/// One request of the cache-mode array (12 bytes).
struct cache_req {
  std::uint32_t obj;   ///< dense object index
  std::uint32_t next;  ///< position of the object's next request in the array, or kNoNext
  std::uint32_t word;  ///< requested size (kBigSize: see big_sizes) | flags (a free carries kFreeFlag and the size 0)
};
static_assert(sizeof(cache_req) == 12);

/// Reads the sizes of the requests in order (Note [Twelve-byte requests]).
class size_cursor {
 public:
  explicit size_cursor(std::uint64_t const* big) noexcept : big_(big) {}
  /// The size of `r`, the next request in array order.
  [[nodiscard]] std::uint64_t operator()(cache_req const& r) noexcept
  {
    std::uint32_t const s = r.word & kSizeMask;
    if (s != kBigSize) [[likely]] { return s; }
    return *big_++;
  }

 private:
  std::uint64_t const* big_;
};

/// What a pool-mode event does.
enum class pool_op_kind : std::uint8_t { allocate, free, access, prefetch, compute, release, discard };

/// Target tier of a pool_op (the replay pool has two tiers: 0 device, 1 host).
inline constexpr std::uint32_t kAnyTier = std::numeric_limits<std::uint32_t>::max();

/// One event of the pool-mode array (32 bytes).
struct pool_op {
  pool_op_kind kind{pool_op_kind::access};
  trace::access_kind mode{trace::access_kind::read};  ///< access
  std::uint8_t host{0};  ///< access, release: by the host (acquire_host), not on a stream
  std::uint8_t pad1{0};
  std::uint32_t obj{0};     ///< allocate, free, access, prefetch, release, discard: dense index
  std::uint32_t stream{0};  ///< access, compute: dense stream index
  std::uint32_t tier{kAnyTier};  ///< allocate: preferred tier (0/1) or kAnyTier; prefetch: target
  std::uint64_t bytes{0};   ///< allocate, access: size
  std::uint64_t arg{0};     ///< compute: duration ns; access, allocate: position of the next access or kNoNext
};
static_assert(sizeof(pool_op) == 32);

/// Everything compile() derives from a trace.
struct compiled_data {
  compile_options options{};
  /// Every access and free (also read by the ideal time's floors in pool mode). Tens of MiB for a
  /// long trace, written once front to back: on huge pages (Note [Big arrays on huge
  /// pages]), one page fault per 131072 requests instead of one per 256.
  std::vector<cache_req, tierpool::detail::big_array_allocator<cache_req>> cache;
  std::vector<pool_op, tierpool::detail::big_array_allocator<pool_op>> ops;  ///< empty unless options.pool
  /// Sizes of the requests of kBigSize bytes or more, in request order (Note [Twelve-byte requests]).
  std::vector<std::uint64_t> big_sizes;
  std::uint64_t events{0};
  std::uint64_t requests{0};
  std::uint64_t objects{0};
  std::uint64_t working_set_bytes{0};
  std::uint64_t peak_live_bytes{0};
  std::uint64_t requested_bytes{0};     ///< sum of every request's size (looping included)
  std::uint64_t compute_ns{0};          ///< all streams
  std::uint64_t max_stream_compute_ns{0};
  std::uint64_t compute_events{0};
  std::uint64_t release_events{0};      ///< a recorded run: leases live until their release
  std::uint64_t discard_events{0};      ///< discard events of live tensors (pool::discard)
  std::uint32_t streams{0};             ///< dense stream count (at least 1)
  bool discards{false};                 ///< some request carries kDiscardFlag (write_discard)
  bool flagged{false};                  ///< some entry of `cache` carries a flag (a free, a write, born on the device)
  /// Pool mode: the trace's phase markers, each before the op at index `op` (looped
  /// passes repeat them), naming `phase_names[name]`. Runs that record a timeline time them.
  struct phase_mark {
    std::uint32_t op{0};
    std::uint32_t name{0};
  };
  std::vector<phase_mark> phase_marks;
  std::vector<std::string> phase_names;  ///< distinct labels, in first-seen order
  /// Pool mode: the eviction hints of the objects whose allocate carries some (trace::event::
  /// hints, and duration_ns as the recompute cost), by dense index.
  struct object_hint {
    std::uint64_t recompute_ns{0};
    std::uint8_t hints{0};
  };
  std::unordered_map<std::uint32_t, object_hint> hints;
};

/// The ideal time's byte floors at one capacity (docs/chapters/replay.md, "The ideal time").
struct must_move {
  std::uint64_t h2d_bytes{0};
  std::uint64_t h2d_copies{0};  ///< compulsory copies (each a copy of its own)
  std::uint64_t d2h_bytes{0};
};

/// Per object (dense index), 1 where the trace gives it a recipe (an allocate hint with a
/// recompute cost: the pool replay may drop it and rebuild it); empty when none has one.
[[nodiscard]] std::vector<std::uint8_t> recomputable_mask(compiled_data const& d);

/// Bytes any policy must move at `capacity` (one pass over the cache array). Objects marked
/// in `leave_out` (recomputable_mask; empty: none) are left out of the trace: Note
/// [Floors with recompute].
[[nodiscard]] must_move compute_must_move(compiled_data const& d, std::uint64_t capacity,
                                          std::vector<std::uint8_t> const& leave_out = {});

/// The phase floor on any schedule's makespan at `capacity` with links of `bytes_per_s`
/// (Note [A floor from the phases], window_bound.cpp), seconds; 0 where it does not apply
/// (no phase markers, kernels on more than one stream, too many markers). `leave_out` as
/// compute_must_move's.
[[nodiscard]] double window_bound_seconds(compiled_data const& d, std::uint64_t capacity, double bytes_per_s,
                                          std::vector<std::uint8_t> const& leave_out = {});

}  // namespace tierpool::replay::detail

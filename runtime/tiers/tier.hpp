// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file tier.hpp
 * @brief Internal: one tier of the pool — backend chunks of one memory kind, sub-allocated
 *        by an arena, with a capacity budget, stream-ordered (deferred) frees and figures.
 *
 * Not installed API. The pool (runtime/core) sits on top: it adds eviction, the policy
 * and the rest of the out-of-memory ladder. See docs/notes/pool_design.md and
 * runtime/tiers/README.md.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tierpool/arena.hpp>
#include <tierpool/backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/export.hpp>
#include <tierpool/tier.hpp>
#include <tierpool/types.hpp>

#include "util/flat_u64_set.hpp"

namespace tierpool::detail {

class event_pool;

/**
 * @brief Where a tier's chunks come from when not from the backend: a storage tier's
 *        file gives address ranges that stand for file offsets (Note [Where a storage
 *        tier's bytes are], runtime/tiers/storage_file.cpp).
 *
 * Thread safety: called under the tier's lock only; one source serves one tier.
 */
class chunk_source {
 public:
  chunk_source() = default;
  chunk_source(chunk_source const&) = delete;
  chunk_source& operator=(chunk_source const&) = delete;
  virtual ~chunk_source() = default;
  /// @brief A range of `bytes` (a multiple of alignment()), aligned to alignment(); out_of_memory when none is left.
  [[nodiscard]] virtual status allocate_chunk(std::size_t bytes, void** out) noexcept = 0;
  /// @brief Give back a range from allocate_chunk.
  virtual void deallocate_chunk(void* base, std::size_t bytes) noexcept = 0;
  /// @brief Alignment of every range (a power of two).
  [[nodiscard]] virtual std::size_t alignment() const noexcept = 0;
};

/// @brief Construction options of a @ref tier (create-info aggregate).
struct tier_config {
  tier_kind kind{tier_kind::device};  ///< memory kind of every chunk
  int numa_node{-1};                  ///< for host kinds: NUMA node to bind chunks to (-1: none)
  std::size_t capacity_bytes{0};      ///< budget: reserved (chunks) never exceeds it; rounded down to alignment
  std::size_t chunk_bytes{0};         ///< growth step; rounded up to alignment; > 0
  std::size_t initial_bytes{0};       ///< reserved eagerly at construction (one chunk); <= capacity
  std::size_t alignment{256};         ///< granularity and default alignment (power of two, 8..backend alignment)
  std::string name{};                 ///< for messages; empty: the kind's name
  /// Chunks come from here instead of the backend (a storage tier's file); must outlive the
  /// tier. Null: from the backend. With a source, alignment may go up to the source's.
  chunk_source* source{nullptr};
};

/// @brief A live block of a tier: the arena slot, the pointer and the requested size.
struct block {
  arena::allocation slot{};  ///< arena handle (offset is global; size is the reservation)
  void* ptr{nullptr};        ///< first byte: chunk base + offset within the region (+ alignment padding)
  std::size_t bytes{0};      ///< bytes requested; [ptr, ptr + bytes) lies inside the slot
};

/// @brief Where one chunk lies (see tier::chunk_ranges). A released chunk has a null base.
struct chunk_range {
  void const* base{nullptr};  ///< first byte, or null while released
  std::size_t bytes{0};       ///< size of the chunk (== its arena region's capacity)
};

/// @brief Whether tier::allocate may grow the tier by a backend chunk.
enum class tier_grow : bool { forbid = false, allow = true };

/// @brief Why tier::allocate returned no block.
enum class tier_alloc_result : std::uint8_t {
  ok,              ///< a block was returned
  no_fit,          ///< no free block fits and growing was forbidden by the caller
  over_capacity,   ///< no free block fits and a chunk big enough would exceed capacity_bytes
  backend_failed,  ///< growing was within budget but the backend's allocate failed (see backend_status)
};

/// @brief Lower-case name of a result ("ok", "no_fit", "over_capacity", "backend_failed").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(tier_alloc_result r) noexcept;

/// @brief What tier::allocate did, for the caller's next ladder step and its diagnosis.
struct tier_alloc_report {
  tier_alloc_result result{tier_alloc_result::ok};
  status backend_status{status::ok};  ///< status of the last backend allocate tried (ok if none failed)
  bool grew{false};                   ///< a chunk was added (or a released one revived)
  std::size_t reclaimed_bytes{0};     ///< deferred frees returned to the arena ("completed frees")
  std::size_t deferred_bytes{0};      ///< bytes still awaiting events afterwards (reclaim_oldest_blocking may help)
  std::size_t free_bytes{0};          ///< afterwards: free in the arena (fragmentation when >= request)
  // No largest free block here: scanning the arena's top bin on every failed allocation
  // cost a miss-heavy replay ~1 %; a diagnosis asks usage() instead.
};

/// @brief Figures of a tier at one moment. Invariant: used + deferred + free == reserved <= capacity.
struct tier_usage {
  std::size_t capacity_bytes{0};       ///< budget (rounded down to alignment)
  std::size_t reserved_bytes{0};       ///< SUM of live chunk sizes
  std::size_t used_bytes{0};           ///< SUM of slot sizes of live blocks
  std::size_t peak_used_bytes{0};      ///< MAX of used_bytes since construction
  std::size_t deferred_bytes{0};       ///< SUM of slot sizes awaiting their events
  std::size_t free_bytes{0};           ///< free in the arena (inside live chunks)
  std::size_t largest_free_block{0};   ///< bytes
  double external_fragmentation{0.0};  ///< 1 - largest_free / free (0 when nothing free)
  std::size_t chunk_count{0};          ///< COUNT of live chunks
  std::size_t allocation_count{0};     ///< COUNT of live blocks (deferred ones excluded)
  std::size_t deferred_count{0};       ///< COUNT of blocks awaiting events
  std::uint64_t grow_count{0};         ///< COUNT of chunks obtained from the backend
  std::uint64_t grow_failure_count{0}; ///< COUNT of backend allocate failures while growing
  std::uint64_t chunk_release_count{0};///< COUNT of chunks given back by release_unused_chunks
};

/**
 * @brief One tier: memory of one kind obtained from a backend in chunks, each chunk one
 *        arena region, with a capacity budget and deferred (event-ordered) frees.
 *
 * `allocate` runs the tier's own steps of the out-of-memory ladder (pool_design.md):
 * (1) return deferred frees whose events completed, (2) the arena, (3) grow by a chunk
 * within the budget. It never evicts and never blocks; the pool does the rest, calling
 * `reclaim_oldest_blocking` when eviction cannot help.
 *
 * Thread safety: none inside — the tier is **externally synchronized**. Its owner (the
 * pool) holds `mutex()` around every call, including const ones; backend calls made
 * under it (allocate while growing, query_event while polling, synchronize_event in
 * reclaim_oldest_blocking and the destructor) therefore run under the owner's lock.
 *
 * Ownership: not copyable or movable. Owns its chunks (freed by the destructor) and the
 * events handed to deallocate_after (returned to the event pool once complete). The
 * backend and the event pool must outlive the tier. Blocks still live at destruction
 * simply become invalid (their chunk is freed).
 *
 * Stream semantics: a block's memory may be reused only after every use of it has
 * completed; deallocate() asserts that now (the caller has synchronized or never used
 * it on a stream), deallocate_after(b, e, s) defers the reuse until event `e` (last
 * recorded on stream `s`) completes. See Note [Deferred frees: one FIFO per stream] in
 * tier.cpp.
 *
 * @code
 * tierpool::detail::event_pool events{be};
 * tierpool::detail::tier t{be, events, {.kind = tier_kind::device, .capacity_bytes = 1_GiB,
 *                                       .chunk_bytes = 64_MiB}};
 * std::lock_guard lock(t.mutex());
 * tierpool::detail::tier_alloc_report why;
 * if (auto b = t.allocate(4_MiB, 0, &why)) { use(b->ptr); t.deallocate(*b); }
 * @endcode
 */
class TIERPOOL_EXPORT tier {
 public:
  /**
   * @brief Build a tier and reserve `initial_bytes` (one chunk) eagerly.
   * @param be     Backend providing the chunks; must outlive the tier.
   * @param events Pool the deferred-free events return to; must outlive the tier.
   * @param config Kind, budget, chunking and alignment.
   * @throws tierpool::logic_error if the config is invalid: alignment not a power of two,
   *         < 8 or above the backend's allocation_alignment; capacity below alignment;
   *         chunk_bytes 0; initial_bytes above capacity; events of another backend.
   * @throws tierpool::backend_error if the initial chunk cannot be allocated.
   */
  tier(backend& be, event_pool& events, tier_config config);
  /// @brief Waits for outstanding deferred frees' events, returns them, frees every chunk.
  ~tier();
  tier(tier const&) = delete;
  tier& operator=(tier const&) = delete;

  /**
   * @brief Allocate `bytes` aligned to `alignment`: reclaim completed deferred frees, try
   *        the arena, then (if `grow` allows) add a chunk within the budget. Never blocks.
   *
   * A request larger than chunk_bytes gets a dedicated chunk of its (rounded) size; a
   * chunk never takes the reservation beyond capacity_bytes (the last one may be
   * smaller than chunk_bytes). A failed backend allocate changes nothing.
   *
   * @param bytes     Requested bytes, > 0 (the slot is rounded up to the alignment config).
   * @param alignment Power of two, or 0 for config.alignment. Alignments up to the
   *                  backend's allocation_alignment cost nothing; larger ones pad the slot.
   * @param report    When non-null, receives what happened (always filled).
   * @param grow      tier_grow::forbid: arena only (the pool evicts before growing).
   * @return The block, or std::nullopt (see report->result).
   * @throws tierpool::logic_error if `bytes == 0` or `alignment` is not a power of two.
   * @throws std::bad_alloc if the tier's own bookkeeping cannot grow (state unchanged).
   */
  [[nodiscard]] std::optional<block> allocate(std::size_t bytes, std::size_t alignment = 0,
                                              tier_alloc_report* report = nullptr,
                                              tier_grow grow = tier_grow::allow);

  /**
   * @brief Allocate `bytes` exactly at arena offset `offset` (a multiple of the alignment),
   *        when that range is free: where compaction moves a copy, or the room it cleared
   *        (Note [Compaction], runtime/migration/compaction.cpp). Never grows, never blocks.
   * @return The block (its pointer the slot's first byte), or std::nullopt when the range
   *         is not wholly free; nothing changes then.
   */
  [[nodiscard]] std::optional<block> allocate_at(std::uint64_t offset, std::size_t bytes) noexcept;

  /**
   * @brief Return a block to the arena now. The caller guarantees no queued work uses it.
   * @throws tierpool::logic_error if `b` is not a live block of this tier (double free,
   *         already deferred, another tier's block, or a pointer/size not matching its
   *         slot); the tier is left unchanged.
   */
  void deallocate(block const& b);

  /**
   * @brief Return a block once `e` has completed (stream-ordered free).
   *
   * The tier takes ownership of `e` (which must come from the tier's event pool and be
   * recorded, last, on `recorded_on`) and releases it to the pool when done. A null `e`
   * means "nothing pending": the block is freed at once.
   *
   * @throws tierpool::logic_error as deallocate(), or if `e` is not outstanding in the
   *         tier's event pool; then nothing changes and the caller keeps `e`.
   * @throws std::bad_alloc if the bookkeeping cannot grow (nothing changes).
   */
  void deallocate_after(block const& b, event_handle e, stream_handle recorded_on = {});

  /**
   * @brief Stream-ordered reuse: hand out a block still awaiting its deferred free, without
   *        waiting for it. The caller takes the pending event and must order every use of
   *        the block after it (a stream waits on it, or the host synchronizes on it).
   *
   * Picks the best fit among the deferred slots of `bytes`..`bytes + bytes / 4 + 4 KiB`
   * (so that reuse costs little internal waste), alignment config.alignment, recorded on
   * a stream `allowed(stream)` accepts (the pool offers only its own copy streams' lanes,
   * so that a copy never waits behind a user's queue). See Note [Stream-ordered reuse of
   * deferred blocks] in tier.cpp.
   * @param bytes Requested bytes, > 0.
   * @param allowed Predicate over the stream a deferred free's event was recorded on.
   * @param[out] after The pending event (owned by the caller now; release it to the tier's
   *             event pool when done); null when nothing was taken.
   * @param[out] recorded_on When non-null, receives the stream `after` was recorded on (so
   *             that a caller that cannot use the block may hand both back with
   *             deallocate_after); the default stream when nothing was taken.
   * @return The block (`bytes` long inside its slot), or std::nullopt.
   */
  template <class Allowed>
  [[nodiscard]] std::optional<block> take_deferred(std::size_t bytes, Allowed allowed, event_handle* after,
                                                   stream_handle* recorded_on = nullptr) noexcept
  {
    *after = event_handle{};
    if (recorded_on != nullptr) { *recorded_on = stream_handle{}; }
    if (deferred_count_ == 0) { return std::nullopt; }
    lane* best_lane = nullptr;
    std::size_t best_i = 0;
    std::size_t best_size = 0;
    std::size_t const limit = bytes + bytes / 4 + 4096;
    for (lane& l : lanes_) {
      if (!allowed(l.stream)) { continue; }
      for (std::size_t i = 0; i < l.fifo.size(); ++i) {
        std::size_t const sz = l.fifo[i].b.slot.size;
        if (sz >= bytes && sz <= limit && (best_lane == nullptr || sz < best_size)) {
          best_lane = &l;
          best_i = i;
          best_size = sz;
        }
      }
    }
    if (best_lane == nullptr) { return std::nullopt; }
    if (recorded_on != nullptr) { *recorded_on = best_lane->stream; }
    return take_deferred_at(*best_lane, best_i, bytes, after);
  }

  /// @brief The pending events a stream-ordered reuse of several blocks hands over
  ///        (take_deferred_span): every use of the block must be ordered after all of them.
  struct deferred_span {
    static constexpr std::size_t kMaxParts = 16;  ///< deferred blocks merged at most
    std::array<event_handle, kMaxParts> events{};  ///< owned by the caller (release to the tier's event pool)
    std::array<stream_handle, kMaxParts> streams{};  ///< the stream each was recorded on
    /// The event stays with the tier (a block split: its tail is still deferred behind it):
    /// wait for it, never release it.
    std::array<bool, kMaxParts> borrowed{};
    std::size_t count{0};
  };
  /// @brief Span searches answered by the last one that failed, nothing having changed
  ///        since (Note [A failed span search is remembered], tier.cpp).
  [[nodiscard]] std::uint64_t span_searches_remembered() const noexcept { return span_miss_.skipped; }

  /**
   * @brief Stream-ordered reuse of any size: hand out one block made of deferred blocks
   *        (recorded on streams `allowed` accepts) and the free blocks between and around
   *        them, contiguous in one chunk, without waiting. See Note [Merging deferred blocks]
   *        in tier.cpp.
   *
   * Among the windows of at most deferred_span::kMaxParts deferred blocks that hold `bytes`
   * (every merged block wholly inside the result but the last, which may be split: its
   * tail stays deferred behind the same event, borrowed by the caller), picks the one
   * whose newest deferral is oldest (the one likely to complete first), then one without
   * a split.
   * @param[out] out The pending events (count 0 when nothing was taken).
   * @return The block (`bytes` long inside its slot), or std::nullopt.
   */
  template <class Allowed>
  [[nodiscard]] std::optional<block> take_deferred_span(std::size_t bytes, Allowed allowed, deferred_span* out) noexcept
  {
    out->count = 0;
    if (deferred_count_ == 0 || bytes == 0) { return std::nullopt; }
    try {
      lane_allowed_.clear();
      for (lane const& l : lanes_) { lane_allowed_.push_back(allowed(l.stream) ? 1 : 0); }
    } catch (...) {  // bad_alloc: no reuse this time
      return std::nullopt;
    }
    return take_deferred_span_impl(bytes, out);
  }

  /**
   * @brief Whether waiting for deferred frees could place `bytes`: some run of free and
   *        deferred blocks, contiguous in one chunk, is that large. O(blocks); the ladder
   *        asks before it waits (a sum of scattered deferred bytes is no reason to).
   */
  [[nodiscard]] bool deferred_run_fits(std::size_t bytes) const noexcept;

  /// @brief True when no free block lies right before or after block `a` (a live block of
  ///        the tier): freeing it or deferring it would not merge with free space. O(1).
  [[nodiscard]] bool walled_in(arena::allocation const& a) const noexcept
  {
    arena::free_around const fa = arena_.free_neighbours(a);
    return fa.before == 0 && fa.after == 0;
  }

  /// @brief The slot size a request of `bytes` gets (rounded up to the alignment).
  [[nodiscard]] std::size_t slot_bytes(std::size_t bytes) const noexcept { return (bytes + gran_ - 1) / gran_ * gran_; }

  /// @brief "Completed frees" alone: return every deferred free whose event completed. @return bytes returned.
  std::size_t reclaim_completed() noexcept;

  /**
   * @brief Block until the oldest deferred free's event completes, then return it (and any
   *        other completed ones).
   * @param reclaimed When non-null, receives the bytes returned (0 if nothing was deferred).
   * @return ok (also when nothing was deferred), or the backend's synchronize_event status
   *         (the entry then stays deferred).
   */
  [[nodiscard]] status reclaim_oldest_blocking(std::size_t* reclaimed = nullptr) noexcept;

  /**
   * @brief Give back to the backend every chunk with no live or deferred block (after
   *        reclaiming completed deferred frees). The arena cannot drop a region, so a
   *        released chunk stays as a reserved placeholder region that a later grow of a
   *        fitting size revives. Best effort: a chunk the arena cannot pin down is kept.
   * @return Bytes given back.
   */
  std::size_t release_unused_chunks() noexcept;

  /**
   * @brief Set the budget to `bytes` (rounded down to the alignment). Growing needs nothing
   *        else; the caller shrinks only to at least reserved_bytes() (it empties and
   *        releases chunks first), so used + deferred + free == reserved <= capacity holds.
   * @throws tierpool::logic_error when the rounded value is below the alignment or below
   *         reserved_bytes(); nothing changes then.
   */
  void set_capacity(std::size_t bytes);

  /// @brief Start the peak over: peak_used_bytes becomes used_bytes.
  void reset_peak() noexcept { peak_used_ = used_; }

  /// @brief True when `b` is a live (not deferred) block of this tier.
  [[nodiscard]] bool owns(block const& b) const noexcept;

  /// @brief All figures at once. O(1) plus the arena's largest_free_block.
  [[nodiscard]] tier_usage usage() const noexcept;

  /// @brief Every chunk, indexed like arena regions (`block.slot.region`). O(chunks), allocates.
  [[nodiscard]] std::vector<chunk_range> chunk_ranges() const;

  /// @brief What a block of the tier's layout holds (for_each_block).
  enum class block_use : std::uint8_t {
    free,      ///< free in the arena
    live,      ///< a live block (a tensor's copy, for the pool)
    deferred,  ///< freed, awaiting its event (deallocate_after): reused once that completes
    released,  ///< a released chunk's placeholder (given back to the backend; not memory now)
  };
  /// @brief One block of the layout: where it is and what holds it.
  struct block_view {
    std::uint64_t offset{0};        ///< global arena offset (as block.slot.offset)
    std::uint64_t size{0};          ///< bytes (slot size)
    std::uint32_t chunk{0};         ///< chunk index (== arena region)
    std::uint64_t chunk_offset{0};  ///< offset inside the chunk
    block_use use{block_use::free};
  };
  /**
   * @brief Call `f(block_view const&)` for every block of every chunk, in offset order, the
   *        blocks tiling each chunk. O(blocks); allocates nothing. The caller holds mutex().
   */
  template <class F>
  void for_each_block(F&& f) const
  {
    arena_.for_each_block([&](arena::block_info const& b) {
      chunk const& c = chunks_[b.region];
      block_use const use = b.free                                  ? block_use::free
                            : c.placeholder                         ? block_use::released
                            : deferred_offsets_.contains(b.offset)  ? block_use::deferred
                                                                    : block_use::live;
      f(block_view{.offset = b.offset, .size = b.size, .chunk = b.region,
                   .chunk_offset = b.offset - arena_.region_base(b.region), .use = use});
    });
  }

  /// @brief What fit() found: how many blocks of one size the tier can still place.
  struct fit_figures {
    std::size_t slot_bytes{0};           ///< the size asked about, rounded up to the alignment
    std::size_t now{0};                  ///< COUNT placeable without evicting or waiting (free blocks, then growth)
    std::size_t reclaimed{0};            ///< COUNT placeable once the `reclaimable` blocks and every deferred free are gone
    std::size_t largest_now{0};          ///< bytes: largest block placeable without evicting or waiting
    std::size_t largest_reclaimed{0};    ///< bytes: the same once those blocks are gone
    std::size_t growable_bytes{0};       ///< capacity - reserved: chunks the tier may still obtain
    std::size_t reclaimable_bytes{0};    ///< SUM of the `reclaimable` blocks found in the tier
    std::size_t pending_bytes{0};        ///< SUM of deferred frees whose events have not completed
  };
  /**
   * @brief Count how many blocks of `bytes` the tier could place: in its free blocks and
   *        by growing within its budget (each chunk max(chunk_bytes, block), as allocate
   *        grows), and again as if the blocks at `reclaimable` (arena offsets, sorted) and
   *        the deferred frees were free, merged with their free neighbours. Released chunks
   *        count as budget. The caller holds mutex(). O(blocks + log(reclaimable)) per block.
   *        Assumes the backend has memory for the growth (on a GPU, other programs may not
   *        leave it).
   * @throws std::bad_alloc.
   */
  [[nodiscard]] fit_figures fit(std::size_t bytes, std::vector<std::uint64_t> const& reclaimable) const;
  /**
   * @brief As fit(bytes, reclaimable), but from the other side: every allocated block is
   *        reclaimable except those at `held` (arena offsets, sorted): the pinned copies.
   * @throws std::bad_alloc.
   */
  [[nodiscard]] fit_figures fit_except(std::size_t bytes, std::vector<std::uint64_t> const& held) const;

  /// @brief Bytes awaiting events. O(1).
  [[nodiscard]] std::size_t deferred_bytes() const noexcept { return deferred_bytes_; }

  /// @brief SUM of live chunk sizes (usage().reserved_bytes without the rest). O(1).
  [[nodiscard]] std::size_t reserved_bytes() const noexcept { return reserved_; }

  /// @brief Check the arena and that the counters agree (see tier.cpp). O(chunks + deferred + arena).
  [[nodiscard]] bool validate() const;

  /// @brief The config, with capacity/chunk sizes as rounded at construction.
  [[nodiscard]] tier_config const& config() const noexcept { return config_; }
  /// @brief Kind of memory.
  [[nodiscard]] tier_kind kind() const noexcept { return config_.kind; }
  /// @brief Name used in messages.
  [[nodiscard]] std::string const& name() const noexcept { return config_.name; }
  /// @brief The mutex the owner holds around every call (the tier never locks it itself).
  [[nodiscard]] std::mutex& mutex() const noexcept { return mtx_; }

 private:
  [[nodiscard]] fit_figures fit_impl(std::size_t bytes, std::vector<std::uint64_t> const& offsets, bool held) const;
  struct chunk {
    void* base;                                // null while released
    std::size_t bytes;                         // == arena region capacity
    std::size_t blocks;                        // COUNT of live + deferred slots in the region
    std::optional<arena::allocation> placeholder;  // set while released: the whole region
  };
  struct deferred_free {
    block b;
    event_handle event;
    std::uint64_t seq;  // global deferral order (oldest = smallest)
  };
  // A FIFO over one vector: pop_front advances a head index, compacting once the popped
  // prefix is at least half; the storage is kept and recycled (lanes come and go with
  // every reclaim), so a steady state allocates nothing (std::deque allocated a block per
  // few entries).
  class deferred_fifo {
   public:
    [[nodiscard]] bool empty() const noexcept { return head_ == items_.size(); }
    [[nodiscard]] std::size_t size() const noexcept { return items_.size() - head_; }
    [[nodiscard]] deferred_free& operator[](std::size_t i) noexcept { return items_[head_ + i]; }
    [[nodiscard]] deferred_free const& operator[](std::size_t i) const noexcept { return items_[head_ + i]; }
    [[nodiscard]] deferred_free& front() noexcept { return items_[head_]; }
    [[nodiscard]] deferred_free const* begin() const noexcept { return items_.data() + head_; }
    [[nodiscard]] deferred_free const* end() const noexcept { return items_.data() + items_.size(); }
    void push_back(deferred_free const& d) { items_.push_back(d); }  // may throw: unchanged
    void pop_front() noexcept
    {
      if (++head_ == items_.size()) {
        items_.clear();
        head_ = 0;
      } else if (head_ >= 64 && head_ * 2 >= items_.size()) {
        items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));  // moves only: no throw
        head_ = 0;
      }
    }
    void erase_at(std::size_t i) noexcept
    {
      items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(head_ + i));
      if (head_ == items_.size()) {
        items_.clear();
        head_ = 0;
      }
    }
    /// The storage, emptied (for recycling).
    [[nodiscard]] std::vector<deferred_free> take_storage() noexcept
    {
      items_.clear();
      head_ = 0;
      return std::move(items_);
    }
    explicit deferred_fifo(std::vector<deferred_free> storage = {}) noexcept : items_(std::move(storage)) {}

   private:
    std::vector<deferred_free> items_;
    std::size_t head_{0};
  };
  struct lane {  // deferred frees whose events were recorded on one stream, in deferral order
    stream_handle stream;
    deferred_fifo fifo;
  };

  void check_block(block const& b, char const* what) const;
  void grow(std::size_t need, tier_alloc_report& report);
  bool revive_chunk(std::size_t need, std::size_t remaining, tier_alloc_report& report);
  void finish_deferred(deferred_free const& d) noexcept;
  std::optional<block> take_deferred_at(lane& l, std::size_t i, std::size_t bytes, event_handle* after) noexcept;
  std::optional<block> take_deferred_span_impl(std::size_t bytes, deferred_span* out) noexcept;
  void drop_empty_lanes() noexcept;
  [[nodiscard]] std::byte* slot_base(arena::allocation const& a) const;
  void fill_report(tier_alloc_report& report) const noexcept;
  [[nodiscard]] status allocate_chunk(std::size_t bytes, void** out) noexcept;
  void deallocate_chunk(void* base, std::size_t bytes) noexcept;

  backend* backend_;
  event_pool* events_;
  tier_config config_;
  std::size_t gran_;        // arena granularity == config_.alignment
  std::size_t base_align_;  // every chunk base is aligned to this (backend allocation_alignment)
  arena arena_;
  mutable std::mutex mtx_;

  std::vector<chunk> chunks_;  // index == arena region index
  std::vector<lane> lanes_;
  std::vector<std::vector<deferred_free>> spare_fifos_;  // storage of dropped lanes, for new ones
  flat_u64_set deferred_offsets_;  // slot offsets of deferred blocks
  // Scratch of take_deferred_span (under the owner's lock): lanes the caller allows, and
  // the candidate blocks in offset order.
  struct span_candidate {
    arena::allocation slot;
    std::uint64_t before;  // free bytes right before the block
    std::uint64_t after;   // free bytes right after it
    std::uint64_t seq;
    std::uint32_t lane;
    std::uint32_t index;   // in the lane's FIFO
  };
  std::vector<char> lane_allowed_;
  std::vector<span_candidate> span_scratch_;
  // Changes of the layout or of the deferred blocks (Note [A failed span search is
  // remembered], tier.cpp), and the last span search that found nothing.
  std::uint64_t layout_version_{0};
  struct span_miss {
    bool valid{false};
    std::uint64_t version{0};
    std::uint64_t need{0};
    std::vector<char> allowed;
    std::uint64_t skipped{0};  // searches it answered
  } span_miss_;

  // used_ + deferred_bytes_ + arena_.free_bytes() == reserved_ <= config_.capacity_bytes
  // arena_.capacity() == reserved_ + placeholder_bytes_
  std::size_t reserved_{0};
  std::size_t placeholder_bytes_{0};
  std::size_t used_{0};
  std::size_t peak_used_{0};
  std::size_t deferred_bytes_{0};
  std::size_t live_count_{0};
  std::size_t deferred_count_{0};
  std::uint64_t next_seq_{0};
  std::uint64_t grow_count_{0};
  std::uint64_t grow_failures_{0};
  std::uint64_t chunk_releases_{0};
};

}  // namespace tierpool::detail

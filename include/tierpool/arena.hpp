// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file arena.hpp
 * @brief The arena: an offset-based two-level segregated fit (TLSF) sub-allocator.
 *
 * @defgroup arena Arena sub-allocator
 * @{
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <tierpool/export.hpp>

namespace tierpool {

/**
 * @brief Construction options of an @ref arena (create-info style aggregate).
 */
struct arena_options {
  /// Granularity and minimum alignment in bytes: every block size and offset is a
  /// multiple of it. Power of two, at least 8. 256 matches cudaMalloc's alignment.
  std::uint64_t min_alignment{256};
  /// log2 of the second-level subdivisions per power of two (2..6). 5 gives 32 bins per
  /// power of two: a block's size is known to within 1/32 from its bin.
  std::uint32_t second_level_log2{5};
  /// Blocks examined per bin when choosing the tightest block: in the request's own bin,
  /// and in the first bin that guarantees a fit (0 = whole lists, no longer O(1)).
  /// 1 (bin heads only) is the fastest; longer scans buy few failures since the
  /// allocation is placed against its block's larger neighbour. See runtime/arena/README.md.
  std::uint32_t bin_scan_limit{1};
};

/// @brief Figures of an arena at one moment (see @ref arena::statistics).
struct arena_statistics {
  std::uint64_t capacity{0};           ///< SUM of region capacities, bytes
  std::uint64_t used_bytes{0};         ///< SUM of allocated block sizes, bytes
  std::uint64_t free_bytes{0};         ///< capacity - used_bytes
  std::uint64_t largest_free_block{0}; ///< size of the largest free block, bytes
  std::uint64_t allocation_count{0};   ///< COUNT of live allocations
  std::uint64_t free_block_count{0};   ///< COUNT of free blocks
  std::uint32_t region_count{0};       ///< COUNT of regions
  double external_fragmentation{0.0};  ///< 1 - largest_free / free (0 when free == 0)
};

/**
 * @brief An offset sub-allocator over one or more independent regions, with O(1)
 *        allocate and free (two-level segregated fit, neighbour coalescing).
 *
 * It hands out offsets, never touches the memory it manages (which may be device
 * memory) and keeps its metadata in its own node storage: a vector of nodes with a free
 * index list, so after warm-up no operation allocates.
 *
 * Regions: the first region is given to the constructor; `add_region` appends more (a
 * tier that grows by another backend chunk). Regions are laid end to end in one global
 * offset space, region `r` covering `[region_base(r), region_base(r) + region_capacity(r))`.
 * Blocks never span or coalesce across regions. Alignment is guaranteed for the offset
 * *within the region* (`offset - region_base(region)`), since the memory behind a region
 * is a backend chunk whose base the backend aligns; for alignments up to
 * `min_alignment` the global offset is aligned too.
 *
 * Thread safety: none. Like VMA's virtual block, an arena is externally synchronized
 * (the tier that owns one calls it under the tier's lock).
 *
 * Ownership: move-only. Allocation handles are plain values; they stay valid until
 * freed, `reset()` or the arena's destruction.
 *
 * @code
 * tierpool::arena a{64_MiB};
 * auto blk = a.allocate(1000);            // 1024 bytes reserved at a 256-aligned offset
 * if (blk) { use(base + blk->offset); a.deallocate(*blk); }
 * @endcode
 */
class TIERPOOL_EXPORT arena {
 public:
  /**
   * @brief A live allocation: where it is and an O(1) handle to free it.
   *
   * A small value (32 bytes). `offset`, `size` and `region` are for the caller; the rest
   * identifies the arena's node so that free needs no lookup and a stale or foreign
   * handle is detected.
   */
  struct allocation {
    std::uint64_t offset{0};  ///< global offset (region base + offset within the region)
    std::uint64_t size{0};    ///< bytes reserved: the request rounded up to min_alignment
    std::uint32_t region{0};  ///< index of the region holding the block

    /// @brief Equal when both refer to the same allocation of the same arena.
    friend bool operator==(allocation const&, allocation const&) noexcept = default;

   private:
    friend class arena;
    std::uint32_t node_{0xFFFF'FFFFU};  ///< index into the arena's node storage
    std::uint32_t generation_{0};       ///< the arena's allocation count when allocated
    std::uint32_t owner_{0};            ///< id of the arena that made it
  };

  /**
   * @brief Create an arena whose first region holds `capacity` bytes.
   * @param capacity Bytes of the first region, rounded down to `opts.min_alignment`.
   *                 0 creates an arena with no region (add them with add_region).
   * @param opts     Granularity and size-class options.
   * @throws tierpool::logic_error if the options are invalid (min_alignment not a power of
   *         two or < 8, second_level_log2 outside 2..6) or 0 < capacity < min_alignment.
   */
  explicit arena(std::uint64_t capacity, arena_options opts = {});
  ~arena();
  arena(arena const&) = delete;
  arena& operator=(arena const&) = delete;
  /// @brief Move: the source is left with no region; handles keep referring to the target.
  arena(arena&&) noexcept;
  /// @brief Move-assign; handles of the previous target's state become foreign.
  arena& operator=(arena&&) noexcept;

  /**
   * @brief Reserve `bytes` at an offset aligned to `alignment` (within its region).
   *
   * O(1): the tightest of a few blocks of the request's own bin, else of the first bin
   * whose blocks all fit, found with two bitmap searches (see Note [Best of a few: own
   * bin first, then the guaranteed bin] in arena.cpp). The allocation takes the end of
   * that block next to its larger physical neighbour (Note [Place against the larger
   * neighbour]); with `alignment` above min_alignment, the lowest aligned offset.
   *
   * @param bytes     Requested bytes, > 0; the reservation is rounded up to min_alignment.
   * @param alignment Power of two, or 0 for min_alignment; smaller values act as min_alignment.
   * @return The allocation, or std::nullopt when no free block can hold it.
   * @throws tierpool::logic_error if `bytes == 0` or `alignment` is not a power of two.
   */
  [[nodiscard]] std::optional<allocation> allocate(std::uint64_t bytes, std::uint64_t alignment = 0);

  /**
   * @brief Reserve exactly `[offset, offset + bytes)` (bytes rounded up to min_alignment),
   *        when that range lies inside one free block: for a caller that chooses where a
   *        block goes (the pool's compaction, Note [Compaction] in
   *        runtime/migration/compaction.cpp). O(blocks of the region): it walks the region
   *        to find the free block.
   * @param offset Global offset of the first byte, a multiple of min_alignment.
   * @param bytes  Requested bytes, > 0.
   * @return The allocation, or std::nullopt when the range is not wholly free (or the
   *         arguments are not as above); nothing changes then.
   */
  [[nodiscard]] std::optional<allocation> allocate_at(std::uint64_t offset, std::uint64_t bytes) noexcept;

  /**
   * @brief Free an allocation, coalescing with free neighbours in its region. O(1).
   * @param a A live allocation of this arena.
   * @throws tierpool::logic_error if `a` is not live in this arena (double free, freed by
   *         reset, or another arena's handle); the arena is left unchanged.
   */
  void deallocate(allocation const& a);

  /**
   * @brief Free an allocation if it is live in this arena; never throws.
   * @param a The allocation to free.
   * @return false (and no change) if `a` is not a live allocation of this arena.
   */
  [[nodiscard]] bool try_deallocate(allocation const& a) noexcept;

  /// @brief Bytes of the free blocks right before and after an allocation (free_neighbours).
  struct free_around {
    std::uint64_t before{0};  ///< free bytes ending at the allocation's offset (0: a used block or the region's start)
    std::uint64_t after{0};   ///< free bytes starting at its end (0: a used block or the region's end)
  };
  /**
   * @brief The free blocks on both sides of a live allocation. O(1).
   * @return Their sizes; both 0 when `a` is not live.
   */
  [[nodiscard]] free_around free_neighbours(allocation const& a) const noexcept;
  /**
   * @brief Merge live allocations and the free blocks between them into one allocation of
   *        exactly `[offset, offset + bytes)`: `parts` are freed (coalescing), then that
   *        range is taken out of the free block they formed. O(parts).
   *
   * For a caller that hands several allocations on as one (the tier's stream-ordered reuse
   * of deferred blocks): the range must cover every part and lie inside the parts and the
   * free blocks between and around them.
   * @param parts  Live allocations in offset order, each separated from the next by at most
   *               one free block, all in one region; at least one.
   * @param offset First byte of the result (a multiple of min_alignment).
   * @param bytes  Its size (a multiple of min_alignment).
   * @throws tierpool::logic_error when a part is not live, the parts are not so laid out or
   *         the range does not satisfy the above; nothing changes then.
   */
  allocation merge_into(std::span<allocation const> parts, std::uint64_t offset, std::uint64_t bytes);

  /**
   * @brief Split a live allocation in two live ones, `[offset, offset + at)` and the rest
   *        (the first keeps `a`'s handle slot; `a` itself is stale afterwards). O(1).
   * @throws tierpool::logic_error when `a` is not live or `at` is not a multiple of
   *         min_alignment strictly inside it; std::bad_alloc when no node can be had.
   *         Nothing changes then.
   */
  std::pair<allocation, allocation> split(allocation const& a, std::uint64_t at);

  /// @brief Make sure the next `n` (at most 64) node-taking steps (split, merge_into and
  ///        allocations) need no memory. @return false when the node storage cannot grow.
  [[nodiscard]] bool reserve_nodes(std::size_t n) noexcept;

  /// @brief True when `a` is a live allocation of this arena. O(1).
  [[nodiscard]] bool owns(allocation const& a) const noexcept;

  /**
   * @brief Append an independent region of `bytes` (rounded down to min_alignment).
   * @param bytes Capacity of the new region.
   * @return The new region's index.
   * @throws tierpool::logic_error if `bytes < min_alignment` or the global offset space
   *         (2^64) would overflow.
   */
  std::uint32_t add_region(std::uint64_t bytes);

  /// @brief Free everything: each region becomes one free block. Every handle becomes stale.
  void reset() noexcept;

  /// @brief Total bytes of all regions.
  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  /// @brief Bytes in allocated blocks.
  [[nodiscard]] std::uint64_t used_bytes() const noexcept { return used_; }
  /// @brief Bytes in free blocks (capacity - used).
  [[nodiscard]] std::uint64_t free_bytes() const noexcept { return capacity_ - used_; }
  /// @brief Number of live allocations.
  [[nodiscard]] std::uint64_t allocation_count() const noexcept { return allocation_count_; }
  /// @brief Number of free blocks.
  [[nodiscard]] std::uint64_t free_block_count() const noexcept { return free_block_count_; }
  /**
   * @brief Size of the largest free block. O(levels + blocks in the highest non-empty bin);
   *        that bin holds blocks within 1/2^second_level_log2 of each other, usually one.
   */
  [[nodiscard]] std::uint64_t largest_free_block() const noexcept;
  /// @brief External fragmentation `1 - largest_free / free`; 0 when nothing is free.
  [[nodiscard]] double external_fragmentation() const noexcept;
  /// @brief All figures at once.
  [[nodiscard]] arena_statistics statistics() const noexcept;

  /// @brief Number of regions.
  [[nodiscard]] std::uint32_t region_count() const noexcept { return static_cast<std::uint32_t>(regions_.size()); }
  /// @brief Global offset of region `r`'s first byte. @throws tierpool::logic_error if r is out of range.
  [[nodiscard]] std::uint64_t region_base(std::uint32_t r) const;
  /// @brief Capacity of region `r`. @throws tierpool::logic_error if r is out of range.
  [[nodiscard]] std::uint64_t region_capacity(std::uint32_t r) const;
  /// @brief The options in effect.
  [[nodiscard]] arena_options const& options() const noexcept { return opts_; }

  /// @brief One block of the arena, as blocks() lists it.
  struct block_info {
    std::uint64_t offset{0};  ///< global offset
    std::uint64_t size{0};    ///< bytes
    std::uint32_t region{0};  ///< region index
    bool free{false};         ///< a free block (else allocated)
  };
  /**
   * @brief Every block, region by region, in offset order (free and allocated tile each
   *        region). O(blocks); allocates the vector. For "how much still fits" answers that
   *        need the free space's layout, not only its total.
   * @return The blocks.
   * @throws std::bad_alloc when the vector cannot be allocated.
   */
  [[nodiscard]] std::vector<block_info> blocks() const;
  /**
   * @brief Call `f(block_info const&)` for every block, region by region, in offset order
   *        (the order of blocks()), without allocating. O(blocks); the allocate and free
   *        paths pay nothing for it. `f` must not change the arena.
   * @param f Callable taking `block_info const&`.
   */
  template <class F>
  void for_each_block(F&& f) const
  {
    for (std::uint32_t r = 0; r < regions_.size(); ++r) {
      for (std::uint32_t b = regions_[r].first_node; b != none; b = nodes_[b].next_phys) {
        node const& n = nodes_[b];
        f(block_info{.offset = n.offset(), .size = n.size, .region = r, .free = n.state() == node_state::free});
      }
    }
  }

  /**
   * @brief Check every invariant: blocks tile each region exactly, no two adjacent free
   *        blocks, free lists and bitmaps agree with the blocks, counters match. O(n).
   * @return true when every invariant holds.
   */
  [[nodiscard]] bool validate() const;

 private:
  static constexpr std::uint32_t none = 0xFFFF'FFFFU;
  enum class node_state : std::uint8_t { unused = 0, free = 1, used = 2 };

  // The low bits of node::offset_state that hold the node's state: offsets are multiples
  // of min_alignment, which is at least 8 (checked by the constructor).
  static constexpr std::uint64_t state_mask = 3;
  static_assert(state_mask < 8, "node states must fit below the smallest min_alignment (8)");

  // One block (or an unused slot), 32 bytes (Note [A 32-byte node] in arena.cpp).
  // Physical neighbours link blocks of one region in offset order; free blocks are also on
  // their bin's free list (the bin is bin_of(size)). Unused nodes form a singly linked list
  // through next_free. The free-list links are needed only while free, the generation and
  // the region only while used, so they share storage; a free block's region is its used
  // neighbours' (region_of_free).
  struct node {
    std::uint64_t offset_state;  // global offset of the block | node_state (low 2 bits)
    std::uint64_t size;          // bytes, multiple of min_alignment, > 0
    std::uint32_t prev_phys;     // none at the start of a region
    std::uint32_t next_phys;     // none at the end of a region
    union {
      std::uint32_t prev_free;   // free: the previous block on its bin's list
      std::uint32_t generation;  // used: the arena's allocation count when it was handed out
    };
    union {
      std::uint32_t next_free;   // free: the next block on its bin's list; unused: next unused node
      std::uint32_t region;      // used: the region holding the block
    };

    [[nodiscard]] std::uint64_t offset() const noexcept { return offset_state & ~state_mask; }
    [[nodiscard]] node_state state() const noexcept { return static_cast<node_state>(offset_state & state_mask); }
  };
  static_assert(sizeof(node) == 32, "arena::node is 32 bytes (Note [A 32-byte node])");

  struct region_info {
    std::uint64_t base;
    std::uint64_t capacity;
    std::uint32_t first_node;  // never changes: splits keep the left piece in place
  };

  std::optional<allocation> allocate_unchecked(std::uint64_t bytes, std::uint64_t alignment) noexcept;
  std::optional<allocation> allocate_aligned(std::uint64_t size, std::uint64_t alignment) noexcept;
  [[noreturn]] static void fail_allocate(std::uint64_t bytes, std::uint64_t alignment);
  std::uint32_t free_block(std::uint32_t b) noexcept;
  [[nodiscard]] bool is_live(allocation const& a) const noexcept;
  allocation take_at(std::uint32_t b, std::uint64_t offset, std::uint64_t size) noexcept;
  allocation take_placed(std::uint32_t b, std::uint64_t size) noexcept;
  allocation mark_used(std::uint32_t b, std::uint32_t region) noexcept;
  [[nodiscard]] std::uint32_t region_of_free(std::uint32_t b) const noexcept;
  [[nodiscard]] std::uint32_t region_at(std::uint64_t offset) const noexcept;
  std::uint32_t split_at(std::uint32_t b, std::uint64_t at) noexcept;
  void split_free_left(std::uint32_t b, std::uint64_t left) noexcept;
  void split_free_right(std::uint32_t b, std::uint64_t keep) noexcept;
  [[nodiscard]] std::uint32_t find_fit(std::uint64_t size) const noexcept;
  [[nodiscard]] std::uint32_t search_bins(std::uint32_t bin) const noexcept;
  [[nodiscard]] std::uint32_t bin_of(std::uint64_t size) const noexcept;
  [[nodiscard]] std::uint32_t bin_round_up(std::uint64_t size) const noexcept;
  [[nodiscard]] std::uint64_t bin_lower_bound(std::uint32_t bin) const noexcept;
  void insert_free(std::uint32_t b) noexcept;
  void remove_free(std::uint32_t b) noexcept;
  [[nodiscard]] std::uint32_t new_node() noexcept;
  void release_node(std::uint32_t n) noexcept;
  bool grow_nodes() noexcept;
  void init_region_block(std::uint32_t r);

  arena_options opts_;
  std::uint64_t gran_mask_{0};      // min_alignment - 1
  std::uint32_t gran_shift_{0};     // log2(min_alignment)
  std::uint32_t sl_log2_{0};
  std::uint32_t fl_count_{0};
  std::uint32_t owner_{0};
  std::uint32_t generation_{0};     // allocations handed out (wraps); a used node's generation

  std::vector<node> nodes_;
  std::uint32_t unused_head_{none};
  std::uint32_t spare_nodes_{0};    // COUNT of nodes on the unused list

  std::vector<std::uint32_t> heads_;      // free-list head per bin, bin = fl << sl_log2 | sl
  std::vector<std::uint64_t> head_size_;  // size of heads_[bin]'s block, 0 when the list is empty
  std::uint64_t fl_bitmap_{0};            // bit fl set <=> sl_bitmap_[fl] != 0
  std::vector<std::uint64_t> sl_bitmap_;  // bit sl set <=> heads_[bin(fl, sl)] != none

  std::vector<region_info> regions_;
  std::uint64_t capacity_{0};          // SUM(region capacity)
  std::uint64_t used_{0};              // SUM(size of used blocks)
  std::uint64_t allocation_count_{0};  // COUNT(used blocks)
  std::uint64_t free_block_count_{0};  // COUNT(free blocks)
};

}  // namespace tierpool

/** @} */

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file record_slab.hpp
 * @brief Internal: tierpool::detail::record_slab, fixed-size blocks for tensor records
 *        and spilled copy-slot arrays; process_slab<T>(), the process's slab of each
 *        (make_record_ref, migration/records.cpp).
 *
 * See Note [Tensor records come from a slab] in record_slab.cpp.
 */
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include <tierpool/detail/big_array.hpp>

#include "util/spin_mutex.hpp"

namespace tierpool::detail {

/// Cache lines of a tensor_record that an acquire miss (and an eviction) reads: all of it,
/// 168 bytes at 8-byte alignment, so at most four lines (Note [Record layout] in
/// record_slab.cpp).
inline constexpr std::size_t kRecordHotLines = 4;

/**
 * @brief Ask for the first `lines` 64-byte cache lines at `p` (a hint: no effect on
 *        behaviour, never faults). Issued as soon as a record's address is known, the
 *        lines' misses overlap instead of following one another (Note [Record layout]).
 */
inline void prefetch_lines(void const* p, std::size_t lines) noexcept
{
  auto const* c = static_cast<char const*>(p);
  // For reading: a prefetch for writing would take the lines from other threads reading
  // the same record (a tensor shared by several streams' acquires).
  for (std::size_t i = 0; i < lines; ++i) { __builtin_prefetch(c + i * 64, 0, 3); }
}

/**
 * @brief Blocks of one size and alignment, carved from chunks that grow geometrically up
 *        to huge-page-sized ones, recycled through a free list, returned to the system only
 *        when the slab dies.
 *
 * Thread safety: allocate / deallocate may be called concurrently (a spin lock around a
 * free-list pop or push; a new chunk is obtained outside it). Owned through a shared_ptr
 * by every record_allocator copy, so it outlives the last block.
 */
class record_slab {
 public:
  /**
   * @param block_bytes Size of every block (rounded up to block_align).
   * @param block_align Alignment of every block: a power of two, at most 4096.
   */
  record_slab(std::size_t block_bytes, std::size_t block_align);
  ~record_slab();
  record_slab(record_slab const&) = delete;
  record_slab& operator=(record_slab const&) = delete;

  /// @brief A block of block_bytes(). @throws std::bad_alloc when no chunk can be had.
  [[nodiscard]] void* allocate();
  /// @brief Return a block obtained from allocate() of this slab.
  void deallocate(void* p) noexcept;

  [[nodiscard]] std::size_t block_bytes() const noexcept { return block_bytes_; }
  [[nodiscard]] std::size_t block_align() const noexcept { return block_align_; }
  /// @brief Bytes of chunks held (for figures and tests).
  [[nodiscard]] std::size_t reserved_bytes() const noexcept;

 private:
  struct free_block {
    free_block* next;
  };
  struct chunk {
    void* base;
    std::size_t bytes;
    bool mapped;  ///< from mmap (huge-page sized); else from aligned operator new
  };
  /// A new chunk of `bytes` (no lock held). @throws std::bad_alloc
  [[nodiscard]] chunk make_chunk(std::size_t bytes) const;
  void free_chunk(chunk const& c) const noexcept;

  std::size_t const block_bytes_;
  std::size_t const block_align_;
  mutable spin_mutex mtx_;       // guards everything below
  free_block* free_{nullptr};    // recycled blocks (LIFO)
  char* bump_{nullptr};          // next never-used block of the newest chunk
  char* bump_end_{nullptr};
  std::size_t next_chunk_bytes_; // grows geometrically up to kHugeChunk
  std::vector<chunk> chunks_;
};

/**
 * @brief The process's slab for objects of type T (blocks of sizeof(T), alignof(T)): made
 *        on first use and never destroyed, so that what returns a block there needs no
 *        reference to it (Note [Tensor records come from a slab]).
 */
template <class T>
[[nodiscard]] record_slab& process_slab()
{
  static record_slab* const slab = new record_slab(sizeof(T), alignof(T));  // NOLINT: immortal on purpose
  return *slab;
}

}  // namespace tierpool::detail

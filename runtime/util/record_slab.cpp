// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// record_slab.cpp — the block allocator of a pool's tensor records (record_slab.hpp).
// Entry points: record_slab::allocate / deallocate.
//
// Note [Tensor records come from a slab]
// --------------------------------------
// Rationale: pool::allocate makes one record per tensor (cache-line aligned, ~0.75 KiB
// with its control block). Through operator new that was an aligned malloc (slow: it
// splits an over-sized chunk) and, for a trace that sees tens of thousands of objects,
// tens of megabytes touched page by page: on the development VM a page fault costs
// ~10 us, and a CloudPhysics replay spent more time faulting records in than copying.
// Approach: records are fixed-size blocks carved from chunks; a chunk is used by bumping
// a pointer, freed blocks go to a LIFO free list that allocate pops first. The first
// chunk is small (a pool with a few tensors reserves 64 KiB); every later one is 2 MiB,
// mapped 2 MiB-aligned by map_huge, with MADV_HUGEPAGE where TIERPOOL_HUGE_PAGES=1 asks
// for it (Note [Big arrays on huge pages]: on the development VM fresh huge pages often
// fault in slower than 4 KiB pages). (Chunks used to double from 64 KiB to 2 MiB; one
// size of chunk past the first keeps the slab simple.) The pools'
// records come from one slab of the process (process_slab<T>(), made on first use, never
// destroyed), so that the last reference's release (Note [Records count their references],
// records.cpp) returns a record without holding the slab: a record costs its 168 bytes and
// nothing beside (issue 19; a shared_ptr's control block holding the slab was 64 more).
// Limitations: memory of freed records stays with the process's slab for later records
// (of any pool), never returned to the system (a process's peak of live tensors, as glibc
// would mostly keep it too); without THP the big chunks fault page by page like any memory.
//
// Note [Record layout]
// --------------------
// Rationale: a miss-heavy replay touches each accessed record and each victim's record
// once, cold: every cache line of it read is a miss (~150-250 ns on the development VM,
// whose effective last-level cache is a few MiB), and the lines were taken one after
// another, behind the locks in between. And a pool of a million small tensors pays for
// every byte a million times (issue 19).
// Approach: tensor_record is 168 bytes, aligned to 8, so it spans at most four cache
// lines: the one-word lock, the reference count, the counters and flags and the constants
// (72 bytes; the pool is a 16-bit index, Note [A record names its pool in two bytes]),
// then one inline copy slot (state, pins and `ready` first; the block; the streams that
// used it, size first; its two spare bytes hold the slot array's home tier and size) and
// the pointer to the heap slots of a tensor in two tiers (Note [Copy slots only where a
// copy is]). The name is not in the record (Note [Names beside the records]). Those lines
// are prefetched together as soon as the record's address is known (checked_record for
// the tensor of a request, Note [Prefetching a victim] in eviction.cpp for a victim), so
// their misses overlap. A miss reads `prefers_device_accessible` and `preferred`, never
// the options.
// Limitations: records are no longer cache-line aligned: two records used by different
// threads may share a line at their ends (the price of 24 bytes a tensor against 64-byte
// alignment). A tensor's second copy lives in the heap array, one more line.
#include "util/record_slab.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <mutex>

#include <tierpool/detail/big_array.hpp>
#include <tierpool/error.hpp>

namespace tierpool::detail {

namespace {

constexpr std::size_t kFirstChunk = 64 * 1024;
constexpr std::size_t kHugeChunk = 2 * 1024 * 1024;  // a transparent huge page on x86-64

constexpr std::size_t round_up(std::size_t v, std::size_t a) noexcept { return (v + a - 1) & ~(a - 1); }

}  // namespace

record_slab::record_slab(std::size_t block_bytes, std::size_t block_align)
  : block_bytes_(round_up(std::max<std::size_t>(block_bytes, sizeof(free_block)), block_align)),
    block_align_(block_align),
    next_chunk_bytes_(kFirstChunk)
{
  TIERPOOL_EXPECTS(std::has_single_bit(block_align) && block_align <= 4096 && block_align >= alignof(free_block),
                   "record_slab: block_align must be a power of two in [8, 4096]");
  TIERPOOL_EXPECTS(block_bytes_ <= kHugeChunk / 4, "record_slab: blocks must be at most 512 KiB");
  next_chunk_bytes_ = std::max(kFirstChunk, round_up(4 * block_bytes_, 4096));
}

record_slab::~record_slab()
{
  for (chunk const& c : chunks_) { free_chunk(c); }
}

record_slab::chunk record_slab::make_chunk(std::size_t bytes) const
{
  if (bytes >= kHugeChunk) { return chunk{map_huge(bytes), bytes, true}; }
  return chunk{::operator new(bytes, std::align_val_t{block_align_}), bytes, false};
}

void record_slab::free_chunk(chunk const& c) const noexcept
{
  if (c.mapped) {
    unmap_huge(c.base, c.bytes);
  } else {
    ::operator delete(c.base, std::align_val_t{block_align_});
  }
}

void* record_slab::allocate()
{
  std::size_t want = 0;
  {
    std::lock_guard lock(mtx_);
    if (free_ != nullptr) {
      free_block* const b = free_;
      free_ = b->next;
      return b;
    }
    if (bump_end_ - bump_ >= static_cast<std::ptrdiff_t>(block_bytes_)) {
      void* const b = bump_;
      bump_ += block_bytes_;
      return b;
    }
    want = next_chunk_bytes_;
  }
  chunk const c = make_chunk(want);  // outside the lock: may map memory
  std::lock_guard lock(mtx_);
  try {
    chunks_.push_back(c);
  } catch (...) {
    free_chunk(c);
    throw;
  }
  // Straight from the first (small) chunk to huge ones: the sizes between, faulted in
  // 4 KiB pages, cost more than the first huge page (Note [Tensor records come from a slab]).
  next_chunk_bytes_ = kHugeChunk;
  // The rest of the previous chunk (less than a block) is abandoned; blocks other threads
  // freed meanwhile stay on the free list for the next calls.
  bump_ = static_cast<char*>(c.base) + block_bytes_;
  bump_end_ = static_cast<char*>(c.base) + (c.bytes / block_bytes_) * block_bytes_;
  return c.base;
}

void record_slab::deallocate(void* p) noexcept
{
  if (p == nullptr) { return; }
  auto* const b = static_cast<free_block*>(p);
  std::lock_guard lock(mtx_);
  b->next = free_;
  free_ = b;
}

std::size_t record_slab::reserved_bytes() const noexcept
{
  std::lock_guard lock(mtx_);
  std::size_t n = 0;
  for (chunk const& c : chunks_) { n += c.bytes; }
  return n;
}

}  // namespace tierpool::detail

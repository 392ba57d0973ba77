// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file record_slab.hpp
 * @brief Internal: tierpool::detail::record_slab, fixed-size blocks for a pool's tensor
 *        records; slab_deleter and record_allocator, to make a std::shared_ptr whose
 *        object and control block both come from slabs (pool_impl::make_record, core/detail/tensor_ops.cpp).
 *
 * See Note [Tensor records come from a slab] in record_slab.cpp.
 */
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#include <tierpool/detail/big_array.hpp>

#include "util/spin_mutex.hpp"

#if defined(__SANITIZE_THREAD__)
#define TIERPOOL_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TIERPOOL_DETAIL_TSAN 1
#endif
#endif
#ifndef TIERPOOL_DETAIL_TSAN
#define TIERPOOL_DETAIL_TSAN 0
#endif
#if TIERPOOL_DETAIL_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace tierpool::detail {

/// Cache lines of a tensor_record that an acquire miss (and an eviction) reads: all of it,
/// 208 bytes at 16-byte alignment, so at most four lines (Note [Record layout] in
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
 * @brief Deleter of an object placed in a block of a slab: destroys it, returns the block.
 *        Holds the slab, so the slab outlives the object.
 */
template <class T>
struct slab_deleter {
  std::shared_ptr<record_slab> slab;
  void operator()(T* p) const noexcept
  {
#if TIERPOOL_DETAIL_TSAN
    // A slab block is recycled, never freed, and std::mutex's destructor is trivial here:
    // ThreadSanitizer would give the next record at this address the dead record's mutex
    // (its lock-order history: validate() locks records in id order, and the new record
    // has a larger id, so TSan reported a false inversion). Tell it the mutex is gone.
    if constexpr (requires { p->mtx; } && std::is_same_v<std::remove_cvref_t<decltype(p->mtx)>, std::mutex>) {
      __tsan_mutex_destroy(&p->mtx, 0);
    }
#endif
    p->~T();
    slab->deallocate(p);
  }
};

/**
 * @brief Allocator (for the control blocks of std::shared_ptr): single objects no larger
 *        than the slab's blocks come from the slab, anything else from aligned operator new.
 *
 * Copies share the slab (a shared_ptr), so a control block keeps it alive. Thread-safe
 * like the slab; copying costs one atomic increment.
 */
template <class T>
class record_allocator {
 public:
  using value_type = T;

  explicit record_allocator(std::shared_ptr<record_slab> slab) noexcept : slab_(std::move(slab)) {}
  template <class U>
  record_allocator(record_allocator<U> const& o) noexcept : slab_(o.slab())  // NOLINT(google-explicit-constructor): rebinding
  {
  }

  /// @throws std::bad_alloc
  [[nodiscard]] T* allocate(std::size_t n)
  {
    if (from_slab(n)) { return static_cast<T*>(slab_->allocate()); }
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{alignof(T)}));
  }
  void deallocate(T* p, std::size_t n) noexcept
  {
    if (from_slab(n)) {
      slab_->deallocate(p);
    } else {
      ::operator delete(p, std::align_val_t{alignof(T)});
    }
  }

  [[nodiscard]] std::shared_ptr<record_slab> const& slab() const noexcept { return slab_; }
  template <class U>
  friend bool operator==(record_allocator const& a, record_allocator<U> const& b) noexcept
  {
    return a.slab_ == b.slab();
  }

 private:
  [[nodiscard]] bool from_slab(std::size_t n) const noexcept
  {
    return n == 1 && sizeof(T) <= slab_->block_bytes() && alignof(T) <= slab_->block_align();
  }
  std::shared_ptr<record_slab> slab_;
};

/**
 * @brief The process's slab for objects of type T (blocks of sizeof(T), alignof(T)): made
 *        on first use and never destroyed, so that a deleter or allocator naming it needs
 *        no state (Note [Tensor records come from a slab]).
 */
template <class T>
[[nodiscard]] record_slab& process_slab()
{
  static record_slab* const slab = new record_slab(sizeof(T), alignof(T));  // NOLINT: immortal on purpose
  return *slab;
}

/// @brief 32-byte blocks: the control blocks of records' shared_ptrs (3 words).
struct control_block_storage {
  alignas(16) std::array<std::byte, 32> bytes;
};

/**
 * @brief Stateless deleter of an object of the process's slab for T (process_slab<T>()):
 *        destroys it and returns the block. Empty, so a shared_ptr's control block does
 *        not store it.
 */
template <class T>
struct process_slab_deleter {
  void operator()(T* p) const noexcept
  {
#if TIERPOOL_DETAIL_TSAN
    if constexpr (requires { p->mtx; } && std::is_same_v<std::remove_cvref_t<decltype(p->mtx)>, std::mutex>) {
      __tsan_mutex_destroy(&p->mtx, 0);
    }
#endif
    p->~T();
    process_slab<T>().deallocate(p);
  }
};

/**
 * @brief Stateless allocator for shared_ptr control blocks: single objects of at most 32
 *        bytes come from the process's slab of control_block_storage, anything else from
 *        aligned operator new. All instances are equal.
 */
template <class T>
class process_control_allocator {
 public:
  using value_type = T;
  process_control_allocator() noexcept = default;
  template <class U>
  process_control_allocator(process_control_allocator<U> const& /*o*/) noexcept  // NOLINT(google-explicit-constructor): rebinding
  {
  }
  /// @throws std::bad_alloc
  [[nodiscard]] T* allocate(std::size_t n)
  {
    if (from_slab(n)) { return static_cast<T*>(process_slab<control_block_storage>().allocate()); }
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{alignof(T)}));
  }
  void deallocate(T* p, std::size_t n) noexcept
  {
    if (from_slab(n)) {
      process_slab<control_block_storage>().deallocate(p);
    } else {
      ::operator delete(p, std::align_val_t{alignof(T)});
    }
  }
  template <class U>
  friend bool operator==(process_control_allocator const& /*a*/, process_control_allocator<U> const& /*b*/) noexcept
  {
    return true;
  }

 private:
  [[nodiscard]] static constexpr bool from_slab(std::size_t n) noexcept
  {
    return n == 1 && sizeof(T) <= sizeof(control_block_storage) && alignof(T) <= alignof(control_block_storage);
  }
};

}  // namespace tierpool::detail

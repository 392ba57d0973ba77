// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file big_array.hpp
 * @brief tierpool::detail::big_array_allocator: an allocator for large bookkeeping arrays
 *        (the pool's record table, policies' slabs and indexes, a replay's handles) that
 *        maps the large ones 2 MiB-aligned, on transparent huge pages where asked.
 *
 * Note [Big arrays on huge pages]
 * -------------------------------
 * Rationale: a pool or policy that tracks tens of thousands of tensors grows its arrays to
 * megabytes by doubling, and a compiled trace is hundreds of MiB. Mapping them with
 * MADV_HUGEPAGE was meant to fault them in 2 MiB at a time instead of 4 KiB. Measured on
 * the development VM (bench/results/scale-cpu-2026-12-04.md) it mostly costs: the
 * kernel's free 2 MiB blocks there are often memory the hypervisor has not backed yet,
 * and a fresh huge page took up to ~30 ms to fault in. Compiling the kv-paging serving
 * preset (19.2 M events, 803 MiB) took 10.8-14.0 s with huge pages and 1.8 s without;
 * cache mode on it 5.0 s against 0.9-1.1 s; the 12.7 M-event kv-paging trace 1.0-2.5 s
 * against 0.6 s. Only a warm CloudPhysics replay gained (0.21 against 0.31 s), and
 * `tierpool bench scale` (record slabs) did not move.
 * Approach: arrays of kBigArrayBytes or more (and record slab chunks of 2 MiB) are mapped
 * 2 MiB-aligned; they ask for huge pages (MADV_HUGEPAGE) only with TIERPOOL_HUGE_PAGES=1,
 * for machines where huge pages fault in fast. Smaller arrays come from operator new, as
 * with std::allocator (a replaced global operator new still sees them).
 * Limitations: a mapping is rounded up to 2 MiB (address space, not memory, until
 * touched). The variable is read once, at the first big array; a value other than 0 or 1
 * is logged as a warning and read as 0.
 */
#pragma once

#include <cstddef>
#include <new>
#include <optional>

#include <tierpool/export.hpp>

namespace tierpool::detail {

/// @brief Arrays of at least this many bytes are mapped on huge pages.
inline constexpr std::size_t kBigArrayBytes = std::size_t{1} << 20U;

/// @brief A TIERPOOL_HUGE_PAGES value: true for "1", false for null, empty or "0", nullopt
///        for anything else.
[[nodiscard]] TIERPOOL_EXPORT std::optional<bool> parse_huge_pages(char const* value) noexcept;
/// @brief Whether map_huge asks for huge pages: TIERPOOL_HUGE_PAGES=1, read at the first
///        call (an invalid value is logged as a warning and read as 0). Thread-safe.
[[nodiscard]] TIERPOOL_EXPORT bool huge_pages_wanted() noexcept;

/**
 * @brief Map `bytes` (a multiple of 2 MiB: huge_round_up) 2 MiB-aligned, with MADV_HUGEPAGE
 *        (a hint; only with TIERPOOL_HUGE_PAGES=1). Thread-safe.
 * @throws std::bad_alloc when the system refuses the mapping
 */
[[nodiscard]] TIERPOOL_EXPORT void* map_huge(std::size_t bytes);
/// @brief Unmap what map_huge(bytes) returned. Thread-safe.
TIERPOOL_EXPORT void unmap_huge(void* p, std::size_t bytes) noexcept;
/// @brief `bytes` rounded up to a multiple of 2 MiB.
[[nodiscard]] TIERPOOL_EXPORT std::size_t huge_round_up(std::size_t bytes) noexcept;

/**
 * @brief Allocator of large bookkeeping arrays (Note [Big arrays on huge pages]): arrays
 *        of at least kBigArrayBytes are mapped on huge pages, smaller ones come from
 *        operator new. Stateless; thread-safe.
 */
template <class T>
class big_array_allocator {
 public:
  using value_type = T;  ///< the element type

  big_array_allocator() noexcept = default;
  /// @brief Rebinding (stateless: nothing to copy).
  template <class U>
  big_array_allocator(big_array_allocator<U> const&) noexcept  // NOLINT(google-explicit-constructor): rebinding
  {
  }

  /// @brief Storage for `n` elements. @throws std::bad_alloc
  [[nodiscard]] T* allocate(std::size_t n)
  {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) { throw std::bad_alloc(); }
    std::size_t const bytes = n * sizeof(T);
    if (bytes >= kBigArrayBytes) { return static_cast<T*>(map_huge(huge_round_up(bytes))); }
    if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      return static_cast<T*>(::operator new(bytes, std::align_val_t{alignof(T)}));
    } else {
      return static_cast<T*>(::operator new(bytes));
    }
  }
  /// @brief Give back what allocate(n) returned.
  void deallocate(T* p, std::size_t n) noexcept
  {
    std::size_t const bytes = n * sizeof(T);
    if (bytes >= kBigArrayBytes) {
      unmap_huge(p, huge_round_up(bytes));
    } else if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      ::operator delete(p, std::align_val_t{alignof(T)});
    } else {
      ::operator delete(p);
    }
  }
  /// @brief Stateless: every instance can free what another allocated.
  template <class U>
  friend bool operator==(big_array_allocator const&, big_array_allocator<U> const&) noexcept
  {
    return true;
  }
};

}  // namespace tierpool::detail

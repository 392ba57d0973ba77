// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file flat_table.hpp
 * @brief tierpool::detail::flat_table: the open-addressing hash table behind
 *        detail::id_index (policies), the pool's record table and detail::flat_u64_set.
 *
 * Note [A flat index instead of std::unordered_map]
 * -------------------------------------------------
 * Rationale: a policy hears of every insert and erase, the pool looks a record up on
 * every miss and the migration engine tracks every event and deferred block; with
 * std::unordered_map each insert allocates a node and each lookup chases a pointer. In
 * cache-mode replay (tens of millions of requests per second) that map was the largest
 * single cost of `lru`; in a miss-heavy pool-mode replay every miss erases a victim and
 * inserts the missed tensor, each a lookup of a cold id.
 * Approach: open addressing with linear probing over one array of cells, so a lookup
 * reads one cache line (two parallel arrays of keys and values, as the policies' index
 * first was, missed twice); at most half full unless the traits allow more (the policies'
 * id_index: three quarters); deletion by backward shift (no tombstones,
 * so lookups never slow down with churn). Ids are handed out in order by the pool, so the
 * hash can keep runs of 2^run_bits consecutive keys in adjacent cells (Fibonacci hashing
 * of key >> run_bits picks the run's place): a burst of inserts (a trace's first pass)
 * writes one line per run, while unrelated keys still spread evenly. Keys that are not
 * consecutive (event handles, block offsets) use run_bits = 0, plain Fibonacci hashing.
 * Memory grows by doubling only (big arrays on huge pages: Note [Big arrays on huge
 * pages]); inserts allocate nothing in a steady state.
 * One template serves three cell layouts (an id and a 32-bit slot; an id and a
 * shared_ptr; a bare key): the probing and the backward shift, the part that is easy to
 * get wrong, exist once (the three had been written separately before).
 * Limitations: one key value per layout marks an empty cell and cannot be stored;
 * iteration order is not meaningful (nothing iterates where order would matter).
 */
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <tierpool/detail/big_array.hpp>

namespace tierpool::detail {

/**
 * @brief Open-addressing table of `Traits::cell` (Note [A flat index instead of
 *        std::unordered_map]). Not thread-safe: externally synchronized.
 *
 * `Traits` provides:
 * - `cell`: default-constructible (a default cell is empty) and movable;
 * - `static constexpr unsigned run_bits`: consecutive keys sharing a run of cells;
 * - `static constexpr std::size_t min_cells`: the first capacity, a power of two of at
 *   least 2 << run_bits;
 * - `static bool empty(cell const&) noexcept`, `static std::uint64_t key(cell const&) noexcept`;
 * - `static void clear(cell&) noexcept`: make it empty and drop what it holds;
 * - optionally `static constexpr std::size_t max_load_num, max_load_den`: the table grows
 *   before more than max_load_num / max_load_den of its cells would be full (default 1/2;
 *   below 1, so that a probe always reaches an empty cell).
 */
template <class Traits>
class flat_table {
 public:
  using cell = typename Traits::cell;  ///< one slot of the table

  /// @brief The largest fraction of full cells: max_load_num / max_load_den of the traits,
  ///        or 1 / 2.
  static constexpr std::size_t max_load_num = [] {
    if constexpr (requires { Traits::max_load_num; }) {
      return std::size_t{Traits::max_load_num};
    } else {
      return std::size_t{1};
    }
  }();
  /// @copydoc max_load_num
  static constexpr std::size_t max_load_den = [] {
    if constexpr (requires { Traits::max_load_den; }) {
      return std::size_t{Traits::max_load_den};
    } else {
      return std::size_t{2};
    }
  }();
  static_assert(max_load_num > 0 && max_load_num < max_load_den, "flat_table: the maximum load must be in (0, 1)");

  /// @brief The home cell of `key` in a table of `cells` cells (a power of two >=
  ///        min_cells): tests build colliding keys with it.
  [[nodiscard]] static std::size_t home_in(std::uint64_t key, std::size_t cells) noexcept
  {
    unsigned const shift = 64U - (static_cast<unsigned>(std::countr_zero(cells)) - Traits::run_bits);
    return home_with(key, cells - 1, shift);
  }

  /// @brief The cell holding `key`, or null.
  [[nodiscard]] cell* find(std::uint64_t key) noexcept
  {
    return const_cast<cell*>(static_cast<flat_table const*>(this)->find(key));
  }
  /// @copydoc find
  [[nodiscard]] cell const* find(std::uint64_t key) const noexcept
  {
    if (size_ == 0) { return nullptr; }
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      cell const& c = cells_[i];
      if (Traits::empty(c)) { return nullptr; }
      if (Traits::key(c) == key) { return &c; }
    }
  }

  /**
   * @brief The cell holding `key`, or the empty cell where it goes. `second` is true for
   *        the latter, which is counted at once: the caller must fill it with `key`.
   * @throws std::bad_alloc when the table must grow and cannot (the table is unchanged)
   */
  [[nodiscard]] std::pair<cell*, bool> find_or_claim(std::uint64_t key)
  {
    if ((size_ + 1) * max_load_den > cells_.size() * max_load_num) { grow(); }
    std::size_t i = home(key);
    while (!Traits::empty(cells_[i])) {
      if (Traits::key(cells_[i]) == key) { return {&cells_[i], false}; }
      i = (i + 1) & mask_;
    }
    ++size_;
    return {&cells_[i], true};
  }

  /// @brief Remove `key`'s cell. @return false when absent.
  bool erase(std::uint64_t key) noexcept
  {
    if (size_ == 0) { return false; }
    std::size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      if (Traits::empty(cells_[i])) { return false; }
      if (Traits::key(cells_[i]) == key) { break; }
    }
    // Backward shift: pull later members of the probe run into the hole when the hole
    // lies between their home and their cell.
    for (std::size_t j = (i + 1) & mask_; !Traits::empty(cells_[j]); j = (j + 1) & mask_) {
      if (((j - home(Traits::key(cells_[j]))) & mask_) >= ((j - i) & mask_)) {
        cells_[i] = std::move(cells_[j]);
        i = j;
      }
    }
    Traits::clear(cells_[i]);
    --size_;
    return true;
  }

  /// @brief Ask for the cache line of `key`'s home cell (a hint: no effect on behaviour).
  void prefetch(std::uint64_t key) const noexcept
  {
    if (!cells_.empty()) { __builtin_prefetch(&cells_[home(key)], 1, 3); }
  }

  /// @brief Number of keys stored.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// @brief Remove everything (keeps the memory).
  void clear() noexcept
  {
    for (cell& c : cells_) { Traits::clear(c); }
    size_ = 0;
  }

  /// @brief Call `f(cell)` for every full cell, in no meaningful order. `f` must not
  ///        modify the table.
  template <class F>
  void for_each(F&& f) const
  {
    for (cell const& c : cells_) {
      if (!Traits::empty(c)) { f(c); }
    }
  }

 private:
  [[nodiscard]] static std::size_t home_with(std::uint64_t key, std::size_t mask, unsigned shift) noexcept
  {
    constexpr unsigned kBits = Traits::run_bits;
    auto const run = static_cast<std::size_t>(((key >> kBits) * 0x9E3779B97F4A7C15ULL) >> shift);
    return ((run << kBits) | static_cast<std::size_t>(key & ((std::uint64_t{1} << kBits) - 1U))) & mask;
  }
  [[nodiscard]] std::size_t home(std::uint64_t key) const noexcept { return home_with(key, mask_, shift_); }

  void grow()
  {
    static_assert(std::has_single_bit(Traits::min_cells) && Traits::min_cells >= (std::size_t{2} << Traits::run_bits));
    std::size_t const cap = cells_.empty() ? Traits::min_cells : cells_.size() * 2;
    std::vector<cell, big_array_allocator<cell>> old(cap);
    std::swap(old, cells_);
    mask_ = cap - 1;
    shift_ = 64U - (static_cast<unsigned>(std::countr_zero(cap)) - Traits::run_bits);  // one of cap >> run_bits runs
    for (cell& c : old) {
      if (Traits::empty(c)) { continue; }
      std::size_t j = home(Traits::key(c));
      while (!Traits::empty(cells_[j])) { j = (j + 1) & mask_; }
      cells_[j] = std::move(c);
    }
  }

  std::vector<cell, big_array_allocator<cell>> cells_;
  std::size_t size_{0};
  std::size_t mask_{0};
  unsigned shift_{64};
};

}  // namespace tierpool::detail

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
 * id_index: 0.85); deletion by backward shift (no tombstones,
 * so lookups never slow down with churn). Ids are handed out in order by the pool, so the
 * hash can keep runs of 2^run_bits consecutive keys in adjacent cells (Fibonacci hashing
 * of key >> run_bits picks the run's place): a burst of inserts (a trace's first pass)
 * writes one line per run, while unrelated keys still spread evenly. Keys that are not
 * consecutive (event handles, block offsets) use run_bits = 0, plain Fibonacci hashing.
 * By default the capacity is a power of two, the home a Fibonacci hash's top bits and the
 * table grows by doubling. A table whose traits set `power_of_two = false` (the
 * policies' id_index) may have any multiple of the run length as its capacity: the run's
 * place is the hash scaled onto the number of runs (multiply-shift range reduction,
 * (hash * runs) >> 64), probing wraps at the capacity instead of by a mask, and the table
 * grows by a smaller factor (the traits' grow_num / grow_den, default 3/2) into a capacity
 * that also uses the rest of a huge-page mapping, so that its load stays near the
 * maximum rather than between a half and the whole of it (Note [Non-power-of-two
 * capacity]). Big arrays sit on huge pages (Note [Big arrays on huge pages]); inserts
 * allocate nothing in a steady state.
 * One template serves three cell layouts (an id and a 32-bit slot; an id and a
 * shared_ptr; a bare key): the probing and the backward shift, the part that is easy to
 * get wrong, exist once (the three had been written separately before).
 * Limitations: one key value per layout marks an empty cell and cannot be stored;
 * iteration order is not meaningful (nothing iterates where order would matter).
 *
 * Note [Non-power-of-two capacity]
 * --------------------------------
 * Rationale: a table that doubles is between max_load / 2 and max_load full, so its bytes
 * per key vary by 2x with the key count: the policies' index (12-byte cells, 3/4 at most)
 * held 1,016,000 ids in 2^21 cells, 25 bytes an id (issue 19: the pool's metadata budget).
 * Approach: with `power_of_two = false` the capacity is any multiple of 2^run_bits (whole
 * runs, so a run never wraps). The home of a key is run r = (h * runs) >> 64, h the
 * same Fibonacci hash of key >> run_bits, then r * 2^run_bits plus the key's low bits:
 * one 64x64->128 multiply instead of a shift, and order-preserving in h like the top-bits
 * rule, so a rehash still writes the new array nearly in order. The next cell is i + 1
 * or 0 past the end (a compare and a conditional move, not a mask), and the distance
 * from a home j - h, or j + capacity - h when the probe wrapped. Growth multiplies the
 * capacity by grow_num / grow_den (at least enough for the new key), rounds it up to
 * whole runs and, for arrays on huge pages, up to what the 2 MiB mapping holds anyway.
 * Growth allocates the new array before touching the table, so bad_alloc leaves it as
 * it was, as in power-of-two mode.
 * Limitations: growth by a small factor rehashes more often while a table grows
 * (about grow_den / (grow_num - grow_den) moves per key inserted, 8 at 9/8): cheap for
 * 12-byte cells, and nothing in a steady state; at a higher maximum load probe runs are
 * longer (linear probing at 0.85: ~3.8 cells to find a random key, ~23 to miss one).
 */
#pragma once

#include <algorithm>
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
 *   below 1, so that a probe always reaches an empty cell);
 * - optionally `static constexpr bool power_of_two` (default true): false allows any
 *   multiple of 2^run_bits as the capacity (Note [Non-power-of-two capacity]); then
 *   min_cells need only be such a multiple of at least 2 runs, and optionally
 *   `static constexpr std::size_t grow_num, grow_den` (default 3/2, above 1) set the
 *   growth factor.
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

  /// @brief True when the capacity is a power of two (the default), false when it may be
  ///        any multiple of 2^run_bits (Note [Non-power-of-two capacity]).
  static constexpr bool power_of_two = [] {
    if constexpr (requires { Traits::power_of_two; }) {
      return bool{Traits::power_of_two};
    } else {
      return true;
    }
  }();
  /// @brief Growth factor grow_num / grow_den of a table that is not a power of two (a
  ///        power-of-two table doubles).
  static constexpr std::size_t grow_num = [] {
    if constexpr (power_of_two) {
      return std::size_t{2};
    } else if constexpr (requires { Traits::grow_num; }) {
      return std::size_t{Traits::grow_num};
    } else {
      return std::size_t{3};
    }
  }();
  /// @copydoc grow_num
  static constexpr std::size_t grow_den = [] {
    if constexpr (power_of_two) {
      return std::size_t{1};
    } else if constexpr (requires { Traits::grow_den; }) {
      return std::size_t{Traits::grow_den};
    } else {
      return std::size_t{2};
    }
  }();
  static_assert(grow_num > grow_den && grow_den > 0, "flat_table: the growth factor must be above 1");

  /// @brief The home cell of `key` in a table of `cells` cells (a valid capacity: a power
  ///        of two >= min_cells, or for power_of_two = false a multiple of 2^run_bits):
  ///        tests build colliding keys with it.
  [[nodiscard]] static std::size_t home_in(std::uint64_t key, std::size_t cells) noexcept
  {
    if constexpr (power_of_two) {
      unsigned const shift = 64U - (static_cast<unsigned>(std::countr_zero(cells)) - Traits::run_bits);
      return home_with(key, cells - 1, shift);
    } else {
      return home_ranged(key, cells >> Traits::run_bits);
    }
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
    for (std::size_t i = home(key);; i = next(i)) {
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
    if ((size_ + 1) * max_load_den > cap_ * max_load_num) { grow(); }
    std::size_t i = home(key);
    while (!Traits::empty(cells_[i])) {
      if (Traits::key(cells_[i]) == key) { return {&cells_[i], false}; }
      i = next(i);
    }
    ++size_;
    return {&cells_[i], true};
  }

  /// @brief Remove `key`'s cell. @return false when absent.
  bool erase(std::uint64_t key) noexcept
  {
    if (size_ == 0) { return false; }
    std::size_t i = home(key);
    for (;; i = next(i)) {
      if (Traits::empty(cells_[i])) { return false; }
      if (Traits::key(cells_[i]) == key) { break; }
    }
    // Backward shift: pull later members of the probe run into the hole when the hole
    // lies between their home and their cell.
    for (std::size_t j = next(i); !Traits::empty(cells_[j]); j = next(j)) {
      if (distance(home(Traits::key(cells_[j])), j) >= distance(i, j)) {
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
    if (cap_ != 0) { __builtin_prefetch(&cells_[home(key)], 1, 3); }
  }

  /// @brief Number of keys stored.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// @brief Number of cells (0 before the first insert).
  [[nodiscard]] std::size_t capacity() const noexcept { return cap_; }

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
  // Note [Non-power-of-two capacity]: the run is the hash scaled onto [0, runs).
  [[nodiscard]] static std::size_t home_ranged(std::uint64_t key, std::size_t runs) noexcept
  {
    constexpr unsigned kBits = Traits::run_bits;
    __extension__ typedef unsigned __int128 u128;  // GCC and clang: one 64x64->128 multiply
    std::uint64_t const h = (key >> kBits) * 0x9E3779B97F4A7C15ULL;
    auto const run = static_cast<std::size_t>((static_cast<u128>(h) * runs) >> 64U);
    return (run << kBits) | static_cast<std::size_t>(key & ((std::uint64_t{1} << kBits) - 1U));
  }
  [[nodiscard]] std::size_t home(std::uint64_t key) const noexcept
  {
    if constexpr (power_of_two) {
      return home_with(key, mask_, shift_);
    } else {
      return home_ranged(key, runs_);
    }
  }
  /// The cell after `i`, wrapping at the end.
  [[nodiscard]] std::size_t next(std::size_t i) const noexcept
  {
    if constexpr (power_of_two) {
      return (i + 1) & mask_;
    } else {
      ++i;
      return i == cap_ ? 0 : i;
    }
  }
  /// How many steps a probe from `from` takes to reach `to` (wrapping).
  [[nodiscard]] std::size_t distance(std::size_t from, std::size_t to) const noexcept
  {
    if constexpr (power_of_two) {
      return (to - from) & mask_;
    } else {
      return to >= from ? to - from : to + cap_ - from;
    }
  }

  /// The capacity after the current one: doubled, or (Note [Non-power-of-two capacity])
  /// grown by grow_num / grow_den, enough for one more key, whole runs, a whole mapping.
  [[nodiscard]] std::size_t next_capacity() const noexcept
  {
    if constexpr (power_of_two) {
      static_assert(std::has_single_bit(Traits::min_cells) && Traits::min_cells >= (std::size_t{2} << Traits::run_bits));
      return cap_ == 0 ? Traits::min_cells : cap_ * 2;
    } else {
      constexpr std::size_t kRun = std::size_t{1} << Traits::run_bits;
      static_assert(Traits::min_cells % kRun == 0 && Traits::min_cells >= 2 * kRun);
      std::size_t cap = cap_ == 0 ? Traits::min_cells : cap_ / grow_den * grow_num + cap_ % grow_den * grow_num / grow_den;
      std::size_t const needed = ((size_ + 1) * max_load_den + max_load_num - 1) / max_load_num;
      cap = std::max({cap, needed, cap_ + kRun});
      cap = (cap + kRun - 1) & ~(kRun - 1);
      if (cap * sizeof(cell) >= kBigArrayBytes) {  // the mapping is whole huge pages: fill them
        cap = std::max(cap, (huge_round_up(cap * sizeof(cell)) / sizeof(cell)) & ~(kRun - 1));
      }
      return cap;
    }
  }

  void grow()
  {
    std::size_t const cap = next_capacity();
    std::vector<cell, big_array_allocator<cell>> old(cap);  // may throw: nothing changed yet
    std::swap(old, cells_);
    cap_ = cap;
    if constexpr (power_of_two) {
      mask_ = cap - 1;
      shift_ = 64U - (static_cast<unsigned>(std::countr_zero(cap)) - Traits::run_bits);  // one of cap >> run_bits runs
    } else {
      runs_ = cap >> Traits::run_bits;
    }
    for (cell& c : old) {
      if (Traits::empty(c)) { continue; }
      std::size_t j = home(Traits::key(c));
      while (!Traits::empty(cells_[j])) { j = next(j); }
      cells_[j] = std::move(c);
    }
  }

  std::vector<cell, big_array_allocator<cell>> cells_;
  std::size_t size_{0};
  std::size_t cap_{0};   // cells_.size(), kept to spare a division by sizeof(cell)
  std::size_t mask_{0};  // power of two: cap_ - 1
  std::size_t runs_{0};  // otherwise: cap_ >> run_bits
  unsigned shift_{64};   // power of two: 64 - log2(runs)
};

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file id_index.hpp
 * @brief tierpool::detail::id_index: a flat map from tensor_id to a 32-bit slot number,
 *        for policies that keep their nodes in a slab (lru_policy and others).
 *
 * Note [A flat index instead of std::unordered_map]
 * -------------------------------------------------
 * Rationale: a policy hears of every insert and erase; with std::unordered_map each insert
 * allocates a node and each lookup chases a pointer. In cache-mode replay (tens of millions
 * of requests per second) that map was the largest single cost of `lru`; in a miss-heavy
 * pool-mode replay every miss erases a victim and inserts the missed tensor, each a lookup
 * of a cold id.
 * Approach: open addressing with linear probing over one array of (id, value) cells, so a
 * lookup reads one cache line (two parallel arrays of keys and values, as this index
 * first was, missed twice); at most half full, deletion by backward shift (no tombstones,
 * so lookups never slow down with churn). Ids are handed out in order by the pool, so the
 * hash keeps runs of four consecutive ids in four adjacent cells (one line; Fibonacci
 * hashing of id / 4 picks the run's place): a burst of inserts (a trace's first pass)
 * writes one line per four tensors, while unrelated ids still spread evenly. Memory grows
 * by doubling only (big arrays on huge pages: Note [Big arrays on huge pages]); inserts
 * allocate nothing in a steady state. prefetch(id) asks for a cell's line ahead of use
 * (lru_policy's propose does it for the victims the engine erases next).
 * Limitations: values must be below 2^32 - 1 (the empty marker); iteration order is not
 * meaningful (policies never iterate the index, so determinism is unaffected).
 */
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <tierpool/detail/big_array.hpp>
#include <tierpool/types.hpp>

namespace tierpool::detail {

/**
 * @brief tensor_id -> 32-bit value, open addressing (Note [A flat index instead of
 *        std::unordered_map]). Not thread-safe (a policy is externally synchronized).
 */
class id_index {
 public:
  using value_type = std::uint32_t;  ///< the stored value (a slab position)
  /// @brief Returned by find() for an absent id; never a stored value.
  static constexpr value_type npos = std::numeric_limits<value_type>::max();

  id_index() = default;

  /// @brief The value of `id`, or npos.
  [[nodiscard]] value_type find(tensor_id id) const noexcept
  {
    if (size_ == 0) { return npos; }
    auto const key = static_cast<std::uint64_t>(id);
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      cell const& c = cells_[i];
      if (c.value == npos) { return npos; }
      if (c.id == key) { return c.value; }
    }
  }

  /// @brief True when `id` is present.
  [[nodiscard]] bool contains(tensor_id id) const noexcept { return find(id) != npos; }

  /**
   * @brief Insert or overwrite. Precondition: value != npos.
   * @throws std::bad_alloc when the table must grow and cannot (the index is unchanged)
   */
  void insert(tensor_id id, value_type value)
  {
    if ((size_ + 1) * 2 > cells_.size()) { grow(); }
    auto const key = static_cast<std::uint64_t>(id);
    std::size_t i = home(key);
    while (cells_[i].value != npos && cells_[i].id != key) { i = (i + 1) & mask_; }
    if (cells_[i].value == npos) { ++size_; }
    cells_[i] = cell{key, value};
  }

  /// @brief Remove `id`. @return false when it was absent.
  bool erase(tensor_id id) noexcept
  {
    if (size_ == 0) { return false; }
    auto const key = static_cast<std::uint64_t>(id);
    std::size_t i = home(key);
    while (cells_[i].value != npos && cells_[i].id != key) { i = (i + 1) & mask_; }
    if (cells_[i].value == npos) { return false; }
    // Backward shift: pull later members of the probe run into the hole when the hole
    // lies between their home and their cell.
    for (std::size_t j = (i + 1) & mask_; cells_[j].value != npos; j = (j + 1) & mask_) {
      if (((j - home(cells_[j].id)) & mask_) >= ((j - i) & mask_)) {
        cells_[i] = cells_[j];
        i = j;
      }
    }
    cells_[i].value = npos;
    --size_;
    return true;
  }

  /// @brief Ask for the cache line of `id`'s cell (a hint: no effect on behaviour).
  void prefetch(tensor_id id) const noexcept
  {
    if (!cells_.empty()) { __builtin_prefetch(&cells_[home(static_cast<std::uint64_t>(id))], 1, 3); }
  }

  /// @brief Number of ids stored.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// @brief Remove everything (keeps the memory).
  void clear() noexcept
  {
    for (cell& c : cells_) { c.value = npos; }
    size_ = 0;
  }

 private:
  struct cell {
    std::uint64_t id{0};
    value_type value{npos};  // npos: empty
  };
  static constexpr unsigned kRunBits = 2;  // 4 cells of 16 bytes: one cache line

  [[nodiscard]] std::size_t home(std::uint64_t key) const noexcept
  {
    auto const run = static_cast<std::size_t>(((key >> kRunBits) * 0x9E3779B97F4A7C15ULL) >> shift_);
    return ((run << kRunBits) | static_cast<std::size_t>(key & ((1U << kRunBits) - 1))) & mask_;
  }
  void grow()
  {
    std::size_t const cap = cells_.empty() ? 16 : cells_.size() * 2;  // >= 4 runs of cells
    std::vector<cell, big_array_allocator<cell>> old(cap);
    std::swap(old, cells_);
    mask_ = cap - 1;
    shift_ = 64U - (static_cast<unsigned>(std::countr_zero(cap)) - kRunBits);
    for (cell const& c : old) {
      if (c.value == npos) { continue; }
      std::size_t j = home(c.id);
      while (cells_[j].value != npos) { j = (j + 1) & mask_; }
      cells_[j] = c;
    }
  }

  std::vector<cell, big_array_allocator<cell>> cells_;
  std::size_t size_{0};
  std::size_t mask_{0};
  unsigned shift_{64};
};

}  // namespace tierpool::detail

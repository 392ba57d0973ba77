// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file flat_u64_set.hpp
 * @brief Internal: tierpool::detail::flat_u64_set, a set of 64-bit keys in one flat array
 *        (open addressing), for bookkeeping that is updated on every copy or eviction
 *        (the event pool's outstanding events, a tier's deferred block offsets).
 *
 * Same scheme as detail::id_index (Note [A flat index instead of std::unordered_map]):
 * linear probing, Fibonacci hashing, at most half full, deletion by backward shift. A
 * std::unordered_set allocated a heap node per insert, which a miss-heavy replay paid
 * several times per miss. Memory grows by doubling only; a steady state allocates nothing.
 */
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tierpool::detail {

/// @brief A set of std::uint64_t keys other than kEmpty. Externally synchronized; a value.
class flat_u64_set {
 public:
  /// @brief The one key that cannot be stored (it marks empty cells).
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  flat_u64_set() = default;

  /// @brief True when `key` is present.
  [[nodiscard]] bool contains(std::uint64_t key) const noexcept
  {
    if (size_ == 0) { return false; }
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (cells_[i] == key) { return true; }
      if (cells_[i] == kEmpty) { return false; }
    }
  }

  /**
   * @brief Add `key` (precondition: key != kEmpty). @return false when it was present.
   * @throws std::bad_alloc when the table must grow and cannot (the set is unchanged)
   */
  bool insert(std::uint64_t key)
  {
    if ((size_ + 1) * 2 > cells_.size()) { grow(); }
    std::size_t i = home(key);
    while (cells_[i] != kEmpty) {
      if (cells_[i] == key) { return false; }
      i = (i + 1) & mask_;
    }
    cells_[i] = key;
    ++size_;
    return true;
  }

  /// @brief Remove `key`. @return false when it was absent.
  bool erase(std::uint64_t key) noexcept
  {
    if (size_ == 0) { return false; }
    std::size_t i = home(key);
    while (cells_[i] != key) {
      if (cells_[i] == kEmpty) { return false; }
      i = (i + 1) & mask_;
    }
    // Backward shift: move later members of the probe run into the hole when the hole
    // lies between their home and their cell (no tombstones).
    for (std::size_t j = (i + 1) & mask_; cells_[j] != kEmpty; j = (j + 1) & mask_) {
      if (((j - home(cells_[j])) & mask_) >= ((j - i) & mask_)) {
        cells_[i] = cells_[j];
        i = j;
      }
    }
    cells_[i] = kEmpty;
    --size_;
    return true;
  }

  /// @brief Number of keys.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// @brief Call `f(key)` for every key, in no meaningful order. `f` must not modify the set.
  template <class F>
  void for_each(F&& f) const
  {
    for (std::uint64_t const k : cells_) {
      if (k != kEmpty) { f(k); }
    }
  }

 private:
  [[nodiscard]] std::size_t home(std::uint64_t key) const noexcept
  {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void grow()
  {
    std::size_t const cap = cells_.empty() ? 16 : cells_.size() * 2;
    std::vector<std::uint64_t> old(cap, kEmpty);
    std::swap(old, cells_);
    mask_ = cap - 1;
    shift_ = 64U - static_cast<unsigned>(std::countr_zero(cap));
    for (std::uint64_t const k : old) {
      if (k == kEmpty) { continue; }
      std::size_t j = home(k);
      while (cells_[j] != kEmpty) { j = (j + 1) & mask_; }
      cells_[j] = k;
    }
  }

  std::vector<std::uint64_t> cells_;
  std::size_t size_{0};
  std::size_t mask_{0};
  unsigned shift_{64};
};

}  // namespace tierpool::detail

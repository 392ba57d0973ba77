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
 * of requests per second) that map was the largest single cost of `lru`.
 * Approach: open addressing with linear probing over two parallel arrays (keys, values),
 * Fibonacci hashing of the 64-bit id, at most half full, and deletion by backward shift
 * (no tombstones, so lookups never slow down with churn). Memory grows by doubling only;
 * inserts allocate nothing in a steady state.
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

#include <tierpool/types.hpp>

namespace tierpool::detail {

/// @brief tensor_id -> std::uint32_t, open addressing. Externally synchronized; a value.
class id_index {
 public:
  using value_type = std::uint32_t;
  /// @brief Returned by find() for an absent id; never a stored value.
  static constexpr value_type npos = std::numeric_limits<value_type>::max();

  id_index() = default;

  /// @brief The value of `id`, or npos.
  [[nodiscard]] value_type find(tensor_id id) const noexcept
  {
    if (size_ == 0) { return npos; }
    auto const key = static_cast<std::uint64_t>(id);
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      value_type const v = vals_[i];
      if (v == npos) { return npos; }
      if (keys_[i] == key) { return v; }
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
    if ((size_ + 1) * 2 > vals_.size()) { grow(); }
    auto const key = static_cast<std::uint64_t>(id);
    std::size_t i = home(key);
    while (vals_[i] != npos && keys_[i] != key) { i = (i + 1) & mask_; }
    if (vals_[i] == npos) { ++size_; }
    keys_[i] = key;
    vals_[i] = value;
  }

  /// @brief Remove `id`. @return false when it was absent.
  bool erase(tensor_id id) noexcept
  {
    if (size_ == 0) { return false; }
    auto const key = static_cast<std::uint64_t>(id);
    std::size_t i = home(key);
    while (vals_[i] != npos && keys_[i] != key) { i = (i + 1) & mask_; }
    if (vals_[i] == npos) { return false; }
    // Backward shift: pull later members of the probe run into the hole when the hole
    // lies between their home and their slot.
    for (std::size_t j = (i + 1) & mask_; vals_[j] != npos; j = (j + 1) & mask_) {
      std::size_t const h = home(keys_[j]);
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        keys_[i] = keys_[j];
        vals_[i] = vals_[j];
        i = j;
      }
    }
    vals_[i] = npos;
    --size_;
    return true;
  }

  /// @brief Number of ids stored.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// @brief Remove everything (keeps the memory).
  void clear() noexcept
  {
    for (auto& v : vals_) { v = npos; }
    size_ = 0;
  }

 private:
  [[nodiscard]] std::size_t home(std::uint64_t key) const noexcept
  {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void grow()
  {
    std::size_t const cap = vals_.empty() ? 16 : vals_.size() * 2;
    std::vector<std::uint64_t> keys(cap);
    std::vector<value_type> vals(cap, npos);
    std::swap(keys, keys_);
    std::swap(vals, vals_);
    mask_ = cap - 1;
    shift_ = 64U - static_cast<unsigned>(std::countr_zero(cap));
    for (std::size_t i = 0; i < vals.size(); ++i) {
      if (vals[i] == npos) { continue; }
      std::size_t j = home(keys[i]);
      while (vals_[j] != npos) { j = (j + 1) & mask_; }
      keys_[j] = keys[i];
      vals_[j] = vals[i];
    }
  }

  std::vector<std::uint64_t> keys_;
  std::vector<value_type> vals_;
  std::size_t size_{0};
  std::size_t mask_{0};
  unsigned shift_{64};
};

}  // namespace tierpool::detail

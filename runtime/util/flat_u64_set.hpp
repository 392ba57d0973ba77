// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file flat_u64_set.hpp
 * @brief Internal: tierpool::detail::flat_u64_set, a set of 64-bit keys in one flat array
 *        (open addressing), for bookkeeping that is updated on every copy or eviction
 *        (the event pool's outstanding events, a tier's deferred block offsets).
 *
 * The table is detail::flat_table (Note [A flat index instead of std::unordered_map]) with
 * a bare key per cell and plain Fibonacci hashing (these keys are not consecutive). A
 * std::unordered_set allocated a heap node per insert, which a miss-heavy replay paid
 * several times per miss.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include <tierpool/detail/flat_table.hpp>

namespace tierpool::detail {

/// @brief A set of std::uint64_t keys other than kEmpty. Externally synchronized; a value.
class flat_u64_set {
 public:
  /// @brief The one key that cannot be stored (it marks empty cells).
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  flat_u64_set() = default;

  /// @brief True when `key` is present.
  [[nodiscard]] bool contains(std::uint64_t key) const noexcept { return table_.find(key) != nullptr; }

  /**
   * @brief Add `key` (precondition: key != kEmpty). @return false when it was present.
   * @throws std::bad_alloc when the table must grow and cannot (the set is unchanged)
   */
  bool insert(std::uint64_t key)
  {
    auto const [c, added] = table_.find_or_claim(key);
    c->key = key;
    return added;
  }

  /// @brief Remove `key`. @return false when it was absent.
  bool erase(std::uint64_t key) noexcept { return table_.erase(key); }

  /// @brief Number of keys.
  [[nodiscard]] std::size_t size() const noexcept { return table_.size(); }

  /// @brief Call `f(key)` for every key, in no meaningful order. `f` must not modify the set.
  template <class F>
  void for_each(F&& f) const
  {
    table_.for_each([&f](cell const& c) { f(c.key); });
  }

 private:
  struct cell {
    std::uint64_t key{kEmpty};
  };
  struct traits {
    using cell = flat_u64_set::cell;
    static constexpr unsigned run_bits = 0;
    static constexpr std::size_t min_cells = 16;
    static bool empty(cell const& c) noexcept { return c.key == kEmpty; }
    static std::uint64_t key(cell const& c) noexcept { return c.key; }
    static void clear(cell& c) noexcept { c.key = kEmpty; }
  };
  flat_table<traits> table_;
};

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file id_index.hpp
 * @brief tierpool::detail::id_index: a flat map from tensor_id to a 32-bit slot number,
 *        for policies that keep their nodes in a slab (lru_policy and others).
 *
 * The table itself, and why it is flat: Note [A flat index instead of std::unordered_map]
 * in flat_table.hpp. Here a cell is an id and a 32-bit slot in one 12-byte cell (the id in
 * two 32-bit halves, so that the cell needs no padding), runs of four consecutive ids
 * share 48 bytes (one cache line or two). The capacity is not a power of two (Note
 * [Non-power-of-two capacity] in flat_table.hpp): the table grows by 9/8 when it would be
 * more than 0.85 full, so it stays between 0.75 and 0.85 full, 14-16 bytes an entry
 * (issue 19; a power of two grown at 3/4 full held 16-32, 25 at a million ids), apart
 * from the rounding of a big array to whole 2 MiB pages, whose cells it uses (a million
 * ids: 14 MiB, 14.7 bytes an id). For random keys, linear probing at 0.85 full reads 3.8
 * cells on average to find an id and 23 to miss one (at 3/4: 2.5 and 8.5); ids the pool
 * hands out in order fill whole runs and probe less. prefetch(id) asks for a cell's line
 * ahead of use (lru_policy's propose does it for the victims the engine erases next).
 * Limitations: values must be below 2^32 - 1 (the empty marker); iteration order is not
 * meaningful (policies never iterate the index, so determinism is unaffected).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include <tierpool/detail/flat_table.hpp>
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
    cell const* c = table_.find(static_cast<std::uint64_t>(id));
    return c == nullptr ? npos : c->value;
  }

  /// @brief True when `id` is present.
  [[nodiscard]] bool contains(tensor_id id) const noexcept { return find(id) != npos; }

  /**
   * @brief Insert or overwrite. Precondition: value != npos.
   * @throws std::bad_alloc when the table must grow and cannot (the index is unchanged)
   */
  void insert(tensor_id id, value_type value)
  {
    auto const key = static_cast<std::uint64_t>(id);
    cell& c = *table_.find_or_claim(key).first;
    c.set_id(key);
    c.value = value;
  }

  /// @brief Remove `id`. @return false when it was absent.
  bool erase(tensor_id id) noexcept { return table_.erase(static_cast<std::uint64_t>(id)); }

  /// @brief Ask for the cache line of `id`'s cell (a hint: no effect on behaviour).
  void prefetch(tensor_id id) const noexcept { table_.prefetch(static_cast<std::uint64_t>(id)); }

  /// @brief Number of ids stored.
  [[nodiscard]] std::size_t size() const noexcept { return table_.size(); }
  /// @brief Bytes of the table's cells (its memory, less any rounding of the allocation).
  [[nodiscard]] std::size_t table_bytes() const noexcept { return table_.capacity() * sizeof(cell); }
  /// @brief Remove everything (keeps the memory).
  void clear() noexcept { table_.clear(); }

 private:
  struct cell {
    std::uint32_t id_halves[2]{0, 0};  // the 64-bit id (memcpy'd: 4-byte alignment, no padding)
    value_type value{npos};            // npos: empty

    [[nodiscard]] std::uint64_t id() const noexcept
    {
      std::uint64_t v = 0;
      std::memcpy(&v, id_halves, sizeof v);
      return v;
    }
    void set_id(std::uint64_t v) noexcept { std::memcpy(id_halves, &v, sizeof v); }
  };
  static_assert(sizeof(cell) == 12, "id_index::cell is 12 bytes");
  struct traits {
    using cell = id_index::cell;
    static constexpr unsigned run_bits = 2;  // 4 cells of 12 bytes: a line, or two
    static constexpr std::size_t min_cells = 16;
    static constexpr bool power_of_two = false;       // Note [Non-power-of-two capacity]
    static constexpr std::size_t max_load_num = 17;  // grow at 0.85 full (flat_table's default: 1/2)
    static constexpr std::size_t max_load_den = 20;
    static constexpr std::size_t grow_num = 9;  // by 9/8: 0.75-0.85 full
    static constexpr std::size_t grow_den = 8;
    static bool empty(cell const& c) noexcept { return c.value == npos; }
    static std::uint64_t key(cell const& c) noexcept { return c.id(); }
    static void clear(cell& c) noexcept { c.value = npos; }
  };
  flat_table<traits> table_;
};

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// id_index_tests.cpp — detail::id_index against std::unordered_map under random inserts,
// overwrites and erases (backward-shift deletion must keep every probe run reachable).
#include <gtest/gtest.h>

#include <tierpool/detail/id_index.hpp>

#include <cstdint>
#include <random>
#include <unordered_map>

namespace tierpool::detail {
namespace {

TEST(IdIndex, MatchesAReferenceMapUnderRandomChurn)
{
  for (std::uint64_t seed : {1ULL, 2ULL, 3ULL}) {
    std::mt19937_64 rng(seed);
    id_index idx;
    std::unordered_map<std::uint64_t, std::uint32_t> ref;
    // Keys from a small range collide often; some are huge (any 64-bit id is valid).
    auto key = [&] {
      std::uint64_t const k = rng() % 4096;
      return (rng() % 8 == 0) ? k | 0xF000000000000000ULL : k;
    };
    for (int op = 0; op < 200'000; ++op) {
      std::uint64_t const k = key();
      switch (rng() % 3) {
        case 0:
        case 1: {
          auto const v = static_cast<std::uint32_t>(rng() % 1'000'000);
          idx.insert(tensor_id{k}, v);
          ref[k] = v;
          break;
        }
        default: EXPECT_EQ(idx.erase(tensor_id{k}), ref.erase(k) == 1) << "seed " << seed << " op " << op; break;
      }
      if (op % 997 == 0) {
        ASSERT_EQ(idx.size(), ref.size());
        for (auto const& [rk, rv] : ref) { ASSERT_EQ(idx.find(tensor_id{rk}), rv) << "seed " << seed << " op " << op; }
      }
      std::uint64_t const probe = key();
      auto const it = ref.find(probe);
      ASSERT_EQ(idx.find(tensor_id{probe}), it == ref.end() ? id_index::npos : it->second);
    }
  }
}

struct default_load_traits {
  struct cell {
    std::uint64_t key{0};
  };
  static constexpr unsigned run_bits = 0;
  static constexpr std::size_t min_cells = 16;
  static bool empty(cell const& c) noexcept { return c.key == 0; }
  static std::uint64_t key(cell const& c) noexcept { return c.key; }
  static void clear(cell& c) noexcept { c.key = 0; }
};
// Other users of flat_table (the record table, flat_u64_set) keep growing at half full.
static_assert(flat_table<default_load_traits>::max_load_num == 1 && flat_table<default_load_traits>::max_load_den == 2);

TEST(IdIndex, ManyConsecutiveIdsAtThreeQuartersLoad)
{
  // Pool ids come in order; up to 3/4 of the cells are full before the index grows.
  id_index idx;
  constexpr std::uint64_t n = 100'000;
  for (std::uint64_t k = 1; k <= n; ++k) { idx.insert(tensor_id{k}, static_cast<std::uint32_t>(k * 3)); }
  ASSERT_EQ(idx.size(), n);
  for (std::uint64_t k = 1; k <= n; k += 2) { ASSERT_TRUE(idx.erase(tensor_id{k})); }
  for (std::uint64_t k = 1; k <= n; ++k) {
    ASSERT_EQ(idx.find(tensor_id{k}), k % 2 == 1 ? id_index::npos : k * 3) << k;
  }
  EXPECT_EQ(idx.find(tensor_id{n + 1}), id_index::npos);
  EXPECT_EQ(idx.size(), n / 2);
}

TEST(IdIndex, EmptyAndClear)
{
  id_index idx;
  EXPECT_EQ(idx.find(tensor_id{5}), id_index::npos);
  EXPECT_FALSE(idx.erase(tensor_id{5}));
  idx.insert(tensor_id{5}, 7);
  idx.insert(tensor_id{5}, 8);  // overwrite
  EXPECT_EQ(idx.size(), 1U);
  EXPECT_EQ(idx.find(tensor_id{5}), 8U);
  idx.clear();
  EXPECT_EQ(idx.size(), 0U);
  EXPECT_FALSE(idx.contains(tensor_id{5}));
}

}  // namespace
}  // namespace tierpool::detail

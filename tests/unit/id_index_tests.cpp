// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// id_index_tests.cpp — detail::id_index against std::unordered_map under random inserts,
// overwrites and erases (backward-shift deletion must keep every probe run reachable),
// and detail::flat_table's capacity that is not a power of two (Note [Non-power-of-two
// capacity]): homes in range, runs kept, probes and backward shifts that wrap past the
// last cell, growth (also under bad_alloc: this executable replaces operator new so that
// a test can make the next allocation fail) and the index's bytes per id at a million.
#include <gtest/gtest.h>

#include <tierpool/detail/id_index.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <unordered_map>
#include <vector>

namespace {
std::atomic<bool> g_fail_next{false};  // make the next operator new throw
std::atomic<int> g_failed{0};
}  // namespace

// Replacements of the global (unaligned) operator new / delete for this executable (as in
// pool_alloc_fault_tests.cpp); the array, nothrow and aligned forms keep their defaults.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n)
{
  if (g_fail_next.exchange(false)) {
    g_failed.fetch_add(1);
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) { return p; }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*n*/) noexcept { std::free(p); }

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
// Other users of flat_table (flat_u64_set, ...) keep growing at half full, by doubling, into
// powers of two.
static_assert(flat_table<default_load_traits>::max_load_num == 1 && flat_table<default_load_traits>::max_load_den == 2);
static_assert(flat_table<default_load_traits>::power_of_two);
static_assert(flat_table<default_load_traits>::grow_num == 2 && flat_table<default_load_traits>::grow_den == 1);

TEST(FlatTable, DefaultTraitsKeepPowersOfTwoAtHalfLoad)
{
  flat_table<default_load_traits> t;
  EXPECT_EQ(t.capacity(), 0U);
  for (std::uint64_t k = 1; k <= 5000; ++k) {
    t.find_or_claim(k).first->key = k;
    ASSERT_TRUE(std::has_single_bit(t.capacity())) << k;
    ASSERT_LE(t.size() * 2, t.capacity()) << k;
    if (t.capacity() > 16) { ASSERT_GT(t.size() * 4, t.capacity()) << k; }  // grown only when needed
  }
  EXPECT_EQ(t.capacity(), 16384U);
  // The home rule of the power-of-two mode: the top bits of a Fibonacci hash.
  EXPECT_EQ(flat_table<default_load_traits>::home_in(1, 16), (0x9E3779B97F4A7C15ULL >> 60U));
}

// A table whose capacity is any multiple of its run length (Note [Non-power-of-two
// capacity]), with a tiny first capacity so that tests reach the wrap quickly.
template <unsigned RunBits, std::size_t MinCells>
struct ranged_traits {
  struct cell {
    std::uint64_t key{0};
    std::uint64_t value{0};
  };
  static constexpr unsigned run_bits = RunBits;
  static constexpr std::size_t min_cells = MinCells;
  static constexpr bool power_of_two = false;
  static constexpr std::size_t max_load_num = 17;
  static constexpr std::size_t max_load_den = 20;
  static constexpr std::size_t grow_num = 9;
  static constexpr std::size_t grow_den = 8;
  static bool empty(cell const& c) noexcept { return c.key == 0; }
  static std::uint64_t key(cell const& c) noexcept { return c.key; }
  static void clear(cell& c) noexcept { c.key = 0; }
};
using plain13 = flat_table<ranged_traits<0, 13>>;  // 13 cells: no run structure
using runs12 = flat_table<ranged_traits<2, 12>>;   // 3 runs of 4

void put(auto& t, std::uint64_t k, std::uint64_t v)
{
  auto* c = t.find_or_claim(k).first;
  c->key = k;
  c->value = v;
}

TEST(FlatTable, RangedHomesStayInRangeAndKeepRuns)
{
  static_assert(!runs12::power_of_two);
  std::mt19937_64 rng(7);
  for (std::size_t cells : {8UL, 12UL, 20UL, 1000UL, 1'223'336UL, 1'398'100UL}) {
    std::vector<std::size_t> per_run(cells / 4, 0);
    for (int i = 0; i < 20'000; ++i) {
      std::uint64_t const base = (i % 2 == 0 ? rng() : static_cast<std::uint64_t>(i) * 4) & ~std::uint64_t{3};
      std::size_t const h0 = runs12::home_in(base, cells);
      ASSERT_LT(h0, cells);
      ASSERT_EQ(h0 % 4, 0U);
      for (std::uint64_t d = 1; d < 4; ++d) { ASSERT_EQ(runs12::home_in(base + d, cells), h0 + d); }  // one run
      ++per_run[h0 / 4];
    }
    if (cells <= 1000) {  // consecutive and random runs spread over every run of a small table
      EXPECT_EQ(std::count(per_run.begin(), per_run.end(), 0U), 0) << cells;
    }
  }
  for (std::uint64_t k = 0; k < 10'000; ++k) { ASSERT_LT(plain13::home_in(k, 13), 13U); }
}

// Keys whose home in a 13-cell table is `home`.
std::vector<std::uint64_t> keys_at(std::size_t home, std::size_t n)
{
  std::vector<std::uint64_t> out;
  for (std::uint64_t k = 1; out.size() < n; ++k) {
    if (plain13::home_in(k, 13) == home) { out.push_back(k); }
  }
  return out;
}

TEST(FlatTable, CollisionsWrapPastTheLastCellAndBackwardShiftAcrossIt)
{
  // 13 cells, at most 11 keys (0.85) before growth. Five keys at home 12 fill cell 12 and
  // wrap into cells 0..3; two keys at home 0 follow them (cells 4, 5), one at home 1
  // (cell 6), one at home 2 (cell 7).
  std::vector<std::uint64_t> const last = keys_at(12, 5);
  std::vector<std::uint64_t> const first = keys_at(0, 2);
  std::vector<std::uint64_t> const at1 = keys_at(1, 1);
  std::vector<std::uint64_t> const at2 = keys_at(2, 1);
  for (int order = 0; order < 9; ++order) {
    plain13 t;
    std::unordered_map<std::uint64_t, std::uint64_t> ref;
    auto add = [&](std::uint64_t k) {
      put(t, k, k * 10);
      ref[k] = k * 10;
    };
    for (std::uint64_t k : last) { add(k); }
    for (std::uint64_t k : first) { add(k); }
    add(at1[0]);
    add(at2[0]);
    ASSERT_EQ(t.capacity(), 13U);  // no growth: the wrap is what is tested
    // Erase one key (each in turn), then the rest one by one in a shuffled order: every
    // later key must still be found, whichever side of the wrap it sits on.
    std::vector<std::uint64_t> all;
    for (auto const& [k, v] : ref) { all.push_back(k); }
    std::sort(all.begin(), all.end());
    std::rotate(all.begin(), all.begin() + order, all.end());
    std::shuffle(all.begin() + 1, all.end(), std::mt19937_64(static_cast<std::uint64_t>(order)));
    for (std::uint64_t k : all) {
      ASSERT_TRUE(t.erase(k)) << k;
      ref.erase(k);
      ASSERT_FALSE(t.erase(k));
      ASSERT_EQ(t.find(k), nullptr);
      ASSERT_EQ(t.size(), ref.size());
      for (auto const& [rk, rv] : ref) {
        auto const* c = t.find(rk);
        ASSERT_NE(c, nullptr) << "order " << order << " erased " << k << " lost " << rk;
        ASSERT_EQ(c->value, rv);
      }
      // Refill the hole with a key of home 12 now and then: probes wrap again.
      if (ref.size() == 5) {
        for (std::uint64_t k2 : keys_at(12, 7)) {
          if (ref.count(k2) == 0 && ref.size() < 8) { add(k2); }
        }
        ASSERT_EQ(t.capacity(), 13U);
        for (auto const& [rk, rv] : ref) { ASSERT_EQ(t.find(rk)->value, rv); }
      }
    }
  }
}

// Random inserts and erases over a small universe (collisions everywhere) against a
// reference map, from a tiny non-power-of-two table through its growth.
template <class Table>
void churn_against_reference(std::uint64_t universe, int ops, std::uint64_t seed)
{
  std::mt19937_64 rng(seed);
  Table t;
  std::unordered_map<std::uint64_t, std::uint64_t> ref;
  std::size_t last_cap = 0;
  int growths = 0;
  for (int op = 0; op < ops; ++op) {
    std::uint64_t const k = 1 + rng() % universe;
    if (rng() % 5 < 3) {
      std::uint64_t const v = rng();
      put(t, k, v);
      ref[k] = v;
    } else {
      ASSERT_EQ(t.erase(k), ref.erase(k) == 1) << "op " << op;
    }
    ASSERT_EQ(t.size(), ref.size());
    ASSERT_LE(t.size() * 20, t.capacity() * 17);
    if (t.capacity() != last_cap) {
      ASSERT_GT(t.capacity(), last_cap);
      ++growths;
      last_cap = t.capacity();
    }
    std::uint64_t const probe = 1 + rng() % universe;
    auto const it = ref.find(probe);
    auto const* c = t.find(probe);
    ASSERT_EQ(c == nullptr, it == ref.end()) << "op " << op;
    if (c != nullptr) { ASSERT_EQ(c->value, it->second); }
    if (op % 1013 == 0) {
      for (auto const& [rk, rv] : ref) { ASSERT_EQ(t.find(rk)->value, rv) << "op " << op; }
    }
  }
  EXPECT_GT(growths, 3);
}

TEST(FlatTable, RangedTablesMatchAReferenceMapUnderChurn)
{
  for (std::uint64_t seed : {1ULL, 2ULL}) {
    churn_against_reference<plain13>(40, 20'000, seed);  // stays tiny: wraps constantly
    churn_against_reference<plain13>(3000, 60'000, seed);
    churn_against_reference<runs12>(40, 20'000, seed);
    churn_against_reference<runs12>(3000, 60'000, seed);
  }
}

TEST(FlatTable, RangedGrowthStaysNearTheMaximumLoad)
{
  flat_table<ranged_traits<2, 16>> t;
  std::size_t cap = 0;
  std::vector<std::size_t> caps;
  for (std::uint64_t k = 1; k <= 2'000'000; ++k) {
    put(t, k, k);
    if (t.capacity() != cap) {
      // Grown just now: at most 0.85 full with the new key, whole runs, and below about
      // 0.85 / (9/8) (apart from small tables and whole huge pages).
      cap = t.capacity();
      caps.push_back(cap);
      ASSERT_EQ(cap % 4, 0U);
      ASSERT_LE(t.size() * 20, cap * 17);
      if (caps.size() > 1 && cap * 16 < kBigArrayBytes) {
        ASSERT_GE(static_cast<double>(t.size()) / static_cast<double>(cap), 0.85 * 8 / 9 - 0.1) << cap;
      }
    }
  }
  EXPECT_GT(caps.size(), 30U);  // by 9/8 rather than doubling
  EXPECT_FALSE(std::all_of(caps.begin(), caps.end(), [](std::size_t c) { return std::has_single_bit(c); }));
  for (std::uint64_t k = 1; k <= 2'000'000; k += 7) { ASSERT_EQ(t.find(k)->value, k); }
}

TEST(IdIndex, ManyConsecutiveIdsAtHighLoad)
{
  // Pool ids come in order; up to 0.85 of the cells are full before the index grows.
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

// 100,000 consecutive ids, then random inserts, overwrites and erases of ids near them and
// of random 64-bit ids, against a reference map.
TEST(IdIndex, ConsecutiveAndRandomIdsMatchAReferenceMap)
{
  std::mt19937_64 rng(11);
  id_index idx;
  std::unordered_map<std::uint64_t, std::uint32_t> ref;
  constexpr std::uint64_t n = 100'000;
  for (std::uint64_t k = 1; k <= n; ++k) {
    idx.insert(tensor_id{k}, static_cast<std::uint32_t>(k));
    ref[k] = static_cast<std::uint32_t>(k);
  }
  std::vector<std::uint64_t> randoms(20'000);
  for (auto& r : randoms) { r = rng() | 1U; }  // odd: never 0, and apart from the small ids
  for (int op = 0; op < 600'000; ++op) {
    std::uint64_t const k = (rng() % 4 == 0) ? randoms[rng() % randoms.size()] : 1 + rng() % (n + n / 2);
    if (rng() % 2 == 0) {
      auto const v = static_cast<std::uint32_t>(rng() % 0xFFFF'FFF0U);
      idx.insert(tensor_id{k}, v);
      ref[k] = v;
    } else {
      ASSERT_EQ(idx.erase(tensor_id{k}), ref.erase(k) == 1) << "op " << op;
    }
    std::uint64_t const probe = (rng() % 4 == 0) ? randoms[rng() % randoms.size()] : 1 + rng() % (n + n / 2);
    auto const it = ref.find(probe);
    ASSERT_EQ(idx.find(tensor_id{probe}), it == ref.end() ? id_index::npos : it->second) << "op " << op;
  }
  ASSERT_EQ(idx.size(), ref.size());
  for (auto const& [k, v] : ref) { ASSERT_EQ(idx.find(tensor_id{k}), v); }
}

// Issue 19: at a million ids (and at the ~1,016,000 of `tierpool bench scale --tensors
// 1000000`: the tensors and those filling the device tier) the index costs at most 16 bytes
// an id, where a power of two at 3/4 cost 25.
TEST(IdIndex, AtMostSixteenBytesAnIdAtAMillion)
{
  id_index idx;
  std::size_t peak_bytes = 0;
  for (std::uint64_t k = 1; k <= 1'016'384; ++k) {
    idx.insert(tensor_id{k}, static_cast<std::uint32_t>(k));
    peak_bytes = std::max(peak_bytes, idx.table_bytes());
    if (k == 1'000'000 || k == 1'016'384) {
      double const per_id = static_cast<double>(idx.table_bytes()) / static_cast<double>(k);
      EXPECT_LE(per_id, 16.0) << k;
      EXPECT_GE(per_id, 12.0 / 0.85 - 0.01) << k;
    }
  }
  id_index random_ids;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 1'000'000; ++i) { random_ids.insert(tensor_id{rng() | 1U}, 1); }
  EXPECT_LE(static_cast<double>(random_ids.table_bytes()) / static_cast<double>(random_ids.size()), 16.0);
}

TEST(IdIndex, GrowthUnderBadAllocLeavesTheIndexUnchanged)
{
  id_index idx;
  int failures = 0;
  for (std::uint64_t k = 1; k <= 20'000; ++k) {
    std::size_t const bytes = idx.table_bytes();
    std::size_t const cap = bytes / 12;
    if ((idx.size() + 1) * 20 > cap * 17) {  // this insert grows the table: fail it once
      g_failed = 0;
      g_fail_next = true;
      EXPECT_THROW(idx.insert(tensor_id{k}, static_cast<std::uint32_t>(k)), std::bad_alloc) << k;
      g_fail_next = false;
      if (bytes < kBigArrayBytes) { ASSERT_EQ(g_failed.load(), 1) << k; }  // bigger ones are mapped, not new'd
      if (g_failed.load() == 1) {
        ++failures;
        ASSERT_EQ(idx.size(), k - 1);
        ASSERT_EQ(idx.table_bytes(), bytes);
        ASSERT_FALSE(idx.contains(tensor_id{k}));
        for (std::uint64_t j = 1; j < k; ++j) { ASSERT_EQ(idx.find(tensor_id{j}), j) << k; }
      }
    }
    idx.insert(tensor_id{k}, static_cast<std::uint32_t>(k));
  }
  EXPECT_GT(failures, 10);
  for (std::uint64_t j = 1; j <= 20'000; ++j) { ASSERT_EQ(idx.find(tensor_id{j}), j); }
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

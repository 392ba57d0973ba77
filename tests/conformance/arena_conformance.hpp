// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file arena_conformance.hpp
 * @brief The arena conformance suite: one typed test suite of tierpool::arena behaviour
 *        through its public API (include/tierpool/arena.hpp), that every arena
 *        configuration (granularity, second-level bins, bin scan limit) passes.
 *
 * A configuration type C provides the options and a name:
 * @code
 * struct my_config {
 *   static tierpool::arena_options options() { return {.min_alignment = 512}; }
 *   static char const* name() { return "g512"; }
 * };
 * namespace tierpool::conformance {  // the suite lives there
 * INSTANTIATE_TYPED_TEST_SUITE_P(Mine, ArenaConformance, ::testing::Types<my_config>);
 * }
 * @endcode
 *
 * Sizes in the tests are multiples of the configuration's granularity g, so each test
 * means the same on every configuration. What is checked: alignment (within the region,
 * for every power of two up to a large one), no two live blocks overlapping (against a
 * model of live ranges, and by their bytes: every live block of an arena over real memory
 * holds a pattern of its own, which a block handed out over it would overwrite),
 * free and coalescing (left, right, both, never across regions), the fragmentation
 * figures against blocks(), exhaustion (an empty optional, never an exception; misuse is
 * a typed tierpool::logic_error), double free and foreign handles, reset, and validate()
 * after every step of seeded random runs.
 */
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include <tierpool/arena.hpp>
#include <tierpool/error.hpp>

namespace tierpool::conformance {

/// The suite's fixture: the configuration's options and granularity.
template <class C>
class ArenaConformance : public ::testing::Test {
 protected:
  [[nodiscard]] static arena_options opts() { return C::options(); }
  [[nodiscard]] static std::uint64_t g() { return C::options().min_alignment; }
};

TYPED_TEST_SUITE_P(ArenaConformance);

/// Reference model: live ranges by offset; checks bounds, alignment and overlap.
struct arena_model {
  std::map<std::uint64_t, std::uint64_t> live;  // offset -> end

  void insert(arena const& a, arena::allocation const& x, std::uint64_t bytes, std::uint64_t align)
  {
    ASSERT_GE(x.size, bytes);
    ASSERT_LT(x.region, a.region_count());
    std::uint64_t const base = a.region_base(x.region);
    ASSERT_GE(x.offset, base);
    ASSERT_LE(x.offset + x.size, base + a.region_capacity(x.region)) << "allocation leaves its region";
    ASSERT_EQ((x.offset - base) % align, 0U) << "misaligned within region";
    ASSERT_EQ(x.offset % a.options().min_alignment, 0U);
    auto next = live.lower_bound(x.offset);
    if (next != live.end()) { ASSERT_LE(x.offset + x.size, next->first) << "overlaps the next live range"; }
    if (next != live.begin()) { ASSERT_LE(std::prev(next)->second, x.offset) << "overlaps the previous live range"; }
    live.emplace(x.offset, x.offset + x.size);
  }
};

inline void random_run(arena& a, std::uint64_t seed, int steps, std::uint64_t max_bytes, bool validate_each)
{
  std::mt19937_64 rng(seed);
  arena_model m;
  std::vector<arena::allocation> held;
  std::uint64_t const g = a.options().min_alignment;
  std::uint64_t expect_used = 0;
  for (int i = 0; i < steps; ++i) {
    bool const do_alloc = held.empty() || rng() % 100 < 55;
    if (do_alloc) {
      std::uint64_t const bytes = 1 + rng() % max_bytes;
      std::uint64_t align = 0;
      if (rng() % 8 == 0) { align = g << (rng() % 4); }  // sometimes above the granularity
      auto x = a.allocate(bytes, align);
      if (x) {
        m.insert(a, *x, bytes, align == 0 ? g : align);
        if (::testing::Test::HasFatalFailure()) { return; }
        held.push_back(*x);
        expect_used += x->size;
      }
    } else {
      std::size_t const k = rng() % held.size();
      arena::allocation const x = held[k];
      held[k] = held.back();
      held.pop_back();
      a.deallocate(x);
      m.live.erase(x.offset);
      expect_used -= x.size;
    }
    ASSERT_EQ(a.used_bytes(), expect_used);
    ASSERT_EQ(a.allocation_count(), held.size());
    if (validate_each) { ASSERT_TRUE(a.validate()) << "step " << i; }
  }
  ASSERT_TRUE(a.validate());
  for (auto const& x : held) { a.deallocate(x); }
  ASSERT_TRUE(a.validate());
  ASSERT_EQ(a.used_bytes(), 0U);
  ASSERT_EQ(a.allocation_count(), 0U);
  ASSERT_EQ(a.free_block_count(), a.region_count()) << "each region must be one free block again";
  std::uint64_t largest = 0;
  for (std::uint32_t r = 0; r < a.region_count(); ++r) { largest = std::max(largest, a.region_capacity(r)); }
  ASSERT_EQ(a.largest_free_block(), largest);
  if (a.region_count() == 1) { ASSERT_DOUBLE_EQ(a.external_fragmentation(), 0.0); }
}

TYPED_TEST_P(ArenaConformance, RandomizedSmallRunValidatesEveryStep)
{
  arena a(64 * this->g(), this->opts());
  random_run(a, 1, 3000, 6 * this->g(), true);
}

TYPED_TEST_P(ArenaConformance, RandomizedRunManyRegions)
{
  arena a(100 * this->g(), this->opts());
  a.add_region(37 * this->g() + 5);  // rounded down to 37 granules
  a.add_region(256 * this->g());
  a.add_region(this->g());
  ASSERT_EQ(a.region_count(), 4U);
  EXPECT_EQ(a.region_capacity(1), 37 * this->g());
  EXPECT_EQ(a.region_base(2), 137 * this->g());
  random_run(a, 2, 4000, 20 * this->g(), true);
}

TYPED_TEST_P(ArenaConformance, RandomizedLongRun)
{
  arena a(4096 * this->g(), this->opts());
  random_run(a, 3, 100'000, 64 * this->g(), false);
}

TYPED_TEST_P(ArenaConformance, OneByteAndExactlyTheGranularity)
{
  arena a(16 * this->g(), this->opts());
  auto one = a.allocate(1);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->size, this->g());
  auto gran = a.allocate(this->g());
  ASSERT_TRUE(gran);
  EXPECT_EQ(gran->size, this->g());
  EXPECT_NE(one->offset, gran->offset);
  EXPECT_EQ(a.used_bytes(), 2 * this->g());
  EXPECT_TRUE(a.validate());
}

TYPED_TEST_P(ArenaConformance, WholeCapacityThenCapacityPlusOne)
{
  arena a(32 * this->g(), this->opts());
  EXPECT_FALSE(a.allocate(32 * this->g() + 1)) << "capacity + 1 must fail cleanly";
  EXPECT_TRUE(a.validate());
  auto all = a.allocate(32 * this->g());
  ASSERT_TRUE(all);
  EXPECT_EQ(all->offset, 0U);
  EXPECT_EQ(a.free_bytes(), 0U);
  EXPECT_EQ(a.largest_free_block(), 0U);
  EXPECT_DOUBLE_EQ(a.external_fragmentation(), 0.0);
  EXPECT_FALSE(a.allocate(1));
  a.deallocate(*all);
  EXPECT_EQ(a.largest_free_block(), 32 * this->g());
  EXPECT_TRUE(a.validate());
}

TYPED_TEST_P(ArenaConformance, MisuseThrowsLogicError)
{
  arena a(16 * this->g(), this->opts());
  EXPECT_THROW((void)a.allocate(0), tierpool::logic_error);
  try {
    (void)a.allocate(0);
  } catch (tierpool::logic_error const& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("bytes must be > 0"));
  }
  try {
    (void)a.allocate(64, 3 * this->g());
    ADD_FAILURE() << "non-power-of-two alignment accepted";
  } catch (tierpool::logic_error const& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("is not a power of two"));
  }
  EXPECT_EQ(a.allocation_count(), 0U);
  EXPECT_TRUE(a.validate());
}

TYPED_TEST_P(ArenaConformance, DoubleFreeIsDetectedAndLeavesArenaIntact)
{
  arena a(16 * this->g(), this->opts());
  auto x = a.allocate(this->g());
  auto y = a.allocate(3 * this->g());
  ASSERT_TRUE(x && y);
  a.deallocate(*x);
  auto const before = a.statistics();
  try {
    a.deallocate(*x);
    ADD_FAILURE() << "double free not detected";
  } catch (tierpool::logic_error const& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("not a live allocation"));
  }
  EXPECT_FALSE(a.try_deallocate(*x));
  auto const after = a.statistics();
  EXPECT_EQ(after.used_bytes, before.used_bytes);
  EXPECT_EQ(after.free_block_count, before.free_block_count);
  EXPECT_EQ(after.allocation_count, 1U);
  EXPECT_TRUE(a.validate());
  // The node of x is reused by a new allocation: the stale handle still fails (generation).
  auto z = a.allocate(this->g());
  ASSERT_TRUE(z);
  EXPECT_FALSE(a.owns(*x));
  EXPECT_THROW(a.deallocate(*x), tierpool::logic_error);
  EXPECT_TRUE(a.owns(*z));
  a.deallocate(*z);
  a.deallocate(*y);
  EXPECT_TRUE(a.validate());
  EXPECT_EQ(a.free_block_count(), 1U);
}

TYPED_TEST_P(ArenaConformance, ForeignAndDefaultHandlesAreRejected)
{
  arena a(16 * this->g(), this->opts());
  arena b(16 * this->g(), this->opts());
  auto xa = a.allocate(this->g());
  auto xb = b.allocate(this->g());
  ASSERT_TRUE(xa && xb);
  EXPECT_EQ(xa->offset, xb->offset);  // same shape, different owners
  EXPECT_THROW(b.deallocate(*xa), tierpool::logic_error);
  EXPECT_THROW(a.deallocate(arena::allocation{}), tierpool::logic_error);
  EXPECT_EQ(b.allocation_count(), 1U);
  EXPECT_TRUE(a.validate() && b.validate());
}

TYPED_TEST_P(ArenaConformance, CoalescesLeftRightAndBoth)
{
  arena a(4 * this->g(), this->opts());
  std::vector<arena::allocation> x;
  for (int i = 0; i < 4; ++i) {
    auto r = a.allocate(this->g());
    ASSERT_TRUE(r);
    x.push_back(*r);
  }
  EXPECT_EQ(a.free_block_count(), 0U);
  a.deallocate(x[0]);
  a.deallocate(x[1]);  // merges with its left neighbour
  EXPECT_EQ(a.free_block_count(), 1U);
  EXPECT_EQ(a.largest_free_block(), 2 * this->g());
  a.deallocate(x[3]);
  EXPECT_EQ(a.free_block_count(), 2U);
  a.deallocate(x[2]);  // merges both sides
  EXPECT_EQ(a.free_block_count(), 1U);
  EXPECT_EQ(a.largest_free_block(), 4 * this->g());
  EXPECT_TRUE(a.validate());

  // Right neighbour only.
  for (int i = 0; i < 4; ++i) { x[static_cast<std::size_t>(i)] = *a.allocate(this->g()); }
  a.deallocate(x[3]);
  a.deallocate(x[2]);
  EXPECT_EQ(a.free_block_count(), 1U);
  EXPECT_EQ(a.largest_free_block(), 2 * this->g());
  EXPECT_TRUE(a.validate());
}

TYPED_TEST_P(ArenaConformance, CoalescingNeverCrossesRegions)
{
  arena a(2 * this->g(), this->opts());
  a.add_region(2 * this->g());
  auto x = a.allocate(2 * this->g());
  auto y = a.allocate(2 * this->g());
  ASSERT_TRUE(x && y);
  EXPECT_NE(x->region, y->region);
  EXPECT_FALSE(a.allocate(1));
  a.deallocate(*x);
  a.deallocate(*y);
  EXPECT_EQ(a.free_block_count(), 2U);
  EXPECT_EQ(a.largest_free_block(), 2 * this->g());
  EXPECT_FALSE(a.allocate(3 * this->g())) << "a block spanning two regions was handed out";
  EXPECT_DOUBLE_EQ(a.external_fragmentation(), 0.5);
  EXPECT_TRUE(a.validate());
}

TYPED_TEST_P(ArenaConformance, FragmentationOfEveryOtherBlockFreed)
{
  arena a(8 * 4 * this->g(), this->opts());
  std::vector<arena::allocation> x;
  for (int i = 0; i < 8; ++i) { x.push_back(*a.allocate(4 * this->g())); }
  for (std::size_t i = 0; i < 8; i += 2) { a.deallocate(x[i]); }
  auto const s = a.statistics();
  EXPECT_EQ(s.free_bytes, 16 * this->g());
  EXPECT_EQ(s.largest_free_block, 4 * this->g());
  EXPECT_EQ(s.free_block_count, 4U);
  EXPECT_DOUBLE_EQ(s.external_fragmentation, 0.75);
  EXPECT_FALSE(a.allocate(4 * this->g() + 1));
  EXPECT_TRUE(a.validate());
}

TYPED_TEST_P(ArenaConformance, AlignmentAboveGranularityIsRelativeToTheRegion)
{
  arena a(3 * this->g(), this->opts());     // region 1 then starts at 3 granules: not 4-granule aligned
  a.add_region(64 * this->g());
  auto fill = a.allocate(3 * this->g());
  ASSERT_TRUE(fill);
  auto pad = a.allocate(this->g());   // region 1, local offset 0
  ASSERT_TRUE(pad);
  auto x = a.allocate(this->g(), 8 * this->g());
  ASSERT_TRUE(x);
  EXPECT_EQ(x->region, 1U);
  EXPECT_EQ((x->offset - a.region_base(1)) % (8 * this->g()), 0U);
  EXPECT_EQ(x->offset - a.region_base(1), 8 * this->g());
  EXPECT_TRUE(a.validate());
  auto y = a.allocate(this->g());  // the padding in front of x stayed free and is used now
  ASSERT_TRUE(y);
  EXPECT_LT(y->offset, x->offset);
  EXPECT_TRUE(a.validate());
}

TYPED_TEST_P(ArenaConformance, ResetFreesEverythingAndStalesHandles)
{
  arena a(16 * this->g(), this->opts());
  a.add_region(8 * this->g());
  auto x = a.allocate(5 * this->g());
  auto y = a.allocate(8 * this->g());
  ASSERT_TRUE(x && y);
  a.reset();
  EXPECT_EQ(a.used_bytes(), 0U);
  EXPECT_EQ(a.free_block_count(), 2U);
  EXPECT_EQ(a.largest_free_block(), 16 * this->g());
  EXPECT_FALSE(a.owns(*x));
  EXPECT_THROW(a.deallocate(*y), tierpool::logic_error);
  EXPECT_TRUE(a.validate());
  random_run(a, 4, 500, 4 * this->g(), true);
}


/// An arena's global offset space backed by real bytes: every live block holds a pattern
/// of its own tag, so a block handed out over a live one overwrites it and intact() finds it.
class patterned_blocks {
 public:
  explicit patterned_blocks(arena const& a)
  {
    std::uint64_t end = 0;
    for (std::uint32_t r = 0; r < a.region_count(); ++r) { end = std::max(end, a.region_base(r) + a.region_capacity(r)); }
    mem_.assign(end, 0);
  }
  void stamp(arena::allocation const& x, std::uint32_t tag)
  {
    for (std::uint64_t i = 0; i < x.size; ++i) { mem_[x.offset + i] = byte(tag, i); }
  }
  [[nodiscard]] bool intact(arena::allocation const& x, std::uint32_t tag) const
  {
    for (std::uint64_t i = 0; i < x.size; ++i) {
      if (mem_[x.offset + i] != byte(tag, i)) { return false; }
    }
    return true;
  }

 private:
  static std::uint8_t byte(std::uint32_t tag, std::uint64_t i) noexcept
  {
    return static_cast<std::uint8_t>((tag * 151U + i * 13U + (i >> 7U)) & 0xFFU);
  }
  std::vector<std::uint8_t> mem_;
};

/// blocks() agrees with every figure of the arena: the blocks tile each region in offset
/// order, no two free blocks are neighbours (coalesced), and the sums, counts, largest free
/// block and external fragmentation are those of the blocks.
inline void expect_figures_match_blocks(arena const& a)
{
  std::vector<arena::block_info> const bs = a.blocks();
  std::uint64_t free_sum = 0;
  std::uint64_t used_sum = 0;
  std::uint64_t free_count = 0;
  std::uint64_t used_count = 0;
  std::uint64_t largest = 0;
  std::size_t k = 0;
  for (std::uint32_t r = 0; r < a.region_count(); ++r) {
    std::uint64_t at = a.region_base(r);
    bool prev_free = false;
    bool first = true;
    while (k < bs.size() && bs[k].region == r) {
      arena::block_info const& b = bs[k];
      ASSERT_EQ(b.offset, at) << "region " << r << ": the blocks do not tile it";
      ASSERT_GT(b.size, 0U);
      ASSERT_EQ(b.size % a.options().min_alignment, 0U);
      if (b.free) {
        EXPECT_FALSE(!first && prev_free) << "two neighbouring free blocks at " << b.offset << ": not coalesced";
        free_sum += b.size;
        ++free_count;
        largest = std::max(largest, b.size);
      } else {
        used_sum += b.size;
        ++used_count;
      }
      prev_free = b.free;
      first = false;
      at += b.size;
      ++k;
    }
    ASSERT_EQ(at, a.region_base(r) + a.region_capacity(r)) << "region " << r << " is not covered to its end";
  }
  ASSERT_EQ(k, bs.size()) << "blocks outside every region";
  arena_statistics const s = a.statistics();
  EXPECT_EQ(s.capacity, a.capacity());
  EXPECT_EQ(s.used_bytes, used_sum);
  EXPECT_EQ(s.free_bytes, free_sum);
  EXPECT_EQ(s.used_bytes + s.free_bytes, s.capacity);
  EXPECT_EQ(s.allocation_count, used_count);
  EXPECT_EQ(s.free_block_count, free_count);
  EXPECT_EQ(s.largest_free_block, largest);
  EXPECT_EQ(s.region_count, a.region_count());
  EXPECT_EQ(a.used_bytes(), s.used_bytes);
  EXPECT_EQ(a.free_bytes(), s.free_bytes);
  EXPECT_EQ(a.largest_free_block(), s.largest_free_block);
  double const frag = free_sum == 0 ? 0.0 : 1.0 - static_cast<double>(largest) / static_cast<double>(free_sum);
  EXPECT_DOUBLE_EQ(s.external_fragmentation, frag);
  EXPECT_DOUBLE_EQ(a.external_fragmentation(), frag);
}

// Live blocks never share a byte: a seeded run over three regions stamps every block it
// gets and checks each one before freeing it and every live one periodically.
TYPED_TEST_P(ArenaConformance, LiveBlocksNeverShareABytePatternsSurvive)
{
  std::uint64_t const g = this->g();
  arena a(128 * g, this->opts());
  a.add_region(61 * g);
  a.add_region(2 * g);
  patterned_blocks mem(a);
  struct live {
    arena::allocation x;
    std::uint32_t tag;
  };
  std::vector<live> held;
  std::mt19937_64 rng(77);
  std::uint32_t next_tag = 1;
  auto check_all = [&](int step) {
    for (live const& l : held) { ASSERT_TRUE(mem.intact(l.x, l.tag)) << "block " << l.tag << " overwritten by step " << step; }
  };
  for (int step = 0; step < 3000; ++step) {
    if (held.empty() || rng() % 100 < 55) {
      std::uint64_t const bytes = 1 + rng() % (12 * g);
      std::uint64_t const align = rng() % 6 == 0 ? g << (rng() % 3) : 0;
      std::optional<arena::allocation> x = a.allocate(bytes, align);
      if (!x) { continue; }
      ASSERT_GE(x->size, bytes);
      ASSERT_EQ((x->offset - a.region_base(x->region)) % (align == 0 ? g : align), 0U);
      mem.stamp(*x, next_tag);
      held.push_back({*x, next_tag++});
    } else {
      std::size_t const k = rng() % held.size();
      ASSERT_TRUE(mem.intact(held[k].x, held[k].tag)) << "block " << held[k].tag << " overwritten before its free";
      a.deallocate(held[k].x);
      held[k] = held.back();
      held.pop_back();
    }
    if (step % 64 == 0) {
      check_all(step);
      ASSERT_TRUE(a.validate()) << "step " << step;
    }
  }
  check_all(3000);
  for (live const& l : held) { a.deallocate(l.x); }
  EXPECT_TRUE(a.validate());
  EXPECT_EQ(a.free_block_count(), a.region_count());
}

// Every power-of-two alignment from below the granularity up to 64 granules is met within
// the region, also in a region whose base is not aligned to it.
TYPED_TEST_P(ArenaConformance, EveryAlignmentIsMetWithinTheRegion)
{
  std::uint64_t const g = this->g();
  arena a(3 * g, this->opts());  // region 1 starts at 3 granules
  a.add_region(1024 * g);
  auto first = a.allocate(3 * g);  // region 0 full: the rest go to region 1
  ASSERT_TRUE(first);
  std::vector<arena::allocation> held;
  for (std::uint64_t align = 1; align <= 64 * g; align <<= 1U) {
    SCOPED_TRACE(align);
    for (std::uint64_t const bytes : {std::uint64_t{1}, g, 3 * g + 1}) {
      std::optional<arena::allocation> x = a.allocate(bytes, align);
      ASSERT_TRUE(x) << bytes;
      EXPECT_EQ(x->region, 1U);
      EXPECT_EQ((x->offset - a.region_base(x->region)) % std::max(align, g), 0U) << bytes;
      EXPECT_EQ(x->offset % g, 0U) << "the global offset keeps the granularity";
      EXPECT_EQ(x->size % g, 0U);
      EXPECT_GE(x->size, bytes);
      held.push_back(*x);
    }
    ASSERT_TRUE(a.validate());
  }
  expect_figures_match_blocks(a);
  for (auto const& x : held) { a.deallocate(x); }
  a.deallocate(*first);
  EXPECT_TRUE(a.validate());
  EXPECT_EQ(a.free_block_count(), 2U);
  EXPECT_EQ(a.used_bytes(), 0U);
}

// Running out is an empty optional, never an exception, at every size; the arena is whole
// afterwards, a fragmented arena refuses what no single block holds, and a new region
// takes what the old ones could not.
TYPED_TEST_P(ArenaConformance, ExhaustionIsAnEmptyOptionalNotAnError)
{
  std::uint64_t const g = this->g();
  arena a(64 * g, this->opts());
  std::vector<arena::allocation> held;
  for (int i = 0; i < 1000; ++i) {
    std::optional<arena::allocation> x;
    EXPECT_NO_THROW(x = a.allocate(g));
    if (!x) { break; }
    held.push_back(*x);
  }
  ASSERT_EQ(held.size(), 64U);
  EXPECT_EQ(a.used_bytes(), a.capacity());
  EXPECT_EQ(a.free_bytes(), 0U);
  EXPECT_EQ(a.largest_free_block(), 0U);
  EXPECT_DOUBLE_EQ(a.external_fragmentation(), 0.0);
  EXPECT_FALSE(a.allocate(1));
  EXPECT_FALSE(a.allocate(g, 4 * g));
  EXPECT_FALSE(a.allocate(1ULL << 40U)) << "far beyond the capacity";
  EXPECT_TRUE(a.validate());
  expect_figures_match_blocks(a);
  for (std::size_t i = 0; i < held.size(); i += 2) { a.deallocate(held[i]); }  // every other granule
  EXPECT_EQ(a.free_bytes(), 32 * g);
  EXPECT_EQ(a.largest_free_block(), g);
  EXPECT_DOUBLE_EQ(a.external_fragmentation(), 1.0 - 1.0 / 32.0);
  EXPECT_FALSE(a.allocate(g + 1)) << "no single free block holds two granules";
  expect_figures_match_blocks(a);
  std::uint32_t const r = a.add_region(8 * g);
  std::optional<arena::allocation> big = a.allocate(8 * g);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->region, r);
  EXPECT_TRUE(a.validate());
  a.deallocate(*big);
  for (std::size_t i = 1; i < held.size(); i += 2) { a.deallocate(held[i]); }
  EXPECT_EQ(a.free_block_count(), 2U);
  EXPECT_DOUBLE_EQ(a.external_fragmentation(), 1.0 - 64.0 / 72.0);
  expect_figures_match_blocks(a);
  EXPECT_TRUE(a.validate());
}

// The figures (used, free, counts, largest free block, fragmentation) are those of
// blocks() at every checkpoint of a seeded run with frees in random order.
TYPED_TEST_P(ArenaConformance, FiguresAgreeWithTheBlocksThroughARun)
{
  std::uint64_t const g = this->g();
  arena a(256 * g, this->opts());
  a.add_region(40 * g);
  std::mt19937_64 rng(5);
  std::vector<arena::allocation> held;
  expect_figures_match_blocks(a);
  for (int step = 0; step < 2000; ++step) {
    if (held.empty() || rng() % 100 < 60) {
      if (auto x = a.allocate(1 + rng() % (10 * g))) { held.push_back(*x); }
    } else {
      std::size_t const k = rng() % held.size();
      a.deallocate(held[k]);
      held[k] = held.back();
      held.pop_back();
    }
    if (step % 50 == 0) {
      expect_figures_match_blocks(a);
      if (::testing::Test::HasFatalFailure()) { return; }
      std::vector<arena::block_info> const bs = a.blocks();
      for (arena::allocation const& x : held) {
        EXPECT_TRUE(a.owns(x));
        auto const it = std::find_if(bs.begin(), bs.end(), [&](arena::block_info const& b) { return b.offset == x.offset; });
        ASSERT_NE(it, bs.end());
        EXPECT_FALSE(it->free);
        EXPECT_EQ(it->size, x.size);
        EXPECT_EQ(it->region, x.region);
      }
    }
  }
  for (auto const& x : held) { a.deallocate(x); }
  expect_figures_match_blocks(a);
  EXPECT_EQ(a.free_block_count(), 2U);
  EXPECT_TRUE(a.validate());
}

REGISTER_TYPED_TEST_SUITE_P(ArenaConformance, RandomizedSmallRunValidatesEveryStep, RandomizedRunManyRegions,
                            RandomizedLongRun, OneByteAndExactlyTheGranularity, WholeCapacityThenCapacityPlusOne,
                            MisuseThrowsLogicError, DoubleFreeIsDetectedAndLeavesArenaIntact,
                            ForeignAndDefaultHandlesAreRejected, CoalescesLeftRightAndBoth,
                            CoalescingNeverCrossesRegions, FragmentationOfEveryOtherBlockFreed,
                            AlignmentAboveGranularityIsRelativeToTheRegion, ResetFreesEverythingAndStalesHandles,
                            LiveBlocksNeverShareABytePatternsSurvive, EveryAlignmentIsMetWithinTheRegion,
                            ExhaustionIsAnEmptyOptionalNotAnError, FiguresAgreeWithTheBlocksThroughARun);

}  // namespace tierpool::conformance

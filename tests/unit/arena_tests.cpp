// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// arena_tests.cpp — tierpool::arena: a conformance suite run over several size-class
// configurations (randomized runs against a reference model of live ranges, validate()
// after every step), and the shared edge cases (1 B, granularity, whole capacity,
// capacity + 1, zero bytes, bad alignment, double free, foreign handles, coalescing,
// regions, fragmentation figures).
#include <tierpool/arena.hpp>
#include <tierpool/error.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using tierpool::arena;
using tierpool::arena_options;
using ::testing::HasSubstr;

struct config {
  char const* name;
  arena_options opts;
};

std::vector<config> configs()
{
  return {
    {"default", arena_options{}},
    {"g256_sl5_scan4", arena_options{256, 5, 4}},
    {"g256_sl6_fullscan", arena_options{256, 6, 0}},
    {"g8_sl2_scan1", arena_options{8, 2, 1}},
    {"g4096_sl4_scan4", arena_options{4096, 4, 4}},
  };
}

class ArenaConformance : public ::testing::TestWithParam<config> {
 protected:
  [[nodiscard]] arena_options opts() const { return GetParam().opts; }
  [[nodiscard]] std::uint64_t g() const { return GetParam().opts.min_alignment; }
};

// Reference model: live ranges by offset; checks bounds, alignment and overlap.
struct model {
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

void random_run(arena& a, std::uint64_t seed, int steps, std::uint64_t max_bytes, bool validate_each)
{
  std::mt19937_64 rng(seed);
  model m;
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

TEST_P(ArenaConformance, RandomizedSmallRunValidatesEveryStep)
{
  arena a(64 * g(), opts());
  random_run(a, 1, 3000, 6 * g(), true);
}

TEST_P(ArenaConformance, RandomizedRunManyRegions)
{
  arena a(100 * g(), opts());
  a.add_region(37 * g() + 5);  // rounded down to 37 granules
  a.add_region(256 * g());
  a.add_region(g());
  ASSERT_EQ(a.region_count(), 4U);
  EXPECT_EQ(a.region_capacity(1), 37 * g());
  EXPECT_EQ(a.region_base(2), 137 * g());
  random_run(a, 2, 4000, 20 * g(), true);
}

TEST_P(ArenaConformance, RandomizedLongRun)
{
  arena a(4096 * g(), opts());
  random_run(a, 3, 100'000, 64 * g(), false);
}

TEST_P(ArenaConformance, OneByteAndExactlyTheGranularity)
{
  arena a(16 * g(), opts());
  auto one = a.allocate(1);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->size, g());
  auto gran = a.allocate(g());
  ASSERT_TRUE(gran);
  EXPECT_EQ(gran->size, g());
  EXPECT_NE(one->offset, gran->offset);
  EXPECT_EQ(a.used_bytes(), 2 * g());
  EXPECT_TRUE(a.validate());
}

TEST_P(ArenaConformance, WholeCapacityThenCapacityPlusOne)
{
  arena a(32 * g(), opts());
  EXPECT_FALSE(a.allocate(32 * g() + 1)) << "capacity + 1 must fail cleanly";
  EXPECT_TRUE(a.validate());
  auto all = a.allocate(32 * g());
  ASSERT_TRUE(all);
  EXPECT_EQ(all->offset, 0U);
  EXPECT_EQ(a.free_bytes(), 0U);
  EXPECT_EQ(a.largest_free_block(), 0U);
  EXPECT_DOUBLE_EQ(a.external_fragmentation(), 0.0);
  EXPECT_FALSE(a.allocate(1));
  a.deallocate(*all);
  EXPECT_EQ(a.largest_free_block(), 32 * g());
  EXPECT_TRUE(a.validate());
}

TEST_P(ArenaConformance, MisuseThrowsLogicError)
{
  arena a(16 * g(), opts());
  EXPECT_THROW((void)a.allocate(0), tierpool::logic_error);
  try {
    (void)a.allocate(0);
  } catch (tierpool::logic_error const& e) {
    EXPECT_THAT(e.what(), HasSubstr("bytes must be > 0"));
  }
  try {
    (void)a.allocate(64, 3 * g());
    ADD_FAILURE() << "non-power-of-two alignment accepted";
  } catch (tierpool::logic_error const& e) {
    EXPECT_THAT(e.what(), HasSubstr("is not a power of two"));
  }
  EXPECT_EQ(a.allocation_count(), 0U);
  EXPECT_TRUE(a.validate());
}

TEST_P(ArenaConformance, DoubleFreeIsDetectedAndLeavesArenaIntact)
{
  arena a(16 * g(), opts());
  auto x = a.allocate(g());
  auto y = a.allocate(3 * g());
  ASSERT_TRUE(x && y);
  a.deallocate(*x);
  auto const before = a.statistics();
  try {
    a.deallocate(*x);
    ADD_FAILURE() << "double free not detected";
  } catch (tierpool::logic_error const& e) {
    EXPECT_THAT(e.what(), HasSubstr("not a live allocation"));
  }
  EXPECT_FALSE(a.try_deallocate(*x));
  auto const after = a.statistics();
  EXPECT_EQ(after.used_bytes, before.used_bytes);
  EXPECT_EQ(after.free_block_count, before.free_block_count);
  EXPECT_EQ(after.allocation_count, 1U);
  EXPECT_TRUE(a.validate());
  // The node of x is reused by a new allocation: the stale handle still fails (generation).
  auto z = a.allocate(g());
  ASSERT_TRUE(z);
  EXPECT_FALSE(a.owns(*x));
  EXPECT_THROW(a.deallocate(*x), tierpool::logic_error);
  EXPECT_TRUE(a.owns(*z));
  a.deallocate(*z);
  a.deallocate(*y);
  EXPECT_TRUE(a.validate());
  EXPECT_EQ(a.free_block_count(), 1U);
}

TEST_P(ArenaConformance, ForeignAndDefaultHandlesAreRejected)
{
  arena a(16 * g(), opts());
  arena b(16 * g(), opts());
  auto xa = a.allocate(g());
  auto xb = b.allocate(g());
  ASSERT_TRUE(xa && xb);
  EXPECT_EQ(xa->offset, xb->offset);  // same shape, different owners
  EXPECT_THROW(b.deallocate(*xa), tierpool::logic_error);
  EXPECT_THROW(a.deallocate(arena::allocation{}), tierpool::logic_error);
  EXPECT_EQ(b.allocation_count(), 1U);
  EXPECT_TRUE(a.validate() && b.validate());
}

TEST_P(ArenaConformance, CoalescesLeftRightAndBoth)
{
  arena a(4 * g(), opts());
  std::vector<arena::allocation> x;
  for (int i = 0; i < 4; ++i) {
    auto r = a.allocate(g());
    ASSERT_TRUE(r);
    x.push_back(*r);
  }
  EXPECT_EQ(a.free_block_count(), 0U);
  a.deallocate(x[0]);
  a.deallocate(x[1]);  // merges with its left neighbour
  EXPECT_EQ(a.free_block_count(), 1U);
  EXPECT_EQ(a.largest_free_block(), 2 * g());
  a.deallocate(x[3]);
  EXPECT_EQ(a.free_block_count(), 2U);
  a.deallocate(x[2]);  // merges both sides
  EXPECT_EQ(a.free_block_count(), 1U);
  EXPECT_EQ(a.largest_free_block(), 4 * g());
  EXPECT_TRUE(a.validate());

  // Right neighbour only.
  for (int i = 0; i < 4; ++i) { x[static_cast<std::size_t>(i)] = *a.allocate(g()); }
  a.deallocate(x[3]);
  a.deallocate(x[2]);
  EXPECT_EQ(a.free_block_count(), 1U);
  EXPECT_EQ(a.largest_free_block(), 2 * g());
  EXPECT_TRUE(a.validate());
}

TEST_P(ArenaConformance, CoalescingNeverCrossesRegions)
{
  arena a(2 * g(), opts());
  a.add_region(2 * g());
  auto x = a.allocate(2 * g());
  auto y = a.allocate(2 * g());
  ASSERT_TRUE(x && y);
  EXPECT_NE(x->region, y->region);
  EXPECT_FALSE(a.allocate(1));
  a.deallocate(*x);
  a.deallocate(*y);
  EXPECT_EQ(a.free_block_count(), 2U);
  EXPECT_EQ(a.largest_free_block(), 2 * g());
  EXPECT_FALSE(a.allocate(3 * g())) << "a block spanning two regions was handed out";
  EXPECT_DOUBLE_EQ(a.external_fragmentation(), 0.5);
  EXPECT_TRUE(a.validate());
}

TEST_P(ArenaConformance, FragmentationOfEveryOtherBlockFreed)
{
  arena a(8 * 4 * g(), opts());
  std::vector<arena::allocation> x;
  for (int i = 0; i < 8; ++i) { x.push_back(*a.allocate(4 * g())); }
  for (std::size_t i = 0; i < 8; i += 2) { a.deallocate(x[i]); }
  auto const s = a.statistics();
  EXPECT_EQ(s.free_bytes, 16 * g());
  EXPECT_EQ(s.largest_free_block, 4 * g());
  EXPECT_EQ(s.free_block_count, 4U);
  EXPECT_DOUBLE_EQ(s.external_fragmentation, 0.75);
  EXPECT_FALSE(a.allocate(4 * g() + 1));
  EXPECT_TRUE(a.validate());
}

TEST_P(ArenaConformance, AlignmentAboveGranularityIsRelativeToTheRegion)
{
  arena a(3 * g(), opts());     // region 1 then starts at 3 granules: not 4-granule aligned
  a.add_region(64 * g());
  auto fill = a.allocate(3 * g());
  ASSERT_TRUE(fill);
  auto pad = a.allocate(g());   // region 1, local offset 0
  ASSERT_TRUE(pad);
  auto x = a.allocate(g(), 8 * g());
  ASSERT_TRUE(x);
  EXPECT_EQ(x->region, 1U);
  EXPECT_EQ((x->offset - a.region_base(1)) % (8 * g()), 0U);
  EXPECT_EQ(x->offset - a.region_base(1), 8 * g());
  EXPECT_TRUE(a.validate());
  auto y = a.allocate(g());  // the padding in front of x stayed free and is used now
  ASSERT_TRUE(y);
  EXPECT_LT(y->offset, x->offset);
  EXPECT_TRUE(a.validate());
}

TEST_P(ArenaConformance, ResetFreesEverythingAndStalesHandles)
{
  arena a(16 * g(), opts());
  a.add_region(8 * g());
  auto x = a.allocate(5 * g());
  auto y = a.allocate(8 * g());
  ASSERT_TRUE(x && y);
  a.reset();
  EXPECT_EQ(a.used_bytes(), 0U);
  EXPECT_EQ(a.free_block_count(), 2U);
  EXPECT_EQ(a.largest_free_block(), 16 * g());
  EXPECT_FALSE(a.owns(*x));
  EXPECT_THROW(a.deallocate(*y), tierpool::logic_error);
  EXPECT_TRUE(a.validate());
  random_run(a, 4, 500, 4 * g(), true);
}

INSTANTIATE_TEST_SUITE_P(Configs, ArenaConformance, ::testing::ValuesIn(configs()),
                         [](::testing::TestParamInfo<config> const& p) { return std::string(p.param.name); });

// ---- configuration-independent tests -------------------------------------------------

TEST(Arena, InvalidOptionsAndRegionsThrow)
{
  EXPECT_THROW(arena(1024, arena_options{100, 5, 4}), tierpool::logic_error);
  EXPECT_THROW(arena(1024, arena_options{4, 5, 4}), tierpool::logic_error);
  EXPECT_THROW(arena(1024, arena_options{256, 7, 4}), tierpool::logic_error);
  EXPECT_THROW(arena(1024, arena_options{256, 1, 4}), tierpool::logic_error);
  EXPECT_THROW(arena(100), tierpool::logic_error);
  arena a(0);
  EXPECT_EQ(a.region_count(), 0U);
  EXPECT_FALSE(a.allocate(1));
  EXPECT_THROW(a.add_region(255), tierpool::logic_error);
  EXPECT_THROW((void)a.region_base(0), tierpool::logic_error);
  EXPECT_EQ(a.add_region(1000), 0U);
  EXPECT_EQ(a.capacity(), 768U);
  EXPECT_TRUE(a.validate());
}

TEST(Arena, GlobalOffsetSpaceOverflowIsRejected)
{
  arena a(std::uint64_t{1} << 63U);
  EXPECT_THROW(a.add_region(std::uint64_t{1} << 63U), tierpool::logic_error);
  auto x = a.allocate(std::uint64_t{1} << 62U);
  ASSERT_TRUE(x);
  EXPECT_TRUE(a.validate());
}

TEST(Arena, MoveTransfersStateAndEmptiesTheSource)
{
  arena a(1024 * 256);
  auto x = a.allocate(1000);
  ASSERT_TRUE(x);
  arena b(std::move(a));
  EXPECT_TRUE(b.owns(*x));
  EXPECT_EQ(b.allocation_count(), 1U);
  EXPECT_EQ(a.region_count(), 0U);  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_FALSE(a.owns(*x));
  EXPECT_TRUE(a.validate());
  b.deallocate(*x);
  EXPECT_TRUE(b.validate());
  arena c(256);
  c = std::move(b);
  EXPECT_EQ(c.capacity(), 1024U * 256U);
  EXPECT_TRUE(c.validate());
}

TEST(Arena, TightestFitIsPreferredOverTheNextBinHead)
{
  // Free blocks of 1.5 MiB and 1 MiB + 512 B; a request of 1 MiB + 256 B does not start a
  // bin, so plain good fit would skip the own bin and split the 1.5 MiB block.
  constexpr std::uint64_t kMiB = 1U << 20U;
  arena a(8 * kMiB);
  auto b1 = a.allocate(kMiB + kMiB / 2);
  auto sep1 = a.allocate(256);
  auto b2 = a.allocate(kMiB + 512);
  auto sep2 = a.allocate(256);
  ASSERT_TRUE(b1 && sep1 && b2 && sep2);
  a.deallocate(*b1);
  a.deallocate(*b2);
  auto x = a.allocate(kMiB + 256);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->offset, b2->offset);
  EXPECT_TRUE(a.validate());
}

TEST(Arena, DefaultsScanOneBlockPerBin)
{
  arena_options const o{};
  EXPECT_EQ(o.min_alignment, 256U);
  EXPECT_EQ(o.second_level_log2, 5U);
  EXPECT_EQ(o.bin_scan_limit, 1U);
}

// A hole of `hole` granules between used blocks of `left` and `right` granules, at
// granule `left`; everything else is allocated. Returns the arena and the handles.
struct hole_setup {
  arena a;
  std::vector<arena::allocation> held;  // left, right, rest
  arena::allocation hole;
};

hole_setup make_hole(std::uint64_t left, std::uint64_t hole, std::uint64_t right, arena_options o = {})
{
  std::uint64_t const g = o.min_alignment;
  hole_setup h{arena((left + hole + right + 8) * g, o), {}, {}};
  auto l = h.a.allocate(left * g);
  auto m = h.a.allocate(hole * g);
  auto r = h.a.allocate(right * g);
  auto rest = h.a.allocate(8 * g);
  EXPECT_TRUE(l && m && r && rest);
  EXPECT_EQ(m->offset, left * g);  // sequential fill: each block starts where the last ended
  EXPECT_EQ(rest->offset, (left + hole + right) * g);
  h.held = {*l, *r, *rest};
  h.hole = *m;
  h.a.deallocate(*m);
  EXPECT_EQ(h.a.largest_free_block(), hole * g);
  return h;
}

TEST(Arena, AllocationIsPlacedAgainstTheLargerNeighbour)
{
  constexpr std::uint64_t g = 256;
  {
    auto h = make_hole(1, 4, 3);  // right neighbour larger: take the high end
    auto x = h.a.allocate(g);
    ASSERT_TRUE(x);
    EXPECT_EQ(x->offset, 4 * g);
    EXPECT_EQ(h.a.largest_free_block(), 3 * g);
    EXPECT_TRUE(h.a.validate());
    auto y = h.a.allocate(3 * g);  // the remainder, still next to the left neighbour
    ASSERT_TRUE(y);
    EXPECT_EQ(y->offset, g);
    h.a.deallocate(*x);
    EXPECT_THROW(h.a.deallocate(*x), tierpool::logic_error) << "double free of a high-end block";
    h.a.deallocate(*y);
    EXPECT_EQ(h.a.largest_free_block(), 4 * g) << "high-end block did not coalesce";
    EXPECT_EQ(h.a.free_block_count(), 1U);
    EXPECT_TRUE(h.a.validate());
  }
  {
    auto h = make_hole(3, 4, 1);  // left neighbour larger: take the low end
    auto x = h.a.allocate(g);
    ASSERT_TRUE(x);
    EXPECT_EQ(x->offset, 3 * g);
    EXPECT_TRUE(h.a.validate());
  }
  {
    auto h = make_hole(2, 4, 2);  // tie: the low end
    auto x = h.a.allocate(g);
    ASSERT_TRUE(x);
    EXPECT_EQ(x->offset, 2 * g);
    EXPECT_TRUE(h.a.validate());
  }
}

TEST(Arena, PlacementAtRegionEdgesAndExactFits)
{
  constexpr std::uint64_t g = 256;
  arena a(16 * g);
  auto first = a.allocate(g);  // no neighbours at all: the low end
  ASSERT_TRUE(first);
  EXPECT_EQ(first->offset, 0U);
  auto second = a.allocate(2 * g);  // left neighbour only (the region end counts as 0)
  ASSERT_TRUE(second);
  EXPECT_EQ(second->offset, g);
  a.deallocate(*first);  // hole [0, 1): region start on the left, `second` on the right
  auto exact = a.allocate(g);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->offset, 0U);
  a.deallocate(*exact);
  a.deallocate(*second);
  auto r1 = a.allocate(13 * g);
  ASSERT_TRUE(r1);
  a.deallocate(*r1);
  auto tail = a.allocate(3 * g);
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->offset, 0U);
  EXPECT_TRUE(a.validate());
}

TEST(Arena, AlignedRequestsTakeTheLowestAlignedOffset)
{
  constexpr std::uint64_t g = 256;
  auto h = make_hole(1, 4, 3);  // the high end (4g) would also be 2g-aligned
  auto x = h.a.allocate(g, 2 * g);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->offset, 2 * g);
  EXPECT_EQ(h.a.free_block_count(), 2U);  // the padding [1g, 2g) and the tail [3g, 5g)
  EXPECT_TRUE(h.a.validate());
}

TEST(Arena, OwnBinHeadSizeFollowsRemovals)
{
  // Two free blocks in one bin; taking the head must make the other block's size the
  // bin's head size (the own-bin check reads it without touching the node).
  constexpr std::uint64_t kMiB = 1U << 20U;
  arena a(16 * kMiB);
  auto b1 = a.allocate(kMiB + 512);
  auto s1 = a.allocate(256);
  auto b2 = a.allocate(kMiB + 1024);
  auto s2 = a.allocate(256);
  ASSERT_TRUE(b1 && s1 && b2 && s2);
  a.deallocate(*b1);
  a.deallocate(*b2);  // head of the bin, then b1
  auto x = a.allocate(kMiB + 1024);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->offset, b2->offset);
  EXPECT_TRUE(a.validate());
  auto y = a.allocate(kMiB + 768);  // does not fit b1 (1 MiB + 512): a larger bin's block
  ASSERT_TRUE(y);
  EXPECT_NE(y->offset, b1->offset);
  auto z = a.allocate(kMiB + 512);  // b1, found as the own bin's head
  ASSERT_TRUE(z);
  EXPECT_EQ(z->offset, b1->offset);
  EXPECT_TRUE(a.validate());
}

}  // namespace

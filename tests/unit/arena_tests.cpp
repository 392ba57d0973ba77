// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// arena_tests.cpp — tierpool::arena: the arena conformance suite (conformance/arena_conformance.hpp:
// randomized runs against a reference model of live ranges and over patterned bytes,
// validate() after every step, alignment, exhaustion, coalescing, regions, fragmentation
// figures against blocks(), misuse) on each size-class configuration, and the tests of
// one configuration's placement choices (tightest fit, larger neighbour, bin scans).
#include "conformance/arena_conformance.hpp"

#include <tierpool/arena.hpp>
#include <tierpool/error.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using tierpool::arena;
using tierpool::arena_options;

template <std::uint64_t G, std::uint32_t SL, std::uint32_t Scan>
struct config {
  static arena_options options() { return arena_options{G, SL, Scan}; }
};

struct config_default {
  static arena_options options() { return arena_options{}; }
  static char const* name() { return "default"; }
};
struct g256_sl5_scan4 : config<256, 5, 4> {
  static char const* name() { return "g256_sl5_scan4"; }
};
struct g256_sl6_fullscan : config<256, 6, 0> {
  static char const* name() { return "g256_sl6_fullscan"; }
};
struct g8_sl2_scan1 : config<8, 2, 1> {
  static char const* name() { return "g8_sl2_scan1"; }
};
struct g4096_sl4_scan4 : config<4096, 4, 4> {
  static char const* name() { return "g4096_sl4_scan4"; }
};

struct config_names {
  template <class C>
  static std::string GetName(int /*index*/)
  {
    return C::name();
  }
};

using arena_configs = ::testing::Types<config_default, g256_sl5_scan4, g256_sl6_fullscan, g8_sl2_scan1, g4096_sl4_scan4>;

}  // namespace

namespace tierpool::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(Configs, ArenaConformance, arena_configs, config_names);
}  // namespace tierpool::conformance

namespace {

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

// allocate_at: exactly the range asked for, only when it lies inside one free block (the
// pool's compaction chooses where a copy goes: Note [Compaction]).
TEST(Arena, AllocateAtTakesExactlyAFreeRange)
{
  arena b(16 * 256);
  auto const r0 = b.allocate_at(4 * 256, 1000);  // rounded up to 4 granules
  ASSERT_TRUE(r0);
  EXPECT_EQ(r0->offset, 4U * 256);
  EXPECT_EQ(r0->size, 4U * 256);
  EXPECT_EQ(b.free_bytes(), 12U * 256);
  EXPECT_FALSE(b.allocate_at(6 * 256, 256)) << "inside a live block";
  EXPECT_FALSE(b.allocate_at(2 * 256, 4 * 256)) << "reaches into a live block";
  EXPECT_FALSE(b.allocate_at(100, 256)) << "not a multiple of the granule";
  EXPECT_FALSE(b.allocate_at(15 * 256, 2 * 256)) << "past the region's end";
  EXPECT_FALSE(b.allocate_at(0, 0));
  EXPECT_FALSE(b.allocate_at(16 * 256, 256)) << "past the arena";
  auto const r1 = b.allocate_at(0, 4 * 256);  // the whole free block before r0
  auto const r2 = b.allocate_at(15 * 256, 256);  // the last granule
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(b.allocation_count(), 3U);
  EXPECT_EQ(b.free_bytes(), 7U * 256);
  EXPECT_EQ(b.largest_free_block(), 7U * 256);
  EXPECT_TRUE(b.validate());
  b.deallocate(*r0);
  EXPECT_EQ(b.largest_free_block(), 11U * 256) << "freed, it coalesces as any allocation";
  EXPECT_TRUE(b.validate());
  // A second region: its ranges are its own.
  std::uint32_t const reg = b.add_region(4 * 256);
  auto const r3 = b.allocate_at(b.region_base(reg) + 256, 2 * 256);
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->region, reg);
  EXPECT_FALSE(b.allocate_at(b.region_base(reg) - 256, 2 * 256)) << "across two regions";
  EXPECT_TRUE(b.validate());
}

// split, merge_into and free_neighbours: the pieces a tier uses to hand several deferred
// blocks on as one (Note [Merging deferred blocks], tier.cpp).
TEST(Arena, SplitMakesTwoLiveAllocationsAndMergeIntoJoinsPartsAndFreeGaps)
{
  arena a(16 * 256);
  auto b0 = a.allocate(4 * 256);
  auto b1 = a.allocate(2 * 256);
  auto b2 = a.allocate(4 * 256);
  auto b3 = a.allocate(6 * 256);
  ASSERT_TRUE(b0 && b1 && b2 && b3);
  ASSERT_EQ(a.free_bytes(), 0U);
  // Offsets in order (the arena places against the larger neighbour: sort them).
  std::vector<arena::allocation> v{*b0, *b1, *b2, *b3};
  std::sort(v.begin(), v.end(), [](auto const& x, auto const& y) { return x.offset < y.offset; });
  a.deallocate(v[1]);  // a free gap between v[0] and v[2]
  auto const around = a.free_neighbours(v[0]);
  EXPECT_EQ(around.before, 0U) << "the region's start";
  EXPECT_EQ(around.after, v[1].size);
  EXPECT_EQ(a.free_neighbours(v[2]).before, v[1].size);
  EXPECT_EQ(a.free_neighbours(v[1]).before, 0U) << "not live: nothing";

  // Split v[3] in two live blocks; the old handle is stale.
  auto const [head, tail] = a.split(v[3], 2 * 256);
  EXPECT_EQ(head.offset, v[3].offset);
  EXPECT_EQ(head.size, 2U * 256);
  EXPECT_EQ(tail.offset, v[3].offset + 2 * 256);
  EXPECT_EQ(tail.size, 4U * 256);
  EXPECT_TRUE(a.owns(head));
  EXPECT_TRUE(a.owns(tail));
  EXPECT_FALSE(a.owns(v[3]));
  EXPECT_EQ(a.allocation_count(), 4U);
  EXPECT_TRUE(a.validate());
  EXPECT_THROW((void)a.split(head, 0), tierpool::logic_error);
  EXPECT_THROW((void)a.split(head, 2 * 256), tierpool::logic_error);
  EXPECT_THROW((void)a.split(head, 100), tierpool::logic_error) << "not a multiple of the granule";
  EXPECT_THROW((void)a.split(v[3], 256), tierpool::logic_error) << "stale";

  // merge_into: v[0], the gap, v[2] and the head of v[3] become one block; the range may
  // not leave a part uncovered, nor reach past the parts and their free neighbours.
  std::vector<arena::allocation> parts{v[0], v[2], head};
  std::uint64_t const start = v[0].offset;
  std::uint64_t const total = head.offset + head.size - start;
  EXPECT_THROW((void)a.merge_into(parts, start + 256, total - 256), tierpool::logic_error) << "v[0] uncovered";
  EXPECT_THROW((void)a.merge_into(parts, start, total + 256), tierpool::logic_error) << "into the tail";
  std::vector<arena::allocation> apart{v[0], head};
  EXPECT_THROW((void)a.merge_into(apart, start, total), tierpool::logic_error) << "v[2] lies between them";
  EXPECT_TRUE(a.validate());
  EXPECT_EQ(a.allocation_count(), 4U) << "failed merges change nothing";
  arena::allocation const m = a.merge_into(parts, start, total);
  EXPECT_EQ(m.offset, start);
  EXPECT_EQ(m.size, total);
  EXPECT_EQ(a.allocation_count(), 2U);  // m and the tail
  EXPECT_TRUE(a.owns(tail));
  EXPECT_FALSE(a.owns(v[0]));
  EXPECT_EQ(a.free_bytes(), 0U);
  EXPECT_TRUE(a.validate());

  // A range shorter than what the parts and their gaps span leaves the rest free.
  a.deallocate(m);
  auto x = a.allocate(4 * 256);
  auto y = a.allocate(4 * 256);
  ASSERT_TRUE(x && y);
  std::vector<arena::allocation> xy{*x, *y};
  std::sort(xy.begin(), xy.end(), [](auto const& p, auto const& q) { return p.offset < q.offset; });
  ASSERT_EQ(xy[0].offset + xy[0].size, xy[1].offset) << "adjacent";
  a.deallocate(tail);
  arena::allocation const n = a.merge_into(xy, xy[0].offset, xy[1].offset + xy[1].size - xy[0].offset);
  EXPECT_TRUE(a.owns(n));
  EXPECT_EQ(a.used_bytes(), n.size);
  EXPECT_TRUE(a.validate());
}

}  // namespace

namespace {

// The 32-byte node (Note [A 32-byte node] in arena.cpp): the generation shares a word with
// a free block's list link, the state sits in the offset's low bits, a free block's region
// is its neighbours'.
TEST(ArenaNode, StaleHandlesAtTheSameOffsetAndSizeStayStale)
{
  arena a(16 * 256);
  auto const first = a.allocate(256);
  ASSERT_TRUE(first);
  a.deallocate(*first);
  for (int i = 0; i < 100; ++i) {
    auto const again = a.allocate(256);  // the same node, offset and size each time
    ASSERT_TRUE(again);
    ASSERT_EQ(again->offset, first->offset);
    EXPECT_FALSE(a.owns(*first)) << i;
    EXPECT_TRUE(a.owns(*again));
    for (std::uint64_t delta : {1U, 2U, 3U}) {  // offsets off by the state bits are not it
      arena::allocation off = *again;
      off.offset += delta;
      EXPECT_FALSE(a.owns(off));
      EXPECT_FALSE(a.try_deallocate(off));
    }
    a.deallocate(*again);
    EXPECT_TRUE(a.validate());
  }
}

TEST(ArenaNode, RegionsOfBlocksCarvedFromWholeAndPartlyUsedRegions)
{
  arena a(4 * 256);
  a.add_region(8 * 256);
  a.add_region(2 * 256);
  a.add_region(16 * 256);
  // Fill region 0, then allocate from wholly free regions (no used neighbour) and from
  // partly used ones (the region comes from a neighbour).
  auto r0 = a.allocate(4 * 256);
  ASSERT_TRUE(r0);
  EXPECT_EQ(r0->region, 0U);
  std::vector<arena::allocation> live;
  for (int i = 0; i < 13; ++i) {
    auto x = a.allocate(2 * 256);
    ASSERT_TRUE(x) << i;
    EXPECT_GE(x->offset, a.region_base(x->region));
    EXPECT_LE(x->offset + x->size, a.region_base(x->region) + a.region_capacity(x->region));
    live.push_back(*x);
    ASSERT_TRUE(a.validate());
  }
  EXPECT_FALSE(a.allocate(256)) << "every region is full";
  // Free every other block, then refill the holes (exact fits: the region comes from a
  // used neighbour, or from the region bases where the hole is a whole region).
  for (std::size_t i = 0; i < live.size(); i += 2) { a.deallocate(live[i]); }
  for (std::size_t i = 0; i < live.size(); i += 2) {
    auto x = a.allocate(2 * 256);
    ASSERT_TRUE(x);
    EXPECT_GE(x->offset, a.region_base(x->region));
    EXPECT_LE(x->offset + x->size, a.region_base(x->region) + a.region_capacity(x->region));
    live[i] = *x;
  }
  ASSERT_TRUE(a.validate());
  // Split keeps the region in both pieces.
  auto const [left, right] = a.split(live.back(), 256);
  EXPECT_EQ(left.region, live.back().region);
  EXPECT_EQ(right.region, live.back().region);
  EXPECT_TRUE(a.owns(left) && a.owns(right));
  EXPECT_TRUE(a.validate());
}

}  // namespace

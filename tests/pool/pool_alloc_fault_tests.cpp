// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_alloc_fault_tests.cpp — pool::allocate under a host allocation failure after its
// block was placed: this executable replaces the global operator new so that a test can
// make one allocation of a given size throw std::bad_alloc (a new page of the pool's
// record table), then checks that nothing leaked: the block is back in its tier — behind
// its pending copy, with its event, when it was a stream-ordered reuse — the tenant
// charge is undone, and the pool stays valid and usable.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace {

// Size of the one allocation to fail (0: none), and how many were failed.
std::atomic<std::size_t> g_fail_size{0};
std::atomic<int> g_failed{0};

}  // namespace

// Replacements of the global (unaligned) operator new / delete for this executable; the
// array, nothrow and aligned forms keep their defaults (which call these or their own).
// GCC sees std::free applied to what operator new returned once these are inlined: here
// that pairing is the point (both are malloc / free).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n)
{
  std::size_t want = g_fail_size.load(std::memory_order_relaxed);
  if (want != 0 && n == want && g_fail_size.compare_exchange_strong(want, 0)) {
    g_failed.fetch_add(1);
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) { return p; }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*n*/) noexcept { std::free(p); }

namespace tierpool::test {
namespace {

// The record table keeps pages of 256 references by id (Note [Records indexed by id]): the
// insert of id 256 allocates the second page, 256 references of one pointer each.
constexpr std::size_t kTableGrowthBytes = 256 * sizeof(void*);  // record_ref: one pointer
constexpr int kFirstIdOfPage1 = 256;

// Regression: an allocate that took a block still awaiting its copy stream's deferred free
// (tier::take_deferred: the block and the pending event) and then failed with bad_alloc
// lost both: the block stayed used in its tier with no tensor, the event outstanding.
TEST(PoolAllocFault, BadAllocAfterAStreamOrderedReuseReturnsTheBlockAndItsEvent)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{small_tiers(be, 1_MiB, 8_MiB, 0)};
  stream_handle s = p.create_stream();
  // Device: x, y, z1, z2 (256 KiB each). x is dirty on the device, its use on s settled.
  tensor x = p.allocate(256_KiB, {.preferred_tier = tier_id{0}});
  tensor y = p.allocate(256_KiB, {.preferred_tier = tier_id{0}});
  tensor z1 = p.allocate(256_KiB, {.preferred_tier = tier_id{0}});
  tensor z2 = p.allocate(256_KiB, {.preferred_tier = tier_id{0}});
  std::vector<std::unique_ptr<modify_job>> jobs;
  ASSERT_EQ(modify_on_stream(p, x, s, 1, 1, jobs), status::ok);
  { lease l = p.acquire(y, access_mode::read, s); }
  p.free(y);          // records a mark on s after x's use
  p.synchronize(s);   // ... which completes: x's last use on s is settled
  p.demote(x, tier_id{1});  // write-back on a d2h copy stream; x's device block waits behind it
  tensor w = p.allocate(256_KiB);  // takes y's old block
  std::vector<tensor> fillers;     // ids 6 .. 255: the next id starts the table's second page
  for (int i = 6; i < kFirstIdOfPage1; ++i) { fillers.push_back(p.allocate(4_KiB, {.preferred_tier = tier_id{1}})); }
  pool_stats const before = p.stats();
  ASSERT_EQ(before.tensors, kFirstIdOfPage1 - 2U);  // y was freed
  ASSERT_EQ(before.tiers[0].resident_tensors, 3U);  // w, z1, z2; x's block is in flight

  g_failed.store(0);
  g_fail_size.store(kTableGrowthBytes);
  EXPECT_THROW((void)p.allocate(256_KiB, {.tenant = 3}), std::bad_alloc);
  g_fail_size.store(0);
  ASSERT_EQ(g_failed.load(), 1) << "the record table's growth was not the allocation that failed";

  pool_stats const after = p.stats();
  EXPECT_EQ(after.tiers[0].reuses_in_order, before.tiers[0].reuses_in_order + 1) << "the failed allocate took x's block in order";
  EXPECT_EQ(after.tensors, kFirstIdOfPage1 - 2U);
  EXPECT_EQ(after.tiers[0].used_bytes.current, before.tiers[0].used_bytes.current) << "the block went back";
  for (auto const& t : after.tenants) {
    if (t.tenant == 3) { EXPECT_EQ(t.live_bytes, 0U) << "the charge was undone"; }
  }
  EXPECT_TRUE(p.validate());

  // The block is again a stream-ordered reuse (behind its copy, with its event): the next
  // allocate takes it the same way and lands on the device.
  tensor v = p.allocate(256_KiB, {.tenant = 3});
  pool_stats const again = p.stats();
  EXPECT_EQ(again.tiers[0].reuses_in_order, after.tiers[0].reuses_in_order + 1);
  EXPECT_EQ(again.tiers[0].resident_tensors, 4U);
  fill(p, v, 7, 1);
  p.synchronize(s);
  EXPECT_TRUE(check(p, x, 1, 1)) << "the write-back the block waited behind is intact";
  EXPECT_TRUE(check(p, v, 7, 1));
  EXPECT_TRUE(p.validate());
}

// The same failure after an ordinary placement: the fresh block goes back at once.
TEST(PoolAllocFault, BadAllocAfterPlacementReturnsTheBlock)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  std::vector<tensor> ts;
  for (int i = 1; i < kFirstIdOfPage1; ++i) { ts.push_back(p.allocate(4_KiB)); }
  pool_stats const before = p.stats();
  g_failed.store(0);
  g_fail_size.store(kTableGrowthBytes);
  EXPECT_THROW((void)p.allocate(64_KiB, {.tenant = 5}), std::bad_alloc);
  g_fail_size.store(0);
  ASSERT_EQ(g_failed.load(), 1);
  pool_stats const after = p.stats();
  EXPECT_EQ(after.tensors, kFirstIdOfPage1 - 1U);
  EXPECT_EQ(after.tiers[0].used_bytes.current, before.tiers[0].used_bytes.current);
  for (auto const& t : after.tenants) {
    if (t.tenant == 5) { EXPECT_EQ(t.live_bytes, 0U); }
  }
  EXPECT_TRUE(p.validate());
  tensor t = p.allocate(64_KiB);
  fill(p, t, 3, 1);
  EXPECT_TRUE(check(p, t, 3, 1));
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_basics_tests.cpp — the tiered pool on the sim backend (real memory): allocate, fill and
// read back, eviction cycles (clean and dirty), write leases, demote, the hit path. Every
// tensor's bytes are checked against a pattern derived from (id, version) after each
// cycle, and validate() runs after each step.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tierpool::test {
namespace {

TEST(Pool, AllocateFillReadBack)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 6; ++i) {
    ts.push_back(p.allocate(256_KiB, {.name = "t" + std::to_string(i)}));
    fill(p, ts.back(), i, 1);
    ASSERT_TRUE(p.validate());
  }
  for (std::uint64_t i = 0; i < 6; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_EQ(p.stats().tensors, 6U);
  EXPECT_EQ(p.stats().tensor_bytes, 6 * 256_KiB);
  ts.clear();
  EXPECT_EQ(p.stats().tensors, 0U);
  EXPECT_TRUE(p.validate());
}

TEST(Pool, EvictionCyclesKeepEveryByte)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  std::vector<std::unique_ptr<modify_job>> jobs;
  constexpr std::uint64_t n = 16;  // 16 x 256 KiB = 4 MiB: device 1 MiB + pinned 2 MiB cannot hold them
  std::vector<tensor> ts;
  std::vector<std::uint32_t> ver(n, 1);
  for (std::uint64_t i = 0; i < n; ++i) {
    ts.push_back(p.allocate(256_KiB));
    fill(p, ts.back(), i, 1);
  }
  for (int round = 0; round < 4; ++round) {
    for (std::uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(modify_on_stream(p, ts[i], s, i, ++ver[i], jobs), status::ok);
      ASSERT_TRUE(p.validate());
    }
    for (std::uint64_t i = 0; i < n; ++i) { ASSERT_TRUE(check(p, ts[i], i, ver[i])) << "round " << round << " t" << i; }
    // prefetch, demote, free + reallocate some
    p.prefetch(ts[static_cast<std::size_t>(round)]);
    p.demote(ts[static_cast<std::size_t>(round + 1)], tier_id{2});
    ASSERT_TRUE(p.validate());
    auto const k = static_cast<std::size_t>(round + 2);
    p.free(ts[k]);
    EXPECT_FALSE(ts[k].valid());
    ts[k] = p.allocate(256_KiB);
    fill(p, ts[k], k, ver[k] = 100);
    ASSERT_TRUE(p.validate());
    for (std::uint64_t i = 0; i < n; ++i) { ASSERT_TRUE(check(p, ts[i], i, ver[i])) << "round " << round << " t" << i; }
  }
  pool_stats const st = p.stats();
  EXPECT_GT(st.tiers[0].evictions, 0U);
  EXPECT_GT(st.misses, 0U);
  p.synchronize(s);
}

TEST(Pool, CleanEvictionWritesNothingDirtyWritesBack)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 5; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 1);
  }
  // Bring 4 in for reading: the device is full of clean copies.
  for (std::uint64_t i = 0; i < 4; ++i) { (void)p.acquire(ts[i], access_mode::read, s); }
  std::size_t const d2h0 = p.stats().bytes_d2h;
  (void)p.acquire(ts[4], access_mode::read, s);  // evicts one clean copy
  pool_stats st = p.stats();
  EXPECT_EQ(st.bytes_d2h, d2h0);
  EXPECT_EQ(st.tiers[0].evictions, 1U);
  EXPECT_EQ(st.tiers[0].evictions_clean, 1U);
  ASSERT_TRUE(p.validate());

  // Now make every device copy dirty, then force one out.
  std::vector<std::unique_ptr<modify_job>> jobs;
  for (std::uint64_t i = 1; i < 5; ++i) { ASSERT_EQ(modify_on_stream(p, ts[i], s, i, 2, jobs), status::ok); }
  std::size_t const d2h1 = p.stats().bytes_d2h;
  (void)p.acquire(ts[0], access_mode::read, s);
  st = p.stats();
  EXPECT_EQ(st.bytes_d2h, d2h1 + 256_KiB);
  EXPECT_EQ(st.tiers[0].evictions, 2U);
  EXPECT_EQ(st.tiers[0].evictions_clean, 1U);
  ASSERT_TRUE(p.validate());
  EXPECT_TRUE(check(p, ts[0], 0, 1));
  for (std::uint64_t i = 1; i < 5; ++i) { EXPECT_TRUE(check(p, ts[i], i, 2)) << i; }
  p.synchronize(s);
}

TEST(Pool, WriteLeaseInvalidatesLowerCopies)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(128_KiB, {.preferred_tier = tier_id{2}});
  fill(p, t, 7, 1);
  { lease l = p.acquire(t, access_mode::read, s); }
  EXPECT_TRUE(check(p, t, 7, 1));
  std::size_t const d2h = p.stats().bytes_d2h;
  EXPECT_EQ(d2h, 0U);  // the host copy was valid: nothing copied down
  std::vector<std::unique_ptr<modify_job>> jobs;
  ASSERT_EQ(modify_on_stream(p, t, s, 7, 2, jobs), status::ok);
  EXPECT_TRUE(check(p, t, 7, 2));  // must copy the device copy down
  EXPECT_EQ(p.stats().bytes_d2h, 128_KiB);
  // A host write makes the device copy stale: the next acquire copies in again.
  fill(p, t, 7, 3);
  std::uint64_t const misses = p.stats().misses;
  { lease l = p.acquire(t, access_mode::read, s); }
  EXPECT_EQ(p.stats().misses, misses + 1);
  EXPECT_TRUE(check(p, t, 7, 3));
  ASSERT_TRUE(p.validate());
  p.synchronize(s);
}

TEST(Pool, DemoteMovesDownAndKeepsBytes)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(256_KiB);
  std::vector<std::unique_ptr<modify_job>> jobs;
  fill(p, t, 3, 1);
  ASSERT_EQ(modify_on_stream(p, t, s, 3, 2, jobs), status::ok);
  p.demote(t, tier_id{2});
  pool_stats st = p.stats();
  EXPECT_EQ(st.tiers[0].resident_tensors, 0U);
  EXPECT_EQ(st.tiers[1].resident_tensors, 0U);
  EXPECT_EQ(st.tiers[2].resident_tensors, 1U);
  ASSERT_TRUE(p.validate());
  EXPECT_TRUE(check(p, t, 3, 2));
  p.synchronize(s);
}

TEST(Pool, HitPathMakesNoBackendCall)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(64_KiB);
  fill(p, t, 1, 1);
  { lease l = p.acquire(t, access_mode::read, s); }
  ASSERT_EQ(be->advance_by(1'000'000'000), status::ok);
  { lease l = p.acquire(t, access_mode::read, s); }  // completes the ready event once
  be->reset_call_counts();
  for (int i = 0; i < 10; ++i) { lease l = p.acquire(t, access_mode::read, s); }
  EXPECT_EQ(be->call_count(sim_call::any), 0U);
}

}  // namespace
}  // namespace tierpool::test

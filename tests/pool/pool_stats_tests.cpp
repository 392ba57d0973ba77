// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_stats_tests.cpp — pool_stats: leases taken against failed acquires, copies across the
// device boundary (h2d, d2h) against all copies up and down, and the summary and its JSON.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tierpool::test {
namespace {

// pool_stats::acquires counts leases taken, as its comment says; a failed acquire counts
// in acquire_failures (before, every failed acquire was one more "lease taken"). A request
// blocked by this thread's own leases fails at once with cause `pinned` and its figures.
TEST(PoolStats, AcquiresCountLeasesTakenAndFailuresApart)
{
  four_resident f;
  auto& p = f.p;
  pool_stats const before = p.stats();
  EXPECT_EQ(before.acquires, before.hits + before.misses);
  EXPECT_EQ(before.acquire_failures, 0U);
  std::vector<lease> pins;
  for (std::size_t i = 0; i < 4; ++i) { pins.push_back(p.acquire(f.t[i], access_mode::read, f.s)); }  // device full
  try {
    lease l = p.acquire(f.t[4], access_mode::read, f.s);
    ADD_FAILURE() << "acquired beyond a device tier pinned full";
  } catch (out_of_memory const& e) {
    EXPECT_EQ(e.cause(), oom_cause::pinned) << e.what();
    EXPECT_EQ(e.figures().pinned_bytes, 1_MiB);
    EXPECT_EQ(e.figures().capacity_bytes, 1_MiB);
    EXPECT_EQ(e.figures().attempts, 0U) << "this thread's own leases: no busy retries";
    EXPECT_EQ(e.tier(), tier_id{0});
    EXPECT_EQ(e.requested(), 256_KiB);
  }
  pool_stats const after = p.stats();
  EXPECT_EQ(after.acquires, before.acquires + 4) << "a failed acquire counted as a lease taken";
  EXPECT_EQ(after.acquire_failures, 1U);
  EXPECT_EQ(after.misses, before.misses + 1);
  EXPECT_EQ(after.busy_retries, 0U);
  pins.clear();
  EXPECT_TRUE(p.validate());
}

TEST(PoolStats, H2dD2hCountOnlyTheDeviceBoundaryUpDownCountAll)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 1_MiB, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> t;
  for (std::uint64_t i = 0; i < 4; ++i) {
    t.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, t.back(), i, 1);
  }
  pool_stats st = p.stats();
  EXPECT_EQ(st.bytes_down, 0U);
  // A fifth tensor in pinned_host evicts a dirty one there: written back to host.
  tensor e = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  st = p.stats();
  EXPECT_EQ(st.copies_down, 1U);
  EXPECT_EQ(st.bytes_down, 256_KiB);
  EXPECT_EQ(st.copies_d2h, 0U) << "pinned_host -> host is not device -> host";
  EXPECT_EQ(st.bytes_d2h, 0U);
  // Copy-in to the device from pinned_host: h2d and up.
  { lease l = p.acquire(t[3], access_mode::read, s); }
  st = p.stats();
  EXPECT_EQ(st.copies_h2d, 1U);
  EXPECT_EQ(st.bytes_h2d, 256_KiB);
  EXPECT_EQ(st.copies_up, 1U);
  EXPECT_EQ(st.bytes_up, 256_KiB);
  p.synchronize(s);
  EXPECT_NE(p.summary().find("d2h 0 (0 B)"), std::string::npos) << p.summary();
  EXPECT_NE(p.summary_json().find("\"bytes_down\":262144"), std::string::npos);
  EXPECT_TRUE(p.validate());
}

TEST(Pool, SummaryAndJson)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  tensor t = p.allocate(64_KiB, {.name = "w"});
  fill(p, t, 1, 1);
  std::string const s = p.summary();
  EXPECT_NE(s.find("device"), std::string::npos);
  EXPECT_NE(s.find("pinned_host"), std::string::npos);
  std::string const j = p.summary_json();
  EXPECT_NE(j.find("\"tiers\""), std::string::npos);
  EXPECT_NE(j.find("\"evictions_clean\""), std::string::npos);
  EXPECT_NE(j.find("\"tensors\":1"), std::string::npos);
}

}  // namespace
}  // namespace tierpool::test

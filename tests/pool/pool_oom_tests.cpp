// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_oom_tests.cpp — out-of-memory diagnoses: every block pinned, fragmentation, a tensor
// larger than the device tier, dirty victims with no room below. The message names the
// cause and the figures; the pool stays consistent and the bytes survive.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tierpool::test {
namespace {

TEST(PoolOom, AllPinnedNamesPinnedAndLeases)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  std::vector<lease> ls;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB));
    fill(p, ts.back(), i, 1);
    ls.push_back(p.acquire(ts.back(), access_mode::read, s));
  }
  tensor extra = p.allocate(256_KiB);
  EXPECT_EQ(p.stats().tiers[0].resident_tensors, 4U);
  try {
    (void)p.acquire(extra, access_mode::read, s);
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    std::string const m = e.what();
    EXPECT_NE(m.find("262144 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("'device'"), std::string::npos) << m;
    EXPECT_NE(m.find("capacity 1.0 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("pinned 1.0 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("cause: pinned"), std::string::npos) << m;
    EXPECT_NE(m.find("release leases"), std::string::npos) << m;
    EXPECT_EQ(e.requested(), 256_KiB);
    EXPECT_EQ(e.tier(), tier_id{0});
  }
  ASSERT_TRUE(p.validate());
  ls.clear();
  { lease l = p.acquire(extra, access_mode::read, s); }  // now it evicts
  for (std::uint64_t i = 0; i < 4; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)); }
  p.synchronize(s);
}

TEST(PoolOom, FragmentationIsDiagnosed)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  std::vector<lease> ls;
  for (std::uint64_t i = 0; i < 8; ++i) {
    ts.push_back(p.allocate(128_KiB));
    fill(p, ts.back(), i, 1);
  }
  for (std::size_t i = 0; i < 8; i += 2) { ls.push_back(p.acquire(ts[i], access_mode::read, s)); }
  for (std::size_t i = 1; i < 8; i += 2) { p.free(ts[i]); }
  tensor big = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  try {
    (void)p.acquire(big, access_mode::read, s);
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    std::string const m = e.what();
    EXPECT_NE(m.find("cause: fragmentation"), std::string::npos) << m;
    EXPECT_NE(m.find("largest free block 128.0 KiB"), std::string::npos) << m;
  }
  ASSERT_TRUE(p.validate());
  p.synchronize(s);
}

TEST(PoolOom, TensorLargerThanDeviceTier)
{
  // A tensor larger than the device tier cannot be acquired.
  pool q{small_tiers(make_sim(), 1_MiB, 0, 4_MiB)};
  tensor huge = q.allocate(2_MiB);
  try {
    (void)q.acquire(huge, access_mode::read);
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    std::string const m = e.what();
    EXPECT_NE(m.find("cause: capacity"), std::string::npos) << m;
    EXPECT_NE(m.find("TIERPOOL_DEVICE_BYTES"), std::string::npos) << m;
  }
  EXPECT_TRUE(q.validate());
}

TEST(PoolOom, DirtyVictimsWithNoRoomBelow)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 1_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  // Device: 4 tensors whose only copy is there; host: 4 others, full.
  for (std::uint64_t i = 0; i < 8; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{i < 4 ? 0U : 1U}}));
  }
  std::vector<std::unique_ptr<modify_job>> jobs;
  for (std::uint64_t i = 0; i < 4; ++i) { ASSERT_EQ(modify_on_stream(p, ts[i], s, i, 1, jobs), status::ok); }
  for (std::uint64_t i = 4; i < 8; ++i) { fill(p, ts[i], i, 1); }
  try {
    (void)p.acquire(ts[4], access_mode::read, s);
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    EXPECT_NE(std::string(e.what()).find("cause: capacity"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(p.validate());
  p.synchronize(s);
  for (std::uint64_t i = 4; i < 8; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
}

}  // namespace
}  // namespace tierpool::test

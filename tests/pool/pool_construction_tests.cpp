// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_construction_tests.cpp — building a pool: the default tiers a backend gives, the device
// tier clamped to the device, and the TIERPOOL_* variables (device bytes, policy, backend)
// that win over explicit options unless read_environment is off.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <cstdlib>
#include <string>

namespace tierpool::test {
namespace {

TEST(Pool, DefaultTiersFromBackend)
{
  auto be = make_sim(sim_clock_mode::wall, 8_MiB);
  pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  pool p{o};
  ASSERT_EQ(p.tier_count(), 3U);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[0].name, "device");
  EXPECT_EQ(st.tiers[0].capacity_bytes, 8_MiB);
  EXPECT_EQ(st.tiers[1].kind, tier_kind::pinned_host);
  EXPECT_EQ(st.tiers[1].capacity_bytes, 16_MiB);
  EXPECT_EQ(st.tiers[2].kind, tier_kind::host);
  EXPECT_GT(st.tiers[2].capacity_bytes, 0U);
  EXPECT_EQ(p.backend_reason(), "given by pool_options::backend_object");
  EXPECT_TRUE(p.validate());
}

TEST(Pool, EnvironmentOverridesDeviceBytesAndPolicy)
{
  ::setenv("TIERPOOL_DEVICE_BYTES", "2MiB", 1);
  ::setenv("TIERPOOL_POLICY", "lru", 1);
  pool_options o;
  o.backend_object = make_sim();
  pool p{o};
  ::unsetenv("TIERPOOL_DEVICE_BYTES");
  ::unsetenv("TIERPOOL_POLICY");
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 2_MiB);
}

TEST(Pool, EnvironmentDeviceBytesSizesTheSimulatedDeviceThePoolBuilds)
{
  ::setenv("TIERPOOL_DEVICE_BYTES", "512MiB", 1);
  pool_options o;
  o.backend = backend_choice::sim;
  o.notice = fallback_notice::silent;
  pool p{o};
  ::unsetenv("TIERPOOL_DEVICE_BYTES");
  EXPECT_EQ(p.backend().caps().device_bytes, 512_MiB);
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 512_MiB);
}

TEST(Pool, DeviceTierIsClampedToTheDevice)
{
  pool_options o = small_tiers(make_sim(sim_clock_mode::wall, 4_MiB), 1_MiB);
  o.read_environment = false;
  o.tiers[0].capacity_bytes = 1_GiB;  // larger than the 4 MiB device
  pool p{o};
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 4_MiB);
  EXPECT_TRUE(p.validate());
}

TEST(Pool, EnvironmentSelectsSimBackend)
{
  ::setenv("TIERPOOL_BACKEND", "sim", 1);
  pool_options o;
  o.sim.device_bytes = 4_MiB;
  pool p{o};
  ::unsetenv("TIERPOOL_BACKEND");
  EXPECT_EQ(p.backend().caps().name, "sim");
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 4_MiB);
}

TEST(Pool, EnvironmentWinsOverExplicitOptions)
{
  // TIERPOOL_DEVICE_BYTES replaces an explicit device capacity.
  ::setenv("TIERPOOL_DEVICE_BYTES", "2MiB", 1);
  {
    pool_options o = small_tiers(make_sim(), 1_MiB);
    o.read_environment = true;
    pool p{o};
    EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 2_MiB);
    o.read_environment = false;
    pool q{o};
    EXPECT_EQ(q.stats().tiers[0].capacity_bytes, 1_MiB);
  }
  ::unsetenv("TIERPOOL_DEVICE_BYTES");
  // TIERPOOL_POLICY replaces pool_options::policy and every tier's own policy.
  ::setenv("TIERPOOL_POLICY", "no-such-policy", 1);
  {
    pool_options o = small_tiers(make_sim());
    for (auto& to : o.tiers) { to.policy = "lru"; }
    o.policy = "lru";
    o.read_environment = true;
    try {
      pool p{o};
      ADD_FAILURE() << "TIERPOOL_POLICY was not applied";
    } catch (logic_error const& e) {
      EXPECT_NE(std::string(e.what()).find("TIERPOOL_POLICY"), std::string::npos) << e.what();
    }
    o.read_environment = false;
    EXPECT_NO_THROW(pool{o});
  }
  ::unsetenv("TIERPOOL_POLICY");
  // TIERPOOL_BACKEND replaces an explicit pool_options::backend.
  ::setenv("TIERPOOL_BACKEND", "sim", 1);
  {
    pool_options o;
    o.backend = backend_choice::cuda;
    o.sim.device_bytes = 4_MiB;
    o.notice = fallback_notice::silent;
    pool p{o};
    EXPECT_EQ(p.backend().caps().name, "sim");
  }
  ::unsetenv("TIERPOOL_BACKEND");
}

}  // namespace
}  // namespace tierpool::test

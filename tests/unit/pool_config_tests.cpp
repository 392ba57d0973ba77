// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_config_tests.cpp — the resolution of pool_options into a pool's configuration
// (runtime/core/pool_config.hpp): environment overrides through a fake environment, and
// the default tiers' capacities for made-up backends and machines (no device needed).
#include <gtest/gtest.h>

#include <tierpool/error.hpp>

#include <map>
#include <string>

#include "core/pool_config.hpp"

namespace tp = tierpool;
namespace td = tierpool::detail;
using namespace tierpool::literals;

namespace {

td::environment_lookup fake(std::map<std::string, std::string> vars)
{
  return [vars = std::move(vars)](char const* name) -> char const* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

tp::backend_caps gpu_caps()
{
  tp::backend_caps c{};
  c.name = "cuda";
  c.device_bytes = 8_GiB;
  c.pinned_host_bytes = 0;
  c.managed_bytes = 8_GiB;
  c.managed_shares_device = true;
  c.allocation_alignment = 512;
  c.max_copy_streams = 8;
  return c;
}

}  // namespace

TEST(PoolConfigEnvironment, SetVariablesWinOverOptionsAndAreReported)
{
  tp::pool_options o;
  o.policy = "lru";
  auto const env = td::apply_environment(
    o, fake({{"TIERPOOL_DEVICE_BYTES", "64MiB"}, {"TIERPOOL_POLICY", "arc"}, {"TIERPOOL_TRACE", "/tmp/t.tpt"}}));
  EXPECT_EQ(env.device_bytes, 64_MiB);
  EXPECT_EQ(o.sim.device_bytes, 64_MiB);  // a sim device the pool builds is as large as asked
  EXPECT_EQ(o.policy, "arc");
  EXPECT_EQ(env.policy, "arc");
  EXPECT_EQ(o.trace_path, "/tmp/t.tpt");
  EXPECT_FALSE(env.prefetch.has_value());
  EXPECT_TRUE(env.backend);
}

TEST(PoolConfigEnvironment, ReadEnvironmentFalseAndIgnoredNamesReadNothing)
{
  tp::pool_options o;
  o.read_environment = false;
  auto const env = td::apply_environment(o, fake({{"TIERPOOL_POLICY", "arc"}}));
  EXPECT_FALSE(env.policy.has_value());
  EXPECT_FALSE(env.backend);
  EXPECT_EQ(o.policy, "lru");

  tp::pool_options p;
  p.ignore_environment = {"TIERPOOL_POLICY", "TIERPOOL_BACKEND"};
  auto const e2 = td::apply_environment(p, fake({{"TIERPOOL_POLICY", "arc"}, {"TIERPOOL_PREFETCH", "sequence"}}));
  EXPECT_FALSE(e2.policy.has_value());
  EXPECT_FALSE(e2.backend);
  EXPECT_EQ(p.prefetch, "sequence");  // not ignored
}

TEST(PoolConfigEnvironment, BadValuesAndUnknownNamesAreTypedErrorsNamingTheVariable)
{
  tp::pool_options o;
  try {
    (void)td::apply_environment(o, fake({{"TIERPOOL_DEVICE_BYTES", "-3"}}));
    FAIL() << "expected logic_error";
  } catch (tp::logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("TIERPOOL_DEVICE_BYTES"), std::string::npos) << e.what();
  }
  try {
    (void)td::apply_environment(o, fake({{"TIERPOOL_PUBLISH", "maybe"}}));
    FAIL() << "expected logic_error";
  } catch (tp::logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("TIERPOOL_PUBLISH: expected 0 or 1"), std::string::npos) << e.what();
  }
  tp::pool_options p;
  p.ignore_environment = {"TIERPOOL_NOPE"};
  try {
    (void)td::apply_environment(p, fake({}));
    FAIL() << "expected logic_error";
  } catch (tp::logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("unknown variable 'TIERPOOL_NOPE' (valid: TIERPOOL_BACKEND"), std::string::npos)
      << e.what();
  }
}

TEST(PoolConfigResolve, DefaultTiersOnAGpuTakeNinetyPercentOfFreeMemoryAndLeaveManagedNone)
{
  tp::pool_options o;
  td::platform_facts f;
  f.device_free_bytes = 4_GiB;
  f.host_memory_share = 32_GiB;
  f.far_host_tiers.push_back({.kind = tp::tier_kind::host, .numa_node = 2, .capacity_bytes = 16_GiB, .name = "far"});
  td::pool_config const c = td::resolve_pool_config(o, gpu_caps(), f, {});
  ASSERT_EQ(c.tiers.size(), 4U);
  EXPECT_EQ(c.tiers[0].config.kind, tp::tier_kind::device);
  EXPECT_EQ(c.tiers[0].config.capacity_bytes, static_cast<std::size_t>(4.0 * 0.9 * 1024 * 1024 * 1024));
  EXPECT_EQ(c.tiers[1].config.kind, tp::tier_kind::pinned_host);
  EXPECT_EQ(c.tiers[1].config.capacity_bytes, 2 * c.tiers[0].config.capacity_bytes);
  EXPECT_EQ(c.tiers[2].config.capacity_bytes, 32_GiB);
  EXPECT_EQ(c.tiers[3].config.name, "far");
  EXPECT_EQ(c.tiers[3].config.numa_node, 2);
  for (auto const& t : c.tiers) {
    EXPECT_EQ(t.policy_spec, "lru");
    EXPECT_EQ(t.config.alignment, 256U);  // min(256, the backend's)
    EXPECT_LE(t.config.chunk_bytes, 64_MiB);
  }
}

TEST(PoolConfigResolve, ManagedTierGetsWhatTheDeviceTiersLeaveAndAnEmptyOneIsRefusedWithTheReason)
{
  tp::pool_options o;
  o.tiers = {{.kind = tp::tier_kind::device, .capacity_bytes = 6_GiB}, {.kind = tp::tier_kind::managed},
             {.kind = tp::tier_kind::host, .capacity_bytes = 1_GiB}};
  td::pool_config const c = td::resolve_pool_config(o, gpu_caps(), {}, {});
  EXPECT_EQ(c.tiers[1].config.capacity_bytes, 2_GiB);

  o.tiers[0].capacity_bytes = 8_GiB;  // the device tier takes it all
  try {
    (void)td::resolve_pool_config(o, gpu_caps(), {}, {});
    FAIL() << "expected logic_error";
  } catch (tp::logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("pool_options::tiers[1] (managed): capacity is 0 or below 256 bytes (the "
                                         "device tiers take the device memory"),
              std::string::npos)
      << e.what();
  }
}

TEST(PoolConfigResolve, EnvironmentPolicyAndDeviceBytesApplyToEveryTierAndStreamsAreClamped)
{
  tp::pool_options o;
  o.tiers = {{.kind = tp::tier_kind::device, .capacity_bytes = 1_GiB, .policy = "fifo"},
             {.kind = tp::tier_kind::host, .capacity_bytes = 1_GiB}};
  o.h2d_streams = 100;
  o.d2h_streams = 100;
  td::environment_overrides env;
  env.policy = "arc";
  env.device_bytes = 16_MiB;
  td::pool_config const c = td::resolve_pool_config(o, gpu_caps(), {}, env);
  EXPECT_EQ(c.tiers[0].config.capacity_bytes, 16_MiB);
  EXPECT_EQ(c.tiers[0].policy_spec, "arc");
  EXPECT_EQ(c.tiers[1].policy_spec, "arc");
  EXPECT_EQ(c.h2d_streams, 6U);  // 8 streams: 6 + 1 + the retire stream
  EXPECT_EQ(c.d2h_streams, 1U);

  o.contention.busy_attempts = 0;
  EXPECT_THROW((void)td::resolve_pool_config(o, gpu_caps(), {}, {}), tp::logic_error);
}

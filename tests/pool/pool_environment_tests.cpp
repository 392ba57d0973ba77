// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_environment_tests.cpp — pool_options::ignore_environment: a program that decides
// some TIERPOOL_* variables itself names them; the pool still reads (and checks) every
// other one. Before it, such programs turned read_environment off and lost them all.
#include "unit/pool_test_util.hpp"

#include "support/scoped_env.hpp"

#include <tierpool/error.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tierpool::test {
namespace {

pool_options reading(std::vector<std::string> ignored)
{
  pool_options o = small_tiers(make_sim(), 1_MiB);
  o.read_environment = true;
  o.publish.enabled = false;
  o.notice = fallback_notice::silent;
  o.ignore_environment = std::move(ignored);
  return o;
}

std::string error_of(pool_options const& o)
{
  try {
    pool p{o};
  } catch (logic_error const& e) {
    return e.what();
  }
  return "";
}

TEST(PoolEnvironment, AnIgnoredVariableIsNotReadTheOthersStillAre)
{
  scoped_env const device("TIERPOOL_DEVICE_BYTES", "2MiB");
  scoped_env const policy("TIERPOOL_POLICY", "no-such-policy");
  scoped_env const prefetch("TIERPOOL_PREFETCH", "garbage");
  scoped_env const publish("TIERPOOL_PUBLISH", nullptr);
  scoped_env const trace("TIERPOOL_TRACE", nullptr);
  // The program decides the device tier and the policy; the prefetch variable still applies.
  EXPECT_EQ(error_of(reading({"TIERPOOL_DEVICE_BYTES", "TIERPOOL_POLICY"})).rfind("TIERPOOL_PREFETCH: unknown predictor 'garbage'", 0), 0U);
  scoped_env const valid_prefetch("TIERPOOL_PREFETCH", "sequence:depth=2");
  pool p{reading({"TIERPOOL_DEVICE_BYTES", "TIERPOOL_POLICY"})};
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 1_MiB);  // not the variable's 2 MiB
  EXPECT_EQ(error_of(reading({"TIERPOOL_DEVICE_BYTES"})).rfind("TIERPOOL_POLICY: unknown policy 'no-such-policy'", 0), 0U);
}

TEST(PoolEnvironment, TheVariablesAreCheckedUnlessIgnored)
{
  scoped_env const publish("TIERPOOL_PUBLISH", "sometimes");
  EXPECT_EQ(error_of(reading({})), "TIERPOOL_PUBLISH: expected 0 or 1 (or off / on), got 'sometimes'");
  EXPECT_EQ(error_of(reading({"TIERPOOL_PUBLISH"})), "");
}

TEST(PoolEnvironment, AnUnknownNameIsAnError)
{
  EXPECT_EQ(error_of(reading({"TIERPOOL_POLCY"})),
            "pool_options::ignore_environment: unknown variable 'TIERPOOL_POLCY' (valid: TIERPOOL_BACKEND, "
            "TIERPOOL_DEVICE_BYTES, TIERPOOL_POLICY, TIERPOOL_PREFETCH, TIERPOOL_TRACE, TIERPOOL_PUBLISH, "
            "TIERPOOL_PUBLISH_GROUP, TIERPOOL_COMPACTION)");
}

// TIERPOOL_COMPACTION turns pool_options::compaction on or off (Note [Compacting around
// vacated blocks]): a fragmented device tier then compacts for a request instead of
// evicting. A bad value is an error naming the variable; ignored, it is not read.
TEST(PoolEnvironment, CompactionVariableDecidesWhetherTheLadderCompacts)
{
  auto fragmented_request = [](pool_options o) {
    pool p{std::move(o)};
    std::vector<tensor> all;
    for (int i = 0; i < 16; ++i) { all.push_back(p.allocate(64_KiB, {.preferred_tier = tier_id{0}})); }
    for (std::size_t i = 0; i < all.size(); i += 2) { p.free(all[i]); }  // 512 KiB free in 64 KiB holes
    tensor big = p.allocate(256_KiB, {.preferred_tier = tier_id{0}});
    return p.stats().tiers[0].compactions;
  };
  {
    scoped_env const on("TIERPOOL_COMPACTION", "on");
    EXPECT_EQ(fragmented_request(reading({})), 1U);
    EXPECT_EQ(fragmented_request(reading({"TIERPOOL_COMPACTION"})), 0U) << "an ignored variable was read";
  }
  {
    scoped_env const off("TIERPOOL_COMPACTION", "0");
    pool_options o = reading({});
    o.compaction = true;
    EXPECT_EQ(fragmented_request(o), 0U) << "the variable wins over the option";
  }
  scoped_env const bad("TIERPOOL_COMPACTION", "maybe");
  EXPECT_EQ(error_of(reading({})), "TIERPOOL_COMPACTION: expected 0 or 1 (or off / on), got 'maybe'");
}

}  // namespace
}  // namespace tierpool::test

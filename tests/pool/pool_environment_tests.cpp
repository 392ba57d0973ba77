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
            "TIERPOOL_PUBLISH_GROUP)");
}

}  // namespace
}  // namespace tierpool::test

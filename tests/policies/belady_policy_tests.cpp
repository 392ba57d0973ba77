// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// belady_policy_tests.cpp — POLICY_BELADY_TEST: the conformance suite for belady_policy
// (direct and type-erased, driven with next-use forecasts), furthest-next-use order with
// "never again" first and ties by recency, the error a missing forecast raises (and how
// it clears), pins, optimality against LRU on a small loop, and the registry entry.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <tierpool/policies/belady_policy.hpp>
#include <tierpool/policies/lru_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

namespace {

using tierpool::any_eviction_policy;
using tierpool::belady_policy;
using tierpool::eviction_proposal;
using tierpool::eviction_request;
using tierpool::no_next_use;
using tierpool::tensor_view;
using tierpool::tick;

struct BeladyFixture : ::testing::Test {
  static constexpr bool gives_forecasts = true;
  static belady_policy make() { return belady_policy{}; }
};
struct AnyBeladyFixture : ::testing::Test {
  static constexpr bool gives_forecasts = true;
  static any_eviction_policy make() { return tierpool::policy_registry::with_builtins().create("belady"); }
};
using belady_fixtures = ::testing::Types<BeladyFixture, AnyBeladyFixture>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Belady, PolicyConformance, belady_fixtures);

namespace {

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

TEST(BeladyPolicy, FurthestNextUseFirst)
{
  belady_policy p;
  p.on_insert(forecast_view(1, 10, 50));
  p.on_insert(forecast_view(2, 10, 20));
  p.on_insert(forecast_view(3, 10, no_next_use));  // never again: first
  p.on_insert(forecast_view(4, 10, 80));
  p.on_insert(forecast_view(5, 10, 20));           // ties with 2: the less recently reported first
  EXPECT_EQ(propose(p, SIZE_MAX), ids({3, 4, 1, 2, 5}));
  EXPECT_EQ(propose(p, 15), ids({3, 4}));
  p.on_access(forecast_view(4, 10, 30));           // a new forecast moves it
  EXPECT_EQ(propose(p, SIZE_MAX), ids({3, 1, 4, 2, 5}));
  EXPECT_TRUE(p.validate());
}

TEST(BeladyPolicy, MissingForecastIsAnError)
{
  belady_policy p;
  p.on_insert(forecast_view(3, 10, 40));
  p.on_insert(forecast_view(17, 10, std::nullopt));
  EXPECT_EQ(p.missing_forecasts(), 1U);
  EXPECT_TRUE(propose(p, 0).empty());  // nothing to decide: no error
  try {
    (void)propose(p, 1);
    ADD_FAILURE() << "propose() did not throw";
  } catch (tierpool::logic_error const& e) {
    EXPECT_STREQ(e.what(),
                 "belady: tensor 17 has no next-use forecast; Belady's MIN needs a driver that provides one "
                 "(tierpool replay does; pass next-use hints with pool::set_next_use) \xE2\x80\x94 use lru or repeat "
                 "instead");
  }
  any_eviction_policy erased{p};
  EXPECT_THROW((void)erased.propose({.bytes_needed = 1}), tierpool::logic_error);
  p.on_access(forecast_view(17, 10, 5));  // a forecast arrives: the error clears
  EXPECT_EQ(p.missing_forecasts(), 0U);
  EXPECT_EQ(propose(p, 1), ids({3}));
  p.on_access(forecast_view(3, 10, std::nullopt));  // withdrawn again
  EXPECT_THROW((void)propose(p, 1), tierpool::logic_error);
  p.on_erase(tid(3));  // ... until that tensor leaves
  EXPECT_EQ(propose(p, 1), ids({17}));
  EXPECT_TRUE(p.validate());
}

TEST(BeladyPolicy, PinnedTensorsAreSkipped)
{
  belady_policy p;
  p.on_insert(forecast_view(1, 10, 90));
  p.on_insert(forecast_view(2, 10, 10));
  p.on_pin(tid(1));
  EXPECT_EQ(propose(p, SIZE_MAX), ids({2}));
  p.on_unpin(tid(1));
  EXPECT_EQ(propose(p, SIZE_MAX), ids({1, 2}));
  p.on_access(forecast_view(2, 10, 95, /*pinned=*/true));
  EXPECT_EQ(propose(p, SIZE_MAX), ids({1}));
}

TEST(BeladyPolicy, MissesLeastOnALoop)
{
  std::vector<std::uint64_t> seq;
  for (int round = 0; round < 10; ++round) {
    for (std::uint64_t i = 1; i <= 5; ++i) { seq.push_back(i); }
  }
  belady_policy min;
  tierpool::lru_policy lru;
  // Room for 4 of 5: LRU evicts the tensor needed next and misses all 50. MIN evicts the
  // one needed furthest ahead, which then stays out for a whole turn of the loop: 5 cold
  // misses, then 11 in the remaining 45 accesses.
  EXPECT_EQ(misses(lru, seq, 4, false), 50U);
  EXPECT_EQ(misses(min, seq, 4, true), 16U);
}

TEST(BeladyPolicy, Registry)
{
  auto const r = tierpool::policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("belady"));
  EXPECT_TRUE(r.info("belady").parameters.empty());
  EXPECT_THAT(r.info("belady").description, ::testing::HasSubstr("forecast"));
  auto const p = r.create("belady");
  EXPECT_EQ(p.name(), "belady");
  EXPECT_NE(p.target<belady_policy>(), nullptr);
  EXPECT_THROW((void)r.create("belady:lookahead=3"), tierpool::logic_error);
}

}  // namespace

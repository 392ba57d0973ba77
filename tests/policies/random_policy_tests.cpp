// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// random_policy_tests.cpp — POLICY_RANDOM_TEST: the conformance suite for random_policy (direct,
// type-erased and built by the registry), then random eviction's own behaviour with hand-worked
// eviction orders, pinning, registry parameters and determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/policies/random_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

namespace {

using tierpool::random_policy;

struct RandomFixture : ::testing::Test {
  static random_policy make() { return random_policy{{.seed = 42}}; }
};

using random_fixtures = ::testing::Types<RandomFixture, any_fixture<random_policy>, registry_fixture<"random:seed=1234">>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Random, PolicyConformance, random_fixtures);

namespace {

using tierpool::random_policy;

TEST(RandomPolicy, ProposesEveryCandidateOnceWhenShort)
{
  random_policy p;
  for (std::uint64_t i = 1; i <= 20; ++i) { p.on_insert(view(i, 10)); }
  auto o = order(p);
  ASSERT_EQ(o.size(), 20U);
  std::sort(o.begin(), o.end());
  for (std::uint64_t i = 1; i <= 20; ++i) { EXPECT_EQ(o[i - 1], tid(i)); }
  EXPECT_EQ(propose(p, 25).size(), 3U);  // 10 + 10 + 10 >= 25
}

TEST(RandomPolicy, SameSeedSameVictimsOtherSeedOtherVictims)
{
  random_policy a{{.seed = 42}};
  random_policy b{{.seed = 42}};
  random_policy c{{.seed = 43}};
  for (random_policy* p : {&a, &b, &c}) {
    for (std::uint64_t i = 1; i <= 32; ++i) { p->on_insert(view(i, 10)); }
  }
  EXPECT_EQ(order(a), order(b));
  EXPECT_NE(order(a), order(c));  // 32! orders: a collision would be a broken hash
  EXPECT_EQ(replay(random_policy{{.seed = 9}}), replay(random_policy{{.seed = 9}}));
}

TEST(RandomPolicy, ProposingChangesNothingButAnEraseDrawsAgain)
{
  random_policy p;
  for (std::uint64_t i = 1; i <= 32; ++i) { p.on_insert(view(i, 10)); }
  auto const first = order(p);
  EXPECT_EQ(order(p), first);
  EXPECT_EQ(propose(p, 30), std::vector<tierpool::tensor_id>(first.begin(), first.begin() + 3));
  EXPECT_TRUE(p.validate());
  p.on_erase(first.back());  // an erase moves the draw to fresh randomness
  auto const second = order(p);
  ASSERT_EQ(second.size(), 31U);
  EXPECT_NE(second, std::vector<tierpool::tensor_id>(first.begin(), first.end() - 1));
}

TEST(RandomPolicy, FirstVictimIsRoughlyUniform)
{
  // 4 equal tensors; after each round the first victim is erased and re-inserted. The
  // draw is deterministic, so the counts are fixed; each must be near 1000 / 4.
  random_policy p;
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(view(i, 10)); }
  std::size_t counts[5] = {};
  for (int round = 0; round < 1000; ++round) {
    auto const v = propose(p, 1);
    ASSERT_EQ(v.size(), 1U);
    auto const raw = static_cast<std::uint64_t>(v.front());
    ++counts[raw];
    p.on_erase(v.front());
    p.on_insert(view(raw, 10));
  }
  for (std::uint64_t i = 1; i <= 4; ++i) {
    EXPECT_GT(counts[i], 200U) << "tensor " << i;
    EXPECT_LT(counts[i], 300U) << "tensor " << i;
  }
}

TEST(RandomPolicy, PinnedTensorsAreNeverDrawn)
{
  random_policy p;
  for (std::uint64_t i = 1; i <= 6; ++i) { p.on_insert(view(i, 10, 0, /*pinned=*/i % 2 == 0)); }
  p.on_pin(tid(1));
  EXPECT_EQ(p.pinned_count(), 4U);
  auto o = order(p);
  std::sort(o.begin(), o.end());
  EXPECT_EQ(o, ids({3, 5}));
  p.on_unpin(tid(2));
  p.on_access(view(4, 10, 1, /*pinned=*/false));
  o = order(p);
  std::sort(o.begin(), o.end());
  EXPECT_EQ(o, ids({2, 3, 4, 5}));
  EXPECT_TRUE(p.validate());
}

TEST(RandomPolicy, RegistryParameters)
{
  auto const r = policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("random"));
  auto const& info = r.info("random");
  ASSERT_EQ(info.parameters.size(), 1U);
  EXPECT_EQ(info.parameters[0].name, "seed");
  EXPECT_EQ(info.parameters[0].default_value, "42");
  auto p = r.create("random:seed=7");
  ASSERT_NE(p.target<random_policy>(), nullptr);
  EXPECT_EQ(p.target<random_policy>()->get_config().seed, 7U);
  EXPECT_EQ(r.create("random").target<random_policy>()->get_config().seed, 42U);
  EXPECT_THROW((void)r.create("random:seed=-1"), tierpool::logic_error);
  EXPECT_THROW((void)r.create("random:seed=abc"), tierpool::logic_error);
  EXPECT_THROW((void)r.create("random:sed=1"), tierpool::logic_error);
}

}  // namespace

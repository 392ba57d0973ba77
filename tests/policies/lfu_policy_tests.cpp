// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lfu_policy_tests.cpp — POLICY_LFU_TEST: the conformance suite for lfu_policy (direct,
// type-erased and built by the registry), then LFU's own behaviour with hand-worked
// eviction orders, pinning, registry parameters and determinism.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/policies/lfu_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

namespace {

using tierpool::lfu_policy;

using lfu_fixtures = conformance_fixtures<lfu_policy, "lfu">;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Lfu, PolicyConformance, lfu_fixtures);

namespace {

using tierpool::lfu_policy;

TEST(LfuPolicy, LeastFrequentFirstLeastRecentAmongEquals)
{
  lfu_policy p;
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(view(i, 10, i)); }  // all frequency 1
  p.on_access(view(3, 10, 5));
  p.on_access(view(3, 10, 6));  // 3: frequency 3
  p.on_access(view(1, 10, 7));  // 1: frequency 2
  // frequency 1: 2 then 4 (insert order); 2: 1; 3: 3
  EXPECT_EQ(order(p), ids({2, 4, 1, 3}));
  EXPECT_EQ(p.frequency(tid(3)), 3U);
  EXPECT_EQ(p.bucket_count(), 3U);
  EXPECT_TRUE(p.validate());
}

TEST(LfuPolicy, TieBreakIsTheOrderOfReachingTheFrequency)
{
  lfu_policy p;
  p.on_insert(view(1, 10, 1));
  p.on_insert(view(2, 10, 2));
  p.on_access(view(2, 10, 3));  // 2 reaches frequency 2 first
  p.on_access(view(1, 10, 4));
  EXPECT_EQ(order(p), ids({2, 1}));
  p.on_insert(view(2, 10, 5));  // re-insert counts as an access: 2 at frequency 3
  EXPECT_EQ(order(p), ids({1, 2}));
  EXPECT_EQ(p.size(), 2U);
}

TEST(LfuPolicy, SizedProposals)
{
  lfu_policy p;
  p.on_insert(view(1, 100));
  p.on_insert(view(2, 30));
  p.on_insert(view(3, 5));
  p.on_access(view(1, 100));
  EXPECT_EQ(propose(p, 30), ids({2}));
  EXPECT_EQ(propose(p, 31), ids({2, 3}));
  EXPECT_EQ(propose(p, 36), ids({2, 3, 1}));
}

TEST(LfuPolicy, PinnedKeepTheirFrequencyAndBucket)
{
  lfu_policy p;
  p.on_insert(view(1, 10));
  p.on_insert(view(2, 10));
  p.on_access(view(1, 10));
  p.on_access(view(1, 10));  // 1: frequency 3, alone in its bucket
  p.on_pin(tid(1));
  EXPECT_EQ(order(p), ids({2}));
  EXPECT_EQ(p.bucket_count(), 2U);  // the pinned tensor keeps bucket 3 alive
  p.on_access(view(1, 10, 0, /*pinned=*/true));  // counts while pinned: 4
  EXPECT_EQ(p.frequency(tid(1)), 4U);
  p.on_access(view(2, 10));
  p.on_access(view(2, 10));
  p.on_access(view(2, 10));  // 2: frequency 4, ahead of 1 in that class
  p.on_unpin(tid(1));        // most recent of frequency 4
  EXPECT_EQ(order(p), ids({2, 1}));
  EXPECT_EQ(p.bucket_count(), 1U);
  p.on_erase(tid(2));
  p.on_erase(tid(1));
  EXPECT_EQ(p.bucket_count(), 0U);
  EXPECT_TRUE(p.validate());
}

TEST(LfuPolicy, HandWorkedTrace)
{
  // event            frequencies (bucket: least recent first)
  // insert A B C     1: A B C
  // access B         1: A C   2: B
  // access A         1: C     2: B A
  // access B         1: C     2: A   3: B
  // insert D         1: C D   2: A   3: B
  // erase C          1: D     2: A   3: B
  lfu_policy p;
  p.on_insert(view(0xA, 10));
  p.on_insert(view(0xB, 10));
  p.on_insert(view(0xC, 10));
  p.on_access(view(0xB, 10));
  p.on_access(view(0xA, 10));
  p.on_access(view(0xB, 10));
  p.on_insert(view(0xD, 10));
  EXPECT_EQ(order(p), ids({0xC, 0xD, 0xA, 0xB}));
  p.on_erase(tid(0xC));
  EXPECT_EQ(propose(p, 15), ids({0xD, 0xA}));
  EXPECT_TRUE(p.validate());
}

TEST(LfuPolicy, RegistryAndDeterminism)
{
  ASSERT_NO_FATAL_FAILURE(expect_registered<lfu_policy>("lfu", "lfu:aging=1"));
  EXPECT_EQ(replay(lfu_policy{}), replay(lfu_policy{}));
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// clock_policy_tests.cpp — POLICY_CLOCK_TEST: the conformance suite for clock_policy (direct,
// type-erased and built by the registry), then CLOCK's own behaviour with hand-worked
// eviction orders, pinning, registry parameters and determinism.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/policies/clock_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

namespace {

using tierpool::clock_policy;

using clock_fixtures = conformance_fixtures<clock_policy, "clock">;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Clock, PolicyConformance, clock_fixtures);

namespace {

TEST(ClockPolicy, HandWorkedSweep)
{
  // Circle from the hand: A B C D; A and C referenced.
  clock_policy p;
  for (std::uint64_t id : std::initializer_list<std::uint64_t>{0xA, 0xB, 0xC, 0xD}) { p.on_insert(view(id, 10)); }
  p.on_access(view(0xA, 10));
  p.on_access(view(0xC, 10));
  EXPECT_EQ(p.hand(), tid(0xA));
  EXPECT_EQ(order(p), ids({0xB, 0xD, 0xA, 0xC}));
  EXPECT_EQ(propose(p, 10), ids({0xB}));
  p.on_erase(tid(0xB));  // A passed (cleared), B evicted, hand at C
  EXPECT_FALSE(p.referenced(tid(0xA)));
  EXPECT_EQ(p.hand(), tid(0xC));
  p.on_insert(view(0xE, 10));  // into B's frame, just behind the hand: met last
  // From C: C passed, D, A (cleared before), E; then C.
  EXPECT_EQ(order(p), ids({0xD, 0xA, 0xE, 0xC}));
  EXPECT_TRUE(p.validate());
}

TEST(ClockPolicy, DiffersFromSieveWhereNewTensorsGo)
{
  // The same events as above on SIEVE put E at the head, ahead of A in the hand's path
  // (see SievePolicy): D E A C there, D A E C here.
  clock_policy p;
  for (std::uint64_t id : std::initializer_list<std::uint64_t>{0xA, 0xB, 0xC, 0xD}) { p.on_insert(view(id, 10)); }
  p.on_access(view(0xA, 10));
  p.on_access(view(0xC, 10));
  p.on_erase(tid(0xB));
  p.on_insert(view(0xE, 10));
  EXPECT_EQ(propose(p, 20), ids({0xD, 0xA}));
}

TEST(ClockPolicy, EveryBitSetMeansASecondLap)
{
  clock_policy p;
  for (std::uint64_t id = 1; id <= 3; ++id) { p.on_insert(view(id, 10)); }
  for (std::uint64_t id = 1; id <= 3; ++id) { p.on_access(view(id, 10)); }
  EXPECT_EQ(order(p), ids({1, 2, 3}));
  p.on_erase(tid(1));  // one sweep clears 2 and 3 and comes back to 1
  EXPECT_FALSE(p.referenced(tid(2)));
  EXPECT_FALSE(p.referenced(tid(3)));
  p.on_insert(view(4, 10));  // behind the hand (at 2): 2 3 4
  EXPECT_EQ(order(p), ids({2, 3, 4}));
  EXPECT_TRUE(p.validate());
}

TEST(ClockPolicy, AFreeDoesNotMoveTheHand)
{
  clock_policy p;
  for (std::uint64_t id = 1; id <= 4; ++id) { p.on_insert(view(id, 10)); }
  p.on_access(view(1, 10));
  p.on_erase(tid(3));  // the next victim is 2: 3 is freed, 1 keeps its bit
  EXPECT_TRUE(p.referenced(tid(1)));
  EXPECT_EQ(p.hand(), tid(1));
  EXPECT_EQ(order(p), ids({2, 4, 1}));
}

TEST(ClockPolicy, PinnedTensorsLeaveTheCircle)
{
  clock_policy p;
  for (std::uint64_t id = 1; id <= 4; ++id) { p.on_insert(view(id, 10)); }
  p.on_pin(tid(2));
  EXPECT_EQ(order(p), ids({1, 3, 4}));
  p.on_access(view(2, 10, 0, /*pinned=*/true));  // referenced while pinned
  p.on_unpin(tid(2));                            // just behind the hand, bit kept
  EXPECT_TRUE(p.referenced(tid(2)));
  EXPECT_EQ(order(p), ids({1, 3, 4, 2}));
  EXPECT_TRUE(p.validate());
}

TEST(ClockPolicy, RegistryAndDeterminism)
{
  ASSERT_NO_FATAL_FAILURE(expect_registered<clock_policy>("clock", "clock:bits=2"));
  EXPECT_EQ(replay(clock_policy{}), replay(clock_policy{}));
  expect_propose_twice_same(clock_policy{}, /*access_first=*/true);
}

}  // namespace

namespace {

// CLOCK as in the textbook, on a vector: the hand at `hand`, a new page just behind it.
struct clock_reference : bit_hand_reference {
  void insert(std::uint64_t id, std::size_t)
  {
    q.insert(q.begin() + static_cast<std::ptrdiff_t>(hand), obj{id, false});
    if (q.size() > 1) { ++hand; }  // the hand stays on its page
  }
};

TEST(ClockPolicy, MatchesTheTextbookAlgorithmOnRandomTraces)
{
  for (std::uint64_t seed : {1ULL, 2ULL, 3ULL, 42ULL}) { cross_check(clock_reference{}, clock_policy{}, seed); }
}

}  // namespace

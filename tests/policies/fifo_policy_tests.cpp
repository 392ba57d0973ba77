// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// fifo_policy_tests.cpp — POLICY_FIFO_TEST: the conformance suite for fifo_policy (direct,
// type-erased and built by the registry), then FIFO's own behaviour with hand-worked
// eviction orders, pinning, registry parameters and determinism.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/policies/fifo_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

namespace {

using tierpool::fifo_policy;

using fifo_fixtures = conformance_fixtures<fifo_policy, "fifo">;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Fifo, PolicyConformance, fifo_fixtures);

namespace {

TEST(FifoPolicy, EvictsInInsertionOrderWhateverTheAccesses)
{
  fifo_policy p;
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(view(i, 10, i)); }
  p.on_access(view(1, 10, 5));
  p.on_access(view(3, 10, 6, false, /*write=*/true));
  EXPECT_EQ(order(p), ids({1, 2, 3, 4}));
  EXPECT_TRUE(p.validate());
}

TEST(FifoPolicy, StopsOnceTheBytesAreCovered)
{
  fifo_policy p;
  p.on_insert(view(1, 10));
  p.on_insert(view(2, 30));
  p.on_insert(view(3, 5));
  p.on_insert(view(4, 50));
  EXPECT_EQ(propose(p, 10), ids({1}));
  EXPECT_EQ(propose(p, 11), ids({1, 2}));
  EXPECT_EQ(propose(p, 41), ids({1, 2, 3}));
  EXPECT_EQ(propose(p, 1000), ids({1, 2, 3, 4}));
  EXPECT_TRUE(propose(p, 0).empty());
  EXPECT_EQ(p.evictable_bytes(), 95U);
}

TEST(FifoPolicy, PinnedTensorsLeaveTheQueueAndReenterNewest)
{
  fifo_policy p;
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(view(i, 10, i)); }
  p.on_pin(tid(1));
  p.on_pin(tid(1));  // idempotent
  EXPECT_EQ(order(p), ids({2, 3, 4}));
  EXPECT_EQ(p.pinned_count(), 1U);
  p.on_unpin(tid(1));
  EXPECT_EQ(order(p), ids({2, 3, 4, 1}));
  p.on_insert(view(5, 10, 6, /*pinned=*/true));  // inserted pinned
  p.on_access(view(2, 10, 7, /*pinned=*/true));  // the view's flag is adopted
  EXPECT_EQ(order(p), ids({3, 4, 1}));
  p.on_access(view(5, 10, 8, /*pinned=*/false));
  EXPECT_EQ(order(p), ids({3, 4, 1, 5}));
  EXPECT_TRUE(p.validate());
}

TEST(FifoPolicy, ReinsertOfAKnownIdKeepsItsPlace)
{
  fifo_policy p;
  p.on_insert(view(1, 10, 1));
  p.on_insert(view(2, 10, 2));
  p.on_insert(view(1, 25, 3));  // an access for FIFO: size adopted, place kept
  EXPECT_EQ(p.size(), 2U);
  EXPECT_EQ(order(p), ids({1, 2}));
  EXPECT_EQ(p.evictable_bytes(), 35U);
  EXPECT_EQ(propose(p, 25), ids({1}));
}

TEST(FifoPolicy, HandWorkedTrace)
{
  // event                 queue (oldest first)   pinned
  // insert A(40) B(20) C(30)  A B C
  // access A              A B C
  // pin B                 A C                    B
  // insert D(10)          A C D                  B
  // erase A               C D                    B
  // unpin B               C D B
  fifo_policy p;
  p.on_insert(view(0xA, 40, 1));
  p.on_insert(view(0xB, 20, 2));
  p.on_insert(view(0xC, 30, 3));
  p.on_access(view(0xA, 40, 4));
  p.on_pin(tid(0xB));
  p.on_insert(view(0xD, 10, 6));
  EXPECT_EQ(propose(p, 45), ids({0xA, 0xC}));
  p.on_erase(tid(0xA));
  p.on_unpin(tid(0xB));
  EXPECT_EQ(order(p), ids({0xC, 0xD, 0xB}));
  EXPECT_EQ(propose(p, 35), ids({0xC, 0xD}));
  EXPECT_TRUE(p.validate());
}

TEST(FifoPolicy, RegistryBuildsItAndRejectsParameters)
{
  auto const r = policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("fifo"));
  EXPECT_TRUE(r.info("fifo").parameters.empty());
  auto p = r.create("fifo");
  EXPECT_EQ(p.name(), "fifo");
  EXPECT_NE(p.target<fifo_policy>(), nullptr);
  EXPECT_THROW((void)r.create("fifo:capacity=1"), tierpool::logic_error);
}

TEST(FifoPolicy, DeterministicAndProposingTwiceGivesTheSameAnswer)
{
  EXPECT_EQ(replay(fifo_policy{}), replay(fifo_policy{}));
  expect_propose_twice_same(fifo_policy{}, /*access_first=*/false);
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// repeat_policy_tests.cpp — POLICY_REPEAT_TEST: the conformance suite for repeat_policy
// (default, a tight configuration, type-erased), hand-worked predictions (last distance,
// the phase of a tensor used twice per iteration, history across an eviction, the history
// bound), the victim order (no history, overdue, furthest), and the point of the policy:
// on cyclic traces where LRU evicts exactly what is needed next, a tiny cache simulator
// counts the misses of lru, repeat and belady (fed the true next uses), and repeat must
// come close to belady and far below lru.
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
#include <tierpool/policies/repeat_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

namespace {

using tierpool::any_eviction_policy;
using tierpool::eviction_proposal;
using tierpool::eviction_request;
using tierpool::no_next_use;
using tierpool::repeat_policy;
using tierpool::tensor_view;
using tierpool::tick;

struct RepeatFixture : ::testing::Test {
  static repeat_policy make() { return repeat_policy{}; }
};
struct RepeatTightFixture : ::testing::Test {
  static repeat_policy make() { return repeat_policy{{.history = 2, .grace = 5, .correlation_window = 0}}; }
};
struct AnyRepeatFixture : ::testing::Test {
  static any_eviction_policy make() { return tierpool::policy_registry::with_builtins().create("repeat:history=16"); }
};
using repeat_fixtures = ::testing::Types<RepeatFixture, RepeatTightFixture, AnyRepeatFixture>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Repeat, PolicyConformance, repeat_fixtures);

namespace {

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

constexpr repeat_policy::config paper_like{.history = 65536, .grace = 2, .correlation_window = 0};

TEST(RepeatPolicy, PredictsFromTheLastReuseDistance)
{
  repeat_policy p{paper_like};
  p.on_insert(forecast_view(1));  // position 1
  p.on_insert(forecast_view(2));  // 2
  p.on_insert(forecast_view(3));  // 3
  p.on_access(forecast_view(1));  // 4: distance 3, next use predicted at 7
  p.on_access(forecast_view(2));  // 5: distance 3, next at 8
  EXPECT_EQ(p.position(), 5U);
  EXPECT_EQ(p.predicted_use(tid(1)), 7U);
  EXPECT_EQ(p.predicted_use(tid(2)), 8U);
  EXPECT_EQ(p.predicted_use(tid(3)), std::nullopt);  // no reuse seen yet
  // No history first (3), then the furthest predicted use (2 at 8, then 1 at 7).
  EXPECT_EQ(propose(p, SIZE_MAX), ids({3, 2, 1}));
  EXPECT_EQ(propose(p, 2), ids({3, 2}));
  EXPECT_TRUE(p.validate());
}

TEST(RepeatPolicy, LearnsThePhaseOfATensorUsedTwicePerIteration)
{
  // Tensor 1 is used with distances 2, 5, 2, 5, ... (forward and backward of one weight);
  // every other event is a new filler tensor.
  repeat_policy p{paper_like};
  std::uint64_t filler = 100;
  auto fill = [&](int n) {
    for (int i = 0; i < n; ++i) { p.on_insert(forecast_view(filler++)); }
  };
  p.on_insert(forecast_view(1));  // 1
  fill(1);
  p.on_access(forecast_view(1));  // 3: d = 2
  fill(4);
  p.on_access(forecast_view(1));  // 8: d = 5
  fill(1);
  p.on_access(forecast_view(1));  // 10: d = 2
  fill(4);
  p.on_access(forecast_view(1));  // 15: d = 5; distances 5 2 5 2 repeat every 2: next is 2
  EXPECT_EQ(p.predicted_use(tid(1)), 17U);
  fill(1);
  p.on_access(forecast_view(1));  // 17: d = 2; next is 5
  EXPECT_EQ(p.predicted_use(tid(1)), 22U);
  EXPECT_TRUE(p.validate());
}

TEST(RepeatPolicy, HistorySurvivesEvictionWithinItsBound)
{
  repeat_policy p{{.history = 2, .grace = 2, .correlation_window = 0}};
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(forecast_view(i)); }  // positions 1..4
  p.on_erase(tid(1));
  EXPECT_EQ(p.remembered(), 1U);
  p.on_insert(forecast_view(1));  // 5: back after 4 events
  EXPECT_EQ(p.predicted_use(tid(1)), 9U);
  p.on_erase(tid(2));
  p.on_erase(tid(3));
  p.on_erase(tid(4));  // three remembered, bound 2: 2 is forgotten
  EXPECT_EQ(p.remembered(), 2U);
  p.on_insert(forecast_view(2));  // 6: no history any more
  p.on_insert(forecast_view(3));  // 7: back after 4 events
  EXPECT_EQ(p.predicted_use(tid(2)), std::nullopt);
  EXPECT_EQ(p.predicted_use(tid(3)), 11U);
  EXPECT_TRUE(p.validate());
}

TEST(RepeatPolicy, OverduePredictionsGoBeforeFutureOnes)
{
  repeat_policy p{paper_like};  // grace 2
  p.on_insert(forecast_view(1));         // 1
  p.on_insert(forecast_view(2));         // 2
  p.on_access(forecast_view(1));         // 3: predicted 5
  p.on_access(forecast_view(2));         // 4: predicted 6
  p.on_insert(forecast_view(3));         // 5
  p.on_access(forecast_view(3));         // 6: d = 1, predicted 7
  EXPECT_EQ(propose(p, SIZE_MAX), ids({3, 2, 1}));  // none overdue: furthest first
  p.on_insert(forecast_view(4));  // 7
  p.on_insert(forecast_view(5));  // 8: 1 (predicted 5) is now more than 2 events late
  EXPECT_EQ(propose(p, SIZE_MAX), ids({4, 5, 1, 3, 2}));
  EXPECT_EQ(p.grace(), 2U);
}

TEST(RepeatPolicy, CorrelatedReaccessRecordsNoDistance)
{
  repeat_policy p;  // correlation_window = 1
  p.on_insert(forecast_view(1));  // 1
  p.on_access(forecast_view(1));  // 2: the same use (allocate, then acquire)
  EXPECT_EQ(p.predicted_use(tid(1)), std::nullopt);
  p.on_insert(forecast_view(2));  // 3
  p.on_access(forecast_view(1));  // 4: distance 2 from the last use
  EXPECT_EQ(p.predicted_use(tid(1)), 6U);
}

TEST(RepeatPolicy, APrefetchIsNotAUse)
{
  // Tensor 1 is used every 2 events. Evicted and prefetched back one event before its use,
  // its next use stays predicted from its last use, and the use after the prefetch teaches
  // the distance 2, not 1.
  repeat_policy p{paper_like};
  p.on_insert(forecast_view(1));  // 1
  p.on_insert(forecast_view(2));  // 2
  p.on_access(forecast_view(1));  // 3: d = 2, next use predicted at 5
  p.on_erase(tid(1));
  tensor_view ahead = forecast_view(1);
  ahead.prefetch = true;
  p.on_insert(ahead);  // no position of its own
  EXPECT_EQ(p.position(), 3U);
  EXPECT_EQ(p.predicted_use(tid(1)), 5U);
  p.on_access(forecast_view(2));  // 4
  p.on_access(forecast_view(1));  // 5: d = 2 again: predicted 7
  EXPECT_EQ(p.predicted_use(tid(1)), 7U);
  // A tensor first seen through a prefetch: resident, no distance yet.
  tensor_view first = forecast_view(3);
  first.prefetch = true;
  p.on_insert(first);
  EXPECT_EQ(p.position(), 5U);
  EXPECT_EQ(p.predicted_use(tid(3)), std::nullopt);
  p.on_access(forecast_view(3));  // 6: its first use, 1 event after the prefetch: no reuse yet
  EXPECT_EQ(p.predicted_use(tid(3)), std::nullopt);
  p.on_access(forecast_view(2));  // 7
  p.on_access(forecast_view(3));  // 8: d = 2 from its first use: predicted 10
  EXPECT_EQ(p.predicted_use(tid(3)), 10U);
  EXPECT_TRUE(p.validate());
}

TEST(RepeatPolicy, PinnedTensorsAreSkipped)
{
  repeat_policy p{paper_like};
  p.on_insert(forecast_view(1));
  p.on_insert(forecast_view(2));
  p.on_pin(tid(1));
  EXPECT_EQ(propose(p, SIZE_MAX), ids({2}));
  p.on_unpin(tid(1));
  EXPECT_EQ(propose(p, SIZE_MAX), ids({1, 2}));
  p.on_access(forecast_view(2, 1, std::nullopt, /*pinned=*/true));
  EXPECT_EQ(propose(p, SIZE_MAX), ids({1}));
}

struct comparison {
  std::size_t lru, repeat, belady;
};

comparison compare(std::vector<std::uint64_t> const& seq, std::size_t capacity)
{
  tierpool::lru_policy lru;
  repeat_policy rep;
  tierpool::belady_policy min;
  comparison c{misses(lru, seq, capacity, false), misses(rep, seq, capacity, false), misses(min, seq, capacity, true)};
  EXPECT_TRUE(rep.validate());
  return c;
}

TEST(RepeatPolicy, NearBeladyOnALoopWhereLruMissesEverything)
{
  // 30 iterations of a loop over 10 tensors, room for 6.
  std::vector<std::uint64_t> seq;
  for (int it = 0; it < 30; ++it) {
    for (std::uint64_t i = 1; i <= 10; ++i) { seq.push_back(i); }
  }
  comparison const c = compare(seq, 6);
  RecordProperty("lru", static_cast<int>(c.lru));
  RecordProperty("repeat", static_cast<int>(c.repeat));
  RecordProperty("belady", static_cast<int>(c.belady));
  EXPECT_EQ(c.lru, 300U);  // LRU evicts exactly the tensor the loop needs next
  EXPECT_EQ(c.belady, 138U);
  EXPECT_EQ(c.repeat, 144U);
  // repeat loses to MIN only while it learns (the first two iterations: at most 10 misses
  // more), and misses less than half as often as LRU.
  EXPECT_LE(c.repeat, c.belady + 10);
  EXPECT_LT(2 * c.repeat, c.lru);
}

TEST(RepeatPolicy, NearBeladyOnTrainingIterations)
{
  // Training-shaped: every iteration uses weights 1..8 forward, 8..1 backward and 1..8 in
  // the optimizer step (three uses per iteration, so three distances that repeat), room
  // for 5. The step ends with 8, the next forward starts with 1: LRU evicts what comes next.
  std::vector<std::uint64_t> seq;
  for (int it = 0; it < 30; ++it) {
    for (std::uint64_t w = 1; w <= 8; ++w) { seq.push_back(w); }
    for (std::uint64_t w = 8; w >= 1; --w) { seq.push_back(w); }
    for (std::uint64_t w = 1; w <= 8; ++w) { seq.push_back(w); }
  }
  comparison const c = compare(seq, 5);
  EXPECT_EQ(c.lru, 420U);
  EXPECT_EQ(c.belady, 275U);
  EXPECT_EQ(c.repeat, 279U);
  EXPECT_LE(c.repeat, c.belady + 8);
  EXPECT_LT(3 * c.repeat, 2 * c.lru);
}

TEST(RepeatPolicy, NearBeladyOnALoopWithAHotTensor)
{
  // Tensor 99 between every two loop accesses (a shared buffer), loop over 10, room for 6.
  std::vector<std::uint64_t> seq;
  for (int it = 0; it < 30; ++it) {
    for (std::uint64_t i = 1; i <= 10; ++i) {
      seq.push_back(99);
      seq.push_back(i);
    }
  }
  comparison const c = compare(seq, 6);
  EXPECT_EQ(c.lru, 301U);  // the hot tensor stays; the loop misses every time
  EXPECT_EQ(c.belady, 171U);
  EXPECT_EQ(c.repeat, 176U);
  EXPECT_LE(c.repeat, c.belady + 11);
  EXPECT_LT(3 * c.repeat, 2 * c.lru);
}

TEST(RepeatPolicy, Registry)
{
  auto const r = tierpool::policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("repeat"));
  auto const& info = r.info("repeat");
  ASSERT_EQ(info.parameters.size(), 3U);
  EXPECT_EQ(info.parameters[0].name, "history");
  EXPECT_EQ(info.parameters[0].default_value, "65536");
  EXPECT_EQ(info.parameters[1].name, "grace");
  EXPECT_EQ(info.parameters[2].name, "correlation_window");
  auto const p = r.create("repeat:history=10,grace=4,correlation_window=0");
  repeat_policy const* const rp = p.target<repeat_policy>();
  ASSERT_NE(rp, nullptr);
  repeat_policy::config const cfg = rp->get_config();
  EXPECT_EQ(cfg.history, 10U);
  EXPECT_EQ(cfg.grace, 4U);
  EXPECT_EQ(cfg.correlation_window, 0U);
  EXPECT_THROW((void)r.create("repeat:history=4294967296"), tierpool::logic_error);
  EXPECT_THROW((void)r.create("repeat:grace=soon"), tierpool::logic_error);
}

}  // namespace

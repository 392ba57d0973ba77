// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// s3fifo_policy_tests.cpp — POLICY_S3FIFO_TEST: the conformance suite for s3fifo_policy (direct,
// type-erased and built by the registry), then S3-FIFO's own behaviour with hand-worked
// eviction orders, pinning, registry parameters and determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <utility>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/policies/s3fifo_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

namespace {

using tierpool::s3fifo_policy;

using s3fifo_fixtures = conformance_fixtures<s3fifo_policy, "s3fifo:small_ratio=0.2">;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(S3Fifo, PolicyConformance, s3fifo_fixtures);

namespace {

TEST(S3FifoPolicy, OneHitTensorsLeaveFromSmallRepeatedOnesMoveToMain)
{
  s3fifo_policy p;  // small_ratio 0.1
  for (std::uint64_t id = 1; id <= 10; ++id) { p.on_insert(view(id, 10)); }  // S: 1..10
  p.on_access(view(1, 10));
  p.on_access(view(1, 10));  // 1: freq 2
  p.on_access(view(2, 10));  // 2: freq 1
  // S holds everything: 1 (freq 2) moves to M, 2 is evicted, then 3..10 (S stays >= 10%
  // of S + M down to its last tensor), then M: 1 goes round twice (freq 2 -> 1 -> 0).
  EXPECT_EQ(order(p), ids({2, 3, 4, 5, 6, 7, 8, 9, 10, 1}));
  EXPECT_EQ(propose(p, 10), ids({2}));
  p.on_erase(tid(2));  // applies the move: 1 in M, 2 a ghost
  EXPECT_TRUE(p.in_main(tid(1)));
  EXPECT_EQ(p.frequency(tid(1)), 2U);
  EXPECT_TRUE(p.is_ghost(tid(2)));
  p.on_insert(view(2, 10));  // a miss on a ghost: into M, freq 0
  EXPECT_TRUE(p.in_main(tid(2)));
  EXPECT_EQ(p.frequency(tid(2)), 0U);
  // S: 3..10 (80 B), M: 1 (freq 2), 2 (freq 0). S first; then M: 1 reinserted, 2 evicted,
  // 1 reinserted again (freq 0), evicted.
  EXPECT_EQ(order(p), ids({3, 4, 5, 6, 7, 8, 9, 10, 2, 1}));
  for (std::uint64_t id = 3; id <= 10; ++id) { p.on_erase(tid(id)); }
  EXPECT_EQ(p.small_count(), 0U);
  EXPECT_EQ(propose(p, 10), ids({2}));
  p.on_erase(tid(2));  // M: 1 was passed once (freq 2 -> 1); M victims leave no ghost
  EXPECT_EQ(p.frequency(tid(1)), 1U);
  EXPECT_FALSE(p.is_ghost(tid(2)));
  EXPECT_TRUE(p.validate());
}

TEST(S3FifoPolicy, SmallIsDrainedIntoMainWhenAllOfItIsHot)
{
  s3fifo_policy p;
  p.on_insert(view(1, 10));
  p.on_insert(view(9, 100));
  p.on_access(view(1, 10));
  p.on_access(view(1, 10));
  p.on_access(view(9, 100));
  p.on_access(view(9, 100));
  // S: 1 (freq 2), 9 (freq 2); M empty. evictS moves both to M and finds no victim; evictM
  // then passes 1 and 9 twice each: 1 (now freq 0) is evicted first, then 9.
  EXPECT_EQ(propose(p, 10), ids({1}));
  EXPECT_EQ(propose(p, 100), ids({1, 9}));
  p.on_erase(tid(1));
  EXPECT_TRUE(p.in_main(tid(9)));
  EXPECT_EQ(p.frequency(tid(9)), 0U);
  EXPECT_EQ(p.small_count(), 0U);
  EXPECT_TRUE(p.validate());
}

TEST(S3FifoPolicy, MainPassesLowerFrequenciesAndReinsert)
{
  s3fifo_policy p;
  for (std::uint64_t id = 1; id <= 3; ++id) { p.on_insert(view(id, 10)); }
  for (std::uint64_t id = 1; id <= 3; ++id) {  // all to M with freq 2 after draining S
    p.on_access(view(id, 10));
    p.on_access(view(id, 10));
  }
  p.on_access(view(2, 10));  // 2: freq 3
  // Drain: M = 1 (2), 2 (3), 3 (2). Two passes lower all by 2: 1 (0) evicted first,
  // then 3 (0) after 2 (1) is reinserted, then 2.
  EXPECT_EQ(order(p), ids({1, 3, 2}));
  p.on_erase(tid(1));
  EXPECT_EQ(p.main_count(), 2U);
  EXPECT_EQ(p.frequency(tid(2)), 1U);
  EXPECT_EQ(p.frequency(tid(3)), 0U);
  EXPECT_EQ(order(p), ids({3, 2}));
  p.on_erase(tid(2));  // not the next victim (3 is): freed, nothing moves
  EXPECT_EQ(p.frequency(tid(3)), 0U);
  EXPECT_TRUE(p.validate());
}

TEST(S3FifoPolicy, PinnedTensorsReturnToTheirQueue)
{
  s3fifo_policy p;
  for (std::uint64_t id = 1; id <= 4; ++id) { p.on_insert(view(id, 10)); }
  p.on_pin(tid(1));
  EXPECT_EQ(order(p), ids({2, 3, 4}));
  p.on_access(view(1, 10, 0, /*pinned=*/true));
  p.on_access(view(1, 10, 0, /*pinned=*/true));  // counts while pinned
  p.on_unpin(tid(1));  // S's head, freq 2
  EXPECT_EQ(p.frequency(tid(1)), 2U);
  EXPECT_EQ(order(p), ids({2, 3, 4, 1}));
  EXPECT_TRUE(p.validate());
}

TEST(S3FifoPolicy, SmallRatioDecidesTheQueue)
{
  // M: 1 (90 B, freq 0) after a ghost hit; S: 2 (10 B). 10 >= 0.1 * 100: S first. With
  // small_ratio 0.2, 10 < 20: M first.
  for (double ratio : {0.1, 0.2}) {
    s3fifo_policy p{{.small_ratio = ratio, .ghost_ratio = 0.9}};
    p.on_insert(view(1, 90));
    p.on_insert(view(3, 900));
    p.on_erase(tid(1));  // S's tail, freq 0: the next victim, a ghost (90 <= 0.9 * 900)
    ASSERT_TRUE(p.is_ghost(tid(1)));
    p.on_insert(view(1, 90));  // into M
    p.on_insert(view(2, 10));  // S: 3 2
    ASSERT_TRUE(p.in_main(tid(1)));
    p.on_erase(tid(3));  // the next victim again; its ghost (900 B) exceeds 0.9 * 100: trimmed
    EXPECT_FALSE(p.is_ghost(tid(3)));
    EXPECT_EQ(propose(p, 1), ratio == 0.1 ? ids({2}) : ids({1}));
    EXPECT_TRUE(p.validate());
  }
}

TEST(S3FifoPolicy, RegistryParametersAndErrors)
{
  auto const r = policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("s3fifo"));
  auto p = r.create("s3fifo:small_ratio=0.2");
  ASSERT_NE(p.target<s3fifo_policy>(), nullptr);
  EXPECT_DOUBLE_EQ(p.target<s3fifo_policy>()->get_config().small_ratio, 0.2);
  EXPECT_DOUBLE_EQ(p.target<s3fifo_policy>()->get_config().ghost_ratio, 0.9);
  for (std::string_view spec : {"s3fifo:small_ratio=0", "s3fifo:small_ratio=1", "s3fifo:small_ratio=1.5",
                                "s3fifo:ghost_ratio=-0.1", "s3fifo:small_ratio=x", "s3fifo:ratio=0.1"}) {
    EXPECT_THROW((void)r.create(spec), tierpool::logic_error) << spec;
  }
  EXPECT_THROW((s3fifo_policy{{.small_ratio = -1.0}}), tierpool::logic_error);
}

TEST(S3FifoPolicy, DeterministicUnderReplayWithEvictions)
{
  EXPECT_EQ(replay(s3fifo_policy{}), replay(s3fifo_policy{}));
  EXPECT_EQ(replay(s3fifo_policy{{.small_ratio = 0.5, .ghost_ratio = 2.0}}),
            replay(s3fifo_policy{{.small_ratio = 0.5, .ghost_ratio = 2.0}}));
}

}  // namespace

namespace {

// S3-FIFO as in the paper's Algorithm 1 (evictS / evictM, freq capped at 3), with the byte
// ratios of this implementation, on deques.
struct s3fifo_reference {
  double small_ratio{0.1};
  double ghost_ratio{0.9};
  std::deque<std::uint64_t> s, m;
  std::deque<std::pair<std::uint64_t, std::size_t>> g;
  std::map<std::uint64_t, std::pair<std::size_t, int>> info;  // id -> bytes, freq
  double sb{0}, mb{0}, gb{0};
  [[nodiscard]] bool empty() const { return s.empty() && m.empty(); }
  static void drop(std::deque<std::uint64_t>& d, std::uint64_t id) { d.erase(std::find(d.begin(), d.end(), id)); }
  void insert(std::uint64_t id, std::size_t bytes)
  {
    auto const git = std::find_if(g.begin(), g.end(), [&](auto const& e) { return e.first == id; });
    info[id] = {bytes, 0};
    if (git != g.end()) {
      gb -= static_cast<double>(git->second);
      g.erase(git);
      m.push_back(id);
      mb += static_cast<double>(bytes);
    } else {
      s.push_back(id);
      sb += static_cast<double>(bytes);
    }
  }
  void access(std::uint64_t id) { info[id].second = std::min(info[id].second + 1, 3); }
  void plain_free(std::uint64_t id)
  {
    auto const b = static_cast<double>(info[id].first);
    if (std::find(s.begin(), s.end(), id) != s.end()) {
      drop(s, id);
      sb -= b;
    } else {
      drop(m, id);
      mb -= b;
    }
    info.erase(id);
  }
  // A free of the tensor the algorithm would evict next is indistinguishable from its
  // eviction for the policy (see its Note): it applies the same moves.
  void free(std::uint64_t id)
  {
    auto copy = *this;
    if (copy.evict() == id) {
      (void)evict();
    } else {
      plain_free(id);
    }
  }
  std::uint64_t evict()
  {
    for (;;) {
      if (!s.empty() && (m.empty() || sb >= small_ratio * (sb + mb))) {
        while (!s.empty()) {
          std::uint64_t const t = s.front();
          s.pop_front();
          auto const b = static_cast<double>(info[t].first);
          sb -= b;
          if (info[t].second > 1) {
            m.push_back(t);
            mb += b;
            continue;
          }
          g.emplace_back(t, info[t].first);
          gb += b;
          while (!g.empty() && gb > ghost_ratio * (sb + mb)) {
            gb -= static_cast<double>(g.front().second);
            g.pop_front();
          }
          info.erase(t);
          return t;
        }
        continue;  // S drained into M, no victim: choose again
      }
      for (;;) {
        std::uint64_t const t = m.front();
        m.pop_front();
        if (info[t].second > 0) {
          --info[t].second;
          m.push_back(t);
          continue;
        }
        mb -= static_cast<double>(info[t].first);
        info.erase(t);
        return t;
      }
    }
  }
};

TEST(S3FifoPolicy, MatchesThePaperAlgorithmOnRandomTraces)
{
  for (std::uint64_t seed : {1ULL, 2ULL, 3ULL, 42ULL}) {
    cross_check(s3fifo_reference{}, s3fifo_policy{}, seed);
    cross_check([] {
      s3fifo_reference r;
      r.small_ratio = 0.3;
      r.ghost_ratio = 0.5;
      return r;
    }(), s3fifo_policy{{.small_ratio = 0.3, .ghost_ratio = 0.5}}, seed);
  }
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// two_q_policy_tests.cpp — POLICY_TWO_Q_TEST: the conformance suite for two_q_policy (direct,
// type-erased and built by the registry), then 2Q's own behaviour with hand-worked
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
#include <tierpool/policies/two_q_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

namespace {

using tierpool::two_q_policy;

using two_q_fixtures = conformance_fixtures<two_q_policy, "two_q:kin=0.3,kout=1">;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(TwoQ, PolicyConformance, two_q_fixtures);

namespace {

TEST(TwoQPolicy, NewTensorsStayInA1inWhateverTheAccesses)
{
  two_q_policy p;
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(view(i, 10, i)); }
  for (int k = 0; k < 5; ++k) { p.on_access(view(1, 10)); }  // correlated references: no promotion
  EXPECT_EQ(p.a1in_count(), 4U);
  EXPECT_EQ(p.am_count(), 0U);
  EXPECT_EQ(order(p), ids({1, 2, 3, 4}));
}

TEST(TwoQPolicy, AnA1inVictimBecomesAGhostAndComesBackIntoAm)
{
  two_q_policy p;  // kin 0.25, kout 0.5
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(view(i, 10, i)); }
  EXPECT_EQ(propose(p, 10), ids({1}));
  p.on_erase(tid(1));  // the front of A1in while Am is empty: 2Q's victim -> A1out
  EXPECT_TRUE(p.is_ghost(tid(1)));
  EXPECT_FALSE(p.contains(tid(1)));
  EXPECT_EQ(p.ghost_count(), 1U);  // 10 <= 0.5 * 30
  p.on_erase(tid(1));  // a ghost is not resident: no-op
  EXPECT_TRUE(p.is_ghost(tid(1)));
  p.on_insert(view(1, 10, 5));  // a miss on a remembered id: into Am
  EXPECT_FALSE(p.is_ghost(tid(1)));
  EXPECT_EQ(p.am_count(), 1U);
  // A1in = 2 3 4 (30 B), Am = 1 (10 B): 30 > 0.25 * 40, so A1in first, and it stays above
  // Kin as it shrinks (20 > 7.5, 10 > 5); then Am.
  EXPECT_EQ(order(p), ids({2, 3, 4, 1}));
  EXPECT_TRUE(p.validate());
}

TEST(TwoQPolicy, AmIsEvictedWhileA1inIsWithinKin)
{
  two_q_policy p{{.kin = 0.25, .kout = 1.0}};
  p.on_insert(view(0xA, 30));
  p.on_insert(view(0xB, 30));
  p.on_insert(view(0xF, 100));
  p.on_erase(tid(0xA));  // A1in front, Am empty: ghost
  p.on_erase(tid(0xB));  // ghost; A1out = 60 <= 1.0 * 100
  EXPECT_EQ(p.ghost_count(), 2U);
  p.on_insert(view(0xA, 30));
  p.on_insert(view(0xB, 30));  // Am: A B
  p.on_erase(tid(0xF));        // A1in = F (100) > 0.25 * 160: 2Q's victim, but 100 > 1.0 * 60: trimmed
  EXPECT_FALSE(p.is_ghost(tid(0xF)));
  EXPECT_EQ(p.ghost_count(), 0U);
  p.on_insert(view(0xC, 10));  // A1in: C (10); Am: A B (60)
  // 10 > 0.25 * 70? no: Am's LRU end A. Then 10 > 0.25 * 40? no (not strictly): B. Then C.
  EXPECT_EQ(order(p), ids({0xA, 0xB, 0xC}));
  p.on_access(view(0xA, 30));  // Am is LRU: A becomes most recent
  EXPECT_EQ(order(p), ids({0xB, 0xA, 0xC}));
  p.on_erase(tid(0xB));  // an Am victim leaves no ghost
  EXPECT_FALSE(p.is_ghost(tid(0xB)));
  p.on_erase(tid(0xC));  // A1in front, but A1in is within Kin: not 2Q's victim, no ghost
  EXPECT_FALSE(p.is_ghost(tid(0xC)));
  EXPECT_TRUE(p.validate());
}

TEST(TwoQPolicy, AFreedTensorLeavesNoGhost)
{
  two_q_policy p;
  for (std::uint64_t i = 1; i <= 3; ++i) { p.on_insert(view(i, 10)); }
  p.on_erase(tid(2));  // not the front of A1in: freed, not evicted
  EXPECT_FALSE(p.is_ghost(tid(2)));
  EXPECT_EQ(p.ghost_count(), 0U);
}

TEST(TwoQPolicy, PinnedTensorsReturnToTheirQueue)
{
  two_q_policy p;
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(view(i, 10)); }
  p.on_erase(tid(1));
  p.on_insert(view(1, 10));  // Am: 1
  p.on_pin(tid(1));
  p.on_pin(tid(2));
  EXPECT_EQ(order(p), ids({3, 4}));
  p.on_unpin(tid(2));  // back of A1in
  p.on_unpin(tid(1));  // back of Am
  EXPECT_EQ(p.am_count(), 1U);
  EXPECT_EQ(order(p), ids({3, 4, 2, 1}));
  EXPECT_TRUE(p.validate());
}

TEST(TwoQPolicy, RegistryParametersAndErrors)
{
  auto const r = policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("two_q"));
  auto p = r.create("two_q:kin=0.3,kout=1.5");
  ASSERT_NE(p.target<two_q_policy>(), nullptr);
  EXPECT_DOUBLE_EQ(p.target<two_q_policy>()->get_config().kin, 0.3);
  EXPECT_DOUBLE_EQ(p.target<two_q_policy>()->get_config().kout, 1.5);
  EXPECT_DOUBLE_EQ(r.create("two_q").target<two_q_policy>()->get_config().kin, 0.25);
  for (std::string_view spec : {"two_q:kin=0", "two_q:kin=1", "two_q:kin=-0.5", "two_q:kout=-1", "two_q:kout=17",
                                "two_q:kin=abc", "two_q:k=1"}) {
    EXPECT_THROW((void)r.create(spec), tierpool::logic_error) << spec;
  }
  EXPECT_THROW((two_q_policy{{.kin = 2.0}}), tierpool::logic_error);
}

TEST(TwoQPolicy, DeterministicUnderReplayWithEvictions)
{
  EXPECT_EQ(replay(two_q_policy{}), replay(two_q_policy{}));
}

}  // namespace

namespace {

// 2Q as in the paper (full version), with Kin/Kout as fractions of held bytes, on deques.
struct two_q_reference {
  double kin{0.25};
  double kout{0.5};
  std::deque<std::uint64_t> a1in, am;
  std::deque<std::pair<std::uint64_t, std::size_t>> a1out;
  std::map<std::uint64_t, std::size_t> bytes;
  double ib{0}, mb{0}, ob{0};
  [[nodiscard]] bool empty() const { return a1in.empty() && am.empty(); }
  static void drop(std::deque<std::uint64_t>& d, std::uint64_t id) { d.erase(std::find(d.begin(), d.end(), id)); }
  void insert(std::uint64_t id, std::size_t b)
  {
    bytes[id] = b;
    auto const it = std::find_if(a1out.begin(), a1out.end(), [&](auto const& e) { return e.first == id; });
    if (it != a1out.end()) {
      ob -= static_cast<double>(it->second);
      a1out.erase(it);
      am.push_back(id);
      mb += static_cast<double>(b);
    } else {
      a1in.push_back(id);
      ib += static_cast<double>(b);
    }
  }
  void access(std::uint64_t id)
  {
    if (std::find(am.begin(), am.end(), id) != am.end()) {
      drop(am, id);
      am.push_back(id);
    }
  }
  void plain_free(std::uint64_t id)
  {
    auto const b = static_cast<double>(bytes[id]);
    if (std::find(a1in.begin(), a1in.end(), id) != a1in.end()) {
      drop(a1in, id);
      ib -= b;
    } else {
      drop(am, id);
      mb -= b;
    }
    bytes.erase(id);
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
    std::uint64_t v = 0;
    if (!a1in.empty() && (am.empty() || ib > kin * (ib + mb))) {
      v = a1in.front();
      a1in.pop_front();
      ib -= static_cast<double>(bytes[v]);
      a1out.emplace_back(v, bytes[v]);
      ob += static_cast<double>(bytes[v]);
      while (!a1out.empty() && ob > kout * (ib + mb)) {
        ob -= static_cast<double>(a1out.front().second);
        a1out.pop_front();
      }
    } else {
      v = am.front();
      am.pop_front();
      mb -= static_cast<double>(bytes[v]);
    }
    bytes.erase(v);
    return v;
  }
};

TEST(TwoQPolicy, MatchesThePaperAlgorithmOnRandomTraces)
{
  for (std::uint64_t seed : {1ULL, 2ULL, 3ULL, 42ULL}) {
    cross_check(two_q_reference{}, two_q_policy{}, seed);
    cross_check([] {
      two_q_reference r;
      r.kin = 0.5;
      r.kout = 2.0;
      return r;
    }(), two_q_policy{{.kin = 0.5, .kout = 2.0}}, seed);
  }
}

}  // namespace

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

namespace {

using tierpool::any_eviction_policy;
using tierpool::eviction_proposal;
using tierpool::eviction_request;
using tierpool::policy_registry;
using tierpool::tensor_view;
using tierpool::tick;
using tierpool::clock_policy;

struct ClockFixture : ::testing::Test {
  static clock_policy make() { return clock_policy{}; }
};
struct AnyClockFixture : ::testing::Test {
  static any_eviction_policy make() { return any_eviction_policy{clock_policy{}}; }
};
struct RegistryClockFixture : ::testing::Test {
  static any_eviction_policy make() { return policy_registry::with_builtins().create("clock"); }
};

using clock_fixtures = ::testing::Types<ClockFixture, AnyClockFixture, RegistryClockFixture>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Clock, PolicyConformance, clock_fixtures);

namespace {

tierpool::tensor_id tid(std::uint64_t v) { return tierpool::tensor_id{v}; }

tensor_view view(std::uint64_t id, std::size_t bytes, tick t = 0, bool pinned = false, bool write = false)
{
  tensor_view v{};
  v.id = tid(id);
  v.bytes = bytes;
  v.last_access = t;
  v.pinned = pinned;
  v.write_access = write;
  return v;
}

std::vector<tierpool::tensor_id> ids(std::initializer_list<std::uint64_t> raw)
{
  std::vector<tierpool::tensor_id> out;
  for (auto r : raw) { out.push_back(tid(r)); }
  return out;
}

// Victims for `need` bytes, and the whole eviction order for SIZE_MAX.
template <class P>
std::vector<tierpool::tensor_id> propose(P const& p, std::size_t need)
{
  eviction_proposal out;
  p.propose(eviction_request{tierpool::tier_id{0}, need, 0, 0}, out);
  return out.victims;
}
template <class P>
std::vector<tierpool::tensor_id> order(P const& p)
{
  return propose(p, SIZE_MAX);
}

// Insert, access, pin... from a compact script, then the proposals for `needs`: the same
// script on two fresh policies must give the same answers.
template <class P>
std::vector<std::vector<tierpool::tensor_id>> replay(P p)
{
  std::vector<std::vector<tierpool::tensor_id>> log;
  std::uint64_t x = 12345;
  for (int step = 0; step < 2000; ++step) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG: engine output only
    std::uint64_t const id = 1 + (x >> 33) % 64;
    switch ((x >> 60) % 6) {
      case 0:
      case 1: p.on_insert(view(id, static_cast<std::size_t>(1 + (x >> 20) % 100), static_cast<tick>(step))); break;
      case 2: p.on_access(view(id, 0 + static_cast<std::size_t>(1 + (x >> 20) % 100), static_cast<tick>(step))); break;
      case 3: {
        auto const v = propose(p, static_cast<std::size_t>((x >> 8) % 500));
        log.push_back(v);
        if (!v.empty()) { p.on_erase(v.front()); }
        break;
      }
      case 4: p.on_erase(tid(id)); break;
      default: p.on_pin(tid(id)); p.on_unpin(tid(1 + (x >> 40) % 64)); break;
    }
    EXPECT_TRUE(p.validate());
  }
  return log;
}

}  // namespace

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
  auto const r = policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("clock"));
  EXPECT_NE(r.create("clock").target<clock_policy>(), nullptr);
  EXPECT_THROW((void)r.create("clock:bits=2"), tierpool::logic_error);
  EXPECT_EQ(replay(clock_policy{}), replay(clock_policy{}));
  clock_policy p;
  for (std::uint64_t i = 1; i <= 8; ++i) { p.on_insert(view(i, 16 * i)); }
  p.on_access(view(1, 16));
  EXPECT_EQ(propose(p, 100), propose(p, 100));
}

}  // namespace

namespace {

// Drives a reference model (the algorithm as published: it mutates while it evicts) and
// the policy with the same random events. An eviction asks the policy for `need` bytes,
// checks its victims against those the reference evicts one by one, then erases them in
// order, which applies the policy's deferred moves. Frees erase tensors out of order.
template <class Ref, class P>
void cross_check(Ref ref, P p, std::uint64_t seed)
{
  std::vector<std::size_t> bytes(49, 0);  // 0 = not resident
  std::uint64_t x = seed;
  int evictions = 0;
  for (int step = 0; step < 4000; ++step) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    std::uint64_t const id = 1 + (x >> 33) % 48;
    switch ((x >> 59) % 8) {
      case 0:
      case 1:
      case 2:
        if (bytes[id] == 0) {
          bytes[id] = static_cast<std::size_t>(1 + (x >> 20) % 50);
          ref.insert(id, bytes[id]);
          p.on_insert(view(id, bytes[id]));
        }
        break;
      case 3:
      case 4:
        if (bytes[id] != 0) {
          ref.access(id);
          p.on_access(view(id, bytes[id]));
        }
        break;
      case 5:
        if (bytes[id] != 0) {
          ref.free(id);
          p.on_erase(tid(id));
          bytes[id] = 0;
        }
        break;
      default: {
        std::size_t const need = static_cast<std::size_t>(1 + (x >> 8) % 200);
        std::vector<tierpool::tensor_id> expected;
        std::size_t freed = 0;
        while (freed < need && !ref.empty()) {
          std::uint64_t const v = ref.evict();
          expected.push_back(tid(v));
          freed += bytes[v];
        }
        auto const got = propose(p, need);
        ASSERT_EQ(got, expected) << "step " << step;
        for (auto const v : got) {
          p.on_erase(v);
          bytes[static_cast<std::uint64_t>(v)] = 0;
        }
        ++evictions;
        break;
      }
    }
    ASSERT_TRUE(p.validate()) << "step " << step;
  }
  EXPECT_GT(evictions, 500);
}

}  // namespace

namespace {

// CLOCK as in the textbook, on a vector: the hand at `hand`, a new page just behind it.
struct clock_reference {
  struct obj {
    std::uint64_t id;
    bool referenced;
  };
  std::vector<obj> q;
  std::size_t hand{0};
  [[nodiscard]] bool empty() const { return q.empty(); }
  std::size_t find(std::uint64_t id) const
  {
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (q[i].id == id) { return i; }
    }
    return q.size();
  }
  void insert(std::uint64_t id, std::size_t)
  {
    q.insert(q.begin() + static_cast<std::ptrdiff_t>(hand), obj{id, false});
    if (q.size() > 1) { ++hand; }  // the hand stays on its page
  }
  void access(std::uint64_t id) { q[find(id)].referenced = true; }
  void remove_at(std::size_t i)
  {
    q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
    if (i < hand) { --hand; }
    if (hand >= q.size()) { hand = 0; }
  }
  void plain_free(std::uint64_t id) { remove_at(find(id)); }
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
    while (q[hand].referenced) {
      q[hand].referenced = false;
      hand = hand + 1 == q.size() ? 0 : hand + 1;
    }
    std::uint64_t const v = q[hand].id;
    remove_at(hand);
    return v;
  }
};

TEST(ClockPolicy, MatchesTheTextbookAlgorithmOnRandomTraces)
{
  for (std::uint64_t seed : {1ULL, 2ULL, 3ULL, 42ULL}) { cross_check(clock_reference{}, clock_policy{}, seed); }
}

}  // namespace

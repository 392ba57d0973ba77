// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// sieve_policy_tests.cpp — POLICY_SIEVE_TEST: the conformance suite for sieve_policy (direct,
// type-erased and built by the registry), then SIEVE's own behaviour with hand-worked
// eviction orders, pinning, registry parameters and determinism.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/policies/sieve_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"

namespace {

using tierpool::any_eviction_policy;
using tierpool::eviction_proposal;
using tierpool::eviction_request;
using tierpool::policy_registry;
using tierpool::tensor_view;
using tierpool::tick;
using tierpool::sieve_policy;

struct SieveFixture : ::testing::Test {
  static sieve_policy make() { return sieve_policy{}; }
};
struct AnySieveFixture : ::testing::Test {
  static any_eviction_policy make() { return any_eviction_policy{sieve_policy{}}; }
};
struct RegistrySieveFixture : ::testing::Test {
  static any_eviction_policy make() { return policy_registry::with_builtins().create("sieve"); }
};

using sieve_fixtures = ::testing::Types<SieveFixture, AnySieveFixture, RegistrySieveFixture>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Sieve, PolicyConformance, sieve_fixtures);

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

TEST(SievePolicy, HandWorkedSweep)
{
  // tail -> head: A B C D E, hand at A; A, C, D visited.
  sieve_policy p;
  for (std::uint64_t id : std::initializer_list<std::uint64_t>{0xA, 0xB, 0xC, 0xD, 0xE}) { p.on_insert(view(id, 10)); }
  for (std::uint64_t id : std::initializer_list<std::uint64_t>{0xA, 0xC, 0xD}) { p.on_access(view(id, 10)); }
  EXPECT_EQ(p.hand(), tid(0xA));
  // First pass: B and E are unvisited; then the visited ones, cleared, from the hand.
  EXPECT_EQ(order(p), ids({0xB, 0xE, 0xA, 0xC, 0xD}));
  EXPECT_EQ(propose(p, 10), ids({0xB}));
  p.on_erase(tid(0xB));  // the hand passes A (cleared), evicts B, stops at C
  EXPECT_FALSE(p.visited(tid(0xA)));
  EXPECT_TRUE(p.visited(tid(0xC)));
  EXPECT_EQ(p.hand(), tid(0xC));
  p.on_insert(view(0xF, 10));  // at the head: A C D E F; survivors stay in place
  // From C: C, D visited (passed), E, F evicted, wrap: A; then C, D.
  EXPECT_EQ(order(p), ids({0xE, 0xF, 0xA, 0xC, 0xD}));
  p.on_erase(tid(0xE));  // hand passes C and D (cleared), stops at F
  EXPECT_EQ(p.hand(), tid(0xF));
  p.on_access(view(0xA, 10));
  EXPECT_EQ(order(p), ids({0xF, 0xC, 0xD, 0xA}));
  p.on_erase(tid(0xC));  // not the next victim (a free): the hand does not move
  EXPECT_EQ(p.hand(), tid(0xF));
  EXPECT_TRUE(p.visited(tid(0xA)));
  EXPECT_EQ(order(p), ids({0xF, 0xD, 0xA}));
  EXPECT_TRUE(p.validate());
}

TEST(SievePolicy, EveryBitSetMeansAFullLap)
{
  sieve_policy p;
  for (std::uint64_t id = 1; id <= 3; ++id) { p.on_insert(view(id, 10)); }
  for (std::uint64_t id = 1; id <= 3; ++id) { p.on_access(view(id, 10)); }
  EXPECT_EQ(order(p), ids({1, 2, 3}));
  p.on_erase(tid(1));  // a full lap clears 2 and 3, then evicts 1
  EXPECT_FALSE(p.visited(tid(2)));
  EXPECT_FALSE(p.visited(tid(3)));
  EXPECT_EQ(p.hand(), tid(2));
  EXPECT_TRUE(p.validate());
}

TEST(SievePolicy, HandWorkedSweepOverEight)
{
  // Tail -> head: A B C D E F G H (G = 0x10, H = 0x11), visited: A B D G. The hand starts
  // at the tail, passes visited objects clearing them, evicts the first unvisited one; a
  // new object goes to the head while the hand stays where it stopped.
  sieve_policy p;
  for (std::uint64_t id = 0xA; id <= 0xA + 7; ++id) { p.on_insert(view(id, 1)); }
  for (std::uint64_t id : std::initializer_list<std::uint64_t>{0xA, 0xB, 0xD, 0xA + 6}) { p.on_access(view(id, 1)); }
  EXPECT_EQ(propose(p, 1), ids({0xC}));  // A, B passed; C evicted
  p.on_erase(tid(0xC));
  p.on_insert(view(0xFF, 1));  // request I: a miss, at the head
  EXPECT_EQ(p.hand(), tid(0xD));
  EXPECT_EQ(propose(p, 1), ids({0xE}));  // D passed; E evicted
  p.on_erase(tid(0xE));
  EXPECT_EQ(propose(p, 2), ids({0xF, 0xA + 7}));  // F, then G passed, H
  EXPECT_TRUE(p.validate());
}

TEST(SievePolicy, PinnedTensorsLeaveTheQueueAndReturnAtTheHead)
{
  sieve_policy p;
  for (std::uint64_t id = 1; id <= 4; ++id) { p.on_insert(view(id, 10)); }
  p.on_access(view(1, 10));
  p.on_pin(tid(1));  // the hand's tensor: the hand moves to 2
  EXPECT_EQ(p.hand(), tid(2));
  EXPECT_EQ(order(p), ids({2, 3, 4}));
  p.on_unpin(tid(1));  // at the head, still visited
  EXPECT_EQ(order(p), ids({2, 3, 4, 1}));
  EXPECT_TRUE(p.visited(tid(1)));
  p.on_insert(view(5, 10, 0, /*pinned=*/true));
  EXPECT_EQ(order(p), ids({2, 3, 4, 1}));
  EXPECT_TRUE(p.validate());
}

TEST(SievePolicy, RegistryAndDeterminism)
{
  auto const r = policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("sieve"));
  EXPECT_NE(r.create("sieve").target<sieve_policy>(), nullptr);
  EXPECT_THROW((void)r.create("sieve:hand=1"), tierpool::logic_error);
  EXPECT_EQ(replay(sieve_policy{}), replay(sieve_policy{}));
  sieve_policy p;
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

// SIEVE as in the paper's pseudocode, on a vector (index 0 = tail).
struct sieve_reference {
  struct obj {
    std::uint64_t id;
    bool visited;
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
  void insert(std::uint64_t id, std::size_t) { q.push_back({id, false}); }
  void access(std::uint64_t id) { q[find(id)].visited = true; }
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
    while (q[hand].visited) {
      q[hand].visited = false;
      hand = hand + 1 == q.size() ? 0 : hand + 1;
    }
    std::uint64_t const v = q[hand].id;
    remove_at(hand);
    return v;
  }
};

TEST(SievePolicy, MatchesThePaperAlgorithmOnRandomTraces)
{
  for (std::uint64_t seed : {1ULL, 2ULL, 3ULL, 42ULL}) { cross_check(sieve_reference{}, sieve_policy{}, seed); }
}

}  // namespace

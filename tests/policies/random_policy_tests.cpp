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

namespace {

using tierpool::any_eviction_policy;
using tierpool::eviction_proposal;
using tierpool::eviction_request;
using tierpool::policy_registry;
using tierpool::tensor_view;
using tierpool::tick;
using tierpool::random_policy;

struct RandomFixture : ::testing::Test {
  static random_policy make() { return random_policy{{.seed = 42}}; }
};
struct AnyRandomFixture : ::testing::Test {
  static any_eviction_policy make() { return any_eviction_policy{random_policy{}}; }
};
struct RegistryRandomFixture : ::testing::Test {
  static any_eviction_policy make() { return policy_registry::with_builtins().create("random:seed=1234"); }
};

using random_fixtures = ::testing::Types<RandomFixture, AnyRandomFixture, RegistryRandomFixture>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Random, PolicyConformance, random_fixtures);

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

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lru_policy_tests.cpp — POLICY_LRU_TEST: the conformance suite for lru_policy (direct and
// type-erased), then LRU's own behaviour with hand-worked eviction orders, and
// any_eviction_policy's value semantics.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <tierpool/policies/lru_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"

namespace {

using tierpool::any_eviction_policy;
using tierpool::eviction_proposal;
using tierpool::eviction_request;
using tierpool::lru_policy;
using tierpool::tensor_view;
using tierpool::tick;

struct LruFixture : ::testing::Test {
  static lru_policy make() { return lru_policy{{}}; }
};
struct LruRefreshFixture : ::testing::Test {
  static lru_policy make() { return lru_policy{{.refresh_interval = 3, .promote_on_read = true, .promote_on_write = false}}; }
};
struct AnyLruFixture : ::testing::Test {
  static any_eviction_policy make() { return any_eviction_policy{lru_policy{{}}}; }
};

using lru_fixtures = ::testing::Types<LruFixture, LruRefreshFixture, AnyLruFixture>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Lru, PolicyConformance, lru_fixtures);

namespace {

tierpool::tensor_id tid(std::uint64_t v) { return tierpool::tensor_id{v}; }

tensor_view view(std::uint64_t id, std::size_t bytes, tick t, bool pinned = false, bool write = false)
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

// Victims for `need` bytes, and the full order (coldest first) for SIZE_MAX.
std::vector<tierpool::tensor_id> propose(lru_policy const& p, std::size_t need)
{
  eviction_proposal out;
  p.propose(eviction_request{tierpool::tier_id{0}, need, 0, 0}, out);
  return out.victims;
}
std::vector<tierpool::tensor_id> order(lru_policy const& p) { return propose(p, SIZE_MAX); }

TEST(LruPolicy, EvictsLeastRecentlyUsedFirst)
{
  lru_policy p;
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(view(i, 10, i)); }  // order: 1 2 3 4
  p.on_access(view(2, 10, 5));                                              // order: 1 3 4 2
  p.on_access(view(1, 10, 6));                                              // order: 3 4 2 1
  EXPECT_EQ(order(p), ids({3, 4, 2, 1}));
  EXPECT_TRUE(p.validate());
}

TEST(LruPolicy, StopsOnceTheBytesAreCovered)
{
  lru_policy p;
  p.on_insert(view(1, 10, 1));
  p.on_insert(view(2, 30, 2));
  p.on_insert(view(3, 5, 3));
  p.on_insert(view(4, 50, 4));
  EXPECT_EQ(propose(p, 10), ids({1}));        // exactly covered by the coldest
  EXPECT_EQ(propose(p, 11), ids({1, 2}));     // 10 + 30 >= 11
  EXPECT_EQ(propose(p, 41), ids({1, 2, 3}));  // 10 + 30 + 5 >= 41
  EXPECT_EQ(propose(p, 46), ids({1, 2, 3, 4}));
  EXPECT_EQ(propose(p, 1000), ids({1, 2, 3, 4}));  // cannot cover: everything
  EXPECT_TRUE(propose(p, 0).empty());
}

TEST(LruPolicy, PinnedTensorsLeaveTheOrderAndComeBackMostRecent)
{
  lru_policy p;
  for (std::uint64_t i = 1; i <= 4; ++i) { p.on_insert(view(i, 10, i)); }  // 1 2 3 4
  p.on_pin(tid(1));
  EXPECT_EQ(order(p), ids({2, 3, 4}));
  EXPECT_EQ(p.pinned_count(), 1U);
  EXPECT_EQ(p.evictable_bytes(), 30U);
  p.on_unpin(tid(1));  // the end of a lease is a use
  EXPECT_EQ(order(p), ids({2, 3, 4, 1}));
  EXPECT_EQ(p.evictable_bytes(), 40U);
  EXPECT_TRUE(p.validate());
}

TEST(LruPolicy, ViewPinnedFlagIsAdopted)
{
  lru_policy p;
  p.on_insert(view(1, 10, 1, /*pinned=*/true));
  p.on_insert(view(2, 10, 2));
  EXPECT_EQ(order(p), ids({2}));
  p.on_access(view(2, 10, 3, /*pinned=*/true));   // acquired: pinned from now on
  EXPECT_TRUE(order(p).empty());
  p.on_access(view(1, 10, 4, /*pinned=*/false));  // released without on_unpin: the view wins
  EXPECT_EQ(order(p), ids({1}));
  EXPECT_TRUE(p.validate());
}

TEST(LruPolicy, RefreshIntervalDelaysPromotion)
{
  lru_policy p{{.refresh_interval = 10}};
  p.on_insert(view(1, 10, 0));  // promoted at 0
  p.on_insert(view(2, 10, 1));  // order: 1 2
  p.on_access(view(1, 10, 5));  // 5 - 0 < 10: stays coldest
  EXPECT_EQ(order(p), ids({1, 2}));
  p.on_access(view(1, 10, 10));  // 10 - 0 >= 10: promoted at 10
  EXPECT_EQ(order(p), ids({2, 1}));
  p.on_access(view(2, 10, 11));  // 11 - 1 >= 10: promoted
  EXPECT_EQ(order(p), ids({1, 2}));
  p.on_access(view(1, 10, 19));  // 19 - 10 < 10: stays
  EXPECT_EQ(order(p), ids({1, 2}));
}

TEST(LruPolicy, LargeTicksKeepTheRefreshIntervalAndSaturateAt2To62)
{
  // The promotion tick is kept in 62 bits (beside the 24-byte node): ticks below 2^62
  // behave as before, later ones are kept as 2^62 - 1.
  static_assert(sizeof(tierpool::policies::detail::lru_node) == 24);
  tick const big = tierpool::policies::detail::lru_node::max_promoted_at - 20;
  lru_policy p{{.refresh_interval = 10}};
  p.on_insert(view(1, 10, big));
  p.on_insert(view(2, 10, big + 1, true));  // pinned: its flag survives the tick beside it
  p.on_unpin(tid(2));                       // back at the MRU end; order: 1 2
  p.on_access(view(1, 10, big + 9));        // 9 < 10: stays
  EXPECT_EQ(order(p), ids({1, 2}));
  p.on_access(view(1, 10, big + 10));       // promoted at big + 10
  EXPECT_EQ(order(p), ids({2, 1}));
  EXPECT_TRUE(p.validate());
  // Past 2^62 the tick is stored as 2^62 - 1: an access 10 ticks after that promotes.
  p.on_access(view(2, 10, tick{1} << 63U));  // promoted, kept as 2^62 - 1
  EXPECT_EQ(order(p), ids({1, 2}));
  p.on_access(view(1, 10, (tick{1} << 63U) + 1));  // 2^63 + 1 - (big + 10) >= 10
  EXPECT_EQ(order(p), ids({2, 1}));
  p.on_access(view(2, 10, tierpool::policies::detail::lru_node::max_promoted_at + 9));  // 9 after the kept tick
  EXPECT_EQ(order(p), ids({2, 1}));
  p.on_access(view(2, 10, tierpool::policies::detail::lru_node::max_promoted_at + 10));  // 10 after it: promoted
  EXPECT_EQ(order(p), ids({1, 2}));
  EXPECT_EQ(p.pinned_count(), 0U);
  EXPECT_TRUE(p.validate());
}

TEST(LruPolicy, PromoteOnWriteAndOnReadAreSeparate)
{
  lru_policy no_write{{.promote_on_read = true, .promote_on_write = false}};
  lru_policy no_read{{.promote_on_read = false, .promote_on_write = true}};
  for (lru_policy* p : {&no_write, &no_read}) {
    p->on_insert(view(1, 10, 1));
    p->on_insert(view(2, 10, 2));  // order: 1 2
  }
  no_write.on_access(view(1, 10, 3, false, /*write=*/true));
  EXPECT_EQ(order(no_write), ids({1, 2}));
  no_write.on_access(view(1, 10, 4, false, /*write=*/false));
  EXPECT_EQ(order(no_write), ids({2, 1}));

  no_read.on_access(view(1, 10, 3, false, /*write=*/false));
  EXPECT_EQ(order(no_read), ids({1, 2}));
  no_read.on_access(view(1, 10, 4, false, /*write=*/true));
  EXPECT_EQ(order(no_read), ids({2, 1}));
}

TEST(LruPolicy, InsertOfAKnownIdUpdatesAndPromotes)
{
  lru_policy p;
  p.on_insert(view(1, 10, 1));
  p.on_insert(view(2, 10, 2));
  p.on_insert(view(1, 25, 3));  // re-insert: size 25, most recent
  EXPECT_EQ(p.size(), 2U);
  EXPECT_EQ(order(p), ids({2, 1}));
  EXPECT_EQ(p.evictable_bytes(), 35U);
  EXPECT_EQ(propose(p, 11), ids({2, 1}));
  EXPECT_TRUE(p.validate());
}

TEST(LruPolicy, SlotsAreReusedAfterErase)
{
  lru_policy p;
  for (std::uint64_t i = 1; i <= 100; ++i) { p.on_insert(view(i, 1, i)); }
  for (std::uint64_t i = 1; i <= 100; i += 2) { p.on_erase(tid(i)); }
  for (std::uint64_t i = 101; i <= 150; ++i) { p.on_insert(view(i, 1, i)); }
  EXPECT_EQ(p.size(), 100U);
  EXPECT_TRUE(p.validate());
  auto const o = order(p);
  ASSERT_EQ(o.size(), 100U);
  EXPECT_EQ(o.front(), tid(2));
  EXPECT_EQ(o.back(), tid(150));
}

TEST(LruPolicy, HandWorkedTrace)
{
  // t: event                     order (coldest first)     pinned
  // 1: insert A(40)              A
  // 2: insert B(20)              A B
  // 3: insert C(30)              A B C
  // 4: access A                  B C A
  // 5: pin C                     B A                       C
  // 6: insert D(10)              B A D                     C
  // 7: access B                  A D B                     C
  // 8: unpin C                   A D B C
  // 9: erase D                   A B C
  lru_policy p;
  p.on_insert(view(0xA, 40, 1));
  p.on_insert(view(0xB, 20, 2));
  p.on_insert(view(0xC, 30, 3));
  p.on_access(view(0xA, 40, 4));
  p.on_pin(tid(0xC));
  p.on_insert(view(0xD, 10, 6));
  p.on_access(view(0xB, 20, 7));
  EXPECT_EQ(propose(p, 45), ids({0xA, 0xD}));  // 40 + 10 >= 45
  p.on_unpin(tid(0xC));
  EXPECT_EQ(order(p), ids({0xA, 0xD, 0xB, 0xC}));
  p.on_erase(tid(0xD));
  EXPECT_EQ(propose(p, 45), ids({0xA, 0xB}));  // 40 + 20 >= 45
  EXPECT_TRUE(p.validate());
}

TEST(LruPolicy, CopiesAreIndependent)
{
  lru_policy a;
  a.on_insert(view(1, 10, 1));
  a.on_insert(view(2, 10, 2));
  lru_policy b = a;
  b.on_access(view(1, 10, 3));
  EXPECT_EQ(order(a), ids({1, 2}));
  EXPECT_EQ(order(b), ids({2, 1}));
}

TEST(AnyEvictionPolicy, ForwardsAndClearsTheProposal)
{
  any_eviction_policy p{lru_policy{{}}};
  EXPECT_EQ(p.name(), "lru");
  p.on_insert(view(1, 10, 1));
  p.on_insert(view(2, 10, 2));
  eviction_proposal out;
  out.add(tid(99), 1000);  // stale content from a previous round
  p.propose(eviction_request{tierpool::tier_id{0}, 5, 0, 3}, out);
  EXPECT_EQ(out.victims, ids({1}));
  EXPECT_EQ(out.bytes, 10U);
  EXPECT_TRUE(p.validate());
}

TEST(AnyEvictionPolicy, HasValueSemantics)
{
  any_eviction_policy a{lru_policy{{}}};
  a.on_insert(view(1, 10, 1));
  a.on_insert(view(2, 10, 2));
  any_eviction_policy b = a;  // deep copy
  b.on_access(view(1, 10, 3));
  EXPECT_EQ(a.propose({.bytes_needed = 100}).victims, ids({1, 2}));
  EXPECT_EQ(b.propose({.bytes_needed = 100}).victims, ids({2, 1}));

  any_eviction_policy c = std::move(a);
  EXPECT_FALSE(a.has_value());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_FALSE(a.validate());   // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(c.has_value());
  a = c;  // assign to a moved-from object
  EXPECT_EQ(a.propose({.bytes_needed = 100}).victims, ids({1, 2}));
  ASSERT_NE(c.target<lru_policy>(), nullptr);
  EXPECT_EQ(c.target<lru_policy>()->size(), 2U);
  EXPECT_EQ(c.target<int>(), nullptr);
}

}  // namespace

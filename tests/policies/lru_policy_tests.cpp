// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lru_policy_tests.cpp — POLICY_LRU_TEST: the conformance suite for lru_policy (direct and
// type-erased), then LRU's own behaviour with hand-worked eviction orders, and
// any_eviction_policy's value semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <random>
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

TEST(LruPolicy, NodeIs24BytesAndKeepsNoTickWithoutARefreshInterval)
{
  using node = tierpool::policies::detail::lru_node;
  static_assert(sizeof(node) == 24);
  static_assert(node::max_bytes == (std::size_t{1} << 62) - 1);
  static_assert(node::kept_bytes(node::max_bytes + 1) == node::max_bytes);
  static_assert(node::kept_bytes(SIZE_MAX) == node::max_bytes);
  static_assert(node::kept_bytes(node::max_bytes - 1) == node::max_bytes - 1);
  // refresh_interval == 0: promotion on every access, no tick kept anywhere (validate()
  // checks that the side array is empty; with an interval, one tick per slot).
  lru_policy p;
  lru_policy q{{.refresh_interval = 1}};
  for (lru_policy* x : {&p, &q}) {
    for (std::uint64_t i = 1; i <= 100; ++i) { x->on_insert(view(i, 10, i)); }
    for (std::uint64_t i = 1; i <= 100; i += 3) { x->on_erase(tid(i)); }
    for (std::uint64_t i = 101; i <= 120; ++i) { x->on_insert(view(i, 10, i)); }
    EXPECT_TRUE(x->validate());
  }
}

TEST(LruPolicy, SizesNearThe62BitBoundStayExactWithTheirFlags)
{
  using node = tierpool::policies::detail::lru_node;
  constexpr std::size_t m = node::max_bytes;
  lru_policy p;
  p.on_insert(view(1, m - 1, 1));
  p.on_insert(view(2, m, 2, /*pinned=*/true));
  p.on_insert(view(3, m + 1, 3, /*pinned=*/true));
  p.on_insert(view(4, SIZE_MAX, 4));
  EXPECT_TRUE(p.validate());
  EXPECT_EQ(p.pinned_count(), 2U);
  EXPECT_EQ(p.evictable_count(), 2U);
  EXPECT_TRUE(p.contains(tid(3)));
  EXPECT_EQ(p.evictable_bytes(), SIZE_MAX);  // (m - 1) + SIZE_MAX saturates
  eviction_proposal out;
  p.propose(eviction_request{tierpool::tier_id{0}, 1, 0, 0}, out);
  ASSERT_EQ(out.victims, ids({1}));
  EXPECT_EQ(out.bytes, m - 1);
  p.on_erase(tid(4));
  EXPECT_EQ(p.evictable_bytes(), m - 1);
  p.on_unpin(tid(3));  // exact size back in the order: order 1 3
  p.on_unpin(tid(2));  // order 1 3 2
  EXPECT_EQ(p.pinned_count(), 0U);
  EXPECT_TRUE(p.validate());
  out.clear();
  p.propose(eviction_request{tierpool::tier_id{0}, SIZE_MAX, 0, 0}, out);
  EXPECT_EQ(out.victims, ids({1, 3, 2}));
  EXPECT_EQ(out.bytes, 3 * m);  // (m - 1) + (m + 1) + m, exact
  out.clear();
  p.propose(eviction_request{tierpool::tier_id{0}, m + 1, 0, 0}, out);  // 1 then 3
  EXPECT_EQ(out.victims, ids({1, 3}));
  EXPECT_EQ(out.bytes, (m - 1) + (m + 1));
  // Sizes that cross the bound on access, with the pinned flag beside them.
  p.on_access(view(3, 5, 10));                   // small now; order 1 2 3
  p.on_access(view(1, m + 7, 11, /*pinned=*/true));  // huge and pinned
  EXPECT_TRUE(p.validate());
  EXPECT_EQ(p.evictable_bytes(), m + 5);
  p.on_access(view(1, m + 9, 12, /*pinned=*/false));  // unpinned, resized: order 2 3 1
  EXPECT_EQ(order(p), ids({2, 3, 1}));
  EXPECT_EQ(p.evictable_bytes(), m + 5 + (m + 9));
  p.on_insert(view(2, 1, 13));  // known: resized, promoted; order 3 1 2
  out.clear();
  p.propose(eviction_request{tierpool::tier_id{0}, 6, 0, 0}, out);
  EXPECT_EQ(out.victims, ids({3, 1}));
  EXPECT_EQ(out.bytes, 5 + m + 9);
  p.on_erase(tid(1));
  p.on_insert(view(5, m + 2, 14));  // reuses slot of 1: its old exact size must be gone
  EXPECT_TRUE(p.validate());
  EXPECT_EQ(p.evictable_bytes(), 5 + 1 + m + 2);
}

// The behaviour before the tick left the node: a plain model of the policy's rules.
struct reference_lru {
  struct entry {
    std::size_t bytes;
    tick at;
    bool pinned;
  };
  tick interval;
  std::map<std::uint64_t, entry> known;
  std::list<std::uint64_t> order;  // MRU first, unpinned only

  static tick kept(tick t) { return std::min(t, tierpool::policies::detail::lru_node::max_promoted_at); }
  void front(std::uint64_t id)
  {
    order.remove(id);
    order.push_front(id);
  }
  void set_pinned(std::uint64_t id, bool pinned)
  {
    entry& e = known.at(id);
    if (e.pinned == pinned) { return; }
    e.pinned = pinned;
    if (pinned) { order.remove(id); } else { order.push_front(id); }
  }
  void insert(tensor_view const& v)
  {
    auto const id = static_cast<std::uint64_t>(v.id);
    auto it = known.find(id);
    if (it == known.end()) {
      known[id] = entry{v.bytes, kept(v.last_access), v.pinned};
      if (!v.pinned) { order.push_front(id); }
      return;
    }
    it->second.bytes = v.bytes;
    if (it->second.pinned != v.pinned) {
      set_pinned(id, v.pinned);
    } else if (!v.pinned) {
      front(id);
    }
    it->second.at = kept(v.last_access);
  }
  void access(tensor_view const& v)
  {
    auto const id = static_cast<std::uint64_t>(v.id);
    auto it = known.find(id);
    if (it == known.end()) { return; }
    entry& e = it->second;
    e.bytes = v.bytes;
    if (e.pinned != v.pinned) {
      set_pinned(id, v.pinned);
      e.at = kept(v.last_access);
      return;
    }
    if (e.pinned) { return; }
    tick const since = v.last_access >= e.at ? v.last_access - e.at : 0;
    if (interval != 0 && since < interval) { return; }
    e.at = kept(v.last_access);
    front(id);
  }
  void erase(std::uint64_t id)
  {
    if (known.erase(id) != 0) { order.remove(id); }
  }
  [[nodiscard]] std::vector<tierpool::tensor_id> coldest_first() const
  {
    std::vector<tierpool::tensor_id> out;
    for (auto it = order.rbegin(); it != order.rend(); ++it) { out.push_back(tid(*it)); }
    return out;
  }
};

TEST(LruPolicy, RefreshIntervalRateLimitsAsTheReferenceModel)
{
  for (tick const interval : {tick{0}, tick{1}, tick{5}, tick{37}}) {
    lru_policy p{{.refresh_interval = interval}};
    reference_lru r{interval, {}, {}};
    std::mt19937_64 rng(1234 + interval);
    tick now = 0;
    for (int step = 0; step < 20000; ++step) {
      now += rng() % 4;  // often the same tick
      if (rng() % 50 == 0 && now > 10) { now -= rng() % 10; }  // a clock that goes back
      std::uint64_t const id = 1 + rng() % 64;
      bool const pinned = rng() % 8 == 0;
      tensor_view const v = view(id, 1 + rng() % 1000, now, pinned, rng() % 2 == 0);
      switch (rng() % 10) {
        case 0: case 1: p.on_insert(v); r.insert(v); break;
        case 2: p.on_erase(tid(id)); r.erase(id); break;
        case 3: p.on_pin(tid(id)); if (r.known.count(id) != 0) { r.set_pinned(id, true); } break;
        case 4: p.on_unpin(tid(id)); if (r.known.count(id) != 0) { r.set_pinned(id, false); } break;
        default: p.on_access(v); r.access(v); break;
      }
      ASSERT_EQ(order(p), r.coldest_first()) << "interval " << interval << ", step " << step;
      if (step % 97 == 0) { ASSERT_TRUE(p.validate()); }
    }
    EXPECT_TRUE(p.validate());
  }
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

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cflru_policy_tests.cpp — the conformance suite for cflru_policy (direct, type-erased and
// built by the registry), hand-worked clean-first orders, the window's ends (0 is LRU, 1
// takes every clean tensor first), what makes a tensor dirty or clean again, pinning, the
// registry's parameter, and every proposal of a random run against a plain list model of
// the algorithm.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/policies/cflru_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

namespace {

using tierpool::cflru_policy;

using cflru_fixtures = conformance_fixtures<cflru_policy, "cflru">;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Cflru, PolicyConformance, cflru_fixtures);

namespace {

tensor_view dirty_view(std::uint64_t id, std::size_t bytes) { return view(id, bytes, 0, false, /*write=*/true); }

// 1..8 of 10 bytes, least recent first; the odd ones dirty.
cflru_policy eight(double window)
{
  cflru_policy p{{.window = window}};
  for (std::uint64_t i = 1; i <= 8; ++i) { p.on_insert(i % 2 == 1 ? dirty_view(i, 10) : view(i, 10)); }
  return p;
}

TEST(CflruPolicy, TheWindowGivesUpItsCleanTensorsFirst)
{
  cflru_policy const p = eight(0.5);  // the window: 1..4 (40 of 80 bytes)
  EXPECT_EQ(propose(p, 10), ids({2}));
  EXPECT_EQ(propose(p, 20), ids({2, 4}));
  EXPECT_EQ(propose(p, 30), ids({2, 4, 1})) << "then the window's dirty ones, in LRU order";
  EXPECT_EQ(propose(p, 50), ids({2, 4, 1, 3, 5}));
  EXPECT_EQ(order(p), ids({2, 4, 1, 3, 5, 6, 7, 8}));
  EXPECT_TRUE(propose(p, 0).empty());
  EXPECT_TRUE(p.validate());
}

TEST(CflruPolicy, WindowZeroIsLruAndOneTakesEveryCleanTensorFirst)
{
  EXPECT_EQ(order(eight(0.0)), ids({1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(order(eight(1.0)), ids({2, 4, 6, 8, 1, 3, 5, 7}));
  EXPECT_EQ(propose(eight(1.0), 35), ids({2, 4, 6, 8}));
}

TEST(CflruPolicy, AWriteMakesItDirtyAndANewCopyCleanAgain)
{
  cflru_policy p{{.window = 1.0}};
  p.on_insert(view(1, 10));
  p.on_insert(view(2, 10));
  EXPECT_FALSE(p.is_dirty(tid(1)));
  p.on_access(view(1, 10, 1, false, /*write=*/true));  // and promoted: 2 is least recent
  EXPECT_TRUE(p.is_dirty(tid(1)));
  EXPECT_EQ(order(p), ids({2, 1}));
  p.on_access(view(2, 10));
  EXPECT_EQ(order(p), ids({2, 1})) << "a clean tensor goes before a dirty one, whatever the recency";
  p.on_insert(view(1, 10));  // copied in again: another tier holds its bytes
  EXPECT_FALSE(p.is_dirty(tid(1)));
  EXPECT_EQ(order(p), ids({2, 1}));
  EXPECT_FALSE(p.is_dirty(tid(99)));
}

TEST(CflruPolicy, PinnedTensorsAreNeverProposed)
{
  cflru_policy p = eight(1.0);
  p.on_pin(tid(2));
  p.on_pin(tid(7));
  EXPECT_EQ(order(p), ids({4, 6, 8, 1, 3, 5}));
  p.on_unpin(tid(2));  // back at the most recent end, still clean
  EXPECT_EQ(order(p), ids({4, 6, 8, 2, 1, 3, 5}));
  EXPECT_TRUE(p.validate());
}

TEST(CflruPolicy, Registry)
{
  ASSERT_NO_FATAL_FAILURE(expect_registered<cflru_policy>("cflru", "cflru:depth=2"));
  auto const r = tierpool::policy_registry::with_builtins();
  EXPECT_NE(r.create("cflru:window=0.5").target<cflru_policy>(), nullptr);
  for (char const* bad : {"cflru:window=-0.1", "cflru:window=1.5", "cflru:window=nan"}) {
    EXPECT_THROW((void)r.create(bad), tierpool::logic_error) << bad;
  }
  try {
    (void)cflru_policy{{.window = 2.0}};
    ADD_FAILURE() << "a window of 2 was accepted";
  } catch (tierpool::logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("cflru: window must be in [0, 1]"), std::string::npos) << e.what();
  }
}

// The algorithm as a plain list (most recent at the front), proposal by proposal.
struct list_model {
  struct entry {
    std::uint64_t id;
    std::size_t bytes;
    bool dirty;
    bool pinned;
  };
  double window;
  std::list<entry> lru;  // unpinned and pinned alike, in recency order

  std::list<entry>::iterator find(std::uint64_t id)
  {
    for (auto it = lru.begin(); it != lru.end(); ++it) {
      if (it->id == id) { return it; }
    }
    return lru.end();
  }
  void to_front(std::list<entry>::iterator it) { lru.splice(lru.begin(), lru, it); }
  std::vector<tierpool::tensor_id> propose(std::size_t need) const
  {
    std::vector<entry> order;  // the unpinned ones, least recent first
    for (auto it = lru.rbegin(); it != lru.rend(); ++it) {
      if (!it->pinned) { order.push_back(*it); }
    }
    std::size_t total = 0;
    for (entry const& e : order) { total += e.bytes; }
    auto const w = static_cast<std::size_t>(window * static_cast<double>(total));
    std::vector<tierpool::tensor_id> out;
    if (need == 0) { return out; }
    std::size_t freed = 0;
    std::size_t seen = 0;
    std::size_t k = 0;
    std::vector<bool> taken(order.size(), false);
    for (; k < order.size() && seen < w; ++k) {
      seen += order[k].bytes;
      if (!order[k].dirty && freed < need) {
        out.push_back(tid(order[k].id));
        taken[k] = true;
        freed += order[k].bytes;
      }
    }
    for (std::size_t j = 0; j < order.size() && freed < need; ++j) {
      if (taken[j]) { continue; }
      out.push_back(tid(order[j].id));
      freed += order[j].bytes;
    }
    return out;
  }
};

TEST(CflruPolicy, EveryProposalMatchesAPlainListModel)
{
  for (double const window : {0.0, 0.1, 0.25, 0.6, 1.0}) {
    SCOPED_TRACE("window " + std::to_string(window));
    cflru_policy p{{.window = window}};
    list_model m{window, {}};
    std::uint64_t x = 777;
    for (int step = 0; step < 3000; ++step) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      std::uint64_t const id = 1 + (x >> 33) % 40;
      bool const write = ((x >> 20) & 3U) == 0;
      std::size_t const bytes = 1 + (x >> 40) % 64;
      auto it = m.find(id);
      switch ((x >> 60) % 6) {
        case 0:
        case 1:  // insert (a new copy) or re-insert
          p.on_insert(view(id, bytes, 0, false, write));
          if (it == m.lru.end()) {
            m.lru.push_front({id, bytes, write, false});
          } else {
            *it = {id, bytes, write, false};
            m.to_front(it);
          }
          break;
        case 2:  // access
          p.on_access(view(id, it == m.lru.end() ? bytes : it->bytes, 0, it != m.lru.end() && it->pinned, write));
          if (it != m.lru.end()) {
            it->dirty = it->dirty || write;
            if (!it->pinned) { m.to_front(it); }
          }
          break;
        case 3: {
          std::size_t const need = (x >> 8) % 400;
          ASSERT_EQ(propose(p, need), m.propose(need)) << "step " << step << ", " << need << " bytes";
          break;
        }
        case 4:  // erase
          p.on_erase(tid(id));
          if (it != m.lru.end()) { m.lru.erase(it); }
          break;
        default:  // pin or unpin (unpinned: back at the most recent end)
          if (it == m.lru.end()) { break; }
          if (it->pinned) {
            p.on_unpin(tid(id));
            it->pinned = false;
            m.to_front(it);
          } else {
            p.on_pin(tid(id));
            it->pinned = true;
          }
          break;
      }
      ASSERT_TRUE(p.validate());
    }
  }
}

}  // namespace

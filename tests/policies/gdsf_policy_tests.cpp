// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// gdsf_policy_tests.cpp — POLICY_GDSF_TEST: the conformance suite for gdsf_policy (each
// cost model, and type-erased), hand-worked priorities H = L + frequency * cost / size,
// the inflation value L committed when the first tensor of the order leaves (and not on
// other erases), transfer costs with both fallbacks, pins, and the registry entry.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <tierpool/policies/gdsf_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"

namespace {

using tierpool::any_eviction_policy;
using tierpool::eviction_proposal;
using tierpool::eviction_request;
using tierpool::gdsf_policy;
using tierpool::tensor_view;
using cost_model = tierpool::gdsf_policy::cost_model;

struct GdsfFixture : ::testing::Test {
  static gdsf_policy make() { return gdsf_policy{}; }
};
struct GdsfUnitCostFixture : ::testing::Test {
  static gdsf_policy make() { return gdsf_policy{{.cost = cost_model::one, .fallback = cost_model::one, .correlation_window = 0}}; }
};
struct AnyGdsfFixture : ::testing::Test {
  static any_eviction_policy make() { return tierpool::policy_registry::with_builtins().create("gdsf:cost=bytes"); }
};
using gdsf_fixtures = ::testing::Types<GdsfFixture, GdsfUnitCostFixture, AnyGdsfFixture>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Gdsf, PolicyConformance, gdsf_fixtures);

namespace {

tierpool::tensor_id tid(std::uint64_t v) { return tierpool::tensor_id{v}; }

tensor_view view(std::uint64_t id, std::size_t bytes, tierpool::tick transfer_cost = 0, bool pinned = false)
{
  tensor_view v{};
  v.id = tid(id);
  v.bytes = bytes;
  v.transfer_cost = transfer_cost;
  v.pinned = pinned;
  return v;
}

std::vector<tierpool::tensor_id> ids(std::initializer_list<std::uint64_t> raw)
{
  std::vector<tierpool::tensor_id> out;
  for (auto r : raw) { out.push_back(tid(r)); }
  return out;
}

std::vector<tierpool::tensor_id> order(gdsf_policy const& p)
{
  eviction_proposal out;
  p.propose(eviction_request{tierpool::tier_id{0}, SIZE_MAX, 0, 0}, out);
  return out.victims;
}

TEST(GdsfPolicy, HandWorkedPrioritiesAndInflation)
{
  // Unit cost (GreedyDual-Size-Frequency with cost 1): H = L + f / size.
  //  event               H                          order (lowest first)      L
  //  insert 1 (100 B)    1: 1/100 = 0.01            1                          0
  //  insert 2 (10 B)     2: 1/10  = 0.1             1 2                        0
  //  insert 3 (50 B)     3: 1/50  = 0.02            1 3 2                      0
  //  access 1            1: 2/100 = 0.02 (newer)    3 1 2                      0
  //  erase 3 (first)     -                          1 2                        0.02
  //  insert 4 (100 B)    4: 0.02 + 0.01 = 0.03      1 4 2                      0.02
  //  erase 2 (not first) -                          1 4                        0.02
  //  access 1            1: 0.02 + 3/100 = 0.05     4 1                        0.02
  gdsf_policy p{{.cost = cost_model::one, .fallback = cost_model::one, .correlation_window = 0}};
  p.on_insert(view(1, 100));
  p.on_insert(view(2, 10));
  p.on_insert(view(3, 50));
  EXPECT_EQ(order(p), ids({1, 3, 2}));
  p.on_access(view(1, 100));
  EXPECT_DOUBLE_EQ(*p.priority(tid(1)), 0.02);
  EXPECT_EQ(order(p), ids({3, 1, 2}));  // equal H: the least recently used first
  p.on_erase(tid(3));
  EXPECT_DOUBLE_EQ(p.inflation(), 0.02);
  p.on_insert(view(4, 100));
  EXPECT_DOUBLE_EQ(*p.priority(tid(4)), 0.03);
  EXPECT_EQ(order(p), ids({1, 4, 2}));
  p.on_erase(tid(2));  // freed from the middle of the order: L stays
  EXPECT_DOUBLE_EQ(p.inflation(), 0.02);
  p.on_access(view(1, 100));
  EXPECT_DOUBLE_EQ(*p.priority(tid(1)), 0.05);
  EXPECT_EQ(order(p), ids({4, 1}));
  EXPECT_EQ(p.priority(tid(3)), std::nullopt);
  EXPECT_TRUE(p.validate());
}

TEST(GdsfPolicy, ProposalsStopOnceCovered)
{
  gdsf_policy p{{.cost = cost_model::one, .fallback = cost_model::one, .correlation_window = 0}};
  p.on_insert(view(1, 100));  // 0.01
  p.on_insert(view(2, 10));   // 0.1
  p.on_insert(view(3, 50));   // 0.02
  eviction_proposal out;
  p.propose({.bytes_needed = 120}, out);
  EXPECT_EQ(out.victims, ids({1, 3}));
  EXPECT_EQ(out.bytes, 150U);
}

TEST(GdsfPolicy, TransferCostKeepsExpensiveTensors)
{
  gdsf_policy p{{.cost = cost_model::transfer, .fallback = cost_model::bytes, .correlation_window = 0}};
  p.on_insert(view(1, 100, /*transfer_cost=*/1000));  // H = 10: slow link, keep
  p.on_insert(view(2, 100, /*transfer_cost=*/10));    // H = 0.1
  p.on_insert(view(3, 100, /*transfer_cost=*/0));     // unknown: cost = bytes, H = 1
  EXPECT_DOUBLE_EQ(*p.priority(tid(3)), 1.0);
  EXPECT_EQ(order(p), ids({2, 3, 1}));
  gdsf_policy q{{.cost = cost_model::transfer, .fallback = cost_model::one, .correlation_window = 0}};
  q.on_insert(view(3, 100, 0));  // unknown: cost 1, H = 0.01
  EXPECT_DOUBLE_EQ(*q.priority(tid(3)), 0.01);
}

TEST(GdsfPolicy, BytesCostIsFrequencyWithAging)
{
  gdsf_policy p{{.cost = cost_model::bytes, .fallback = cost_model::bytes, .correlation_window = 0}};
  p.on_insert(view(1, 4096, 7));  // the transfer cost is ignored: H = f = 1
  p.on_insert(view(2, 8));
  p.on_access(view(2, 8));        // H = 2
  EXPECT_DOUBLE_EQ(*p.priority(tid(1)), 1.0);
  EXPECT_DOUBLE_EQ(*p.priority(tid(2)), 2.0);
  EXPECT_EQ(order(p), ids({1, 2}));
}

TEST(GdsfPolicy, CorrelatedAccessDoesNotCount)
{
  gdsf_policy p{{.cost = cost_model::one, .fallback = cost_model::one, .correlation_window = 1}};
  p.on_insert(view(1, 10));
  p.on_access(view(1, 10));  // the next event: the same use
  EXPECT_DOUBLE_EQ(*p.priority(tid(1)), 0.1);
  p.on_insert(view(2, 10));
  p.on_access(view(1, 10));  // a real reuse
  EXPECT_DOUBLE_EQ(*p.priority(tid(1)), 0.2);
}

TEST(GdsfPolicy, PinnedTensorsAreSkippedAndDoNotInflate)
{
  gdsf_policy p{{.cost = cost_model::one, .fallback = cost_model::one, .correlation_window = 0}};
  p.on_insert(view(1, 100));  // 0.01, the lowest
  p.on_insert(view(2, 10));   // 0.1
  p.on_pin(tid(1));
  EXPECT_EQ(order(p), ids({2}));
  p.on_erase(tid(2));  // the first evictable tensor leaves: L = 0.1
  EXPECT_DOUBLE_EQ(p.inflation(), 0.1);
  p.on_unpin(tid(1));
  EXPECT_EQ(order(p), ids({1}));
  p.on_access(view(1, 100, 0, /*pinned=*/true));
  EXPECT_TRUE(order(p).empty());
  EXPECT_TRUE(p.validate());
}

TEST(GdsfPolicy, Registry)
{
  auto const r = tierpool::policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("gdsf"));
  auto const& info = r.info("gdsf");
  ASSERT_EQ(info.parameters.size(), 3U);
  EXPECT_EQ(info.parameters[0].name, "cost");
  EXPECT_EQ(info.parameters[0].default_value, "transfer");
  EXPECT_EQ(info.parameters[1].name, "fallback");
  EXPECT_EQ(info.parameters[1].default_value, "bytes");
  auto const p = r.create("gdsf:cost=one,fallback=one,correlation_window=3");
  gdsf_policy const* const g = p.target<gdsf_policy>();
  ASSERT_NE(g, nullptr);
  gdsf_policy::config const cfg = g->get_config();
  EXPECT_EQ(cfg.cost, cost_model::one);
  EXPECT_EQ(cfg.fallback, cost_model::one);
  EXPECT_EQ(cfg.correlation_window, 3U);
  auto msg = [&](char const* spec) {
    try {
      (void)r.create(spec);
    } catch (tierpool::logic_error const& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_THAT(msg("gdsf:cost=latency"), ::testing::HasSubstr("gdsf: cost must be transfer, one or bytes, got 'latency'"));
  EXPECT_THAT(msg("gdsf:fallback=transfer"), ::testing::HasSubstr("gdsf: fallback must be one or bytes"));
  EXPECT_THAT(msg("gdsf:correlation_window=x"), ::testing::HasSubstr("expects an unsigned decimal integer"));
}

}  // namespace

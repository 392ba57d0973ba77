// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// predictor_tests.cpp — the prefetch predictors: the `sequence` predictor's plans on a
// repeating order (hand-worked), its parameters through the registry, and a pool that
// prefetches with it.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/policy.hpp>
#include <tierpool/pool.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tierpool::test {
namespace {

struct no_predictor_for_test {
  void on_access(access_view const&, prefetch_plan&) {}
  void on_free(tensor_id) noexcept {}
  [[nodiscard]] std::string_view name() const noexcept { return "x"; }
};

std::vector<std::uint64_t> ids(prefetch_plan const& p)
{
  std::vector<std::uint64_t> out;
  for (tensor_id t : p.tensors) { out.push_back(static_cast<std::uint64_t>(t)); }
  return out;
}

std::vector<std::uint64_t> access(any_prefetch_predictor& p, std::uint64_t id, std::size_t bytes = 100)
{
  prefetch_plan plan;
  p.on_access({.id = tensor_id{id}, .bytes = bytes}, plan);
  return ids(plan);
}

TEST(SequencePredictor, LearnsTheOrderOfAnIterationAndPredictsTheNextTensors)
{
  auto reg = policy_registry::with_builtins();
  any_prefetch_predictor p = reg.create_predictor("sequence:depth=2");
  EXPECT_EQ(p.name(), "sequence");
  // Iteration 1: 1 2 3 4 5 — nothing known yet.
  for (std::uint64_t id : {1ULL, 2ULL, 3ULL, 4ULL, 5ULL}) { EXPECT_TRUE(access(p, id).empty()) << id; }
  // Iteration 2: each access predicts the two that followed it last time.
  EXPECT_EQ(access(p, 1), (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(access(p, 2), (std::vector<std::uint64_t>{3, 4}));
  EXPECT_EQ(access(p, 3), (std::vector<std::uint64_t>{4, 5}));
  EXPECT_EQ(access(p, 4), (std::vector<std::uint64_t>{5, 1}));  // the order wraps into the next iteration
  EXPECT_EQ(access(p, 5), (std::vector<std::uint64_t>{1, 2}));
  // The newest occurrence wins: a changed order is learned in one iteration.
  EXPECT_EQ(access(p, 1), (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(access(p, 3), (std::vector<std::uint64_t>{4, 5}));
  EXPECT_EQ(access(p, 1), (std::vector<std::uint64_t>{3}));  // after 1 came 3, then 1 again: stop there
  p.on_free(tensor_id{3});
  EXPECT_EQ(access(p, 3), (std::vector<std::uint64_t>{}));  // forgotten
}

TEST(SequencePredictor, ByteBudgetAndDuplicates)
{
  auto reg = policy_registry::with_builtins();
  any_prefetch_predictor p = reg.create_predictor("sequence:depth=8,budget=250");
  for (std::uint64_t id : {1ULL, 2ULL, 2ULL, 3ULL, 4ULL, 5ULL}) { (void)access(p, id); }
  // After 1 came 2, 2 (once in the plan), 3: 100 + 100 + 100 >= 250 stops at three.
  EXPECT_EQ(access(p, 1), (std::vector<std::uint64_t>{2, 3, 4}));
}

TEST(SequencePredictor, RegistryErrorsAndList)
{
  auto reg = policy_registry::with_builtins();
  EXPECT_TRUE(reg.contains_predictor("none"));
  EXPECT_TRUE(reg.contains_predictor("sequence"));
  std::vector<std::string> names;
  for (auto const& i : reg.list_predictors()) { names.push_back(i.name); }
  EXPECT_EQ(names, (std::vector<std::string>{"none", "sequence"}));
  try {
    (void)reg.create_predictor("seqence");
    FAIL();
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("unknown predictor 'seqence'; registered predictors: none, sequence"),
              std::string::npos)
      << e.what();
  }
  try {
    (void)reg.create_predictor("sequence:dept=3");
    FAIL();
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("predictor 'sequence' has no parameter 'dept'"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)reg.create_predictor("sequence:depth=0"), logic_error);
  EXPECT_THROW(reg.add_predictor("sequence", "again", {}, [](policy_params const&) {
    return any_prefetch_predictor{no_predictor_for_test{}};
  }), logic_error);
}

// A pool with the sequence predictor: from the second iteration on, the tensors an
// iteration needs are prefetched ahead of their acquires (counted), every byte survives.
TEST(PoolPredictor, SequencePrefetchesTheNextLayersOfARepeatingLoop)
{
  auto be = make_sim();
  pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
  o.prefetch = "sequence:depth=2";
  pool p{o};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 8; ++i) {  // 8 x 256 KiB: twice the device tier
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 1);
  }
  for (int iter = 0; iter < 4; ++iter) {
    for (auto const& t : ts) {
      lease l = p.acquire(t, access_mode::read, s);
      p.synchronize(s);
    }
  }
  pool_stats const st = p.stats();
  EXPECT_GT(st.predicted_prefetches, 8U);
  EXPECT_GT(st.prefetch_hits + st.prefetch_late, 8U) << "acquires found predicted tensors resident or in flight";
  for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}

TEST(PoolPredictor, UnknownPredictorIsATypedError)
{
  auto be = make_sim();
  pool_options o = small_tiers(be);
  o.prefetch = "oracle";
  try {
    pool p{o};
    FAIL();
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("unknown predictor 'oracle'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tierpool::test

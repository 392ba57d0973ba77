// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// predictor_tests.cpp — the prefetch predictors: the `sequence` predictor's plans on a
// repeating order (hand-worked), its parameters through the registry, and a pool that
// prefetches with it.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/plan_predictor.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/pool.hpp>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
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
  EXPECT_EQ(names, (std::vector<std::string>{"none", "oracle", "plan", "sequence"}));
  try {
    (void)reg.create_predictor("seqence");
    FAIL();
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("unknown predictor 'seqence'; registered predictors: none, oracle, plan, sequence"),
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

// A pool whose predictor spec cannot be honoured refuses to be built, saying why.
void expect_predictor_refused(std::string const& spec, std::string const& why)
{
  auto be = make_sim();
  pool_options o = small_tiers(be);
  o.prefetch = spec;
  try {
    pool p{o};
    FAIL() << spec;
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(PoolPredictor, UnknownPredictorIsATypedError) { expect_predictor_refused("prophet", "unknown predictor 'prophet'"); }

TEST(PoolPredictor, OracleWithoutAScheduleIsATypedError)
{
  expect_predictor_refused("oracle", "needs the program's schedule in pool_options::schedule");
}

}  // namespace
}  // namespace tierpool::test

namespace tierpool::test {
namespace {

// ---- the transfer planner's forecast (plan_predictor) -------------------------------

// One training-like iteration: persistent 1..3, an activation born each iteration (a new
// id), freed at its end. Accesses: w1, a (wd), w2, a, w3 (rw), then a is freed.
struct plan_driver {
  plan_predictor p{plan_predictor::config{}};
  std::uint64_t next_id{100};
  std::uint64_t act{0};
  void access(std::uint64_t id, bool write = false, bool discard = false)
  {
    prefetch_plan unused;
    p.on_access({.id = tensor_id{id}, .bytes = id < 100 ? id * 10 : 500, .write = write, .discard = discard}, unused);
  }
  void iteration()
  {
    act = next_id++;
    p.on_allocate(tensor_id{act}, 500);  // the same size every iteration, a new id
    access(1);
    access(act, true, true);
    access(2);
    access(act);
    access(3, true);
    p.on_free(tensor_id{act});
  }
};

TEST(PlanPredictor, LearnsTheIterationThroughReallocatedActivationsAndForecastsTheNextUses)
{
  plan_driver d;
  for (std::uint64_t id = 1; id <= 3; ++id) { d.p.on_allocate(tensor_id{id}, id * 10); }
  d.iteration();
  EXPECT_EQ(d.p.state(), plan_predictor::phase::learning);
  for (int i = 0; i < 6; ++i) { d.iteration(); }
  ASSERT_EQ(d.p.state(), plan_predictor::phase::planned);
  EXPECT_EQ(d.p.period(), 5U);
  // Mid-iteration: after w1 (position q), the activation of this iteration is next, then w2 ...
  std::uint64_t const act = d.next_id;
  d.p.on_allocate(tensor_id{act}, 500);
  d.access(1);
  std::uint64_t const q = d.p.position();
  EXPECT_EQ(d.p.next_use_of_last(), std::optional<tick>{q + 5}) << "w1 again one period later";
  std::vector<planned_access> ahead(16);
  std::size_t const n = d.p.upcoming(ahead);
  ASSERT_EQ(n, 5U);  // one period ahead: a, w2, a, w3, w1
  EXPECT_EQ(ahead[0].id, tensor_id{act});
  EXPECT_TRUE(ahead[0].discard);
  EXPECT_EQ(ahead[0].when, q + 1);
  EXPECT_EQ(ahead[1].id, tensor_id{2});
  EXPECT_EQ(ahead[1].bytes, 20U);
  EXPECT_EQ(ahead[3].id, tensor_id{3});
  EXPECT_EQ(ahead[4].id, tensor_id{1});
  EXPECT_EQ(ahead[4].when, q + 5);
  // Read in chunks (the pool's step does): skipping 2 gives the same accesses from the third.
  std::vector<planned_access> rest(16);
  ASSERT_EQ(d.p.upcoming(rest, 2), 3U);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(rest[k].id, ahead[k + 2].id) << k;
    EXPECT_EQ(rest[k].when, ahead[k + 2].when) << k;
    EXPECT_EQ(rest[k].last, ahead[k + 2].last) << k;
  }
  EXPECT_EQ(d.p.upcoming(rest, 5), 0U) << "nothing past one period";
  // The activation's read is its last access (it is freed and reborn each iteration); the
  // weights live on (Note [Early write-backs only under pressure]).
  EXPECT_FALSE(ahead[0].last);
  EXPECT_FALSE(ahead[1].last);
  EXPECT_TRUE(ahead[2].last);
  EXPECT_FALSE(ahead[3].last);
  EXPECT_FALSE(ahead[4].last);
  // Before the access, the forecast already says what next_use_of_last will (Note [The
  // forecast before the access]); a tensor the forecast does not have there gets none.
  EXPECT_EQ(d.p.next_use_if_next(tensor_id{act}), std::optional<tick>{q + 3});
  EXPECT_FALSE(d.p.next_use_if_next(tensor_id{2}).has_value());
  d.access(act, true, true);
  EXPECT_EQ(d.p.next_use_of_last(), std::optional<tick>{q + 3}) << "the activation's read two accesses later";
  EXPECT_EQ(d.p.next_use_if_next(tensor_id{2}), std::optional<tick>{q + 7}) << "w2, next at q + 2, again one period later";
  d.access(2);
  d.access(act);
  EXPECT_EQ(d.p.next_use_of_last(), std::optional<tick>{no_next_use}) << "reborn each iteration: never again";
  EXPECT_EQ(d.p.mispredicted(), 0U);
}

// Note [Copy-ins at the latest start]: each access carries the device compute queued on its
// stream since the one before (the pool measures it); the forecast gives every access ahead
// the compute of its counterpart one period back.
TEST(PlanPredictor, TheAccessesAheadCarryTheComputeBeforeThemOnePeriodBack)
{
  plan_predictor p{plan_predictor::config{}};
  for (std::uint64_t id = 1; id <= 4; ++id) { p.on_allocate(tensor_id{id}, 64); }
  auto const compute_before = [](std::uint64_t id) { return tick{id * 1000 + 7}; };
  for (int it = 0; it < 8; ++it) {
    for (std::uint64_t id = 1; id <= 4; ++id) {
      prefetch_plan unused;
      p.on_access({.id = tensor_id{id}, .bytes = 64, .compute = compute_before(id)}, unused);
    }
  }
  ASSERT_EQ(p.state(), plan_predictor::phase::planned);
  std::vector<planned_access> ahead(8);
  std::size_t const n = p.upcoming(ahead);
  ASSERT_EQ(n, 4U);
  for (std::size_t k = 0; k < n; ++k) {
    EXPECT_EQ(ahead[k].compute, compute_before(static_cast<std::uint64_t>(ahead[k].id))) << k;
  }
}

TEST(PlanPredictor, FallsBackWhenTheScheduleChangesAndRelearnsIt)
{
  plan_driver d;
  for (std::uint64_t id = 1; id <= 6; ++id) { d.p.on_allocate(tensor_id{id}, id * 10); }
  for (int i = 0; i < 8; ++i) { d.iteration(); }
  ASSERT_EQ(d.p.state(), plan_predictor::phase::planned);
  // An eval step: another order.
  for (std::uint64_t id : {4ULL, 5ULL, 6ULL}) { d.access(id); }
  EXPECT_EQ(d.p.state(), plan_predictor::phase::fallback);
  EXPECT_EQ(d.p.relearns(), 1U);
  std::vector<planned_access> ahead(16);
  EXPECT_EQ(d.p.upcoming(ahead), 0U) << "no forecast while it relearns";
  EXPECT_FALSE(d.p.next_use_of_last().has_value());
  for (int i = 0; i < 8; ++i) { d.iteration(); }
  EXPECT_EQ(d.p.state(), plan_predictor::phase::planned);
  EXPECT_EQ(d.p.period(), 5U);
}

TEST(PlanPredictor, AScheduleThatNeverRepeatsKeepsItsMemoryBounded)
{
  plan_predictor::config c;
  c.history = 64;
  c.window = 8;
  plan_predictor p{c};
  prefetch_plan unused;
  for (std::uint64_t id = 1; id <= 10'000; ++id) {  // every access a tensor of its own size, never seen again
    p.on_allocate(tensor_id{id}, id);
    p.on_access({.id = tensor_id{id}, .bytes = id}, unused);
    p.on_free(tensor_id{id});
  }
  EXPECT_LE(p.tracked_keys(), 4U * 64U + 1U);
  EXPECT_NE(p.state(), plan_predictor::phase::planned);
  std::vector<planned_access> ahead(8);
  EXPECT_EQ(p.upcoming(ahead), 0U);
}

// An MLP-like training loop (as `tierpool trace gen mlp-train` writes it): weights 1..4,
// initialised by an init pass, then per iteration activations a0..a4 of one size, each
// born just before its layer reads the weight and the activation before it; a backward
// pass reads them in reverse and frees them; an optimizer step rewrites the weights. The
// first iteration's activations are born after the init's last write, the later ones
// after an optimizer step, so their birth keys differ (Note [Aligning the first
// iterations]).
struct mlp_driver {
  plan_predictor p{plan_predictor::config{}};
  static constexpr std::uint64_t kLayers = 8;
  static constexpr std::size_t kAct = 4096;
  std::uint64_t next_id{100};
  std::vector<std::uint64_t> acts;
  void access(std::uint64_t id, bool write = false)
  {
    prefetch_plan unused;
    p.on_access({.id = tensor_id{id}, .bytes = id < 100 ? 1000 + id : kAct, .write = write}, unused);
  }
  /// Weights allocated up front (`upfront`), or each just before its init write, as
  /// PyTorch's module constructors do; initialised last to first, so that the first
  /// activation is born after w1's write, not w8's as after an optimizer step.
  void init(bool upfront)
  {
    if (upfront) {
      for (std::uint64_t w = 1; w <= kLayers; ++w) { p.on_allocate(tensor_id{w}, 1000 + w); }
    }
    for (std::uint64_t w = kLayers; w >= 1; --w) {
      if (!upfront) { p.on_allocate(tensor_id{w}, 1000 + w); }
      access(w, true);
    }
  }
  std::uint64_t born()
  {
    std::uint64_t const id = next_id++;
    p.on_allocate(tensor_id{id}, kAct);
    acts.push_back(id);
    return id;
  }
  void forward()  // 1 + 3 L accesses
  {
    acts.clear();
    access(born(), true);
    for (std::uint64_t l = 1; l <= kLayers; ++l) {
      std::uint64_t const a = born();
      access(l);
      access(acts[l - 1]);
      access(a, true);
    }
  }
  void backward_step(std::uint64_t l)  // 2 accesses
  {
    p.on_free(tensor_id{acts[l]});
    access(acts[l - 1]);
    access(l);
  }
  void rest_of_iteration(std::uint64_t from_layer)  // the backward steps left, the optimizer (L)
  {
    for (std::uint64_t l = from_layer; l >= 1; --l) { backward_step(l); }
    p.on_free(tensor_id{acts[0]});
    for (std::uint64_t w = 1; w <= kLayers; ++w) { access(w, true); }
  }
  void iteration()
  {
    forward();
    rest_of_iteration(kLayers);
  }
};
constexpr std::uint64_t kMlpPeriod = 1 + 6 * mlp_driver::kLayers;

class PlanPredictorAligns : public ::testing::TestWithParam<bool> {};

TEST_P(PlanPredictorAligns, TheFirstIterationsActivationsWithTheSecondsAndPlansWithinIt)
{
  mlp_driver d;
  d.init(GetParam());
  d.iteration();
  EXPECT_EQ(d.p.state(), plan_predictor::phase::learning);
  EXPECT_EQ(d.p.aligned(), 0U);
  // The second iteration: the forecast holds two steps into its backward pass (without the
  // alignment, not before the third iteration: no window of its tokens had repeated).
  d.forward();
  constexpr std::uint64_t L = mlp_driver::kLayers;
  d.backward_step(L);
  d.backward_step(L - 1);
  ASSERT_EQ(d.p.state(), plan_predictor::phase::planned);
  EXPECT_EQ(d.p.period(), kMlpPeriod);
  EXPECT_GE(d.p.aligned(), 1U);
  // Its forecast names this iteration's tensors: the backward pass reads a5 then w6, a4
  // then w5, a3 then w4. (Activations written before the period was found, a0..a3, are
  // aligned at their next access.)
  std::vector<planned_access> ahead(6);
  ASSERT_EQ(d.p.upcoming(ahead), 6U);
  for (std::uint64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(ahead[2 * k].id, tensor_id{d.acts[L - 3 - k]}) << k;
    EXPECT_EQ(ahead[2 * k + 1].id, tensor_id{L - 2 - k}) << k;
  }
  EXPECT_TRUE(ahead[0].last) << "a5 is freed after its backward read";
  d.rest_of_iteration(L - 2);
  std::uint64_t const aligned = d.p.aligned();
  // Later iterations' activations are born under the keys they were aligned to: nothing
  // more to align, nothing mispredicted.
  d.iteration();
  d.iteration();
  EXPECT_EQ(d.p.aligned(), aligned);
  EXPECT_EQ(d.p.mispredicted(), 0U);
  EXPECT_EQ(d.p.relearns(), 0U);
  EXPECT_EQ(d.p.state(), plan_predictor::phase::planned);
  // The forecast in the steady state: a1, written at q, is read by the next layer at q + 2.
  d.acts.clear();
  d.access(d.born(), true);
  std::uint64_t const a1 = d.born();
  d.access(1);
  d.access(d.acts[0]);
  EXPECT_EQ(d.p.next_use_if_next(tensor_id{a1}), std::optional<tick>{d.p.position() + 3});
  d.access(a1, true);
  EXPECT_EQ(d.p.next_use_of_last(), std::optional<tick>{d.p.position() + 2});
}

INSTANTIATE_TEST_SUITE_P(Weights, PlanPredictorAligns, ::testing::Values(true, false),
                         [](auto const& param_info) { return param_info.param ? std::string{"AllocatedUpFront"} : std::string{"AllocatedOneByOne"}; });

// The first period the forecast holds in, no key has been reborn yet: an activation of the
// period before, freed since, still has its last access marked, so that its room counts
// as coming back (Note [Early write-backs only under pressure]). 30 weights are read, then
// an activation is born, written, read and freed.
TEST(PlanPredictor, MarksTheLastAccessOfAFreedTensorBeforeAnyKeyIsReborn)
{
  plan_predictor p{plan_predictor::config{}};
  prefetch_plan unused;
  constexpr std::uint64_t kWeights = 30;
  for (std::uint64_t w = 1; w <= kWeights; ++w) { p.on_allocate(tensor_id{w}, 1000); }
  auto weights = [&](std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t w = from; w <= to; ++w) { p.on_access({.id = tensor_id{w}, .bytes = 1000}, unused); }
  };
  auto activation = [&](std::uint64_t id) {
    p.on_allocate(tensor_id{id}, 4096);
    p.on_access({.id = tensor_id{id}, .bytes = 4096, .write = true}, unused);
    p.on_access({.id = tensor_id{id}, .bytes = 4096}, unused);
    p.on_free(tensor_id{id});
  };
  weights(1, kWeights);
  activation(100);
  weights(1, kWeights - 4);  // the second iteration, up to its last four weights
  ASSERT_EQ(p.state(), plan_predictor::phase::planned);
  std::vector<planned_access> ahead(8);
  ASSERT_EQ(p.upcoming(ahead), 8U);  // w27..w30, the activation's write and read, w1, w2
  EXPECT_FALSE(ahead[3].last) << "a weight lives on";
  EXPECT_GE(static_cast<std::uint64_t>(ahead[4].id), kUnbornTensor) << "this iteration's activation is not born yet";
  EXPECT_FALSE(ahead[4].last);
  EXPECT_TRUE(ahead[5].last) << "its read is its last access: the last iteration's was freed after it";
  EXPECT_FALSE(ahead[6].last);
}

// Property: on a training-like loop perturbed at random (extra temporaries of the
// activations' size born and freed at random points, now and then an "eval" step in
// another order, tensors of a few sizes so that shapes collide), whatever the planner
// aligns, the accesses ahead it names are live tensors (or not born yet), and the next
// use it forecasts lies ahead. Seeds 1..20, 12 iterations each.
TEST(PlanPredictor, NamesOnlyLiveTensorsAheadWhateverItAligns)
{
  std::uint64_t aligned = 0;
  int planned = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    plan_predictor p{plan_predictor::config{}};
    std::mt19937_64 rng(seed);
    std::set<std::uint64_t> live;
    std::uint64_t next = 100;
    prefetch_plan unused;
    std::vector<planned_access> ahead(256);
    auto check_ahead = [&]() {
      std::size_t const n = p.upcoming(ahead);
      for (std::size_t k = 0; k < n; ++k) {
        auto const id = static_cast<std::uint64_t>(ahead[k].id);
        ASSERT_TRUE((id & kUnbornTensor) != 0 || live.contains(id)) << "seed " << seed << ": names freed tensor " << id;
        ASSERT_GT(ahead[k].when, p.position());
      }
      if (auto const f = p.next_use_of_last()) { ASSERT_GT(*f, p.position()); }
    };
    auto access = [&](std::uint64_t id, std::size_t bytes, bool write) {
      p.on_access({.id = tensor_id{id}, .bytes = bytes, .write = write}, unused);
      check_ahead();
    };
    auto born = [&](std::size_t bytes) {
      std::uint64_t const id = next++;
      p.on_allocate(tensor_id{id}, bytes);
      live.insert(id);
      return id;
    };
    auto freed = [&](std::uint64_t id) {
      p.on_free(tensor_id{id});
      live.erase(id);
    };
    auto act_bytes = [](std::size_t l) -> std::size_t { return l % 2 == 0 ? 4096 : 8192; };  // activation l's size
    std::vector<std::uint64_t> w;
    for (int k = 0; k < 6; ++k) { w.push_back(born(1000)); }
    for (std::uint64_t id : w) { access(id, 1000, true); }
    for (int it = 0; it < 12; ++it) {
      if (rng() % 5 == 0) {  // an eval step: weights in reverse, one temporary
        std::uint64_t const t = born(4096);
        for (std::size_t k = w.size(); k-- > 0;) { access(w[k], 1000, false); }
        access(t, 4096, true);
        freed(t);
        if (HasFatalFailure()) { return; }
        continue;
      }
      std::vector<std::uint64_t> a;
      a.push_back(born(4096));
      access(a[0], 4096, true);
      for (std::size_t l = 0; l < w.size(); ++l) {
        std::uint64_t const x = born(act_bytes(l + 1));
        access(w[l], 1000, false);
        access(a[l], act_bytes(l), false);
        access(x, act_bytes(l + 1), true);
        a.push_back(x);
        if (rng() % 4 == 0) {  // a temporary of an activation's size
          std::uint64_t const t = born(4096);
          access(t, 4096, true);
          access(t, 4096, false);
          freed(t);
        }
        if (HasFatalFailure()) { return; }
      }
      for (std::size_t l = w.size(); l-- > 0;) {
        access(a[l], act_bytes(l), false);
        access(w[l], 1000, false);
        freed(a[l + 1]);
        if (HasFatalFailure()) { return; }
      }
      freed(a[0]);
      for (std::uint64_t id : w) { access(id, 1000, true); }
    }
    EXPECT_LE(p.tracked_keys(), 4U * 65536U + 1U);
    aligned += p.aligned();
    planned += p.state() == plan_predictor::phase::planned ? 1 : 0;
  }
  EXPECT_GT(aligned, 0U) << "the property was checked with alignments made";
  EXPECT_GT(planned, 0U);
}

// Two blocks of the same shapes per iteration, each with a temporary freed inside it: the
// temporaries match each other in shape, but the blocks' weights tell them apart, so the
// period learned is the iteration, never a block, and nothing is aligned across blocks.
TEST(PlanPredictor, IdenticalBlocksDoNotPassForEachOther)
{
  plan_predictor p{plan_predictor::config{}};
  prefetch_plan unused;
  auto access = [&](std::uint64_t id, bool write = false) {
    p.on_access({.id = tensor_id{id}, .bytes = id < 100 ? std::size_t{1000} : std::size_t{4096}, .write = write}, unused);
  };
  for (std::uint64_t w = 1; w <= 4; ++w) {
    p.on_allocate(tensor_id{w}, 1000);  // the same size: only their keys differ
    access(w, true);
  }
  std::uint64_t next = 100;
  std::vector<std::uint64_t> saved;
  std::uint64_t per_iteration = 0;
  for (int it = 0; it < 5; ++it) {
    std::uint64_t const before = p.position();
    saved.clear();
    for (std::uint64_t b = 0; b < 2; ++b) {
      std::uint64_t const t = next++;
      p.on_allocate(tensor_id{t}, 4096);
      access(2 * b + 1);
      access(t, true);
      access(2 * b + 2);
      access(t);
      p.on_free(tensor_id{t});
      std::uint64_t const s = next++;
      p.on_allocate(tensor_id{s}, 4096);
      access(s, true);
      saved.push_back(s);
    }
    for (std::uint64_t s : saved) {
      access(s);
      p.on_free(tensor_id{s});
    }
    per_iteration = p.position() - before;
  }
  ASSERT_EQ(p.state(), plan_predictor::phase::planned);
  EXPECT_EQ(p.period(), per_iteration);
  EXPECT_EQ(p.mispredicted(), 0U);
  EXPECT_EQ(p.relearns(), 0U);
}

TEST(PlanPredictor, RegistryParametersAndErrors)
{
  auto reg = policy_registry::with_builtins();
  any_prefetch_predictor p = reg.create_predictor("plan:budget=1MiB,window=64,writeback=off");
  plan_predictor const* const pp = p.target<plan_predictor>();
  ASSERT_NE(pp, nullptr);
  plan_predictor::config const c = pp != nullptr ? pp->options() : plan_predictor::config{};
  EXPECT_EQ(c.budget_bytes, 1_MiB);
  EXPECT_EQ(c.window, 64U);
  EXPECT_FALSE(c.write_back);
  EXPECT_TRUE(c.prefetch);
  EXPECT_TRUE(c.keep);
  EXPECT_TRUE(c.timing);
  any_prefetch_predictor tm = reg.create_predictor("oracle:timing=off");
  plan_predictor const* const tp = tm.target<plan_predictor>();
  ASSERT_NE(tp, nullptr);
  EXPECT_FALSE(tp != nullptr ? tp->options().timing : true);
  EXPECT_THROW((void)reg.create_predictor("plan:timing=soon"), logic_error);
  any_prefetch_predictor k = reg.create_predictor("plan:keep=off");
  plan_predictor const* const kp = k.target<plan_predictor>();
  ASSERT_NE(kp, nullptr);
  EXPECT_FALSE(kp != nullptr ? kp->options().keep : true);
  EXPECT_THROW((void)reg.create_predictor("plan:keep=maybe"), logic_error);
  any_prefetch_predictor o = reg.create_predictor("oracle");
  EXPECT_EQ(o.name(), "oracle");
  EXPECT_EQ(c.victim_sample, 8U);
  any_prefetch_predictor vs = reg.create_predictor("oracle:sample=1");
  plan_predictor const* const vp = vs.target<plan_predictor>();
  ASSERT_NE(vp, nullptr);
  EXPECT_EQ(vp != nullptr ? vp->options().victim_sample : 0U, 1U);
  expect_predictor_refused("plan:sample=0", "plan predictor: sample must be in 1..64");
  expect_predictor_refused("oracle:sample=65", "plan predictor: sample must be in 1..64");
  EXPECT_THROW((void)reg.create_predictor("plan:window=0"), logic_error);
  EXPECT_THROW((void)reg.create_predictor("plan:history=10"), logic_error);
  EXPECT_THROW((void)reg.create_predictor("oracle:history=100"), logic_error);  // the oracle learns nothing
}

// A pool with the planner, on real bytes: a loop over twice the device tier, half the
// tensors rewritten on the host each iteration (their device copies go stale). The planner
// learns the loop and prefetches; every byte survives every eviction and prefetch. (Early
// write-backs of dirty device copies: PoolStressPlanner, PoolFaultPlanner.)
class PoolPlanner : public ::testing::TestWithParam<char const*> {};

TEST_P(PoolPlanner, LearnsALoopPrefetchesAndKeepsEveryByte)
{
  auto be = make_sim();
  pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
  o.prefetch = GetParam();
  pool p{o};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 8; ++i) {  // 8 x 256 KiB: twice the device tier
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 0);
  }
  for (std::uint32_t iter = 1; iter <= 8; ++iter) {
    for (std::uint64_t i = 0; i < ts.size(); ++i) {
      {
        lease l = p.acquire(ts[i], access_mode::read, s);
        p.synchronize(s);
      }
      if (i % 2 == 0) {
        fill(p, ts[i], i, iter);  // rewritten on the host: the device copy goes stale
      }
    }
    for (std::uint64_t i = 0; i < ts.size(); ++i) {
      ASSERT_TRUE(check(p, ts[i], i, i % 2 == 0 ? iter : 0)) << "iteration " << iter << " tensor " << i;
    }
    ASSERT_TRUE(p.validate());
  }
  pool_stats const st = p.stats();
  EXPECT_EQ(st.planner_state, "planned");
  EXPECT_GT(st.planned_prefetches, 8U);
  EXPECT_EQ(st.planned_prefetches, st.prefetches);
  EXPECT_NE(p.summary().find("planner planned"), std::string::npos) << p.summary();
  // Only the host writes here: nothing is dirty on the device, nothing is written back.
  EXPECT_EQ(st.bytes_d2h, 0U);
  EXPECT_EQ(p.summary().find("write-backs:"), std::string::npos) << p.summary();
  EXPECT_NE(p.summary_json().find("\"planned_prefetches\""), std::string::npos);
}

// A training loop on a live pool (Note [Aligning the first iterations], plan_predictor.cpp):
// 6 weights of 128 KiB, first read in order by an init pass; per iteration 7
// activations born one per layer and written on the device by a "kernel", read in the
// backward pass (their bytes checked there) and freed, then the weights rewritten on the
// host (the optimizer). The device tier holds 8 of the 13 live tensors. The first
// iteration's activations are born after the init's last read (w6), the later ones after
// the backward pass's (w1), so the planner has to align them to learn the loop within its
// second iteration; every byte survives.
TEST(PoolPlanner, LearnsATrainingLoopWithinItsSecondIteration)
{
  auto be = make_sim();
  pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
  o.prefetch = "plan";
  pool p{o};
  stream_handle s = p.create_stream();
  constexpr std::uint64_t kLayers = 6;
  std::vector<tensor> w;
  for (std::uint64_t l = 0; l < kLayers; ++l) {
    w.push_back(p.allocate(128_KiB));
    fill(p, w.back(), l, 0);
  }
  for (std::uint64_t l = 0; l < kLayers; ++l) { lease const r = p.acquire(w[l], access_mode::read, s); }
  std::vector<std::unique_ptr<modify_job>> jobs;
  auto iteration = [&](std::uint32_t it) {
    std::vector<tensor> a;
    a.push_back(p.allocate(128_KiB));
    ASSERT_EQ(modify_on_stream(p, a[0], s, 100, it, jobs), status::ok);
    for (std::uint64_t l = 0; l < kLayers; ++l) {
      a.push_back(p.allocate(128_KiB));
      { lease const r = p.acquire(w[l], access_mode::read, s); }
      { lease const r = p.acquire(a[l], access_mode::read, s); }
      ASSERT_EQ(modify_on_stream(p, a[l + 1], s, 101 + l, it, jobs), status::ok);
    }
    for (std::uint64_t l = kLayers; l-- > 0;) {
      { lease const r = p.acquire(a[l], access_mode::read, s); }
      { lease const r = p.acquire(w[l], access_mode::read, s); }
      p.synchronize(s);
      ASSERT_TRUE(check(p, a[l + 1], 101 + l, it)) << "iteration " << it << " activation " << l + 1;
      p.free(a[l + 1]);
    }
    ASSERT_TRUE(check(p, a[0], 100, it));
    p.free(a[0]);
    for (std::uint64_t l = 0; l < kLayers; ++l) {
      ASSERT_TRUE(check(p, w[l], l, it - 1)) << "iteration " << it << " weight " << l;
      fill(p, w[l], l, it);
    }
    ASSERT_TRUE(p.validate());
  };
  iteration(1);
  EXPECT_EQ(p.stats().planner_state, "learning");
  iteration(2);
  EXPECT_EQ(p.stats().planner_state, "planned") << "the forecast holds within the second iteration";
  for (std::uint32_t it = 3; it <= 5; ++it) { iteration(it); }
  pool_stats const st = p.stats();
  EXPECT_EQ(st.planner_state, "planned");
  EXPECT_EQ(st.planner_relearns, 0U);
  EXPECT_EQ(st.planner_mispredicted, 0U);
  EXPECT_GT(st.planned_prefetches, 0U);
  EXPECT_GT(st.bytes_d2h, 0U) << "activations written on the device were evicted and written back";
}

// The default planner, cleaning ahead of the policy too, and with planned prefetches off:
// early write-backs alone, still every byte.
INSTANTIATE_TEST_SUITE_P(Variants, PoolPlanner, ::testing::Values("plan", "plan:clean_ahead=on", "plan:stream_reuse=off",
                                                                  "plan:keep=off"));

// Early write-backs (Note [Early write-backs only under pressure], pool_impl.cpp): an oracle
// without prefetches, so that its only copies are early write-backs, on a 1 MiB device tier
// holding 9 fillers. Its schedule: the fillers, then 11 tensors on the host, 20 x 64 KiB
// ahead in all (more than the tier). A tensor written with a next use far past that is
// written back early 8 accesses after its write, once the accesses ahead must evict
// something before its use.
class early_write_back_rig {
 public:
  static constexpr tick kFar = 1'000'000;

  explicit early_write_back_rig(bool ahead_freed)
  {
    pool_options o = small_tiers(be_, 1_MiB, 0, 16_MiB);
    o.prefetch = "oracle:prefetch=off";
    o.schedule = schedule_;
    p = std::make_unique<pool>(o);
    s = p->create_stream();
    for (std::uint64_t k = 0; k < 9; ++k) {
      fillers_.push_back(p->allocate(64_KiB));
      fill(*p, fillers_.back(), 100 + k, 1);
      use(fillers_.back());
    }
    for (int k = 0; k < 11; ++k) { later_.push_back(p->allocate(64_KiB, {.preferred_tier = tier_id{1}})); }
    for (tensor const& t : fillers_) { schedule_->ahead.push_back({.id = t.id(), .bytes = t.bytes()}); }
    // ahead_freed: each of the later tensors is freed after its access, so the live bytes
    // ahead never outgrow the tier and nothing needs to be evicted.
    for (tensor const& t : later_) { schedule_->ahead.push_back({.id = t.id(), .bytes = t.bytes(), .last = ahead_freed}); }
  }
  void use(tensor const& t) { lease l = p->acquire(t, access_mode::read, s); }
  /// Rewrite t on the stream (key, version), give it a far next use, then 10 device hits.
  void write(tensor const& t, std::uint64_t key, std::uint32_t version)
  {
    ASSERT_EQ(modify_on_stream(*p, t, s, key, version, jobs_), status::ok);
    p->set_next_use(t, kFar);
    for (int k = 0; k < 10; ++k) { use(fillers_[static_cast<std::size_t>(k * 4) % fillers_.size()]); }
    p->synchronize(s);
  }
  /// 16 new tensors of 64 KiB through the device tier: everything else there is evicted.
  void flush()
  {
    for (std::uint64_t k = 0; k < 16; ++k) {
      others_.push_back(p->allocate(64_KiB));
      fill(*p, others_.back(), 200 + k, 1);
      use(others_.back());
    }
    p->synchronize(s);
  }
  [[nodiscard]] bool bytes_intact()
  {
    for (std::uint64_t k = 0; k < fillers_.size(); ++k) {
      if (!check(*p, fillers_[k], 100 + k, 1)) { return false; }
    }
    for (std::uint64_t k = 0; k < others_.size(); ++k) {
      if (!check(*p, others_[k], 200 + k, 1)) { return false; }
    }
    return p->validate();
  }

  std::unique_ptr<pool> p;
  stream_handle s{};

 private:
  std::shared_ptr<sim_backend> be_ = make_sim();
  std::shared_ptr<fixed_schedule> schedule_ = std::make_shared<fixed_schedule>();
  std::vector<tensor> fillers_, later_, others_;
  std::vector<std::unique_ptr<modify_job>> jobs_;
};

TEST(PoolPlannerWriteBacks, OnlyWhenTheLiveBytesAheadOutgrowTheTier)
{
  for (bool const freed : {false, true}) {
    SCOPED_TRACE(freed ? "the tensors ahead are freed on the way" : "the tensors ahead stay live");
    early_write_back_rig r{freed};
    tensor a = r.p->allocate(64_KiB);
    fill(*r.p, a, 1, 1);
    r.use(a);
    r.write(a, 1, 2);
    pool_stats const st = r.p->stats();
    ASSERT_EQ(st.planner_state, "oracle");
    EXPECT_EQ(st.early_write_backs, freed ? 0U : 1U);
    EXPECT_EQ(st.early_write_backs_wasted, 0U);
    r.flush();  // a is evicted: written back now unless it was early
    EXPECT_EQ(r.p->stats().early_write_backs_wasted, 0U) << "an eviction used the early copy";
    EXPECT_TRUE(check(*r.p, a, 1, 2));
    EXPECT_TRUE(r.bytes_intact());
  }
}

TEST(PoolPlannerWriteBacks, ARewriteOrAFreeBeforeTheEvictionWastesTheEarlyCopy)
{
  early_write_back_rig r{false};
  tensor a = r.p->allocate(64_KiB);
  tensor b = r.p->allocate(64_KiB);
  fill(*r.p, a, 1, 1);
  fill(*r.p, b, 2, 1);
  r.use(a);
  r.use(b);
  r.write(a, 1, 2);
  ASSERT_EQ(r.p->stats().early_write_backs, 1U);
  r.write(a, 1, 3);  // written again while resident: the early copy is stale, unused
  pool_stats st = r.p->stats();
  EXPECT_EQ(st.early_write_backs_wasted, 1U);
  EXPECT_EQ(st.early_write_back_wasted_bytes, 64_KiB);
  EXPECT_EQ(st.early_write_backs, 2U) << "and written back early again";
  r.write(b, 2, 2);
  ASSERT_EQ(r.p->stats().early_write_backs, 3U);
  r.p->free(b);  // freed while resident: its early copy was for nothing
  st = r.p->stats();
  EXPECT_EQ(st.early_write_backs_wasted, 2U);
  EXPECT_EQ(st.early_write_back_wasted_bytes, 128_KiB);
  tensor c = r.p->allocate(64_KiB);
  fill(*r.p, c, 3, 1);
  r.use(c);
  r.write(c, 3, 2);
  ASSERT_EQ(r.p->stats().early_write_backs, 4U);
  std::uint64_t const d2h = r.p->stats().bytes_d2h;
  r.p->demote(c, tier_id{1});  // its device copy leaves without a copy: the early one served
  EXPECT_EQ(r.p->stats().bytes_d2h, d2h);
  r.write(c, 3, 3);
  EXPECT_EQ(r.p->stats().early_write_backs_wasted, 2U) << "an early copy a demote used is not wasted";
  EXPECT_TRUE(check(*r.p, c, 3, 3));
  r.flush();  // a's latest early copy is what its eviction keeps
  r.write(a, 1, 4);
  st = r.p->stats();
  EXPECT_EQ(st.early_write_backs_wasted, 2U) << "an early copy an eviction used is not wasted";
  EXPECT_TRUE(check(*r.p, a, 1, 4));
  EXPECT_TRUE(r.bytes_intact());
  EXPECT_NE(r.p->summary().find(", wasted 2 (128.0 KiB)"), std::string::npos) << r.p->summary();
  EXPECT_NE(r.p->summary_json().find("\"early_write_backs_wasted\":2"), std::string::npos) << r.p->summary_json();
}

}  // namespace
}  // namespace tierpool::test

namespace tierpool::test {
namespace {

// On the virtual clock the pool judges a used prefetch in device time: on time when its copy
// completed before the stream reached the acquire, late (and by how much) otherwise.
TEST(PrefetchTiming, DeviceTimeSaysOnTimeOrLateAndByHowMuch)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);  // pcie4: 25 GB/s, 2 us per copy
  pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
  pool p{o};
  stream_handle const s = p.create_stream();
  tensor a = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  tensor b = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  tick const copy_ns = link_model::pcie4().transfer_ns(256_KiB);
  // a: prefetched, then a kernel twice as long as the copy, then used: on time.
  p.prefetch(a, tier_id{0});
  ASSERT_EQ(be->compute_async(s, 2 * copy_ns), status::ok);
  { lease l = p.acquire(a, access_mode::read, s); }
  pool_stats st = p.stats();
  EXPECT_EQ(st.prefetch_on_time_device, 1U);
  EXPECT_EQ(st.prefetch_late_device, 0U);
  // Its copy ended at copy_ns, the stream reached the acquire at 2 copy_ns: ready copy_ns ahead.
  EXPECT_NEAR(st.prefetch_lead_seconds, static_cast<double>(copy_ns) * 1e-9, 1e-12);
  // b: its copy follows a's on the link; used at once on a stream with nothing queued,
  // which waits for it.
  stream_handle const s2 = p.create_stream();
  tick const stream_at = be->stream_tail(s2).value_or(0);
  p.prefetch(b, tier_id{0});
  { lease l = p.acquire(b, access_mode::read, s2); }
  st = p.stats();
  EXPECT_EQ(st.prefetch_late_device, 1U);
  EXPECT_GT(st.prefetch_lateness_seconds, 0.0);
  EXPECT_LE(st.prefetch_lateness_seconds, static_cast<double>(2 * copy_ns) * 1e-9);
  EXPECT_GE(be->stream_tail(s2).value_or(0), stream_at + copy_ns);
  EXPECT_NE(p.summary().find("prefetches in device time: on time 1"), std::string::npos) << p.summary();
  EXPECT_NE(p.summary().find("late 1 (waited"), std::string::npos) << p.summary();
  // c: prefetched and freed unused: its bytes count as wasted.
  tensor c = p.allocate(128_KiB, {.preferred_tier = tier_id{1}});
  p.prefetch(c, tier_id{0});
  p.free(c);
  st = p.stats();
  EXPECT_EQ(st.prefetch_wasted, 1U);
  EXPECT_EQ(st.prefetch_wasted_bytes, 128_KiB);
  EXPECT_TRUE(p.validate());
}

// An oracle's schedule the test moves along: the accesses after position `at`.
class stepped_schedule final : public schedule_source {
 public:
  std::vector<planned_access> all;  // positions 0, 1, ...
  std::size_t at{0};
  std::size_t upcoming(std::span<planned_access> out) noexcept override
  {
    std::size_t n = 0;
    for (std::size_t i = at + 1; i < all.size() && n < out.size(); ++i) { out[n++] = all[i]; }
    return n;
  }
};

/// A sim on the virtual clock (64 MiB, real memory) whose device times the pool sees ahead, or,
/// `hidden`, does not (sim_options::hide_device_times: as on a GPU).
std::shared_ptr<sim_backend> make_virtual_sim(bool hidden)
{
  sim_options so;
  so.clock = sim_clock_mode::virtual_clock;
  so.device_bytes = 64_MiB;
  so.memory = sim_memory_mode::real;
  so.hide_device_times = hidden;
  return std::make_shared<sim_backend>(so);
}

// Note [Copy-ins at the latest start]: x is on the host and the device tier is full, so its
// prefetch has to evict f (next used much later). Three accesses of resident tensors come
// first, each after a kernel four copies long. With timing the planner waits for the last
// step that still has x copied in before its use (the one just before it); without, x is
// copied in at the first step. Either way its copy is done by its use, and every byte is there.
// The same where the backend hides its device times, as a GPU does (Note [Device times
// measured with events], device_timer.cpp): the host waits for the stream before each step,
// so the events the pool records complete and its h2d queue is known empty, and the planner
// decides as where it knows the times ahead.
TEST(PrefetchTiming, ACopyInThatMustEvictWaitsForItsLatestStart)
{
  for (int const mode : {0, 1, 2}) {
    bool const timing = mode != 1;
    bool const hidden = mode == 2;
    SCOPED_TRACE(hidden ? "timing on, device times hidden" : timing ? "timing on" : "timing off");
    auto be = make_virtual_sim(hidden);
    auto sched = std::make_shared<stepped_schedule>();
    pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
    o.prefetch = timing ? "oracle:writeback=off,keep=off" : "oracle:writeback=off,keep=off,timing=off";
    o.schedule = sched;
    pool p{o};
    stream_handle const s = p.create_stream();
    tick const copy_ns = link_model::pcie4().transfer_ns(256_KiB);
    std::vector<tensor> g;
    for (std::uint64_t k = 0; k < 3; ++k) {
      g.push_back(p.allocate(256_KiB));
      fill(p, g.back(), k, 1);
    }
    tensor f = p.allocate(256_KiB);
    fill(p, f, 9, 1);
    tensor x = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
    fill(p, x, 7, 1);
    for (tensor const& t : g) { lease l = p.acquire(t, access_mode::read, s); }  // resident
    { lease l = p.acquire(f, access_mode::read, s); }
    // The next uses the program gives (as a replay does): the schedule's, f and the g's
    // once used far later.
    p.set_next_use(f, 1'000'000);
    for (std::uint64_t k = 0; k < 3; ++k) { p.set_next_use(g[k], k); }
    p.set_next_use(x, 3);
    ASSERT_EQ(p.stats().tiers[0].used_bytes.current, static_cast<std::int64_t>(1_MiB)) << "the device tier is full";
    // The schedule: g0, g1, g2, x at positions 0..3, each after a kernel of 4 copies.
    for (std::uint64_t k = 0; k < 3; ++k) { sched->all.push_back({.id = g[k].id(), .bytes = 256_KiB, .when = k, .compute = 4 * copy_ns}); }
    sched->all.push_back({.id = x.id(), .bytes = 256_KiB, .when = 3, .compute = 4 * copy_ns});
    std::vector<std::uint64_t> issued_after;  // planned prefetches after each step
    for (std::size_t k = 0; k < 3; ++k) {
      p.synchronize(s);
      ASSERT_EQ(be->compute_async(s, 4 * copy_ns), status::ok);
      sched->at = k;
      { lease l = p.acquire(g[k], access_mode::read, s); }
      p.set_next_use(g[k], 2'000'000 + k);
      issued_after.push_back(p.stats().planned_prefetches);
    }
    std::vector<std::uint64_t> const expected = timing ? std::vector<std::uint64_t>{0, 0, 1} : std::vector<std::uint64_t>{1, 1, 1};
    EXPECT_EQ(issued_after, expected);
    ASSERT_EQ(be->compute_async(s, 4 * copy_ns), status::ok);
    sched->at = 3;
    { lease l = p.acquire(x, access_mode::read, s); }
    pool_stats const st = p.stats();
    if (hidden) {
      EXPECT_EQ(st.prefetch_on_time_device + st.prefetch_late_device, 0U) << "judged in device time only where known ahead";
      EXPECT_GT(st.planner_timed_accesses, 0U);
    } else {
      EXPECT_EQ(st.planner_timed_accesses, 0U) << "known ahead: nothing to measure";
      EXPECT_EQ(st.prefetch_on_time_device, 1U);
      EXPECT_EQ(st.prefetch_late_device, 0U);
      // Copied in at the last step: ready about three copies before its use; at the first: eleven.
      double const lead = st.prefetch_lead_seconds / (static_cast<double>(copy_ns) * 1e-9);
      if (timing) {
        EXPECT_LT(lead, 4.0);
      } else {
        EXPECT_GT(lead, 8.0);
      }
    }
    EXPECT_TRUE(check(p, x, 7, 1));
    EXPECT_TRUE(check(p, f, 9, 1));
    for (std::uint64_t k = 0; k < 3; ++k) { EXPECT_TRUE(check(p, g[k], k, 1)); }
    EXPECT_TRUE(p.validate());
  }
}

// Note [Prefetch victims the forecast needs last], transfer_planner.cpp: a full device tier
// of four tensors, used g0..g3 (lru would evict g0 first), all next used after x, so doing
// no harm lets x's prefetch evict any of them. Sampled, it evicts g2, the one the forecast
// needs last; with sample=1 the policy's order gives g0, needed first of them.
TEST(PoolPlanner, APrefetchEvictsTheVictimTheForecastNeedsLast)
{
  for (std::uint32_t const sample : {8U, 1U}) {
    SCOPED_TRACE("sample=" + std::to_string(sample));
    auto be = make_sim();
    auto sched = std::make_shared<stepped_schedule>();
    pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
    o.policy = "lru";
    o.prefetch = "oracle:writeback=off,keep=off,timing=off,sample=" + std::to_string(sample);
    o.schedule = sched;
    pool p{o};
    stream_handle const s = p.create_stream();
    std::vector<tensor> g;
    for (std::uint64_t k = 0; k < 4; ++k) {
      g.push_back(p.allocate(256_KiB));
      fill(p, g.back(), k, 1);
    }
    tensor x = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
    fill(p, x, 7, 1);
    for (tensor const& t : g) { lease l = p.acquire(t, access_mode::read, s); }  // lru order g0..g3
    ASSERT_EQ(p.stats().tiers[0].used_bytes.current, static_cast<std::int64_t>(1_MiB)) << "the device tier is full";
    ASSERT_EQ(p.residency(x).home, tier_id{1});
    tick const next[] = {10, 20, 40, 30};
    for (std::uint64_t k = 0; k < 4; ++k) { p.set_next_use(g[k], next[k]); }
    p.set_next_use(x, 1);
    sched->all.push_back({.id = g[3].id(), .bytes = 256_KiB, .when = 0});
    sched->all.push_back({.id = x.id(), .bytes = 256_KiB, .when = 1});
    sched->at = 0;
    { lease l = p.acquire(g[3], access_mode::read, s); }  // the step: x is next
    p.synchronize(s);
    ASSERT_EQ(p.stats().planned_prefetches, 1U);
    EXPECT_EQ(p.residency(x).home, tier_id{0});
    std::size_t const evicted = sample > 1 ? 2 : 0;
    for (std::size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(p.residency(g[k]).home, tier_id{k == evicted ? 1U : 0U}) << "g" << k;
    }
    sched->at = 1;
    { lease l = p.acquire(x, access_mode::read, s); }
    EXPECT_TRUE(check(p, x, 7, 1));
    for (std::uint64_t k = 0; k < 4; ++k) { EXPECT_TRUE(check(p, g[k], k, 1)); }
    EXPECT_TRUE(p.validate());
  }
}

// A pool with a 4 MiB device tier and the prefetch spec given, and `n` tensors of `bytes`
// on it, each filled with its index as the key (version 1).
pool planner_pool(std::string spec)
{
  pool_options o = small_tiers(make_sim(), 4_MiB, 0, 16_MiB);
  o.prefetch = std::move(spec);
  return pool{o};
}

std::vector<tensor> filled_tensors(pool& p, std::size_t n, std::size_t bytes)
{
  std::vector<tensor> ts;
  for (std::uint64_t k = 0; k < n; ++k) {
    ts.push_back(p.allocate(bytes));
    fill(p, ts.back(), k, 1);
  }
  return ts;
}

// Note [A quiet window is walked once], pool_impl.cpp: eight tensors that fit the device tier,
// used in a loop with `plan`. Once the forecast holds, every tensor ahead is resident and the
// steps walk the window only every so often. A tensor demoted out of the device is prefetched
// back before its use all the same (the demotion ends the quiet window), and every byte
// survives.
TEST(PoolPlanner, ADemotionEndsAQuietWindow)
{
  pool p = planner_pool("plan:probe=off");
  stream_handle const s = p.create_stream();
  std::vector<tensor> const ts = filled_tensors(p, 8, 256_KiB);  // 2 MiB in a 4 MiB device tier
  for (int it = 0; it < 8; ++it) {
    for (tensor const& t : ts) { lease const l = p.acquire(t, access_mode::read, s); }
  }
  p.synchronize(s);
  ASSERT_EQ(p.stats().planner_state, "planned");
  for (tensor const& t : ts) { ASSERT_EQ(p.residency(t).home, tier_id{0}); }
  std::uint64_t const misses = p.stats().misses;
  p.demote(ts[3], tier_id{1});
  ASSERT_EQ(p.residency(ts[3]).home, tier_id{1});
  std::uint64_t const planned = p.stats().planned_prefetches;
  for (std::uint64_t k = 0; k < 3; ++k) { lease const l = p.acquire(ts[k], access_mode::read, s); }
  p.synchronize(s);
  EXPECT_EQ(p.stats().planned_prefetches, planned + 1) << "the step after the demotion walked";
  EXPECT_EQ(p.residency(ts[3]).home, tier_id{0});
  { lease const l = p.acquire(ts[3], access_mode::read, s); }
  EXPECT_EQ(p.stats().misses, misses) << "its use found it on the device";
  p.synchronize(s);
  for (std::uint64_t k = 0; k < 8; ++k) { EXPECT_TRUE(check(p, ts[k], k, 1)) << k; }
  EXPECT_TRUE(p.validate());
}

// Note [A quiet window is walked once], pool_impl.cpp, its far end: eight resident tensors in
// a loop with a window of 4 accesses, so a quiet step sees only the accesses that enter the
// window. At the end of each iteration the host writes t5 in place: its device copy goes
// stale, and nothing is evicted, demoted or grown. The step where t5 enters the window's far
// end finds it not valid on the device and walks, and the walk refreshes it ahead of its use,
// every iteration, whatever step last marked the window quiet.
TEST(PoolPlanner, AStaleCopyEnteringAQuietWindowIsRefreshedAhead)
{
  pool p = planner_pool("plan:probe=off,window=4");
  stream_handle const s = p.create_stream();
  std::vector<tensor> const ts = filled_tensors(p, 8, 256_KiB);  // 2 MiB in a 4 MiB device tier
  auto stale_on_device = [&](tensor const& t) {
    tensor_residency const r = p.residency(t);
    tensor_copy const* c = r.copy_in(tier_id{0});
    return c == nullptr || !c->valid;
  };
  std::uint32_t version = 1;
  std::uint64_t refreshed = 0;
  for (int it = 0; it < 24; ++it) {
    for (std::uint64_t k = 0; k < 8; ++k) {
      if (k == 5 && it >= 8) {
        p.synchronize(s);
        if (!stale_on_device(ts[5])) { ++refreshed; }
        EXPECT_FALSE(stale_on_device(ts[5])) << "iteration " << it << ": refreshed before its use";
      }
      lease const l = p.acquire(ts[k], access_mode::read, s);
    }
    p.synchronize(s);
    ASSERT_EQ(p.residency(ts[5]).home, tier_id{0});
    {  // the host writes t5 in place
      lease h = p.acquire_host(ts[5], access_mode::read_write);
      write_pattern(h.data(), h.bytes(), 5, ++version);
    }
    ASSERT_TRUE(stale_on_device(ts[5]));
  }
  EXPECT_EQ(p.stats().planner_state, "planned");
  EXPECT_EQ(refreshed, 16U);
  EXPECT_EQ(p.stats().tiers[0].evictions, 0U);
  for (std::uint64_t k = 0; k < 8; ++k) { EXPECT_TRUE(check(p, ts[k], k, k == 5 ? version : 1)) << k; }
  EXPECT_TRUE(p.validate());
}

// Note [A quiet window is walked once], its unborn rule: a loop of six 256 KiB tensors that
// fit the 4 MiB device tier, a window of 4 accesses, and at each period's end a 3.5 MiB
// tensor born, used and freed: with the three loop tensors before it in the window it
// outgrows the tier. Eleven accesses before that birth the loop writes d, next used a period
// later. The step that sees the unborn tensor enter the window's far end walks (its bytes
// are pressure ahead) instead of staying quiet, and so does the next, which writes d back
// early, off the critical path, every period. Quiet steps there would drop the write-back.
TEST(PoolPlanner, ATensorBornAheadEndsAQuietWindow)
{
  auto be = make_sim();
  pool_options o = small_tiers(be, 4_MiB, 0, 32_MiB);
  o.prefetch = "plan:probe=off,window=4";
  pool p{o};
  stream_handle const s = p.create_stream();
  std::vector<tensor> a;
  for (std::uint64_t k = 0; k < 6; ++k) {
    a.push_back(p.allocate(256_KiB));
    fill(p, a.back(), k, 1);
  }
  tensor d = p.allocate(256_KiB);
  fill(p, d, 9, 1);
  constexpr int kIterations = 12;
  for (int it = 0; it < kIterations; ++it) {
    for (int r = 0; r < 7; ++r) {
      for (tensor const& t : a) { lease const l = p.acquire(t, access_mode::read, s); }
    }
    { lease const l = p.acquire(d, access_mode::read_write, s); }  // dirty on the device
    for (std::uint64_t k = 0; k < 10; ++k) { lease const l = p.acquire(a[k % 6], access_mode::read, s); }
    tensor n = p.allocate(3_MiB + 768_KiB);
    { lease const l = p.acquire(n, access_mode::write_discard, s); }
    p.synchronize(s);
    p.free(n);
    ASSERT_TRUE(p.validate()) << it;
  }
  pool_stats const st = p.stats();
  EXPECT_EQ(st.planner_state, "planned");
  EXPECT_GE(st.early_write_backs, static_cast<std::uint64_t>(kIterations - 4)) << "d, every planned period";
  for (std::uint64_t k = 0; k < 6; ++k) { EXPECT_TRUE(check(p, a[k], k, 1)) << k; }
  EXPECT_TRUE(check(p, d, 9, 1));
}

/// A virtual-clock sim behind a gate: once armed for a thread, that thread's `at`-th call of
/// known_stream_time waits until the test opens the gate (at most 30 s, so nothing hangs).
class gated_backend final : public backend {
 public:
  explicit gated_backend(std::shared_ptr<sim_backend> inner) : in_(std::move(inner)) {}
  void arm(std::thread::id who, int at)
  {
    std::lock_guard lock(mtx_);
    who_ = who;
    at_ = at;
    calls_ = 0;
  }
  /// Wait until the armed call is held; false after `limit`.
  bool wait_held(std::chrono::seconds limit)
  {
    std::unique_lock lock(mtx_);
    return cv_.wait_for(lock, limit, [&] { return held_; });
  }
  void open()
  {
    std::lock_guard lock(mtx_);
    open_ = true;
    cv_.notify_all();
  }

  [[nodiscard]] std::optional<tick> known_stream_time(stream_handle s) const noexcept override
  {
    std::unique_lock lock(mtx_);
    if (who_ == std::this_thread::get_id() && ++calls_ == at_) {
      held_ = true;
      cv_.notify_all();
      (void)cv_.wait_for(lock, std::chrono::seconds(30), [&] { return open_; });
    }
    lock.unlock();
    return in_->known_stream_time(s);
  }
  [[nodiscard]] std::optional<tick> known_completion(event_handle e) const noexcept override { return in_->known_completion(e); }
  [[nodiscard]] backend_caps const& caps() const noexcept override { return in_->caps(); }
  [[nodiscard]] status allocate(tier_kind k, std::size_t n, void** out, int numa) noexcept override { return in_->allocate(k, n, out, numa); }
  void deallocate(tier_kind k, void* ptr, std::size_t n) noexcept override { in_->deallocate(k, ptr, n); }
  [[nodiscard]] status device_memory_info(std::size_t* f, std::size_t* t) noexcept override { return in_->device_memory_info(f, t); }
  [[nodiscard]] status create_stream(stream_handle* out, int prio) noexcept override { return in_->create_stream(out, prio); }
  void destroy_stream(stream_handle s) noexcept override { in_->destroy_stream(s); }
  [[nodiscard]] status synchronize_stream(stream_handle s) noexcept override { return in_->synchronize_stream(s); }
  [[nodiscard]] status create_event(event_handle* out) noexcept override { return in_->create_event(out); }
  void destroy_event(event_handle e) noexcept override { in_->destroy_event(e); }
  [[nodiscard]] status record_event(event_handle e, stream_handle s) noexcept override { return in_->record_event(e, s); }
  [[nodiscard]] status query_event(event_handle e) noexcept override { return in_->query_event(e); }
  [[nodiscard]] status synchronize_event(event_handle e) noexcept override { return in_->synchronize_event(e); }
  [[nodiscard]] status stream_wait_event(stream_handle s, event_handle e) noexcept override { return in_->stream_wait_event(s, e); }
  [[nodiscard]] status copy_async(copy_desc const& d, stream_handle s) noexcept override { return in_->copy_async(d, s); }
  [[nodiscard]] status prefetch_async(void* p, std::size_t n, memory_location to, stream_handle s) noexcept override
  {
    return in_->prefetch_async(p, n, to, s);
  }
  [[nodiscard]] status advise(void* p, std::size_t n, mem_advice a, memory_location w) noexcept override { return in_->advise(p, n, a, w); }
  [[nodiscard]] status launch_host_func(stream_handle s, host_fn fn, void* user) noexcept override
  {
    return in_->launch_host_func(s, fn, user);
  }
  [[nodiscard]] tick now() const noexcept override { return in_->now(); }
  [[nodiscard]] std::string last_error() const override { return in_->last_error(); }

 private:
  std::shared_ptr<sim_backend> in_;
  mutable std::mutex mtx_;
  mutable std::condition_variable cv_;
  std::thread::id who_{};
  int at_{0};
  mutable int calls_{0};
  mutable bool held_{false};
  bool open_{false};
};

// Note [A planner step never waits for another thread's], pool_impl.cpp: thread A's planner
// step is held inside (its backend call for the stream's device time, made under the
// prediction lock: the second call of its acquire, after the one that marks where the
// acquire began). Another thread's acquire meanwhile returns without waiting for it, its
// access not told and counted as a busy skip; A's step then ends, and every byte survives.
// On the code before (the step waited for the lock) the second acquire never returns while
// A is held: the test fails after 10 s instead of hanging.
TEST(PoolPlanner, AStepNeverWaitsForAnotherThreadsStep)
{
  auto gate = std::make_shared<gated_backend>(make_virtual_sim(false));
  pool_options o;
  o.backend_object = gate;
  o.read_environment = false;
  o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = 4_MiB, .chunk_bytes = 4_MiB});
  o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = 16_MiB, .chunk_bytes = 4_MiB});
  o.prefetch = "plan:probe=off";
  pool p{o};
  stream_handle const sa = p.create_stream();
  stream_handle const sb = p.create_stream();
  std::vector<tensor> const ts = filled_tensors(p, 2, 256_KiB);
  for (tensor const& t : ts) { lease const l = p.acquire(t, access_mode::read, sa); }  // resident, times known
  ASSERT_EQ(p.stats().planner_busy_skips, 0U);

  std::promise<void> armed;
  std::thread a([&] {
    gate->arm(std::this_thread::get_id(), 2);
    armed.set_value();
    lease const l = p.acquire(ts[0], access_mode::read_write, sa);
  });
  armed.get_future().wait();
  bool const held = gate->wait_held(std::chrono::seconds(10));
  EXPECT_TRUE(held) << "thread A's acquire never reached its step's device-time call";
  auto b = std::async(std::launch::async, [&] { lease const l = p.acquire(ts[1], access_mode::read, sb); });
  bool const returned = b.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  gate->open();
  a.join();
  b.get();
  EXPECT_TRUE(returned) << "the second thread's acquire waited for thread A's planner step";
  pool_stats const st = p.stats();
  EXPECT_EQ(st.planner_busy_skips, held ? 1U : 0U) << p.summary();
  EXPECT_NE(p.summary().find("busy skips 1"), std::string::npos) << p.summary();
  EXPECT_NE(p.summary_json().find("\"planner_busy_skips\":1"), std::string::npos) << p.summary_json();
  p.synchronize(sa);
  p.synchronize(sb);
  for (std::uint64_t k = 0; k < 2; ++k) { EXPECT_TRUE(check(p, ts[k], k, 1)) << k; }
  EXPECT_TRUE(p.validate());
}


/// A planner pool with a 1 MiB device tier and three tensors of `sizes`, filled with keys 1, 2, 3.
struct failing_loop {
  pool p;
  stream_handle s;
  std::vector<tensor> t;
  explicit failing_loop(std::array<std::size_t, 3> sizes) : p(options())
  {
    s = p.create_stream();
    for (std::uint64_t k = 0; k < 3; ++k) {
      t.push_back(p.allocate(sizes[k]));
      fill(p, t.back(), k + 1, 1);
    }
  }
  static pool_options options()
  {
    pool_options o = small_tiers(make_sim(), 1_MiB, 0, 16_MiB);
    o.prefetch = "plan:probe=off";
    return o;
  }
  /// Planned with `period` accesses from the start, never mispredicted; every byte kept.
  void expect_planned(std::uint64_t period)
  {
    pool_stats const st = p.stats();
    EXPECT_EQ(st.planner_state, "planned") << p.summary();
    EXPECT_EQ(st.planner_period, period) << p.summary();
    EXPECT_EQ(st.planner_mispredicted, 0U) << p.summary();
    EXPECT_EQ(st.planner_relearns, 0U) << p.summary();
    for (std::uint64_t k = 0; k < 3; ++k) { EXPECT_TRUE(check(p, t[k], k + 1, 1)) << k; }
    EXPECT_TRUE(p.validate());
  }
};

// Note [A failed acquire is still a step of the schedule], runtime/core/pool.cpp: a loop of
// acquires A, B, C in a 1 MiB device tier. In the iterations a seeded draw picks, A's lease
// is still held when C is acquired, so A and B pin 768 KiB and C (512 KiB) fails with
// out_of_memory, and the program goes on another way, also drawn: it reads C through a host
// lease instead (what tierpool.torch does), or lets go of A and asks for C again (what
// tierpool replay's engine does). Told only of the acquires that succeeded, the planner saw
// A, B, C and A, B at random and mispredicted; told of the failed ones too, a retry being
// the same access, it sees A, B, C every iteration.
TEST(PoolPlanner, AFailedAcquireIsStillAStepOfTheSchedule)
{
  failing_loop f{{512_KiB, 256_KiB, 512_KiB}};
  pool& p = f.p;
  tensor const& a = f.t[0];
  tensor const& b = f.t[1];
  tensor const& c = f.t[2];
  std::mt19937_64 rng{11};
  int failed = 0;
  int retried = 0;
  for (int it = 0; it < 48; ++it) {
    bool const hold = it >= 2 && rng() % 2 == 0;  // the first two iterations learn with C served
    std::optional<lease> la{p.acquire(a, access_mode::read, f.s)};
    lease const lb = p.acquire(b, access_mode::read, f.s);
    if (!hold) { la.reset(); }
    try {
      lease const lc = p.acquire(c, access_mode::read, f.s);
    } catch (out_of_memory const&) {
      ++failed;
      if (rng() % 2 == 0) {
        lease const h = p.acquire_host(c, access_mode::read);
      } else {
        la.reset();
        lease const lc = p.acquire(c, access_mode::read, f.s);  // the retry: room now
        ++retried;
      }
    }
    p.synchronize(f.s);
  }
  EXPECT_GT(failed - retried, 5);
  EXPECT_GT(retried, 5);
  EXPECT_EQ(p.stats().acquire_failures, static_cast<std::uint64_t>(failed));
  f.expect_planned(3);
}

// The same rule with two failures in a row and a tensor born after them: A (768 KiB) is held
// in the drawn iterations, so C and D (512 KiB each) both fail and are read through host
// leases; then a temporary E is born, written and freed. The planner must see A, C, D, E
// every iteration, and E must get the same name each time (a name hashes the access told
// before the birth): the failed accesses are told in order, before the allocation.
TEST(PoolPlanner, FailedAcquiresInARowAndABirthAfterThemKeepTheirOrder)
{
  failing_loop f{{768_KiB, 512_KiB, 512_KiB}};
  pool& p = f.p;
  std::mt19937_64 rng{5};
  int failed = 0;
  for (int it = 0; it < 48; ++it) {
    bool const hold = it >= 2 && rng() % 2 == 0;
    std::optional<lease> la{p.acquire(f.t[0], access_mode::read, f.s)};
    if (!hold) { la.reset(); }
    for (tensor const* t : {&f.t[1], &f.t[2]}) {
      try {
        lease const l = p.acquire(*t, access_mode::read, f.s);
      } catch (out_of_memory const&) {
        ++failed;
        lease const h = p.acquire_host(*t, access_mode::read);
      }
    }
    la.reset();
    tensor e = p.allocate(256_KiB);
    { lease const l = p.acquire(e, access_mode::write_discard, f.s); }
    p.synchronize(f.s);
    p.free(e);
  }
  EXPECT_GT(failed, 20);
  f.expect_planned(4);
}

// Note [A planner that finds no schedule sleeps], pool_impl.cpp: a history of 64 accesses and
// sixteen resident tensors acquired in a random order, where no schedule repeats. After 64
// acquires told without a forecast the planner sleeps through the next 64 (stats: "asleep"),
// learns again, and finding nothing sleeps twice as long. Once the program loops it finds
// the period after its sleep and plans. Every byte survives.
TEST(PoolPlanner, APlannerThatFindsNoScheduleSleeps)
{
  pool p = planner_pool("plan:probe=off,history=64,window=8");
  stream_handle const s = p.create_stream();
  std::vector<tensor> const ts = filled_tensors(p, 16, 128_KiB);  // 2 MiB in a 4 MiB device tier
  std::mt19937_64 rng{7};
  auto random_acquires = [&](int n) {
    for (int i = 0; i < n; ++i) { lease const l = p.acquire(ts[rng() % ts.size()], access_mode::read, s); }
  };
  random_acquires(63);
  EXPECT_EQ(p.stats().planner_state, "learning");
  random_acquires(1);
  EXPECT_EQ(p.stats().planner_state, "asleep") << "64 accesses without a schedule";
  random_acquires(63);
  EXPECT_EQ(p.stats().planner_state, "asleep");
  random_acquires(1);
  EXPECT_EQ(p.stats().planner_state, "learning") << "a sleep of 64 acquires";
  random_acquires(64);
  EXPECT_EQ(p.stats().planner_state, "asleep");
  random_acquires(100);
  EXPECT_EQ(p.stats().planner_state, "asleep") << "the second sleep is twice as long";
  random_acquires(28);
  EXPECT_EQ(p.stats().planner_state, "learning");
  std::uint64_t const misses = p.stats().misses;
  for (int it = 0; it < 8; ++it) {  // a loop: learned from here, within the history
    for (tensor const& t : ts) { lease const l = p.acquire(t, access_mode::read, s); }
  }
  pool_stats const st = p.stats();
  EXPECT_EQ(st.planner_state, "planned");
  EXPECT_EQ(st.planner_period, 16U);
  EXPECT_EQ(st.misses, misses) << "resident all along";
  for (std::uint64_t k = 0; k < 16; ++k) { EXPECT_TRUE(check(p, ts[k], k, 1)) << k; }
  EXPECT_TRUE(p.validate());
}

// Note [A planner that finds no schedule sleeps]: while asleep each acquired tensor still gets
// the least-recently-used order value (forecast_before), so `belady` driven by the planner
// evicts the tensor used longest ago: here t1, after t0..t15 and t0 again.
TEST(PoolPlanner, AsleepTheOrderIsLeastRecentlyUsed)
{
  pool_options o = small_tiers(make_sim(), 1_MiB, 0, 16_MiB);
  o.policy = "belady";
  o.prefetch = "plan:probe=off,history=64,window=8";
  pool p{o};
  stream_handle const s = p.create_stream();
  std::vector<tensor> const ts = filled_tensors(p, 16, 64_KiB);  // the device tier, full
  std::mt19937_64 rng{7};
  for (int i = 0; i < 64; ++i) { lease const l = p.acquire(ts[rng() % ts.size()], access_mode::read, s); }
  ASSERT_EQ(p.stats().planner_state, "asleep");
  for (tensor const& t : ts) { lease const l = p.acquire(t, access_mode::read, s); }
  { lease const l = p.acquire(ts[0], access_mode::read, s); }
  for (tensor const& t : ts) { ASSERT_EQ(p.residency(t).home, tier_id{0}); }
  tensor x = p.allocate(64_KiB, {.preferred_tier = tier_id{1}});
  fill(p, x, 99, 1);
  { lease const l = p.acquire(x, access_mode::read, s); }
  EXPECT_EQ(p.stats().planner_state, "asleep");
  p.synchronize(s);
  for (std::size_t k = 0; k < ts.size(); ++k) {
    EXPECT_EQ(p.residency(ts[k]).home, tier_id{k == 1 ? 1U : 0U}) << "t" << k;
  }
  for (std::uint64_t k = 0; k < ts.size(); ++k) { EXPECT_TRUE(check(p, ts[k], k, 1)) << k; }
  EXPECT_TRUE(check(p, x, 99, 1));
  EXPECT_TRUE(p.validate());
}

// Note [A planner that finds no schedule sleeps]: a set-up of 30 acquires in no order, then a
// loop of 24. Before it plans, the planner tells 30 + 24 + 8 accesses without a candidate
// period and 16 more while it confirms one (78: more than its history of 64); those do not
// count, so it never sleeps and plans the loop from its third iteration.
TEST(PoolPlanner, ALongSetUpBeforeALoopDoesNotPutThePlannerToSleep)
{
  pool p = planner_pool("plan:probe=off,history=64,window=8");
  stream_handle const s = p.create_stream();
  std::vector<tensor> const ts = filled_tensors(p, 24, 64_KiB);
  std::mt19937_64 rng{11};
  for (int i = 0; i < 30; ++i) { lease const l = p.acquire(ts[rng() % ts.size()], access_mode::read, s); }
  ASSERT_EQ(p.stats().planner_state, "learning");
  for (int it = 0; it < 4; ++it) {
    for (tensor const& t : ts) {
      lease const l = p.acquire(t, access_mode::read, s);
      EXPECT_NE(p.stats().planner_state, "asleep") << "iteration " << it;
    }
  }
  EXPECT_EQ(p.stats().planner_state, "planned");
  EXPECT_EQ(p.stats().planner_period, 24U);
  for (std::uint64_t k = 0; k < ts.size(); ++k) { EXPECT_TRUE(check(p, ts[k], k, 1)) << k; }
  EXPECT_TRUE(p.validate());
}

// Note [Device times measured with events], device_timer.cpp: a loop of 8 accesses, each after
// a kernel of its own length (1..8 us), the host waiting for the stream at each iteration's
// end as a training loop does (loss.item()). Where the backend knows device times ahead the
// planner reads the compute at once; where it hides them, as a GPU does, the pool times the
// kernels with events once they have run. Either way the planner learns the same compute,
// 36 us a period, and the same bytes come back.
TEST(PrefetchTiming, ThePlannerLearnsTheComputeWithEventsWhereDeviceTimesAreHidden)
{
  for (bool const hidden : {false, true}) {
    SCOPED_TRACE(hidden ? "device times hidden" : "device times known");
    auto be = make_virtual_sim(hidden);
    pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
    o.prefetch = "plan";
    pool p{o};
    stream_handle const s = p.create_stream();
    std::vector<tensor> ts;
    for (std::uint64_t k = 0; k < 8; ++k) {
      ts.push_back(p.allocate(192_KiB));  // 1.5 MiB in all: more than the device tier
      fill(p, ts.back(), k, 1);
    }
    for (int it = 0; it < 8; ++it) {
      for (std::uint64_t k = 0; k < 8; ++k) {
        ASSERT_EQ(be->compute_async(s, (k + 1) * 1000), status::ok);
        lease const l = p.acquire(ts[k], access_mode::read, s);
      }
      p.synchronize(s);
      ASSERT_TRUE(p.validate());
    }
    pool_stats const st = p.stats();
    EXPECT_EQ(st.planner_state, "planned");
    EXPECT_EQ(st.planner_period, 8U);
    EXPECT_DOUBLE_EQ(st.planner_period_compute_seconds, 36e-6);
    if (hidden) {
      EXPECT_GE(st.planner_timed_accesses, 8U * 7U) << "every access after the first, once its events ran";
    } else {
      EXPECT_EQ(st.planner_timed_accesses, 0U);
    }
    EXPECT_NE(p.summary_json().find("\"planner_period_compute_seconds\""), std::string::npos);
    std::string const line = hidden ? "planner compute: 0.036 ms a period (measured with events at "
                                    : "planner compute: 0.036 ms a period (device times known ahead)";
    EXPECT_NE(p.summary().find(line), std::string::npos) << p.summary();
    for (std::uint64_t k = 0; k < 8; ++k) { EXPECT_TRUE(check(p, ts[k], k, 1)) << k; }
  }
}

// Note [Copy-ins at the latest start]: a copy-in held back counts against the prefetch budget
// as if issued. x1 (64 KiB) can wait for a later step; x2 (1 MiB, right behind it) cannot, so
// issuing x2 would issue x1 first: 1 MiB + 64 KiB, over the 1 MiB budget. The walk stops at
// x2 instead; x1 goes at the next step, x2 once x1 is used.
TEST(PrefetchTiming, CopyInsHeldBackCountAgainstTheBudget)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  auto sched = std::make_shared<stepped_schedule>();
  pool_options o = small_tiers(be, 2_MiB, 0, 16_MiB);
  o.prefetch = "oracle:writeback=off,keep=off,budget=1MiB,sample=8";
  o.schedule = sched;
  pool p{o};
  stream_handle const s = p.create_stream();
  tick const copy2 = link_model::pcie4().transfer_ns(1_MiB);
  // The device tier full: g0, g1 (used first), f1 and f2 (the sizes of x1 and x2, next used
  // much later: their room goes to them) and h.
  tensor g0 = p.allocate(256_KiB);
  tensor g1 = p.allocate(256_KiB);
  tensor f1 = p.allocate(64_KiB);
  tensor f2 = p.allocate(1_MiB);
  tensor h = p.allocate(448_KiB);
  tensor x1 = p.allocate(64_KiB, {.preferred_tier = tier_id{1}});
  tensor x2 = p.allocate(1_MiB, {.preferred_tier = tier_id{1}});
  std::vector<tensor const*> const all{&g0, &g1, &f1, &f2, &h, &x1, &x2};
  for (std::size_t k = 0; k < all.size(); ++k) { fill(p, *all[k], k, 1); }
  for (tensor const* t : {&g0, &g1, &f1, &f2, &h}) { lease l = p.acquire(*t, access_mode::read, s); }
  ASSERT_EQ(p.stats().tiers[0].used_bytes.current, static_cast<std::int64_t>(2_MiB)) << "the device tier is full";
  p.set_next_use(f1, 1'000'000);
  p.set_next_use(f2, 1'000'001);
  p.set_next_use(h, 1'000'002);
  p.set_next_use(g0, 0);
  p.set_next_use(g1, 1);
  p.set_next_use(x1, 2);
  p.set_next_use(x2, 3);
  sched->all = {{.id = g0.id(), .bytes = 256_KiB, .when = 0},
                {.id = g1.id(), .bytes = 256_KiB, .when = 1, .compute = copy2 / 2},
                {.id = x1.id(), .bytes = 64_KiB, .when = 2, .compute = copy2 / 2},
                {.id = x2.id(), .bytes = 1_MiB, .when = 3, .compute = 0}};
  std::vector<std::uint64_t> issued_after;  // planned prefetches after each step
  std::vector<tensor const*> const order{&g0, &g1, &x1};
  for (std::size_t k = 0; k < order.size(); ++k) {
    ASSERT_EQ(be->compute_async(s, copy2 / 2), status::ok);
    sched->at = k;
    { lease l = p.acquire(*order[k], access_mode::read, s); }
    p.set_next_use(*order[k], 2'000'000 + k);
    issued_after.push_back(p.stats().planned_prefetches);
  }
  std::vector<std::uint64_t> const expected{0, 1, 2};
  EXPECT_EQ(issued_after, expected);
  sched->at = 3;
  { lease l = p.acquire(x2, access_mode::read, s); }
  for (std::size_t k = 0; k < all.size(); ++k) { EXPECT_TRUE(check(p, *all[k], k, 1)) << k; }
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

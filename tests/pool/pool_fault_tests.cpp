// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_fault_tests.cpp — every fallible backend call of a pool workload fails in turn
// (sim fault rules with nth over the call counts of a clean run), then at random rates
// (0.1 %, 1 %, 5 %) with several seeds. Each failure must surface as a typed error (or be
// absorbed by a fallback), and after every operation every tensor's bytes are intact and
// validate() holds. The same with the transfer planner on a loop (PoolFaultPlanner*: faults
// while it prefetches and writes back early; the pool keeps working once they are cleared),
// and an early write-back whose copy fails.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>
#include <tierpool/prefetch.hpp>

#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace tierpool::test {
namespace {

// How the workload runs: its operations and the pool's prefetch option.
struct workload_mode {
  char const* name{"random"};
  char const* prefetch{"none"};  ///< pool_options::prefetch
  /// A repeating schedule in place of random operations: a sweep that acquires every tensor
  /// in turn on the device, a read_write "kernel" that rewrites every third, a read for the
  /// others, then 40 reads of the first four (the transfer planner learns the loop,
  /// prefetches, and writes back early while the four are read).
  bool loop{false};
  std::size_t tensors{12};     ///< n
  std::size_t unit{32_KiB};    ///< tensor i has unit x (1 + i % 4) + 256 i bytes
  int steps{150};              ///< operations of a run
  std::uint64_t nth_runs{60};  ///< PoolFault*Nth: runs, each failing one call of the clean run's
};

std::ostream& operator<<(std::ostream& os, workload_mode const& m) { return os << m.name; }

pool_options workload_options(std::shared_ptr<sim_backend> be, workload_mode const& m)
{
  pool_options o = small_tiers(std::move(be), 512_KiB, 1_MiB, 8_MiB);
  o.prefetch = m.prefetch;
  return o;
}

// A deterministic single-threaded workload over a small pool; a model of each tensor's
// version checks the bytes.
class workload {
 public:
  explicit workload(std::shared_ptr<sim_backend> be, workload_mode const& m = {})
    : be_(std::move(be)), p_(workload_options(be_, m)), loop_(m.loop), n_(m.tensors), unit_(m.unit)
  {
    s_ = p_.create_stream();
    for (std::size_t i = 0; i < n_; ++i) {
      ts_[i] = p_.allocate(size(i));
      fill(p_, ts_[i], i, ver_[i] = 1);
    }
  }
  ~workload() { (void)be_->synchronize_stream(s_); }
  workload(workload const&) = delete;
  workload& operator=(workload const&) = delete;

  // One operation; typed failures are accepted (the model is unchanged then).
  void step(std::mt19937_64& rng)
  {
    // The loop: a sweep over every tensor, then kHot reads of the first four, resident, during
    // which nothing is evicted (early write-backs wait for such a stretch: Note [No early
    // write-back while the tier evicts]).
    constexpr std::uint64_t kHot = 40;
    std::uint64_t const q = loop_ ? pos_ % (n_ + kHot) : 0;
    std::size_t const i = loop_ ? (q < n_ ? q : q % 4) : rng() % n_;
    std::uint64_t const op = loop_ ? (q < n_ && q % 3 == 0 ? 0 : 2) : rng() % 6;
    ++pos_;
    try {
      if (!ts_[i].valid()) {  // a failed re-allocation earlier
        reallocate(i);
        return;
      }
      switch (op) {
        case 0:
        case 1: {
          lease l = p_.acquire(ts_[i], access_mode::read_write, s_);
          auto job = std::make_unique<modify_job>(modify_job{l.data(), l.bytes(), i, ver_[i] + 1});
          if (be_->launch_host_func(s_, &modify_job::run, job.get()) == status::ok) { ++ver_[i]; }
          jobs_.push_back(std::move(job));
          break;
        }
        case 2: { lease l = p_.acquire(ts_[i], access_mode::read, s_); break; }
        case 3: p_.prefetch(ts_[i]); break;
        case 4: p_.demote(ts_[i], tier_id{static_cast<std::uint32_t>(1 + rng() % 2)}); break;
        case 5:
          p_.free(ts_[i]);
          reallocate(i);
          break;
      }
    } catch (backend_error const&) {
      ++typed_;
    } catch (out_of_memory const&) {
      ++typed_;
    }
  }

  // With faults off: every tensor's bytes and the invariants.
  [[nodiscard]] testing::AssertionResult verify()
  {
    if (!p_.validate()) { return testing::AssertionFailure() << "validate failed"; }
    for (std::size_t i = 0; i < n_; ++i) {
      if (ts_[i].valid() && !check(p_, ts_[i], i, ver_[i])) {
        return testing::AssertionFailure() << "tensor " << i << " version " << ver_[i] << " corrupted";
      }
    }
    return testing::AssertionSuccess();
  }

  [[nodiscard]] std::uint64_t typed_errors() const { return typed_; }
  [[nodiscard]] pool_stats stats() const { return p_.stats(); }

 private:
  [[nodiscard]] std::size_t size(std::size_t i) const { return unit_ * (1 + i % 4) + 256 * i; }
  // A fill that fails after its allocate leaves the bytes undefined: drop that tensor.
  void reallocate(std::size_t i)
  {
    ts_[i] = p_.allocate(size(i));
    try {
      fill(p_, ts_[i], i, ver_[i] = 1);
    } catch (...) {
      p_.free(ts_[i]);
      throw;
    }
  }

  std::shared_ptr<sim_backend> be_;
  pool p_;
  bool loop_{false};
  std::uint64_t pos_{0};  ///< steps taken
  stream_handle s_{};
  std::size_t n_;
  std::size_t unit_;
  std::vector<tensor> ts_ = std::vector<tensor>(n_);
  std::vector<std::uint32_t> ver_ = std::vector<std::uint32_t>(n_, 0);
  std::vector<std::unique_ptr<modify_job>> jobs_;
  std::uint64_t typed_{0};
};

bool planner_on(workload_mode const& m) { return std::string_view(m.prefetch) != "none"; }

// The planner's workloads run on the virtual clock: on the wall clock, when the stream's
// kernels complete decides which acquires evict, so a loaded machine (TSan on 2 cores) left
// the loop's hot phase without a quiet stretch and the clean run without an early
// write-back, and the Nth runs' call numbering (taken from the clean run) drifted.
std::shared_ptr<sim_backend> workload_sim(workload_mode const& m)
{
  return make_sim(planner_on(m) ? sim_clock_mode::virtual_clock : sim_clock_mode::wall);
}

std::uint64_t clean_run_calls(sim_call kind, workload_mode const& m)
{
  auto be = workload_sim(m);
  workload w{be, m};
  be->reset_call_counts();
  std::mt19937_64 rng(42);
  for (int i = 0; i < m.steps; ++i) { w.step(rng); }
  EXPECT_TRUE(w.verify());
  if (planner_on(m)) {  // the faults below hit the planner's own copies
    pool_stats const st = w.stats();
    EXPECT_EQ(st.planner_state, "planned") << m.name;
    EXPECT_GT(st.planned_prefetches, 0U) << m.name;
    EXPECT_GT(st.early_write_backs, 0U) << m.name;
  }
  return be->call_count(kind);
}

// With the faults cleared the pool keeps working: more steps, every byte, and the planner
// planning again.
void keeps_working(workload& w, workload_mode const& m, std::string const& what)
{
  std::uint64_t const planned = w.stats().planned_prefetches;
  std::mt19937_64 rng(7);
  for (int i = 0; i < m.steps; ++i) { w.step(rng); }
  EXPECT_TRUE(w.verify()) << what << ", faults cleared";
  if (planner_on(m)) {
    EXPECT_GT(w.stats().planned_prefetches, planned) << what << ": the planner stopped prefetching after the faults";
  }
}

void each_call_fails_in_turn(sim_call kind, workload_mode const& m)
{
  std::uint64_t const calls = clean_run_calls(kind, m);
  ASSERT_GT(calls, 0U);
  std::uint64_t const stride = std::max<std::uint64_t>(1, calls / m.nth_runs);
  for (std::uint64_t nth = 1; nth <= calls; nth += stride) {
    auto be = workload_sim(m);
    std::optional<workload> w;
    w.emplace(be, m);
    be->set_faults({.seed = 0, .rules = {{.kind = kind, .nth = nth}}});
    std::mt19937_64 rng(42);
    bool checked = false;
    for (int i = 0; i < m.steps; ++i) {
      w->step(rng);
      if (!checked && be->faults_injected() != 0) {
        be->clear_faults();
        ASSERT_TRUE(w->verify()) << to_string(kind) << " nth " << nth << " step " << i;
        checked = true;
      }
    }
    be->clear_faults();
    ASSERT_TRUE(w->verify()) << to_string(kind) << " nth " << nth;
    if (planner_on(m) && nth % (8 * stride) == 1) { keeps_working(*w, m, std::string(to_string(kind)) + " nth " + std::to_string(nth)); }
  }
}

void random_faults(double rate, std::uint64_t seed, workload_mode const& m)
{
  auto be = workload_sim(m);
  workload w{be, m};
  std::mt19937_64 rng(seed);
  for (int i = 0; i < m.steps; ++i) {
    // A seed per step: set_faults restarts the rule's call count, so one seed would fail the
    // same call indices of every step (with a low rate: none at all).
    be->set_faults({.seed = seed * 100'000 + static_cast<std::uint64_t>(i),
                    .rules = {{.kind = sim_call::any, .probability = rate}}});
    w.step(rng);
    be->clear_faults();
    ASSERT_TRUE(w.verify()) << "rate " << rate << " seed " << seed << " step " << i;
  }
  if (rate >= 0.01) { EXPECT_GT(be->faults_injected(), 0U) << "rate " << rate << " seed " << seed; }
  keeps_working(w, m, "rate " + std::to_string(rate) + " seed " + std::to_string(seed));
}

class PoolFaultNth : public testing::TestWithParam<sim_call> {};

TEST_P(PoolFaultNth, EachCallFailsInTurn) { each_call_fails_in_turn(GetParam(), {}); }

INSTANTIATE_TEST_SUITE_P(Kinds, PoolFaultNth,
                         testing::Values(sim_call::allocate, sim_call::copy, sim_call::event, sim_call::host_func),
                         [](testing::TestParamInfo<sim_call> const& pi) { return std::string(to_string(pi.param)); });

class PoolFaultRate : public testing::TestWithParam<std::tuple<double, std::uint64_t>> {};

TEST_P(PoolFaultRate, RandomFaultsNeverLoseBytes)
{
  auto const [rate, seed] = GetParam();
  random_faults(rate, seed, {});
}

INSTANTIATE_TEST_SUITE_P(Rates, PoolFaultRate,
                         testing::Combine(testing::Values(0.001, 0.01, 0.05), testing::Values(1U, 2U, 3U)));

// The same with the transfer planner on a loop: copies, events and allocations fail while it
// prefetches and writes back early (its own copies among those that fail). Without the
// trials (probe=off): they would stop prefetching where a period's timing says it does not
// pay, and then no fault could hit a planned copy (Note [Measuring whether prefetching pays]).
workload_mode const kPlannerModes[] = {
  {.name = "plan", .prefetch = "plan:probe=off", .loop = true, .tensors = 48, .unit = 8_KiB, .steps = 200, .nth_runs = 30},
  {.name = "plan_small_budget",
   .prefetch = "plan:writeback=on,stream_reuse=on,budget=64KiB,probe=off",
   .loop = true,
   .tensors = 48,
   .unit = 8_KiB,
   .steps = 200,
   .nth_runs = 30},
};

class PoolFaultPlannerNth : public testing::TestWithParam<std::tuple<sim_call, workload_mode>> {};

TEST_P(PoolFaultPlannerNth, EachCallFailsInTurn) { each_call_fails_in_turn(std::get<0>(GetParam()), std::get<1>(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Kinds, PoolFaultPlannerNth,
                         testing::Combine(testing::Values(sim_call::copy, sim_call::event),
                                          testing::ValuesIn(kPlannerModes)),
                         [](testing::TestParamInfo<std::tuple<sim_call, workload_mode>> const& pi) {
                           return std::string(to_string(std::get<0>(pi.param))) + "_" + std::get<1>(pi.param).name;
                         });

class PoolFaultPlannerRate : public testing::TestWithParam<std::tuple<double, workload_mode>> {};

TEST_P(PoolFaultPlannerRate, RandomFaultsNeverLoseBytes)
{
  for (std::uint64_t seed : {1U, 2U, 3U}) { random_faults(std::get<0>(GetParam()), seed, std::get<1>(GetParam())); }
}

INSTANTIATE_TEST_SUITE_P(Rates, PoolFaultPlannerRate,
                         testing::Combine(testing::Values(0.01, 0.05), testing::ValuesIn(kPlannerModes)),
                         [](testing::TestParamInfo<std::tuple<double, workload_mode>> const& pi) {
                           return "permille_" + std::to_string(static_cast<int>(std::get<0>(pi.param) * 1000 + 0.5)) +
                                  "_" + std::get<1>(pi.param).name;
                         });

// An early write-back whose copy fails: the tensor stays dirty and resident (its device copy
// is the only valid one; the host copy, stale or never made, is not taken for valid), and
// its eviction later writes it back. One tensor has a stale host copy, one none yet (the
// write-back places a fresh host block, given back when the copy fails). The oracle does not
// prefetch here, so its only copies are the early write-backs; its schedule puts the
// horizon near (more than the device tier's bytes just ahead) and the program gives the
// written tensors a next use far past it, so each is written back early 8 accesses after
// its write. The accesses in between are hits.
TEST(PoolFaultPlanner, AFailedEarlyWriteBackLeavesTheTensorDirtyResidentAndWrittenBackAtEviction)
{
  auto be = make_sim();
  auto schedule = std::make_shared<fixed_schedule>();
  pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
  o.prefetch = "oracle:prefetch=off";
  o.schedule = schedule;
  pool p{o};
  stream_handle const s = p.create_stream();
  std::vector<std::unique_ptr<modify_job>> jobs;
  auto use = [&](tensor const& t) { lease l = p.acquire(t, access_mode::read, s); };
  std::vector<tensor> fillers;
  for (std::uint64_t k = 0; k < 9; ++k) {
    fillers.push_back(p.allocate(64_KiB));
    fill(p, fillers.back(), 100 + k, 1);
    use(fillers.back());
  }
  std::vector<tensor> later;  // in the schedule only (on the host): 20 x 64 KiB ahead in all
  for (int k = 0; k < 11; ++k) { later.push_back(p.allocate(64_KiB, {.preferred_tier = tier_id{1}})); }
  tensor a = p.allocate(64_KiB);  // the control: its early write-back succeeds
  tensor w = p.allocate(64_KiB);  // a stale host copy when the write-back fails
  tensor f = p.allocate(64_KiB);  // no host copy yet when it fails
  for (auto const* group : {&fillers, &later}) {
    for (tensor const& t : *group) {
      schedule->ahead.push_back({.id = t.id(), .bytes = t.bytes(), .when = 0, .discard = false});
    }
  }
  constexpr tick kFar = 1'000'000;  // past the horizon (position 1000 + 17)
  fill(p, a, 1, 1);
  fill(p, w, 2, 1);
  use(a);
  use(w);
  p.synchronize(s);
  auto lag = [&] {  // 10 device hits, then the stream's work done
    for (int k = 0; k < 10; ++k) { use(fillers[static_cast<std::size_t>(k * 4) % fillers.size()]); }
    p.synchronize(s);
  };
  pool_stats st = p.stats();
  std::uint64_t const misses = st.misses;
  ASSERT_EQ(modify_on_stream(p, a, s, 1, 2, jobs), status::ok);
  p.set_next_use(a, kFar);
  lag();
  st = p.stats();
  ASSERT_EQ(st.planner_state, "oracle");
  ASSERT_EQ(st.early_write_backs, 1U) << "the control: a written tensor is written back early";
  ASSERT_EQ(be->faults_injected(), 0U);

  ASSERT_EQ(modify_on_stream(p, w, s, 2, 2, jobs), status::ok);
  p.set_next_use(w, kFar);
  be->set_faults({.seed = 0, .rules = {{.kind = sim_call::copy, .probability = 1.0}}});
  lag();
  be->clear_faults();
  EXPECT_EQ(be->faults_injected(), 1U) << "the early write-back's copy, and no other";
  {
    lease l = p.acquire(f, access_mode::write_discard, s);  // valid on the device only
    auto job = std::make_unique<modify_job>(modify_job{l.data(), l.bytes(), 3, 1});
    ASSERT_EQ(be->launch_host_func(s, &modify_job::run, job.get()), status::ok);
    jobs.push_back(std::move(job));
  }
  p.set_next_use(f, kFar);
  be->set_faults({.seed = 0, .rules = {{.kind = sim_call::copy, .probability = 1.0}}});
  lag();
  be->clear_faults();
  EXPECT_EQ(be->faults_injected(), 2U);
  st = p.stats();
  EXPECT_EQ(st.early_write_backs, 1U);
  EXPECT_EQ(st.misses, misses) << "no miss since the tensors were made resident";
  EXPECT_TRUE(p.validate());
  use(w);
  use(f);
  EXPECT_EQ(p.stats().misses, misses) << "w and f stayed resident";

  // Fill the device tier with other tensors: everything above is evicted, and exactly the
  // two dirty ones are written back on the way.
  std::vector<tensor> others;
  std::uint64_t const d2h = p.stats().bytes_d2h;
  for (std::uint64_t k = 0; k < 16; ++k) {
    others.push_back(p.allocate(64_KiB));
    fill(p, others.back(), 200 + k, 1);
    use(others.back());
  }
  p.synchronize(s);
  st = p.stats();
  EXPECT_EQ(st.bytes_d2h - d2h, w.bytes() + f.bytes()) << "the eviction of w and f wrote them back";
  std::uint64_t const before = st.misses;
  use(w);
  use(f);
  EXPECT_EQ(p.stats().misses, before + 2) << "w and f were evicted";
  EXPECT_TRUE(check(p, a, 1, 2));
  EXPECT_TRUE(check(p, w, 2, 2)) << "w's bytes were lost: its failed early write-back left it taken for clean";
  EXPECT_TRUE(check(p, f, 3, 1)) << "f's bytes were lost: its failed early write-back left it taken for clean";
  for (std::uint64_t k = 0; k < fillers.size(); ++k) { EXPECT_TRUE(check(p, fillers[k], 100 + k, 1)) << k; }
  for (std::uint64_t k = 0; k < others.size(); ++k) { EXPECT_TRUE(check(p, others[k], 200 + k, 1)) << k; }
  EXPECT_TRUE(p.validate());
}


// A dirty victim whose write-back fails on every try: the request fails with the backend's
// status (a backend_error naming the victim), not an out-of-memory that blames capacity;
// the victim keeps its bytes, and once the fault is gone the same request succeeds.
// Note [A failed write-back], placement.cpp.
TEST(PoolFault, AFailedWriteBackIsABackendErrorAndLosesNoByte)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  std::vector<tensor> dirty;
  for (std::uint64_t k = 0; k < 16; ++k) {  // the device tier full of tensors valid there only
    dirty.push_back(p.allocate(64_KiB));
    lease l = p.acquire(dirty.back(), access_mode::write_discard);
    p.synchronize(l.stream());
    write_pattern(l.data(), l.bytes(), k, 1);
  }
  ASSERT_EQ(p.stats().bytes_d2h, 0U);
  tensor extra = p.allocate(64_KiB, {.preferred_tier = tier_id{1}});
  fill(p, extra, 99, 1);
  be->set_faults({.seed = 0, .rules = {{.kind = sim_call::copy, .probability = 1.0}}});
  try {
    lease l = p.acquire(extra, access_mode::write_discard);
    FAIL() << "every write-back fails: the acquire cannot make room";
  } catch (out_of_memory const& e) {
    FAIL() << "a failed write-back was reported as out of memory: " << e.what();
  } catch (backend_error const& e) {
    EXPECT_EQ(e.code(), status::injected_fault);
    EXPECT_NE(std::string(e.what()).find("writing victim tensor"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("keeps its bytes"), std::string::npos) << e.what();
  }
  std::uint64_t const failed = be->faults_injected();
  EXPECT_EQ(failed, 3U) << "one try and two retries";
  be->clear_faults();
  EXPECT_TRUE(p.validate());
  {
    lease l = p.acquire(extra, access_mode::write_discard);  // the same request, now with a working copy
  }
  EXPECT_TRUE(p.validate());


  // One failed write-back (a transient fault) is retried and passes: no error at all.
  // write_discard copies nothing in: the only copy is the victim's write-back.
  tensor more = p.allocate(64_KiB, {.preferred_tier = tier_id{1}});
  std::uint64_t const d2h = p.stats().bytes_d2h;
  be->set_faults({.seed = 0, .rules = {{.kind = sim_call::copy, .nth = 1}}});
  {
    lease l = p.acquire(more, access_mode::write_discard);
    p.synchronize(l.stream());
    write_pattern(l.data(), l.bytes(), 98, 1);
  }
  be->clear_faults();
  EXPECT_EQ(be->faults_injected(), failed + 1);
  EXPECT_GT(p.stats().bytes_d2h, d2h);
  for (std::uint64_t k = 0; k < dirty.size(); ++k) { EXPECT_TRUE(check(p, dirty[k], k, 1)) << k; }
  EXPECT_TRUE(check(p, more, 98, 1));
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

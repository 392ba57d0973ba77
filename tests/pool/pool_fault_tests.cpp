// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_fault_tests.cpp — every fallible backend call of a pool workload fails in turn
// (sim fault rules with nth over the call counts of a clean run), then at random rates
// (0.1 %, 1 %, 5 %) with several seeds. Each failure must surface as a typed error (or be
// absorbed by a fallback), and after every operation every tensor's bytes are intact and
// validate() holds.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tierpool::test {
namespace {

// A deterministic single-threaded workload over a small pool; a model of each tensor's
// version checks the bytes.
class workload {
 public:
  explicit workload(std::shared_ptr<sim_backend> be) : be_(std::move(be)), p_(small_tiers(be_, 512_KiB, 1_MiB, 8_MiB))
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
    std::size_t const i = rng() % n_;
    try {
      if (!ts_[i].valid()) {  // a failed re-allocation earlier
        reallocate(i);
        return;
      }
      switch (rng() % 6) {
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

 private:
  static std::size_t size(std::size_t i) { return 32_KiB * (1 + i % 4) + 256 * i; }
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
  stream_handle s_{};
  static constexpr std::size_t n_ = 12;
  std::vector<tensor> ts_ = std::vector<tensor>(n_);
  std::vector<std::uint32_t> ver_ = std::vector<std::uint32_t>(n_, 0);
  std::vector<std::unique_ptr<modify_job>> jobs_;
  std::uint64_t typed_{0};
};

constexpr int kSteps = 150;

std::uint64_t clean_run_calls(sim_call kind)
{
  auto be = make_sim();
  workload w{be};
  be->reset_call_counts();
  std::mt19937_64 rng(42);
  for (int i = 0; i < kSteps; ++i) { w.step(rng); }
  EXPECT_TRUE(w.verify());
  return be->call_count(kind);
}

class PoolFaultNth : public testing::TestWithParam<sim_call> {};

TEST_P(PoolFaultNth, EachCallFailsInTurn)
{
  sim_call const kind = GetParam();
  std::uint64_t const calls = clean_run_calls(kind);
  ASSERT_GT(calls, 0U);
  std::uint64_t const stride = std::max<std::uint64_t>(1, calls / 60);
  for (std::uint64_t nth = 1; nth <= calls; nth += stride) {
    auto be = make_sim();
    std::optional<workload> w;
    w.emplace(be);
    be->set_faults({.seed = 0, .rules = {{.kind = kind, .nth = nth}}});
    std::mt19937_64 rng(42);
    bool checked = false;
    for (int i = 0; i < kSteps; ++i) {
      w->step(rng);
      if (!checked && be->faults_injected() != 0) {
        be->clear_faults();
        ASSERT_TRUE(w->verify()) << to_string(kind) << " nth " << nth << " step " << i;
        checked = true;
      }
    }
    be->clear_faults();
    ASSERT_TRUE(w->verify()) << to_string(kind) << " nth " << nth;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, PoolFaultNth,
                         testing::Values(sim_call::allocate, sim_call::copy, sim_call::event, sim_call::host_func),
                         [](testing::TestParamInfo<sim_call> const& pi) { return std::string(to_string(pi.param)); });

class PoolFaultRate : public testing::TestWithParam<std::tuple<double, std::uint64_t>> {};

TEST_P(PoolFaultRate, RandomFaultsNeverLoseBytes)
{
  auto const [rate, seed] = GetParam();
  auto be = make_sim();
  workload w{be};
  sim_fault_options const faults{.seed = seed, .rules = {{.kind = sim_call::any, .probability = rate}}};
  std::mt19937_64 rng(seed);
  for (int i = 0; i < kSteps; ++i) {
    be->set_faults(faults);
    w.step(rng);
    be->clear_faults();
    ASSERT_TRUE(w.verify()) << "rate " << rate << " seed " << seed << " step " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Rates, PoolFaultRate,
                         testing::Combine(testing::Values(0.001, 0.01, 0.05), testing::Values(1U, 2U, 3U)));

}  // namespace
}  // namespace tierpool::test

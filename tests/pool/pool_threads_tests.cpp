// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_threads_tests.cpp — four threads, thousands of mixed operations on one pool (writes on
// streams, reads, prefetch, demote, free and reallocate); every byte is checked. The same
// with the transfer planner and 8 threads (PoolThreadsPlanner.*).
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>
#include <tierpool/prefetch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

// How the threads run: how many, their operations, the pool's prefetch option.
struct threads_variant {
  char const* name{"random"};
  char const* prefetch{"none"};  ///< pool_options::prefetch
  int threads{4};
  int ops{800};  ///< per thread
  int tsan_ops{0};  ///< per thread under ThreadSanitizer (CI runs these there); 0: ops
  std::size_t unit{64_KiB};  ///< tensor i of a thread has unit x (1 + i % 3) bytes
  /// Each thread loops over its tensors (op k: tensor k % n on the device, rewritten on the
  /// stream for even tensors, checked on the stream for odd ones; every tensor checked on
  /// the host after every fourth pass: a host check leaves nothing to write back early) in
  /// place of random operations: a schedule for the transfer planner.
  bool loop{false};
  bool oracle{false};  ///< prefetch is "oracle": thread_loops is the schedule
  /// A virtual clock whose device times are hidden from the pool, as a GPU's are: the planner
  /// times each thread's stream with events (Note [Device times measured with events]).
  bool timed_events{false};
};

std::ostream& operator<<(std::ostream& os, threads_variant const& v) { return os << v.name; }

/// The oracle's schedule when each thread loops over its own tensors: the calling thread's
/// accesses ahead (the pool asks from the thread that made the latest device acquire), in
/// that thread's positions.
class thread_loops final : public schedule_source {
 public:
  struct loop {
    std::vector<planned_access> period;  ///< one pass
    std::uint64_t pos{0};                ///< the thread's current access
  };
  static loop*& mine()
  {
    thread_local loop* l = nullptr;
    return l;
  }
  std::size_t upcoming(std::span<planned_access> out) noexcept override
  {
    loop const* l = mine();
    return l == nullptr ? 0 : loop_ahead(out, l->period, l->pos);
  }
};

#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kTsan = true;
#else
constexpr bool kTsan = false;
#endif
#else
constexpr bool kTsan = false;
#endif

void run_threads(threads_variant const& v)
{
  int const ops = kTsan && v.tsan_ops != 0 ? v.tsan_ops : v.ops;
  auto be = make_sim();
  if (v.timed_events) {
    sim_options so;
    so.clock = sim_clock_mode::virtual_clock;
    so.memory = sim_memory_mode::real;
    so.device_bytes = 64_MiB;
    so.hide_device_times = true;
    be = std::make_shared<sim_backend>(so);
  }
  pool_options o = small_tiers(be, 1_MiB, 1_MiB, 16_MiB);
  o.prefetch = v.prefetch;
  if (v.oracle) { o.schedule = std::make_shared<thread_loops>(); }
  pool p{o};
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::atomic<int> others{0};
  for (int th = 0; th < v.threads; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(th) + 1);
      stream_handle s = p.create_stream();
      std::vector<std::unique_ptr<modify_job>> jobs;
      std::vector<std::unique_ptr<check_job>> checks;
      constexpr std::size_t n = 6;
      std::vector<tensor> ts(n);
      std::vector<std::uint32_t> ver(n, 0);
      auto key = [&](std::size_t i) { return static_cast<std::uint64_t>(th) * 1000 + i; };
      thread_loops::loop mine;
      for (std::size_t i = 0; i < n; ++i) {
        ts[i] = p.allocate(v.unit * (1 + i % 3));
        fill(p, ts[i], key(i), ver[i] = 1);
        mine.period.push_back({.id = ts[i].id(), .bytes = ts[i].bytes(), .when = 0, .discard = false});
      }
      thread_loops::mine() = &mine;
      for (int op = 0; op < ops; ++op) {
        std::size_t const i = v.loop ? static_cast<std::size_t>(op) % n : rng() % n;
        mine.pos = static_cast<std::uint64_t>(op);
        try {
          switch (v.loop ? (i % 2 == 0 ? 0 : 6) : rng() % 6) {
            case 0:
            case 1:
              if (modify_on_stream(p, ts[i], s, key(i), ver[i] + 1, jobs) == status::ok) { ++ver[i]; }
              break;
            case 2:
              if (!check(p, ts[i], key(i), ver[i])) { ++failures; }
              break;
            case 3: p.prefetch(ts[i]); break;
            case 4: p.demote(ts[i], tier_id{static_cast<std::uint32_t>(1 + rng() % 2)}); break;
            case 5:
              p.free(ts[i]);
              ts[i] = p.allocate(v.unit * (1 + i % 3));
              fill(p, ts[i], key(i), ver[i] = 1);
              break;
            case 6: {  // loop: a device read that checks the bytes on the stream
              lease l = p.acquire(ts[i], access_mode::read, s);
              auto job = std::make_unique<check_job>(check_job{l.data(), l.bytes(), key(i), ver[i], &failures});
              if (p.backend().launch_host_func(s, &check_job::run, job.get()) == status::ok) {
                checks.push_back(std::move(job));
              }
              break;
            }
          }
          if (v.oracle) { p.set_next_use(ts[i], mine.pos + n); }
        } catch (out_of_memory const&) {
          // another thread holds leases at the moment: acceptable, bytes must be unchanged
        } catch (std::exception const&) {
          ++others;
        }
        if (v.loop && static_cast<std::size_t>(op) % (4 * n) == 4 * n - 1) {  // the end of every fourth pass: every tensor
          for (std::size_t j = 0; j < n; ++j) {
            if (!check(p, ts[j], key(j), ver[j])) { ++failures; }
          }
        }
        if (jobs.size() + checks.size() > 64) {
          p.synchronize(s);
          jobs.clear();
          checks.clear();
        }
      }
      thread_loops::mine() = nullptr;
      for (std::size_t i = 0; i < n; ++i) {
        if (!check(p, ts[i], key(i), ver[i])) { ++failures; }
      }
      p.synchronize(s);
    });
  }
  for (auto& t : threads) { t.join(); }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(others.load(), 0);
  EXPECT_TRUE(p.validate());
  if (std::string_view(v.prefetch) != "none") {
    pool_stats const st = p.stats();
    // The learned plan rarely holds across free-running threads (it may act now and then:
    // the bytes are checked all the same; PoolStressPlanner in pool_stress_test makes the
    // threads take turns, and asserts that it plans). The oracle forecasts each thread's own
    // pass, which fits the device tier (so no early write-back): it must prefetch.
    if (v.oracle) { EXPECT_GT(st.planned_prefetches, 0U) << p.summary(); }
    if (v.timed_events) { EXPECT_GT(st.planner_timed_accesses, 0U) << p.summary(); }
    std::printf("[ threads  ] %s: %d threads x %d ops, planner %s, %llu planned prefetches, %llu early write-backs\n",
                v.name, v.threads, ops, st.planner_state.c_str(), static_cast<unsigned long long>(st.planned_prefetches),
                static_cast<unsigned long long>(st.early_write_backs));
  }
}

TEST(PoolThreads, FourThreadsThousandsOfOps) { run_threads({}); }

// With the transfer planner: 8 threads (more than the cores CI has), each with its own
// stream and tensors, free-running: the planner's bookkeeping, its planned prefetches (the
// oracle: each thread's own loop) and early write-backs (clean_ahead too) race with the other
// threads' acquires, releases, host checks and evictions. CI runs these under ThreadSanitizer.
class PoolThreadsPlanner : public testing::TestWithParam<threads_variant> {};

TEST_P(PoolThreadsPlanner, EightThreadsKeepEveryByte) { run_threads(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
  Prefetch, PoolThreadsPlanner,
  testing::Values(
    threads_variant{.name = "plan_random", .prefetch = "plan", .threads = 8, .ops = 300, .tsan_ops = 150},
    threads_variant{
      .name = "plan_loop", .prefetch = "plan", .threads = 8, .ops = 300, .tsan_ops = 120, .unit = 16_KiB, .loop = true},
    threads_variant{.name = "plan_small_budget_loop",
                    .prefetch = "plan:writeback=on,stream_reuse=on,budget=64KiB,clean_ahead=on",
                    .threads = 8,
                    .ops = 300,
                    .tsan_ops = 120,
                    .unit = 16_KiB,
                    .loop = true},
    threads_variant{.name = "plan_loop_timed_events",
                    .prefetch = "plan",
                    .threads = 8,
                    .ops = 300,
                    .tsan_ops = 120,
                    .unit = 16_KiB,
                    .loop = true,
                    .timed_events = true},
    // A history of 64: the planner falls asleep and wakes while the threads work (Note [A
    // planner that finds no schedule sleeps]), its countdown racing with the told acquires.
    threads_variant{.name = "plan_random_asleep", .prefetch = "plan:history=64", .threads = 8, .ops = 300, .tsan_ops = 150},
    threads_variant{.name = "plan_loop_asleep_timed_events", .prefetch = "plan:history=64", .threads = 8, .ops = 300,
                    .tsan_ops = 120, .unit = 16_KiB, .loop = true, .timed_events = true},
    threads_variant{.name = "oracle_loop",
                    .prefetch = "oracle",
                    .threads = 8,
                    .ops = 300,
                    .tsan_ops = 48,
                    .loop = true,
                    .oracle = true}),
  [](testing::TestParamInfo<threads_variant> const& pi) { return std::string(pi.param.name); });

}  // namespace
}  // namespace tierpool::test

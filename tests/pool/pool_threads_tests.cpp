// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_threads_tests.cpp — four threads, thousands of mixed operations on one pool (writes on
// streams, reads, prefetch, demote, free and reallocate); every byte is checked.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

TEST(PoolThreads, FourThreadsThousandsOfOps)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 1_MiB, 16_MiB)};
  constexpr int kThreads = 4;
  constexpr int kOps = 800;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(th) + 1);
      stream_handle s = p.create_stream();
      std::vector<std::unique_ptr<modify_job>> jobs;
      constexpr std::size_t n = 6;
      std::vector<tensor> ts(n);
      std::vector<std::uint32_t> ver(n, 0);
      auto key = [&](std::size_t i) { return static_cast<std::uint64_t>(th) * 1000 + i; };
      for (std::size_t i = 0; i < n; ++i) {
        ts[i] = p.allocate(64_KiB * (1 + i % 3));
        fill(p, ts[i], key(i), ver[i] = 1);
      }
      for (int op = 0; op < kOps; ++op) {
        std::size_t const i = rng() % n;
        try {
          switch (rng() % 6) {
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
              ts[i] = p.allocate(64_KiB * (1 + i % 3));
              fill(p, ts[i], key(i), ver[i] = 1);
              break;
          }
        } catch (out_of_memory const&) {
          // another thread holds leases at the moment: acceptable, bytes must be unchanged
        }
        if (jobs.size() > 64) {
          p.synchronize(s);
          jobs.clear();
        }
      }
      for (std::size_t i = 0; i < n; ++i) {
        if (!check(p, ts[i], key(i), ver[i])) { ++failures; }
      }
      p.synchronize(s);
    });
  }
  for (auto& t : threads) { t.join(); }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

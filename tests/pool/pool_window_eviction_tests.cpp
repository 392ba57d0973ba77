// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_window_eviction_tests.cpp — window eviction (Note [Evicting a window for a large
// request], runtime/migration/window_eviction.cpp): a large request on a full tier whose
// least recently used tensors lie every other block evicts one contiguous run, not the
// policy's scattered victims round after round; every tensor keeps its bytes (sim real
// memory); pool_options::window_eviction_share = 0 keeps the plain rounds; a request the
// policy's first victims already make room for takes the plain round; eight threads
// (more than cores) leasing small and large tensors on a full tier keep every byte.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

constexpr std::size_t kUnit = 1_MiB;  // window eviction starts at 1 MiB

void put(pool& p, tensor const& t, std::uint64_t key)
{
  lease l = p.acquire(t, access_mode::write_discard);
  write_pattern(l.data(), l.bytes(), key, 1);
}

bool holds(pool& p, tensor const& t, std::uint64_t key)
{
  lease l = p.acquire(t, access_mode::read);
  return has_pattern(l.data(), l.bytes(), key, 1);
}

tensor_options on_device() { return tensor_options{.preferred_tier = tier_id{0}}; }

// A 16 MiB device tier (one chunk) over a host tier, lru, full of 16 dirty tensors of
// 1 MiB in offset order; the even ones are least recently used, then the odd ones.
pool_options options(std::size_t share)
{
  pool_options o = small_tiers(make_sim(sim_clock_mode::wall, 64_MiB), 16_MiB, 0, 64_MiB);
  o.policy = "lru";
  o.window_eviction_share = share;
  return o;
}

std::vector<tensor> fill_alternating(pool& p)
{
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 16; ++i) {
    ts.push_back(p.allocate(kUnit, on_device()));
    put(p, ts.back(), i);
  }
  for (std::uint64_t i = 0; i < 16; i += 2) { (void)holds(p, ts[i], i); }
  for (std::uint64_t i = 1; i < 16; i += 2) { (void)holds(p, ts[i], i); }
  return ts;
}

struct outcome {
  tier_stats device;
  std::uint64_t evicted_moved{0};
};

// A 4 MiB tensor on the full tier: its figures right after it is written.
outcome place_large(pool& p, std::vector<tensor> const& ts, tensor& big)
{
  (void)ts;
  big = p.allocate(4 * kUnit, on_device());
  put(p, big, 99);
  pool_stats const st = p.stats();
  return outcome{st.tiers[0], st.evicted_moved};
}

void expect_bytes(pool& p, std::vector<tensor> const& ts, tensor const& big)
{
  EXPECT_EQ(p.residency(big).home, tier_id{0});
  EXPECT_TRUE(holds(p, big, 99));
  for (std::uint64_t i = 0; i < ts.size(); ++i) { EXPECT_TRUE(holds(p, ts[i], i)) << "tensor " << i; }
  EXPECT_TRUE(p.validate());
}

TEST(PoolWindowEviction, LargeRequestEvictsOneRunNotTheScatteredVictims)
{
  pool p(options(64));
  std::vector<tensor> ts = fill_alternating(p);
  ASSERT_EQ(p.stats().tiers[0].evictions, 0U) << "the tier did not hold the 16 tensors";
  tensor big;
  outcome const o = place_large(p, ts, big);
  EXPECT_EQ(o.device.window_evictions, 1U);
  // Its four blocks only: the plain rounds (below) evict twelve.
  EXPECT_EQ(o.device.evictions, 4U);
  EXPECT_EQ(o.evicted_moved, 4U) << "each victim was dirty: written back, not dropped";
  expect_bytes(p, ts, big);
}

TEST(PoolWindowEviction, OffKeepsThePlainRounds)
{
  pool p(options(0));
  std::vector<tensor> ts = fill_alternating(p);
  tensor big;
  outcome const o = place_large(p, ts, big);
  EXPECT_EQ(o.device.window_evictions, 0U);
  // Rounds of the request's bytes in lru order: the even ones (two rounds), then the odd
  // ones 1, 3, 5 and 7 (blocks 0..8 free): twelve, for a run of four.
  EXPECT_EQ(o.device.evictions, 12U);
  expect_bytes(p, ts, big);
}

TEST(PoolWindowEviction, APolicyHeadThatMakesRoomTakesThePlainRound)
{
  // The least recently used are blocks 0..3, side by side: the policy's first victims
  // already make the run (prefix within twice the request), so no window is chosen.
  pool p(options(64));
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 16; ++i) {
    ts.push_back(p.allocate(kUnit, on_device()));
    put(p, ts.back(), i);
  }
  tensor big;
  outcome const o = place_large(p, ts, big);
  EXPECT_EQ(o.device.window_evictions, 0U);
  EXPECT_EQ(o.device.evictions, 4U);
  expect_bytes(p, ts, big);
}

#if defined(__SANITIZE_THREAD__)
constexpr int kThreadOps = 150;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr int kThreadOps = 150;
#else
constexpr int kThreadOps = 1500;
#endif
#else
constexpr int kThreadOps = 1500;
#endif

// Eight threads, each with six 256 KiB tensors and two of 1-2 MiB (large enough for window
// eviction on a 32 MiB tier), lease one at a time on their own stream, check its bytes and
// rewrite some; now and then a thread frees a large tensor and allocates another on the
// device. Window eviction runs while other threads hold leases and evict: every lease
// sees the last version, every tensor holds it at the end, and the pool validates.
TEST(PoolWindowEvictionThreads, SmallAndLargeTensorsKeepEveryByte)
{
  constexpr std::uint32_t kThreads = 8;
  pool_options o = small_tiers(make_sim(sim_clock_mode::wall, 64_MiB), 32_MiB, 0, 512_MiB);
  o.policy = "lru";
  pool p(o);
  std::atomic<std::uint64_t> bad{0};
  std::atomic<std::uint64_t> errors{0};
  std::vector<std::vector<tensor>> owned(kThreads);
  std::vector<std::vector<std::uint32_t>> versions(kThreads);
  std::vector<std::vector<std::uint64_t>> keys(kThreads);
  std::vector<std::thread> workers;
  for (std::uint32_t w = 0; w < kThreads; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937_64 rng(7 + w);
      auto& ts = owned[w];
      auto& ver = versions[w];
      auto& key = keys[w];
      std::uint64_t next_key = (std::uint64_t{w} << 32U) + 1;
      auto large_bytes = [&] { return 1_MiB + (rng() % 5) * 256_KiB; };
      try {
        for (int i = 0; i < 8; ++i) {
          ts.push_back(p.allocate(i < 6 ? 256_KiB : large_bytes()));
          key.push_back(next_key++);
          ver.push_back(1);
          fill(p, ts.back(), key.back(), 1);
        }
        stream_handle const s = p.create_stream();
        for (int k = 0; k < kThreadOps; ++k) {
          std::size_t const i = rng() % ts.size();
          if (i >= 6 && rng() % 16 == 0) {  // a new large tensor, born on the device
            ts[i] = p.allocate(large_bytes(), {.preferred_tier = tier_id{0}});
            key[i] = next_key++;
            ver[i] = 1;
            fill(p, ts[i], key[i], 1);
            continue;
          }
          bool const write = rng() % 3 == 0;
          lease l = p.acquire(ts[i], write ? access_mode::read_write : access_mode::read, s);
          p.synchronize(s);
          if (!has_pattern(l.data(), l.bytes(), key[i], ver[i])) { bad.fetch_add(1); }
          if (write) { write_pattern(l.data(), l.bytes(), key[i], ++ver[i]); }
        }
        p.destroy_stream(s);
      } catch (std::exception const& e) {
        errors.fetch_add(1);
        ADD_FAILURE() << "thread " << w << ": " << e.what();
      }
    });
  }
  for (auto& t : workers) { t.join(); }
  EXPECT_EQ(errors.load(), 0U);
  EXPECT_EQ(bad.load(), 0U) << "leases that saw other bytes than the last version";
  for (std::uint32_t w = 0; w < kThreads; ++w) {
    for (std::size_t i = 0; i < owned[w].size(); ++i) {
      EXPECT_TRUE(check(p, owned[w][i], keys[w][i], versions[w][i])) << "thread " << w << " tensor " << i;
    }
  }
  pool_stats const st = p.stats();
  EXPECT_GT(st.tiers[0].window_evictions, 0U) << "window eviction was exercised";
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

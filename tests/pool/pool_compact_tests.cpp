// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_compact_tests.cpp — compaction (Note [Compaction], runtime/migration/compaction.cpp):
// pool::compact coalesces a fragmented tier and every moved tensor keeps its bytes (sim
// real memory); a leased copy never moves; the out-of-memory ladder compacts instead of
// evicting (or failing, with no tier below) when pool_options::compaction is on, and does
// not when it is off; a copy that fails during compaction loses nothing (sim faults); and
// threads acquire, write and free while another compacts (PoolCompactThreads, under TSan
// in .ci/run).
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

constexpr std::size_t kUnit = 64_KiB;

// Write tensor `key`'s pattern through a device lease (sim real memory: the device
// pointer is host memory), so that the copy stays on the device.
void put(pool& p, tensor const& t, std::uint64_t key, std::uint32_t version = 1)
{
  lease l = p.acquire(t, access_mode::write_discard);
  write_pattern(l.data(), l.bytes(), key, version);
}

// Whether the device copy holds tensor `key`'s pattern (read through a device lease).
bool holds(pool& p, tensor const& t, std::uint64_t key, std::uint32_t version = 1)
{
  lease l = p.acquire(t, access_mode::read);
  return has_pattern(l.data(), l.bytes(), key, version);
}

tensor_options on_device() { return tensor_options{.preferred_tier = tier_id{0}}; }

// A 1 MiB device tier (one chunk) holding 16 tensors of 64 KiB, every other one freed:
// 512 KiB free in 64 KiB holes. `keys[i]` is the key of live tensor i (ts[i] valid).
struct fragmented {
  std::vector<tensor> ts;
  std::vector<std::uint64_t> keys;
};

fragmented fragment(pool& p)
{
  fragmented f;
  std::vector<tensor> all;
  for (std::uint64_t i = 0; i < 16; ++i) {
    all.push_back(p.allocate(kUnit, on_device()));
    put(p, all.back(), i);
  }
  for (std::uint64_t i = 0; i < 16; ++i) {
    if (i % 2 == 0) {
      p.free(all[i]);
    } else {
      f.ts.push_back(std::move(all[i]));
      f.keys.push_back(i);
    }
  }
  return f;
}

pool_options device_over_host(std::shared_ptr<sim_backend> be, bool compaction)
{
  pool_options o = small_tiers(std::move(be), 1_MiB, 0, 16_MiB);
  o.compaction = compaction;
  return o;
}

TEST(PoolCompact, CoalescesTheFreeSpaceAndKeepsEveryByte)
{
  pool p(device_over_host(make_sim(), false));
  fragmented f = fragment(p);
  tier_stats const before = p.stats().tiers[0];
  ASSERT_EQ(before.largest_free_block, kUnit) << "the workload did not fragment the tier";
  compact_result const r = p.compact(tier_id{0});
  ASSERT_EQ(r.tiers.size(), 1U);
  tier_compaction const& c = r.tiers[0];
  EXPECT_GT(c.moved_tensors, 0U);
  EXPECT_EQ(c.moved_bytes, c.moved_tensors * kUnit);
  EXPECT_EQ(c.largest_free_before, kUnit);
  EXPECT_EQ(c.free_bytes, 8 * kUnit);
  EXPECT_EQ(c.largest_free_after, c.free_bytes) << "equal sizes pack without a hole";
  EXPECT_DOUBLE_EQ(c.fragmentation_after, 0.0);
  EXPECT_GT(c.fragmentation_before, 0.5);
  EXPECT_EQ(r.moved_tensors, c.moved_tensors);
  for (std::size_t i = 0; i < f.ts.size(); ++i) { EXPECT_TRUE(holds(p, f.ts[i], f.keys[i])) << "tensor " << f.keys[i]; }
  EXPECT_TRUE(p.validate());
  tier_stats const after = p.stats().tiers[0];
  EXPECT_EQ(after.compacted_tensors, c.moved_tensors);
  EXPECT_EQ(after.compacted_bytes, c.moved_bytes);
  EXPECT_EQ(after.evictions, before.evictions) << "compaction evicts nothing";
  // A compacted tier compacts to nothing more.
  EXPECT_EQ(p.compact().moved_tensors, 0U);
  EXPECT_TRUE(p.validate());
}

TEST(PoolCompact, LeasedCopiesNeverMove)
{
  pool p(device_over_host(make_sim(), false));
  fragmented f = fragment(p);
  // Lease every live tensor but one: their pointers must stay, whatever compaction does.
  std::vector<lease> held;
  std::vector<void*> where;
  for (std::size_t i = 1; i < f.ts.size(); ++i) {
    held.push_back(p.acquire(f.ts[i], access_mode::read));
    where.push_back(held.back().data());
  }
  compact_result const r = p.compact(tier_id{0});
  EXPECT_LE(r.moved_tensors, 1U);
  for (std::size_t i = 0; i < held.size(); ++i) {
    EXPECT_EQ(held[i].data(), where[i]) << "a leased copy moved";
    EXPECT_TRUE(has_pattern(held[i].data(), held[i].bytes(), f.keys[i + 1], 1));
  }
  held.clear();
  EXPECT_TRUE(holds(p, f.ts[0], f.keys[0]));
  EXPECT_TRUE(p.validate());
  // Released, they may move now.
  EXPECT_GT(p.compact(tier_id{0}).moved_tensors, 0U);
  for (std::size_t i = 0; i < f.ts.size(); ++i) { EXPECT_TRUE(holds(p, f.ts[i], f.keys[i])); }
  EXPECT_TRUE(p.validate());
}

TEST(PoolCompact, CopiesInUseByAStreamStay)
{
  auto be = make_sim();
  pool p(device_over_host(be, false));
  fragmented f = fragment(p);
  stream_handle const s = p.create_stream();
  stream_gate gate;
  ASSERT_EQ(be->launch_host_func(s, &stream_gate::run, &gate), status::ok);
  void* ptr = nullptr;
  {
    lease l = p.acquire(f.ts.back(), access_mode::read, s);  // a use queued behind the gate
    ptr = l.data();
  }
  (void)p.compact(tier_id{0});
  gate.open = true;
  p.synchronize(s);
  {
    lease l = p.acquire(f.ts.back(), access_mode::read);
    EXPECT_EQ(l.data(), ptr) << "a copy a stream still used was moved";
  }
  for (std::size_t i = 0; i < f.ts.size(); ++i) { EXPECT_TRUE(holds(p, f.ts[i], f.keys[i])); }
  EXPECT_TRUE(p.validate());
  p.destroy_stream(s);
}

// After one request the ladder placed: with compaction on, by compacting once and evicting
// nothing; off, by evicting.
void expect_compacted_not_evicted(tier_stats const& st, bool on)
{
  EXPECT_EQ(st.compactions, on ? 1U : 0U);
  if (on) {
    EXPECT_GT(st.compacted_tensors, 0U);
    EXPECT_EQ(st.evictions, 0U) << "evicted although compaction could make the room";
  } else {
    EXPECT_GT(st.evictions, 0U);
  }
}

// Places a 256 KiB tensor on the device (its bytes written there), checks the ladder's
// figures, its bytes and every live tensor's; returns the device tier's figures as they
// were right after the placement.
tier_stats place_big_and_check(pool& p, std::vector<tensor> const& live, std::vector<std::uint64_t> const& keys, bool on)
{
  tensor big = p.allocate(4 * kUnit, on_device());
  put(p, big, 99);
  tier_stats const st = p.stats().tiers[0];
  expect_compacted_not_evicted(st, on);
  EXPECT_EQ(p.residency(big).home, tier_id{0});
  EXPECT_TRUE(holds(p, big, 99));
  for (std::size_t i = 0; i < live.size(); ++i) { EXPECT_TRUE(holds(p, live[i], keys[i])) << "tensor " << keys[i]; }
  EXPECT_TRUE(p.validate());
  return st;
}

// The ladder: a 256 KiB tensor needs a run that no free block holds, with 512 KiB free.
TEST(PoolCompact, LadderCompactsInsteadOfEvicting)
{
  for (bool const on : {false, true}) {
    SCOPED_TRACE(on ? "compaction on" : "compaction off");
    pool p(device_over_host(make_sim(), on));
    fragmented f = fragment(p);
    tier_stats const st = place_big_and_check(p, f.ts, f.keys, on);
    EXPECT_EQ(st.fragmented_evictions, on ? 0U : 1U);
  }
}

// The ladder with the room vacated, not free (Note [Compacting around vacated blocks],
// runtime/migration/placement.cpp): the host ran ahead of the device, so the freed
// tensors' blocks still wait for a kernel that reads them. The free and vacated bytes
// cover a 256 KiB request, but live tensors lie between the vacated blocks, so no run of
// them holds it. With compaction on, the host waits for the vacated blocks and compacts:
// nothing is evicted, every byte stays. Off, the ladder evicts.
TEST(PoolCompact, LadderWaitsForVacatedBlocksAndCompactsInsteadOfEvicting)
{
  for (bool const on : {false, true}) {
    SCOPED_TRACE(on ? "compaction on" : "compaction off");
    auto be = make_sim(sim_clock_mode::virtual_clock);
    pool p(device_over_host(be, on));
    std::vector<tensor> all;
    for (std::uint64_t i = 0; i < 16; ++i) {
      all.push_back(p.allocate(kUnit, on_device()));
      put(p, all.back(), i);
    }
    stream_handle const s = p.create_stream();
    std::vector<tensor> live;
    std::vector<std::uint64_t> keys;
    for (std::uint64_t i = 0; i < 16; ++i) {
      if (i % 2 == 0) {
        {
          lease l = p.acquire(all[i], access_mode::read, s);
          ASSERT_EQ(be->compute_async(s, 1'000'000), status::ok);  // 1 ms reading it, on the device's time
        }
        p.free(all[i]);  // vacated: its block waits for that kernel
      } else {
        live.push_back(std::move(all[i]));
        keys.push_back(i);
      }
    }
    tier_stats const before = p.stats().tiers[0];
    ASSERT_EQ(before.largest_free_block, 0U) << "the freed blocks should still be vacated";
    tier_stats const st = place_big_and_check(p, live, keys, on);
    EXPECT_EQ(st.waits_to_compact, on ? 1U : 0U);
    p.synchronize(s);
    p.destroy_stream(s);
  }
}

// With no tier below, what would have failed for fragmentation succeeds.
TEST(PoolCompact, LadderPlacesWhatWouldFailWithoutATierBelow)
{
  {
    pool_options oo = small_tiers(make_sim(), 1_MiB, 0, 0);
    oo.compact_before_failing = false;  // no compaction at all
    pool off(std::move(oo));
    fragmented f = fragment(off);
    try {
      tensor big = off.allocate(4 * kUnit, on_device());
      ADD_FAILURE() << "placed without compaction";
    } catch (out_of_memory const& e) {
      EXPECT_EQ(e.figures().cause, oom_cause::fragmentation) << e.what();
    }
    EXPECT_TRUE(off.validate());
  }
  // Before evicting (compaction on), and as the last resort before failing (the default).
  for (bool const before_evicting : {true, false}) {
    SCOPED_TRACE(before_evicting ? "compaction on" : "the default: compaction before failing");
    pool_options o = small_tiers(make_sim(), 1_MiB, 0, 0);
    o.compaction = before_evicting;
    pool p(std::move(o));
    fragmented f = fragment(p);
    tensor big = p.allocate(4 * kUnit, on_device());
    put(p, big, 99);
    EXPECT_EQ(p.stats().tiers[0].compactions, 1U);
    EXPECT_GT(p.stats().tiers[0].compacted_tensors, 0U);
    EXPECT_EQ(p.stats().tiers[0].evictions, 0U);
    EXPECT_TRUE(holds(p, big, 99));
    for (std::size_t i = 0; i < f.ts.size(); ++i) { EXPECT_TRUE(holds(p, f.ts[i], f.keys[i])); }
    EXPECT_TRUE(p.validate());
  }
}

// The last resort moves no leased copy: with every live tensor leased it cannot clear a
// run, and the request fails for fragmentation with every pointer and byte as it was.
TEST(PoolCompact, LastResortLeavesLeasedCopiesAndFailsForFragmentation)
{
  pool p(small_tiers(make_sim(), 1_MiB, 0, 0));
  fragmented f = fragment(p);
  std::vector<lease> held;
  std::vector<void*> where;
  for (std::size_t i = 0; i < f.ts.size(); ++i) {
    held.push_back(p.acquire(f.ts[i], access_mode::read));
    where.push_back(held.back().data());
  }
  try {
    tensor big = p.allocate(4 * kUnit, on_device());
    ADD_FAILURE() << "placed although every copy was leased";
  } catch (out_of_memory const& e) {
    EXPECT_EQ(e.figures().cause, oom_cause::fragmentation) << e.what();
  }
  EXPECT_EQ(p.stats().tiers[0].compacted_tensors, 0U);
  for (std::size_t i = 0; i < held.size(); ++i) {
    EXPECT_EQ(held[i].data(), where[i]) << "a leased copy moved";
    EXPECT_TRUE(has_pattern(held[i].data(), held[i].bytes(), f.keys[i], 1));
  }
  held.clear();
  EXPECT_TRUE(p.validate());
}

// Every fallible backend call compaction makes fails in turn (sim faults, nth over every
// kind): the failed move leaves its copy where it was, no byte is lost, and the pool stays
// valid; the ladder's compaction the same.
TEST(PoolCompact, AFailingCopyLosesNothing)
{
  for (std::uint64_t nth = 1; nth <= 6; ++nth) {
    SCOPED_TRACE("nth " + std::to_string(nth));
    auto be = make_sim();
    pool p(device_over_host(be, false));
    fragmented f = fragment(p);
    be->set_faults({.seed = 1, .rules = {{.kind = sim_call::any, .nth = nth}}});
    try {
      (void)p.compact(tier_id{0});
    } catch (backend_error const&) {  // a typed error is fine; losing bytes is not
    } catch (out_of_memory const&) {
    }
    be->clear_faults();
    for (std::size_t i = 0; i < f.ts.size(); ++i) { EXPECT_TRUE(holds(p, f.ts[i], f.keys[i])) << "tensor " << f.keys[i]; }
    EXPECT_TRUE(p.validate());
  }
  {
    auto be = make_sim();
    pool p(device_over_host(be, false));
    fragmented f = fragment(p);
    be->set_faults({.seed = 1, .rules = {{.kind = sim_call::copy, .nth = 1}}});
    (void)p.compact(tier_id{0});
    be->clear_faults();
    EXPECT_EQ(p.stats().tiers[0].compaction_copy_failures, 1U);
    for (std::size_t i = 0; i < f.ts.size(); ++i) { EXPECT_TRUE(holds(p, f.ts[i], f.keys[i])); }
    EXPECT_TRUE(p.validate());
  }
  for (double const rate : {0.3, 1.0}) {
    SCOPED_TRACE("ladder, copy fault rate " + std::to_string(rate));
    auto be = make_sim();
    pool_options o = small_tiers(be, 1_MiB, 0, 0);
    o.compaction = true;
    pool p(std::move(o));
    fragmented f = fragment(p);
    be->set_faults({.seed = 7, .rules = {{.kind = sim_call::copy, .probability = rate}}});
    try {
      tensor big = p.allocate(4 * kUnit, on_device());
    } catch (out_of_memory const&) {  // no move made room
    } catch (backend_error const&) {
    }
    be->clear_faults();
    for (std::size_t i = 0; i < f.ts.size(); ++i) { EXPECT_TRUE(holds(p, f.ts[i], f.keys[i])); }
    EXPECT_TRUE(p.validate());
  }
}

TEST(PoolCompact, RefusesABadTier)
{
  pool p(device_over_host(make_sim(), true));
  EXPECT_THROW((void)p.compact(tier_id{7}), logic_error);
  compact_result const r = p.compact();
  EXPECT_EQ(r.tiers.size(), 2U);
  EXPECT_EQ(r.moved_tensors, 0U);
}

// More threads than cores acquire, write, check and free tensors of mixed sizes on a small
// device tier (the ladder compacts, evicts, or fails) while another thread calls compact().
// Returns the ladder's compactions.
std::uint64_t acquire_and_free_while_compacting(pool_options o)
{
  unsigned const n = std::max(4U, 2 * std::thread::hardware_concurrency() + 1);
  pool p(std::move(o));
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<std::uint64_t> compacted{0};
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < n; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937_64 rng(w + 1);
      struct mine_t {
        tensor t;
        std::uint64_t key;
        std::uint32_t version;
      };
      std::vector<mine_t> mine;
      std::uint64_t next_key = (static_cast<std::uint64_t>(w) + 1) << 32;
      for (int step = 0; step < 300; ++step) {
        try {
          std::uint64_t const op = rng() % 4;
          if (mine.size() < 4 || op == 0) {
            std::size_t const bytes = (1 + rng() % 6) * 16_KiB + (rng() % 4) * 256;
            tensor t = p.allocate(bytes, on_device());
            put(p, t, ++next_key, 1);
            mine.push_back(mine_t{std::move(t), next_key, 1});
          } else if (op == 1 && mine.size() > 2) {
            std::size_t const i = rng() % mine.size();
            p.free(mine[i].t);
            mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
          } else {
            mine_t& m = mine[rng() % mine.size()];
            lease l = p.acquire(m.t, access_mode::read_write);
            void* const at = l.data();
            if (!has_pattern(l.data(), l.bytes(), m.key, m.version)) { ++bad; }
            std::this_thread::yield();
            if (l.data() != at) { ++bad; }
            write_pattern(l.data(), l.bytes(), m.key, ++m.version);
          }
        } catch (out_of_memory const&) {  // every lease of the others at once: allowed, rare
        }
      }
      for (mine_t const& m : mine) {
        if (!holds(p, m.t, m.key, m.version)) { ++bad; }
      }
    });
  }
  std::thread compactor([&] {
    while (!stop.load()) {
      compacted += p.compact().moved_tensors;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  for (auto& t : workers) { t.join(); }
  stop = true;
  compactor.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_TRUE(p.validate());
  std::uint64_t const ladder = p.stats().tiers[0].compactions;
  ::testing::Test::RecordProperty("compacted", static_cast<int>(compacted.load()));
  ::testing::Test::RecordProperty("ladder_compactions", static_cast<int>(ladder));
  return ladder;
}

TEST(PoolCompactThreads, AcquireAndFreeWhileCompacting)
{
  pool_options o = small_tiers(make_sim(), 1_MiB, 0, 32_MiB);
  o.compaction = true;  // the ladder compacts before it evicts
  (void)acquire_and_free_while_compacting(std::move(o));
}

// No tier below and the defaults: requests the device cannot hold fail, and those that
// fail only for fragmentation compact first (the last resort), among the same threads.
TEST(PoolCompactThreads, LastResortAmongThreadsOnADeviceAlone)
{
  // 51-80 of them in 12 runs on two cores or on one (taskset).
  EXPECT_GT(acquire_and_free_while_compacting(small_tiers(make_sim(), 1_MiB, 0, 0)), 0U)
    << "no request was placed by the last resort: the test shows nothing";
}

}  // namespace
}  // namespace tierpool::test

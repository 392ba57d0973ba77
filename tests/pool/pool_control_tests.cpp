// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_control_tests.cpp — what a program does to the pool's figures and budgets at run
// time: reset_peak_stats(), trim(), set_capacity() (grow, shrink, shrink held back by
// leases or by full tiers below, misuse), the device-pressure check and its thread, and
// each tier's policy and the predictor in stats(), summary() and summary_json(). Every
// shrink checks the bytes of every tensor and validate().
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <tierpool/pool.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "../unit/pool_test_util.hpp"

namespace tierpool::test {
namespace {

// device 4 MiB in 1 MiB chunks, pinned 8 MiB, host 32 MiB.
pool_options chunked(std::shared_ptr<sim_backend> be)
{
  pool_options o;
  o.backend_object = std::move(be);
  o.read_environment = false;
  o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = 4_MiB, .chunk_bytes = 1_MiB});
  o.tiers.push_back({.kind = tier_kind::pinned_host, .capacity_bytes = 8_MiB, .chunk_bytes = 1_MiB});
  o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = 32_MiB, .chunk_bytes = 4_MiB});
  return o;
}

// n tensors of `bytes` filled on the host and brought to the device (every other one
// written there on a stream, so that its only newest copy is the device's).
std::vector<tensor> fill_device(pool& p, std::size_t n, std::size_t bytes, stream_handle s)
{
  std::vector<tensor> ts;
  std::vector<std::unique_ptr<modify_job>> jobs;
  for (std::size_t i = 0; i < n; ++i) {
    ts.push_back(p.allocate(bytes, {.name = "t" + std::to_string(i)}));
    fill(p, ts.back(), i, 0);
    if (i % 2 == 1) {
      EXPECT_EQ(modify_on_stream(p, ts.back(), s, i, 1, jobs), status::ok);
    } else {
      lease l = p.acquire(ts.back(), access_mode::read, s);
      EXPECT_NE(l.data(), nullptr);
    }
  }
  p.synchronize(s);
  return ts;
}

void expect_bytes(pool& p, std::vector<tensor> const& ts)
{
  for (std::size_t i = 0; i < ts.size(); ++i) {
    EXPECT_TRUE(check(p, ts[i], i, i % 2 == 1 ? 1U : 0U)) << "tensor " << i;
  }
}

TEST(PoolControl, ResetPeakStatsStartsPeaksOverAtTheCurrentValues)
{
  pool p(chunked(make_sim()));
  auto s = p.create_stream();
  std::vector<tensor> ts = fill_device(p, 8, 256_KiB, s);
  ts.resize(2);  // frees six
  pool_stats before = p.stats();
  ASSERT_GT(before.tiers[0].used_bytes.peak, before.tiers[0].used_bytes.current);
  ASSERT_EQ(before.tenants.size(), 1U);
  ASSERT_GT(before.tenants[0].peak_bytes, before.tenants[0].live_bytes);
  p.reset_peak_stats();
  pool_stats after = p.stats();
  for (std::size_t k = 0; k < after.tiers.size(); ++k) {
    EXPECT_EQ(after.tiers[k].used_bytes.peak, after.tiers[k].used_bytes.current) << after.tiers[k].name;
    EXPECT_EQ(after.tiers[k].used_bytes.allocated, before.tiers[k].used_bytes.allocated);  // totals stay
  }
  EXPECT_EQ(after.tenants[0].peak_bytes, after.tenants[0].live_bytes);
  EXPECT_EQ(after.acquires, before.acquires);
  ts.push_back(p.allocate(512_KiB));  // peaks move again from there
  EXPECT_EQ(p.stats().tenants[0].peak_bytes, 2 * 256_KiB + 512_KiB);
  EXPECT_TRUE(p.validate());
}

TEST(PoolControl, TrimGivesBackEmptyChunksAndTheTierGrowsAgain)
{
  pool p(chunked(make_sim()));
  auto s = p.create_stream();
  std::vector<tensor> ts = fill_device(p, 16, 256_KiB, s);  // the device tier full: 4 chunks
  ASSERT_EQ(p.stats().tiers[0].reserved_bytes, 4_MiB);
  ts.erase(ts.begin() + 4, ts.end());  // 4 tensors left, in the first chunk(s)
  p.synchronize(s);
  // The frees are stream-ordered: trim() gives back what their streams have got past.
  std::size_t const before = p.stats().tiers[1].reserved_bytes + p.stats().tiers[2].reserved_bytes;
  std::size_t given = 0;
  for (int i = 0; i < 2000 && p.stats().tiers[0].reserved_bytes > 1_MiB; ++i) {
    given += p.trim();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  given += p.trim();
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[0].reserved_bytes, 1_MiB);  // the four left live in the first chunk
  EXPECT_EQ(given, 3_MiB + before - st.tiers[1].reserved_bytes - st.tiers[2].reserved_bytes);  // and the tiers below
  EXPECT_EQ(st.tiers[0].capacity_bytes, 4_MiB);  // the budget stays
  expect_bytes(p, ts);
  // Nothing more to give on the device (the tiers below may still be getting past frees of
  // their own: their chunks go when their streams do).
  (void)p.trim();
  EXPECT_EQ(p.stats().tiers[0].reserved_bytes, 1_MiB);
  std::vector<tensor> more = fill_device(p, 12, 256_KiB, s);
  EXPECT_EQ(p.stats().tiers[0].reserved_bytes, 4_MiB);  // grew back
  expect_bytes(p, ts);
  EXPECT_TRUE(p.validate());
}

TEST(PoolControl, SetCapacityGrowsTheBudget)
{
  pool p(chunked(make_sim()));
  auto s = p.create_stream();
  capacity_report const r = p.set_capacity(tier_id{0}, 6_MiB);
  EXPECT_TRUE(r.reached);
  EXPECT_EQ(r.previous_bytes, 4_MiB);
  EXPECT_EQ(r.capacity_bytes, 6_MiB);
  EXPECT_EQ(r.tier, "device");
  std::vector<tensor> ts = fill_device(p, 24, 256_KiB, s);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[0].capacity_bytes, 6_MiB);
  EXPECT_EQ(st.tiers[0].reserved_bytes, 6_MiB);
  EXPECT_EQ(st.tiers[0].evictions, 0U);  // 24 x 256 KiB fit without evicting
  expect_bytes(p, ts);
  EXPECT_TRUE(p.validate());
}

TEST(PoolControl, ShrinkMovesCopiesDownAndLosesNoByte)
{
  pool p(chunked(make_sim()));
  auto s = p.create_stream();
  std::vector<tensor> ts = fill_device(p, 16, 256_KiB, s);
  capacity_report const r = p.set_capacity(tier_id{0}, 1_MiB + 100);  // rounded down to the alignment
  EXPECT_TRUE(r.reached) << r.why;
  EXPECT_EQ(r.requested_bytes, 1_MiB);
  EXPECT_EQ(r.capacity_bytes, 1_MiB);
  EXPECT_EQ(r.reserved_before, 4_MiB);
  EXPECT_LE(r.reserved_bytes, 1_MiB);
  EXPECT_EQ(r.released_bytes, 4_MiB - r.reserved_bytes);
  EXPECT_GE(r.moved_tensors, 12U);
  EXPECT_EQ(r.moved_bytes, r.moved_tensors * 256_KiB);
  EXPECT_GE(r.written_back, 6U);  // the odd ones were dirty on the device
  EXPECT_LE(r.written_back, r.moved_tensors);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[0].capacity_bytes, 1_MiB);
  EXPECT_LE(static_cast<std::size_t>(st.tiers[0].used_bytes.current), 1_MiB);
  EXPECT_TRUE(p.validate());
  expect_bytes(p, ts);
  // The smaller tier still works: every tensor through it once more.
  for (std::size_t i = 0; i < ts.size(); ++i) {
    lease l = p.acquire(ts[i], access_mode::read, s);
    EXPECT_NE(l.data(), nullptr);
  }
  p.synchronize(s);
  EXPECT_LE(p.stats().tiers[0].reserved_bytes, 1_MiB);
  expect_bytes(p, ts);
  EXPECT_TRUE(p.validate());
}

TEST(PoolControl, ShrinkStopsAtLeasedCopiesAndSaysSo)
{
  pool p(chunked(make_sim()));
  auto s = p.create_stream();
  std::vector<tensor> ts = fill_device(p, 16, 256_KiB, s);
  std::vector<lease> held;
  for (std::size_t i = 0; i < ts.size(); i += 4) { held.push_back(p.acquire(ts[i], access_mode::read, s)); }
  capacity_report const r = p.set_capacity(tier_id{0}, 1_MiB);
  EXPECT_FALSE(r.reached);
  EXPECT_NE(r.why.find("leased"), std::string::npos) << r.why;
  EXPECT_EQ(r.capacity_bytes, r.reserved_bytes);  // it stops where it got
  EXPECT_GE(r.capacity_bytes, 1_MiB);
  EXPECT_TRUE(p.validate());
  for (lease& l : held) { EXPECT_NE(l.data(), nullptr); }
  held.clear();
  p.synchronize(s);
  capacity_report const again = p.set_capacity(tier_id{0}, 1_MiB);
  EXPECT_TRUE(again.reached) << again.why;
  EXPECT_LE(again.reserved_bytes, 1_MiB);
  expect_bytes(p, ts);
  EXPECT_TRUE(p.validate());
}

TEST(PoolControl, ShrinkOfTheLowestTierKeepsCopiesThatHaveNowhereToGo)
{
  auto be = make_sim();
  pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = 1_MiB, .chunk_bytes = 1_MiB});
  o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = 4_MiB, .chunk_bytes = 1_MiB});
  pool p(o);
  std::vector<tensor> ts;
  for (std::size_t i = 0; i < 12; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 0);
  }
  capacity_report const r = p.set_capacity(tier_id{1}, 1_MiB);
  EXPECT_FALSE(r.reached);
  EXPECT_NE(r.why.find("no room"), std::string::npos) << r.why;
  EXPECT_GE(r.capacity_bytes, 3_MiB);  // 12 x 256 KiB still live there
  EXPECT_TRUE(p.validate());
  for (std::size_t i = 0; i < ts.size(); ++i) { EXPECT_TRUE(check(p, ts[i], i, 0)) << i; }
}

TEST(PoolControl, SetCapacityMisuseIsALogicError)
{
  pool p(chunked(make_sim()));
  try {
    (void)p.set_capacity(tier_id{3}, 1_MiB);
    FAIL() << "no throw";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("tier 3 out of range (the pool has 3 tiers)"), std::string::npos) << e.what();
  }
  try {
    (void)p.set_capacity(tier_id{0}, 16);
    FAIL() << "no throw";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("below its alignment"), std::string::npos) << e.what();
  }
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 4_MiB);  // unchanged
  p.close();
  EXPECT_THROW((void)p.set_capacity(tier_id{0}, 1_MiB), logic_error);
  EXPECT_THROW((void)p.trim(), logic_error);
  EXPECT_THROW(p.reset_peak_stats(), logic_error);
}

TEST(PoolControl, ALowMemoryCallbackMayGrowTheTier)
{
  pool p(chunked(make_sim()));
  auto s = p.create_stream();
  int calls = 0;
  p.add_low_memory_callback([&](low_memory_event const& e) {
    ++calls;
    EXPECT_EQ(e.tier_name, "device");
    capacity_report const r = p.set_capacity(e.tier, e.capacity_bytes + 1_MiB);
    EXPECT_TRUE(r.reached);
  });
  std::vector<tensor> ts;
  std::vector<lease> held;
  for (int i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(1_MiB));
    held.push_back(p.acquire(ts.back(), access_mode::read, s));  // the device full of leases
  }
  tensor extra = p.allocate(1_MiB);
  fill(p, extra, 99, 0);
  lease l = p.acquire(extra, access_mode::read, s);  // no victim: the callback grows the tier
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 5_MiB);
  l.release();
  held.clear();
  p.synchronize(s);
  EXPECT_TRUE(check(p, extra, 99, 0));
  EXPECT_TRUE(p.validate());
}

// Another allocator takes device memory behind the pool's back (as PyTorch's caching
// allocator would): the pressure check gives chunks back.
TEST(PoolControl, DevicePressureShrinksTheDeviceTierByTheShortfall)
{
  auto be = make_sim(sim_clock_mode::wall, 8_MiB);
  pool_options o = chunked(be);
  o.tiers[0].capacity_bytes = 8_MiB;
  o.pressure.device_free_floor = 3_MiB;
  o.pressure.interval_ms = 0;  // by hand only
  pool p(o);
  auto s = p.create_stream();
  std::vector<tensor> ts = fill_device(p, 16, 256_KiB, s);  // 4 MiB on the device
  EXPECT_FALSE(p.check_memory_pressure().has_value());      // 4 MiB free: above the floor
  void* outside = nullptr;
  ASSERT_EQ(be->allocate(tier_kind::device, 2_MiB + 512_KiB, &outside), status::ok);  // 1.5 MiB free now
  std::optional<capacity_report> r = p.check_memory_pressure();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->tier, "device");
  EXPECT_TRUE(r->reached) << r->why;
  EXPECT_EQ(r->requested_bytes, 4_MiB - 1_MiB - 512_KiB);  // what it held, less the shortfall
  EXPECT_EQ(r->reserved_bytes, 2_MiB);                     // in whole chunks
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  ASSERT_EQ(be->device_memory_info(&free_bytes, &total), status::ok);
  EXPECT_GE(free_bytes, 3_MiB);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.pressure_shrinks, 1U);
  EXPECT_EQ(st.pressure_released_bytes, r->released_bytes);
  EXPECT_NE(p.summary().find("device pressure: 1 shrinks"), std::string::npos) << p.summary();
  EXPECT_FALSE(p.check_memory_pressure().has_value());  // above the floor now
  expect_bytes(p, ts);
  EXPECT_TRUE(p.validate());
  be->deallocate(tier_kind::device, outside, 2_MiB + 512_KiB);
}

TEST(PoolControl, ThePressureThreadChecksOnItsOwn)
{
  auto be = make_sim(sim_clock_mode::wall, 8_MiB);
  pool_options o = chunked(be);
  o.tiers[0].capacity_bytes = 8_MiB;
  o.pressure.device_free_floor = 4_MiB;
  o.pressure.interval_ms = 2;
  pool p(o);
  auto s = p.create_stream();
  std::vector<tensor> ts = fill_device(p, 24, 256_KiB, s);  // 6 MiB: 2 MiB free, below the floor
  auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (p.stats().pressure_shrinks == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GE(p.stats().pressure_shrinks, 1U);
  expect_bytes(p, ts);
  EXPECT_TRUE(p.validate());
  p.close();  // stops the thread first
}

TEST(PoolControl, StatsNameEachTiersPolicyAndThePredictorWithTheirParameters)
{
  pool_options o = chunked(make_sim());
  o.policy = "lru:promote_on_read=false";
  o.tiers[1].policy = "s3fifo";
  o.prefetch = "sequence";
  pool p(o);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[0].policy, "lru:refresh_interval=0,promote_on_read=false,promote_on_write=true");
  EXPECT_EQ(st.tiers[1].policy.rfind("s3fifo:small_ratio=", 0), 0U) << st.tiers[1].policy;
  EXPECT_NE(st.tiers[1].policy.find("ghost_ratio="), std::string::npos) << st.tiers[1].policy;
  EXPECT_EQ(st.tiers[2].policy.rfind("lru:", 0), 0U);
  EXPECT_EQ(st.prefetch.rfind("sequence:depth=", 0), 0U) << st.prefetch;
  std::string const text = p.summary();
  EXPECT_NE(text.find("policy of device: lru:refresh_interval=0,promote_on_read=false"), std::string::npos) << text;
  EXPECT_NE(text.find("prefetch: sequence:depth="), std::string::npos) << text;
  boost::json::object const j = boost::json::parse(p.summary_json()).as_object();
  EXPECT_EQ(j.at("prefetch").as_string(), st.prefetch);
  EXPECT_EQ(j.at("tiers").as_array().at(1).as_object().at("policy").as_string(), st.tiers[1].policy);

  pool_options plain = chunked(make_sim());
  plain.policy = "fifo";
  pool q(plain);
  EXPECT_EQ(q.stats().tiers[0].policy, "fifo");  // no parameters
  EXPECT_EQ(q.stats().prefetch, "none");
}

// Workers use the pool while another thread shrinks and grows the device tier: no byte
// is lost, every invariant holds (more threads than cores).
TEST(PoolControl, ShrinkAndGrowWhileOtherThreadsWork)
{
  pool p(chunked(make_sim()));
  constexpr int kWorkers = 6;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      auto s = p.create_stream();
      std::vector<tensor> mine;
      for (int i = 0; i < 4; ++i) {
        mine.push_back(p.allocate(128_KiB));
        fill(p, mine.back(), static_cast<std::uint64_t>(w * 16 + i), 0);
      }
      std::vector<std::uint32_t> version(4, 0);
      for (int round = 0; !stop.load() && round < 400; ++round) {
        auto const i = static_cast<std::size_t>(round % 4);
        auto const key = static_cast<std::uint64_t>(w * 16) + i;
        try {
          std::vector<std::unique_ptr<modify_job>> jobs;
          if (modify_on_stream(p, mine[i], s, key, version[i] + 1, jobs) == status::ok) { ++version[i]; }
          p.synchronize(s);
        } catch (out_of_memory const&) {  // a shrunk tier full of others' leases: allowed
        }
        p.synchronize(s);
        if (!check(p, mine[i], key, version[i])) { failures.fetch_add(1); }
      }
      p.destroy_stream(s);
    });
  }
  std::thread resizer([&] {
    for (int i = 0; i < 30; ++i) {
      (void)p.set_capacity(tier_id{0}, (i % 2 == 0) ? 1_MiB : 4_MiB);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    stop.store(true);
  });
  resizer.join();
  for (auto& t : workers) { t.join(); }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

namespace tierpool::test {
namespace {

// A write-through tensor's host copy is valid again once its write lease's copy is done:
// reading it on the host needs no copy from the device, and evicting it writes nothing.
TEST(PoolWriteThrough, AWriteLeaseIsWrittenBackAtRelease)
{
  pool p(chunked(make_sim()));
  auto s = p.create_stream();
  tensor w = p.allocate(256_KiB, {.name = "w", .write_through = true});
  tensor plain = p.allocate(256_KiB, {.name = "plain"});
  fill(p, w, 1, 0);
  fill(p, plain, 2, 0);
  std::vector<std::unique_ptr<modify_job>> jobs;
  ASSERT_EQ(modify_on_stream(p, w, s, 1, 1, jobs), status::ok);
  ASSERT_EQ(modify_on_stream(p, plain, s, 2, 1, jobs), status::ok);
  p.synchronize(s);
  pool_stats const after_write = p.stats();
  EXPECT_EQ(after_write.write_throughs, 1U);
  EXPECT_EQ(after_write.write_through_bytes, 256_KiB);
  EXPECT_EQ(after_write.write_through_misses, 0U);
  std::size_t const d2h = after_write.bytes_d2h;
  EXPECT_EQ(d2h, 256_KiB);  // the write-through copy, at release
  EXPECT_TRUE(check(p, w, 1, 1));
  EXPECT_EQ(p.stats().bytes_d2h, d2h);  // read on the host from the copy already there
  EXPECT_TRUE(check(p, plain, 2, 1));
  EXPECT_EQ(p.stats().bytes_d2h, d2h + 256_KiB);  // the plain one had to come back
  // Read leases write nothing back.
  { lease l = p.acquire(w, access_mode::read, s); }
  p.synchronize(s);
  EXPECT_EQ(p.stats().write_throughs, 1U);
  // Evicting it is clean: fill the device with others.
  std::uint64_t const clean_before = p.stats().tiers[0].evictions_clean;
  ASSERT_EQ(modify_on_stream(p, w, s, 1, 2, jobs), status::ok);  // written again, written back again
  p.synchronize(s);
  std::vector<tensor> others = fill_device(p, 16, 256_KiB, s);
  EXPECT_GT(p.stats().tiers[0].evictions_clean, clean_before);
  EXPECT_EQ(p.stats().write_throughs, 2U);
  EXPECT_TRUE(check(p, w, 1, 2));
  expect_bytes(p, others);
  EXPECT_TRUE(p.summary().find("write-through: 2 written back at release") != std::string::npos) << p.summary();
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_devices_tests.cpp — the pool on what its backend's device is and allows: two pools
// on two simulated devices in one process (pool_options::device), used at once from more
// threads than cores; the pool's workload with every host function on one executor
// (sim_options::serialize_host_functions); no managed tier without concurrent managed
// access; acquire, prefetch and release while a stream is being captured (the sim's
// simulated capture, Note [Acquire during stream capture] in tensor_ops.cpp).
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/pool.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

/// A pool that builds its own sim backend for `device` (through the backend factory, as
/// pool_options::device does), with small tiers so that the workload evicts.
pool_options device_pool(int device, sim_options sim = {})
{
  pool_options o;
  o.backend = backend_choice::sim;
  o.device = device;
  sim.memory = sim_memory_mode::real;
  sim.device_bytes = 64_MiB;
  o.sim = sim;
  o.read_environment = false;
  o.publish.enabled = false;
  o.tiers = {{.kind = tier_kind::device, .capacity_bytes = 1_MiB, .chunk_bytes = 1_MiB},
             {.kind = tier_kind::pinned_host, .capacity_bytes = 1_MiB, .chunk_bytes = 1_MiB},
             {.kind = tier_kind::host, .capacity_bytes = 16_MiB, .chunk_bytes = 4_MiB}};
  return o;
}

/// What one thread did to its pool, for the checks after the run.
struct thread_tally {
  int failures{0};   ///< bytes that were not what the thread last wrote
  int others{0};     ///< unexpected exceptions
  std::uint64_t leases{0};  ///< leases the thread took (acquire and acquire_host)
};

/// One thread's mixed work on `p`: its own stream and tensors, rewrites on the stream (a
/// host function as the kernel), reads checked on the stream and on the host, prefetches,
/// frees and new tensors; every byte is checked at the end. `key_base` keeps the patterns
/// of two pools' threads apart.
thread_tally run_workload(pool& p, std::uint64_t key_base, std::uint64_t seed, int ops)
{
  thread_tally tally;
  std::atomic<int> bad{0};
  std::mt19937_64 rng(seed);
  stream_handle const s = p.create_stream();
  std::vector<std::unique_ptr<modify_job>> jobs;
  std::vector<std::unique_ptr<check_job>> checks;
  constexpr std::size_t n = 6;
  std::vector<tensor> ts(n);
  std::vector<std::uint32_t> ver(n, 0);
  auto key = [&](std::size_t i) { return key_base + i; };
  auto host_check = [&](std::size_t i) {
    ++tally.leases;
    if (!check(p, ts[i], key(i), ver[i])) { ++tally.failures; }
  };
  for (std::size_t i = 0; i < n; ++i) {
    ts[i] = p.allocate(64_KiB * (1 + i % 3));
    fill(p, ts[i], key(i), ver[i] = 1);
    ++tally.leases;
  }
  for (int op = 0; op < ops; ++op) {
    std::size_t const i = rng() % n;
    try {
      switch (rng() % 5) {
        case 0:
          ++tally.leases;
          if (modify_on_stream(p, ts[i], s, key(i), ver[i] + 1, jobs) == status::ok) { ++ver[i]; }
          break;
        case 1: {
          lease l = p.acquire(ts[i], access_mode::read, s);
          ++tally.leases;
          auto job = std::make_unique<check_job>(check_job{l.data(), l.bytes(), key(i), ver[i], &bad});
          if (p.backend().launch_host_func(s, &check_job::run, job.get()) == status::ok) { checks.push_back(std::move(job)); }
          break;
        }
        case 2: host_check(i); break;
        case 3: p.prefetch(ts[i]); break;
        default:
          p.free(ts[i]);
          ts[i] = p.allocate(64_KiB * (1 + i % 3));
          fill(p, ts[i], key(i), ver[i] = 1);
          ++tally.leases;
      }
    } catch (out_of_memory const&) {
      // the thread's leases and the others' pinned the tiers for a moment: bytes unchanged
    } catch (std::exception const& e) {
      std::fprintf(stderr, "unexpected: %s\n", e.what());
      ++tally.others;
    }
    if (jobs.size() + checks.size() > 32) {
      p.synchronize(s);
      jobs.clear();
      checks.clear();
    }
  }
  for (std::size_t i = 0; i < n; ++i) { host_check(i); }
  p.synchronize(s);
  tally.failures += bad.load();
  p.destroy_stream(s);
  return tally;
}

/// Ends the process with a message when `done` is not set within `limit`: a test that
/// would hang (a deadlock) fails instead of running into CTest's timeout.
class watchdog {
 public:
  explicit watchdog(std::chrono::seconds limit, char const* what)
    : thread_([this, limit, what] {
        std::unique_lock lock(mtx_);
        if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
          std::fprintf(stderr, "watchdog: %s did not finish within %lld s (a deadlock?)\n", what,
                       static_cast<long long>(limit.count()));
          std::_Exit(3);
        }
      })
  {
  }
  watchdog(watchdog const&) = delete;
  watchdog& operator=(watchdog const&) = delete;
  ~watchdog()
  {
    {
      std::lock_guard lock(mtx_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mtx_;
  std::condition_variable cv_;
  bool done_{false};
  std::thread thread_;
};

// ---- several devices --------------------------------------------------------------------

// Two pools, each on its own simulated device (pool_options::device reaches the sim
// through the backend factory), used at once by three threads each (six threads: more than
// the cores CI has). Every byte is checked; each pool stays valid and counts only its own
// work; the two backends are distinct devices with their own memory.
TEST(PoolDevices, TwoPoolsOnTwoSimulatedDevicesWorkAtOnce)
{
  pool p0{device_pool(0)};
  pool p1{device_pool(1)};
  ASSERT_EQ(p0.backend().caps().device_ordinal, 0);
  ASSERT_EQ(p1.backend().caps().device_ordinal, 1);
  EXPECT_NE(&p0.backend(), &p1.backend());
  EXPECT_NE(p1.backend().caps().device_name.find("simulated device 1 ("), std::string::npos)
    << p1.backend().caps().device_name;
  constexpr int kThreadsPerPool = 3;
  constexpr int kOps = 300;
  std::vector<thread_tally> tallies(2 * kThreadsPerPool);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2 * kThreadsPerPool; ++t) {
    threads.emplace_back([&, t] {
      pool& p = t % 2 == 0 ? p0 : p1;
      tallies[static_cast<std::size_t>(t)] =
        run_workload(p, static_cast<std::uint64_t>(t) * 1000, static_cast<std::uint64_t>(t) + 1, kOps);
    });
  }
  for (auto& th : threads) { th.join(); }
  std::uint64_t leases[2] = {0, 0};
  for (std::size_t t = 0; t < tallies.size(); ++t) {
    EXPECT_EQ(tallies[t].failures, 0) << "thread " << t;
    EXPECT_EQ(tallies[t].others, 0) << "thread " << t;
    leases[t % 2] += tallies[t].leases;
  }
  EXPECT_TRUE(p0.validate());
  EXPECT_TRUE(p1.validate());
  pool_stats const s0 = p0.stats();
  pool_stats const s1 = p1.stats();
  EXPECT_EQ(s0.acquires, leases[0]) << "pool 0 counts its own leases only";
  EXPECT_EQ(s1.acquires, leases[1]) << "pool 1 counts its own leases only";
  EXPECT_GT(s0.bytes_h2d, 0U);
  EXPECT_GT(s1.bytes_h2d, 0U);
  EXPECT_EQ(s0.tensors, 0U) << "every thread freed its tensors";
  EXPECT_EQ(s1.tensors, 0U);
  auto& b0 = dynamic_cast<sim_backend&>(p0.backend());
  auto& b1 = dynamic_cast<sim_backend&>(p1.backend());
  EXPECT_GT(b0.allocated_bytes(tier_kind::device), 0U);
  EXPECT_GT(b1.allocated_bytes(tier_kind::device), 0U);
  EXPECT_LE(b0.allocated_bytes(tier_kind::device), 1_MiB) << "each device holds only its own pool's tier";
  EXPECT_LE(b1.allocated_bytes(tier_kind::device), 1_MiB);
}

// A stream of one device is no stream of the other pool: acquire refuses it as unknown,
// and wrapping it fails with the backend's reason, which names the device it belongs to.
TEST(PoolDevices, AStreamOfAnotherDeviceIsRefused)
{
  pool p0{device_pool(0)};
  pool p1{device_pool(1)};
  stream_handle const s0 = p0.create_stream();
  tensor t = p1.allocate(4096);
  EXPECT_THROW((void)p1.acquire(t, access_mode::read, s0), logic_error);
  try {
    (void)p1.wrap_native_stream(reinterpret_cast<void*>(s0.value));
    ADD_FAILURE() << "a stream of simulated device 0 was wrapped by the device-1 pool";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("a stream of simulated device 0 (this backend is simulated device 1)"),
              std::string::npos)
      << e.what();
  }
  pool_options bad = device_pool(0);
  bad.device = -1;
  EXPECT_THROW(pool{bad}, logic_error);
  p0.destroy_stream(s0);
}

// ---- host functions on one executor -------------------------------------------------------

// The pool's normal workload (three threads with a stream each, copy-ins and write-backs
// on the copy streams, prefetches, evictions, host functions as kernels) with every host
// function of every stream run one at a time on one executor, as a CUDA driver may: no
// host function of the pool waits for another stream, so nothing hangs. Both clocks.
TEST(PoolSerializedHostFunctions, TheWorkloadRunsWithOneHostFunctionAtATime)
{
  for (sim_clock_mode clock : {sim_clock_mode::wall, sim_clock_mode::virtual_clock}) {
    SCOPED_TRACE(clock == sim_clock_mode::wall ? "wall" : "virtual");
    watchdog const dog(std::chrono::seconds(120), "the serialized-host-function workload");
    sim_options so;
    so.clock = clock;
    so.serialize_host_functions = true;
    pool p{device_pool(0, so)};
    std::vector<thread_tally> tallies(3);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        tallies[static_cast<std::size_t>(t)] =
          run_workload(p, static_cast<std::uint64_t>(t) * 1000, static_cast<std::uint64_t>(t) + 11, 200);
      });
    }
    for (auto& th : threads) { th.join(); }
    for (thread_tally const& tt : tallies) {
      EXPECT_EQ(tt.failures, 0);
      EXPECT_EQ(tt.others, 0);
    }
    EXPECT_TRUE(p.validate());
    pool_stats const st = p.stats();
    std::uint64_t evictions = 0;
    for (auto const& tier : st.tiers) { evictions += tier.evictions; }
    EXPECT_GT(evictions, 0U) << "the workload evicts";
    EXPECT_GT(st.misses, 0U);
  }
}

// ---- no concurrent managed access -----------------------------------------------------

TEST(PoolManagedAccess, WithoutConcurrentManagedAccessAManagedTierIsRefused)
{
  sim_options so;
  so.concurrent_managed_access = false;
  pool_options o = device_pool(0, so);
  o.tiers.insert(o.tiers.begin() + 1, tier_options{.kind = tier_kind::managed, .capacity_bytes = 1_MiB});
  try {
    pool const p{o};
    ADD_FAILURE() << "a managed tier was accepted";
  } catch (logic_error const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("pool_options::tiers[1] (managed)"), std::string::npos) << what;
    EXPECT_NE(what.find("has no concurrent managed access"), std::string::npos) << what;
    EXPECT_NE(what.find("use a pinned_host tier instead"), std::string::npos) << what;
  }
  pool p{device_pool(0, so)};  // the same device without a managed tier is fine
  tensor t = p.allocate(4096);
  fill(p, t, 1, 1);
  EXPECT_TRUE(check(p, t, 1, 1));
}

// ---- stream capture ---------------------------------------------------------------------

/// A pool on a sim backend the test can capture streams of.
struct capture_fixture {
  std::shared_ptr<sim_backend> be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(64_KiB, {.name = "w"});

  capture_fixture() { fill(p, t, 7, 1); }

  /// Make `t` resident for `s`: acquire it there, then synchronize.
  void make_resident()
  {
    { lease l = p.acquire(t, access_mode::read, s); }
    p.synchronize(s);
  }
  /// End the capture of `s` and expect that the pool made no forbidden call during it.
  sim_graph end_capture_cleanly()
  {
    sim_graph g{};
    EXPECT_EQ(be->end_capture(s, &g), status::ok) << be->last_error();
    EXPECT_EQ(be->capture_violations(), 0U);
    return g;
  }
};

// A write-through tensor's write lease released during a capture writes nothing back (no
// copy may be ordered after captured work): no forbidden call, counted as a miss.
TEST(PoolCapture, AWriteThroughReleaseDuringCaptureWritesNothingBack)
{
  capture_fixture f;
  tensor w = f.p.allocate(64_KiB, {.name = "wt", .write_through = true});
  fill(f.p, w, 9, 1);
  { lease l = f.p.acquire(w, access_mode::read, f.s); }
  f.p.synchronize(f.s);
  ASSERT_EQ(f.be->begin_capture(f.s), status::ok);
  { lease l = f.p.acquire(w, access_mode::read_write, f.s); }
  sim_graph const g = f.end_capture_cleanly();
  pool_stats const st = f.p.stats();
  EXPECT_EQ(st.write_throughs, 0U);
  EXPECT_EQ(st.write_through_misses, 1U);
  f.p.synchronize(f.s);
  EXPECT_TRUE(check(f.p, w, 9, 1));  // the device copy is the newest and comes back
  EXPECT_TRUE(f.p.validate());
  f.be->destroy_graph(g);
}

// A tensor made resident on the stream before capture is acquired during it with no
// forbidden call, for reading and for writing; its lease's pointer is what the graph uses,
// and each launch runs the captured kernel on it.
TEST(PoolCapture, AResidentTensorIsAcquiredDuringCapture)
{
  capture_fixture f;
  f.make_resident();
  pool_stats const before = f.p.stats();
  ASSERT_EQ(f.be->begin_capture(f.s), status::ok);
  std::vector<std::unique_ptr<modify_job>> jobs;
  lease kept = f.p.acquire(f.t, access_mode::read_write, f.s);  // kept until the last launch
  auto job = std::make_unique<modify_job>(modify_job{kept.data(), kept.bytes(), 7, 2});
  ASSERT_EQ(f.be->launch_host_func(f.s, &modify_job::run, job.get()), status::ok);  // captured
  { lease again = f.p.acquire(f.t, access_mode::read, f.s); }  // a read lease released in the capture
  sim_graph const g = f.end_capture_cleanly();
  EXPECT_EQ(f.p.stats().hits, before.hits + 2);
  EXPECT_EQ(f.p.stats().misses, before.misses);
  f.p.synchronize(f.s);
  ASSERT_EQ(f.be->launch_graph(g, f.s), status::ok);
  ASSERT_EQ(f.be->launch_graph(g, f.s), status::ok);
  f.p.synchronize(f.s);
  kept.release();
  EXPECT_TRUE(check(f.p, f.t, 7, 2)) << "the graph's kernel wrote through the leased pointer";
  EXPECT_TRUE(f.p.validate());
  f.be->destroy_graph(g);
}

// An acquire that would need a copy, an event query or a wait on another stream throws
// logic_error during the capture, before any forbidden call (the capture stays valid), and
// works again once the capture has ended.
TEST(PoolCapture, AnAcquireThatWouldWaitThrowsAndLeavesTheCaptureValid)
{
  capture_fixture f;
  auto expect_refused = [&](access_mode mode, char const* why) {
    SCOPED_TRACE(why);
    ASSERT_EQ(f.be->begin_capture(f.s), status::ok);
    try {
      lease const l = f.p.acquire(f.t, mode, f.s);
      ADD_FAILURE() << "acquired during capture";
    } catch (logic_error const& e) {
      std::string const what = e.what();
      EXPECT_NE(what.find("pool::acquire: stream " + std::to_string(f.s.value) + " is being captured"),
                std::string::npos) << what;
      EXPECT_NE(what.find("tensor " + std::to_string(static_cast<std::uint64_t>(f.t.id())) + " 'w' " + why),
                std::string::npos) << what;
      EXPECT_NE(what.find("make the tensor resident before capture"), std::string::npos) << what;
    }
    (void)f.end_capture_cleanly();
  };
  // Only on the host: a copy-in.
  expect_refused(access_mode::read, "is not resident in the device tier");
  // Prefetched: resident, but its copy-in is one the stream never waited for.
  f.p.prefetch(f.t);
  expect_refused(access_mode::read, "has a copy-in this stream never waited for");
  // Used by another stream: a write must wait for it.
  stream_handle const other = f.p.create_stream();
  { lease l = f.p.acquire(f.t, access_mode::read, other); }
  f.p.synchronize(other);
  { lease l = f.p.acquire(f.t, access_mode::read, f.s); }
  f.p.synchronize(f.s);
  expect_refused(access_mode::read_write, "was used by another stream");
  // ... while a read needs nothing.
  ASSERT_EQ(f.be->begin_capture(f.s), status::ok);
  { lease l = f.p.acquire(f.t, access_mode::read, f.s); }
  (void)f.end_capture_cleanly();
  // After the capture the write is an ordinary acquire.
  { lease l = f.p.acquire(f.t, access_mode::read_write, f.s); }
  f.p.synchronize(f.s);
  EXPECT_TRUE(check(f.p, f.t, 7, 1));
  EXPECT_TRUE(f.p.validate());
}

// pool::prefetch while a capture is underway is a no-op hint; so are the predictor's
// prefetches after an acquire on the capturing stream. Neither makes a forbidden call.
TEST(PoolCapture, PrefetchesDuringCaptureAreNoOps)
{
  auto be = make_sim();
  pool_options o = small_tiers(be);
  o.prefetch = "sequence";
  pool p{o};
  stream_handle const s = p.create_stream();
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(64_KiB));
    fill(p, ts.back(), i, 1);
  }
  // Teach the predictor the order t0, t1, t2, t3 and make them resident for s.
  for (int pass = 0; pass < 3; ++pass) {
    for (tensor const& t : ts) { lease l = p.acquire(t, access_mode::read, s); }
    p.synchronize(s);
  }
  { lease l = p.acquire(ts[0], access_mode::read, s); }
  p.synchronize(s);
  p.demote(ts[2], tier_id{1});  // off the device: a prefetch would copy them
  p.demote(ts[3], tier_id{1});
  std::uint64_t const prefetches = p.stats().prefetches;
  ASSERT_EQ(be->begin_capture(s), status::ok);
  p.prefetch(ts[3]);
  { lease l = p.acquire(ts[1], access_mode::read, s); }  // the predictor would prefetch t2 next
  sim_graph g{};
  EXPECT_EQ(be->end_capture(s, &g), status::ok) << be->last_error();
  EXPECT_EQ(be->capture_violations(), 0U);
  EXPECT_EQ(p.stats().prefetches, prefetches) << "no prefetch during the capture";
  be->destroy_graph(g);
  p.prefetch(ts[3]);  // after it: an ordinary prefetch
  EXPECT_GT(p.stats().prefetches, prefetches);
  p.synchronize(s);
  for (std::uint64_t i = 0; i < 4; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)); }
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

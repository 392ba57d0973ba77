// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_tests.cpp — the tiered pool on the sim backend (real memory): construction and
// defaults, placement, eviction (clean and dirty), write leases, stream ordering,
// prefetch, demote, statistics, out-of-memory diagnoses, and a multi-threaded stress
// test. Every tensor's bytes are checked against a pattern derived from (id, version)
// after each cycle, and validate() runs after each step.
#include "support/scoped_env.hpp"
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/policy.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/topology.hpp>
#include <tierpool/trace.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tierpool::test {
namespace {

TEST(Pool, DefaultTiersFromBackend)
{
  auto be = make_sim(sim_clock_mode::wall, 8_MiB);
  pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  pool p{o};
  ASSERT_EQ(p.tier_count(), 3U);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[0].name, "device");
  EXPECT_EQ(st.tiers[0].capacity_bytes, 8_MiB);
  EXPECT_EQ(st.tiers[1].kind, tier_kind::pinned_host);
  EXPECT_EQ(st.tiers[1].capacity_bytes, 16_MiB);
  EXPECT_EQ(st.tiers[2].kind, tier_kind::host);
  EXPECT_GT(st.tiers[2].capacity_bytes, 0U);
  EXPECT_EQ(p.backend_reason(), "given by pool_options::backend_object");
  EXPECT_TRUE(p.validate());
}

TEST(Pool, EnvironmentOverridesDeviceBytesAndPolicy)
{
  ::setenv("TIERPOOL_DEVICE_BYTES", "2MiB", 1);
  ::setenv("TIERPOOL_POLICY", "lru", 1);
  pool_options o;
  o.backend_object = make_sim();
  pool p{o};
  ::unsetenv("TIERPOOL_DEVICE_BYTES");
  ::unsetenv("TIERPOOL_POLICY");
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 2_MiB);
}

TEST(Pool, EnvironmentDeviceBytesSizesTheSimulatedDeviceThePoolBuilds)
{
  ::setenv("TIERPOOL_DEVICE_BYTES", "512MiB", 1);
  pool_options o;
  o.backend = backend_choice::sim;
  o.notice = fallback_notice::silent;
  pool p{o};
  ::unsetenv("TIERPOOL_DEVICE_BYTES");
  EXPECT_EQ(p.backend().caps().device_bytes, 512_MiB);
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 512_MiB);
}

TEST(Pool, DeviceTierIsClampedToTheDevice)
{
  pool_options o = small_tiers(make_sim(sim_clock_mode::wall, 4_MiB), 1_MiB);
  o.read_environment = false;
  o.tiers[0].capacity_bytes = 1_GiB;  // larger than the 4 MiB device
  pool p{o};
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 4_MiB);
  EXPECT_TRUE(p.validate());
}

TEST(Pool, EnvironmentSelectsSimBackend)
{
  ::setenv("TIERPOOL_BACKEND", "sim", 1);
  pool_options o;
  o.sim.device_bytes = 4_MiB;
  pool p{o};
  ::unsetenv("TIERPOOL_BACKEND");
  EXPECT_EQ(p.backend().caps().name, "sim");
  EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 4_MiB);
}

// A host function that holds its stream until released, so that work queued behind it
// stays pending while the test checks whether a pool call waited for it. The long
// deadline only keeps a broken pool from hanging the test; it is not a timing assertion.
struct stream_gate {
  std::atomic<bool> open{false};
  static void run(void* self)
  {
    auto* g = static_cast<stream_gate*>(self);
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!g->open.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

// Holds `s` with a gate and records an event behind it. While the gate is closed the event
// is not_ready; a pool call that waited on the host for `s` could only have returned
// after the gate gave up, with the event complete. So "still not_ready after the call"
// proves deterministically that the call did not wait.
struct held_stream {
  tierpool::backend& be;
  stream_gate gate;
  event_handle behind{};
  held_stream(tierpool::backend& b, stream_handle s) : be(b)
  {
    EXPECT_EQ(be.launch_host_func(s, &stream_gate::run, &gate), status::ok);
    EXPECT_EQ(be.create_event(&behind), status::ok);
    EXPECT_EQ(be.record_event(behind, s), status::ok);
  }
  [[nodiscard]] bool still_held() { return be.query_event(behind) == status::not_ready; }
  void open() { gate.open = true; }
  held_stream(held_stream const&) = delete;
  held_stream& operator=(held_stream const&) = delete;
  ~held_stream()
  {
    gate.open = true;
    (void)be.synchronize_event(behind);
    be.destroy_event(behind);
  }
};

// device 1 MiB holding t[0..3] (used on `s`), t[4..7] in pinned_host; all filled.
struct four_resident {
  std::shared_ptr<sim_backend> be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  std::vector<tensor> t;
  four_resident()
  {
    for (std::uint64_t i = 0; i < 8; ++i) { t.push_back(p.allocate(256_KiB, {.name = "t" + std::to_string(i)})); }
    for (std::uint64_t i = 0; i < 8; ++i) { fill(p, t[i], i, 1); }
    for (std::size_t i = 0; i < 4; ++i) { lease l = p.acquire(t[i], access_mode::read, s); }
    p.synchronize(s);
  }
};

// pool_stats::acquires counts leases taken, as its comment says; a failed acquire counts
// in acquire_failures (before, every failed acquire was one more "lease taken"). A request
// blocked by this thread's own leases fails at once with cause `pinned` and its figures.
TEST(PoolStats, AcquiresCountLeasesTakenAndFailuresApart)
{
  four_resident f;
  auto& p = f.p;
  pool_stats const before = p.stats();
  EXPECT_EQ(before.acquires, before.hits + before.misses);
  EXPECT_EQ(before.acquire_failures, 0U);
  std::vector<lease> pins;
  for (std::size_t i = 0; i < 4; ++i) { pins.push_back(p.acquire(f.t[i], access_mode::read, f.s)); }  // device full
  try {
    lease l = p.acquire(f.t[4], access_mode::read, f.s);
    ADD_FAILURE() << "acquired beyond a device tier pinned full";
  } catch (out_of_memory const& e) {
    EXPECT_EQ(e.cause(), oom_cause::pinned) << e.what();
    EXPECT_EQ(e.figures().pinned_bytes, 1_MiB);
    EXPECT_EQ(e.figures().capacity_bytes, 1_MiB);
    EXPECT_EQ(e.figures().attempts, 0U) << "this thread's own leases: no busy retries";
    EXPECT_EQ(e.tier(), tier_id{0});
    EXPECT_EQ(e.requested(), 256_KiB);
  }
  pool_stats const after = p.stats();
  EXPECT_EQ(after.acquires, before.acquires + 4) << "a failed acquire counted as a lease taken";
  EXPECT_EQ(after.acquire_failures, 1U);
  EXPECT_EQ(after.misses, before.misses + 1);
  EXPECT_EQ(after.busy_retries, 0U);
  pins.clear();
  EXPECT_TRUE(p.validate());
}

TEST(PoolPrefetch, NeverBlocksTheHostAndQueuesWhenRoomIsInFlight)
{
  four_resident f;
  auto& p = f.p;
  held_stream held(p.backend(), f.s);
  // Every device copy was last used on f.s, now held by the gate: evicting one frees its
  // block only after the gate. prefetch must neither wait for that nor fail loudly.
  p.prefetch(f.t[4]);
  EXPECT_TRUE(held.still_held()) << "prefetch waited on the host for the held stream";
  pool_stats st = p.stats();
  EXPECT_EQ(st.prefetch_queued, 1U);
  EXPECT_EQ(st.prefetches, 0U);
  p.prefetch(f.t[4]);  // already queued: no second request
  EXPECT_EQ(p.stats().prefetch_queued, 1U);
  EXPECT_TRUE(held.still_held());
  held.open();
  p.synchronize(f.s);
  // A later pool call serves the queue once the room has landed.
  for (int i = 0; i < 200 && p.stats().prefetches == 0; ++i) {
    p.prefetch(f.t[5]);  // serves t[4] first (older request)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  st = p.stats();
  EXPECT_GE(st.prefetches, 1U);
  std::uint64_t const misses = st.misses;
  {
    lease l = p.acquire(f.t[4], access_mode::read, f.s);
  }
  EXPECT_EQ(p.stats().misses, misses) << "the served prefetch made t4 resident";
  p.synchronize(f.s);
  for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, f.t[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}

// A prefetch of a tensor under a live write lease would copy half-written bytes and leave
// that copy valid: the prefetch is dropped instead (a race once seen under TSan, when a
// queued prefetch was served by another thread during a host write).
TEST(PoolPrefetch, SkipsATensorWithALiveWriteLease)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(256_KiB);
  fill(p, t, 7, 1);  // host copy valid, device copy stale
  {
    lease h = p.acquire_host(t, access_mode::write_discard);
    p.prefetch(t);  // must not snapshot the bytes being written
    write_pattern(h.data(), h.bytes(), 7, 2);
  }
  EXPECT_EQ(p.stats().prefetch_dropped, 1U);
  EXPECT_EQ(p.stats().prefetches, 0U);
  {
    lease d = p.acquire(t, access_mode::read, s);
    p.synchronize(s);
    EXPECT_TRUE(has_pattern(d.data(), d.bytes(), 7, 2)) << "the device copy holds the bytes before the write";
  }
  {  // a device write lease too: the copy would run before the user's kernels
    lease d = p.acquire(t, access_mode::read_write, s);
    p.prefetch(t, tier_id{1});
  }
  EXPECT_EQ(p.stats().prefetch_dropped, 2U);
  p.synchronize(s);
  EXPECT_TRUE(check(p, t, 7, 2));
  EXPECT_TRUE(p.validate());
}

// Regression: pool_stats::predicted_prefetches counted predictor requests that were then
// dropped (here: a live write lease on the predicted tensor). It counts only requests that
// issued a copy or were queued; the dropped one counts in prefetch_dropped alone.
TEST(PoolPrefetch, PredictedPrefetchesCountOnlyRequestsIssuedOrQueued)
{
  auto be = make_sim();
  pool_options o = small_tiers(be);
  o.prefetch = "sequence:depth=1";
  pool p{o};
  stream_handle s = p.create_stream();
  tensor a = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  tensor b = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  fill(p, a, 1, 1);
  fill(p, b, 2, 1);
  auto use = [&](tensor const& t) {
    lease l = p.acquire(t, access_mode::read, s);
    p.synchronize(s);
  };
  use(a);
  use(b);  // learned: after a comes b
  p.demote(b, tier_id{1});
  {
    lease w = p.acquire_host(b, access_mode::write_discard);
    write_pattern(w.data(), w.bytes(), 2, 2);
    use(a);  // predicts b, which has a live write lease: dropped
  }
  pool_stats st = p.stats();
  EXPECT_EQ(st.predicted_prefetches, 0U);
  EXPECT_EQ(st.prefetch_dropped, 1U);
  EXPECT_EQ(st.prefetches, 0U);
  use(b);  // predicts a, resident: nothing requested
  p.demote(b, tier_id{1});
  use(a);  // predicts b: copied in
  st = p.stats();
  EXPECT_EQ(st.predicted_prefetches, 1U);
  EXPECT_EQ(st.prefetches, 1U);
  EXPECT_EQ(st.prefetch_dropped, 1U);
  p.synchronize(s);
  EXPECT_TRUE(check(p, b, 2, 2));
  EXPECT_TRUE(p.validate());
}

TEST(PoolPrefetch, QueuedRequestIsDroppedWhenFreedOrResident)
{
  four_resident f;
  auto& p = f.p;
  stream_gate gate;
  ASSERT_EQ(p.backend().launch_host_func(f.s, &stream_gate::run, &gate), status::ok);
  p.prefetch(f.t[4]);
  p.prefetch(f.t[5]);
  EXPECT_EQ(p.stats().prefetch_queued, 2U);
  p.free(f.t[4]);
  gate.open = true;
  p.synchronize(f.s);
  {
    lease l = p.acquire(f.t[5], access_mode::read, f.s);  // made resident by the acquire (or the queue)
  }
  p.synchronize(f.s);
  p.prefetch(f.t[6]);  // serves (drops) whatever is left
  pool_stats const st = p.stats();
  EXPECT_GE(st.prefetch_dropped, 1U);  // t4 was freed
  EXPECT_LE(st.prefetch_dropped, st.prefetch_queued);
  EXPECT_TRUE(p.validate());
}

// A kernel still running after its lease ended: a host function that, once its gate
// opens, reads `src` and notes whether it still holds pattern (key, version).
struct gated_read {
  stream_gate gate;
  void const* src{nullptr};
  std::size_t bytes{0};
  std::uint64_t key{0};
  std::uint32_t version{0};
  std::atomic<int> saw{-1};  // -1: not run; 1: the pattern; 0: other bytes
  static void run(void* self)
  {
    auto* r = static_cast<gated_read*>(self);
    stream_gate::run(&r->gate);
    r->saw = has_pattern(r->src, r->bytes, r->key, r->version) ? 1 : 0;
  }
};

// destroy_stream while work on the stream is still queued: the pool cannot record on the
// stream afterwards, so it records a last mark first, and the block of a tensor read there
// is not reused before that work ends. (Before, a later eviction dropped the clean copy
// and a prefetch copied another tensor into its block at once, under the running reader:
// the backend refused the destroyed stream, and the pool took its failed host wait for a
// wait.) The same for a wrapped stream, which the pool forgets.
TEST(PoolStreams, BlockReadOnADestroyedStreamIsNotReusedBeforeItsLastWork)
{
  for (bool const wrapped : {false, true}) {
    SCOPED_TRACE(wrapped ? "wrapped stream" : "the pool's own stream");
    four_resident f;
    auto& p = f.p;
    std::vector<lease> pinned;  // t1..t3: t0 is the only possible victim
    for (std::size_t i = 1; i < 4; ++i) { pinned.push_back(p.acquire(f.t[i], access_mode::read, f.s)); }
    stream_handle raw{};
    stream_handle s2{};
    if (wrapped) {
      ASSERT_EQ(f.be->create_stream(&raw), status::ok);
      s2 = p.wrap_native_stream(reinterpret_cast<void*>(raw.value));
    } else {
      s2 = p.create_stream();
    }
    gated_read r;
    {
      lease l = p.acquire(f.t[0], access_mode::read, s2);
      r.src = l.data();
      r.bytes = l.bytes();
      r.key = 0;
      r.version = 1;
      ASSERT_EQ(p.backend().launch_host_func(s2, &gated_read::run, &r), status::ok);
    }
    p.destroy_stream(s2);
    p.prefetch(f.t[4]);  // never blocks: evicts t0; t4 may take its block only after the reader
    EXPECT_EQ(r.saw.load(), -1) << "a pool call waited on the host for the destroyed stream";
    pool_stats const st = p.stats();
    EXPECT_EQ(st.prefetches, 0U) << "t4 was copied into t0's block while the reader still held it";
    EXPECT_EQ(st.prefetch_queued, 1U);
    EXPECT_EQ(st.tiers[0].in_flight_bytes, 256_KiB) << "t0's block waits for the reader";
    r.gate.open = true;
    if (wrapped) {
      EXPECT_EQ(f.be->synchronize_stream(raw), status::ok);
      f.be->destroy_stream(raw);
    }
    pinned.clear();
    p.synchronize(f.s);
    for (int i = 0; i < 6000 && r.saw.load() < 0; ++i) { std::this_thread::sleep_for(std::chrono::milliseconds(10)); }
    EXPECT_EQ(r.saw.load(), 1) << "t0's block was reused under the reader still running on the destroyed stream";
    for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, f.t[i], i, 1)) << i; }
    EXPECT_TRUE(p.validate());
  }
}

TEST(PoolStall, EvictingACopyWhoseLastUseIsDoneDoesNotWaitForLaterWork)
{
  four_resident f;
  auto& p = f.p;
  stream_handle s2 = p.create_stream();
  // One eviction now records a mark on f.s after the uses of t0..t3.
  {
    lease l = p.acquire(f.t[4], access_mode::read, f.s);
  }
  p.synchronize(f.s);
  held_stream held(p.backend(), f.s);
  // t1 is the next victim; its last use on f.s completed long before the gate.
  {
    lease l = p.acquire(f.t[5], access_mode::read, s2);
  }
  EXPECT_TRUE(held.still_held()) << "acquire waited for unrelated work queued after the victim's last use";
  held.open();
  p.synchronize(f.s);
  p.synchronize(s2);
  for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, f.t[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}

TEST(PoolStats, H2dD2hCountOnlyTheDeviceBoundaryUpDownCountAll)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 1_MiB, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> t;
  for (std::uint64_t i = 0; i < 4; ++i) {
    t.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, t.back(), i, 1);
  }
  pool_stats st = p.stats();
  EXPECT_EQ(st.bytes_down, 0U);
  // A fifth tensor in pinned_host evicts a dirty one there: written back to host.
  tensor e = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  st = p.stats();
  EXPECT_EQ(st.copies_down, 1U);
  EXPECT_EQ(st.bytes_down, 256_KiB);
  EXPECT_EQ(st.copies_d2h, 0U) << "pinned_host -> host is not device -> host";
  EXPECT_EQ(st.bytes_d2h, 0U);
  // Copy-in to the device from pinned_host: h2d and up.
  { lease l = p.acquire(t[3], access_mode::read, s); }
  st = p.stats();
  EXPECT_EQ(st.copies_h2d, 1U);
  EXPECT_EQ(st.bytes_h2d, 256_KiB);
  EXPECT_EQ(st.copies_up, 1U);
  EXPECT_EQ(st.bytes_up, 256_KiB);
  p.synchronize(s);
  EXPECT_NE(p.summary().find("d2h 0 (0 B)"), std::string::npos) << p.summary();
  EXPECT_NE(p.summary_json().find("\"bytes_down\":262144"), std::string::npos);
  EXPECT_TRUE(p.validate());
}

TEST(Pool, EnvironmentWinsOverExplicitOptions)
{
  // TIERPOOL_DEVICE_BYTES replaces an explicit device capacity.
  ::setenv("TIERPOOL_DEVICE_BYTES", "2MiB", 1);
  {
    pool_options o = small_tiers(make_sim(), 1_MiB);
    o.read_environment = true;
    pool p{o};
    EXPECT_EQ(p.stats().tiers[0].capacity_bytes, 2_MiB);
    o.read_environment = false;
    pool q{o};
    EXPECT_EQ(q.stats().tiers[0].capacity_bytes, 1_MiB);
  }
  ::unsetenv("TIERPOOL_DEVICE_BYTES");
  // TIERPOOL_POLICY replaces pool_options::policy and every tier's own policy.
  ::setenv("TIERPOOL_POLICY", "no-such-policy", 1);
  {
    pool_options o = small_tiers(make_sim());
    for (auto& to : o.tiers) { to.policy = "lru"; }
    o.policy = "lru";
    o.read_environment = true;
    try {
      pool p{o};
      ADD_FAILURE() << "TIERPOOL_POLICY was not applied";
    } catch (logic_error const& e) {
      EXPECT_NE(std::string(e.what()).find("TIERPOOL_POLICY"), std::string::npos) << e.what();
    }
    o.read_environment = false;
    EXPECT_NO_THROW(pool{o});
  }
  ::unsetenv("TIERPOOL_POLICY");
  // TIERPOOL_BACKEND replaces an explicit pool_options::backend.
  ::setenv("TIERPOOL_BACKEND", "sim", 1);
  {
    pool_options o;
    o.backend = backend_choice::cuda;
    o.sim.device_bytes = 4_MiB;
    o.notice = fallback_notice::silent;
    pool p{o};
    EXPECT_EQ(p.backend().caps().name, "sim");
  }
  ::unsetenv("TIERPOOL_BACKEND");
}

TEST(Pool, AllocateFillReadBack)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 6; ++i) {
    ts.push_back(p.allocate(256_KiB, {.name = "t" + std::to_string(i)}));
    fill(p, ts.back(), i, 1);
    ASSERT_TRUE(p.validate());
  }
  for (std::uint64_t i = 0; i < 6; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_EQ(p.stats().tensors, 6U);
  EXPECT_EQ(p.stats().tensor_bytes, 6 * 256_KiB);
  ts.clear();
  EXPECT_EQ(p.stats().tensors, 0U);
  EXPECT_TRUE(p.validate());
}

TEST(Pool, EvictionCyclesKeepEveryByte)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  std::vector<std::unique_ptr<modify_job>> jobs;
  constexpr std::uint64_t n = 16;  // 16 x 256 KiB = 4 MiB: device 1 MiB + pinned 2 MiB cannot hold them
  std::vector<tensor> ts;
  std::vector<std::uint32_t> ver(n, 1);
  for (std::uint64_t i = 0; i < n; ++i) {
    ts.push_back(p.allocate(256_KiB));
    fill(p, ts.back(), i, 1);
  }
  for (int round = 0; round < 4; ++round) {
    for (std::uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(modify_on_stream(p, ts[i], s, i, ++ver[i], jobs), status::ok);
      ASSERT_TRUE(p.validate());
    }
    for (std::uint64_t i = 0; i < n; ++i) { ASSERT_TRUE(check(p, ts[i], i, ver[i])) << "round " << round << " t" << i; }
    // prefetch, demote, free + reallocate some
    p.prefetch(ts[static_cast<std::size_t>(round)]);
    p.demote(ts[static_cast<std::size_t>(round + 1)], tier_id{2});
    ASSERT_TRUE(p.validate());
    auto const k = static_cast<std::size_t>(round + 2);
    p.free(ts[k]);
    EXPECT_FALSE(ts[k].valid());
    ts[k] = p.allocate(256_KiB);
    fill(p, ts[k], k, ver[k] = 100);
    ASSERT_TRUE(p.validate());
    for (std::uint64_t i = 0; i < n; ++i) { ASSERT_TRUE(check(p, ts[i], i, ver[i])) << "round " << round << " t" << i; }
  }
  pool_stats const st = p.stats();
  EXPECT_GT(st.tiers[0].evictions, 0U);
  EXPECT_GT(st.misses, 0U);
  p.synchronize(s);
}

TEST(Pool, CleanEvictionWritesNothingDirtyWritesBack)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 5; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 1);
  }
  // Bring 4 in for reading: the device is full of clean copies.
  for (std::uint64_t i = 0; i < 4; ++i) { (void)p.acquire(ts[i], access_mode::read, s); }
  std::size_t const d2h0 = p.stats().bytes_d2h;
  (void)p.acquire(ts[4], access_mode::read, s);  // evicts one clean copy
  pool_stats st = p.stats();
  EXPECT_EQ(st.bytes_d2h, d2h0);
  EXPECT_EQ(st.tiers[0].evictions, 1U);
  EXPECT_EQ(st.tiers[0].evictions_clean, 1U);
  ASSERT_TRUE(p.validate());

  // Now make every device copy dirty, then force one out.
  std::vector<std::unique_ptr<modify_job>> jobs;
  for (std::uint64_t i = 1; i < 5; ++i) { ASSERT_EQ(modify_on_stream(p, ts[i], s, i, 2, jobs), status::ok); }
  std::size_t const d2h1 = p.stats().bytes_d2h;
  (void)p.acquire(ts[0], access_mode::read, s);
  st = p.stats();
  EXPECT_EQ(st.bytes_d2h, d2h1 + 256_KiB);
  EXPECT_EQ(st.tiers[0].evictions, 2U);
  EXPECT_EQ(st.tiers[0].evictions_clean, 1U);
  ASSERT_TRUE(p.validate());
  EXPECT_TRUE(check(p, ts[0], 0, 1));
  for (std::uint64_t i = 1; i < 5; ++i) { EXPECT_TRUE(check(p, ts[i], i, 2)) << i; }
  p.synchronize(s);
}

TEST(Pool, WriteLeaseInvalidatesLowerCopies)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(128_KiB, {.preferred_tier = tier_id{2}});
  fill(p, t, 7, 1);
  { lease l = p.acquire(t, access_mode::read, s); }
  EXPECT_TRUE(check(p, t, 7, 1));
  std::size_t const d2h = p.stats().bytes_d2h;
  EXPECT_EQ(d2h, 0U);  // the host copy was valid: nothing copied down
  std::vector<std::unique_ptr<modify_job>> jobs;
  ASSERT_EQ(modify_on_stream(p, t, s, 7, 2, jobs), status::ok);
  EXPECT_TRUE(check(p, t, 7, 2));  // must copy the device copy down
  EXPECT_EQ(p.stats().bytes_d2h, 128_KiB);
  // A host write makes the device copy stale: the next acquire copies in again.
  fill(p, t, 7, 3);
  std::uint64_t const misses = p.stats().misses;
  { lease l = p.acquire(t, access_mode::read, s); }
  EXPECT_EQ(p.stats().misses, misses + 1);
  EXPECT_TRUE(check(p, t, 7, 3));
  ASSERT_TRUE(p.validate());
  p.synchronize(s);
}

TEST(Pool, VirtualClockStreamWaitsForCopyIn)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(512_KiB, {.preferred_tier = tier_id{2}});
  fill(p, t, 1, 1);
  tick const before = be->stream_tail(s).value_or(0);
  tick const copy_ns = be->options().links->h2d.transfer_ns(512_KiB);
  {
    lease l = p.acquire(t, access_mode::read, s);
    EXPECT_GE(be->stream_tail(s).value_or(0), before + copy_ns);
  }
  // A hit adds nothing to the stream.
  tick const tail = be->stream_tail(s).value_or(0);
  std::uint64_t const ops = be->enqueued_operations();
  { lease l = p.acquire(t, access_mode::read, s); }
  EXPECT_EQ(be->stream_tail(s).value_or(0), tail);
  p.synchronize(s);
  (void)ops;
  EXPECT_TRUE(check(p, t, 1, 1));
}

TEST(Pool, HitPathMakesNoBackendCall)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(64_KiB);
  fill(p, t, 1, 1);
  { lease l = p.acquire(t, access_mode::read, s); }
  ASSERT_EQ(be->advance_by(1'000'000'000), status::ok);
  { lease l = p.acquire(t, access_mode::read, s); }  // completes the ready event once
  be->reset_call_counts();
  for (int i = 0; i < 10; ++i) { lease l = p.acquire(t, access_mode::read, s); }
  EXPECT_EQ(be->call_count(sim_call::any), 0U);
}

TEST(Pool, PrefetchThenAcquireCountsHitOrLate)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor a = p.allocate(256_KiB, {.preferred_tier = tier_id{2}});
  tensor b = p.allocate(256_KiB, {.preferred_tier = tier_id{2}});
  fill(p, a, 1, 1);
  fill(p, b, 2, 1);
  p.prefetch(a);
  p.prefetch(a);  // no-op: in flight
  EXPECT_EQ(p.stats().prefetches, 1U);
  ASSERT_EQ(be->advance_by(1'000'000'000), status::ok);
  { lease l = p.acquire(a, access_mode::read, s); }
  p.prefetch(b);
  { lease l = p.acquire(b, access_mode::read, s); }
  pool_stats const st = p.stats();
  EXPECT_EQ(st.prefetches, 2U);
  EXPECT_EQ(st.prefetch_hits, 1U);
  EXPECT_EQ(st.prefetch_late, 1U);
  EXPECT_EQ(st.hits, 4U);  // 2 fills (host copy valid) + 2 acquires
  p.synchronize(s);
  EXPECT_TRUE(check(p, a, 1, 1));
  EXPECT_TRUE(check(p, b, 2, 1));
  ASSERT_TRUE(p.validate());
}

TEST(Pool, DemoteMovesDownAndKeepsBytes)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(256_KiB);
  std::vector<std::unique_ptr<modify_job>> jobs;
  fill(p, t, 3, 1);
  ASSERT_EQ(modify_on_stream(p, t, s, 3, 2, jobs), status::ok);
  p.demote(t, tier_id{2});
  pool_stats st = p.stats();
  EXPECT_EQ(st.tiers[0].resident_tensors, 0U);
  EXPECT_EQ(st.tiers[1].resident_tensors, 0U);
  EXPECT_EQ(st.tiers[2].resident_tensors, 1U);
  ASSERT_TRUE(p.validate());
  EXPECT_TRUE(check(p, t, 3, 2));
  p.synchronize(s);
}

TEST(Pool, SummaryAndJson)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  tensor t = p.allocate(64_KiB, {.name = "w"});
  fill(p, t, 1, 1);
  std::string const s = p.summary();
  EXPECT_NE(s.find("device"), std::string::npos);
  EXPECT_NE(s.find("pinned_host"), std::string::npos);
  std::string const j = p.summary_json();
  EXPECT_NE(j.find("\"tiers\""), std::string::npos);
  EXPECT_NE(j.find("\"evictions_clean\""), std::string::npos);
  EXPECT_NE(j.find("\"tensors\":1"), std::string::npos);
}

// ---- out of memory ----

TEST(PoolOom, AllPinnedNamesPinnedAndLeases)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  std::vector<lease> ls;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB));
    fill(p, ts.back(), i, 1);
    ls.push_back(p.acquire(ts.back(), access_mode::read, s));
  }
  tensor extra = p.allocate(256_KiB);
  EXPECT_EQ(p.stats().tiers[0].resident_tensors, 4U);
  try {
    (void)p.acquire(extra, access_mode::read, s);
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    std::string const m = e.what();
    EXPECT_NE(m.find("262144 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("'device'"), std::string::npos) << m;
    EXPECT_NE(m.find("capacity 1.0 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("pinned 1.0 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("cause: pinned"), std::string::npos) << m;
    EXPECT_NE(m.find("release leases"), std::string::npos) << m;
    EXPECT_EQ(e.requested(), 256_KiB);
    EXPECT_EQ(e.tier(), tier_id{0});
  }
  ASSERT_TRUE(p.validate());
  ls.clear();
  { lease l = p.acquire(extra, access_mode::read, s); }  // now it evicts
  for (std::uint64_t i = 0; i < 4; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)); }
  p.synchronize(s);
}

TEST(PoolOom, FragmentationIsDiagnosed)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  std::vector<lease> ls;
  for (std::uint64_t i = 0; i < 8; ++i) {
    ts.push_back(p.allocate(128_KiB));
    fill(p, ts.back(), i, 1);
  }
  for (std::size_t i = 0; i < 8; i += 2) { ls.push_back(p.acquire(ts[i], access_mode::read, s)); }
  for (std::size_t i = 1; i < 8; i += 2) { p.free(ts[i]); }
  tensor big = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  try {
    (void)p.acquire(big, access_mode::read, s);
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    std::string const m = e.what();
    EXPECT_NE(m.find("cause: fragmentation"), std::string::npos) << m;
    EXPECT_NE(m.find("largest free block 128.0 KiB"), std::string::npos) << m;
  }
  ASSERT_TRUE(p.validate());
  p.synchronize(s);
}

TEST(PoolOom, TensorLargerThanDeviceTier)
{
  // A tensor larger than the device tier cannot be acquired.
  pool q{small_tiers(make_sim(), 1_MiB, 0, 4_MiB)};
  tensor huge = q.allocate(2_MiB);
  try {
    (void)q.acquire(huge, access_mode::read);
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    std::string const m = e.what();
    EXPECT_NE(m.find("cause: capacity"), std::string::npos) << m;
    EXPECT_NE(m.find("TIERPOOL_DEVICE_BYTES"), std::string::npos) << m;
  }
  EXPECT_TRUE(q.validate());
}

TEST(PoolOom, DirtyVictimsWithNoRoomBelow)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 1_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  // Device: 4 tensors whose only copy is there; host: 4 others, full.
  for (std::uint64_t i = 0; i < 8; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{i < 4 ? 0U : 1U}}));
  }
  std::vector<std::unique_ptr<modify_job>> jobs;
  for (std::uint64_t i = 0; i < 4; ++i) { ASSERT_EQ(modify_on_stream(p, ts[i], s, i, 1, jobs), status::ok); }
  for (std::uint64_t i = 4; i < 8; ++i) { fill(p, ts[i], i, 1); }
  try {
    (void)p.acquire(ts[4], access_mode::read, s);
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    EXPECT_NE(std::string(e.what()).find("cause: capacity"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(p.validate());
  p.synchronize(s);
  for (std::uint64_t i = 4; i < 8; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
}

// ---- threads ----

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

namespace tierpool::test {

// ---------------------------------------------------------------------------------------
// Forecasts (pool::set_next_use) reach the policy; a policy that refuses to decide (it
// lacks information, e.g. Belady without a forecast) surfaces as its typed error, and the
// pool stays consistent.

namespace {

struct spy_log {
  std::vector<std::pair<std::uint64_t, std::optional<tick>>> seen;  // (id, next_use) per insert/access
  bool refuse{false};
};

/// Least recently inserted/accessed first; logs forecasts; may refuse to propose.
class spy_policy {
 public:
  explicit spy_policy(std::shared_ptr<spy_log> log) : log_(std::move(log)) {}
  void on_insert(tensor_view const& v) noexcept { touch(v); }
  void on_access(tensor_view const& v) noexcept { touch(v); }
  void on_erase(tensor_id id) noexcept { std::erase_if(order_, [&](auto const& e) { return e.first == id; }); }
  void on_pin(tensor_id) noexcept {}
  void on_unpin(tensor_id) noexcept {}
  void propose(eviction_request const& req, eviction_proposal& out)
  {
    if (log_->refuse) { throw logic_error("spy: no forecast for this tensor"); }
    for (auto const& [id, bytes] : order_) {
      if (out.covers(req)) { break; }
      out.add(id, bytes);
    }
  }
  [[nodiscard]] std::string_view name() const noexcept { return "spy"; }

 private:
  void touch(tensor_view const& v) noexcept
  {
    try {
      log_->seen.emplace_back(static_cast<std::uint64_t>(v.id), v.next_use);
    } catch (...) {
    }
    on_erase(v.id);
    try {
      order_.emplace_back(v.id, v.bytes);
    } catch (...) {
    }
  }
  std::shared_ptr<spy_log> log_;
  std::vector<std::pair<tensor_id, std::size_t>> order_;
};

}  // namespace

TEST(PoolForecast, SetNextUseReachesThePolicyAndARefusalIsATypedError)
{
  auto log = std::make_shared<spy_log>();
  policy_registry reg = policy_registry::with_builtins();
  reg.add("spy", "test spy", {}, [log](policy_params const&) { return any_eviction_policy{spy_policy{log}}; });
  auto be = make_sim();
  pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
  o.registry = &reg;
  o.tiers[0].policy = "spy";
  pool p{o};
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB));
    fill(p, ts.back(), i, 1);
  }
  stream_handle s = p.create_stream();
  p.set_next_use(ts[0], tick{42});
  { lease l = p.acquire(ts[0], access_mode::read, s); }
  { lease l = p.acquire(ts[1], access_mode::read, s); }
  p.set_next_use(ts[0], no_next_use);
  { lease l = p.acquire(ts[0], access_mode::read, s); }  // a hit: reported through the access buffer
  { lease l = p.acquire(ts[1], access_mode::read, s); }  // (back-to-back hits of one tensor merge)
  p.set_next_use(ts[0], std::nullopt);
  { lease l = p.acquire(ts[0], access_mode::read, s); }
  for (std::uint64_t i = 1; i < 4; ++i) {  // fill the 1 MiB device tier
    lease l = p.acquire(ts[i], access_mode::read, s);
  }
  tensor extra = p.allocate(256_KiB);
  fill(p, extra, 9, 1);
  log->refuse = true;
  try {
    lease l = p.acquire(extra, access_mode::read, s);
    FAIL() << "expected the policy's refusal";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("spy: no forecast"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(p.validate());
  log->refuse = false;
  {
    lease l = p.acquire(extra, access_mode::read, s);  // now it evicts and succeeds
  }
  p.synchronize(s);
  EXPECT_TRUE(p.validate());
  for (std::uint64_t i = 0; i < 4; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(check(p, extra, 9, 1));
  // The forecasts, in order, for tensor 0 (the spy sees hits once the pool drains them).
  std::vector<std::optional<tick>> t0;
  for (auto const& [id, nu] : log->seen) {
    if (id == static_cast<std::uint64_t>(ts[0].id())) { t0.push_back(nu); }
  }
  // (allocate placed it on the device before any forecast: the first views carry none)
  auto const first = std::find(t0.begin(), t0.end(), std::optional<tick>{42});
  ASSERT_NE(first, t0.end());
  ASSERT_GE(t0.end() - first, 3);
  EXPECT_EQ(first[1], std::optional<tick>{no_next_use});
  EXPECT_EQ(first[2], std::nullopt);
  tensor empty;
  EXPECT_THROW(p.set_next_use(empty, tick{1}), logic_error);
}

}  // namespace tierpool::test

namespace tierpool::test {
namespace {

// device 1 MiB, managed 4 MiB, host 16 MiB.
pool_options managed_tiers(std::shared_ptr<sim_backend>& be)
{
  sim_options so;
  so.device_bytes = 64_MiB;
  so.managed_bytes = 8_MiB;
  so.memory = sim_memory_mode::real;
  be = std::make_shared<sim_backend>(so);
  pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = 1_MiB, .chunk_bytes = 1_MiB});
  o.tiers.push_back({.kind = tier_kind::managed, .capacity_bytes = 4_MiB, .chunk_bytes = 4_MiB});
  o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = 16_MiB, .chunk_bytes = 4_MiB});
  return o;
}

}  // namespace

// Where managed memory is device memory (a GPU), a managed tier without a capacity gets
// what the device tiers leave of the managed bytes, never the whole: the pool must not
// ask for more managed memory than the device has. Where it is separate, it gets it all.
TEST(PoolManaged, DefaultManagedCapacityLeavesTheDeviceTiersTheirShare)
{
  auto capacities = [](bool shares, std::size_t device_tier) {
    sim_options so;
    so.device_bytes = 64_MiB;
    so.managed_bytes = 64_MiB;
    so.managed_shares_device = shares;
    pool_options o;
    o.backend_object = std::make_shared<sim_backend>(so);
    o.read_environment = false;
    o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = device_tier});
    o.tiers.push_back({.kind = tier_kind::managed});
    o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = 16_MiB});
    pool p{o};
    pool_stats const st = p.stats();
    return std::pair{st.tiers[0].capacity_bytes, st.tiers[1].capacity_bytes};
  };
  EXPECT_EQ(capacities(true, 48_MiB), std::pair(48_MiB, 16_MiB));
  EXPECT_EQ(capacities(false, 48_MiB), std::pair(48_MiB, 64_MiB));
  try {
    (void)capacities(true, 0);  // the default device tier takes all 64 MiB
    ADD_FAILURE() << "no managed memory was left, yet the pool was built";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("the device tiers take the device memory managed memory would use"),
              std::string::npos)
        << e.what();
  }
}

// A tensor whose valid copy is in the managed tier is used in place: the lease gets the
// managed pointer (no copy into the device tier) and its pages are steered to the device
// once, on the lease's stream; a host access sends them back.
TEST(PoolManaged, LeaseGetsTheManagedPointerAndPagesAreSteered)
{
  std::shared_ptr<sim_backend> be;
  pool p{managed_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(256_KiB, {.name = "m", .preferred_tier = tier_id{1}});
  void* managed_ptr = nullptr;
  {
    lease h = p.acquire_host(t, access_mode::write_discard);  // managed is host-accessible
    write_pattern(h.data(), h.bytes(), 3, 1);
    managed_ptr = h.data();
  }
  std::uint64_t const copies = be->call_count(sim_call::copy);
  std::uint64_t const prefetches = be->call_count(sim_call::prefetch);
  {
    lease l = p.acquire(t, access_mode::read, s);
    EXPECT_EQ(l.data(), managed_ptr);
  }
  {
    lease l = p.acquire(t, access_mode::read, s);  // pages already steered: no second prefetch
    EXPECT_EQ(l.data(), managed_ptr);
  }
  EXPECT_EQ(be->call_count(sim_call::copy), copies) << "a managed copy is used in place";
  EXPECT_EQ(be->call_count(sim_call::prefetch), prefetches + 1);
  EXPECT_EQ(p.stats().managed_prefetches, 1U);
  EXPECT_EQ(p.stats().managed_prefetch_bytes, 256_KiB);
  EXPECT_EQ(p.stats().tiers[0].resident_tensors, 0U);
  EXPECT_TRUE(check(p, t, 3, 1));  // the host touches the pages
  { lease l = p.acquire(t, access_mode::read, s); }
  EXPECT_EQ(p.stats().managed_prefetches, 2U);
  p.synchronize(s);
  EXPECT_TRUE(p.validate());
}

// The same when the stream that writes was destroyed before acquire_host: the pool can
// record nothing on it any more, so the host waits for the last mark destroy_stream
// recorded (as stream-ordered waits do). Before, the backend refused the record and the
// host synchronize on the destroyed stream, and acquire_host returned at once, before the
// write.
TEST(PoolManaged, AcquireHostWaitsForWritesOnADestroyedStream)
{
  for (bool const wrapped : {false, true}) {
    SCOPED_TRACE(wrapped ? "wrapped stream" : "the pool's own stream");
    std::shared_ptr<sim_backend> be;
    pool p{managed_tiers(be)};
    stream_handle raw{};
    stream_handle s{};
    if (wrapped) {
      ASSERT_EQ(be->create_stream(&raw), status::ok);
      s = p.wrap_native_stream(reinterpret_cast<void*>(raw.value));
    } else {
      s = p.create_stream();
    }
    tensor t = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
    fill(p, t, 6, 1);
    stream_gate gate;
    ASSERT_EQ(p.backend().launch_host_func(s, &stream_gate::run, &gate), status::ok);
    std::vector<std::unique_ptr<modify_job>> jobs;
    ASSERT_EQ(modify_on_stream(p, t, s, 6, 2, jobs), status::ok);  // runs after the gate
    p.destroy_stream(s);
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      gate.open = true;
    });
    EXPECT_TRUE(check(p, t, 6, 2)) << "acquire_host returned before the write on the destroyed stream";
    opener.join();
    if (wrapped) {
      EXPECT_EQ(be->synchronize_stream(raw), status::ok);
      be->destroy_stream(raw);
    }
    EXPECT_TRUE(p.validate());
  }
}

// Device work on a managed copy may still be writing when acquire_host comes: the host
// waits for it (a host-accessible copy that device work uses in place).
TEST(PoolManaged, AcquireHostWaitsForDeviceWritesInPlace)
{
  std::shared_ptr<sim_backend> be;
  pool p{managed_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  fill(p, t, 5, 1);
  stream_gate gate;
  ASSERT_EQ(p.backend().launch_host_func(s, &stream_gate::run, &gate), status::ok);
  std::vector<std::unique_ptr<modify_job>> jobs;
  ASSERT_EQ(modify_on_stream(p, t, s, 5, 2, jobs), status::ok);  // runs after the gate
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.open = true;
  });
  EXPECT_TRUE(check(p, t, 5, 2)) << "acquire_host returned before the device write";
  opener.join();
  p.synchronize(s);
  EXPECT_TRUE(p.validate());
}

// Eviction from the device tier lands in the managed tier below it; the bytes survive.
TEST(PoolManaged, DeviceEvictionsGoToManagedAndComeBack)
{
  std::shared_ptr<sim_backend> be;
  pool p{managed_tiers(be)};
  stream_handle s = p.create_stream();
  std::vector<std::unique_ptr<modify_job>> jobs;
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 8; ++i) {  // 8 x 256 KiB: twice the device tier
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{0}}));
    fill(p, ts.back(), i, 1);
  }
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t i = 0; i < 8; ++i) {
      ASSERT_EQ(modify_on_stream(p, ts[i], s, i, static_cast<std::uint32_t>(round + 2), jobs), status::ok);
    }
  }
  p.synchronize(s);
  for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, ts[i], i, 4)) << i; }
  pool_stats const st = p.stats();
  EXPECT_GT(st.tiers[0].evictions, 0U);
  EXPECT_GT(st.misses, 8U) << "evicted tensors come back into the device tier";
  EXPECT_EQ(st.managed_prefetches, 0U) << "only tensors placed in the managed tier are used in place";
  EXPECT_TRUE(p.validate());
}

}  // namespace tierpool::test

namespace tierpool::test {

// A CPU-less (CXL) NUMA node becomes a far host tier below DRAM in the default tiers.
TEST(PoolNuma, DefaultTiersAddAFarHostTierPerFarNode)
{
  scoped_env xml("HWLOC_XMLFILE", TIERPOOL_TEST_FIXTURES "/two_sockets_cxl.xml");
  auto be = make_sim(sim_clock_mode::wall, 8_MiB);
  pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  pool p{o};
  ASSERT_EQ(p.tier_count(), 4U);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[2].kind, tier_kind::host);
  EXPECT_EQ(st.tiers[2].numa_node, -1);
  EXPECT_EQ(st.tiers[3].kind, tier_kind::host);
  EXPECT_EQ(st.tiers[3].numa_node, 2);
  EXPECT_EQ(st.tiers[3].name, "far host (node 2, CXL-DRAM)");
  topology const topo = topology::discover();
  ASSERT_NE(topo.find_node(2), nullptr);
  EXPECT_EQ(st.tiers[3].capacity_bytes, topo.find_node(2)->bytes / 2);
}

// Tiers bound to NUMA nodes, end to end: evictions cascade device -> DRAM host -> far host
// and every byte comes back.
TEST(PoolNuma, EvictionsCascadeIntoTheFarTier)
{
  auto be = make_sim();
  pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = 1_MiB, .chunk_bytes = 1_MiB});
  o.tiers.push_back({.kind = tier_kind::host, .numa_node = 0, .capacity_bytes = 2_MiB, .chunk_bytes = 1_MiB});
  o.tiers.push_back({.kind = tier_kind::host, .numa_node = 2, .capacity_bytes = 16_MiB, .chunk_bytes = 4_MiB,
                     .name = "far"});
  pool p{o};
  stream_handle s = p.create_stream();
  std::vector<std::unique_ptr<modify_job>> jobs;
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 16; ++i) {  // 4 MiB: beyond device + DRAM tiers
    ts.push_back(p.allocate(256_KiB));
    fill(p, ts.back(), i, 1);
  }
  for (std::uint64_t i = 0; i < 16; ++i) { ASSERT_EQ(modify_on_stream(p, ts[i], s, i, 2, jobs), status::ok); }
  p.synchronize(s);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[2].name, "far");
  EXPECT_EQ(st.tiers[2].numa_node, 2);
  EXPECT_GT(st.tiers[2].resident_tensors, 0U);
  EXPECT_GT(st.tiers[1].evictions, 0U) << "the DRAM tier spilled into the far tier";
  for (std::uint64_t i = 0; i < 16; ++i) { EXPECT_TRUE(check(p, ts[i], i, 2)) << i; }
  EXPECT_TRUE(p.validate());
}

}  // namespace tierpool::test

namespace tierpool::test {

// On a virtual clock no copy completes until time advances, so every dirty victim's
// block is still being written back when the next copy-in needs room: the copy-in takes
// the block in stream order (it waits for the write-back on its copy stream) instead of
// the host waiting. Bytes survive every trip.
TEST(PoolStreamOrderedReuse, CopyInTakesTheVictimsBlockBehindItsWriteBack)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{small_tiers(be, 1_MiB, 8_MiB, 0)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 8; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 1);
  }
  double const stall0 = p.stats().stall_seconds;
  for (int round = 0; round < 3; ++round) {
    for (auto const& t : ts) {
      lease l = p.acquire(t, access_mode::read_write, s);  // dirty on the device: evictions write back
    }
  }
  pool_stats const st = p.stats();
  // 20 copy-ins needed room. A victim whose only open use is its write-back is reused in
  // stream order; one whose last use on `s` is not known complete yet is vacated behind
  // the retire stream, which copies never wait on (it follows users' queues), so a few
  // take the host-wait path instead.
  EXPECT_GE(st.tiers[0].reuses_in_order, 12U);
  EXPECT_LT(st.stall_seconds - stall0, 0.5);
  EXPECT_GT(st.tiers[0].evictions, 16U);
  p.synchronize(s);
  for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}

}  // namespace tierpool::test

namespace tierpool::test {

// TIERPOOL_TRACE / pool_options::trace_path: the pool records its calls in the trace
// schema; the file reads back as the same sequence (allocate, host and stream accesses
// with their modes and trace-local stream numbers, prefetch, free).
TEST(PoolTrace, RecordsItsCallsInTheTraceSchema)
{
  auto const path = std::filesystem::temp_directory_path() / ("tierpool_pool_trace_" + std::to_string(::getpid()) + ".tpt");
  {
    auto be = make_sim();
    pool_options o = small_tiers(be);
    o.trace_path = path.string();
    pool p{o};
    stream_handle s = p.create_stream();
    tensor a = p.allocate(1024, {.name = "w0", .preferred_tier = tier_id{2}});
    tensor b = p.allocate(2048);
    fill(p, a, 1, 1);                                             // host write_discard
    { lease l = p.acquire(a, access_mode::read, s); }             // stream 1
    { lease l = p.acquire(b, access_mode::read_write, {}); }      // default stream 0
    p.prefetch(b, tier_id{1});
    p.free(a);
    p.synchronize(s);
  }  // b freed by its handle
  std::vector<trace::event> const ev = trace::read_all(path);
  std::filesystem::remove(path);
  std::vector<std::string> got;
  for (trace::event const& e : ev) {
    std::string line = std::string(trace::to_string(e.kind)) + " " + std::to_string(e.tensor);
    if (e.kind == trace::event_kind::allocate) { line += " " + std::to_string(e.bytes) + " " + e.name + " " + std::to_string(e.tier); }
    if (e.kind == trace::event_kind::access) {
      line += std::string(" m") + std::to_string(static_cast<int>(e.mode)) + " s" +
              (e.stream == trace::host_stream ? std::string("host") : std::to_string(e.stream));
    }
    if (e.kind == trace::event_kind::prefetch) { line += " t" + std::to_string(e.tier); }
    if (e.kind == trace::event_kind::release) {
      line += std::string(" s") + (e.stream == trace::host_stream ? std::string("host") : std::to_string(e.stream));
    }
    got.push_back(line);
  }
  std::vector<std::string> const want = {
    "allocate 1 1024 w0 2", "allocate 2 2048  " + std::to_string(trace::no_tier),
    "access 1 m2 shost",    "release 1 shost",
    "access 1 m0 s1",       "release 1 s1",
    "access 2 m1 s0",       "release 2 s0",
    "prefetch 2 t1",        "free 1",
    "free 2"};
  EXPECT_EQ(got, want);
  for (std::size_t i = 1; i < ev.size(); ++i) { EXPECT_GE(ev[i].time_ns, ev[i - 1].time_ns); }
}

}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_prefetch_tests.cpp — pool::prefetch and the predictor's prefetches: never blocking the
// host, the queue when room is still in flight, dropped requests (live write lease, freed,
// resident), and prefetch hits against late prefetches.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <chrono>
#include <cstdint>
#include <thread>

namespace tierpool::test {
namespace {

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

}  // namespace
}  // namespace tierpool::test

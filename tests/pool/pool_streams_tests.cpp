// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_streams_tests.cpp — stream ordering: a block read on a destroyed stream is not reused
// before that work ends, evictions do not wait for unrelated later work, a copy-in on the
// virtual clock is ordered before the user's stream, and copy-ins take a victim's block
// behind its write-back (stream-ordered reuse).
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

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

// Note [Merging deferred blocks]: tensors of three sizes on a tier that fits a few, so
// that the room a copy-in needs is never one victim's block. Before, each such request
// waited on the host for vacated blocks one by one (a stall each time on the virtual
// clock, where nothing completes unless the host waits); now the copy-in takes several
// vacated blocks (or the head of a larger one) with their events. Every byte survives.
TEST(PoolStreamOrderedReuse, CopyInsMergeVacatedBlocksOfOtherSizesWithoutHostWaits)
{
  for (sim_clock_mode const clock : {sim_clock_mode::virtual_clock, sim_clock_mode::wall}) {
    SCOPED_TRACE(clock == sim_clock_mode::virtual_clock ? "virtual clock" : "wall clock");
    auto be = make_sim(clock);
    pool p{small_tiers(be, 1_MiB, 8_MiB, 0)};
    stream_handle s = p.create_stream();
    std::vector<tensor> ts;
    std::size_t const sizes[] = {96_KiB, 160_KiB, 320_KiB};
    for (std::uint64_t i = 0; i < 12; ++i) {
      ts.push_back(p.allocate(sizes[i % 3], {.preferred_tier = tier_id{1}}));
      fill(p, ts.back(), i, 1);
    }
    tick const now0 = be->now();
    std::vector<std::unique_ptr<modify_job>> jobs;
    for (std::uint32_t round = 0; round < 4; ++round) {
      for (std::uint64_t i = 0; i < ts.size(); ++i) {
        std::uint64_t const j = (i * 5 + round) % ts.size();  // each tensor once a round, in another order
        // Dirty on the device: the victims are written back.
        ASSERT_EQ(modify_on_stream(p, ts[j], s, j, round + 2, jobs), status::ok);
      }
    }
    pool_stats const st = p.stats();
    EXPECT_GT(st.tiers[0].merges_in_order, 4U);
    EXPECT_LE(st.tiers[0].merges_in_order, st.tiers[0].reuses_in_order);
    if (clock == sim_clock_mode::virtual_clock) {
      EXPECT_EQ(be->now(), now0) << "no host wait: the virtual clock never moved";
    }
    p.synchronize(s);
    for (std::uint64_t j = 0; j < ts.size(); ++j) { EXPECT_TRUE(check(p, ts[j], j, 5)) << j; }
    EXPECT_TRUE(p.validate());
  }
}


// Note [The evicted block goes to the request that evicted it]: a copy-in that evicts one
// victim of its size takes the victim's block with the victim's own fill event and last
// uses, and waits for those alone. Before, the block was vacated behind the retire stream,
// whose queue follows every earlier vacate: a copy-in whose victim was used on a fast
// stream waited behind an unrelated victim's slow stream (1 s here). The bytes and the
// order after the victim's last use still hold.
TEST(PoolStreamOrderedReuse, ACopyInWaitsForItsVictimsUsesOnlyNotAnEarlierVictimsStream)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{small_tiers(be, 512_KiB, 0, 8_MiB)};  // the device tier holds two of them
  stream_handle const slow = p.create_stream();
  stream_handle const fast = p.create_stream();
  stream_handle const s3 = p.create_stream();
  stream_handle const s4 = p.create_stream();
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 1);
  }
  p.synchronize(slow);
  tick const t0 = be->now();
  {
    lease l = p.acquire(ts[0], access_mode::read, slow);
    ASSERT_EQ(be->compute_async(slow, 1'000'000'000), status::ok);  // 1 s reading ts[0]
  }
  {
    lease l = p.acquire(ts[1], access_mode::read, fast);
    ASSERT_EQ(be->compute_async(fast, 1'000), status::ok);  // 1 us reading ts[1]
  }
  { lease l = p.acquire(ts[2], access_mode::read, s3); }  // evicts ts[0]: waits for `slow`
  tick const end3 = be->stream_tail(s3).value_or(0);
  EXPECT_GE(end3, t0 + 1'000'000'000) << "the copy-in must wait for its victim's last use";
  { lease l = p.acquire(ts[3], access_mode::read, s4); }  // evicts ts[1]: waits for `fast` only
  tick const end4 = be->stream_tail(s4).value_or(0);
  EXPECT_GE(end4, be->stream_tail(fast).value_or(0)) << "the copy-in must wait for its victim's last use";
  EXPECT_LT(end4, t0 + 100'000'000) << "the copy-in waited for another victim's stream";
  EXPECT_EQ(p.stats().tiers[0].evictions, 2U);
  p.synchronize(s3);
  p.synchronize(s4);
  for (std::uint64_t i = 0; i < 4; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}


// The tensor a hand-off was for enters the policy with the eviction (Note [The evicted block
// goes to the request that evicted it]); when its copy-in then fails in the backend, it
// leaves the policy again and the tier's figures stay true: the acquire throws, nothing is
// lost, validate() holds, and the next acquire works.
TEST(PoolStreamOrderedReuse, AFailedCopyIntoAHandedOffBlockLeavesThePolicyAndTheFiguresRight)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{small_tiers(be, 512_KiB, 0, 8_MiB)};  // the device tier holds two of them
  stream_handle const s = p.create_stream();
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 3; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 1);
  }
  { lease l = p.acquire(ts[0], access_mode::read, s); }
  { lease l = p.acquire(ts[1], access_mode::read, s); }
  be->set_faults({.seed = 0, .rules = {{.kind = sim_call::copy, .nth = 1}}});
  EXPECT_THROW({ lease l = p.acquire(ts[2], access_mode::read, s); }, backend_error);  // evicts ts[0], the copy fails
  be->set_faults({});
  EXPECT_TRUE(p.validate());
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[0].resident_tensors, 1U);
  EXPECT_EQ(st.tiers[0].evictions, 1U);
  { lease l = p.acquire(ts[2], access_mode::read, s); }
  { lease l = p.acquire(ts[0], access_mode::read, s); }  // evicts ts[1], LRU order intact
  EXPECT_EQ(p.stats().tiers[0].resident_tensors, 2U);
  p.synchronize(s);
  for (std::uint64_t i = 0; i < 3; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

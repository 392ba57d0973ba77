// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// Unit tests of one tier (runtime/tiers/tier.hpp) on the sim backend: chunked growth
// within the budget, pointer geometry, byte integrity under churn, deferred frees
// ordered by events (virtual clock), injected faults, release of unused chunks, misuse.
// validate() runs after every step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/error.hpp>

#include "backends/event_pool.hpp"
#include "tiers/tier.hpp"

namespace {

using namespace tierpool::literals;
using tierpool::event_handle;
using tierpool::sim_backend;
using tierpool::sim_call;
using tierpool::sim_options;
using tierpool::status;
using tierpool::stream_handle;
using tierpool::tier_kind;
using tierpool::detail::block;
using tierpool::detail::event_pool;
using tierpool::detail::tier;
using tierpool::detail::tier_alloc_report;
using tierpool::detail::tier_alloc_result;
using tierpool::detail::tier_config;
using tierpool::detail::tier_grow;

// Backend first, events second: both outlive any tier a test builds after them.
struct rig {
  explicit rig(sim_options o = {}) : be{std::move(o)} {}
  sim_backend be;
  event_pool events{be};
};

sim_options virtual_clock()
{
  sim_options o;
  o.clock = tierpool::sim_clock_mode::virtual_clock;
  return o;
}

tier_config config(tier_kind kind, std::size_t capacity, std::size_t chunk)
{
  tier_config c;
  c.kind = kind;
  c.capacity_bytes = capacity;
  c.chunk_bytes = chunk;
  c.name = "test";
  return c;
}

auto addr(void const* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The block lies inside the chunk of its region, and inside its slot.
void expect_inside_chunk(tier const& t, block const& b)
{
  auto const chunks = t.chunk_ranges();
  ASSERT_LT(b.slot.region, chunks.size());
  auto const& c = chunks[b.slot.region];
  ASSERT_NE(c.base, nullptr);
  EXPECT_GE(addr(b.ptr), addr(c.base));
  EXPECT_LE(addr(b.ptr) + b.bytes, addr(c.base) + c.bytes);
  EXPECT_GE(b.slot.size, b.bytes);
}

// No two blocks overlap (sorted sweep).
void expect_disjoint(std::vector<block> blocks)
{
  std::sort(blocks.begin(), blocks.end(), [](block const& x, block const& y) { return addr(x.ptr) < addr(y.ptr); });
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_LE(addr(blocks[i - 1].ptr) + blocks[i - 1].bytes, addr(blocks[i].ptr)) << "blocks " << i - 1 << " and " << i;
  }
}

TEST(TierKind, WhoCanReachEachKind)
{
  using tierpool::tier_kind;
  EXPECT_TRUE(tierpool::is_device_accessible(tier_kind::device));
  EXPECT_TRUE(tierpool::is_device_accessible(tier_kind::managed));
  EXPECT_FALSE(tierpool::is_device_accessible(tier_kind::pinned_host));
  EXPECT_FALSE(tierpool::is_device_accessible(tier_kind::host));
  EXPECT_FALSE(tierpool::is_host_accessible(tier_kind::device));
  EXPECT_TRUE(tierpool::is_host_accessible(tier_kind::managed));
  EXPECT_TRUE(tierpool::is_host_accessible(tier_kind::pinned_host));
  EXPECT_TRUE(tierpool::is_host_accessible(tier_kind::host));
}

TEST(Tier, GrowsChunkByChunkUpToCapacityThenFails)
{
  rig r;
  tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 256_KiB)};
  ASSERT_TRUE(t.validate());
  EXPECT_EQ(t.usage().reserved_bytes, 0U);
  std::vector<block> blocks;
  for (int i = 0; i < 16; ++i) {
    tier_alloc_report rep;
    auto b = t.allocate(64_KiB, 0, &rep);
    ASSERT_TRUE(b) << i;
    EXPECT_EQ(rep.result, tier_alloc_result::ok);
    EXPECT_EQ(rep.grew, i % 4 == 0) << i;  // a new 256 KiB chunk every 4 blocks
    EXPECT_EQ(t.usage().reserved_bytes, static_cast<std::size_t>(i / 4 + 1) * 256_KiB);
    blocks.push_back(*b);
    ASSERT_TRUE(t.validate());
  }
  tier_alloc_report rep;
  EXPECT_FALSE(t.allocate(64_KiB, 0, &rep));
  EXPECT_EQ(rep.result, tier_alloc_result::over_capacity);
  EXPECT_EQ(rep.free_bytes, 0U);
  EXPECT_FALSE(t.allocate(2_MiB, 0, &rep));  // larger than the whole budget
  EXPECT_EQ(rep.result, tier_alloc_result::over_capacity);
  auto const u = t.usage();
  EXPECT_EQ(u.reserved_bytes, 1_MiB);
  EXPECT_EQ(u.used_bytes, 1_MiB);
  EXPECT_EQ(u.peak_used_bytes, 1_MiB);
  EXPECT_EQ(u.chunk_count, 4U);
  EXPECT_EQ(u.allocation_count, 16U);
  EXPECT_EQ(u.grow_count, 4U);
  EXPECT_EQ(u.grow_failure_count, 0U);
  EXPECT_EQ(r.be.allocated_bytes(tier_kind::device), 1_MiB);
  ASSERT_TRUE(t.validate());
  for (auto const& b : blocks) {
    expect_inside_chunk(t, b);
  }
  expect_disjoint(blocks);
  t.deallocate(blocks[3]);
  ASSERT_TRUE(t.validate());
  EXPECT_TRUE(t.allocate(64_KiB));  // freed space is reused without growing
  EXPECT_EQ(t.usage().grow_count, 4U);
}

TEST(Tier, GrowForbiddenReportsNoFit)
{
  rig r;
  tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 256_KiB)};
  tier_alloc_report rep;
  EXPECT_FALSE(t.allocate(1_KiB, 0, &rep, tier_grow::forbid));
  EXPECT_EQ(rep.result, tier_alloc_result::no_fit);
  EXPECT_EQ(t.usage().reserved_bytes, 0U);
  ASSERT_TRUE(t.allocate(1_KiB));
  EXPECT_TRUE(t.allocate(1_KiB, 0, &rep, tier_grow::forbid));  // fits the existing chunk
  ASSERT_TRUE(t.validate());
}

TEST(Tier, RandomBlocksNeverOverlapAndLieInTheirChunk)
{
  rig r;
  tier t{r.be, r.events, config(tier_kind::host, 8_MiB, 512_KiB)};
  std::mt19937_64 rng{1234};
  std::vector<block> live;
  for (int step = 0; step < 2000; ++step) {
    if (!live.empty() && (rng() % 3 == 0)) {
      std::size_t const i = rng() % live.size();
      t.deallocate(live[i]);
      live[i] = live.back();
      live.pop_back();
    } else {
      std::size_t const bytes = 1 + rng() % 200_KiB;
      std::size_t const align = std::size_t{1} << (rng() % 13);  // 1 .. 4096 (above the backend's 256)
      if (auto b = t.allocate(bytes, align)) {
        EXPECT_EQ(addr(b->ptr) % align, 0U);
        expect_inside_chunk(t, *b);
        live.push_back(*b);
      }
    }
    ASSERT_TRUE(t.validate()) << step;
  }
  expect_disjoint(live);
  auto const chunks = t.chunk_ranges();
  std::vector<block> as_blocks;  // chunks never overlap each other either
  for (auto const& c : chunks) {
    as_blocks.push_back(block{{}, const_cast<void*>(c.base), c.bytes});
  }
  expect_disjoint(as_blocks);
}

// ---- byte integrity -------------------------------------------------------------------

std::uint8_t pattern(std::uint64_t id, std::size_t i)
{
  return static_cast<std::uint8_t>((id * 131U + i * 7U) ^ (i >> 8U));
}

struct tagged {
  block b;
  std::uint64_t id;
};

// Writes / checks a block's bytes: directly for host-accessible kinds, via copies otherwise.
struct byte_io {
  sim_backend& be;
  tier_kind kind;

  void fill(tagged const& x) const
  {
    std::vector<std::uint8_t> buf(x.b.bytes);
    for (std::size_t i = 0; i < buf.size(); ++i) {
      buf[i] = pattern(x.id, i);
    }
    if (tierpool::is_host_accessible(kind)) {
      std::memcpy(x.b.ptr, buf.data(), buf.size());
      return;
    }
    ASSERT_EQ(be.copy_async({x.b.ptr, buf.data(), buf.size(), kind, tier_kind::host}, {}), status::ok);
    ASSERT_EQ(be.synchronize_stream({}), status::ok);
  }

  [[nodiscard]] bool intact(tagged const& x) const
  {
    std::vector<std::uint8_t> buf(x.b.bytes);
    if (tierpool::is_host_accessible(kind)) {
      std::memcpy(buf.data(), x.b.ptr, buf.size());
    } else {
      if (be.copy_async({buf.data(), x.b.ptr, buf.size(), tier_kind::host, kind}, {}) != status::ok ||
          be.synchronize_stream({}) != status::ok) {
        return false;
      }
    }
    for (std::size_t i = 0; i < buf.size(); ++i) {
      if (buf[i] != pattern(x.id, i)) {
        return false;
      }
    }
    return true;
  }
};

class TierBytes : public ::testing::TestWithParam<tier_kind> {};

TEST_P(TierBytes, PatternsSurviveRandomChurn)
{
  tier_kind const kind = GetParam();
  rig r;
  tier t{r.be, r.events, config(kind, 2_MiB, 256_KiB)};
  byte_io const io{r.be, kind};
  std::mt19937_64 rng{99};
  std::vector<tagged> live;
  std::uint64_t next_id = 1;
  int const steps = kind == tier_kind::device ? 600 : 2000;
  for (int step = 0; step < steps; ++step) {
    if (!live.empty() && rng() % 5 < 2) {  // allocations win: the tier runs full
      std::size_t const i = rng() % live.size();
      ASSERT_TRUE(io.intact(live[i])) << "block " << live[i].id << " clobbered at step " << step;
      t.deallocate(live[i].b);
      live[i] = live.back();
      live.pop_back();
    } else {
      std::size_t const bytes = 1 + rng() % 48_KiB;
      if (auto b = t.allocate(bytes, std::size_t{1} << (rng() % 10))) {
        live.push_back({*b, next_id++});
        io.fill(live.back());
      }
    }
    ASSERT_TRUE(t.validate()) << step;
  }
  for (auto const& x : live) {
    EXPECT_TRUE(io.intact(x)) << "block " << x.id;
  }
  EXPECT_GT(t.usage().peak_used_bytes, 3 * 512_KiB);
  EXPECT_EQ(t.usage().reserved_bytes, 2_MiB);
}

INSTANTIATE_TEST_SUITE_P(Kinds, TierBytes,
                         ::testing::Values(tier_kind::host, tier_kind::pinned_host, tier_kind::device),
                         [](auto const& p) { return std::string{tierpool::to_string(p.param)}; });

// ---- deferred frees -------------------------------------------------------------------

// Makes `s` busy for `duration` ns and returns a pooled event recorded after that work.
event_handle busy_event(rig& r, stream_handle s, tierpool::tick duration)
{
  event_handle e{};
  EXPECT_EQ(r.events.acquire(&e), status::ok);
  EXPECT_EQ(r.be.compute_async(s, duration), status::ok);
  EXPECT_EQ(r.be.record_event(e, s), status::ok);
  return e;
}

TEST(TierDeferred, SpaceIsNotReusedBeforeTheEventCompletes)
{
  rig r{virtual_clock()};
  stream_handle s{};
  ASSERT_EQ(r.be.create_stream(&s), status::ok);
  // Room for exactly two 64 KiB blocks.
  tier t{r.be, r.events, config(tier_kind::device, 128_KiB, 128_KiB)};
  auto a = t.allocate(64_KiB);
  ASSERT_TRUE(a);
  event_handle const e = busy_event(r, s, 10'000);
  t.deallocate_after(*a, e, s);
  ASSERT_TRUE(t.validate());
  EXPECT_EQ(t.usage().deferred_bytes, 64_KiB);
  EXPECT_EQ(t.usage().deferred_count, 1U);
  EXPECT_EQ(t.usage().used_bytes, 0U);
  EXPECT_FALSE(t.owns(*a));
  EXPECT_THROW(t.deallocate(*a), tierpool::logic_error);  // already deferred
  ASSERT_TRUE(t.validate());

  tier_alloc_report rep;
  auto b = t.allocate(64_KiB, 0, &rep);  // the other half: never the deferred range
  ASSERT_TRUE(b);
  EXPECT_EQ(rep.reclaimed_bytes, 0U);
  EXPECT_TRUE(addr(b->ptr) + b->bytes <= addr(a->ptr) || addr(a->ptr) + a->bytes <= addr(b->ptr));
  EXPECT_FALSE(t.allocate(64_KiB, 0, &rep));
  EXPECT_EQ(rep.result, tier_alloc_result::over_capacity);
  EXPECT_EQ(rep.deferred_bytes, 64_KiB);
  ASSERT_TRUE(t.validate());

  ASSERT_EQ(r.be.advance_to(*r.be.event_time(e) - 1), status::ok);  // not quite
  EXPECT_FALSE(t.allocate(64_KiB, 0, &rep));
  EXPECT_EQ(r.events.stats().outstanding, 1U);  // the tier still holds the event

  ASSERT_EQ(r.be.advance_to(*r.be.event_time(e)), status::ok);
  auto c = t.allocate(64_KiB, 0, &rep);
  ASSERT_TRUE(c);
  EXPECT_EQ(rep.reclaimed_bytes, 64_KiB);
  EXPECT_EQ(c->ptr, a->ptr);  // now the range comes back
  EXPECT_EQ(t.usage().deferred_bytes, 0U);
  EXPECT_EQ(r.events.stats().outstanding, 0U);  // event handed back to the pool
  EXPECT_EQ(r.events.stats().cached, 1U);
  ASSERT_TRUE(t.validate());
}

// Stream-ordered reuse: a deferred block of about the right size, on an allowed lane, is
// handed out at once with its pending event (the caller orders its use after it).
TEST(TierDeferred, TakeDeferredHandsOutTheBlockWithItsPendingEvent)
{
  rig r{virtual_clock()};
  stream_handle copy{};
  stream_handle other{};
  ASSERT_EQ(r.be.create_stream(&copy), status::ok);
  ASSERT_EQ(r.be.create_stream(&other), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 1_MiB)};
  auto big = t.allocate(256_KiB);
  auto a = t.allocate(64_KiB);
  auto b = t.allocate(64_KiB);
  ASSERT_TRUE(big && a && b);
  event_handle const ebig = busy_event(r, copy, 10'000);
  t.deallocate_after(*big, ebig, copy);
  event_handle const ea = busy_event(r, other, 10'000);
  t.deallocate_after(*a, ea, other);
  event_handle const eb = busy_event(r, copy, 10'000);
  t.deallocate_after(*b, eb, copy);
  auto only_copy = [&](stream_handle s) { return s == copy; };

  event_handle after{};
  auto got = t.take_deferred(64_KiB, only_copy, &after);  // b: a is on a lane not allowed
  ASSERT_TRUE(got);
  EXPECT_EQ(got->ptr, b->ptr);
  EXPECT_EQ(got->bytes, 64_KiB);
  EXPECT_EQ(after, eb);
  EXPECT_EQ(r.be.query_event(after), status::not_ready) << "handed out without waiting";
  EXPECT_TRUE(t.owns(*got));
  EXPECT_EQ(t.usage().deferred_bytes, 256_KiB + 64_KiB);
  EXPECT_EQ(t.usage().used_bytes, 64_KiB);
  ASSERT_TRUE(t.validate());

  // 100 KiB: the 256 KiB block wastes too much (over a quarter), a is not allowed: none.
  EXPECT_FALSE(t.take_deferred(100_KiB, only_copy, &after));
  EXPECT_FALSE(after);
  // 240 KiB fits the 256 KiB block within the bound.
  auto got2 = t.take_deferred(240_KiB, only_copy, &after);
  ASSERT_TRUE(got2);
  EXPECT_EQ(got2->ptr, big->ptr);
  EXPECT_EQ(after, ebig);
  ASSERT_TRUE(t.validate());

  // The caller owns the events now; the blocks are live and freed like any other.
  ASSERT_EQ(r.be.synchronize_event(eb), status::ok);
  r.events.release(eb);
  r.events.release(ebig);
  t.deallocate(*got);
  t.deallocate(*got2);
  ASSERT_EQ(r.be.synchronize_event(ea), status::ok);
  EXPECT_EQ(t.reclaim_completed(), 64_KiB);
  EXPECT_EQ(t.usage().used_bytes, 0U);
  EXPECT_EQ(r.events.stats().outstanding, 0U);
  ASSERT_TRUE(t.validate());
}

// take_deferred tells the stream the pending event was recorded on, so that a caller that
// cannot use the block (pool::allocate failing afterwards) hands block and event back with
// deallocate_after: the tier is as before, and the block is reclaimed once the event completes.
TEST(TierDeferred, TakeDeferredReportsTheLaneAndTheBlockCanBeHandedBack)
{
  rig r{virtual_clock()};
  stream_handle copy{};
  ASSERT_EQ(r.be.create_stream(&copy), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 1_MiB)};
  auto a = t.allocate(64_KiB);
  ASSERT_TRUE(a);
  event_handle const ea = busy_event(r, copy, 10'000);
  t.deallocate_after(*a, ea, copy);
  auto any = [](stream_handle) { return true; };

  event_handle after{};
  stream_handle lane{12345};
  EXPECT_FALSE(t.take_deferred(512_KiB, any, &after, &lane));  // nothing of that size
  EXPECT_EQ(lane, stream_handle{}) << "reset when nothing was taken";
  auto got = t.take_deferred(64_KiB, any, &after, &lane);
  ASSERT_TRUE(got);
  EXPECT_EQ(after, ea);
  EXPECT_EQ(lane, copy);
  EXPECT_EQ(t.usage().deferred_bytes, 0U);
  t.deallocate_after(*got, after, lane);  // handed back unused
  EXPECT_EQ(t.usage().deferred_bytes, 64_KiB);
  EXPECT_EQ(t.usage().used_bytes, 0U);
  EXPECT_EQ(r.events.stats().outstanding, 1U) << "the tier holds the event again";
  ASSERT_TRUE(t.validate());
  auto again = t.take_deferred(64_KiB, any, &after, &lane);  // and can be taken again
  ASSERT_TRUE(again);
  EXPECT_EQ(again->ptr, a->ptr);
  EXPECT_EQ(lane, copy);
  t.deallocate_after(*again, after, lane);
  ASSERT_EQ(r.be.synchronize_stream(copy), status::ok);
  EXPECT_EQ(t.reclaim_completed(), 64_KiB);
  EXPECT_EQ(r.events.stats().outstanding, 0U);
  ASSERT_TRUE(t.validate());
}

TEST(TierDeferred, PerStreamLanesAreNotBlockedByASlowStream)
{
  rig r{virtual_clock()};
  stream_handle slow{};
  stream_handle fast{};
  ASSERT_EQ(r.be.create_stream(&slow), status::ok);
  ASSERT_EQ(r.be.create_stream(&fast), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 1_MiB)};
  auto a = t.allocate(64_KiB);
  auto b = t.allocate(64_KiB);
  auto c = t.allocate(64_KiB);
  ASSERT_TRUE(a && b && c);
  event_handle const ea = busy_event(r, slow, 50'000);
  t.deallocate_after(*a, ea, slow);  // oldest, on the slow stream
  event_handle const eb = busy_event(r, fast, 1'000);
  t.deallocate_after(*b, eb, fast);
  event_handle const ec = busy_event(r, fast, 1'000);  // later on the same stream
  t.deallocate_after(*c, ec, fast);
  ASSERT_TRUE(t.validate());

  ASSERT_EQ(r.be.advance_to(*r.be.event_time(eb)), status::ok);
  EXPECT_EQ(t.reclaim_completed(), 64_KiB);  // b only: c's event is later on its stream
  ASSERT_TRUE(t.validate());
  ASSERT_EQ(r.be.advance_to(*r.be.event_time(ec)), status::ok);
  EXPECT_EQ(t.reclaim_completed(), 64_KiB);  // c, though a (older) is still pending
  EXPECT_EQ(t.usage().deferred_bytes, 64_KiB);
  ASSERT_TRUE(t.validate());

  std::size_t reclaimed = 0;
  EXPECT_EQ(t.reclaim_oldest_blocking(&reclaimed), status::ok);
  EXPECT_EQ(reclaimed, 64_KiB);
  EXPECT_EQ(r.be.now(), *r.be.event_time(ea));  // it waited for a's event
  EXPECT_EQ(t.usage().deferred_bytes, 0U);
  EXPECT_EQ(t.reclaim_oldest_blocking(&reclaimed), status::ok);  // nothing left: no-op
  EXPECT_EQ(reclaimed, 0U);
  EXPECT_EQ(r.events.stats().outstanding, 0U);
  ASSERT_TRUE(t.validate());
}

TEST(TierDeferred, ReclaimOldestBlockingTakesTheOldestFirst)
{
  rig r{virtual_clock()};
  stream_handle s1{};
  stream_handle s2{};
  ASSERT_EQ(r.be.create_stream(&s1), status::ok);
  ASSERT_EQ(r.be.create_stream(&s2), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 128_KiB, 128_KiB)};
  auto a = t.allocate(64_KiB);
  auto b = t.allocate(64_KiB);
  ASSERT_TRUE(a && b);
  event_handle const ea = busy_event(r, s1, 3'000);
  t.deallocate_after(*a, ea, s1);
  event_handle const eb = busy_event(r, s2, 9'000);
  t.deallocate_after(*b, eb, s2);
  EXPECT_FALSE(t.allocate(64_KiB));
  std::size_t reclaimed = 0;
  ASSERT_EQ(t.reclaim_oldest_blocking(&reclaimed), status::ok);
  EXPECT_EQ(reclaimed, 64_KiB);
  EXPECT_EQ(r.be.now(), *r.be.event_time(ea));
  auto c = t.allocate(64_KiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->ptr, a->ptr);
  EXPECT_EQ(t.usage().deferred_bytes, 64_KiB);  // b still waits
  ASSERT_TRUE(t.validate());
}

TEST(TierDeferred, NullEventFreesAtOnceAndForeignEventIsRejected)
{
  rig r{virtual_clock()};
  tier t{r.be, r.events, config(tier_kind::device, 128_KiB, 128_KiB)};
  auto a = t.allocate(64_KiB);
  ASSERT_TRUE(a);
  t.deallocate_after(*a, event_handle{}, {});
  EXPECT_EQ(t.usage().used_bytes, 0U);
  EXPECT_EQ(t.usage().deferred_bytes, 0U);
  auto b = t.allocate(64_KiB);
  ASSERT_TRUE(b);
  event_handle foreign{};
  ASSERT_EQ(r.be.create_event(&foreign), status::ok);
  EXPECT_THROW(t.deallocate_after(*b, foreign, {}), tierpool::logic_error);
  EXPECT_TRUE(t.owns(*b));  // unchanged; the caller keeps the event
  ASSERT_TRUE(t.validate());
  r.be.destroy_event(foreign);
  t.deallocate(*b);
  ASSERT_TRUE(t.validate());
}

TEST(TierDeferred, DestructorWaitsForPendingEventsAndLeaksNothing)
{
  rig r;  // wall clock: the compute really takes 20 ms
  stream_handle s{};
  ASSERT_EQ(r.be.create_stream(&s), status::ok);
  {
    tier t{r.be, r.events, config(tier_kind::pinned_host, 1_MiB, 256_KiB)};
    auto a = t.allocate(64_KiB);
    auto b = t.allocate(300_KiB);
    ASSERT_TRUE(a && b);
    auto const e = busy_event(r, s, 20'000'000);
    t.deallocate_after(*a, e, s);
    ASSERT_TRUE(t.validate());
    EXPECT_EQ(r.be.query_event(e), status::not_ready);
    // b is still live: the tier frees its chunk anyway.
  }
  EXPECT_EQ(r.be.live_allocations(), 0U);
  EXPECT_EQ(r.events.stats().outstanding, 0U);
  EXPECT_EQ(r.be.synchronize_stream(s), status::ok);
  r.be.destroy_stream(s);
}

TEST(TierDeferred, DestructorOnVirtualClockAdvancesToTheEvents)
{
  rig r{virtual_clock()};
  stream_handle s{};
  ASSERT_EQ(r.be.create_stream(&s), status::ok);
  tierpool::tick t_end = 0;
  {
    tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 256_KiB)};
    for (int i = 0; i < 6; ++i) {
      auto a = t.allocate(64_KiB);
      ASSERT_TRUE(a);
      auto const e = busy_event(r, s, 1'000);
      t_end = *r.be.event_time(e);
      t.deallocate_after(*a, e, s);
    }
    EXPECT_EQ(t.usage().deferred_count, 6U);
  }
  EXPECT_EQ(r.be.now(), t_end);
  EXPECT_EQ(r.be.live_allocations(), 0U);
  EXPECT_EQ(r.events.stats().outstanding, 0U);
}

// ---- growth details -------------------------------------------------------------------

TEST(TierGrowth, DedicatedChunkForLargeRequests)
{
  rig r;
  tier t{r.be, r.events, config(tier_kind::device, 4_MiB, 256_KiB)};
  tier_alloc_report rep;
  auto big = t.allocate(1_MiB + 1, 0, &rep);
  ASSERT_TRUE(big);
  EXPECT_TRUE(rep.grew);
  auto u = t.usage();
  EXPECT_EQ(u.reserved_bytes, 1_MiB + 256);  // exactly the request, rounded to the granule
  EXPECT_EQ(u.chunk_count, 1U);
  EXPECT_EQ(u.free_bytes, 0U);
  expect_inside_chunk(t, *big);
  auto small = t.allocate(1_KiB, 0, &rep);
  ASSERT_TRUE(small);
  EXPECT_TRUE(rep.grew);
  u = t.usage();
  EXPECT_EQ(u.reserved_bytes, 1_MiB + 256 + 256_KiB);  // a regular chunk
  EXPECT_EQ(u.chunk_count, 2U);
  EXPECT_NE(big->slot.region, small->slot.region);
  ASSERT_TRUE(t.validate());
}

TEST(TierGrowth, CapacityNotAMultipleOfTheChunk)
{
  rig r;
  tier t{r.be, r.events, config(tier_kind::host, 640_KiB, 256_KiB)};
  std::vector<block> blocks;
  while (auto b = t.allocate(64_KiB)) {
    blocks.push_back(*b);
    ASSERT_TRUE(t.validate());
  }
  EXPECT_EQ(blocks.size(), 10U);
  auto const u = t.usage();
  EXPECT_EQ(u.reserved_bytes, 640_KiB);
  EXPECT_EQ(u.chunk_count, 3U);  // 256 + 256 + 128 (the last one clipped to the budget)
  auto const chunks = t.chunk_ranges();
  ASSERT_EQ(chunks.size(), 3U);
  EXPECT_EQ(chunks[2].bytes, 128_KiB);
  tier_alloc_report rep;
  EXPECT_FALSE(t.allocate(1, 0, &rep));
  EXPECT_EQ(rep.result, tier_alloc_result::over_capacity);
  // Capacity that is not a multiple of the alignment is rounded down.
  tier t2{r.be, r.events, config(tier_kind::host, 1000, 256)};
  EXPECT_EQ(t2.config().capacity_bytes, 768U);
}

TEST(TierGrowth, InitialBytesAreReservedEagerly)
{
  rig r;
  tier_config c = config(tier_kind::device, 1_MiB, 256_KiB);
  c.initial_bytes = 600_KiB;
  tier t{r.be, r.events, c};
  auto const u = t.usage();
  EXPECT_EQ(u.reserved_bytes, 600_KiB);
  EXPECT_EQ(u.chunk_count, 1U);
  EXPECT_EQ(r.be.allocated_bytes(tier_kind::device), 600_KiB);
  tier_alloc_report rep;
  EXPECT_TRUE(t.allocate(500_KiB, 0, &rep));
  EXPECT_FALSE(rep.grew);
  ASSERT_TRUE(t.validate());
}

TEST(TierGrowth, InitialChunkFailureThrowsBackendError)
{
  rig r;
  r.be.set_faults({1, {{sim_call::allocate, 1, 0.0}}});
  tier_config c = config(tier_kind::device, 1_MiB, 256_KiB);
  c.initial_bytes = 256_KiB;
  try {
    tier t{r.be, r.events, c};
    FAIL() << "expected backend_error";
  } catch (tierpool::backend_error const& e) {
    EXPECT_EQ(e.code(), status::injected_fault);
  }
  EXPECT_EQ(r.be.live_allocations(), 0U);
}

TEST(TierGrowth, InjectedAllocateFaultLeavesTheTierValidAndUsable)
{
  rig r;
  tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 256_KiB)};
  ASSERT_TRUE(t.allocate(200_KiB));
  r.be.set_faults({1, {{sim_call::allocate, 1, 0.0}}});
  tier_alloc_report rep;
  EXPECT_FALSE(t.allocate(200_KiB, 0, &rep));  // needs a second chunk: its allocate fails
  EXPECT_EQ(rep.result, tier_alloc_result::backend_failed);
  EXPECT_EQ(rep.backend_status, status::injected_fault);
  auto u = t.usage();
  EXPECT_EQ(u.reserved_bytes, 256_KiB);
  EXPECT_EQ(u.chunk_count, 1U);
  EXPECT_EQ(u.grow_failure_count, 1U);
  ASSERT_TRUE(t.validate());
  EXPECT_TRUE(t.allocate(200_KiB, 0, &rep));  // the rule fired once; now it grows
  EXPECT_TRUE(rep.grew);
  ASSERT_TRUE(t.validate());
}

TEST(TierGrowth, RandomInjectedFaultsDuringChurn)
{
  rig r;
  tier t{r.be, r.events, config(tier_kind::host, 4_MiB, 128_KiB)};
  byte_io const io{r.be, tier_kind::host};
  r.be.set_faults({2024, {{sim_call::allocate, 0, 0.3}}});
  std::mt19937_64 rng{5};
  std::vector<tagged> live;
  std::uint64_t id = 1;
  int failures = 0;
  for (int step = 0; step < 3000; ++step) {
    if (!live.empty() && rng() % 2 == 0) {
      std::size_t const i = rng() % live.size();
      ASSERT_TRUE(io.intact(live[i]));
      t.deallocate(live[i].b);
      live[i] = live.back();
      live.pop_back();
      if (rng() % 16 == 0) {
        (void)t.release_unused_chunks();  // revivals go through the faulty allocate too
      }
    } else {
      tier_alloc_report rep;
      if (auto b = t.allocate(1 + rng() % 100_KiB, 0, &rep)) {
        live.push_back({*b, id++});
        io.fill(live.back());
      } else if (rep.result == tier_alloc_result::backend_failed) {
        EXPECT_EQ(rep.backend_status, status::injected_fault);
        ++failures;
      } else {
        EXPECT_EQ(rep.result, tier_alloc_result::over_capacity);
      }
    }
    ASSERT_TRUE(t.validate()) << step;
  }
  EXPECT_GT(failures, 0);
  EXPECT_EQ(t.usage().grow_failure_count, static_cast<std::uint64_t>(failures));
  for (auto const& x : live) {
    EXPECT_TRUE(io.intact(x));
  }
}

TEST(TierGrowth, BackendOutOfMemoryRetriesWithTheRequestAlone)
{
  sim_options o;
  o.device_bytes = 512_KiB + 128_KiB;
  rig r{o};
  tier t{r.be, r.events, config(tier_kind::device, 4_MiB, 256_KiB)};
  ASSERT_TRUE(t.allocate(256_KiB));
  ASSERT_TRUE(t.allocate(256_KiB));
  tier_alloc_report rep;
  auto b = t.allocate(64_KiB, 0, &rep);  // a 256 KiB chunk does not fit the device; 64 KiB does
  ASSERT_TRUE(b);
  EXPECT_TRUE(rep.grew);
  EXPECT_EQ(t.usage().reserved_bytes, 576_KiB);
  EXPECT_EQ(t.usage().grow_failure_count, 1U);
  EXPECT_FALSE(t.allocate(128_KiB, 0, &rep));
  EXPECT_EQ(rep.result, tier_alloc_result::backend_failed);
  EXPECT_EQ(rep.backend_status, status::out_of_memory);
  ASSERT_TRUE(t.validate());
}

TEST(TierGrowth, ReleaseUnusedChunksAndReviveThem)
{
  rig r;
  tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 256_KiB)};
  std::vector<block> blocks;
  for (int i = 0; i < 12; ++i) {  // 3 chunks
    auto b = t.allocate(64_KiB);
    ASSERT_TRUE(b);
    blocks.push_back(*b);
  }
  EXPECT_EQ(t.usage().chunk_count, 3U);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].slot.region != 1) {
      t.deallocate(blocks[i]);  // chunks 0 and 2 become entirely free
    }
  }
  ASSERT_TRUE(t.validate());
  EXPECT_EQ(t.release_unused_chunks(), 512_KiB);
  ASSERT_TRUE(t.validate());
  auto u = t.usage();
  EXPECT_EQ(u.reserved_bytes, 256_KiB);
  EXPECT_EQ(u.chunk_count, 1U);
  EXPECT_EQ(u.chunk_release_count, 2U);
  EXPECT_EQ(u.free_bytes, 0U);
  EXPECT_EQ(r.be.allocated_bytes(tier_kind::device), 256_KiB);
  EXPECT_EQ(t.release_unused_chunks(), 0U);
  tier_alloc_report rep;
  auto again = t.allocate(64_KiB, 0, &rep);  // revives a released chunk (no new region)
  ASSERT_TRUE(again);
  EXPECT_TRUE(rep.grew);
  EXPECT_EQ(t.chunk_ranges().size(), 3U);
  EXPECT_EQ(t.usage().chunk_count, 2U);
  expect_inside_chunk(t, *again);
  ASSERT_TRUE(t.validate());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].slot.region == 1) {
      t.deallocate(blocks[i]);
    }
  }
  t.deallocate(*again);
  EXPECT_EQ(t.release_unused_chunks(), 512_KiB);
  EXPECT_EQ(r.be.live_allocations(), 0U);
  ASSERT_TRUE(t.validate());
}

// ---- misuse ---------------------------------------------------------------------------

TEST(TierMisuse, DoubleForeignAndForgedFreesThrowAndChangeNothing)
{
  rig r;
  tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 256_KiB)};
  tier other{r.be, r.events, config(tier_kind::device, 1_MiB, 256_KiB)};
  auto a = t.allocate(4_KiB);
  auto b = t.allocate(4_KiB);
  auto o = other.allocate(4_KiB);
  ASSERT_TRUE(a && b && o);
  t.deallocate(*a);
  auto const before = t.usage();
  EXPECT_THROW(t.deallocate(*a), tierpool::logic_error);  // double free
  EXPECT_THROW(t.deallocate(*o), tierpool::logic_error);  // another tier's block
  block forged = *b;
  forged.ptr = static_cast<std::byte*>(forged.ptr) + 8_KiB;  // pointer outside its slot
  EXPECT_THROW(t.deallocate(forged), tierpool::logic_error);
  forged = *b;
  forged.bytes = 8_KiB;  // larger than its slot
  EXPECT_THROW(t.deallocate(forged), tierpool::logic_error);
  EXPECT_THROW((void)t.allocate(0), tierpool::logic_error);
  EXPECT_THROW((void)t.allocate(16, 3), tierpool::logic_error);
  auto const after = t.usage();
  EXPECT_EQ(before.used_bytes, after.used_bytes);
  EXPECT_EQ(before.allocation_count, after.allocation_count);
  EXPECT_TRUE(t.owns(*b));
  ASSERT_TRUE(t.validate());
  ASSERT_TRUE(other.validate());
  t.deallocate(*b);
  other.deallocate(*o);
}

TEST(TierMisuse, InvalidConfigThrows)
{
  rig r;
  auto make = [&](tier_config c) { tier t{r.be, r.events, std::move(c)}; };
  tier_config c = config(tier_kind::device, 1_MiB, 256_KiB);
  c.alignment = 512;  // above the sim backend's 256
  EXPECT_THROW(make(c), tierpool::logic_error);
  c.alignment = 96;
  EXPECT_THROW(make(c), tierpool::logic_error);
  c = config(tier_kind::device, 100, 256_KiB);
  EXPECT_THROW(make(c), tierpool::logic_error);
  c = config(tier_kind::device, 1_MiB, 0);
  EXPECT_THROW(make(c), tierpool::logic_error);
  c = config(tier_kind::device, 1_MiB, 256_KiB);
  c.initial_bytes = 2_MiB;
  EXPECT_THROW(make(c), tierpool::logic_error);
  sim_backend other;
  event_pool other_events{other};
  EXPECT_THROW((tier{r.be, other_events, config(tier_kind::device, 1_MiB, 256_KiB)}), tierpool::logic_error);
  EXPECT_EQ(r.be.live_allocations(), 0U);
}

// Four 64 KiB blocks filling a 256 KiB tier, in address order (empty if the tier cannot).
std::vector<block> four_blocks(tier& t)
{
  std::vector<block> v;
  for (int i = 0; i < 4; ++i) {
    auto b = t.allocate(64_KiB);
    if (!b) { return {}; }
    v.push_back(*b);
  }
  std::sort(v.begin(), v.end(), [](block const& x, block const& y) { return addr(x.ptr) < addr(y.ptr); });
  return v;
}

// Note [Merging deferred blocks]: no single deferred block holds the request, but two of
// them with the free block between them do. The tier hands them on as one block with both
// pending events, without waiting; deferred_run_fits says so first.
TEST(TierDeferred, TakeDeferredSpanMergesDeferredAndFreeBlocksWithoutWaiting)
{
  rig r{virtual_clock()};
  stream_handle s1{};
  stream_handle s2{};
  ASSERT_EQ(r.be.create_stream(&s1), status::ok);
  ASSERT_EQ(r.be.create_stream(&s2), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 256_KiB, 256_KiB)};
  std::vector<block> const v = four_blocks(t);
  ASSERT_EQ(v.size(), 4U);
  event_handle const e0 = busy_event(r, s1, 10'000);
  t.deallocate_after(v[0], e0, s1);
  t.deallocate(v[1]);  // free now
  event_handle const e2 = busy_event(r, s2, 20'000);
  t.deallocate_after(v[2], e2, s2);  // v[3] stays live
  auto any = [](stream_handle) { return true; };
  event_handle after{};
  EXPECT_FALSE(t.allocate(192_KiB, 0, nullptr, tier_grow::allow));
  EXPECT_FALSE(t.take_deferred(192_KiB, any, &after)) << "no single block is large enough";
  EXPECT_TRUE(t.deferred_run_fits(192_KiB));
  EXPECT_FALSE(t.deferred_run_fits(256_KiB)) << "v[3] is live";

  tier::deferred_span sp;
  auto const only_s1 = [&](stream_handle s) { return s == s1; };
  EXPECT_FALSE(t.take_deferred_span(192_KiB, only_s1, &sp)) << "v[2] is on a lane not allowed";
  EXPECT_EQ(sp.count, 0U);
  EXPECT_FALSE(t.take_deferred_span(200_KiB, any, &sp)) << "more than the run holds";
  auto got = t.take_deferred_span(192_KiB, any, &sp);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->ptr, v[0].ptr);
  EXPECT_EQ(got->bytes, 192_KiB);
  EXPECT_EQ(got->slot.size, 192_KiB);
  ASSERT_EQ(sp.count, 2U);
  std::vector<event_handle> evs{sp.events[0], sp.events[1]};
  EXPECT_THAT(evs, ::testing::UnorderedElementsAre(e0, e2));
  EXPECT_FALSE(sp.borrowed[0] || sp.borrowed[1]);
  EXPECT_EQ(r.be.query_event(e2), status::not_ready) << "handed out without waiting";
  EXPECT_EQ(r.be.now(), 0U) << "the host did not wait";
  EXPECT_TRUE(t.owns(*got));
  EXPECT_EQ(t.usage().deferred_bytes, 0U);
  EXPECT_EQ(t.usage().used_bytes, 256_KiB);
  EXPECT_EQ(t.usage().allocation_count, 2U);
  ASSERT_TRUE(t.validate());
  // The caller owns both events now.
  r.events.release(e0);
  r.events.release(e2);
  t.deallocate(*got);
  t.deallocate(v[3]);
  EXPECT_EQ(r.events.stats().outstanding, 0U);
  ASSERT_TRUE(t.validate());
}

// Note [A failed span search is remembered]: a search that found no window answers the
// next ones for no fewer bytes over the same lanes while nothing changes; a smaller request,
// other lanes or any change of the tier search again.
TEST(TierDeferred, AFailedSpanSearchIsRememberedUntilTheTierChanges)
{
  rig r{virtual_clock()};
  stream_handle s1{};
  ASSERT_EQ(r.be.create_stream(&s1), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 256_KiB, 256_KiB)};
  std::vector<block> const v = four_blocks(t);
  ASSERT_EQ(v.size(), 4U);
  event_handle const e0 = busy_event(r, s1, 10'000);
  t.deallocate_after(v[0], e0, s1);
  event_handle const e2 = busy_event(r, s1, 20'000);
  t.deallocate_after(v[2], e2, s1);  // v[1] and v[3] live: no run of two blocks
  auto any = [](stream_handle) { return true; };
  auto none = [](stream_handle) { return false; };
  tier::deferred_span sp;
  EXPECT_FALSE(t.take_deferred_span(128_KiB, any, &sp));
  EXPECT_EQ(t.span_searches_remembered(), 0U);
  EXPECT_FALSE(t.take_deferred_span(128_KiB, any, &sp));
  EXPECT_FALSE(t.take_deferred_span(192_KiB, any, &sp));
  EXPECT_EQ(t.span_searches_remembered(), 2U) << "nothing changed: no window then, none now";
  EXPECT_FALSE(t.take_deferred_span(128_KiB, none, &sp));
  EXPECT_EQ(t.span_searches_remembered(), 2U) << "other lanes: searched again";
  EXPECT_FALSE(t.take_deferred_span(128_KiB, any, &sp));
  EXPECT_EQ(t.span_searches_remembered(), 2U) << "the lanes of the last search differ: searched again";
  t.deallocate(v[1]);  // v[0], v[1] free now, v[2]: a run of 192 KiB
  auto got = t.take_deferred_span(192_KiB, any, &sp);
  ASSERT_TRUE(got) << "the tier changed: searched again, and the window is there";
  EXPECT_EQ(got->ptr, v[0].ptr);
  EXPECT_EQ(t.span_searches_remembered(), 2U);
  for (std::size_t k = 0; k < sp.count; ++k) { r.events.release(sp.events[k]); }
  t.deallocate(*got);
  t.deallocate(v[3]);
  EXPECT_EQ(r.events.stats().outstanding, 0U);
  ASSERT_TRUE(t.validate());
}

// A deferred block larger than the request is split: the head is handed on, the tail stays
// deferred behind the same event, which the caller only borrows (the tier still frees the
// tail when it completes, and gives the event back then).
TEST(TierDeferred, TakeDeferredSpanSplitsALargerBlockAndLendsItsEvent)
{
  rig r{virtual_clock()};
  stream_handle s{};
  ASSERT_EQ(r.be.create_stream(&s), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 256_KiB, 256_KiB)};
  auto big = t.allocate(256_KiB);
  ASSERT_TRUE(big);
  event_handle const e = busy_event(r, s, 10'000);
  t.deallocate_after(*big, e, s);
  auto any = [](stream_handle) { return true; };
  event_handle after{};
  EXPECT_FALSE(t.take_deferred(64_KiB, any, &after)) << "wastes more than a quarter";
  tier::deferred_span sp;
  auto got = t.take_deferred_span(64_KiB, any, &sp);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->ptr, big->ptr);
  EXPECT_EQ(got->slot.size, 64_KiB) << "no waste";
  ASSERT_EQ(sp.count, 1U);
  EXPECT_EQ(sp.events[0], e);
  EXPECT_TRUE(sp.borrowed[0]);
  EXPECT_EQ(t.usage().deferred_bytes, 192_KiB);
  EXPECT_EQ(t.usage().deferred_count, 1U);
  ASSERT_TRUE(t.validate());
  // Another head of the tail: the same event, borrowed again.
  auto got2 = t.take_deferred_span(64_KiB, any, &sp);
  ASSERT_TRUE(got2);
  EXPECT_EQ(addr(got2->ptr), addr(big->ptr) + 64_KiB);
  EXPECT_TRUE(sp.borrowed[0]);
  EXPECT_EQ(t.usage().deferred_bytes, 128_KiB);
  ASSERT_TRUE(t.validate());
  EXPECT_EQ(t.reclaim_completed(), 0U) << "not complete yet";
  ASSERT_EQ(r.be.synchronize_event(e), status::ok);
  EXPECT_EQ(t.reclaim_completed(), 128_KiB) << "the tail, once its event completed";
  EXPECT_EQ(r.events.stats().outstanding, 0U) << "the tier gave the event back with the tail";
  t.deallocate(*got);
  t.deallocate(*got2);
  EXPECT_EQ(t.usage().used_bytes, 0U);
  ASSERT_TRUE(t.validate());
}

// Scattered deferred bytes are no reason to wait: no run of them holds the request.
TEST(TierDeferred, DeferredRunFitsNeedsContiguity)
{
  rig r{virtual_clock()};
  stream_handle s{};
  ASSERT_EQ(r.be.create_stream(&s), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 256_KiB, 256_KiB)};
  std::vector<block> const v = four_blocks(t);
  ASSERT_EQ(v.size(), 4U);
  EXPECT_FALSE(t.deferred_run_fits(64_KiB)) << "nothing deferred";
  t.deallocate_after(v[0], busy_event(r, s, 1'000), s);
  t.deallocate_after(v[2], busy_event(r, s, 1'000), s);
  EXPECT_TRUE(t.deferred_run_fits(64_KiB));
  EXPECT_FALSE(t.deferred_run_fits(128_KiB)) << "128 KiB deferred, in two places";
  tier::deferred_span sp;
  EXPECT_FALSE(t.take_deferred_span(128_KiB, [](stream_handle) { return true; }, &sp));
  ASSERT_EQ(r.be.synchronize_stream(s), status::ok);
  EXPECT_EQ(t.reclaim_completed(), 128_KiB);
  t.deallocate(v[1]);
  t.deallocate(v[3]);
  ASSERT_TRUE(t.validate());
}

// A deferred block smaller than the request with enough free space after it: the block
// starts at the deferred block (the window's low end), not before the chunk.
TEST(TierDeferred, TakeDeferredSpanUsesTheFreeSpaceAfterASmallBlock)
{
  rig r{virtual_clock()};
  stream_handle s{};
  ASSERT_EQ(r.be.create_stream(&s), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 256_KiB, 256_KiB)};
  std::vector<block> const v = four_blocks(t);
  ASSERT_EQ(v.size(), 4U);
  event_handle const e = busy_event(r, s, 1'000);
  t.deallocate_after(v[0], e, s);
  t.deallocate(v[1]);
  t.deallocate(v[2]);  // 128 KiB free after v[0]; v[3] live
  tier::deferred_span sp;
  auto got = t.take_deferred_span(192_KiB, [](stream_handle) { return true; }, &sp);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->ptr, v[0].ptr);
  EXPECT_EQ(got->slot.size, 192_KiB);
  ASSERT_EQ(sp.count, 1U);
  EXPECT_EQ(sp.events[0], e);
  EXPECT_FALSE(sp.borrowed[0]);
  ASSERT_TRUE(t.validate());
  r.events.release(e);
  t.deallocate(*got);
  t.deallocate(v[3]);
  EXPECT_EQ(r.events.stats().outstanding, 0U);
  ASSERT_TRUE(t.validate());
}

// Random allocations, frees, deferred frees on two streams, merged reuses of any size and
// reclaims: after every step the tier validates, every block the test holds is live in the
// tier's layout and overlaps no free or deferred block, and the events balance at the end.
TEST(TierDeferred, TakeDeferredSpanKeepsTheLayoutSoundUnderRandomUse)
{
  rig r{virtual_clock()};
  stream_handle s[2]{};
  ASSERT_EQ(r.be.create_stream(&s[0]), status::ok);
  ASSERT_EQ(r.be.create_stream(&s[1]), status::ok);
  tier t{r.be, r.events, config(tier_kind::device, 1_MiB, 1_MiB)};
  std::mt19937_64 rng{7};
  struct held_block {
    block b;
    std::vector<event_handle> owned;  // events handed over with it (released when freed)
  };
  std::vector<held_block> held;
  auto any = [](stream_handle) { return true; };
  std::size_t merges = 0;
  std::size_t splits = 0;
  for (int step = 0; step < 4000; ++step) {
    std::size_t const bytes = (1 + rng() % 48) * 4_KiB;
    switch (rng() % 6) {
      case 0:
      case 1:
        if (auto b = t.allocate(bytes)) { held.push_back({*b, {}}); }
        break;
      case 2:
      case 3: {  // free one: at once (its events done) or behind new work on a stream
        if (held.empty()) { break; }
        std::size_t const i = rng() % held.size();
        for (event_handle& e : held[i].owned) {
          ASSERT_EQ(r.be.synchronize_event(e), status::ok);
          r.events.release(e);
        }
        if (rng() % 3 == 0) {
          t.deallocate(held[i].b);
        } else {
          stream_handle const on = s[rng() % 2];
          t.deallocate_after(held[i].b, busy_event(r, on, 1 + rng() % 5'000), on);
        }
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      case 4: {
        tier::deferred_span sp;
        if (auto b = t.take_deferred_span(bytes, any, &sp)) {
          ASSERT_GE(sp.count, 1U);
          ++merges;
          held_block h{*b, {}};
          for (std::size_t j = 0; j < sp.count; ++j) {
            if (sp.borrowed[j]) {
              ++splits;
            } else {
              h.owned.push_back(sp.events[j]);
            }
          }
          held.push_back(std::move(h));
        } else {
          EXPECT_EQ(sp.count, 0U);
        }
        break;
      }
      default:
        ASSERT_EQ(r.be.synchronize_stream(s[rng() % 2]), status::ok);
        (void)t.reclaim_completed();
        break;
    }
    ASSERT_TRUE(t.validate()) << "step " << step;
    std::vector<tier::block_view> layout;
    t.for_each_block([&](tier::block_view const& v) { layout.push_back(v); });
    for (held_block const& h : held) {
      std::uint64_t const lo = h.b.slot.offset;
      std::uint64_t const hi = lo + h.b.slot.size;
      bool live = false;
      for (tier::block_view const& v : layout) {
        if (v.offset + v.size <= lo || v.offset >= hi) { continue; }
        ASSERT_EQ(v.use, tier::block_use::live) << "step " << step << ": a held block overlaps a free or deferred one";
        live = live || (v.offset == lo && v.size == h.b.slot.size);
      }
      ASSERT_TRUE(live) << "step " << step;
    }
  }
  EXPECT_GT(merges, 100U);
  EXPECT_GT(splits, 10U);
  for (held_block& h : held) {
    for (event_handle& e : h.owned) {
      ASSERT_EQ(r.be.synchronize_event(e), status::ok);
      r.events.release(e);
    }
    t.deallocate(h.b);
  }
  ASSERT_EQ(r.be.synchronize_stream(s[0]), status::ok);
  ASSERT_EQ(r.be.synchronize_stream(s[1]), status::ok);
  (void)t.reclaim_completed();
  EXPECT_EQ(t.usage().used_bytes, 0U);
  EXPECT_EQ(t.usage().deferred_bytes, 0U);
  EXPECT_EQ(r.events.stats().outstanding, 0U);
  ASSERT_TRUE(t.validate());
}

}  // namespace

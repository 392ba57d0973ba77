// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// Unit tests of the event recycling cache (runtime/backends/event_pool.hpp) on the sim
// backend: reuse, the cache bound, misuse, failure of create_event, concurrency.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/error.hpp>

#include "backends/event_pool.hpp"
#include "streams/stream_registry.hpp"

namespace {

using tierpool::event_handle;
using tierpool::sim_backend;
using tierpool::sim_call;
using tierpool::status;
using tierpool::detail::event_pool;

// created == destroyed + outstanding + cached
void expect_balanced(event_pool const& p)
{
  auto const s = p.stats();
  EXPECT_EQ(s.created, s.destroyed + s.outstanding + s.cached);
  EXPECT_LE(s.cached, p.max_cached());
}

TEST(EventPool, ReusesReleasedEvents)
{
  sim_backend be;
  event_pool pool{be, 4};
  event_handle a{};
  ASSERT_EQ(pool.acquire(&a), status::ok);
  EXPECT_TRUE(a);
  EXPECT_TRUE(pool.owns(a));
  EXPECT_EQ(be.record_event(a, {}), status::ok);
  pool.release(a);
  EXPECT_FALSE(pool.owns(a));
  event_handle b{};
  ASSERT_EQ(pool.acquire(&b), status::ok);
  EXPECT_EQ(a, b);  // served from the cache
  auto const s = pool.stats();
  EXPECT_EQ(s.created, 1U);
  EXPECT_EQ(s.reused, 1U);
  EXPECT_EQ(s.outstanding, 1U);
  EXPECT_EQ(be.call_count(sim_call::event), 2U);  // one create, one record: no second create
  pool.release(b);
  expect_balanced(pool);
}

// Note [A copy-in records its block's previous event again] (copy_engine.cpp): the
// registry's rerecord_or_sync records the caller's event again, taking none from the pool,
// and the event then completes with the new record (a wait enqueued before keeps the old
// one); when the record fails the event goes back to the pool and the host waits instead.
TEST(StreamRegistry, RerecordKeepsTheEventAndTakesNoneFromThePool)
{
  tierpool::sim_options o;
  o.clock = tierpool::sim_clock_mode::virtual_clock;
  sim_backend be{o};
  event_pool pool{be, 4};
  tierpool::detail::stream_registry reg{be, pool};
  tierpool::stream_handle a{};
  tierpool::stream_handle b{};
  tierpool::stream_handle w{};
  ASSERT_EQ(be.create_stream(&a, 0), status::ok);
  ASSERT_EQ(be.create_stream(&b, 0), status::ok);
  ASSERT_EQ(be.create_stream(&w, 0), status::ok);
  ASSERT_EQ(be.compute_async(a, 1'000), status::ok);
  event_handle const e = reg.record_or_sync(a);  // completes at 1 us
  ASSERT_TRUE(e);
  ASSERT_EQ(be.stream_wait_event(w, e), status::ok);  // captures the record at 1 us
  ASSERT_EQ(be.stream_wait_event(b, e), status::ok);
  ASSERT_EQ(be.compute_async(b, 1'000'000), status::ok);  // b: until 1.001 ms
  auto const before = pool.stats();
  event_handle const again = reg.rerecord_or_sync(b, e);
  EXPECT_EQ(again, e);
  auto const after = pool.stats();
  EXPECT_EQ(after.created, before.created);
  EXPECT_EQ(after.reused, before.reused);
  EXPECT_EQ(after.outstanding, before.outstanding);
  EXPECT_TRUE(pool.owns(again));
  EXPECT_EQ(be.stream_tail(w).value_or(0), 1'000U) << "a wait enqueued before keeps the old record";
  ASSERT_EQ(be.advance_to(1'000), status::ok);
  EXPECT_EQ(be.query_event(again), status::not_ready) << "the event follows its new record";
  ASSERT_EQ(be.advance_to(1'001'000), status::ok);
  EXPECT_EQ(be.query_event(again), status::ok);

  // A failed record: the event goes back to the pool, the host waits for the stream.
  ASSERT_EQ(be.compute_async(b, 1'000'000), status::ok);  // b: until 2.001 ms
  be.set_faults(tierpool::sim_fault_options{.seed = 0, .rules = {tierpool::sim_fault_rule{.kind = sim_call::event, .nth = 1}}});
  event_handle const none = reg.rerecord_or_sync(b, again);
  be.set_faults({});
  EXPECT_FALSE(none);
  EXPECT_FALSE(pool.owns(again));
  EXPECT_EQ(pool.stats().outstanding, before.outstanding - 1);
  EXPECT_GE(be.now(), 2'001'000U);
  expect_balanced(pool);
  be.destroy_stream(a);
  be.destroy_stream(b);
  be.destroy_stream(w);
}

TEST(EventPool, CacheIsBounded)
{
  sim_backend be;
  event_pool pool{be, 2};
  std::vector<event_handle> evs(5);
  for (auto& e : evs) {
    ASSERT_EQ(pool.acquire(&e), status::ok);
  }
  for (auto const& e : evs) {
    pool.release(e);
  }
  auto const s = pool.stats();
  EXPECT_EQ(s.created, 5U);
  EXPECT_EQ(s.cached, 2U);
  EXPECT_EQ(s.destroyed, 3U);
  EXPECT_EQ(s.outstanding, 0U);
  expect_balanced(pool);
}

TEST(EventPool, ZeroCacheDestroysOnRelease)
{
  sim_backend be;
  event_pool pool{be, 0};
  event_handle e{};
  ASSERT_EQ(pool.acquire(&e), status::ok);
  pool.release(e);
  EXPECT_EQ(pool.stats().destroyed, 1U);
  EXPECT_EQ(be.query_event(e), status::invalid_value);  // really destroyed
}

TEST(EventPool, MisuseIsDetectedAndHarmless)
{
  sim_backend be;
  event_pool pool{be, 4};
  EXPECT_EQ(pool.acquire(nullptr), status::invalid_value);
  event_handle e{};
  ASSERT_EQ(pool.acquire(&e), status::ok);
  pool.release(e);
  EXPECT_THROW(pool.release(e), tierpool::logic_error);  // double release
  event_handle foreign{};
  ASSERT_EQ(be.create_event(&foreign), status::ok);
  EXPECT_THROW(pool.release(foreign), tierpool::logic_error);
  EXPECT_FALSE(pool.try_release(foreign));
  EXPECT_TRUE(pool.try_release(event_handle{}));  // null: no-op
  pool.release(event_handle{});
  auto const s = pool.stats();
  EXPECT_EQ(s.cached, 1U);
  EXPECT_EQ(s.outstanding, 0U);
  expect_balanced(pool);
  be.destroy_event(foreign);
}

TEST(EventPool, CreateFailureSurfacesAsStatusAndLeaksNothing)
{
  sim_backend be;
  std::vector<event_handle> seen;
  {
    event_pool pool{be, 4};
    be.set_faults({42, {{sim_call::event, 2, 0.0}}});  // fail the 2nd create
    event_handle a{};
    ASSERT_EQ(pool.acquire(&a), status::ok);
    event_handle b{0xDEAD};
    EXPECT_EQ(pool.acquire(&b), status::injected_fault);
    EXPECT_EQ(b.value, 0xDEADU);  // untouched on failure
    auto const s = pool.stats();
    EXPECT_EQ(s.create_failures, 1U);
    EXPECT_EQ(s.outstanding, 1U);
    EXPECT_EQ(s.created, 1U);
    expect_balanced(pool);
    // Probabilistic failures: every acquire either succeeds (and is tracked) or fails cleanly.
    be.set_faults({7, {{sim_call::event, 0, 0.5}}});
    std::vector<event_handle> held;
    int failures = 0;
    for (int i = 0; i < 200; ++i) {
      event_handle e{};
      status const st = pool.acquire(&e);
      if (st == status::ok) {
        held.push_back(e);
      } else {
        EXPECT_EQ(st, status::injected_fault);
        ++failures;
      }
    }
    EXPECT_GT(failures, 0);
    EXPECT_EQ(pool.stats().outstanding, held.size() + 1);
    expect_balanced(pool);
    be.clear_faults();
    for (std::size_t i = 0; i < held.size(); i += 2) {
      pool.release(held[i]);  // release half; the destructor takes care of the rest
    }
    pool.release(a);
    expect_balanced(pool);
    seen = held;
    seen.push_back(a);
  }
  // Every event the pool created was destroyed (cached, released or still held).
  for (auto const& e : seen) {
    EXPECT_EQ(be.query_event(e), status::invalid_value);
  }
}

TEST(EventPool, DestructorDestroysCachedAndOutstanding)
{
  sim_backend be;
  event_handle cached{};
  event_handle outstanding{};
  {
    event_pool pool{be, 4};
    ASSERT_EQ(pool.acquire(&cached), status::ok);
    ASSERT_EQ(pool.acquire(&outstanding), status::ok);
    pool.release(cached);
  }
  EXPECT_EQ(be.query_event(cached), status::invalid_value);
  EXPECT_EQ(be.query_event(outstanding), status::invalid_value);
}

TEST(EventPool, ConcurrentAcquireRelease)
{
  sim_backend be;
  event_pool pool{be, 8};
  constexpr int threads = 8;
  constexpr int rounds = 2000;
  std::atomic<int> errors{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      std::vector<event_handle> mine;
      for (int i = 0; i < rounds; ++i) {
        event_handle e{};
        if (pool.acquire(&e) != status::ok || !e) {
          ++errors;
          continue;
        }
        if (std::find(mine.begin(), mine.end(), e) != mine.end()) {
          ++errors;  // handed out twice at once
        }
        mine.push_back(e);
        if (mine.size() > 3 || (i % 3) == 0) {
          for (auto const& h : mine) {
            if (!pool.try_release(h)) {
              ++errors;
            }
          }
          mine.clear();
        }
      }
      for (auto const& h : mine) {
        if (!pool.try_release(h)) {
          ++errors;
        }
      }
    });
  }
  for (auto& w : workers) {
    w.join();
  }
  EXPECT_EQ(errors.load(), 0);
  auto const s = pool.stats();
  EXPECT_EQ(s.outstanding, 0U);
  EXPECT_GT(s.reused, 0U);
  EXPECT_EQ(s.created + s.reused, static_cast<std::uint64_t>(threads) * rounds);
  expect_balanced(pool);
}

}  // namespace

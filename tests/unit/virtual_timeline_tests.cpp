// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// Unit tests of the virtual timeline's slot tables (Note [Handles index a slot table] in
// runtime/backends/sim/virtual_timeline.cpp), directly and through sim_backend: a
// destroyed stream or event handle stays invalid after its slot is reused (generations),
// a reused slot starts fresh, a double destroy does not hand a slot out twice, the slot
// limit (exercised on the stream table, 2^16 slots; the event table's 2^24 would take
// ~0.5 GiB), and lock-free has_event / query_event / has_stream from reader threads while
// a writer creates, records and destroys (meant for TSan too).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/error.hpp>

#include "backends/sim/sim_timeline.hpp"

namespace {

using tierpool::event_handle;
using tierpool::link_model;
using tierpool::sim_backend;
using tierpool::sim_clock_mode;
using tierpool::sim_link;
using tierpool::sim_links;
using tierpool::sim_options;
using tierpool::status;
using tierpool::stream_handle;
using tierpool::tick;
using tierpool::detail::make_virtual_timeline;
using tierpool::detail::sim_timeline;
using tierpool::detail::virtual_timeline_ops;

// Handle layout (sim_timeline.hpp, virtual_timeline.cpp): tag and device in the low bytes,
// then the handle's number: the slot (SlotBits), then the slot's generation.
constexpr unsigned kEventSlotBits = 24;
constexpr unsigned kStreamSlotBits = 16;
constexpr std::uint64_t slot_of(std::uintptr_t h, unsigned bits)
{
  return tierpool::detail::handle_number(h) & ((std::uint64_t{1} << bits) - 1);
}
constexpr std::uint64_t gen_of(std::uintptr_t h, unsigned bits) { return tierpool::detail::handle_number(h) >> bits; }

std::unique_ptr<sim_timeline> make_timeline()
{
  return make_virtual_timeline(sim_links::from_host_link(link_model::pcie4()));
}

virtual_timeline_ops& ops(sim_timeline& t) { return dynamic_cast<virtual_timeline_ops&>(t); }

event_handle new_event(sim_timeline& t)
{
  event_handle e{};
  EXPECT_EQ(t.create_event(&e), status::ok);
  return e;
}

stream_handle new_stream(sim_timeline& t)
{
  stream_handle s{};
  EXPECT_EQ(t.create_stream(&s), status::ok);
  return s;
}

TEST(VirtualTimelineSlots, DestroyedEventStaysInvalidAfterItsSlotIsReused)
{
  auto t = make_timeline();
  event_handle const e1 = new_event(*t);
  EXPECT_TRUE(t->has_event(e1));
  EXPECT_EQ(t->query_event(e1), status::ok);  // never recorded: complete
  EXPECT_TRUE(t->destroy_event(e1));
  EXPECT_FALSE(t->has_event(e1));
  event_handle const e2 = new_event(*t);
  ASSERT_EQ(slot_of(e2.value, kEventSlotBits), slot_of(e1.value, kEventSlotBits)) << "the freed slot is reused";
  EXPECT_EQ(gen_of(e2.value, kEventSlotBits), gen_of(e1.value, kEventSlotBits) + 1) << "with the next generation";
  EXPECT_NE(e2.value, e1.value);
  EXPECT_TRUE(t->has_event(e2));
  // Every call on the old handle is refused; none reaches the slot's new owner.
  EXPECT_FALSE(t->has_event(e1));
  EXPECT_EQ(t->query_event(e1), status::invalid_value);
  EXPECT_EQ(t->synchronize_event(e1), status::invalid_value);
  EXPECT_EQ(t->record_event(e1, stream_handle{}), status::invalid_value);
  EXPECT_EQ(t->stream_wait_event(stream_handle{}, e1), status::invalid_value);
  EXPECT_EQ(ops(*t).event_time(e1), std::nullopt);
  EXPECT_FALSE(t->destroy_event(e1));
  EXPECT_TRUE(t->has_event(e2)) << "a stale destroy must not destroy the new owner";
  EXPECT_EQ(t->query_event(e2), status::ok);
  // Handles of one kind are not handles of the other.
  EXPECT_FALSE(t->has_stream(stream_handle{e2.value}));
  EXPECT_FALSE(t->has_event(event_handle{0}));
}

// A double destroy (the second returns false) must not put the slot on the free list
// twice: two later creates would then share one slot, and the first would vanish.
TEST(VirtualTimelineSlots, DoubleDestroyDoesNotHandASlotOutTwice)
{
  auto t = make_timeline();
  event_handle const keep = new_event(*t);
  event_handle const e = new_event(*t);
  EXPECT_TRUE(t->destroy_event(e));
  EXPECT_FALSE(t->destroy_event(e));
  event_handle const a = new_event(*t);
  event_handle const b = new_event(*t);
  EXPECT_NE(slot_of(a.value, kEventSlotBits), slot_of(b.value, kEventSlotBits));
  EXPECT_TRUE(t->has_event(a));
  EXPECT_TRUE(t->has_event(b));
  EXPECT_TRUE(t->has_event(keep));
}

// A reused slot starts as a new event: never recorded, so complete, whatever time the
// slot's previous event was recorded at.
TEST(VirtualTimelineSlots, AReusedEventSlotStartsNeverRecorded)
{
  auto t = make_timeline();
  stream_handle const s = new_stream(*t);
  ASSERT_EQ(t->enqueue_compute(s, 5000), status::ok);
  event_handle const e1 = new_event(*t);
  ASSERT_EQ(t->record_event(e1, s), status::ok);
  EXPECT_EQ(ops(*t).event_time(e1), tick{5000});
  EXPECT_EQ(t->query_event(e1), status::not_ready);
  EXPECT_TRUE(t->destroy_event(e1));
  event_handle const e2 = new_event(*t);
  ASSERT_EQ(slot_of(e2.value, kEventSlotBits), slot_of(e1.value, kEventSlotBits));
  EXPECT_EQ(ops(*t).event_time(e2), tick{0});
  EXPECT_EQ(t->query_event(e2), status::ok);
  EXPECT_EQ(t->now(), tick{0}) << "nothing waited";
  // Streams likewise: a reused stream slot starts with an empty queue (tail 0).
  EXPECT_TRUE(t->destroy_stream(s));
  stream_handle const s2 = new_stream(*t);
  ASSERT_EQ(slot_of(s2.value, kStreamSlotBits), slot_of(s.value, kStreamSlotBits));
  EXPECT_EQ(ops(*t).stream_tail(s2), tick{0});
  EXPECT_EQ(ops(*t).stream_tail(s), std::nullopt);
}

TEST(VirtualTimelineSlots, DestroyedStreamStaysInvalidAfterItsSlotIsReused)
{
  auto t = make_timeline();
  stream_handle const s1 = new_stream(*t);
  EXPECT_TRUE(t->has_stream(s1));
  EXPECT_TRUE(t->destroy_stream(s1));
  EXPECT_FALSE(t->destroy_stream(s1));
  EXPECT_FALSE(t->destroy_stream(stream_handle{}));  // the default stream is never destroyed
  EXPECT_TRUE(t->has_stream(stream_handle{}));
  stream_handle const s2 = new_stream(*t);
  EXPECT_EQ(gen_of(s2.value, kStreamSlotBits), gen_of(s1.value, kStreamSlotBits) + 1);
  EXPECT_FALSE(t->has_stream(s1));
  EXPECT_EQ(t->enqueue_compute(s1, 10), status::invalid_value);
  EXPECT_EQ(t->synchronize_stream(s1), status::invalid_value);
  EXPECT_EQ(t->enqueue_transfer(s1, sim_link::h2d, 4096, {}), status::invalid_value);
  event_handle const e = new_event(*t);
  EXPECT_EQ(t->record_event(e, s1), status::invalid_value);
  EXPECT_EQ(t->stream_wait_event(s1, e), status::invalid_value);
  EXPECT_EQ(t->enqueue_compute(s2, 10), status::ok);
  EXPECT_EQ(ops(*t).stream_tail(s2), tick{10});
}

// Many creates and destroys in a seeded order: no handle value is ever handed out twice,
// every destroyed one stays invalid, every live one stays valid.
TEST(VirtualTimelineSlots, HandleValuesAreNeverReusedUnderChurn)
{
  auto t = make_timeline();
  std::mt19937_64 rng(99);
  std::set<std::uintptr_t> ever;
  std::vector<event_handle> live;
  std::vector<event_handle> dead;
  for (int op = 0; op < 20000; ++op) {
    if (live.empty() || rng() % 5 < 3) {
      event_handle const e = new_event(*t);
      ASSERT_TRUE(ever.insert(e.value).second) << "handle value reused at op " << op;
      live.push_back(e);
    } else {
      std::size_t const i = rng() % live.size();
      ASSERT_TRUE(t->destroy_event(live[i]));
      dead.push_back(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
  }
  for (event_handle e : live) { EXPECT_TRUE(t->has_event(e)); }
  for (event_handle e : dead) {
    EXPECT_FALSE(t->has_event(e));
    EXPECT_EQ(t->query_event(e), status::invalid_value);
  }
  // Slots are reused: the high-water mark is the peak of live events, not the creates.
  std::uint64_t max_slot = 0;
  for (std::uintptr_t v : ever) { max_slot = std::max(max_slot, slot_of(v, kEventSlotBits)); }
  EXPECT_LT(max_slot, ever.size() / 2);
}

// The slot limit, on the stream table (2^16 slots; the event table has the same code with
// 2^24): the next create fails with out_of_memory and changes nothing; a destroy makes
// room again, and the reused slot's old handle stays invalid.
TEST(VirtualTimelineSlots, StreamTableFullFailsWithOutOfMemoryUntilASlotIsFreed)
{
  auto t = make_timeline();
  std::vector<stream_handle> streams;
  streams.reserve(std::size_t{1} << kStreamSlotBits);
  for (std::size_t i = 0; i < (std::size_t{1} << kStreamSlotBits); ++i) {
    stream_handle s{};
    ASSERT_EQ(t->create_stream(&s), status::ok) << i;
    streams.push_back(s);
  }
  stream_handle none{};
  EXPECT_EQ(t->create_stream(&none), status::out_of_memory);
  EXPECT_EQ(none.value, 0U) << "untouched on failure";
  EXPECT_TRUE(t->has_stream(streams.front()));
  EXPECT_TRUE(t->has_stream(streams.back()));
  stream_handle const victim = streams[12345];
  EXPECT_TRUE(t->destroy_stream(victim));
  stream_handle s{};
  ASSERT_EQ(t->create_stream(&s), status::ok);
  EXPECT_EQ(slot_of(s.value, kStreamSlotBits), slot_of(victim.value, kStreamSlotBits));
  EXPECT_FALSE(t->has_stream(victim));
  EXPECT_TRUE(t->has_stream(s));
  EXPECT_EQ(t->create_stream(&none), status::out_of_memory);
}

// Through the public backend: a destroyed event is an unknown handle for every call, even
// after its slot went to a new event.
TEST(VirtualTimelineSlots, SimBackendRejectsADestroyedEventAfterSlotReuse)
{
  sim_options o;
  o.clock = sim_clock_mode::virtual_clock;
  sim_backend be{o};
  stream_handle s{};
  ASSERT_EQ(be.create_stream(&s), status::ok);
  event_handle e1{};
  ASSERT_EQ(be.create_event(&e1), status::ok);
  ASSERT_EQ(be.compute_async(s, 1000), status::ok);
  ASSERT_EQ(be.record_event(e1, s), status::ok);
  be.destroy_event(e1);
  event_handle e2{};
  ASSERT_EQ(be.create_event(&e2), status::ok);
  EXPECT_EQ(be.query_event(e1), status::invalid_value);
  EXPECT_EQ(be.synchronize_event(e1), status::invalid_value);
  EXPECT_EQ(be.record_event(e1, s), status::invalid_value);
  EXPECT_EQ(be.stream_wait_event(s, e1), status::invalid_value);
  EXPECT_EQ(be.event_time(e1), std::nullopt);
  EXPECT_EQ(be.query_event(e2), status::ok);
  EXPECT_EQ(be.event_time(e2), tick{0});
  EXPECT_EQ(be.now(), tick{0}) << "no call on the stale handle moved the clock";
  ASSERT_EQ(be.record_event(e2, s), status::ok);
  EXPECT_EQ(be.query_event(e2), status::not_ready);
  ASSERT_EQ(be.synchronize_event(e2), status::ok);
  EXPECT_EQ(be.now(), tick{1000});
  be.destroy_event(e2);
  be.destroy_stream(s);
}

// Readers check handles without the timeline's lock while a writer churns slots:
//  - events created before the readers start and never destroyed always read as live,
//    with a status of ok or not_ready (never invalid_value),
//  - an event or stream the writer destroyed before publishing it always reads as dead,
//    however often its slot has been reused since.
TEST(VirtualTimelineSlots, ConcurrentReadersWhileAWriterCreatesAndDestroys)
{
  auto t = make_timeline();
  stream_handle const work = new_stream(*t);
  std::vector<event_handle> permanent;
  for (int i = 0; i < 16; ++i) { permanent.push_back(new_event(*t)); }

  std::mutex dead_mtx;
  std::vector<std::uintptr_t> dead_events;
  std::vector<std::uintptr_t> dead_streams;
  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::atomic<std::uint64_t> checks{0};

  auto reader = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::uint64_t n = 0;
    while (!done.load(std::memory_order_acquire) || n < 2000) {
      event_handle const p = permanent[rng() % permanent.size()];
      status const st = t->query_event(p);
      if (!t->has_event(p) || (st != status::ok && st != status::not_ready)) { errors.fetch_add(1); }
      std::uintptr_t de = 0;
      std::uintptr_t ds = 0;
      {
        std::lock_guard lock(dead_mtx);
        if (!dead_events.empty()) { de = dead_events[rng() % dead_events.size()]; }
        if (!dead_streams.empty()) { ds = dead_streams[rng() % dead_streams.size()]; }
      }
      if (de != 0 && (t->has_event(event_handle{de}) || t->query_event(event_handle{de}) != status::invalid_value)) {
        errors.fetch_add(1);
      }
      if (ds != 0 && t->has_stream(stream_handle{ds})) { errors.fetch_add(1); }
      ++n;
    }
    checks.fetch_add(n);
  };
  std::vector<std::thread> readers;
  for (unsigned r = 0; r < 3; ++r) { readers.emplace_back(reader, r + 1); }

  {
    std::mt19937 rng(12345);
    std::vector<event_handle> live;
    std::vector<stream_handle> live_streams;
    for (int op = 0; op < 20000; ++op) {
      switch (rng() % 6) {
        case 0:
        case 1: {
          event_handle e{};
          if (t->create_event(&e) == status::ok) { live.push_back(e); }
          break;
        }
        case 2:
          if (!live.empty()) {
            std::size_t const i = rng() % live.size();
            event_handle const e = live[i];
            live[i] = live.back();
            live.pop_back();
            if (t->destroy_event(e)) {
              std::lock_guard lock(dead_mtx);
              dead_events.push_back(e.value);
            }
          }
          break;
        case 3: {  // move time and re-record a permanent event (its value changes under readers)
          (void)t->enqueue_compute(work, 1 + rng() % 100);
          (void)t->record_event(permanent[rng() % permanent.size()], work);
          if (rng() % 4 == 0) { ops(*t).advance_to(t->now() + rng() % 200); }
          break;
        }
        case 4: {
          stream_handle s{};
          if (t->create_stream(&s) == status::ok) { live_streams.push_back(s); }
          break;
        }
        default:
          if (!live_streams.empty()) {
            stream_handle const s = live_streams.back();
            live_streams.pop_back();
            if (t->destroy_stream(s)) {
              std::lock_guard lock(dead_mtx);
              dead_streams.push_back(s.value);
            }
          }
          break;
      }
    }
    for (event_handle e : live) { (void)t->destroy_event(e); }
    for (stream_handle s : live_streams) { (void)t->destroy_stream(s); }
  }
  done.store(true, std::memory_order_release);
  for (auto& r : readers) { r.join(); }
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(checks.load(), 6000U);
  for (event_handle p : permanent) { EXPECT_TRUE(t->has_event(p)); }
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// sim_backend_tests.cpp — the backend conformance suite instantiated for the sim backend
// in each memory × clock mode, then the sim-only behaviour: exact virtual-clock timings,
// link serialization and overlap, determinism, wall-clock throttling (lower bounds only),
// fault injection, phantom memory, link parsing and argument validation; several
// simulated devices, serialized host functions, no concurrent managed access, capture.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <tierpool/backends/sim_backend.hpp>

#include "conformance/backend_conformance.hpp"

namespace {

using namespace tierpool::literals;
using tierpool::copy_desc;
using tierpool::event_handle;
using tierpool::link_model;
using tierpool::sim_backend;
using tierpool::sim_call;
using tierpool::sim_clock_mode;
using tierpool::sim_link;
using tierpool::sim_links;
using tierpool::sim_host_costs;
using tierpool::sim_memory_mode;
using tierpool::sim_activity;
using tierpool::sim_span;
using tierpool::sim_span_kind;
using tierpool::summarize_activity;
using tierpool::sim_options;
using tierpool::status;
using tierpool::stream_handle;
using tierpool::tick;
using tierpool::tier_kind;

// ---- conformance instantiations ----

template <sim_memory_mode Memory, sim_clock_mode Clock, bool Throttled>
struct sim_factory {
  static bool available() { return true; }
  static std::unique_ptr<tierpool::backend> make()
  {
    sim_options o;
    o.memory = Memory;
    o.clock = Clock;
    if (Throttled) {
      o.links = sim_links::from_host_link(link_model::pcie5());
    }
    return tierpool::make_sim_backend(o);
  }
  static char const* name()
  {
    if (Memory == sim_memory_mode::real) {
      if (Clock == sim_clock_mode::wall) {
        return Throttled ? "RealWallPcie5" : "RealWall";
      }
      return "RealVirtual";
    }
    return Clock == sim_clock_mode::wall ? "PhantomWall" : "PhantomVirtual";
  }
};

using sim_real_wall = sim_factory<sim_memory_mode::real, sim_clock_mode::wall, false>;
using sim_real_wall_throttled = sim_factory<sim_memory_mode::real, sim_clock_mode::wall, true>;
using sim_real_virtual = sim_factory<sim_memory_mode::real, sim_clock_mode::virtual_clock, false>;
using sim_phantom_wall = sim_factory<sim_memory_mode::phantom, sim_clock_mode::wall, false>;
using sim_phantom_virtual = sim_factory<sim_memory_mode::phantom, sim_clock_mode::virtual_clock, false>;

struct sim_factory_names {
  template <class T>
  static std::string GetName(int /*index*/)
  {
    return T::name();
  }
};

using sim_factories =
  ::testing::Types<sim_real_wall, sim_real_wall_throttled, sim_real_virtual, sim_phantom_wall, sim_phantom_virtual>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Sim, BackendConformance, sim_factories, sim_factory_names);

namespace {

// ---- helpers ----

sim_options virtual_options(link_model h2d = {1e9, 1000}, link_model d2h = {1e9, 1000})
{
  sim_options o;
  o.clock = sim_clock_mode::virtual_clock;
  o.links = sim_links{h2d, d2h, link_model{1e9, 0}, link_model{1e9, 0}};
  return o;
}

struct buffers {
  buffers(sim_backend& be, std::size_t bytes) : be_(be), bytes_(bytes)
  {
    EXPECT_EQ(be.allocate(tier_kind::pinned_host, bytes, &host), status::ok);
    EXPECT_EQ(be.allocate(tier_kind::device, bytes, &dev), status::ok);
    EXPECT_EQ(be.allocate(tier_kind::device, bytes, &dev2), status::ok);
  }
  ~buffers()
  {
    be_.deallocate(tier_kind::pinned_host, host, bytes_);
    be_.deallocate(tier_kind::device, dev, bytes_);
    be_.deallocate(tier_kind::device, dev2, bytes_);
  }
  buffers(buffers const&) = delete;
  buffers& operator=(buffers const&) = delete;
  [[nodiscard]] copy_desc h2d(std::size_t n) const { return {dev, host, n, tier_kind::device, tier_kind::pinned_host}; }
  [[nodiscard]] copy_desc d2h(std::size_t n) const { return {host, dev2, n, tier_kind::pinned_host, tier_kind::device}; }
  [[nodiscard]] copy_desc d2d(std::size_t n) const { return {dev2, dev, n, tier_kind::device, tier_kind::device}; }

  sim_backend& be_;
  std::size_t bytes_;
  void* host{nullptr};
  void* dev{nullptr};
  void* dev2{nullptr};
};

stream_handle new_stream(sim_backend& be)
{
  stream_handle s{};
  EXPECT_EQ(be.create_stream(&s), status::ok);
  return s;
}

event_handle new_event(sim_backend& be)
{
  event_handle e{};
  EXPECT_EQ(be.create_event(&e), status::ok);
  return e;
}

/// Resident set size of this process in bytes (Linux).
std::size_t resident_bytes()
{
  std::ifstream f("/proc/self/statm");
  std::size_t pages_total = 0;
  std::size_t pages_resident = 0;
  f >> pages_total >> pages_resident;
  return pages_resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// ---- virtual clock ----

TEST(SimVirtualClock, CopyCompletesAtLatencyPlusBytesOverBandwidth)
{
  sim_backend be{virtual_options({1e9, 1000})};  // 1 B/ns, 1 us
  EXPECT_TRUE(be.caps().virtual_clock);
  buffers b(be, 64_KiB);
  stream_handle const s = new_stream(be);
  event_handle const e = new_event(be);
  EXPECT_EQ(be.now(), 0U);
  ASSERT_EQ(be.copy_async(b.h2d(4096), s), status::ok);
  ASSERT_EQ(be.record_event(e, s), status::ok);
  EXPECT_EQ(be.event_time(e), std::optional<tick>{1000 + 4096});
  EXPECT_EQ(be.stream_tail(s), std::optional<tick>{5096});
  EXPECT_EQ(be.query_event(e), status::not_ready);
  EXPECT_EQ(be.now(), 0U) << "enqueueing never moves the virtual clock";
  ASSERT_EQ(be.synchronize_event(e), status::ok);
  EXPECT_EQ(be.now(), 5096U);
  EXPECT_EQ(be.query_event(e), status::ok);

  // A copy enqueued later starts no earlier than now().
  ASSERT_EQ(be.advance_by(10'000), status::ok);
  EXPECT_EQ(be.now(), 15'096U);
  ASSERT_EQ(be.copy_async(b.h2d(1000), s), status::ok);
  EXPECT_EQ(be.stream_tail(s), std::optional<tick>{15'096 + 1000 + 1000});
  ASSERT_EQ(be.synchronize_stream(s), status::ok);
  EXPECT_EQ(be.now(), 17'096U);

  auto const st = be.link_stats(sim_link::h2d);
  EXPECT_EQ(st.copies, 2U);
  EXPECT_EQ(st.bytes, 5096U);
  EXPECT_EQ(st.busy_ns, 5096U + 2000U);
}

// Note [Host time per call]: each call of a kind with a cost moves now() by it before it
// takes effect; its work is then ready no earlier than that.
TEST(SimVirtualClock, HostCostsMoveTheClockBeforeEachCall)
{
  sim_options o = virtual_options({1e9, 1000});  // 1 B/ns, 1 us
  o.host_costs = sim_host_costs{.copy = 500, .event = 100, .compute = 2000, .host_func = 50};
  sim_backend be{o};
  buffers b(be, 64_KiB);
  stream_handle const s = new_stream(be);
  ASSERT_EQ(be.now(), 0U) << "allocate and create_stream cost nothing";
  event_handle const e = new_event(be);
  EXPECT_EQ(be.now(), 100U) << "create_event is an event call";
  ASSERT_EQ(be.copy_async(b.h2d(4096), s), status::ok);
  EXPECT_EQ(be.now(), 600U);
  EXPECT_EQ(be.stream_tail(s), std::optional<tick>{600 + 1000 + 4096}) << "the copy is ready once enqueued";
  ASSERT_EQ(be.compute_async(s, 10'000), status::ok);
  EXPECT_EQ(be.now(), 2600U);
  EXPECT_EQ(be.stream_tail(s), std::optional<tick>{5696 + 10'000}) << "a kernel waits for the stream, not the host";
  ASSERT_EQ(be.record_event(e, s), status::ok);
  ASSERT_EQ(be.stream_wait_event(s, e), status::ok);
  EXPECT_EQ(be.now(), 2800U);
  int ran = 0;
  ASSERT_EQ(be.launch_host_func(s, [](void* p) { ++*static_cast<int*>(p); }, &ran), status::ok);
  EXPECT_EQ(be.now(), 2850U);
  EXPECT_EQ(ran, 1);

  // A call that fails its checks costs nothing; query and synchronize are free.
  EXPECT_EQ(be.record_event(event_handle{}, s), status::invalid_value);
  EXPECT_EQ(be.copy_async(copy_desc{b.dev, b.host, 0, tier_kind::device, tier_kind::pinned_host}, s),
            status::invalid_value);
  EXPECT_EQ(be.query_event(e), status::not_ready);
  EXPECT_EQ(be.now(), 2850U);

  // As the host's time passes, work it enqueued completes: an event the host polls is
  // done once enough calls have been made.
  for (int i = 0; i < 26; ++i) { ASSERT_EQ(be.copy_async(b.d2h(1), new_stream(be)), status::ok); }
  EXPECT_EQ(be.now(), 2850U + 26 * 500);
  EXPECT_EQ(be.query_event(e), status::ok) << "the event's time, 15696, has passed";
  EXPECT_EQ(be.call_count(sim_call::copy), 27U);
  be.destroy_event(e);
}

TEST(SimVirtualClock, NoHostCostsLeaveTheClockStillAndAWallClockIgnoresThem)
{
  sim_backend be{virtual_options()};
  EXPECT_TRUE(be.caps().virtual_clock);
  buffers b(be, 64_KiB);
  stream_handle const s = new_stream(be);
  for (int i = 0; i < 8; ++i) { ASSERT_EQ(be.copy_async(b.h2d(64), s), status::ok); }
  EXPECT_EQ(be.now(), 0U);

  sim_options w;  // a wall clock: host costs are the host's own time, nothing is added
  w.host_costs.copy = 1'000'000'000;  // one second a copy would be seen at once
  sim_backend wall{w};
  buffers bw(wall, 64_KiB);
  stream_handle const ws = new_stream(wall);
  auto const t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(wall.copy_async(bw.h2d(64), ws), status::ok);
  ASSERT_EQ(wall.synchronize_stream(ws), status::ok);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
}

TEST(SimVirtualClock, TwoCopiesOnOneLinkSerialize)
{
  sim_backend be{virtual_options()};
  buffers b(be, 64_KiB);
  stream_handle const s1 = new_stream(be);
  stream_handle const s2 = new_stream(be);
  ASSERT_EQ(be.copy_async(b.h2d(4096), s1), status::ok);
  ASSERT_EQ(be.copy_async(b.h2d(4096), s2), status::ok);
  EXPECT_EQ(be.stream_tail(s1), std::optional<tick>{5096});
  EXPECT_EQ(be.stream_tail(s2), std::optional<tick>{2 * 5096}) << "second copy waits for the h2d link";
}

TEST(SimVirtualClock, CopiesOnTwoLinksOverlap)
{
  sim_backend be{virtual_options()};
  buffers b(be, 64_KiB);
  stream_handle const s1 = new_stream(be);
  stream_handle const s2 = new_stream(be);
  ASSERT_EQ(be.copy_async(b.h2d(4096), s1), status::ok);
  ASSERT_EQ(be.copy_async(b.d2h(4096), s2), status::ok);
  EXPECT_EQ(be.stream_tail(s1), std::optional<tick>{5096});
  EXPECT_EQ(be.stream_tail(s2), std::optional<tick>{5096}) << "h2d and d2h are separate links";
  // Same stream, different links: still in stream order.
  stream_handle const s3 = new_stream(be);
  ASSERT_EQ(be.copy_async(b.d2d(1000), s3), status::ok);  // d2d: 1 B/ns, no latency
  EXPECT_EQ(be.stream_tail(s3), std::optional<tick>{1000});
  ASSERT_EQ(be.compute_async(s3, 500), status::ok);
  EXPECT_EQ(be.stream_tail(s3), std::optional<tick>{1500});
}

TEST(SimVirtualClock, RecordedSpansAreTheCopiesAndKernelsWithTheirTimes)
{
  sim_options o = virtual_options({1e9, 1000}, {1e9, 1000});
  o.record_spans = true;
  sim_backend be{o};
  buffers b(be, 64_KiB);
  stream_handle const s1 = new_stream(be);
  stream_handle const s2 = new_stream(be);
  ASSERT_EQ(be.compute_async(s1, 10'000), status::ok);  // [0, 10000) kernel on s1
  ASSERT_EQ(be.copy_async(b.h2d(4096), s2), status::ok);  // [0, 5096) h2d, hidden behind the kernel
  ASSERT_EQ(be.copy_async(b.d2h(4096), s1), status::ok);  // [10000, 15096) d2h after the kernel: exposed
  ASSERT_EQ(be.compute_async(s1, 0), status::ok);         // an empty kernel is not a span
  std::vector<sim_span> const sp = be.spans();
  ASSERT_EQ(sp.size(), 3U);
  EXPECT_EQ(sp[0].kind, sim_span_kind::compute);
  EXPECT_EQ(sp[0].stream, s1.value);
  EXPECT_EQ(sp[0].start, 0U);
  EXPECT_EQ(sp[0].end, 10'000U);
  EXPECT_EQ(sp[1].kind, sim_span_kind::copy);
  EXPECT_EQ(sp[1].link, sim_link::h2d);
  EXPECT_EQ(sp[1].stream, s2.value);
  EXPECT_EQ(sp[1].bytes, 4096U);
  EXPECT_EQ(sp[1].end, 5096U);
  EXPECT_EQ(sp[2].link, sim_link::d2h);
  EXPECT_EQ(sp[2].start, 10'000U);
  EXPECT_EQ(sp[2].end, 15'096U);

  sim_activity const a = summarize_activity(sp, 20'000);
  EXPECT_EQ(a.total_ns(), 20'000U);
  EXPECT_EQ(a.ns[1 | 2], 5096U) << "kernel with a copy-in";
  EXPECT_EQ(a.ns[1], 10'000U - 5096U) << "kernel alone";
  EXPECT_EQ(a.ns[4], 5096U) << "write-back alone: exposed";
  EXPECT_EQ(a.ns[0], 20'000U - 15'096U) << "idle to the end";
  EXPECT_EQ(a.overlapped_ns(), 5096U);
  EXPECT_EQ(a.exposed_copy_ns(), 5096U);
  EXPECT_EQ(a.compute_ns(), 10'000U);
  // Cut at an end inside a span.
  sim_activity const cut = summarize_activity(sp, 12'000);
  EXPECT_EQ(cut.total_ns(), 12'000U);
  EXPECT_EQ(cut.ns[4], 2000U);
}

TEST(SimVirtualClock, OverlappingKernelsAndBothLinksCountOnce)
{
  // Kernels of two streams at once count as one "a kernel runs"; both links at once is
  // its own state.
  std::vector<sim_span> const sp = {
    {sim_span_kind::compute, sim_link::h2d, 1, 0, 100, 0},
    {sim_span_kind::compute, sim_link::h2d, 2, 50, 150, 0},
    {sim_span_kind::copy, sim_link::h2d, 3, 120, 300, 10},
    {sim_span_kind::copy, sim_link::d2h, 4, 200, 400, 10},
    {sim_span_kind::copy, sim_link::d2d, 5, 0, 1000, 10},  // not counted
  };
  sim_activity const a = summarize_activity(sp, 500);
  EXPECT_EQ(a.ns[1], 120U);      // [0, 120)
  EXPECT_EQ(a.ns[1 | 2], 30U);   // [120, 150)
  EXPECT_EQ(a.ns[2], 50U);       // [150, 200)
  EXPECT_EQ(a.ns[2 | 4], 100U);  // [200, 300)
  EXPECT_EQ(a.ns[4], 100U);      // [300, 400)
  EXPECT_EQ(a.ns[0], 100U);      // [400, 500)
  EXPECT_EQ(a.total_ns(), 500U);
}

TEST(SimVirtualClock, NoSpansUnlessAskedAndNoneOnAWallClock)
{
  sim_backend be{virtual_options()};
  buffers b(be, 64_KiB);
  stream_handle const s = new_stream(be);
  ASSERT_EQ(be.copy_async(b.h2d(4096), s), status::ok);
  EXPECT_TRUE(be.spans().empty());
  sim_options w;
  w.record_spans = true;  // no effect on a wall clock
  sim_backend wall{w};
  buffers bw(wall, 64_KiB);
  stream_handle const ws = new_stream(wall);
  ASSERT_EQ(wall.copy_async(bw.h2d(4096), ws), status::ok);
  ASSERT_EQ(wall.synchronize_stream(ws), status::ok);
  EXPECT_TRUE(wall.spans().empty());
}

// Note [Device times measured with events]: two timed events give the device time between
// them once both have completed (now() has passed them), as cudaEventElapsedTime does; with
// hide_device_times the pool's look ahead (known_completion, known_stream_time) gives nothing,
// and a wall clock does not time events.
TEST(SimVirtualClock, TimedEventsGiveTheTimeBetweenThemOnceBothCompleted)
{
  for (bool const hide : {false, true}) {
    SCOPED_TRACE(hide ? "device times hidden" : "device times known");
    sim_options o = virtual_options({1e9, 1000});
    o.hide_device_times = hide;
    sim_backend be{o};
    stream_handle const s = new_stream(be);
    event_handle a{};
    event_handle b{};
    ASSERT_EQ(be.create_timed_event(&a), status::ok);
    ASSERT_EQ(be.create_timed_event(&b), status::ok);
    ASSERT_EQ(be.record_event(a, s), status::ok);
    ASSERT_EQ(be.compute_async(s, 7000), status::ok);
    ASSERT_EQ(be.record_event(b, s), status::ok);
    tick ns = 1;
    EXPECT_EQ(be.event_elapsed(a, b, &ns), status::not_ready) << "the kernel has not run yet";
    EXPECT_EQ(ns, 0U);
    EXPECT_EQ(be.known_stream_time(s), hide ? std::nullopt : std::optional<tick>{7000});
    EXPECT_EQ(be.known_completion(b), hide ? std::nullopt : std::optional<tick>{7000});
    EXPECT_EQ(be.stream_tail(s), std::optional<tick>{7000}) << "the sim's own view is not hidden";
    ASSERT_EQ(be.synchronize_event(b), status::ok);
    ASSERT_EQ(be.event_elapsed(a, b, &ns), status::ok);
    EXPECT_EQ(ns, 7000U);
    ASSERT_EQ(be.event_elapsed(b, a, &ns), status::ok);
    EXPECT_EQ(ns, 0U) << "the second completed first: 0, not a wrapped difference";
    EXPECT_EQ(be.event_elapsed(a, b, nullptr), status::invalid_value);
    EXPECT_EQ(be.event_elapsed(a, event_handle{987654}, &ns), status::invalid_value);
    EXPECT_NE(be.last_error().find("event_elapsed"), std::string::npos) << be.last_error();
    be.destroy_event(a);
    be.destroy_event(b);
  }
  sim_backend wall{sim_options{}};
  event_handle a{};
  ASSERT_EQ(wall.create_timed_event(&a), status::ok);
  tick ns = 1;
  EXPECT_EQ(wall.event_elapsed(a, a, &ns), status::not_supported);
  EXPECT_EQ(ns, 0U);
  wall.destroy_event(a);
}

TEST(SimVirtualClock, StreamWaitOnEventDelaysStart)
{
  sim_backend be{virtual_options({1e9, 1000}, {1e9, 0})};
  buffers b(be, 64_KiB);
  stream_handle const a = new_stream(be);
  stream_handle const c = new_stream(be);
  stream_handle const free_stream = new_stream(be);
  event_handle const e = new_event(be);
  ASSERT_EQ(be.copy_async(b.h2d(4096), a), status::ok);  // ends 5096
  ASSERT_EQ(be.record_event(e, a), status::ok);
  ASSERT_EQ(be.stream_wait_event(c, e), status::ok);
  ASSERT_EQ(be.copy_async(b.d2h(1000), c), status::ok);
  EXPECT_EQ(be.stream_tail(c), std::optional<tick>{5096 + 1000}) << "start delayed to the event";
  ASSERT_EQ(be.copy_async(b.d2h(1000), free_stream), status::ok);
  // free_stream did not wait: its copy is ready at once and the d2h link is idle until
  // c's copy starts at 5096, so it runs first (Note [Virtual copy timing]).
  EXPECT_EQ(be.stream_tail(free_stream), std::optional<tick>{1000});
  // One that does not fit in what is left of the gap (4096 ns idle from 1000) goes after c's.
  ASSERT_EQ(be.copy_async(b.d2h(4097), free_stream), status::ok);
  EXPECT_EQ(be.stream_tail(free_stream), std::optional<tick>{6096 + 4097});
  // One that fits (3000 ns) takes the gap, on a third stream, though enqueued last.
  stream_handle const third = new_stream(be);
  ASSERT_EQ(be.copy_async(b.d2h(3000), third), status::ok);
  EXPECT_EQ(be.stream_tail(third), std::optional<tick>{1000 + 3000});

  // Waiting on a never-recorded event does not delay.
  sim_backend be2{virtual_options({1e9, 1000}, {1e9, 0})};
  buffers b2(be2, 64_KiB);
  stream_handle const s = new_stream(be2);
  event_handle const never = new_event(be2);
  ASSERT_EQ(be2.stream_wait_event(s, never), status::ok);
  ASSERT_EQ(be2.copy_async(b2.d2h(1000), s), status::ok);
  EXPECT_EQ(be2.stream_tail(s), std::optional<tick>{1000});
}

std::vector<tick> scripted_run()
{
  sim_options o;
  o.clock = sim_clock_mode::virtual_clock;
  o.links = sim_links::from_host_link(link_model::pcie4());
  sim_backend be{o};
  buffers b(be, 4_MiB);
  std::vector<stream_handle> s;
  std::vector<event_handle> e;
  for (int i = 0; i < 3; ++i) {
    s.push_back(new_stream(be));
    e.push_back(new_event(be));
  }
  std::vector<tick> times;
  for (std::size_t step = 0; step < 30; ++step) {
    std::size_t const i = step % 3;
    std::size_t const bytes = (step * 37'001) % (4_MiB) + 1;
    copy_desc const d = step % 2 == 0 ? b.h2d(bytes) : b.d2h(bytes);
    EXPECT_EQ(be.copy_async(d, s[i]), status::ok);
    EXPECT_EQ(be.compute_async(s[i], step * 100), status::ok);
    EXPECT_EQ(be.record_event(e[i], s[i]), status::ok);
    EXPECT_EQ(be.stream_wait_event(s[(i + 1) % 3], e[i]), status::ok);
    times.push_back(be.event_time(e[i]).value_or(0));
    if (step % 7 == 0) {
      EXPECT_EQ(be.synchronize_event(e[i]), status::ok);
      times.push_back(be.now());
    }
  }
  for (auto const st : s) {
    EXPECT_EQ(be.synchronize_stream(st), status::ok);
  }
  times.push_back(be.now());
  return times;
}

TEST(SimVirtualClock, SameSequenceGivesIdenticalTimes)
{
  std::vector<tick> const first = scripted_run();
  std::vector<tick> const second = scripted_run();
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first, second);
  EXPECT_GT(first.back(), 0U);
  EXPECT_GE(first.back(), *std::max_element(first.begin(), first.end())) << "the final sync covers every event";
}

TEST(SimVirtualClock, AdvanceIsMonotonicAndWallClockRefusesIt)
{
  sim_backend be{virtual_options()};
  ASSERT_EQ(be.advance_to(500), status::ok);
  ASSERT_EQ(be.advance_to(100), status::ok);
  EXPECT_EQ(be.now(), 500U);
  sim_backend wall{};
  EXPECT_EQ(wall.advance_by(1), status::not_supported);
  EXPECT_EQ(wall.event_time(new_event(wall)), std::nullopt);
}

// ---- wall clock ----

TEST(SimWallClock, ThrottledCopyCompletesNoEarlierThanModelled)
{
  sim_options o;
  o.links = sim_links{link_model{1e9, 200'000}, link_model{1e9, 200'000}, {}, {}};  // 1 B/ns, 200 us
  sim_backend be{o};
  buffers b(be, 1_MiB);
  stream_handle const s = new_stream(be);
  std::memset(b.host, 0x5A, 1_MiB);
  tick const modelled = o.links->h2d.transfer_ns(1_MiB);
  EXPECT_EQ(modelled, 200'000U + 1'048'576U);
  tick const t0 = be.now();
  ASSERT_EQ(be.copy_async(b.h2d(1_MiB), s), status::ok);
  ASSERT_EQ(be.copy_async(b.d2d(1_MiB), s), status::ok);
  ASSERT_EQ(be.synchronize_stream(s), status::ok);
  EXPECT_GE(be.now() - t0, modelled);
  EXPECT_EQ(static_cast<unsigned char*>(b.dev2)[1_MiB - 1], 0x5A);

  // Two copies on one link serialize: at least twice the modelled time.
  stream_handle const s2 = new_stream(be);
  tick const t1 = be.now();
  ASSERT_EQ(be.copy_async(b.h2d(1_MiB), s), status::ok);  // host -> dev
  ASSERT_EQ(be.copy_async({b.dev2, b.host, 1_MiB, tier_kind::device, tier_kind::pinned_host}, s2), status::ok);
  ASSERT_EQ(be.synchronize_stream(s), status::ok);
  ASSERT_EQ(be.synchronize_stream(s2), status::ok);
  EXPECT_GE(be.now() - t1, 2 * modelled);
}

TEST(SimWallClock, ComputeOccupiesTheStream)
{
  sim_backend be{};
  stream_handle const s = new_stream(be);
  tick const t0 = be.now();
  ASSERT_EQ(be.compute_async(s, 2'000'000), status::ok);  // 2 ms
  ASSERT_EQ(be.synchronize_stream(s), status::ok);
  EXPECT_GE(be.now() - t0, 2'000'000U);
}

// Back-to-back waits on one stream's records are merged into a wait on the later record
// (wall_timeline.cpp, Note [Coalescing waits]), in either order of the calls: whatever
// follows the waits still runs only after both records.
TEST(SimWallClock, BackToBackWaitsOnOneStreamOrderAfterTheLaterRecord)
{
  for (bool later_first : {false, true}) {
    SCOPED_TRACE(later_first ? "later record waited on first" : "earlier record waited on first");
    sim_backend be{};
    buffers b(be, 64_KiB);
    stream_handle const src = new_stream(be);
    stream_handle const dst = new_stream(be);
    event_handle const early = new_event(be);
    event_handle const late = new_event(be);
    event_handle const after = new_event(be);
    std::memset(b.host, 0x11, 64_KiB);
    std::memset(b.dev, 0x22, 64_KiB);
    ASSERT_EQ(be.compute_async(src, 1'000'000), status::ok);  // 1 ms: the waits are queued first
    ASSERT_EQ(be.record_event(early, src), status::ok);
    ASSERT_EQ(be.compute_async(src, 5'000'000), status::ok);  // a copy after only `early` would run now
    ASSERT_EQ(be.copy_async(b.h2d(64_KiB), src), status::ok);  // host -> dev
    ASSERT_EQ(be.record_event(late, src), status::ok);
    ASSERT_EQ(be.stream_wait_event(dst, later_first ? late : early), status::ok);
    ASSERT_EQ(be.stream_wait_event(dst, later_first ? early : late), status::ok);
    // dev -> dev2 reads what src copied: correct only if dst waited for `late`.
    ASSERT_EQ(be.copy_async(b.d2d(64_KiB), dst), status::ok);
    ASSERT_EQ(be.record_event(after, dst), status::ok);
    ASSERT_EQ(be.synchronize_event(after), status::ok);
    EXPECT_EQ(be.query_event(late), status::ok);
    EXPECT_EQ(be.query_event(early), status::ok);
    EXPECT_EQ(static_cast<unsigned char*>(b.dev2)[0], 0x11);
    EXPECT_EQ(static_cast<unsigned char*>(b.dev2)[64_KiB - 1], 0x11);
    ASSERT_EQ(be.synchronize_stream(src), status::ok);
    ASSERT_EQ(be.synchronize_stream(dst), status::ok);
  }
}

// A wait on a record that already completed returns at once and orders nothing.
TEST(SimWallClock, WaitOnACompletedRecordIsImmediate)
{
  sim_backend be{};
  stream_handle const a = new_stream(be);
  stream_handle const w = new_stream(be);
  event_handle const e = new_event(be);
  event_handle const f = new_event(be);
  ASSERT_EQ(be.record_event(e, a), status::ok);
  ASSERT_EQ(be.synchronize_event(e), status::ok);
  ASSERT_EQ(be.stream_wait_event(w, e), status::ok);
  ASSERT_EQ(be.record_event(f, w), status::ok);
  ASSERT_EQ(be.synchronize_event(f), status::ok);
  EXPECT_EQ(be.query_event(f), status::ok);
}

// ---- fault injection ----

TEST(SimFaults, KthAllocateFailsWithNoSideEffect)
{
  sim_backend be{};
  be.set_faults({0, {{sim_call::allocate, 3, 0.0}}});
  void* p1 = nullptr;
  void* p2 = nullptr;
  ASSERT_EQ(be.allocate(tier_kind::device, 1_MiB, &p1), status::ok);
  ASSERT_EQ(be.allocate(tier_kind::device, 1_MiB, &p2), status::ok);
  std::size_t const used = be.allocated_bytes(tier_kind::device);
  std::size_t const live = be.live_allocations();
  void* p3 = reinterpret_cast<void*>(std::uintptr_t{0x1});
  EXPECT_EQ(be.allocate(tier_kind::device, 1_MiB, &p3), status::injected_fault);
  EXPECT_EQ(p3, nullptr);
  EXPECT_EQ(be.allocated_bytes(tier_kind::device), used);
  EXPECT_EQ(be.live_allocations(), live);
  EXPECT_NE(be.last_error().find("injected fault: allocate call #3"), std::string::npos) << be.last_error();
  EXPECT_EQ(be.faults_injected(), 1U);
  void* p4 = nullptr;
  EXPECT_EQ(be.allocate(tier_kind::device, 1_MiB, &p4), status::ok) << "only the 3rd call fails";
  EXPECT_EQ(be.call_count(sim_call::allocate), 4U);
  for (void* p : {p1, p2, p4}) {
    be.deallocate(tier_kind::device, p, 1_MiB);
  }
  EXPECT_EQ(be.allocated_bytes(tier_kind::device), 0U);
}

std::vector<int> failing_indices(std::uint64_t seed, double p)
{
  sim_options o;
  o.faults = {seed, {{sim_call::allocate, 0, p}}};
  sim_backend be{o};
  std::vector<int> fails;
  for (int i = 0; i < 200; ++i) {
    void* ptr = nullptr;
    status const s = be.allocate(tier_kind::host, 64, &ptr);
    if (s == status::injected_fault) {
      fails.push_back(i);
    } else {
      EXPECT_EQ(s, status::ok);
      be.deallocate(tier_kind::host, ptr, 64);
    }
  }
  EXPECT_EQ(be.faults_injected(), fails.size());
  return fails;
}

TEST(SimFaults, ProbabilityWithSeedIsReproducible)
{
  auto const a = failing_indices(42, 0.25);
  auto const b = failing_indices(42, 0.25);
  auto const c = failing_indices(43, 0.25);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c) << "a different seed should fail different calls";
  EXPECT_GT(a.size(), 20U);   // ~50 expected of 200
  EXPECT_LT(a.size(), 100U);
  EXPECT_TRUE(failing_indices(7, 0.0).empty());
  EXPECT_EQ(failing_indices(7, 1.0).size(), 200U);
}

/// Observable state of a backend after the fault scenario body.
struct signature {
  std::size_t live{0};
  std::size_t device_bytes{0};
  std::size_t pinned_bytes{0};
  std::size_t managed_bytes{0};
  std::uint64_t enqueued{0};
  int host_calls{0};
  int handles_created{0};
  friend bool operator==(signature const&, signature const&) = default;
};

std::ostream& operator<<(std::ostream& os, signature const& s)
{
  return os << "{live " << s.live << ", dev " << s.device_bytes << ", pinned " << s.pinned_bytes << ", managed "
            << s.managed_bytes << ", enqueued " << s.enqueued << ", host " << s.host_calls << ", handles "
            << s.handles_created << "}";
}

/// Runs every fallible call once on resources made in setup. Records each call's status
/// and, when `trace` is non-null, the signature after each call.
class fault_scenario {
 public:
  explicit fault_scenario(sim_backend& be) : be_(be), bufs_(be, 4096)
  {
    s_ = new_stream(be);
    s2_ = new_stream(be);
    e_ = new_event(be);
    EXPECT_EQ(be.allocate(tier_kind::managed, 4096, &managed_), status::ok);
  }
  ~fault_scenario()
  {
    for (void* p : made_device_) {
      be_.deallocate(tier_kind::device, p, 1024);
    }
    for (void* p : made_pinned_) {
      be_.deallocate(tier_kind::pinned_host, p, 1024);
    }
    be_.deallocate(tier_kind::managed, managed_, 4096);
  }
  fault_scenario(fault_scenario const&) = delete;
  fault_scenario& operator=(fault_scenario const&) = delete;

  [[nodiscard]] signature sig() const
  {
    return {be_.live_allocations(),
            be_.allocated_bytes(tier_kind::device),
            be_.allocated_bytes(tier_kind::pinned_host),
            be_.allocated_bytes(tier_kind::managed),
            be_.enqueued_operations(),
            host_calls_.load(),
            handles_};
  }

  std::vector<status> run(std::vector<signature>* trace)
  {
    std::vector<std::function<status()>> const calls{
      [&] {
        void* p = nullptr;
        status const r = be_.allocate(tier_kind::device, 1024, &p);
        if (r == status::ok) {
          made_device_.push_back(p);
        }
        return r;
      },
      [&] {
        void* p = nullptr;
        status const r = be_.allocate(tier_kind::pinned_host, 1024, &p);
        if (r == status::ok) {
          made_pinned_.push_back(p);
        }
        return r;
      },
      [&] {
        stream_handle s{};
        status const r = be_.create_stream(&s);
        handles_ += r == status::ok ? 1 : 0;
        return r;
      },
      [&] {
        event_handle e{};
        status const r = be_.create_event(&e);
        handles_ += r == status::ok ? 1 : 0;
        return r;
      },
      [&] { return be_.copy_async(bufs_.h2d(4096), s_); },
      [&] { return be_.record_event(e_, s_); },
      [&] { return be_.stream_wait_event(s2_, e_); },
      [&] { return be_.launch_host_func(s_, &tierpool::conformance::host_counter_increment, &host_calls_); },
      [&] { return be_.prefetch_async(managed_, 4096, {tier_kind::device, -1}, s_); },
      [&] { return be_.compute_async(s_, 100); },
      [&] { return be_.copy_async(bufs_.d2d(4096), s2_); },
    };
    std::vector<status> out;
    for (auto const& c : calls) {
      out.push_back(c());
      if (trace != nullptr) {
        trace->push_back(sig());
      }
    }
    return out;
  }

 private:
  sim_backend& be_;
  buffers bufs_;
  stream_handle s_{};
  stream_handle s2_{};
  event_handle e_{};
  void* managed_{nullptr};
  std::vector<void*> made_device_;
  std::vector<void*> made_pinned_;
  std::atomic<int> host_calls_{0};
  int handles_{0};
};

signature minus(signature a, signature const& before, signature const& after)
{
  a.live -= after.live - before.live;
  a.device_bytes -= after.device_bytes - before.device_bytes;
  a.pinned_bytes -= after.pinned_bytes - before.pinned_bytes;
  a.managed_bytes -= after.managed_bytes - before.managed_bytes;
  a.enqueued -= after.enqueued - before.enqueued;
  a.host_calls -= after.host_calls - before.host_calls;
  a.handles_created -= after.handles_created - before.handles_created;
  return a;
}

TEST(SimFaults, FailEachFallibleCallInTurnLeavesNoSideEffect)
{
  sim_options const o = virtual_options();  // eager, so the signature is exact at once
  std::vector<signature> trace;
  signature start;
  std::uint64_t n = 0;
  {
    sim_backend be{o};
    fault_scenario sc(be);
    be.reset_call_counts();
    start = sc.sig();
    for (status const s : sc.run(&trace)) {
      ASSERT_EQ(s, status::ok) << be.last_error();
    }
    n = be.call_count(sim_call::any);
    for (std::size_t k = 0; k < tierpool::sim_call_count; ++k) {
      EXPECT_GT(be.call_count(static_cast<sim_call>(k)), 0U)
        << "scenario misses kind " << tierpool::to_string(static_cast<sim_call>(k));
    }
  }
  ASSERT_EQ(n, trace.size()) << "one counted call per scenario step";
  for (std::uint64_t k = 1; k <= n; ++k) {
    SCOPED_TRACE("failing call #" + std::to_string(k));
    sim_backend be{o};
    fault_scenario sc(be);
    be.set_faults({0, {{sim_call::any, k, 0.0}}});  // installed after setup
    std::vector<status> const got = sc.run(nullptr);
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], i + 1 == k ? status::injected_fault : status::ok) << "step " << i;
    }
    EXPECT_EQ(be.faults_injected(), 1U);
    signature const before = k == 1 ? start : trace[k - 2];
    EXPECT_EQ(sc.sig(), minus(trace.back(), before, trace[k - 1])) << "the failed call left a side effect";
  }
}

TEST(SimFaults, EachKindFailsOnItsFirstCall)
{
  for (std::size_t k = 0; k < tierpool::sim_call_count; ++k) {
    auto const kind = static_cast<sim_call>(k);
    SCOPED_TRACE(std::string(tierpool::to_string(kind)));
    sim_backend be{virtual_options()};
    fault_scenario sc(be);
    be.reset_call_counts();
    be.set_faults({0, {{kind, 1, 0.0}}});
    std::vector<status> const got = sc.run(nullptr);
    EXPECT_EQ(std::count(got.begin(), got.end(), status::injected_fault), 1);
    EXPECT_EQ(be.faults_injected(), 1U);
    be.clear_faults();
    void* p = nullptr;
    EXPECT_EQ(be.allocate(tier_kind::host, 64, &p), status::ok) << "cleared rules fail nothing";
    be.deallocate(tier_kind::host, p, 64);
  }
}

TEST(SimFaults, InvalidCallsAreNotCounted)
{
  sim_backend be{};
  void* p = nullptr;
  EXPECT_EQ(be.allocate(tier_kind::device, 0, &p), status::invalid_value);
  EXPECT_EQ(be.record_event(event_handle{12345}, stream_handle{}), status::invalid_value);
  EXPECT_EQ(be.call_count(sim_call::any), 0U);
  EXPECT_THROW(be.set_faults({0, {{sim_call::copy, 0, 1.5}}}), tierpool::logic_error);
}

// ---- phantom memory ----

TEST(SimPhantom, EightyGigabyteDeviceUsesNoHostMemory)
{
  sim_options o;
  o.memory = sim_memory_mode::phantom;
  o.clock = sim_clock_mode::virtual_clock;
  o.device_bytes = 80'000'000'000ULL;
  o.managed_bytes = 0;
  sim_backend be{o};
  EXPECT_FALSE(be.caps().real_memory);
  EXPECT_EQ(be.caps().device_name, "simulated device (80 GB, phantom memory, virtual clock)");
  std::size_t const rss_before = resident_bytes();
  std::vector<void*> dev;
  for (int i = 0; i < 9; ++i) {
    void* p = nullptr;
    ASSERT_EQ(be.allocate(tier_kind::device, 8_GiB, &p), status::ok) << i << ": " << be.last_error();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0U);
    dev.push_back(p);
  }
  void* too_much = nullptr;
  EXPECT_EQ(be.allocate(tier_kind::device, 8_GiB, &too_much), status::out_of_memory);
  EXPECT_NE(be.last_error().find("exceeds capacity"), std::string::npos) << be.last_error();
  void* host = nullptr;
  ASSERT_EQ(be.allocate(tier_kind::host, 512_GiB, &host), status::ok);  // host is unbounded
  std::size_t const rss_after = resident_bytes();
  EXPECT_LT(rss_after, rss_before + 64_MiB) << "phantom allocations must not touch host memory";

  copy_desc const down{host, dev[0], 8_GiB, tier_kind::host, tier_kind::device};
  copy_desc const across{dev[1], dev[0], 8_GiB, tier_kind::device, tier_kind::device};
  ASSERT_EQ(be.copy_async(down, stream_handle{}), status::ok);
  ASSERT_EQ(be.copy_async(across, stream_handle{}), status::ok);
  ASSERT_EQ(be.synchronize_stream(stream_handle{}), status::ok);
  EXPECT_GT(be.now(), 8_GiB / 25U) << "pcie4 default link: 8 GiB takes ~0.34 s of virtual time";
  EXPECT_EQ(be.link_stats(sim_link::d2h).bytes, 8_GiB);

  std::size_t free_b = 0;
  std::size_t total_b = 0;
  ASSERT_EQ(be.device_memory_info(&free_b, &total_b), status::ok);
  EXPECT_EQ(total_b, 80'000'000'000ULL);
  EXPECT_EQ(free_b, 80'000'000'000ULL - 9 * 8_GiB);
  for (void* p : dev) {
    be.deallocate(tier_kind::device, p, 8_GiB);
  }
  be.deallocate(tier_kind::host, host, 512_GiB);
  EXPECT_EQ(be.live_allocations(), 0U);
  EXPECT_EQ(be.invalid_deallocations(), 0U);
}

// ---- link models ----

TEST(SimLinks, PresetsAndTransferTimes)
{
  EXPECT_EQ(link_model::pcie4().transfer_ns(25'000'000'000ULL), 1'000'000'000U + 2'000U);
  EXPECT_EQ(link_model{}.transfer_ns(1_GiB), 0U);
  EXPECT_TRUE(link_model{}.unthrottled());
  EXPECT_EQ(link_model({1e9, 0}).transfer_ns(1), 1U);
  EXPECT_GT(link_model::cxl().latency_ns, link_model::pcie4().latency_ns);
  EXPECT_GT(link_model::nvlink_c2c().bandwidth_bytes_per_s, link_model::pcie5().bandwidth_bytes_per_s);
  EXPECT_EQ(tierpool::link_for(tier_kind::device, tier_kind::pinned_host), sim_link::h2d);
  EXPECT_EQ(tierpool::link_for(tier_kind::device, tier_kind::managed), sim_link::h2d);
  EXPECT_EQ(tierpool::link_for(tier_kind::host, tier_kind::device), sim_link::d2h);
  EXPECT_EQ(tierpool::link_for(tier_kind::device, tier_kind::device), sim_link::d2d);
  EXPECT_EQ(tierpool::link_for(tier_kind::host, tier_kind::pinned_host), sim_link::h2h);
  EXPECT_EQ(tierpool::to_string(sim_link::d2h), "d2h");
}

TEST(SimLinks, ParsesPresetsAndNumbers)
{
  EXPECT_EQ(tierpool::parse_link_model("pcie4"), link_model::pcie4());
  EXPECT_EQ(tierpool::parse_link_model(" PCIe5 "), link_model::pcie5());
  EXPECT_EQ(tierpool::parse_link_model("nvlink-c2c"), link_model::nvlink_c2c());
  EXPECT_EQ(tierpool::parse_link_model("cxl"), link_model::cxl());
  EXPECT_EQ(tierpool::parse_link_model("none"), link_model{});
  EXPECT_EQ(tierpool::parse_link_model("25e9,2000"), (link_model{25e9, 2000}));
  EXPECT_EQ(tierpool::parse_link_model("1e9, 1.5e3"), (link_model{1e9, 1500}));
  EXPECT_EQ(tierpool::parse_link_model("0,0"), link_model{});
}

TEST(SimLinks, RejectsBadStringsWithAReason)
{
  for (char const* bad : {"", "   ", "pcie9", "25e9", "abc,10", "-1,5", "1e9,-3", "1e9,2000,3", "nan,1", "inf,1",
                          ",", "1e9,", "25 GB/s,2000"}) {
    SCOPED_TRACE(bad);
    std::string err;
    EXPECT_EQ(tierpool::parse_link_model(bad, &err), std::nullopt);
    EXPECT_FALSE(err.empty());
  }
  std::string err;
  (void)tierpool::parse_link_model("pcie9", &err);
  EXPECT_NE(err.find("pcie9"), std::string::npos) << err;
  EXPECT_NE(err.find("pcie4"), std::string::npos) << "the message lists the presets: " << err;
  EXPECT_EQ(tierpool::parse_link_model("pcie9"), std::nullopt) << "a null error pointer is fine";
}

// ---- validation, caps, options ----

TEST(SimValidation, DefaultCapsDescribeTheDevice)
{
  auto const be = tierpool::make_sim_backend();
  auto const& c = be->caps();
  EXPECT_EQ(c.name, "sim");
  EXPECT_EQ(c.device_name, "simulated device (256 MiB, real memory, wall clock)");
  EXPECT_EQ(c.device_bytes, 256_MiB);
  EXPECT_EQ(c.managed_bytes, 256_MiB);
  EXPECT_TRUE(c.has_managed);
  EXPECT_TRUE(c.has_managed_prefetch);
  EXPECT_TRUE(c.real_memory);
  EXPECT_FALSE(c.virtual_clock);
  EXPECT_EQ(c.allocation_alignment, 256U);
  auto const* sim = dynamic_cast<sim_backend const*>(be.get());
  ASSERT_NE(sim, nullptr);
  EXPECT_EQ(sim->options().links, sim_links::unthrottled());
  sim_backend v{virtual_options()};
  sim_options vo;
  vo.clock = sim_clock_mode::virtual_clock;
  EXPECT_EQ(sim_backend{vo}.options().links, sim_links::from_host_link(link_model::pcie4()));
}

TEST(SimValidation, ForeignAndMismatchedFreesAreIgnoredAndRecorded)
{
  sim_backend be{};
  int local = 0;
  be.deallocate(tier_kind::device, &local, sizeof local);
  EXPECT_EQ(be.invalid_deallocations(), 1U);
  EXPECT_NE(be.last_error().find("not allocated by this backend"), std::string::npos) << be.last_error();

  void* d = nullptr;
  ASSERT_EQ(be.allocate(tier_kind::device, 1000, &d), status::ok);
  EXPECT_EQ(be.allocated_bytes(tier_kind::device), 1024U) << "sizes round up to 256";
  be.deallocate(tier_kind::host, d, 1000);  // wrong kind: ignored
  EXPECT_EQ(be.invalid_deallocations(), 2U);
  EXPECT_EQ(be.live_allocations(), 1U);
  be.deallocate(tier_kind::device, d, 1000);
  EXPECT_EQ(be.live_allocations(), 0U);
  be.deallocate(tier_kind::device, d, 1000);  // double free: ignored
  EXPECT_EQ(be.invalid_deallocations(), 3U);

  void* m = nullptr;
  ASSERT_EQ(be.allocate(tier_kind::pinned_host, 512, &m), status::ok);
  be.deallocate(tier_kind::pinned_host, m, 4096);  // wrong size: freed anyway, recorded
  EXPECT_EQ(be.live_allocations(), 0U);
  EXPECT_EQ(be.invalid_deallocations(), 4U);
}

TEST(SimValidation, CopiesMustStayInsideBackendAllocations)
{
  sim_backend be{};
  buffers b(be, 4096);
  std::vector<std::byte> user(8192);
  EXPECT_EQ(be.copy_async({b.dev, user.data(), 4096, tier_kind::device, tier_kind::host}, {}), status::ok)
    << "host kinds may be any host memory";
  EXPECT_EQ(be.copy_async({user.data(), b.host, 4096, tier_kind::device, tier_kind::pinned_host}, {}),
            status::invalid_value)
    << "device destination not from this backend";
  EXPECT_NE(be.last_error().find("destination range"), std::string::npos) << be.last_error();
  EXPECT_EQ(be.copy_async({b.dev, b.host, 4097, tier_kind::device, tier_kind::pinned_host}, {}), status::invalid_value)
    << "past the end of the device allocation";
  EXPECT_EQ(be.copy_async({static_cast<std::byte*>(b.dev) + 16, b.dev, 64, tier_kind::device, tier_kind::device}, {}),
            status::invalid_value)
    << "overlapping ranges";
  EXPECT_EQ(be.prefetch_async(b.dev, 64, {tier_kind::device, -1}, {}), status::invalid_value)
    << "prefetch needs managed memory";
  EXPECT_EQ(be.synchronize_stream({}), status::ok);
}

TEST(SimValidation, NoManagedMemoryMeansNotSupported)
{
  sim_options o;
  o.managed_bytes = 0;
  sim_backend be{o};
  EXPECT_FALSE(be.caps().has_managed);
  EXPECT_FALSE(be.caps().has_managed_prefetch);
  void* p = nullptr;
  EXPECT_EQ(be.allocate(tier_kind::managed, 64, &p), status::not_supported);
  int x = 0;
  EXPECT_EQ(be.prefetch_async(&x, 4, {}, {}), status::not_supported);
}

TEST(SimValidation, BadOptionsThrowLogicError)
{
  sim_options zero;
  zero.device_bytes = 0;
  EXPECT_THROW(sim_backend{zero}, tierpool::logic_error);
  sim_options neg;
  neg.links = sim_links{link_model{-1.0, 0}, {}, {}, {}};
  EXPECT_THROW((void)tierpool::make_sim_backend(neg), tierpool::logic_error);
  sim_options prob;
  prob.faults.rules.push_back({sim_call::any, 0, -0.5});
  EXPECT_THROW(sim_backend{prob}, tierpool::logic_error);
}

TEST(SimValidation, LastErrorIsPerThreadAndPerBackend)
{
  sim_backend be{};
  sim_backend other{};
  void* p = nullptr;
  EXPECT_EQ(be.last_error(), "");
  EXPECT_EQ(be.allocate(tier_kind::device, 512_MiB, &p), status::out_of_memory);
  std::string const msg = be.last_error();
  EXPECT_NE(msg.find("out_of_memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("268435456"), std::string::npos) << "message names the capacity: " << msg;
  EXPECT_EQ(other.last_error(), "");
  std::string seen_elsewhere = "unset";
  std::thread([&] { seen_elsewhere = be.last_error(); }).join();
  EXPECT_EQ(seen_elsewhere, "");
}

TEST(SimValidation, DeviceMemoryInfoTracksAllocations)
{
  sim_options o;
  o.device_bytes = 1_MiB;
  sim_backend be{o};
  void* p = nullptr;
  ASSERT_EQ(be.allocate(tier_kind::device, 300_KiB, &p), status::ok);
  std::size_t free_b = 0;
  std::size_t total_b = 0;
  ASSERT_EQ(be.device_memory_info(&free_b, &total_b), status::ok);
  EXPECT_EQ(total_b, 1_MiB);
  EXPECT_EQ(free_b, 1_MiB - 300_KiB);
  EXPECT_EQ(be.device_memory_info(nullptr, &total_b), status::invalid_value);
  be.deallocate(tier_kind::device, p, 300_KiB);
}

// As cudaStreamDestroy: destroy_stream returns while work is still queued (a host function
// held by a gate), and that work and the event behind it complete afterwards.
TEST(SimWallClock, DestroyStreamReturnsAtOnceAndItsWorkStillCompletes)
{
  sim_backend be{};
  stream_handle const s = new_stream(be);
  struct gate {
    std::atomic<bool> open{false};
    std::atomic<int> ran{0};
    static void wait(void* self)
    {
      auto* g = static_cast<gate*>(self);
      auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!g->open.load() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      g->ran.fetch_add(1);
    }
  } g;
  event_handle e{};
  ASSERT_EQ(be.create_event(&e), status::ok);
  ASSERT_EQ(be.launch_host_func(s, &gate::wait, &g), status::ok);
  ASSERT_EQ(be.record_event(e, s), status::ok);
  be.destroy_stream(s);
  EXPECT_EQ(be.query_event(e), status::not_ready) << "destroy_stream waited for the stream's work";
  EXPECT_EQ(g.ran.load(), 0);
  g.open = true;
  EXPECT_EQ(be.synchronize_event(e), status::ok);
  EXPECT_EQ(g.ran.load(), 1);
  stream_handle const t = new_stream(be);  // reaps the drained worker
  be.destroy_stream(t);
  be.destroy_event(e);
}

TEST(SimWallClock, DestructorDrainsQueuedWork)
{
  std::atomic<int> counter{0};
  {
    sim_backend be{};
    stream_handle const s = new_stream(be);
    ASSERT_EQ(be.compute_async(s, 1'000'000), status::ok);
    for (int i = 0; i < 10; ++i) {
      ASSERT_EQ(be.launch_host_func(s, &tierpool::conformance::host_counter_increment, &counter), status::ok);
    }
  }
  EXPECT_EQ(counter.load(), 10);
}

// ---- several simulated devices (sim_options::device_ordinal) ----

TEST(SimDevices, TheOrdinalIsReportedAndNamed)
{
  sim_options o;
  o.device_ordinal = 1;
  sim_backend const one{o};
  EXPECT_EQ(one.caps().device_ordinal, 1);
  EXPECT_EQ(one.caps().device_name, "simulated device 1 (256 MiB, real memory, wall clock)");
  EXPECT_EQ(sim_backend{}.caps().device_ordinal, 0);
  for (int bad : {-1, 256}) {
    o.device_ordinal = bad;
    EXPECT_THROW(sim_backend{o}, tierpool::logic_error) << bad;
  }
}

// A stream or event of simulated device 1 is refused by device 0 with a last_error that
// names the device it belongs to, on both clocks; two backends of one ordinal (wall) never
// share a handle either.
TEST(SimDevices, StreamsAndEventsOfAnotherDeviceAreRefused)
{
  for (sim_clock_mode clock : {sim_clock_mode::wall, sim_clock_mode::virtual_clock}) {
    SCOPED_TRACE(clock == sim_clock_mode::wall ? "wall" : "virtual");
    sim_options o;
    o.clock = clock;
    sim_backend zero{o};
    o.device_ordinal = 1;
    sim_backend one{o};
    stream_handle const s1 = new_stream(one);
    event_handle const e1 = new_event(one);
    stream_handle adopted{};
    EXPECT_EQ(zero.adopt_stream(reinterpret_cast<void*>(s1.value), &adopted), status::invalid_value);
    EXPECT_EQ(adopted, stream_handle{});
    EXPECT_NE(zero.last_error().find("a stream of simulated device 1 (this backend is simulated device 0)"),
              std::string::npos) << zero.last_error();
    EXPECT_EQ(one.adopt_stream(reinterpret_cast<void*>(s1.value), &adopted), status::ok) << "its own device takes it";
    buffers b(zero, 4096);
    EXPECT_EQ(zero.copy_async(b.h2d(4096), s1), status::invalid_value);
    EXPECT_NE(zero.last_error().find("copy_async: unknown stream handle: a stream of simulated device 1"),
              std::string::npos) << zero.last_error();
    event_handle const e0 = new_event(zero);
    EXPECT_EQ(zero.record_event(e1, stream_handle{}), status::invalid_value);
    EXPECT_NE(zero.last_error().find("an event of simulated device 1"), std::string::npos) << zero.last_error();
    EXPECT_EQ(zero.query_event(e1), status::invalid_value);
    EXPECT_EQ(zero.stream_wait_event(s1, e0), status::invalid_value);
    EXPECT_EQ(zero.synchronize_stream(s1), status::invalid_value);
    zero.destroy_event(e0);
    one.destroy_event(e1);
    one.destroy_stream(s1);
  }
  sim_backend a{};
  sim_backend b{};
  stream_handle const sa = new_stream(a);
  stream_handle const sb = new_stream(b);
  EXPECT_NE(sa, sb) << "wall-clock handles are unique in the process";
  EXPECT_EQ(b.synchronize_stream(sa), status::invalid_value);
  a.destroy_stream(sa);
  b.destroy_stream(sb);
}

// Events live in slots that are reused (Note [Event slots] in wall_timeline.cpp, Note
// [Handles index a slot table] in virtual_timeline.cpp): a destroyed event's handle is
// refused by every call, also once a new event took its slot, and the new event works.
TEST(SimEvents, ADestroyedEventsHandleIsRefusedAfterItsSlotIsReused)
{
  for (sim_clock_mode clock : {sim_clock_mode::wall, sim_clock_mode::virtual_clock}) {
    SCOPED_TRACE(clock == sim_clock_mode::wall ? "wall" : "virtual");
    sim_options o;
    o.clock = clock;
    sim_backend be{o};
    stream_handle const s = new_stream(be);
    event_handle const old = new_event(be);
    ASSERT_EQ(be.record_event(old, s), status::ok);
    be.destroy_event(old);
    event_handle const reused = new_event(be);  // takes the freed slot
    EXPECT_NE(reused, old);
    EXPECT_EQ(be.query_event(old), status::invalid_value);
    EXPECT_EQ(be.record_event(old, s), status::invalid_value);
    EXPECT_NE(be.last_error().find("record_event: unknown event handle"), std::string::npos) << be.last_error();
    EXPECT_EQ(be.stream_wait_event(s, old), status::invalid_value);
    EXPECT_EQ(be.synchronize_event(old), status::invalid_value);
    EXPECT_EQ(be.query_event(reused), status::ok) << "never recorded: complete";
    ASSERT_EQ(be.compute_async(s, 1000), status::ok);
    ASSERT_EQ(be.record_event(reused, s), status::ok);
    EXPECT_EQ(be.synchronize_event(reused), status::ok);
    EXPECT_EQ(be.query_event(reused), status::ok);
    // Many events at once, all distinct, all destroyed: none of the handles works afterwards.
    std::vector<event_handle> many;
    for (int i = 0; i < 1000; ++i) { many.push_back(new_event(be)); }
    std::vector<event_handle> sorted = many;
    std::ranges::sort(sorted, {}, &event_handle::value);
    EXPECT_EQ(std::ranges::adjacent_find(sorted), sorted.end());
    for (event_handle e : many) { be.destroy_event(e); }
    for (event_handle e : many) { EXPECT_EQ(be.query_event(e), status::invalid_value); }
    be.destroy_event(reused);
    be.destroy_event(reused);  // a second destroy is ignored
    EXPECT_EQ(be.query_event(reused), status::invalid_value);
    be.destroy_stream(s);
  }
}

// Phantom addresses carry their device: a device pointer of simulated device 1 is never
// inside an allocation of device 0, and the refusal says whose it is.
TEST(SimDevices, PhantomPointersOfAnotherDeviceAreRefused)
{
  sim_options o;
  o.memory = sim_memory_mode::phantom;
  sim_backend zero{o};
  o.device_ordinal = 1;
  sim_backend one{o};
  void* d0 = nullptr;
  void* d1 = nullptr;
  void* h0 = nullptr;
  ASSERT_EQ(zero.allocate(tier_kind::device, 1_MiB, &d0), status::ok);
  ASSERT_EQ(one.allocate(tier_kind::device, 1_MiB, &d1), status::ok);
  ASSERT_EQ(zero.allocate(tier_kind::pinned_host, 1_MiB, &h0), status::ok);
  EXPECT_NE(d0, d1);
  EXPECT_EQ(zero.copy_async({d1, h0, 4096, tier_kind::device, tier_kind::pinned_host}, stream_handle{}),
            status::invalid_value);
  EXPECT_NE(zero.last_error().find("it is memory of simulated device 1"), std::string::npos) << zero.last_error();
  EXPECT_EQ(zero.copy_async({d0, h0, 4096, tier_kind::device, tier_kind::pinned_host}, stream_handle{}), status::ok);
  EXPECT_EQ(zero.synchronize_stream(stream_handle{}), status::ok);
  zero.deallocate(tier_kind::device, d0, 1_MiB);
  zero.deallocate(tier_kind::pinned_host, h0, 1_MiB);
  one.deallocate(tier_kind::device, d1, 1_MiB);
  EXPECT_EQ(zero.invalid_deallocations(), 0U);
}

// ---- serialized host functions (sim_options::serialize_host_functions) ----

struct overlap_probe {
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::atomic<int> ran{0};
  static void run(void* self)
  {
    auto* p = static_cast<overlap_probe*>(self);
    int const now = p->running.fetch_add(1) + 1;
    int seen = p->most.load();
    while (now > seen && !p->most.compare_exchange_weak(seen, now)) {}
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    p->running.fetch_sub(1);
    p->ran.fetch_add(1);
  }
};

TEST(SimHostFunctions, SerializedHostFunctionsOfManyStreamsNeverOverlap)
{
  for (sim_clock_mode clock : {sim_clock_mode::wall, sim_clock_mode::virtual_clock}) {
    SCOPED_TRACE(clock == sim_clock_mode::wall ? "wall" : "virtual");
    sim_options o;
    o.clock = clock;
    o.serialize_host_functions = true;
    overlap_probe probe;
    {
      sim_backend be{o};
      std::vector<stream_handle> streams;
      for (int i = 0; i < 6; ++i) { streams.push_back(new_stream(be)); }
      std::vector<std::thread> threads;
      for (stream_handle s : streams) {
        threads.emplace_back([&be, &probe, s] {
          for (int k = 0; k < 10; ++k) { EXPECT_EQ(be.launch_host_func(s, &overlap_probe::run, &probe), status::ok); }
        });
      }
      for (auto& t : threads) { t.join(); }
      for (stream_handle s : streams) { EXPECT_EQ(be.synchronize_stream(s), status::ok); }
      EXPECT_EQ(probe.ran.load(), 60);
      for (stream_handle s : streams) { be.destroy_stream(s); }
    }
    EXPECT_EQ(probe.most.load(), 1) << "two host functions ran at once";
  }
}

// Queued host functions still run at destruction (the executor outlives the streams).
TEST(SimHostFunctions, SerializedHostFunctionsRunBeforeTheBackendDies)
{
  sim_options o;
  o.serialize_host_functions = true;
  std::atomic<int> counter{0};
  {
    sim_backend be{o};
    stream_handle const s = new_stream(be);
    ASSERT_EQ(be.compute_async(s, 2'000'000), status::ok);
    for (int i = 0; i < 10; ++i) {
      ASSERT_EQ(be.launch_host_func(s, &tierpool::conformance::host_counter_increment, &counter), status::ok);
      ASSERT_EQ(be.launch_host_func(stream_handle{}, &tierpool::conformance::host_counter_increment, &counter),
                status::ok);
    }
  }
  EXPECT_EQ(counter.load(), 20);
}

// ---- no concurrent managed access (sim_options::concurrent_managed_access) ----

TEST(SimValidation, WithoutConcurrentManagedAccessManagedMemoryCannotBeSteered)
{
  sim_options o;
  o.concurrent_managed_access = false;
  sim_backend be{o};
  EXPECT_TRUE(be.caps().has_managed);
  EXPECT_FALSE(be.caps().concurrent_managed_access);
  EXPECT_FALSE(be.caps().has_managed_prefetch) << "as cudaMemPrefetchAsync needs concurrent managed access";
  void* m = nullptr;
  ASSERT_EQ(be.allocate(tier_kind::managed, 4096, &m), status::ok);
  EXPECT_EQ(be.prefetch_async(m, 4096, {tier_kind::device, -1}, stream_handle{}), status::not_supported);
  EXPECT_EQ(be.advise(m, 4096, tierpool::mem_advice::set_read_mostly, {tier_kind::device, -1}), status::not_supported);
  be.deallocate(tier_kind::managed, m, 4096);
  EXPECT_TRUE(sim_backend{}.caps().concurrent_managed_access) << "the default: managed memory is host memory";
}

// ---- simulated capture (begin_capture / end_capture / launch_graph) ----

TEST(SimCapture, CapturedWorkRunsOnlyWhenTheGraphIsLaunched)
{
  for (sim_clock_mode clock : {sim_clock_mode::wall, sim_clock_mode::virtual_clock}) {
    SCOPED_TRACE(clock == sim_clock_mode::wall ? "wall" : "virtual");
    sim_options o;
    o.clock = clock;
    sim_backend be{o};
    buffers b(be, 4096);
    stream_handle const s = new_stream(be);
    std::memset(b.host, 7, 4096);
    std::memset(b.dev, 0, 4096);
    std::atomic<int> counter{0};
    bool capturing = true;
    EXPECT_EQ(be.is_capturing(s, &capturing), status::ok);
    EXPECT_FALSE(capturing);
    EXPECT_FALSE(be.capture_underway());
    ASSERT_EQ(be.begin_capture(s), status::ok);
    EXPECT_EQ(be.begin_capture(s), status::invalid_value) << "already capturing";
    EXPECT_EQ(be.is_capturing(s, &capturing), status::ok);
    EXPECT_TRUE(capturing);
    EXPECT_TRUE(be.capture_underway());
    EXPECT_EQ(be.is_capturing(stream_handle{}, &capturing), status::ok);
    EXPECT_FALSE(capturing) << "only the captured stream";
    ASSERT_EQ(be.copy_async(b.h2d(4096), s), status::ok);
    ASSERT_EQ(be.compute_async(s, 1000), status::ok);
    ASSERT_EQ(be.launch_host_func(s, &tierpool::conformance::host_counter_increment, &counter), status::ok);
    // Work on other streams runs as usual meanwhile.
    ASSERT_EQ(be.launch_host_func(stream_handle{}, &tierpool::conformance::host_counter_increment, &counter),
              status::ok);
    tierpool::sim_graph g{};
    ASSERT_EQ(be.end_capture(s, &g), status::ok) << be.last_error();
    EXPECT_TRUE(g);
    EXPECT_FALSE(be.capture_underway());
    ASSERT_EQ(be.synchronize_stream(s), status::ok);
    ASSERT_EQ(be.synchronize_stream(stream_handle{}), status::ok);
    EXPECT_EQ(counter.load(), 1) << "the captured host function has not run";
    EXPECT_EQ(static_cast<unsigned char*>(b.dev)[0], 0) << "the captured copy has not run";
    ASSERT_EQ(be.launch_graph(g, s), status::ok);
    ASSERT_EQ(be.launch_graph(g, s), status::ok);
    ASSERT_EQ(be.synchronize_stream(s), status::ok);
    EXPECT_EQ(counter.load(), 3);
    EXPECT_EQ(static_cast<unsigned char*>(b.dev)[4095], 7);
    be.destroy_graph(g);
    EXPECT_EQ(be.launch_graph(g, s), status::invalid_value);
    EXPECT_EQ(be.capture_violations(), 0U);
    be.destroy_stream(s);
  }
}

// Host waits and event queries on the capturing thread, and anything on the stream that
// is not captured, invalidate the capture; end_capture names the first. Another thread
// may query and wait as it likes (thread-local mode).
TEST(SimCapture, ForbiddenCallsInvalidateTheCapture)
{
  sim_backend be{};
  stream_handle const s = new_stream(be);
  stream_handle const other = new_stream(be);
  event_handle const e = new_event(be);
  ASSERT_EQ(be.record_event(e, other), status::ok);
  ASSERT_EQ(be.synchronize_event(e), status::ok);
  EXPECT_EQ(be.begin_capture(stream_handle{}), status::invalid_value) << "the default stream is not captured";

  ASSERT_EQ(be.begin_capture(s), status::ok);
  std::thread([&] {
    EXPECT_EQ(be.query_event(e), status::ok) << "another thread is not restricted";
    EXPECT_EQ(be.synchronize_stream(other), status::ok);
  }).join();
  tierpool::sim_graph g{};
  ASSERT_EQ(be.end_capture(s, &g), status::ok) << be.last_error();
  be.destroy_graph(g);

  ASSERT_EQ(be.begin_capture(s), status::ok);
  EXPECT_EQ(be.query_event(e), status::invalid_value);
  EXPECT_NE(be.last_error().find("query_event: not permitted while stream"), std::string::npos) << be.last_error();
  EXPECT_EQ(be.synchronize_event(e), status::invalid_value) << "still refused";
  EXPECT_EQ(be.end_capture(s, &g), status::invalid_value);
  EXPECT_FALSE(g);
  EXPECT_NE(be.last_error().find("was invalidated by query_event"), std::string::npos) << be.last_error();

  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE(call);
    ASSERT_EQ(be.begin_capture(s), status::ok);
    std::thread([&] {  // on the stream itself: refused from any thread
      void* p = nullptr;
      switch (call) {
        case 0: EXPECT_EQ(be.synchronize_stream(s), status::invalid_value); break;
        case 1: EXPECT_EQ(be.record_event(e, s), status::invalid_value); break;
        case 2: EXPECT_EQ(be.stream_wait_event(s, e), status::invalid_value); break;
        default:
          ASSERT_EQ(be.allocate(tier_kind::managed, 4096, &p), status::ok) << "not the capturing thread";
          EXPECT_EQ(be.prefetch_async(p, 4096, {tier_kind::device, -1}, s), status::invalid_value);
          be.deallocate(tier_kind::managed, p, 4096);
      }
    }).join();
    EXPECT_EQ(be.end_capture(s, &g), status::invalid_value);
  }
  void* p = nullptr;
  ASSERT_EQ(be.begin_capture(s), status::ok);
  EXPECT_EQ(be.allocate(tier_kind::device, 4096, &p), status::invalid_value) << "cudaMalloc is unsafe in a capture";
  EXPECT_EQ(be.end_capture(s, &g), status::invalid_value);
  EXPECT_EQ(be.end_capture(s, &g), status::invalid_value) << "not capturing any more";
  EXPECT_EQ(be.capture_violations(), 7U);
  be.destroy_event(e);
  be.destroy_stream(s);
  be.destroy_stream(other);
}

}  // namespace

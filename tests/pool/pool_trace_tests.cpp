// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_trace_tests.cpp — pool_options::trace_path: the pool records its calls in the trace
// schema, and the file reads back as the same sequence.
#include "unit/pool_test_util.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tierpool/pool.hpp>
#include <tierpool/trace.hpp>

#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

// TIERPOOL_TRACE / pool_options::trace_path: the pool records its calls in the trace
// schema; the file reads back as the same sequence (allocate, host and stream accesses
// with their modes and trace-local stream numbers, prefetch, discard, free).
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
    p.discard(b);
    { lease l = p.acquire_host(b, access_mode::write_discard); }  // new contents
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
    "prefetch 2 t1",        "discard 2",
    "access 2 m2 shost",    "release 2 shost",
    "free 1",               "free 2"};
  EXPECT_EQ(got, want);
  for (std::size_t i = 1; i < ev.size(); ++i) { EXPECT_GE(ev[i].time_ns, ev[i - 1].time_ns); }
}

// pool::note_compute and note_phase: the program's kernels and phases go into the recording
// in order with its accesses, and on the simulated backend the stream runs for that long
// (the virtual clock moves by the kernel's time).
TEST(PoolTrace, RecordsTheComputeAndPhasesTheProgramTellsOf)
{
  auto const path = std::filesystem::temp_directory_path() / ("tierpool_pool_trace_c_" + std::to_string(::getpid()) + ".tpb");
  tick elapsed = 0;
  {
    auto be = make_sim(sim_clock_mode::virtual_clock);
    pool_options o = small_tiers(be);
    o.trace_path = path.string();
    pool p{o};
    stream_handle s = p.create_stream();
    tensor a = p.allocate(1024);
    p.note_phase("forward");
    tick const t0 = be->now();
    {
      lease l = p.acquire(a, access_mode::write_discard, s);
      p.note_compute(s, 5000);
    }
    p.note_compute(s, 0);   // nothing
    p.note_compute({}, 7);  // the default stream
    p.synchronize(s);
    elapsed = be->now() - t0;
    p.free(a);
    EXPECT_THAT([&] { p.note_compute(stream_handle{987654}, 1); },
                ::testing::ThrowsMessage<logic_error>(::testing::HasSubstr("pool::note_compute: unknown stream 987654")));
    EXPECT_THAT([&] { p.note_phase(""); },
                ::testing::ThrowsMessage<logic_error>(::testing::HasSubstr("pool::note_phase: an empty phase name")));
    p.close();
    EXPECT_THAT([&] { p.note_phase("x"); }, ::testing::ThrowsMessage<logic_error>(::testing::HasSubstr("closed")));
  }
  EXPECT_GE(elapsed, tick{5000}) << "the simulated stream ran the kernel";
  std::vector<trace::event> const ev = trace::read_all(path);
  std::filesystem::remove(path);
  std::vector<std::string> got;
  for (trace::event const& e : ev) {
    std::string line(trace::to_string(e.kind));
    if (e.kind == trace::event_kind::phase) { line += " " + e.name; }
    if (e.kind == trace::event_kind::access || e.kind == trace::event_kind::release ||
        e.kind == trace::event_kind::compute) {
      line += " s" + std::to_string(e.stream);
    }
    if (e.kind == trace::event_kind::compute) { line += " " + std::to_string(e.duration_ns); }
    got.push_back(line);
  }
  std::vector<std::string> const want = {"allocate", "phase forward", "access s1", "compute s1 5000", "release s1",
                                         "compute s0 7", "free"};
  EXPECT_EQ(got, want);
}

// More threads than cores, each on its own stream, each acquiring its own tensor and telling
// of a kernel after each access: every event is recorded, and each stream's events keep
// their order (access, compute with that thread's running count, release). Under TSan in CI.
TEST(PoolTrace, ComputeFromManyThreadsIsRecordedInOrderPerStream)
{
  auto const path = std::filesystem::temp_directory_path() / ("tierpool_pool_trace_t_" + std::to_string(::getpid()) + ".tpb");
  constexpr int kThreads = 8;
  constexpr int kRounds = 100;
  {
    auto be = make_sim(sim_clock_mode::virtual_clock);
    pool_options o = small_tiers(be, 1_MiB);
    o.trace_path = path.string();
    pool p{o};
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k) {
      threads.emplace_back([&p] {
        stream_handle const s = p.create_stream();
        tensor t = p.allocate(4096);
        for (int i = 1; i <= kRounds; ++i) {
          lease l = p.acquire(t, access_mode::read_write, s);
          p.note_compute(s, static_cast<std::uint64_t>(i));
        }
        p.synchronize(s);
        p.free(t);
      });
    }
    for (auto& th : threads) { th.join(); }
  }
  std::vector<trace::event> const ev = trace::read_all(path);
  std::filesystem::remove(path);
  std::map<std::uint32_t, std::vector<std::string>> per_stream;
  for (trace::event const& e : ev) {
    if (e.kind == trace::event_kind::compute) {
      per_stream[e.stream].push_back("c" + std::to_string(e.duration_ns));
    } else if (e.kind == trace::event_kind::access || e.kind == trace::event_kind::release) {
      per_stream[e.stream].push_back(e.kind == trace::event_kind::access ? "a" : "r");
    }
  }
  ASSERT_EQ(per_stream.size(), static_cast<std::size_t>(kThreads));
  std::vector<std::string> want;
  for (int i = 1; i <= kRounds; ++i) {
    want.insert(want.end(), {"a", "c" + std::to_string(i), "r"});
  }
  for (auto const& [stream, got] : per_stream) { EXPECT_EQ(got, want) << "stream " << stream; }
}

}  // namespace
}  // namespace tierpool::test

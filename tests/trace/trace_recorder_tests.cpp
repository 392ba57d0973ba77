// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_recorder_tests.cpp — trace::recorder (TIERPOOL_TRACE): format by extension,
// concurrent record() calls from several threads keep every event whole and each
// thread's events in its order, and from_environment().
#include "trace_test_util.hpp"

#include "support/scoped_env.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace {

using namespace trace_test;
using tt::event;
using tt::event_kind;

constexpr std::uint64_t kThreads = 4;
constexpr std::uint64_t kPerThread = 5000;

void record_from_threads(tt::recorder& rec)
{
  std::vector<std::thread> threads;
  for (std::uint64_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&rec, t] {
      for (std::uint64_t i = 0; i < kPerThread; ++i) {
        // stream = thread, tensor = sequence number within the thread, a name to make records long.
        rec.record({.kind = event_kind::allocate, .stream = static_cast<std::uint32_t>(t), .tensor = i,
                    .bytes = 4096, .time_ns = i + 1, .name = "thread " + std::to_string(t)});
      }
    });
  }
  for (auto& th : threads) { th.join(); }
}

void expect_per_thread_order(std::vector<event> const& events)
{
  ASSERT_EQ(events.size(), kThreads * kPerThread);
  std::vector<std::uint64_t> next(kThreads, 0);
  for (auto const& e : events) {
    ASSERT_LT(e.stream, kThreads);
    ASSERT_EQ(e.tensor, next[e.stream]++);
    ASSERT_EQ(e.name, "thread " + std::to_string(e.stream));
  }
}

TEST(TraceRecorder, ConcurrentRecordsStayWholeAndOrderedPerThread)
{
  for (char const* leaf : {"rec.tpt", "rec.tpb"}) {
    auto const path = scratch(leaf);
    {
      tt::recorder rec(path);
      record_from_threads(rec);
      EXPECT_EQ(rec.events_recorded(), kThreads * kPerThread);
      rec.flush();
    }  // the destructor closes
    EXPECT_EQ(tt::detect_format(path), tt::output_format_for(path));
    expect_per_thread_order(tt::read_all(path));
  }
}

TEST(TraceRecorder, FromEnvironment)
{
  {
    tierpool::test::scoped_env const unset("TIERPOOL_TRACE", nullptr);
    EXPECT_EQ(tt::recorder::from_environment(), nullptr);
  }
  auto const path = scratch("env.tpb");
  tierpool::test::scoped_env const set("TIERPOOL_TRACE", path.c_str());
  auto rec = tt::recorder::from_environment();
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->path(), path);
  rec->record({.kind = event_kind::phase, .name = "hello"});
  rec->close();
  EXPECT_THROW(rec->record({}), tierpool::trace_error);
  EXPECT_EQ(tt::read_all(path), (std::vector<event>{{.kind = event_kind::phase, .name = "hello"}}));
}

}  // namespace

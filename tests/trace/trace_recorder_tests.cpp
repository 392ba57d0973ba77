// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_recorder_tests.cpp — trace::recorder (TIERPOOL_TRACE): format by extension,
// concurrent record() calls from several threads keep every event whole and each
// thread's events in its order, and from_environment(). Failures (a full disk:
// /dev/full): the first write error stops the recording and is reported once, by the
// recorder and by a recording pool (pool::tracing_error(), one stderr line), mid-run or
// at close; a file that cannot be created is an error naming TIERPOOL_TRACE.
#include "trace_test_util.hpp"

#include "support/scoped_env.hpp"

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/pool.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
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

// ---- failures --------------------------------------------------------------------

bool have_dev_full() { return std::filesystem::exists("/dev/full"); }

// Enough events to fill the writer's 1 MiB buffer several times.
constexpr std::uint64_t kManyEvents = 60'000;

tt::event long_event(std::uint64_t i)
{
  return {.kind = event_kind::allocate, .tensor = i, .bytes = 4096, .time_ns = i + 1, .name = std::string(40, 'x')};
}

TEST(TraceRecorder, AWriteErrorStopsTheRecordingAndIsThrownOnce)
{
  if (!have_dev_full()) { GTEST_SKIP() << "no /dev/full"; }
  tt::recorder rec("/dev/full");
  std::uint64_t throws = 0;
  std::string first;
  for (std::uint64_t i = 0; i < kManyEvents; ++i) {
    try {
      rec.record(long_event(i));
    } catch (tierpool::trace_error const& e) {
      if (throws++ == 0) { first = e.what(); }
    }
  }
  EXPECT_EQ(throws, 1U);
  EXPECT_EQ(first, "cannot write trace '/dev/full': No space left on device");
  EXPECT_EQ(rec.error(), first);
  EXPECT_GT(rec.events_dropped(), 0U);
  EXPECT_EQ(rec.events_recorded() + rec.events_dropped(), kManyEvents);
  EXPECT_NO_THROW(rec.flush());  // stopped: nothing more to say
  EXPECT_NO_THROW(rec.close());
  EXPECT_EQ(rec.error(), first);
}

TEST(TraceRecorder, AFailureAtCloseIsThrownAndKept)
{
  if (!have_dev_full()) { GTEST_SKIP() << "no /dev/full"; }
  tt::recorder rec("/dev/full");
  rec.record({.kind = event_kind::phase, .name = "short"});  // buffered: nothing fails yet
  EXPECT_EQ(rec.error(), "");
  try {
    rec.close();
    ADD_FAILURE() << "close() on /dev/full did not throw";
  } catch (tierpool::trace_error const& e) {
    EXPECT_NE(std::string(e.what()).find("trace '/dev/full': No space left on device"), std::string::npos) << e.what();
    EXPECT_EQ(rec.error(), e.what());
  }
  EXPECT_NO_THROW(rec.close());
  EXPECT_NO_THROW(rec.record({}));  // stopped: dropped, not thrown
  EXPECT_EQ(rec.events_dropped(), 1U);
}

std::shared_ptr<tierpool::sim_backend> small_sim()
{
  tierpool::sim_options so;
  so.device_bytes = 8U << 20U;
  so.memory = tierpool::sim_memory_mode::real;
  return std::make_shared<tierpool::sim_backend>(so);
}

tierpool::pool_options recording_options(std::string const& trace_path)
{
  tierpool::pool_options o;
  o.backend_object = small_sim();
  o.tiers = {{.kind = tierpool::tier_kind::device, .capacity_bytes = 4U << 20U},
             {.kind = tierpool::tier_kind::host, .capacity_bytes = 16U << 20U}};
  o.read_environment = false;
  o.publish.enabled = false;
  o.trace_path = trace_path;
  return o;
}

// Lines of `text` that mention the trace.
std::vector<std::string> trace_lines(std::string const& text)
{
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("trace") != std::string::npos) { out.push_back(line); }
  }
  return out;
}

TEST(PoolTraceFailure, ALongRunReportsTheFirstWriteErrorOnceAndInItsState)
{
  if (!have_dev_full()) { GTEST_SKIP() << "no /dev/full"; }
  testing::internal::CaptureStderr();
  std::string error_mid_run;
  std::string error_after_close;
  {
    tierpool::pool p{recording_options("/dev/full")};
    tierpool::tensor t = p.allocate(4096, {.name = "t"});
    for (std::uint64_t i = 0; i < kManyEvents / 2; ++i) {  // access + release: two events each
      auto h = p.acquire_host(t, tierpool::access_mode::read);
    }
    error_mid_run = p.tracing_error();
    p.close();
    error_after_close = p.tracing_error();
  }
  std::string const err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(error_mid_run, "cannot write trace '/dev/full': No space left on device");
  EXPECT_EQ(error_after_close, error_mid_run);
  EXPECT_EQ(trace_lines(err), (std::vector<std::string>{"tierpool: recording the trace stopped: cannot write trace "
                                                        "'/dev/full': No space left on device; later events are not "
                                                        "recorded; free space there or record to another path "
                                                        "(TIERPOOL_TRACE, pool_options::trace_path)"}))
    << err;
}

TEST(PoolTraceFailure, AShortRunReportsTheFailureAtClose)
{
  if (!have_dev_full()) { GTEST_SKIP() << "no /dev/full"; }
  testing::internal::CaptureStderr();
  std::string before_close;
  std::string after_close;
  {
    tierpool::pool p{recording_options("/dev/full")};
    { tierpool::tensor t = p.allocate(4096, {.name = "t"}); }
    before_close = p.tracing_error();  // everything is still buffered
    p.close();
    after_close = p.tracing_error();
  }
  std::string const err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(before_close, "");
  EXPECT_NE(after_close.find("trace '/dev/full': No space left on device"), std::string::npos) << after_close;
  ASSERT_EQ(trace_lines(err).size(), 1U) << err;
  EXPECT_EQ(trace_lines(err)[0], "tierpool: recording the trace stopped: " + after_close +
                                   "; later events are not recorded; free space there or record to another path "
                                   "(TIERPOOL_TRACE, pool_options::trace_path)");
}

TEST(PoolTraceFailure, ThePoolsDestructorReportsAFailureTooAndSilentNoticeKeepsQuiet)
{
  if (!have_dev_full()) { GTEST_SKIP() << "no /dev/full"; }
  testing::internal::CaptureStderr();
  {
    tierpool::pool p{recording_options("/dev/full")};
    tierpool::tensor t = p.allocate(4096);
  }  // no close(): the destructor closes the trace
  EXPECT_EQ(trace_lines(testing::internal::GetCapturedStderr()).size(), 1U);

  testing::internal::CaptureStderr();
  std::string error;
  {
    tierpool::pool_options o = recording_options("/dev/full");
    o.notice = tierpool::fallback_notice::silent;  // the program reports tracing_error() itself
    tierpool::pool p{o};
    tierpool::tensor t = p.allocate(4096);
    p.close();
    error = p.tracing_error();
  }
  EXPECT_EQ(trace_lines(testing::internal::GetCapturedStderr()).size(), 0U);
  EXPECT_NE(error, "");
}

TEST(PoolTraceFailure, AFileThatCannotBeCreatedNamesTheVariable)
{
  auto const missing = scratch("no-such-dir") / "run.tpt";
  {
    tierpool::test::scoped_env const set("TIERPOOL_TRACE", missing.c_str());
    tierpool::pool_options o = recording_options("");
    o.read_environment = true;
    o.ignore_environment = {"TIERPOOL_BACKEND", "TIERPOOL_DEVICE_BYTES", "TIERPOOL_POLICY", "TIERPOOL_PREFETCH",
                            "TIERPOOL_PUBLISH"};
    try {
      tierpool::pool p{o};
      ADD_FAILURE() << "a pool recording to " << missing << " was made";
    } catch (tierpool::trace_error const& e) {
      EXPECT_EQ(std::string(e.what()),
                "TIERPOOL_TRACE: cannot create trace '" + missing.string() + "': No such file or directory");
    }
  }
  try {
    tierpool::pool p{recording_options(missing.string())};  // from the options: no variable to name
    ADD_FAILURE() << "a pool recording to " << missing << " was made";
  } catch (tierpool::trace_error const& e) {
    EXPECT_EQ(std::string(e.what()), "cannot create trace '" + missing.string() + "': No such file or directory");
  }
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_load_tests.cpp — the streaming load of a trace into the replay form
// (compiled_trace::compile(reader&), compile_file()): the same arrays as read_all() +
// compile(span) for every format, from a file and from a pipe, with --loop; the reader's
// errors (a truncated final record, an empty input) and compile()'s refusals, first one
// in trace order; the lower bound's plain-read path; the request array on huge pages.
#include "trace/trace_test_util.hpp"

#include "replay/detail/compiled_data.hpp"

#include <tierpool/error.hpp>
#include <tierpool/replay.hpp>
#include <tierpool/trace.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using namespace trace_test;  // NOLINT(google-build-using-namespace): test helpers
namespace tr = tierpool::replay;
namespace rd = tierpool::replay::detail;
using tt::event;
using tt::event_kind;

std::string oracle_record(std::uint32_t time, std::uint64_t id, std::uint32_t size)
{
  return le(time) + le(id) + le(size) + le(std::uint64_t{0});
}

// Records with repeated and fresh ids, one of size 0 (skipped by the reader).
std::string oracle_bytes(std::size_t records)
{
  std::string bytes;
  for (std::size_t i = 0; i < records; ++i) {
    std::uint64_t const id = (i * 2654435761ULL) % 97 + (i % 7 == 0 ? 1'000'000'007ULL * i : 0);
    auto const size = static_cast<std::uint32_t>(i == 3 ? 0 : 512 + (id % 5) * 4096);
    bytes += oracle_record(static_cast<std::uint32_t>(i / 10), id, size);
  }
  return bytes;
}

void expect_same(tr::compiled_trace const& a, tr::compiled_trace const& b)
{
  rd::compiled_data const& x = a.data();
  rd::compiled_data const& y = b.data();
  EXPECT_EQ(x.events, y.events);
  EXPECT_EQ(x.requests, y.requests);
  EXPECT_EQ(x.objects, y.objects);
  EXPECT_EQ(x.working_set_bytes, y.working_set_bytes);
  EXPECT_EQ(x.peak_live_bytes, y.peak_live_bytes);
  EXPECT_EQ(x.requested_bytes, y.requested_bytes);
  EXPECT_EQ(x.compute_ns, y.compute_ns);
  EXPECT_EQ(x.max_stream_compute_ns, y.max_stream_compute_ns);
  EXPECT_EQ(x.compute_events, y.compute_events);
  EXPECT_EQ(x.release_events, y.release_events);
  EXPECT_EQ(x.streams, y.streams);
  EXPECT_EQ(x.discards, y.discards);
  EXPECT_EQ(x.flagged, y.flagged);
  ASSERT_EQ(x.cache.size(), y.cache.size());
  for (std::size_t i = 0; i < x.cache.size(); ++i) {
    ASSERT_EQ(x.cache[i].obj, y.cache[i].obj) << "request " << i;
    ASSERT_EQ(x.cache[i].next, y.cache[i].next) << "request " << i;
    ASSERT_EQ(x.cache[i].word, y.cache[i].word) << "request " << i;
  }
  ASSERT_EQ(x.ops.size(), y.ops.size());
  for (std::size_t i = 0; i < x.ops.size(); ++i) {
    rd::pool_op const& p = x.ops[i];
    rd::pool_op const& q = y.ops[i];
    ASSERT_TRUE(p.kind == q.kind && p.mode == q.mode && p.host == q.host && p.obj == q.obj && p.stream == q.stream &&
                p.tier == q.tier && p.bytes == q.bytes && p.arg == q.arg)
      << "pool op " << i;
  }
}

// A recorded-style trace with every event kind, two streams, host accesses, writes,
// discards, frees, re-allocates while live, and more events than one reader batch.
std::vector<event> mixed_events()
{
  std::vector<event> ev;
  for (std::uint64_t round = 0; round < 300; ++round) {
    std::uint64_t const a = round % 11;
    std::uint64_t const b = 100 + round % 5;
    ev.push_back({.kind = event_kind::allocate, .tier = round % 3 == 0 ? 1U : tt::no_tier, .tensor = a,
                  .bytes = 4096 * (1 + a)});
    ev.push_back({.kind = event_kind::access, .mode = tt::access_kind::write_discard, .stream = 1, .tensor = a});
    ev.push_back({.kind = event_kind::access, .stream = round % 2 == 0 ? 0U : tt::host_stream, .tensor = b,
                  .bytes = 8192});
    ev.push_back({.kind = event_kind::prefetch, .tier = 0, .tensor = b});
    ev.push_back({.kind = event_kind::compute, .stream = 1, .duration_ns = 1000 + round});
    ev.push_back({.kind = event_kind::access, .mode = tt::access_kind::read_write, .tensor = a});
    ev.push_back({.kind = event_kind::release, .stream = 1, .tensor = a});
    if (round % 4 == 3) { ev.push_back({.kind = event_kind::free, .tensor = a}); }
    if (round % 50 == 0) { ev.push_back({.kind = event_kind::phase, .name = "step"}); }
    ev.push_back({.kind = event_kind::free, .tensor = 999});  // never allocated: nothing
  }
  return ev;
}

void write_events(std::filesystem::path const& path, std::vector<event> const& ev, tt::format f)
{
  tt::writer w(path, f);
  for (event const& e : ev) { w.write(e); }
  w.close();
}

}  // namespace

TEST(TraceLoad, CompileFileEqualsReadAllThenCompileInEveryNativeFormat)
{
  auto const ev = mixed_events();
  for (auto const f : {tt::format::text, tt::format::binary}) {
    auto const path = scratch(f == tt::format::text ? "mixed.tpt" : "mixed.tpb");
    write_events(path, ev, f);
    for (std::uint32_t loop : {1U, 3U}) {
      for (bool pool : {true, false}) {
        SCOPED_TRACE(std::string(tt::to_string(f)) + " loop " + std::to_string(loop) + (pool ? " pool" : " cache"));
        tr::compile_options const o{.loop = loop, .pool = pool};
        auto const streamed = tr::compiled_trace::compile_file(path, {}, o);
        auto const held = tr::compiled_trace::compile(tt::read_all(path), o);
        expect_same(streamed, held);
        EXPECT_GT(streamed.requests(), 0U);
        EXPECT_TRUE(streamed.data().discards);
      }
    }
  }
}

TEST(TraceLoad, CompileFileEqualsReadAllThenCompileForOracleGeneral)
{
  auto const path = scratch("mixed.oracleGeneral.bin");
  std::string const bytes = oracle_bytes(5000);  // ~10 reader batches
  write_file(path, bytes);
  for (std::uint32_t loop : {1U, 2U}) {
    for (bool ignore : {false, true}) {
      SCOPED_TRACE("loop " + std::to_string(loop) + (ignore ? " ignore_size" : ""));
      tr::compile_options const o{.loop = loop, .ignore_size = ignore, .pool = false};
      auto const streamed = tr::compiled_trace::compile_file(path, {}, o);
      auto const held = tr::compiled_trace::compile(tt::read_all(path), o);
      expect_same(streamed, held);
      EXPECT_EQ(streamed.requests(), 4999U * loop);  // the size-0 record is skipped
      EXPECT_FALSE(streamed.data().flagged);
    }
  }
  // Reserved from the file's size (5000 records), not grown past it.
  auto const t = tr::compiled_trace::compile_file(path, {}, {.pool = false});
  EXPECT_EQ(t.data().cache.capacity(), 5000U);
}

TEST(TraceLoad, SampleTraceStreamsToTheSameArrays)
{
  std::filesystem::path const sample = std::filesystem::path(TIERPOOL_SAMPLE_TRACES_DIR) / "cloudphysics.oracleGeneral.bin";
  if (std::string(TIERPOOL_SAMPLE_TRACES_DIR).empty() || !std::filesystem::exists(sample)) {
    GTEST_SKIP() << "sample trace not found at " << sample << " (set TIERPOOL_SAMPLE_TRACES_DIR)";
  }
  tr::compile_options const o{.pool = false};
  auto const streamed = tr::compiled_trace::compile_file(sample, {}, o);
  expect_same(streamed, tr::compiled_trace::compile(tt::read_all(sample), o));
  EXPECT_EQ(streamed.requests(), 113'872U);
  EXPECT_EQ(streamed.objects(), 48'974U);
}

namespace {

// Writes `bytes` into a FIFO at `path` from a thread (the reader opens the other end).
struct fifo_writer {
  fifo_writer(std::filesystem::path const& path, std::string bytes)
  {
    std::filesystem::remove(path);
    if (::mkfifo(path.c_str(), 0600) != 0) { ADD_FAILURE() << "mkfifo failed"; }
    thread = std::thread([p = path, b = std::move(bytes)] {
      int const fd = ::open(p.c_str(), O_WRONLY);
      if (fd < 0) { return; }
      std::size_t done = 0;
      while (done < b.size()) {
        ssize_t const n = ::write(fd, b.data() + done, b.size() - done);
        if (n <= 0) { break; }
        done += static_cast<std::size_t>(n);
      }
      ::close(fd);
    });
  }
  ~fifo_writer() { thread.join(); }
  fifo_writer(fifo_writer const&) = delete;
  fifo_writer& operator=(fifo_writer const&) = delete;
  std::thread thread;
};

}  // namespace

TEST(TraceLoad, APipeCompilesLikeTheFile)
{
  std::string const bytes = oracle_bytes(3000);
  auto const file = scratch("piped.oracleGeneral.bin");
  write_file(file, bytes);
  for (std::uint32_t loop : {1U, 2U}) {
    SCOPED_TRACE("loop " + std::to_string(loop));
    tr::compile_options const o{.loop = loop, .pool = false};
    auto const fifo = scratch("trace.fifo");  // no extension: detected from the content
    tr::compiled_trace piped;
    {
      fifo_writer w(fifo, bytes);
      piped = tr::compiled_trace::compile_file(fifo, {}, o);
    }
    expect_same(piped, tr::compiled_trace::compile_file(file, {}, o));
    EXPECT_EQ(piped.data().cache.size(), 2999U * loop);
  }
}

TEST(TraceLoad, ATruncatedFinalRecordIsAnErrorAtItsOffset)
{
  std::string const bytes = oracle_bytes(700) + oracle_record(1, 5, 4096).substr(0, 10);
  auto const file = scratch("cut.oracleGeneral.bin");
  write_file(file, bytes);
  auto const what = "offset " + std::to_string(700 * 24) + ": truncated record: the file ends 10 bytes into it";
  EXPECT_THAT([&] { (void)tr::compiled_trace::compile_file(file, {}, {.pool = false}); },
              ::testing::ThrowsMessage<tierpool::trace_error>(::testing::HasSubstr(what)));
  auto const fifo = scratch("cut.fifo");
  {
    fifo_writer w(fifo, bytes);
    EXPECT_THAT([&] { (void)tr::compiled_trace::compile_file(fifo, {.fmt = tt::format::oracle_general}, {.pool = false}); },
                ::testing::ThrowsMessage<tierpool::trace_error>(::testing::HasSubstr(what)));
  }
}

TEST(TraceLoad, AnEmptyFileIsUndetectedOrEmpty)
{
  auto const file = scratch("empty.bin.part");
  write_file(file, "");
  EXPECT_THAT([&] { (void)tr::compiled_trace::compile_file(file); },
              ::testing::ThrowsMessage<tierpool::trace_error>(::testing::HasSubstr("the input is empty")));
  auto const t = tr::compiled_trace::compile_file(file, {.fmt = tt::format::oracle_general}, {.pool = false});
  EXPECT_EQ(t.events(), 0U);
  EXPECT_EQ(t.requests(), 0U);
  EXPECT_TRUE(t.data().cache.empty());
  auto const gone = scratch("missing.bin");
  EXPECT_THROW((void)tr::compiled_trace::compile_file(gone), tierpool::trace_error);
}

// The reader path resolves a batch of ids before it applies them: the error reported is
// still the first one in trace order, whichever check finds it.
TEST(TraceLoad, TheFirstRefusalInTraceOrderIsReported)
{
  std::vector<event> unsized_first(20, {.kind = event_kind::access, .tensor = 1, .bytes = 64});
  unsized_first[5] = {.kind = event_kind::access, .tensor = 2};                         // never allocated, no size
  unsized_first[9] = {.kind = event_kind::allocate, .tensor = 3};                       // 0 bytes
  std::vector<event> zero_first = unsized_first;
  std::swap(zero_first[5], zero_first[9]);
  std::vector<event> too_big_first = unsized_first;
  too_big_first[2] = {.kind = event_kind::access, .tensor = 4, .bytes = rd::kMaxBytes + 1};
  struct cse {
    std::vector<event> const* events;
    char const* message;
  };
  for (cse const& c : {cse{&unsized_first, "access of tensor 2 before any allocate, without a size (event 6)"},
                       cse{&zero_first, "allocate of tensor 3 with 0 bytes"},
                       cse{&too_big_first, "tensor 4 has 1152921504606846976 bytes"}}) {
    SCOPED_TRACE(c.message);
    auto const path = scratch("refused.tpb");
    write_events(path, *c.events, tt::format::binary);
    EXPECT_THAT([&] { (void)tr::compiled_trace::compile_file(path, {}, {.pool = false}); },
                ::testing::ThrowsMessage<tierpool::logic_error>(::testing::HasSubstr(c.message)));
    EXPECT_THAT([&] { (void)tr::compiled_trace::compile(*c.events, {.pool = false}); },
                ::testing::ThrowsMessage<tierpool::logic_error>(::testing::HasSubstr(c.message)));
  }
}

TEST(TraceLoad, ALoopTooLongForTheArraysIsRefusedFromAReaderToo)
{
  std::string const bytes = oracle_record(0, 1, 64) + oracle_record(0, 2, 64);
  auto r = tt::open_memory_reader(bytes, {.fmt = tt::format::oracle_general}, "two");
  EXPECT_THAT([&] { (void)tr::compiled_trace::compile(*r, {.loop = 4294967295U, .pool = false}); },
              ::testing::ThrowsMessage<tierpool::logic_error>(
                ::testing::HasSubstr("2 events looped 4294967295 times are too many")));
  auto again = tt::open_memory_reader(bytes, {.fmt = tt::format::oracle_general}, "two");
  EXPECT_THROW((void)tr::compiled_trace::compile(*again, {.loop = 0}), tierpool::logic_error);
}

// The lower bound of a trace of plain reads takes a shorter path; it must agree with the
// general one (forced by marking the same arrays as flagged).
TEST(TraceLoad, LowerBoundOfPlainReadsAgreesWithTheGeneralPath)
{
  auto const path = scratch("reads.oracleGeneral.bin");
  write_file(path, oracle_bytes(4000));
  auto const t = tr::compiled_trace::compile_file(path, {}, {.pool = false});
  ASSERT_FALSE(t.data().flagged);
  rd::compiled_data general = t.data();
  general.flagged = true;
  for (std::uint64_t capacity : {std::uint64_t{1}, std::uint64_t{5000}, std::uint64_t{20'000},
                                 std::uint64_t{100'000}, t.working_set_bytes()}) {
    SCOPED_TRACE(capacity);
    auto const fast = rd::compute_must_move(t.data(), capacity);
    auto const slow = rd::compute_must_move(general, capacity);
    EXPECT_EQ(fast.h2d_bytes, slow.h2d_bytes);
    EXPECT_EQ(fast.h2d_copies, slow.h2d_copies);
    EXPECT_EQ(fast.d2h_bytes, slow.d2h_bytes);
  }
  EXPECT_GT(rd::compute_must_move(t.data(), 20'000).h2d_bytes, 0U);
}

// The request array of a long trace is mapped on huge pages (Note [Big arrays on huge
// pages]): 2 MiB-aligned, which operator new's blocks are not.
TEST(TraceLoad, ALongTracesRequestArrayIsOnHugePages)
{
  std::size_t const records = tierpool::detail::kBigArrayBytes / sizeof(rd::cache_req) + 100;
  auto const path = scratch("long.oracleGeneral.bin");
  write_file(path, oracle_bytes(records));
  auto const t = tr::compiled_trace::compile_file(path, {}, {.pool = false});
  ASSERT_EQ(t.data().cache.size(), records - 1);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data().cache.data()) % (std::size_t{2} << 20U), 0U);
}

// read_all() of fixed-size records reserves from the file's size and never grows past it
// (growing by doubling for the last events held twice the memory); a pipe reads the same.
TEST(TraceLoad, ReadAllOfOracleGeneralReservesFromTheFileSize)
{
  std::string const bytes = oracle_bytes(5000);
  auto const file = scratch("all.oracleGeneral.bin");
  write_file(file, bytes);
  auto const events = tt::read_all(file);
  EXPECT_EQ(events.size(), 4999U);  // the size-0 record is skipped
  EXPECT_EQ(events.capacity(), 5000U);
  EXPECT_EQ(events, read_memory(bytes, {.fmt = tt::format::oracle_general}));
  auto const fifo = scratch("all.fifo");
  std::vector<event> piped;
  {
    fifo_writer w(fifo, bytes);
    piped = tt::read_all(fifo);
  }
  EXPECT_EQ(piped, events);
  auto const text = scratch("all.tpt");
  write_events(text, mixed_events(), tt::format::text);
  EXPECT_EQ(tt::read_all(text), mixed_events());
}

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_summary_tests.cpp — trace::summarize(), the figures of `tierpool trace stat`:
// every event kind is counted in its own slot (release included), and sums that would
// pass 2^64 saturate and say so instead of wrapping.
#include "trace_test_util.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace {

using namespace trace_test;
using tt::event;
using tt::event_kind;

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

TEST(TraceSummary, CountsEveryKindInItsOwnSlot)
{
  // alloc, read, release: one request. events_by_kind had 6 slots and release is 6, so the
  // release was counted in the field after the array (requests became 2).
  auto const events = read_memory("# tierpool-trace v1\nalloc 1 8\nread 1\nrelease 1\n");
  ASSERT_EQ(events.size(), 3U);
  tt::summary const s = tt::summarize(events);
  EXPECT_EQ(s.events, 3U);
  EXPECT_EQ(s.requests, 1U);
  EXPECT_EQ(s.reads, 1U);
  ASSERT_EQ(s.events_by_kind.size(), tt::event_kind_count);
  EXPECT_EQ(s.events_by_kind[static_cast<std::size_t>(event_kind::allocate)], 1U);
  EXPECT_EQ(s.events_by_kind[static_cast<std::size_t>(event_kind::access)], 1U);
  EXPECT_EQ(s.events_by_kind[static_cast<std::size_t>(event_kind::release)], 1U);
  std::uint64_t sum = 0;
  for (auto v : s.events_by_kind) { sum += v; }
  EXPECT_EQ(sum, s.events);
  EXPECT_EQ(to_string(static_cast<event_kind>(tt::event_kind_count - 1)), "discard");
}

// A discard of a live tensor is well-formed; one of a dead id, and a read of a discarded
// tensor before a write_discard, are not (a pool would refuse the read).
TEST(TraceSummary, CountsDiscardsAndTheReadsAPoolWouldRefuse)
{
  auto const events = read_memory(
    "# tierpool-trace v1\nalloc 1 8\nwd 1\ndiscard 1\nwd 1\nread 1\ndiscard 1\nread 1\nrw 1\nwd 1\nread 1\n"
    "discard 2\nfree 1\ndiscard 1\nalloc 1 8\nread 1\n");
  tt::summary const s = tt::summarize(events);
  EXPECT_EQ(s.events_by_kind[static_cast<std::size_t>(event_kind::discard)], 4U);
  EXPECT_EQ(s.discards_not_live, 2U);   // id 2 never allocated; id 1 after its free
  EXPECT_EQ(s.reads_after_discard, 2U);  // the read and the rw after the second discard
  EXPECT_EQ(s.requests, 8U);
}

// `read 43 bytes=2^64-1` and a 512-byte object showed a working set of 511 B.
TEST(TraceSummary, SumsSaturateAndSaySoInsteadOfWrapping)
{
  auto const events = read_memory(
    "# tierpool-trace v1\nread 43 bytes=18446744073709551615\nread 2 bytes=512\n"
    "compute 18446744073709551615\ncompute 7\n");
  tt::summary const s = tt::summarize(events);
  EXPECT_TRUE(s.saturated);
  EXPECT_EQ(s.working_set_bytes, kMax);
  EXPECT_EQ(s.peak_live_bytes, kMax);
  EXPECT_EQ(s.live_bytes_at_end, kMax);
  EXPECT_EQ(s.compute_ns, kMax);
  EXPECT_EQ(s.busiest_stream_compute_ns, kMax);
  EXPECT_EQ(s.objects, 2U);
}

// Streams run side by side: the busiest stream's compute is what bounds a run (the replay's
// ideal time), beside the sum over every stream.
TEST(TraceSummary, CountsTheComputeOfTheBusiestStream)
{
  auto const events = read_memory("# tierpool-trace v1\ncompute 5 s=1\ncompute 10\ncompute 7 s=1\ncompute 2 s=3\n");
  tt::summary const s = tt::summarize(events);
  EXPECT_EQ(s.compute_ns, 24U);
  EXPECT_EQ(s.compute_streams, 3U);
  EXPECT_EQ(s.busiest_stream_compute_ns, 12U);
  EXPECT_FALSE(s.saturated);
  tt::summary const none = tt::summarize(read_memory("# tierpool-trace v1\nalloc 1 8\n"));
  EXPECT_EQ(none.compute_streams, 0U);
  EXPECT_EQ(none.busiest_stream_compute_ns, 0U);
}

// Live bytes are exact underneath: once the huge object is freed the figure is right again.
TEST(TraceSummary, LiveBytesAreExactUnderTheSaturation)
{
  std::vector<event> const events{
    {.kind = event_kind::allocate, .tensor = 1, .bytes = kMax},
    {.kind = event_kind::allocate, .tensor = 2, .bytes = 512},
    {.kind = event_kind::free, .tensor = 1},
  };
  tt::summary const s = tt::summarize(events);
  EXPECT_TRUE(s.saturated);
  EXPECT_EQ(s.live_bytes_at_end, 512U);
  EXPECT_EQ(s.peak_live_bytes, kMax);
  EXPECT_EQ(s.allocated_bytes, kMax);
  EXPECT_EQ(s.live_at_end, 1U);
}

// The eviction hints: recomputable allocates, their bytes and recompute costs; lossy-ok
// allocates and bytes. A duration without the recompute hint, and no-compress, count in neither.
TEST(TraceSummary, CountsTheEvictionHints)
{
  auto const s = tt::summarize(read_memory(
    "# tierpool-trace v1\n"
    "alloc 1 100 dur=40 hints=recompute,lossy\n"
    "alloc 2 1000 dur=2 hints=recompute\n"
    "alloc 3 10 hints=lossy\n"
    "alloc 4 5 hints=nocompress\n"
    "alloc 5 7 dur=9\n"
    "free 1\n"
    "alloc 1 100 dur=40 hints=recompute,lossy\n"));  // counted again, as allocated_bytes is
  EXPECT_EQ(s.recomputable_tensors, 3U);
  EXPECT_EQ(s.recomputable_bytes, 1200U);
  EXPECT_EQ(s.recompute_ns, 82U);
  EXPECT_EQ(s.lossy_ok_tensors, 3U);
  EXPECT_EQ(s.lossy_ok_bytes, 210U);
  EXPECT_EQ(s.compute_ns, 0U);  // recompute costs are not compute
  EXPECT_FALSE(s.saturated);

  std::vector<event> const huge{
    {.kind = event_kind::allocate, .tensor = 1, .bytes = kMax, .duration_ns = kMax, .hints = tt::hint_recomputable},
    {.kind = event_kind::allocate, .tensor = 2, .bytes = 1, .duration_ns = 1, .hints = tt::hint_recomputable},
  };
  auto const h = tt::summarize(huge);
  EXPECT_TRUE(h.saturated);
  EXPECT_EQ(h.recomputable_bytes, kMax);
  EXPECT_EQ(h.recompute_ns, kMax);
  EXPECT_EQ(h.recomputable_tensors, 2U);
}

TEST(TraceSummary, NoSaturationWithoutOverflow)
{
  auto const s = tt::summarize(read_memory("# tierpool-trace v1\nread 1 bytes=8\nread 2 bytes=9\n"));
  EXPECT_FALSE(s.saturated);
  EXPECT_EQ(s.working_set_bytes, 17U);
}

}  // namespace

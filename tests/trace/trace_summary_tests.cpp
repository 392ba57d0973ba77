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
  EXPECT_EQ(to_string(static_cast<event_kind>(tt::event_kind_count - 1)), "release");
}

}  // namespace

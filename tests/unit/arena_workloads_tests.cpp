// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// arena_workloads_tests.cpp — the arena workload generators (docs/chapters/benchmarks.md, "Arena workloads")
// (determinism per seed, shape of each workload), the alloc-trace text format (round trip,
// errors naming the line) and the replay driver (deterministic failures).
#include "workloads/arena_workloads.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

namespace wl = tierpool::workloads;
using ::testing::HasSubstr;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20U;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30U;

TEST(ArenaWorkloads, GeneratorIsDeterministicPerSeed)
{
  for (auto w : {wl::arena_workload::rand85, wl::arena_workload::dnn_dyn}) {
    auto const a = wl::generate_arena_workload(w, 1000, 50'000);
    auto const b = wl::generate_arena_workload(w, 1000, 50'000);
    auto const c = wl::generate_arena_workload(w, 1001, 50'000);
    EXPECT_EQ(a.ops, b.ops) << wl::to_string(w);
    EXPECT_NE(a.ops, c.ops) << wl::to_string(w);
  }
}

TEST(ArenaWorkloads, RandTracesFollowTheDefinition)
{
  auto const t = wl::generate_arena_workload(wl::arena_workload::rand85, 1000);
  EXPECT_EQ(t.ops.size(), 1'000'000U);
  EXPECT_EQ(t.capacity, 16 * kGiB);
  EXPECT_EQ(t.alignment, 256U);
  std::vector<std::uint64_t> bytes(t.slot_count, 0);
  std::uint64_t live = 0;
  for (auto const& op : t.ops) {
    if (op.is_alloc) {
      ASSERT_EQ(op.bytes % 256, 0U);
      ASSERT_GE(op.bytes, 256U);
      ASSERT_LE(op.bytes, 64 * kMiB);
      ASSERT_EQ(bytes[op.slot], 0U) << "slot reused while live";
      bytes[op.slot] = op.bytes;
      live += op.bytes;
      ASSERT_LE(live, 16 * kGiB * 85 / 100);
    } else {
      ASSERT_NE(bytes[op.slot], 0U) << "free of a slot that is not live";
      live -= bytes[op.slot];
      bytes[op.slot] = 0;
    }
  }
  EXPECT_EQ(wl::parse_arena_workload("rand50"), wl::arena_workload::rand50);
  EXPECT_FALSE(wl::parse_arena_workload("rand99"));
}

TEST(ArenaWorkloads, DnnTracesHaveTheDefinedLength)
{
  // 64 weights + 1,900 × (200 + 200 + 2 × 60) + 38 × 8 weight replacements.
  auto const s = wl::generate_arena_workload(wl::arena_workload::dnn_static, 1000);
  EXPECT_EQ(s.ops.size(), 64U + 1900U * 520U + 38U * 8U);
  EXPECT_EQ(s.capacity, 16 * kGiB);
  auto const d = wl::generate_arena_workload(wl::arena_workload::dnn_dyn, 1000);
  auto const tight = wl::generate_arena_workload(wl::arena_workload::dnn_tight, 1000);
  EXPECT_EQ(d.ops, tight.ops);
  std::uint64_t const want = (d.peak_live * 102 + 99) / 100;
  EXPECT_EQ(tight.capacity % kMiB, 0U);
  EXPECT_GE(tight.capacity, want);
  EXPECT_LT(tight.capacity - want, kMiB);
  // The model's first weights are the same for every seed (model seed 12345).
  EXPECT_EQ(s.ops[0], wl::generate_arena_workload(wl::arena_workload::dnn_static, 7, 64).ops[0]);
}

TEST(ArenaWorkloads, TraceRoundTripsThroughTheTextFormat)
{
  auto const t = wl::generate_arena_workload(wl::arena_workload::dnn_tight, 1002, 20'000);
  std::string const path = ::testing::TempDir() + "arena_roundtrip.trace";
  wl::write_alloc_trace(path, t);
  auto const r = wl::read_alloc_trace(path);
  std::remove(path.c_str());
  EXPECT_EQ(r.capacity, t.capacity);
  EXPECT_EQ(r.alignment, t.alignment);
  EXPECT_EQ(r.slot_count, t.slot_count);
  EXPECT_EQ(r.peak_live, t.peak_live);
  EXPECT_EQ(r.ops, t.ops);
}

TEST(ArenaWorkloads, ParseAcceptsCommentsAndReportsBadLines)
{
  auto const ok = wl::parse_alloc_trace(
    "# tierpool-alloc-trace v1\ncapacity 4096\nalignment 256\n\na 0 1024   # one KiB\nf 0\n");
  ASSERT_EQ(ok.ops.size(), 2U);
  EXPECT_EQ(ok.ops[0], (wl::alloc_op{1024, 0, true}));
  struct bad_case {
    char const* text;
    std::size_t line;
    char const* what;
  };
  bad_case const cases[] = {
    {"tierpool trace\n", 1, "header"},
    {"# tierpool-alloc-trace v1\ncapacity 4096\nalignment 256\na 0\n", 4, "expected 'a SLOT BYTES'"},
    {"# tierpool-alloc-trace v1\ncapacity 4096\nalignment 256\na 0 12x\n", 4, "got '12x'"},
    {"# tierpool-alloc-trace v1\ncapacity 4096\nalignment 256\nf 3\n", 4, "not live"},
    {"# tierpool-alloc-trace v1\ncapacity 4096\nalignment 256\na 1 5\na 1 5\n", 5, "still live"},
    {"# tierpool-alloc-trace v1\ncapacity 4096\nalignment 100\n", 3, "power of two"},
    {"# tierpool-alloc-trace v1\na 0 1\n", 2, "before 'capacity'"},
    {"# tierpool-alloc-trace v1\ncapacity 4096\nalignment 256\nx 1\n", 4, "unknown directive 'x'"},
    {"# tierpool-alloc-trace v1\ncapacity 4096\nalignment 256\na 0 0\n", 4, "0 bytes"},
  };
  for (auto const& c : cases) {
    try {
      (void)wl::parse_alloc_trace(c.text, "t.trace");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (wl::trace_format_error const& e) {
      EXPECT_EQ(e.line(), c.line) << c.text;
      EXPECT_THAT(e.what(), HasSubstr("line " + std::to_string(c.line))) << c.text;
      EXPECT_THAT(e.what(), HasSubstr(c.what)) << c.text;
      EXPECT_THAT(e.what(), HasSubstr("t.trace"));
    }
  }
}

TEST(ArenaWorkloads, ReplayFailsAllocationsDeterministicallyAndFreesOfFailedSlotsAreNoops)
{
  // 4 KiB arena: the third 2 KiB allocation fails, and its free must be a no-op.
  auto const t = wl::parse_alloc_trace(
    "# tierpool-alloc-trace v1\ncapacity 4096\nalignment 256\na 0 2048\na 1 2048\na 2 2048\nf 2\nf 0\na 3 2048\n");
  wl::measure_options mo;
  mo.frag_interval = 1;
  auto const o = wl::replay_arena(t, mo);
  EXPECT_EQ(o.failures, 1U);
  EXPECT_EQ(o.allocations, 4U);
  EXPECT_EQ(o.highest_offset, 4096U);
  EXPECT_EQ(o.peak_live, 4096U);
  EXPECT_EQ(o.frag_samples, 6U);
  EXPECT_TRUE(o.valid_at_end);

  auto const r = wl::generate_arena_workload(wl::arena_workload::rand85, 1003, 100'000);
  mo.frag_interval = 10'000;
  auto const first = wl::replay_arena(r, mo);
  auto const second = wl::replay_arena(r, mo);
  EXPECT_EQ(first.failures, second.failures);
  EXPECT_EQ(first.highest_offset, second.highest_offset);
  EXPECT_EQ(first.frag_samples, 10U);
  EXPECT_TRUE(first.valid_at_end);
  mo.runs = 2;
  auto const fig = wl::measure_arena(r, mo);
  EXPECT_TRUE(fig.failures_consistent);
  EXPECT_EQ(fig.ns_per_pair_runs.size(), 2U);
  EXPECT_EQ(fig.outcome.failures, first.failures);
}

}  // namespace

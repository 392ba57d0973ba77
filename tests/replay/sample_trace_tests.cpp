// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// sample_trace_tests.cpp — the sample trace the repository ships (tests/data/random_reuse_4k.tpt,
// described in tests/data/README.md): it is exactly what the generator makes from the
// parameters the README gives, it has the figures the README gives, and its replays in
// cache mode and in pool mode give the figures below (deterministic: a change to a policy,
// the pool, the sim backend or the replay shows up here as in the golden files). In object
// mode Belady's MIN hits at least as often as every other built-in policy at every
// capacity. The README's and the docs' example commands run on this file.
#include <tierpool/policy.hpp>
#include <tierpool/replay.hpp>
#include <tierpool/trace.hpp>
#include <tierpool/trace_gen.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tr = tierpool::replay;
namespace tt = tierpool::trace;

namespace {

std::filesystem::path sample_path() { return std::filesystem::path(TIERPOOL_TEST_DATA) / "random_reuse_4k.tpt"; }

std::vector<tt::event> const& sample()
{
  static std::vector<tt::event> const events = tt::read_all(sample_path());
  return events;
}

long long ns(double seconds) { return std::llround(seconds * 1e9); }

std::vector<tr::replay_result> replay(tr::replay_mode mode, std::vector<std::string> policies, bool ignore_size = false)
{
  auto const t = tr::compiled_trace::compile(sample(), {.ignore_size = ignore_size, .pool = !ignore_size});
  tr::grid_options g;
  g.mode = mode;
  g.policies = std::move(policies);
  g.capacities = tr::parse_capacities("10%,25%,50%,100%");
  g.threads = 2;
  return tr::run_grid(t, g);
}

// The figures every replay keeps, whatever the policy.
void expect_consistent(tr::replay_result const& r)
{
  EXPECT_EQ(r.requests, 4048U);
  EXPECT_EQ(r.hits + r.misses, r.requests);
  EXPECT_EQ(r.unserved, 0U) << "every object fits a 10 % device";
  EXPECT_LE(r.bytes_missed, r.bytes_requested);
  EXPECT_GE(r.bytes_h2d, r.must_move_h2d) << "below the bytes any policy must copy in";
  EXPECT_GE(r.makespan_seconds + 1e-12, r.ideal_seconds);
  EXPECT_EQ(ns(r.compute_seconds), 80'000'000);
}

// The committed file is the generator's output for the parameters in tests/data/README.md:
// regenerating it gives the same events, so the file can be rebuilt and is nobody's data.
TEST(SampleTrace, IsTheGeneratorsOutputForItsParameters)
{
  ASSERT_TRUE(std::filesystem::exists(sample_path())) << sample_path();
  tt::generator_params const params{{"tensors", "48"},       {"min_bytes", "4KiB"},  {"max_bytes", "256KiB"},
                                    {"accesses", "4000"},    {"skew", "0.8"},        {"write_ratio", "0.2"},
                                    {"compute_ns", "20000"}};
  std::vector<tt::event> const fresh = tt::generate("random-reuse", params, 13);
  ASSERT_EQ(fresh.size(), sample().size());
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    ASSERT_EQ(tt::format_text(fresh[i]), tt::format_text(sample()[i])) << "event " << i;
  }
}

TEST(SampleTrace, HasTheFiguresItsReadmeGives)
{
  auto const t = tr::compiled_trace::compile(sample());
  EXPECT_EQ(t.events(), 8147U);
  EXPECT_EQ(t.requests(), 4048U);
  EXPECT_EQ(t.objects(), 48U);
  EXPECT_EQ(t.working_set_bytes(), 6'348'800U);
  EXPECT_EQ(t.peak_live_bytes(), 6'348'800U);
  EXPECT_EQ(t.compute_ns(), 80'000'000U);
  EXPECT_EQ(t.streams(), 1U);
  tt::summary const s = tt::summarize(sample());
  EXPECT_EQ(s.requests, 4048U);
  EXPECT_EQ(s.reads, 3230U);
  EXPECT_EQ(s.read_writes, 770U);
  EXPECT_EQ(s.write_discards, 48U);
  EXPECT_EQ(s.tensors, 48U);
  EXPECT_EQ(s.live_at_end, 0U);
  EXPECT_EQ(s.accesses_not_live + s.frees_not_live + s.allocates_live + s.prefetches_not_live, 0U) << "well-formed";
}

struct want {
  char const* policy;
  char const* capacity;
  std::uint64_t capacity_bytes;
  std::uint64_t hits;
  std::uint64_t misses;
  std::uint64_t bytes_missed;
  std::uint64_t bytes_h2d;
  std::uint64_t bytes_d2h;
  std::uint64_t evictions;
  long long stall_ns;
  long long makespan_ns;
};

void expect_figures(std::vector<tr::replay_result> const& got, std::vector<want> const& table)
{
  ASSERT_EQ(got.size(), table.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    tr::replay_result const& r = got[i];
    want const& w = table[i];
    SCOPED_TRACE(r.policy + " at " + r.capacity_label);
    ASSERT_EQ(r.policy, w.policy);
    ASSERT_EQ(r.capacity_label, w.capacity);
    expect_consistent(r);
    EXPECT_EQ(r.capacity_bytes, w.capacity_bytes);
    EXPECT_EQ(r.hits, w.hits);
    EXPECT_EQ(r.misses, w.misses);
    EXPECT_EQ(r.bytes_missed, w.bytes_missed);
    EXPECT_EQ(r.bytes_h2d, w.bytes_h2d);
    EXPECT_EQ(r.bytes_d2h, w.bytes_d2h);
    EXPECT_EQ(r.evictions, w.evictions);
    EXPECT_EQ(ns(r.stall_seconds), w.stall_ns);
    EXPECT_EQ(ns(r.makespan_seconds), w.makespan_ns);
  }
}

// Cache mode: a plain object cache; the 48 first accesses (write-discards) are misses that
// copy nothing in, so the whole working set misses 48 times and moves nothing.
TEST(SampleTrace, CacheModeReplayFigures)
{
  std::vector<want> const table{
    {"lru", "10%", 634880, 687, 3361, 484474880, 478126080, 115068928, 3355, 31891800, 111891800},
    {"lru", "25%", 1587200, 1630, 2418, 333160448, 326811648, 97988608, 2406, 23100010, 103100010},
    {"lru", "50%", 3174400, 2640, 1408, 189624320, 183275520, 66252800, 1384, 13657133, 93657133},
    {"lru", "100%", 6348800, 4000, 48, 6348800, 0, 0, 0, 0, 80000000},
    {"arc", "10%", 634880, 875, 3173, 453591040, 447242240, 110075904, 3168, 30032726, 110032726},
    {"arc", "25%", 1587200, 1768, 2280, 312197120, 305848320, 88997888, 2269, 21523848, 101523848},
    {"arc", "50%", 3174400, 2637, 1411, 190033920, 183685120, 66473984, 1387, 13690364, 93690364},
    {"arc", "100%", 6348800, 4000, 48, 6348800, 0, 0, 0, 0, 80000000},
    {"s3fifo", "10%", 634880, 1101, 2947, 433844224, 427495424, 97783808, 2942, 28125169, 108125169},
    {"s3fifo", "25%", 1587200, 2018, 2030, 283512832, 277164032, 68276224, 2019, 18761610, 98761610},
    {"s3fifo", "50%", 3174400, 2801, 1247, 169590784, 163241984, 48754688, 1223, 11595867, 91595867},
    {"s3fifo", "100%", 6348800, 4000, 48, 6348800, 0, 0, 0, 0, 80000000},
    {"belady", "10%", 634880, 1389, 2659, 379498496, 373149696, 102637568, 2653, 25665491, 105665491},
    {"belady", "25%", 1587200, 2581, 1467, 200626176, 194277376, 68751360, 1455, 14347149, 94347149},
    {"belady", "50%", 3174400, 3345, 703, 91205632, 84856832, 36569088, 679, 6723037, 86723037},
    {"belady", "100%", 6348800, 4000, 48, 6348800, 0, 0, 0, 0, 80000000},
  };
  expect_figures(replay(tr::replay_mode::cache, {"lru", "arc", "s3fifo", "belady"}), table);
}

// Pool mode: the real pool on a simulated device (phantom memory, virtual clock); with the
// whole working set on the device every access is a hit and nothing is copied.
TEST(SampleTrace, PoolModeReplayFigures)
{
  std::vector<want> const table{
    {"lru", "10%", 634880, 596, 3452, 496865280, 496865280, 117379072, 3468, 12568569, 92568569},
    {"lru", "25%", 1587200, 1465, 2583, 356171776, 356171776, 103518208, 2604, 4417709, 84417709},
    {"lru", "50%", 3174400, 2421, 1627, 215670784, 215670784, 73338880, 1642, 1713525, 81713525},
    {"lru", "100%", 6348800, 4048, 0, 0, 0, 0, 0, 0, 80000000},
    {"arc", "10%", 634880, 655, 3393, 487215104, 487215104, 117444608, 3413, 15412561, 95412561},
    {"arc", "25%", 1587200, 1558, 2490, 342913024, 342913024, 97046528, 2507, 6839476, 86839476},
    {"arc", "50%", 3174400, 2418, 1630, 216264704, 216264704, 73728000, 1644, 2047087, 82047087},
    {"arc", "100%", 6348800, 4048, 0, 0, 0, 0, 0, 0, 80000000},
  };
  expect_figures(replay(tr::replay_mode::pool, {"lru", "arc"}), table);
}

// Belady's MIN is optimal for unit-size objects: in object mode no built-in policy hits
// more often at any capacity.
TEST(SampleTrace, BeladyHitsMostInObjectMode)
{
  std::vector<std::string> policies;
  for (tierpool::policy_info const& p : tierpool::policy_registry::with_builtins().list()) { policies.push_back(p.name); }
  ASSERT_NE(std::find(policies.begin(), policies.end(), "belady"), policies.end());
  std::vector<tr::replay_result> const got = replay(tr::replay_mode::cache, policies, true);
  ASSERT_EQ(got.size(), policies.size() * 4);
  for (std::size_t c = 0; c < 4; ++c) {
    std::uint64_t belady = 0;
    for (std::size_t p = 0; p < policies.size(); ++p) {
      if (policies[p] == "belady") { belady = got[p * 4 + c].hits; }
    }
    for (std::size_t p = 0; p < policies.size(); ++p) {
      tr::replay_result const& r = got[p * 4 + c];
      SCOPED_TRACE(r.policy + " at " + r.capacity_label + " (objects)");
      EXPECT_EQ(r.hits + r.misses, r.requests);
      EXPECT_LE(r.hits, belady);
    }
  }
  EXPECT_EQ(got[0].capacity_bytes, 4U) << "10 % of 48 objects";
}

}  // namespace

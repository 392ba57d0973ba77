// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// replay_tests.cpp — the replay engine (include/tierpool/replay.hpp): cache mode against
// an independent LRU / FIFO written here, request by request, on the CloudPhysics trace;
// exact small cases built in memory; compile (next use, sizes, lower bound); pool-mode
// determinism; grid order and the error paths; the limits (sizes, sums, --loop, link speed)
// and the table's unserved column.
#include "replay/detail/compiled_data.hpp"

#include <tierpool/error.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/replay.hpp>
#include <tierpool/trace.hpp>
#include <tierpool/trace_gen.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <iterator>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace tr = tierpool::replay;
namespace tt = tierpool::trace;

namespace {

// ---- independent reference caches (std::list + std::unordered_map) ----------------

struct reference_result {
  std::uint64_t hits{0};
  std::uint64_t misses{0};
  std::uint64_t bytes_missed{0};
  std::uint64_t bytes_requested{0};
  std::vector<std::uint8_t> outcomes;
};

// Plain object cache, libCacheSim semantics. `promote`: LRU (move to front on a hit);
// otherwise FIFO (insertion order only).
reference_result reference_cache(std::vector<tt::event> const& events, std::uint64_t capacity, bool ignore_size,
                                 bool promote)
{
  reference_result r;
  std::list<std::uint64_t> order;  // front = most recent (LRU) / newest (FIFO)
  struct entry {
    std::list<std::uint64_t>::iterator pos;
    std::uint64_t size;
  };
  std::unordered_map<std::uint64_t, entry> cached;
  std::uint64_t used = 0;
  for (tt::event const& e : events) {
    if (e.kind != tt::event_kind::access) { continue; }
    std::uint64_t const size = ignore_size ? 1 : e.bytes;
    r.bytes_requested += size;
    auto it = cached.find(e.tensor);
    if (it != cached.end()) {
      ++r.hits;
      r.outcomes.push_back(1);
      if (promote) { order.splice(order.begin(), order, it->second.pos); }
      continue;
    }
    ++r.misses;
    r.bytes_missed += size;
    r.outcomes.push_back(0);
    if (size > capacity) { continue; }
    while (used + size > capacity) {
      std::uint64_t const victim = order.back();
      order.pop_back();
      used -= cached.at(victim).size;
      cached.erase(victim);
    }
    order.push_front(e.tensor);
    cached.emplace(e.tensor, entry{order.begin(), size});
    used += size;
  }
  return r;
}

std::vector<tt::event> const& cloudphysics()
{
  static std::vector<tt::event> const events = [] {
    std::filesystem::path const p = TIERPOOL_CLOUDPHYSICS_TRACE;
    return std::filesystem::exists(p) ? tt::read_all(p) : std::vector<tt::event>{};
  }();
  return events;
}

tr::replay_result run_cache(tr::compiled_trace const& t, std::string const& policy, std::uint64_t cap,
                            std::vector<std::uint8_t>* outcomes = nullptr)
{
  tr::run_options o;
  o.mode = tr::replay_mode::cache;
  o.policy = policy;
  o.capacity_bytes = cap;
  o.outcomes = outcomes;
  return tr::run(t, o);
}

void expect_matches_reference(std::string const& policy, bool promote, bool ignore_size)
{
  auto const& events = cloudphysics();
  if (events.empty()) { GTEST_SKIP() << "trace not found: " << TIERPOOL_CLOUDPHYSICS_TRACE; }
  if (!tierpool::policy_registry::with_builtins().contains(policy)) {
    GTEST_SKIP() << "policy '" << policy << "' is not registered yet";
  }
  auto const t = tr::compiled_trace::compile(events, {.ignore_size = ignore_size, .pool = false});
  ASSERT_EQ(t.requests(), 113872U);
  ASSERT_EQ(t.objects(), 48974U);
  ASSERT_EQ(t.working_set_bytes(), ignore_size ? 48974U : 2029769728U);
  for (char const* frac : {"1%", "10%", "25%", "50%"}) {
    std::uint64_t const cap = t.resolve(tr::parse_capacity(frac), tr::replay_mode::cache);
    std::vector<std::uint8_t> outcomes;
    auto const got = run_cache(t, policy, cap, &outcomes);
    auto const want = reference_cache(events, cap, ignore_size, promote);
    SCOPED_TRACE(policy + " at " + frac + (ignore_size ? " (objects)" : ""));
    EXPECT_EQ(got.requests, 113872U);
    EXPECT_EQ(got.hits, want.hits);
    EXPECT_EQ(got.misses, want.misses);
    EXPECT_EQ(got.bytes_missed, want.bytes_missed);
    EXPECT_EQ(got.bytes_requested, want.bytes_requested);
    ASSERT_EQ(outcomes.size(), want.outcomes.size());
    std::size_t first_diff = outcomes.size();
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      if (outcomes[i] != want.outcomes[i]) {
        first_diff = i;
        break;
      }
    }
    EXPECT_EQ(first_diff, outcomes.size()) << "first request whose outcome differs";
  }
}

}  // namespace

// ---- cache mode against the reference, to the last request -----------------------

TEST(ReplayCacheMode, LruMatchesReferenceOnCloudphysics) { expect_matches_reference("lru", true, false); }
TEST(ReplayCacheMode, LruMatchesReferenceOnCloudphysicsIgnoringSizes) { expect_matches_reference("lru", true, true); }
TEST(ReplayCacheMode, FifoMatchesReferenceOnCloudphysics) { expect_matches_reference("fifo", false, false); }
TEST(ReplayCacheMode, FifoMatchesReferenceOnCloudphysicsIgnoringSizes) { expect_matches_reference("fifo", false, true); }

// ---- small exact cases --------------------------------------------------------------

namespace {

tt::event read(std::uint64_t id, std::uint64_t bytes = 0)
{
  return tt::event{.kind = tt::event_kind::access, .tensor = id, .bytes = bytes};
}

}  // namespace

TEST(ReplayCacheMode, LruSequenceByHand)
{
  // capacity 300: A(100) B(100) C(100) A hit; D(100) evicts B (LRU); B misses and evicts C.
  std::vector<tt::event> const ev = {read(1, 100), read(2, 100), read(3, 100), read(1, 100),
                                     read(4, 100), read(2, 100), read(1, 100), read(3, 100)};
  auto const t = tr::compiled_trace::compile(ev, {.pool = false});
  std::vector<std::uint8_t> out;
  auto const r = run_cache(t, "lru", 300, &out);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0, 0, 0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(r.hits, 2U);
  EXPECT_EQ(r.misses, 6U);
  EXPECT_EQ(r.evictions, 3U);
  EXPECT_EQ(r.bytes_missed, 600U);
  EXPECT_EQ(r.bytes_h2d, 600U);
  EXPECT_EQ(r.bytes_d2h, 0U);  // nothing was written
}

// Note [Twelve-byte requests]: a request of 2^28 - 1 bytes or more keeps its size beside
// the array, in request order. Sizes from 4 KiB to 2 GiB, both sides of the boundary and on
// it, some requests resizing their object: every outcome and figure as the reference cache,
// and the same figures when the trace is looped (the sizes are read again in order).
TEST(ReplayCacheMode, SizesPastTwentyEightBitsMatchTheReference)
{
  constexpr std::uint64_t kBoundary = (std::uint64_t{1} << 28U) - 1U;
  std::vector<tt::event> ev = {read(1000, kBoundary - 1), read(1001, kBoundary), read(1002, kBoundary + 1),
                               read(1000, kBoundary - 1), read(1001, kBoundary)};
  std::uint64_t x = 12345;
  for (int i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    std::uint64_t const id = (x >> 33U) % 200U;
    std::uint64_t size = id % 3 == 0 ? kBoundary + id * 7919ULL % (std::uint64_t{1792} << 20U) : 4096 + id * 37;
    if ((x >> 20U) % 50 == 0) { size += 1; }  // a request that resizes its object
    ev.push_back(read(id + 1, size));
  }
  std::uint64_t const cap = std::uint64_t{8} << 30U;
  for (bool const lru : {true, false}) {
    SCOPED_TRACE(lru ? "lru" : "fifo");
    auto const ref = reference_cache(ev, cap, false, lru);
    for (std::uint32_t const loop : {1U, 2U}) {
      auto const t = tr::compiled_trace::compile(ev, {.loop = loop, .pool = false});
      std::vector<std::uint8_t> out;
      auto const r = run_cache(t, lru ? "lru" : "fifo", cap, &out);
      if (loop == 1) { EXPECT_EQ(out, ref.outcomes); }
      EXPECT_EQ(r.bytes_requested, loop * ref.bytes_requested);
      EXPECT_EQ(r.hits + r.misses, loop * ev.size());
      if (loop == 1) {
        EXPECT_EQ(r.hits, ref.hits);
        EXPECT_EQ(r.bytes_missed, ref.bytes_missed);
      }
    }
  }
}

TEST(ReplayCacheMode, HitKeepsTheCachedSizeAndOversizeIsNotAdmitted)
{
  // Object 1 cached at 100; a later request says 250: still a hit, cached size stays 100,
  // so 2 (200) still fits next to it. Object 9 (1000) is larger than the cache: a miss,
  // counted in the byte miss ratio, never admitted, evicting nothing.
  std::vector<tt::event> const ev = {read(1, 100), read(1, 250), read(2, 200), read(9, 1000), read(1, 100),
                                     read(2, 200)};
  auto const t = tr::compiled_trace::compile(ev, {.pool = false});
  std::vector<std::uint8_t> out;
  auto const r = run_cache(t, "lru", 300, &out);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0, 1, 0, 0, 1, 1}));
  EXPECT_EQ(r.unserved, 1U);
  EXPECT_EQ(r.evictions, 0U);
  EXPECT_EQ(r.bytes_missed, 1300U);
  EXPECT_EQ(r.bytes_requested, 1850U);
  EXPECT_DOUBLE_EQ(r.byte_miss_ratio(), 1300.0 / 1850.0);
}

TEST(ReplayCacheMode, DirtyVictimsAreWrittenBackAndFreesLeaveTheCache)
{
  std::vector<tt::event> ev = {
    {.kind = tt::event_kind::allocate, .tensor = 1, .bytes = 100},
    {.kind = tt::event_kind::allocate, .tensor = 2, .bytes = 100},
    {.kind = tt::event_kind::access, .mode = tt::access_kind::write_discard, .tensor = 1},  // no copy-in
    {.kind = tt::event_kind::access, .tensor = 2},                                         // copy-in
    {.kind = tt::event_kind::access, .tensor = 1},  // hit
    {.kind = tt::event_kind::free, .tensor = 2},     // leaves the cache: room for 3 without eviction
    {.kind = tt::event_kind::allocate, .tensor = 3, .bytes = 100},
    {.kind = tt::event_kind::access, .tensor = 3},
    {.kind = tt::event_kind::allocate, .tensor = 4, .bytes = 100},
    {.kind = tt::event_kind::access, .tensor = 4},  // evicts 1 (LRU), which was written: write-back
  };
  auto const t = tr::compiled_trace::compile(ev, {.pool = false});
  auto const r = run_cache(t, "lru", 200);
  EXPECT_EQ(r.requests, 5U);
  EXPECT_EQ(r.hits, 1U);
  EXPECT_EQ(r.evictions, 1U);
  EXPECT_EQ(r.bytes_h2d, 300U);
  EXPECT_EQ(r.copies_h2d, 3U);
  EXPECT_EQ(r.bytes_d2h, 100U);
  EXPECT_EQ(r.copies_d2h, 1U);
}

TEST(ReplayCompile, NextUseLoopAndWorkingSet)
{
  std::vector<tt::event> const ev = {read(7, 10), read(8, 20), read(7, 10)};
  auto const t = tr::compiled_trace::compile(ev, {.loop = 2});
  EXPECT_EQ(t.requests(), 6U);
  EXPECT_EQ(t.objects(), 2U);
  EXPECT_EQ(t.working_set_bytes(), 30U);
  EXPECT_EQ(t.peak_live_bytes(), 30U);
  EXPECT_EQ(t.resolve(tr::parse_capacity("50%"), tr::replay_mode::cache), 15U);
  EXPECT_EQ(t.resolve(tr::parse_capacity("64KiB"), tr::replay_mode::cache), 65536U);
}

TEST(ReplayCompile, AccessWithoutSizeOfUnknownIdIsAnError)
{
  std::vector<tt::event> const ev = {read(1)};
  EXPECT_THROW((void)tr::compiled_trace::compile(ev), tierpool::logic_error);
}

TEST(ReplayCompile, IgnoreSizeIsCacheModeOnly)
{
  std::vector<tt::event> const ev = {read(1, 8)};
  EXPECT_THROW((void)tr::compiled_trace::compile(ev, {.ignore_size = true, .pool = true}), tierpool::logic_error);
}

TEST(ReplayCapacity, Parsing)
{
  auto const c = tr::parse_capacities("10%, 2.5%,64MiB");
  ASSERT_EQ(c.size(), 3U);
  EXPECT_TRUE(c[0].relative);
  EXPECT_DOUBLE_EQ(c[0].fraction, 0.1);
  EXPECT_EQ(c[0].label, "10%");
  EXPECT_DOUBLE_EQ(c[1].fraction, 0.025);
  EXPECT_FALSE(c[2].relative);
  EXPECT_EQ(c[2].bytes, 64U << 20U);
  // Truncation: 10% of 2,029,769,728 bytes.
  EXPECT_EQ(c[0].resolve(2029769728U), 202976972U);
  EXPECT_THROW((void)tr::parse_capacity("0%"), tierpool::logic_error);
  EXPECT_THROW((void)tr::parse_capacity("101%"), tierpool::logic_error);
  EXPECT_THROW((void)tr::parse_capacity("lots"), tierpool::logic_error);
  EXPECT_THROW((void)tr::parse_capacity("0"), tierpool::logic_error);
}

TEST(ReplayIdeal, FractionalBeladyCountsTheShortfallOfEveryLoop)
{
  // Three 100-byte objects read round-robin four times at capacity 200. The old bound
  // counted the shortfall once (300 compulsory + 100). MIN keeps two and bypasses the third
  // every round: 300 compulsory + 3 x 100. LRU misses all twelve.
  std::vector<tt::event> ev;
  for (int loop = 0; loop < 4; ++loop) {
    for (std::uint64_t id = 1; id <= 3; ++id) { ev.push_back(read(id, 100)); }
  }
  auto const t = tr::compiled_trace::compile(ev, {.pool = false});
  auto const r = run_cache(t, "lru", 200);
  EXPECT_EQ(r.must_move_h2d, 600U);
  EXPECT_EQ(r.must_move_d2h, 0U);
  EXPECT_EQ(r.bytes_h2d, 1200U);
  EXPECT_GE(r.bytes_h2d, r.must_move_h2d);
  // Cache mode is one blocking timeline: the ideal is the copies' time (no compute here).
  EXPECT_NEAR(r.ideal_seconds, 600.0 / 25e9 + 3 * 2e-6, 1e-12);
  EXPECT_NEAR(r.makespan_vs_ideal(), r.makespan_seconds / r.ideal_seconds, 1e-12);
}

// A small deterministic generator: rnd(m) is in [0, m).
struct small_rng {
  std::uint64_t state;
  std::uint64_t operator()(std::uint64_t m)
  {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33U) % m;
  }
};

// The fewest bytes any schedule of whole objects copies in (demand fetching; bypass and
// dropping allowed, so at most what a pool that cannot bypass needs): dynamic programming
// over the set of resident objects. Small traces only (ids 0..n-1, n <= 8).
std::uint64_t exact_opt_bytes(std::vector<std::pair<std::uint32_t, std::uint64_t>> const& reqs, std::uint32_t n,
                              std::uint64_t cap)
{
  constexpr std::uint64_t kInf = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> size(n, 0);
  for (auto const& [o, s] : reqs) { size[o] = s; }
  auto bytes = [&](std::uint32_t set) {
    std::uint64_t b = 0;
    for (std::uint32_t o = 0; o < n; ++o) { b += ((set >> o) & 1U) != 0 ? size[o] : 0; }
    return b;
  };
  std::vector<std::uint64_t> cost(1U << n, kInf);
  cost[0] = 0;
  for (auto const& [o, s] : reqs) {
    std::vector<std::uint64_t> next(1U << n, kInf);
    for (std::uint32_t set = 0; set < (1U << n); ++set) {
      if (cost[set] == kInf) { continue; }
      std::uint64_t const c = cost[set] + (((set >> o) & 1U) != 0 ? 0 : s);
      std::uint32_t const with = set | (1U << o);
      for (std::uint32_t sub = with;; sub = (sub - 1) & with) {  // keep any subset that fits
        if (bytes(sub) <= cap) { next[sub] = std::min(next[sub], c); }
        if (sub == 0) { break; }
      }
    }
    cost = std::move(next);
  }
  return *std::min_element(cost.begin(), cost.end());
}

TEST(ReplayIdeal, FractionalBeladyIsAFloorAndExactForEqualSizes)
{
  small_rng rnd{12345};
  int strict = 0;
  for (int round = 0; round < 300; ++round) {
    bool const unit = round % 2 == 0;
    std::uint32_t const n = 2 + static_cast<std::uint32_t>(rnd(5));
    std::vector<std::uint64_t> size(n);
    for (auto& s : size) { s = unit ? 100 : 100 * (1 + rnd(4)); }
    std::vector<std::pair<std::uint32_t, std::uint64_t>> reqs;
    std::vector<tt::event> ev;
    std::size_t const len = 6 + rnd(20);
    for (std::size_t i = 0; i < len; ++i) {
      auto const o = static_cast<std::uint32_t>(rnd(n));
      reqs.emplace_back(o, size[o]);
      ev.push_back(read(o + 1, size[o]));
    }
    std::uint64_t const cap = 100 * (1 + rnd(4));
    std::erase_if(reqs, [&](auto const& q) { return q.second > cap; });  // never admitted: left out of both
    auto const t = tr::compiled_trace::compile(ev, {.pool = false});
    std::uint64_t const floor = tr::detail::compute_must_move(t.data(), cap).h2d_bytes;
    std::uint64_t const opt = exact_opt_bytes(reqs, n, cap);
    SCOPED_TRACE("round " + std::to_string(round) + " cap " + std::to_string(cap));
    if (unit) {
      EXPECT_EQ(floor, opt) << "MIN is optimal for equal sizes";
    } else {
      EXPECT_LE(floor, opt) << "a floor";
      strict += floor < opt ? 1 : 0;
    }
  }
  EXPECT_GT(strict, 0) << "with mixed sizes the fractional floor sits below the whole-object optimum somewhere";
}

tt::event born(std::uint64_t id, std::uint64_t bytes)
{
  tt::event a{};
  a.kind = tt::event_kind::allocate;
  a.tensor = id;
  a.bytes = bytes;
  return a;
}

tt::event discard(std::uint64_t id, std::uint64_t bytes)
{
  tt::event w = read(id, bytes);
  w.mode = tt::access_kind::write_discard;
  return w;
}

TEST(ReplayIdeal, TensorsBornOnTheDeviceOweNoCopyAndTheirBytesMayHaveToBeWrittenBack)
{
  {
    // 1 is born on the device (allocated without a tier preference, first written); 2's
    // bytes start in host memory (first seen through an access). MIN takes 100 bytes off 2
    // (next used after 1) and copies them in again: 200 + 100. Nothing device-only is
    // pushed out.
    std::vector<tt::event> const ev = {born(1, 100), discard(1, 100), read(2, 200), read(1, 100), read(2, 200)};
    auto const m = tr::detail::compute_must_move(tr::compiled_trace::compile(ev, {.pool = true}).data(), 200);
    EXPECT_EQ(m.h2d_bytes, 300U);
    EXPECT_EQ(m.d2h_bytes, 0U);
  }
  {
    // 1 and 3 are both born on the device and read later: 250 device-only bytes at 200 of
    // room, so at least 50 were written back; MIN copies 50 of 3 in again.
    std::vector<tt::event> const ev = {born(1, 100), discard(1, 100), born(3, 150), discard(3, 150), read(1, 100),
                                       read(3, 150)};
    auto const m = tr::detail::compute_must_move(tr::compiled_trace::compile(ev, {.pool = true}).data(), 200);
    EXPECT_EQ(m.h2d_bytes, 50U);
    EXPECT_EQ(m.d2h_bytes, 50U);
  }
}

tt::event phase_marker(char const* name)
{
  tt::event e{};
  e.kind = tt::event_kind::phase;
  e.name = name;
  return e;
}

tt::event kernel(std::uint64_t ns, std::uint32_t stream = 0)
{
  tt::event e{};
  e.kind = tt::event_kind::compute;
  e.duration_ns = ns;
  e.stream = stream;
  return e;
}

// A random trace of 3-8 tensors (sizes `unit` x 1..`sizes`), some born on the device, read,
// rewritten (rw, wd) and freed, 60 steps. `phased`: also phase markers between steps and
// kernels after some of them (a training step's shape, for the phase floor).
std::vector<tt::event> random_rewrites(small_rng& rnd, std::uint64_t unit, std::uint64_t sizes, bool phased)
{
  std::vector<tt::event> ev;
  std::uint64_t const n = 3 + rnd(6);
  std::vector<std::uint64_t> size(n + 1);
  for (std::uint64_t id = 1; id <= n; ++id) {
    size[id] = unit * (1 + rnd(sizes));
    if (rnd(2) == 0) { ev.push_back(born(id, size[id])); }
  }
  std::vector<bool> alive(n + 1, true);
  for (int k = 0; k < 60; ++k) {
    if (phased && rnd(6) == 0) { ev.push_back(phase_marker(rnd(2) == 0 ? "a" : "b")); }
    std::uint64_t const id = 1 + rnd(n);
    if (alive[id]) {
      tt::event e = read(id, size[id]);
      std::uint64_t const what = rnd(10);
      if (what < 3) { e.mode = tt::access_kind::read_write; }
      if (what == 3) { e.mode = tt::access_kind::write_discard; }
      ev.push_back(e);
      if (what == 9 && k > 40) {
        tt::event f{};
        f.kind = tt::event_kind::free;
        f.tensor = id;
        ev.push_back(f);
        alive[id] = false;
      }
    }
    if (phased && rnd(3) == 0) { ev.push_back(kernel(1000 * (1 + rnd(200)))); }
  }
  if (phased) { ev.push_back(kernel(1000)); }
  return ev;
}

TEST(ReplayIdeal, NoPolicyMovesFewerBytesThanTheFloorsOnRandomTrainingLikeTraces)
{
  // Random traces of tensors born on the device or in host memory, read, rewritten (rw, wd)
  // and freed: every policy's copies in and write-backs in pool mode are at least the floors.
  small_rng rnd{777};
  int written_back = 0;
  for (int round = 0; round < 40; ++round) {
    std::vector<tt::event> const ev = random_rewrites(rnd, 256, 8, false);
    auto const t = tr::compiled_trace::compile(ev, {.pool = true});
    for (char const* policy : {"lru", "fifo", "belady", "arc"}) {
      tr::run_options o;
      o.policy = policy;
      o.capacity_bytes = 256 * (2 + rnd(10));
      tr::replay_result const r = tr::run(t, o);
      SCOPED_TRACE(std::string(policy) + " round " + std::to_string(round));
      EXPECT_GE(r.bytes_h2d, r.must_move_h2d);
      EXPECT_GE(r.bytes_d2h, r.must_move_d2h);
      EXPECT_GE(r.makespan_seconds + 1e-12, r.ideal_seconds);
      written_back += r.must_move_d2h != 0 ? 1 : 0;
    }
  }
  EXPECT_GT(written_back, 10) << "the d2h floor is exercised";
}

TEST(ReplayPhaseFloor, WriteBacksBeforeTheCutAndCopyInsAfterItDoNotOverlap)
{
  // "opt" writes A and B (6 MiB each, born on the device), "fwd" writes X; "bwd" reads all
  // three. 12 MiB of room: at the start of "bwd" 18 MiB of values written since the start
  // are still to be read, so 6 MiB were written back before it, and 6 MiB are copied in
  // after it. The ideal time lets the two overlap (max of the floors, 6 MiB on each link);
  // the phase floor does not: 2 x 6 MiB / 25 GB/s.
  constexpr std::uint64_t kMiB = 1U << 20U;
  std::vector<tt::event> const ev = {phase_marker("opt"), born(1, 6 * kMiB), discard(1, 6 * kMiB),
                                     born(2, 6 * kMiB), discard(2, 6 * kMiB), kernel(1000),
                                     phase_marker("fwd"), born(3, 6 * kMiB), discard(3, 6 * kMiB), kernel(100'000),
                                     phase_marker("bwd"), read(1, 6 * kMiB), read(2, 6 * kMiB), read(3, 6 * kMiB),
                                     kernel(100'000)};
  auto const t = tr::compiled_trace::compile(ev);
  tr::run_options o;
  o.capacity_bytes = 12 * kMiB;
  double const copy = 6.0 * kMiB / 25e9;
  for (char const* policy : {"lru", "belady"}) {
    o.policy = policy;
    tr::replay_result const r = tr::run(t, o);
    SCOPED_TRACE(policy);
    EXPECT_NEAR(r.ideal_seconds, copy, 1e-9) << "6 MiB on either link";
    EXPECT_NEAR(r.phase_floor_seconds, 2 * copy, 1e-9);
    EXPECT_GE(r.makespan_seconds, r.phase_floor_seconds);
  }
  // A value overwritten (wd) before anything reads it needs no write-back: D, written in
  // "opt" and discarded in "bwd", changes nothing. Nor does a read whose kernel comes after
  // the last marker... of a value written by a kernel after the cut (E, written in "bwd").
  std::vector<tt::event> dead = ev;
  dead.insert(dead.begin() + 5, {born(4, 6 * kMiB), discard(4, 6 * kMiB)});
  dead.insert(dead.end() - 1, {born(5, 6 * kMiB), discard(5, 6 * kMiB), discard(4, 6 * kMiB)});
  o.capacity_bytes = 12 * kMiB;
  o.policy = "lru";
  EXPECT_NEAR(tr::run(tr::compiled_trace::compile(dead), o).phase_floor_seconds, 2 * copy, 1e-9);
  // Without markers, or with kernels on two streams, there is no phase floor.
  std::vector<tt::event> plain;
  std::copy_if(ev.begin(), ev.end(), std::back_inserter(plain), [](tt::event const& e) { return e.kind != tt::event_kind::phase; });
  EXPECT_EQ(tr::run(tr::compiled_trace::compile(plain), o).phase_floor_seconds, 0.0);
  std::vector<tt::event> two = ev;
  two.push_back(kernel(10, 1));
  EXPECT_EQ(tr::run(tr::compiled_trace::compile(two), o).phase_floor_seconds, 0.0);
}

TEST(ReplayPhaseFloor, NoScheduleBeatsItOnRandomPhasedTrainingLikeTraces)
{
  // Random traces of MiB tensors born on the device or in host memory, read, rewritten and
  // freed, with kernels after each few accesses and phase markers between them: no policy
  // and no prefetcher finishes under the phase floor, and the floor is often above the
  // ideal time (it sees what the ideal time cannot).
  small_rng rnd{4242};
  int above_ideal = 0;
  int runs = 0;
  for (int round = 0; round < 30; ++round) {
    std::vector<tt::event> const ev = random_rewrites(rnd, 1U << 20U, 4, true);
    auto const t = tr::compiled_trace::compile(ev);
    std::uint64_t const cap = (1U << 20U) * (4 + rnd(8));
    for (char const* policy : {"lru", "belady", "fifo"}) {
      for (char const* prefetch : {"none", "plan", "oracle"}) {
        tr::run_options o;
        o.policy = policy;
        o.prefetch = prefetch;
        o.capacity_bytes = cap;
        tr::replay_result const r = tr::run(t, o);
        if (r.unserved != 0) { continue; }
        SCOPED_TRACE(std::string(policy) + " " + prefetch + " round " + std::to_string(round));
        EXPECT_GE(r.makespan_seconds * (1 + 1e-12), r.phase_floor_seconds);
        ++runs;
        above_ideal += r.phase_floor_seconds > r.ideal_seconds * 1.01 ? 1 : 0;
      }
    }
  }
  EXPECT_GT(runs, 200);
  EXPECT_GT(above_ideal, 20) << "the phase floor is exercised (" << above_ideal << " of " << runs << " runs)";
  std::printf("phase floor above the ideal time in %d of %d runs\n", above_ideal, runs);
}

// Note [Floors with recompute]: transformer-train marks its activations recomputable; a
// pool run with recompute drops and rebuilds them, moving fewer bytes than any swap-only
// schedule. Its floors leave those tensors out, so that no run finishes under them, and
// they are no higher than the swap-only floors of the same trace (`--no-recompute`).
TEST(ReplayPhaseFloor, RunsWithRecomputeDoNotBeatTheirFloors)
{
  std::vector<tt::event> const ev = tt::generate("transformer-train", {{"iterations", "2"}}, 1);
  auto const t = tr::compiled_trace::compile(ev);
  EXPECT_FALSE(tr::detail::recomputable_mask(t.data()).empty()) << "the generator marks activations";
  int dropped_runs = 0;
  for (double const share : {0.25, 0.5}) {
    auto const cap = static_cast<std::uint64_t>(static_cast<double>(t.peak_live_bytes()) * share);
    for (char const* policy : {"lru", "belady"}) {
      for (char const* prefetch : {"none", "plan"}) {
        SCOPED_TRACE(std::string(policy) + " " + prefetch + " at " + std::to_string(share));
        tr::run_options o;
        o.policy = policy;
        o.prefetch = prefetch;
        o.capacity_bytes = cap;
        tr::replay_result const with = tr::run(t, o);
        o.recompute = false;
        tr::replay_result const swap = tr::run(t, o);
        ASSERT_EQ(with.unserved, 0U);
        dropped_runs += with.evicted_recompute > 0 ? 1 : 0;
        EXPECT_EQ(swap.evicted_recompute, 0U);
        EXPECT_GE(with.makespan_seconds * (1 + 1e-12), with.phase_floor_seconds);
        EXPECT_GE(with.makespan_seconds * (1 + 1e-12), with.ideal_seconds);
        EXPECT_GE(swap.makespan_seconds * (1 + 1e-12), swap.phase_floor_seconds);
        EXPECT_LE(with.phase_floor_seconds, swap.phase_floor_seconds);
        EXPECT_LE(with.must_move_h2d, swap.must_move_h2d);
        EXPECT_LE(with.must_move_d2h, swap.must_move_d2h);
        EXPECT_GT(with.phase_floor_seconds, 0.0);
      }
    }
  }
  EXPECT_GT(dropped_runs, 0) << "recompute was exercised";
}

TEST(ReplayIdeal, EveryRewriteOfDeviceOnlyBytesTheRoomCannotHoldIsAWriteBack)
{
  // 1 and 2 (150 bytes each) are rewritten (rw) in turn, 1 2 1 2 1 2 after their births,
  // at 200 bytes of room. Each rewrite of 1 ends 1's episode first (it reads it), which
  // leaves room; each birth or rewrite of 2 finds 1's fresh episode resident, and 100 bytes
  // of one of them must go: MIN takes them off 2's, which ends later. Three times 100; the
  // old bound (peak device-only bytes needed later minus the room) counted 100 once.
  std::vector<tt::event> ev = {born(1, 150), discard(1, 150), born(2, 150), discard(2, 150)};
  for (int k = 0; k < 3; ++k) {
    tt::event a = read(1, 150);
    a.mode = tt::access_kind::read_write;
    tt::event b = read(2, 150);
    b.mode = tt::access_kind::read_write;
    ev.push_back(a);
    ev.push_back(b);
  }
  auto const m = tr::detail::compute_must_move(tr::compiled_trace::compile(ev, {.pool = true}).data(), 200);
  EXPECT_EQ(m.d2h_bytes, 300U);
}

TEST(ReplayErrors, UnknownPolicyListsTheRegisteredOnes)
{
  std::vector<tt::event> const ev = {read(1, 100)};
  auto const t = tr::compiled_trace::compile(ev);
  tr::grid_options g;
  g.mode = tr::replay_mode::cache;
  g.policies = {"lru", "no_such_policy"};
  g.capacities = tr::parse_capacities("50%");
  try {
    (void)tr::run_grid(t, g);
    FAIL() << "expected tierpool::logic_error";
  } catch (tierpool::logic_error const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("no_such_policy"), std::string::npos) << what;
    EXPECT_NE(what.find("lru"), std::string::npos) << what;
  }
}

TEST(ReplayErrors, UnknownPrefetchPredictor)
{
  std::vector<tt::event> const ev = {read(1, 1024)};
  auto const t = tr::compiled_trace::compile(ev);
  tr::run_options o;
  o.capacity_bytes = 4096;
  o.prefetch = "next_layer";
  EXPECT_THROW((void)tr::run(t, o), tierpool::logic_error);
}

// ---- grid ---------------------------------------------------------------------------

TEST(ReplayGrid, ResultsInGridOrderAndEqualToSingleRuns)
{
  auto const ev = tt::generate("random-reuse", {{"tensors", "40"}, {"accesses", "3000"}}, 5);
  auto const t = tr::compiled_trace::compile(ev, {.pool = false});
  tr::grid_options g;
  g.mode = tr::replay_mode::cache;
  g.policies = {"arc", "lru"};
  g.capacities = tr::parse_capacities("50%,10%,25%");
  g.threads = 4;
  std::size_t calls = 0;
  g.on_run_done = [&](tr::replay_result const&, std::size_t done, std::size_t total) {
    ++calls;
    EXPECT_EQ(total, 6U);
    EXPECT_LE(done, total);
  };
  auto const res = tr::run_grid(t, g);
  ASSERT_EQ(res.size(), 6U);
  EXPECT_EQ(calls, 6U);
  for (std::size_t k = 0; k < res.size(); ++k) {
    EXPECT_EQ(res[k].policy, g.policies[k / 3]);
    EXPECT_EQ(res[k].capacity_label, g.capacities[k % 3].label);
    auto const single = run_cache(t, res[k].policy, res[k].capacity_bytes);
    EXPECT_EQ(res[k].hits, single.hits);
    EXPECT_EQ(res[k].bytes_h2d, single.bytes_h2d);
  }
  std::string const json = tr::to_json(res);
  for (char const* key : {"\"policy\"", "\"capacity_bytes\"", "\"requests\"", "\"miss_ratio\"", "\"byte_miss_ratio\"",
                          "\"bytes_h2d\"", "\"bytes_d2h\"", "\"stall_seconds\"", "\"makespan_seconds\"",
                          "\"ideal_seconds\"", "\"requests_per_second\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
  std::string const csv = tr::to_csv(res);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
  std::string const svg = tr::to_svg(res, "test");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0U);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 20, true);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find(">arc</text>"), std::string::npos);
}

// ---- pool mode ----------------------------------------------------------------------

namespace {

tr::replay_result run_pool(tr::compiled_trace const& t, std::string const& policy, std::string const& cap)
{
  tr::run_options o;
  o.mode = tr::replay_mode::pool;
  o.policy = policy;
  o.capacity_bytes = t.resolve(tr::parse_capacity(cap), tr::replay_mode::pool);
  return tr::run(t, o);
}

}  // namespace

TEST(ReplayPoolMode, DeterministicForTheSameTraceAndSeed)
{
  for (char const* workload : {"mlp-train", "kv-paging"}) {
    SCOPED_TRACE(workload);
    tt::generator_params params;
    if (std::string_view(workload) == "mlp-train") {
      params = {{"layers", "4"}, {"width", "512"}, {"batch", "64"}, {"iterations", "2"}};
    } else {
      params = {{"requests", "12"}, {"max_batch", "4"}};
    }
    auto const a = tr::compiled_trace::compile(tt::generate(workload, params, 42));
    auto const b = tr::compiled_trace::compile(tt::generate(workload, params, 42));
    auto const x = run_pool(a, "lru", "40%");
    auto const y = run_pool(b, "lru", "40%");
    EXPECT_GT(x.requests, 0U);
    EXPECT_GT(x.misses, 0U);
    EXPECT_EQ(x.hits, y.hits);
    EXPECT_EQ(x.misses, y.misses);
    EXPECT_EQ(x.bytes_h2d, y.bytes_h2d);
    EXPECT_EQ(x.bytes_d2h, y.bytes_d2h);
    EXPECT_EQ(x.evictions, y.evictions);
    EXPECT_EQ(x.bytes_missed, y.bytes_missed);
    EXPECT_DOUBLE_EQ(x.stall_seconds, y.stall_seconds);
    EXPECT_DOUBLE_EQ(x.makespan_seconds, y.makespan_seconds);
    EXPECT_DOUBLE_EQ(x.ideal_seconds, y.ideal_seconds);
    EXPECT_GE(x.makespan_seconds, x.ideal_seconds);
  }
}

TEST(ReplayPoolMode, CacheTraceFirstReadsAreCopiedIn)
{
  // Everything fits: each object is copied in exactly once, then every access hits.
  std::vector<tt::event> const ev = {read(1, 4096), read(2, 8192), read(1, 4096), read(2, 8192), read(1, 4096)};
  auto const t = tr::compiled_trace::compile(ev);
  tr::run_options o;
  o.capacity_bytes = 1U << 20U;
  auto const r = tr::run(t, o);
  EXPECT_EQ(r.requests, 5U);
  EXPECT_EQ(r.hits, 3U);
  EXPECT_EQ(r.misses, 2U);
  EXPECT_EQ(r.bytes_h2d, 12288U);
  EXPECT_EQ(r.bytes_missed, 12288U);
  EXPECT_EQ(r.must_move_h2d, 12288U);
  EXPECT_EQ(r.evictions, 0U);
  // Two copies on pcie4 (2 us + bytes / 25 GB/s each) one after the other on the h2d link.
  double const copy_s = 2 * 2e-6 + 12288.0 / 25e9;
  EXPECT_NEAR(r.ideal_seconds, copy_s, 1e-9);
  EXPECT_GE(r.makespan_seconds, r.ideal_seconds - 1e-9);
}

TEST(ReplayPoolMode, RecordedTimelineAccountsForTheMakespanAndTheBytes)
{
  tt::generator_params const params = {{"layers", "4"}, {"width", "512"}, {"batch", "64"}, {"iterations", "2"}};
  auto const t = tr::compiled_trace::compile(tt::generate("mlp-train", params, 7));
  tr::run_options o;
  o.capacity_bytes = t.resolve(tr::parse_capacity("40%"), tr::replay_mode::pool);
  o.capacity_label = "40%";
  tr::replay_result const plain = tr::run(t, o);
  EXPECT_FALSE(plain.activity);
  EXPECT_FALSE(plain.timeline);
  o.record_timeline = true;
  tr::replay_result const r = tr::run(t, o);
  ASSERT_TRUE(r.activity);
  ASSERT_TRUE(r.timeline);
  EXPECT_DOUBLE_EQ(r.makespan_seconds, plain.makespan_seconds) << "recording changes nothing it records";
  EXPECT_EQ(r.bytes_h2d, plain.bytes_h2d);
  // The states partition the makespan; the kernels are the trace's compute.
  EXPECT_NEAR(static_cast<double>(r.activity->total_ns()) * 1e-9, r.makespan_seconds, 1e-9);
  EXPECT_NEAR(static_cast<double>(r.activity->compute_ns()) * 1e-9, r.compute_seconds, 1e-9);  // one stream
  // The copies on the timeline are the bytes the run reports.
  std::uint64_t h2d = 0;
  std::uint64_t d2h = 0;
  for (tierpool::sim_span const& sp : *r.timeline) {
    EXPECT_LE(sp.start, sp.end);
    if (sp.kind != tierpool::sim_span_kind::copy) { continue; }
    (sp.link == tierpool::sim_link::h2d ? h2d : d2h) += sp.bytes;
  }
  EXPECT_EQ(h2d, r.bytes_h2d);
  EXPECT_EQ(d2h, r.bytes_d2h);
  ASSERT_EQ(r.timeline_streams.size(), 1U);

  // Reports: the JSON row has the activity keys (null without a timeline), the Chrome trace
  // one process with a stream lane and both link lanes, the activity table a row.
  std::vector<tr::replay_result> const rows = {plain, r};
  std::string const json = tr::to_json(rows);
  EXPECT_NE(json.find("\"exposed_d2h_seconds\":null"), std::string::npos) << json;
  std::size_t const at = json.find("\"overlapped_seconds\":", json.find("},\n  {"));  // the second row's
  ASSERT_NE(at, std::string::npos) << json;
  EXPECT_NEAR(std::strtod(json.c_str() + at + 21, nullptr), static_cast<double>(r.activity->overlapped_ns()) * 1e-9, 1e-12);
  EXPECT_GT(r.activity->overlapped_ns(), 0U);
  EXPECT_NE(json.find("\"phases\":[{\"name\":\"init\",\"idle_seconds\":"), std::string::npos) << json;
  std::string const chrome = tr::to_chrome_trace(rows);
  EXPECT_EQ(chrome.rfind("{\"displayTimeUnit\"", 0), 0U);
  EXPECT_NE(chrome.find("\"name\":\"stream 0\""), std::string::npos);
  EXPECT_NE(chrome.find("\"name\":\"h2d link\""), std::string::npos);
  EXPECT_NE(chrome.find("\"name\":\"d2h link\""), std::string::npos);
  EXPECT_EQ(chrome.find("\"pid\":2"), std::string::npos) << "the row without a timeline is left out";
  std::string const table = tr::format_activity(rows);
  // A header and the run's row, then a row per phase of the generator (init, forward,
  // backward, optimizer); then the device time per iteration: a header and the run's line.
  EXPECT_EQ(table.rfind("policy", 0), 0U) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2 + 4 + 2) << table;
  EXPECT_EQ(r.iteration_seconds.size(), 2U) << "the generator's iterations";
  EXPECT_NE(table.find("\n  phase forward "), std::string::npos) << table;
  EXPECT_TRUE(tr::format_activity(std::vector<tr::replay_result>{plain}).empty());
}

TEST(ReplayPoolMode, PhaseMarkersAreTimedAndSplitTheActivity)
{
  auto phase = [](char const* name) {
    tt::event e{};
    e.kind = tt::event_kind::phase;
    e.name = name;
    return e;
  };
  auto compute = [](std::uint64_t ns) {
    tt::event e{};
    e.kind = tt::event_kind::compute;
    e.duration_ns = ns;
    return e;
  };
  // Everything fits and the tensor is born on the device: kernels only, back to back.
  std::vector<tt::event> const ev = {phase("one"), born(1, 1U << 20U), discard(1, 1U << 20U), compute(1'000'000),
                                     phase("two"), read(1, 1U << 20U), compute(500'000),
                                     phase("one"), compute(100'000), phase("step 1"), compute(10'000),
                                     phase("step 2"), compute(20'000), phase("end")};
  auto const t = tr::compiled_trace::compile(ev);
  tr::run_options o;
  o.capacity_bytes = 4U << 20U;
  o.capacity_label = "4MiB";
  EXPECT_TRUE(tr::run(t, o).phases.empty()) << "markers are timed only with a timeline";
  o.record_activity = true;
  tr::replay_result const figures_only = tr::run(t, o);
  EXPECT_FALSE(figures_only.timeline) << "the spans are kept only with record_timeline";
  o.record_activity = false;
  o.record_timeline = true;
  tr::replay_result const r = tr::run(t, o);
  ASSERT_TRUE(r.timeline);
  ASSERT_EQ(figures_only.phase_activities.size(), r.phase_activities.size());
  for (std::size_t k = 0; k < r.phase_activities.size(); ++k) {
    EXPECT_EQ(figures_only.phase_activities[k].name, r.phase_activities[k].name);
    EXPECT_EQ(figures_only.phase_activities[k].activity.ns, r.phase_activities[k].activity.ns);
  }
  EXPECT_EQ(figures_only.phases.size(), r.phases.size());
  EXPECT_EQ(r.bytes_h2d + r.bytes_d2h, 0U);
  ASSERT_EQ(r.phases.size(), 6U);
  EXPECT_EQ(r.phases[0].name, "one");
  EXPECT_EQ(r.phases[0].at, 0U);
  EXPECT_EQ(r.phases[1].name, "two");
  EXPECT_EQ(r.phases[1].at, 1'000'000U);
  EXPECT_EQ(r.phases[2].name, "one");
  EXPECT_EQ(r.phases[2].at, 1'500'000U);
  EXPECT_EQ(r.phases[3].name, "step 1");
  EXPECT_EQ(r.phases[3].at, 1'600'000U);
  EXPECT_EQ(r.phases[5].name, "end");
  EXPECT_EQ(r.phases[5].at, 1'630'000U);
  std::vector<tr::replay_result> const rows = {r};
  std::string const table = tr::format_activity(rows);
  // "one" sums its two windows (1 ms + 0.1 ms), "two" has 0.5 ms, "step 1" and "step 2"
  // are one row "step #" (30 us); "end" has no length.
  EXPECT_NE(table.find("phase one"), std::string::npos) << table;
  EXPECT_NE(table.find("1.1 ms (67 %)"), std::string::npos) << table;
  EXPECT_NE(table.find("phase two"), std::string::npos) << table;
  EXPECT_NE(table.find("500 us (31 %)"), std::string::npos) << table;
  EXPECT_NE(table.find("phase step #"), std::string::npos) << table;
  EXPECT_NE(table.find("30 us (2 %)"), std::string::npos) << table;
  EXPECT_EQ(table.find("phase step 1"), std::string::npos) << table;
  EXPECT_EQ(table.find("phase end"), std::string::npos) << table;
  // Iterations start at each marker of the first label that recurs ("one"): 0 to 1.5 ms,
  // then 1.5 ms to the makespan (1.63 ms).
  ASSERT_EQ(r.iteration_seconds.size(), 2U);
  EXPECT_DOUBLE_EQ(r.iteration_seconds[0], 1.5e-3);
  EXPECT_DOUBLE_EQ(r.iteration_seconds[1], 0.13e-3);
  EXPECT_DOUBLE_EQ(r.steady_seconds(), 0.13e-3);
  EXPECT_EQ(figures_only.iteration_seconds, r.iteration_seconds);
  EXPECT_NE(table.find("device time per iteration"), std::string::npos) << table;
  EXPECT_NE(table.find(": 1.5 ms 130 us; from the second: 130 us"), std::string::npos) << table;
  std::string const json = tr::to_json(rows);
  EXPECT_NE(json.find("\"iteration_seconds\":[0.0015,0.00013"), std::string::npos) << json;
  EXPECT_NE(json.find("],\"steady_seconds\":0.00013"), std::string::npos) << json;
  std::string const chrome = tr::to_chrome_trace(rows);
  std::size_t marks = 0;
  for (std::size_t at = chrome.find("\"ph\":\"i\""); at != std::string::npos; at = chrome.find("\"ph\":\"i\"", at + 1)) {
    ++marks;
  }
  EXPECT_EQ(marks, 6U);
  // Looped passes repeat the markers.
  auto const looped = tr::compiled_trace::compile(ev, {.loop = 2});
  EXPECT_EQ(tr::run(looped, o).phases.size(), 12U);
}

TEST(ReplayPoolMode, IgnoreSizeRejected)
{
  std::vector<tt::event> const ev = {read(1, 4096)};
  auto const t = tr::compiled_trace::compile(ev, {.ignore_size = true, .pool = false});
  tr::run_options o;
  o.capacity_bytes = 4096;
  EXPECT_THROW((void)tr::run(t, o), tierpool::logic_error);
}

// ---- limits: sizes, sums, loops, link speed; the table's unserved column ----------

TEST(ReplayCompile, SizesPastTheCacheWordAreRefused)
{
  // The cache word keeps 60 bits of size: 2^64 - 1 was silently masked to 2^60 - 1.
  std::vector<tt::event> const ev = {read(43, std::numeric_limits<std::uint64_t>::max()), read(2, 512)};
  EXPECT_THAT([&] { (void)tr::compiled_trace::compile(ev); },
              ::testing::ThrowsMessage<tierpool::logic_error>(
                ::testing::HasSubstr("tensor 43 has 18446744073709551615 bytes (at most 2^60 - 1")));
  // With ignore_size the size is not used, so it is not refused.
  auto const t = tr::compiled_trace::compile(ev, {.ignore_size = true, .pool = false});
  EXPECT_EQ(t.working_set_bytes(), 2U);
}

TEST(ReplayCompile, SumsPast2To64AreRefusedNotWrapped)
{
  std::uint64_t const big = (std::uint64_t{1} << 60U) - 1;
  std::vector<tt::event> ev;
  for (std::uint64_t id = 0; id < 17; ++id) { ev.push_back(read(id, big)); }  // 17 × (2^60 - 1) > 2^64
  EXPECT_THAT([&] { (void)tr::compiled_trace::compile(ev, {.pool = false}); },
              ::testing::ThrowsMessage<tierpool::logic_error>(::testing::HasSubstr("sum past 2^64 - 1 bytes")));
  std::vector<tt::event> const compute = {
    {.kind = tt::event_kind::compute, .duration_ns = std::numeric_limits<std::uint64_t>::max()},
    {.kind = tt::event_kind::compute, .duration_ns = 1}, read(1, 8)};
  EXPECT_THAT([&] { (void)tr::compiled_trace::compile(compute); },
              ::testing::ThrowsMessage<tierpool::logic_error>(::testing::HasSubstr("sum past 2^64 - 1 ns")));
}

TEST(ReplayCompile, ALoopTooLongIsRefusedBeforeReserving)
{
  // --loop 4294967295 reserved 4 G events per array first: std::bad_alloc.
  std::vector<tt::event> const ev = {read(1, 8), read(2, 8)};
  EXPECT_THAT([&] { (void)tr::compiled_trace::compile(ev, {.loop = 4294967295U, .pool = false}); },
              ::testing::ThrowsMessage<tierpool::logic_error>(
                ::testing::HasSubstr("2 events looped 4294967295 times are too many")));
}

TEST(ReplayPoolMode, ALinkTooSlowForTheSimulatedClockIsRefused)
{
  // --link 1e-300,0 saturated the virtual clock: the makespan came out under its own lower bound.
  std::vector<tt::event> const ev = {read(1, 4096), read(2, 4096), read(1, 4096)};
  auto const t = tr::compiled_trace::compile(ev);
  tr::run_options o;
  o.capacity_bytes = 4096;
  o.capacity_label = "4KiB";
  o.link = tierpool::link_model{1e-300, 0};
  EXPECT_THAT([&] { (void)tr::run(t, o); },
              ::testing::ThrowsMessage<tierpool::logic_error>(::testing::HasSubstr("past the simulated clock's range")));
  o.mode = tr::replay_mode::cache;  // no clock: figures in double, nothing saturates
  auto const r = tr::run(t, o);
  EXPECT_GE(r.makespan_seconds, r.ideal_seconds);
}

TEST(ReplayReport, TheTableShowsUnservedRequests)
{
  // Object 1 (4096 B) never fits a 1 KiB cache: both its requests are unserved.
  std::vector<tt::event> const ev = {read(1, 4096), read(2, 100), read(1, 4096), read(2, 100)};
  auto const t = tr::compiled_trace::compile(ev, {.pool = false});
  auto const r = run_cache(t, "lru", 1024);
  ASSERT_EQ(r.unserved, 2U);
  std::vector<tr::replay_result> const rows{r};
  std::string const table = tr::format_table(rows);
  EXPECT_THAT(table, ::testing::ContainsRegex("miss +unserved +byte miss"));
  EXPECT_THAT(table, ::testing::ContainsRegex("\n(lru|1024).* 0\\.7500 +2 +0\\.9881 "));
}

// Note [Conservative prefetches] (pool_impl.cpp): on a loop of 20 MiB of weights read in
// turn at 10 MiB of device room, with kernels too short to hide a copy (the link bounds
// the run, as in llm-infer-stream), a prefetch that evicts a weight read again before the
// weights ahead of it are used again moves bytes that demand fetching would not. With
// `conservative`, a prefetch evicts only past the reuse of everything used before it: it
// moves fewer bytes than the aggressive rule, and about what no prefetching moves.
TEST(ReplayPlanner, ConservativePrefetchesMoveFewerBytesThanAggressiveOnesOnALinkBoundLoop)
{
  constexpr std::uint64_t kMiB = 1U << 20U;
  std::vector<tt::event> ev;
  for (int pass = 0; pass < 30; ++pass) {
    for (std::uint64_t i = 1; i <= 20; ++i) {
      ev.push_back(read(i, kMiB));
      ev.push_back(kernel(2000));
    }
  }
  auto const t = tr::compiled_trace::compile(ev);
  tr::run_options o;
  o.capacity_bytes = 10 * kMiB;
  for (char const* policy : {"belady", "repeat"}) {
    SCOPED_TRACE(policy);
    o.policy = policy;
    auto const bytes = [&](char const* prefetch) {
      o.prefetch = prefetch;
      tr::replay_result const r = tr::run(t, o);
      EXPECT_EQ(r.unserved, 0U) << prefetch;
      return r.bytes_h2d;
    };
    std::uint64_t const none = bytes("none");
    std::uint64_t const aggressive = bytes("oracle");
    std::uint64_t const conservative = bytes("oracle:conservative=on");
    std::printf("%s: h2d MiB none %llu, oracle %llu, oracle:conservative=on %llu\n", policy,
                static_cast<unsigned long long>(none / kMiB), static_cast<unsigned long long>(aggressive / kMiB),
                static_cast<unsigned long long>(conservative / kMiB));
    EXPECT_LT(conservative, aggressive);
    EXPECT_LE(conservative, none + none / 10);
  }
}

namespace {

// The planner with nothing on (no prefetches, no early write-backs, no keep window) leaves
// an lru run exactly as demand fetching does: same bytes each way, same makespan. The keep
// window alone changes which tensors go (Note [The keep window]).
TEST(ReplayPlanner, WithNothingOnThePlannerIsDemandFetching)
{
  std::vector<tt::event> const ev = tt::generate("transformer-train", {{"iterations", "3"}}, 1);
  auto const t = tr::compiled_trace::compile(ev);
  bool keep_mattered = false;
  for (double const share : {0.25, 0.5}) {
    SCOPED_TRACE("at " + std::to_string(share));
    tr::run_options o;
    o.policy = "lru";
    o.recompute = false;
    o.capacity_bytes = static_cast<std::uint64_t>(static_cast<double>(t.peak_live_bytes()) * share);
    o.prefetch = "none";
    tr::replay_result const none = tr::run(t, o);
    o.prefetch = "plan:prefetch=off,writeback=off,keep=off";
    tr::replay_result const idle = tr::run(t, o);
    EXPECT_EQ(idle.bytes_h2d, none.bytes_h2d);
    EXPECT_EQ(idle.bytes_d2h, none.bytes_d2h);
    EXPECT_DOUBLE_EQ(idle.makespan_seconds, none.makespan_seconds);
    EXPECT_EQ(idle.prefetches, 0U);
    o.prefetch = "plan:prefetch=off,writeback=off";  // the keep window on
    tr::replay_result const kept = tr::run(t, o);
    keep_mattered = keep_mattered || kept.bytes_d2h != none.bytes_d2h || kept.bytes_h2d != none.bytes_h2d;
  }
  EXPECT_TRUE(keep_mattered) << "the keep window changed no eviction: the test shows nothing";
}

// GPT-2 small at 50 % with lru: its large tensors (the logits) are placed by window eviction.
struct gpt2_half {
  tr::compiled_trace t = tr::compiled_trace::compile_file(std::string(TIERPOOL_TEST_DATA) + "/gpt2_small_train.tpt");
  tr::replay_result run(char const* prefetch) const
  {
    tr::run_options o;
    o.policy = "lru";
    o.recompute = false;
    o.capacity_bytes = t.peak_live_bytes() / 2;
    o.prefetch = prefetch;
    return tr::run(t, o);
  }
};

// Note [The keep window]: a window eviction takes its run whatever the keep window says.
// With the window's tensors as walls, the keep window alone took this run from 2134 to
// 2488 ms (27.2 / 31.8 GiB moved instead of 23.5 / 24.8); now it evicts as demand
// fetching does.
TEST(ReplayPlanner, TheKeepWindowDoesNotStopAWindowEviction)
{
  gpt2_half const g;
  tr::replay_result const none = g.run("none");
  tr::replay_result const kept = g.run("plan:prefetch=off,writeback=off");  // the keep window on
  EXPECT_EQ(kept.bytes_h2d, none.bytes_h2d);
  EXPECT_EQ(kept.bytes_d2h, none.bytes_d2h);
  EXPECT_DOUBLE_EQ(kept.makespan_seconds, none.makespan_seconds);
}

// Note [Early write-backs on an idle link]: on this run the d2h link is the bottleneck of
// the forward pass. Early write-backs on any link: 614 copies, 2.233 s (1.047x demand
// fetching); only on an idle link: 56, 2.163 s.
TEST(ReplayPlanner, EarlyWriteBacksWaitForAnIdleLink)
{
  gpt2_half const g;
  tr::replay_result const none = g.run("none");
  tr::replay_result const early = g.run("plan:prefetch=off");
  EXPECT_GT(early.early_write_backs, 0U) << "the rule must not turn them off";
  EXPECT_LT(early.early_write_backs, 200U);
  EXPECT_LE(early.makespan_seconds, none.makespan_seconds * 1.02);
}

// Note [The forecast before the access]: `belady` driven by the learned forecast alone (no
// prefetches, no early write-backs, no keep window) runs each iteration as with the trace's
// true next uses once the forecast holds. With the forecast given after the acquire, each
// access reached the policy with the forecast of the one before: 42.2 ms per iteration
// against 31.1 ms.
TEST(ReplayPlanner, BeladyWithTheLearnedForecastRunsAsWithTheTrueOne)
{
  auto const t = tr::compiled_trace::compile(tt::generate("mlp-train", {{"iterations", "10"}}, 1));
  auto run = [&](char const* prefetch) {
    tr::run_options o;
    o.policy = "belady";
    o.recompute = false;
    o.capacity_bytes = t.peak_live_bytes() / 4;
    o.prefetch = prefetch;
    o.record_activity = true;
    return tr::run(t, o);
  };
  tr::replay_result const truth = run("none");
  tr::replay_result const learned = run("plan:prefetch=off,writeback=off,keep=off");
  ASSERT_EQ(truth.iteration_seconds.size(), 10U);
  ASSERT_EQ(learned.iteration_seconds.size(), 10U);
  for (std::size_t k = 4; k < 9; ++k) {  // learned by then; the last iteration has no future
    EXPECT_NEAR(learned.iteration_seconds[k], truth.iteration_seconds[k], 1e-9) << "iteration " << k;
  }
}

// Note [Early write-backs only under pressure]: the oracle knows where each tensor is freed.
// Writing back every tensor next used past the horizon, 231 of its 429 early write-backs
// (1.46 GiB) were wasted here, the tensors read and freed while still resident; only past
// the point where the live bytes ahead outgrow the tier: 1 of 135, and 2444 -> 2319 ms.
TEST(ReplayPlanner, TheOracleWritesBackEarlyOnlyWhatMustBeEvicted)
{
  gpt2_half const g;
  tr::replay_result const o = g.run("oracle");
  EXPECT_GT(o.early_write_backs, 50U);
  EXPECT_LE(o.early_write_backs_wasted * 20, o.early_write_backs) << "at most 5 % wasted";
  EXPECT_LE(o.early_write_back_wasted_bytes, std::uint64_t{64} << 20U);
}

// Note [Copy-ins at the latest start]: `plan` learns the compute between accesses from the
// stream's device times and holds back a copy-in that has to evict until the step where the
// compute left before its use no longer covers the copies queued before it. On
// transformer-train (four iterations) at 50 %: the copies it held back are ready later and
// take fewer tensors' room early; fewer bytes come in again and the run is shorter.
TEST(ReplayPlanner, ACopyInThatMustEvictWaitsForItsLatestStart)
{
  auto const t = tr::compiled_trace::compile(tt::generate("transformer-train", {{"iterations", "4"}}, 1));
  tr::run_options o;
  o.policy = "lru";
  o.recompute = false;
  o.capacity_bytes = t.peak_live_bytes() / 2;
  o.prefetch = "plan";
  tr::replay_result const timed = tr::run(t, o);
  o.prefetch = "plan:timing=off";
  tr::replay_result const early = tr::run(t, o);
  ASSERT_GT(timed.prefetches_on_time, 0U);
  ASSERT_GT(early.prefetches_on_time, 0U);
  double const lead_timed = timed.prefetch_lead_seconds / static_cast<double>(timed.prefetches_on_time);
  double const lead_early = early.prefetch_lead_seconds / static_cast<double>(early.prefetches_on_time);
  EXPECT_LT(lead_timed, lead_early * 0.75) << "on-time prefetches ready closer to their use";
  EXPECT_LT(timed.bytes_h2d, early.bytes_h2d);
  EXPECT_LT(timed.makespan_seconds, early.makespan_seconds);
  EXPECT_EQ(timed.planner_relearns, early.planner_relearns);
}

// Note [No early write-back while the tier evicts]: an optimizer-like loop that is all
// copies. 32 tensors of 1 MiB, each read and rewritten once per pass with almost no compute,
// on a device tier of 16 first filled with clean tensors: from the first access on, every
// access evicts. Without the rule the oracle writes back 72 tensors early, each on a link
// that looks idle at the stream's point, ahead of a victim's write-back a copy-in waits for.
TEST(ReplayPlanner, NoEarlyWriteBackWhileTheTierEvicts)
{
  constexpr std::uint64_t kB = 1U << 20U;
  std::vector<tt::event> ev;
  for (std::uint64_t id = 101; id <= 116; ++id) {  // the device tier full of clean tensors first
    ev.push_back(read(id, kB));
    ev.push_back(kernel(500));
  }
  for (std::uint64_t id = 1; id <= 32; ++id) { ev.push_back(born(id, kB)); }
  for (int pass = 0; pass < 4; ++pass) {
    for (std::uint64_t id = 1; id <= 32; ++id) {
      tt::event w = read(id, kB);
      w.mode = tt::access_kind::read_write;
      ev.push_back(w);
      ev.push_back(kernel(500));
    }
  }
  auto const t = tr::compiled_trace::compile(ev);
  tr::run_options o;
  o.policy = "lru";
  o.recompute = false;
  o.capacity_bytes = 16 * kB;
  o.prefetch = "none";
  tr::replay_result const none = tr::run(t, o);
  o.prefetch = "oracle:prefetch=off,keep=off";  // its only copies of its own: early write-backs
  tr::replay_result const early = tr::run(t, o);
  EXPECT_EQ(early.early_write_backs, 0U);
  EXPECT_EQ(early.bytes_d2h, none.bytes_d2h);
  EXPECT_LE(early.makespan_seconds, none.makespan_seconds);
}

// Note [Measuring whether prefetching pays]: the same trace, policy and capacity, `plan`
// with the trials (the default), without them, and with no planned prefetches at all.
struct probe_runs {
  tr::replay_result probe, always, never;
  probe_runs(tr::compiled_trace const& t, std::string_view policy)
  {
    tr::run_options o;
    o.policy = std::string(policy);
    o.recompute = false;
    o.capacity_bytes = t.peak_live_bytes() / 2;
    o.prefetch = "plan";
    probe = tr::run(t, o);
    o.prefetch = "plan:probe=off";
    always = tr::run(t, o);
    o.prefetch = "plan:prefetch=off";
    never = tr::run(t, o);
  }
};

// llm-infer-stream with `repeat` at 50 %: planned prefetches cost every period (4.24 s
// against 3.44 s without; 4.57 s before `repeat` stopped counting a prefetch as a use);
// after the warm-up's 4 periods and its first trial the planner stops issuing them, and
// tries them again only for a few periods (3.55 s).
TEST(ReplayPlanner, PrefetchingStopsWhereItDoesNotPay)
{
  auto const t = tr::compiled_trace::compile(tt::generate("llm-infer-stream", {}, 1));
  probe_runs const r(t, "repeat");
  EXPECT_EQ(r.always.planner_periods_prefetching + r.always.planner_periods_without, 0U) << "probe=off times nothing";
  EXPECT_EQ(r.never.planner_periods_prefetching + r.never.planner_periods_without, 0U);
  EXPECT_GT(r.probe.planner_periods_without, 4 * r.probe.planner_periods_prefetching);
  EXPECT_GE(r.probe.planner_periods_prefetching, 4U) << "the warm-up prefetches";
  EXPECT_LT(r.probe.makespan_seconds, r.always.makespan_seconds * 0.85);
  EXPECT_LT(r.probe.makespan_seconds, r.never.makespan_seconds * 1.05);
  EXPECT_LT(r.probe.prefetches * 4, r.always.prefetches);
}

// mlp-train over 20 iterations with lru at 50 %: prefetching pays (about 10 % of each
// period); the trial without it loses and the planner prefetches again.
TEST(ReplayPlanner, PrefetchingStaysWhereItPays)
{
  auto const t = tr::compiled_trace::compile(tt::generate("mlp-train", {{"iterations", "20"}}, 1));
  probe_runs const r(t, "lru");
  EXPECT_EQ(r.probe.planner_periods_without, 3U) << "one trial of 3 periods";
  EXPECT_GT(r.probe.planner_periods_prefetching, 12U);
  EXPECT_LT(r.probe.makespan_seconds, r.never.makespan_seconds * 0.95);
  EXPECT_LT(r.probe.makespan_seconds, r.always.makespan_seconds * 1.03) << "the trial costs little";
}

// Data-parallel training on two streams (transformer-train streams=2, six iterations, 50 %):
// the gradients' all-reduces on stream 1 run beside backward on stream 0. With no prefetch
// they hide entirely (the one-stream trace's makespan); the ideal's compute term is the
// busiest stream's, not the sum; and the planner, learning accesses of both streams as one
// period, beats demand fetching.
TEST(ReplayPlanner, TheAllReduceStreamRunsBesideBackwardAndThePlannerPays)
{
  tt::generator_params p{{"iterations", "6"}};
  auto const one = tr::compiled_trace::compile(tt::generate("transformer-train", p, 1));
  p.emplace_back("streams", "2");
  auto const two = tr::compiled_trace::compile(tt::generate("transformer-train", p, 1));
  ASSERT_EQ(one.peak_live_bytes(), two.peak_live_bytes());
  tr::run_options o;
  o.policy = "lru";
  o.recompute = false;
  o.capacity_bytes = one.peak_live_bytes() / 2;
  tr::replay_result const none1 = tr::run(one, o);
  tr::replay_result const none2 = tr::run(two, o);
  EXPECT_EQ(none2.compute_seconds, none1.compute_seconds) << "the busiest stream's compute";
  EXPECT_EQ(none2.ideal_seconds, none1.ideal_seconds);
  EXPECT_LT(none2.makespan_seconds, none1.makespan_seconds * 1.01) << "stream 1 hides under stream 0";
  EXPECT_EQ(none2.phase_floor_seconds, 0.0) << "the phase floor is of one stream of kernels";
  o.prefetch = "plan";
  tr::replay_result const plan2 = tr::run(two, o);
  EXPECT_GT(plan2.prefetches, 0U);
  EXPECT_EQ(plan2.planner_relearns, 0U);
  EXPECT_LT(plan2.makespan_seconds, none2.makespan_seconds * 0.97);
}

// ResNet-18 recorded from PyTorch for 12 steps (tests/data/README.md), lru at 50 %: the run
// is bound by the link in both directions, and planned prefetches move more bytes than demand
// fetching (always prefetching: 673 ms against 640 with no predictor). After the warm-up's 4
// periods the trial without prefetches wins, and the rest of the run goes without them: the
// planner then costs only its warm-up (648 ms).
TEST(ReplayPlanner, PrefetchingStopsOnARecordedResNetRun)
{
  auto const t = tr::compiled_trace::compile_file(std::string(TIERPOOL_TEST_DATA) + "/resnet18_torch_12steps.tpb");
  probe_runs const r(t, "lru");
  tr::run_options o;
  o.policy = "lru";
  o.recompute = false;
  o.capacity_bytes = t.peak_live_bytes() / 2;
  tr::replay_result const none = tr::run(t, o);
  EXPECT_EQ(r.probe.planner_relearns, 0U) << "one schedule: every step trains the same model";
  EXPECT_EQ(r.probe.planner_periods_prefetching, 4U) << "the warm-up only";
  EXPECT_GE(r.probe.planner_periods_without, 6U) << "the trial won and prefetching stayed off";
  EXPECT_GT(r.always.makespan_seconds, none.makespan_seconds * 1.03) << "prefetching costs on this run";
  EXPECT_LT(r.probe.makespan_seconds, r.always.makespan_seconds * 0.97);
  EXPECT_LT(r.probe.makespan_seconds, none.makespan_seconds * 1.02) << "the warm-up costs little";
  EXPECT_LT(r.never.makespan_seconds, none.makespan_seconds * 1.0);
}

// A run of 4 iterations plans fewer periods than the warm-up: it never stops prefetching, and
// runs as without the trials.
TEST(ReplayPlanner, AShortRunIsNotTrialled)
{
  auto const t = tr::compiled_trace::compile(tt::generate("transformer-train", {{"iterations", "4"}}, 1));
  probe_runs const r(t, "lru");
  EXPECT_GT(r.probe.planner_periods_prefetching, 0U);
  EXPECT_EQ(r.probe.planner_periods_without, 0U);
  EXPECT_EQ(r.probe.makespan_seconds, r.always.makespan_seconds);
  EXPECT_EQ(r.probe.bytes_h2d, r.always.bytes_h2d);
}

}  // namespace

// ---- discard events (pool::discard) ---------------------------------------------------

namespace {

tt::event discard_event(std::uint64_t id)
{
  tt::event e{};
  e.kind = tt::event_kind::discard;
  e.tensor = id;
  return e;
}

// Tensor 1 is written on the device and kept; three more are written beside it in a device
// tier that holds two, so it is evicted. With `with_discard` the program declares its bytes
// dead first; its next access rewrites it (write_discard) either way.
std::vector<tt::event> dead_bytes_kept(bool with_discard)
{
  constexpr std::uint64_t kB = 1U << 20U;
  std::vector<tt::event> ev = {born(1, kB), discard(1, kB), kernel(1000)};
  if (with_discard) { ev.push_back(discard_event(1)); }
  for (std::uint64_t id = 2; id <= 4; ++id) {
    ev.push_back(born(id, kB));
    ev.push_back(discard(id, kB));
    ev.push_back(kernel(1000));
  }
  ev.push_back(discard(1, kB));
  ev.push_back(kernel(1000));
  for (std::uint64_t id = 1; id <= 4; ++id) {
    ev.push_back(read(id));
    ev.push_back(kernel(1000));
  }
  return ev;
}

}  // namespace

TEST(ReplayDiscard, ADiscardedTensorIsDroppedNotWrittenBack)
{
  auto const plain = tr::compiled_trace::compile(dead_bytes_kept(false));
  auto const dead = tr::compiled_trace::compile(dead_bytes_kept(true));
  tr::run_options o;
  o.policy = "lru";
  o.capacity_bytes = 2U << 20U;
  o.mode = tr::replay_mode::pool;
  tr::replay_result const a = tr::run(plain, o);
  tr::replay_result const b = tr::run(dead, o);
  EXPECT_EQ(a.bytes_d2h - b.bytes_d2h, 1U << 20U) << "tensor 1's write-back, and only it, is saved";
  EXPECT_EQ(a.bytes_h2d, b.bytes_h2d);
  EXPECT_LT(b.makespan_seconds, a.makespan_seconds);
  EXPECT_DOUBLE_EQ(a.ideal_seconds, b.ideal_seconds) << "the floors knew already: its next access is a write_discard";
  // Managed memory: with hints the discard is cudaMemDiscardBatchAsync (its pages go without
  // a copy); without hints there is no such call.
  o.mode = tr::replay_mode::uvm_hints;
  EXPECT_LT(tr::run(dead, o).bytes_d2h, tr::run(plain, o).bytes_d2h);
  o.mode = tr::replay_mode::uvm;
  EXPECT_EQ(tr::run(dead, o).bytes_d2h, tr::run(plain, o).bytes_d2h);
}

// A discard ends the tensor's own lease, not the others' (a trace without release events
// holds leases until the stream's next kernel): tensor 2, still leased by the kernel to
// come, must not become the victim of the next request; the discarded 1 is.
TEST(ReplayDiscard, ADiscardEndsOnlyItsOwnLease)
{
  constexpr std::uint64_t kB = 1U << 20U;
  std::vector<tt::event> const ev = {born(1, kB),      discard(1, kB), kernel(1000),   born(2, kB), discard(2, kB),
                                     read(1),          discard_event(1), born(3, kB),  discard(3, kB), kernel(1000),
                                     read(2),          read(3),          kernel(1000)};
  tr::run_options o;
  o.policy = "lru";  // 2 is the least recent: with every lease ended, it would go (dirty: written back)
  o.capacity_bytes = 2U << 20U;
  tr::replay_result const r = tr::run(tr::compiled_trace::compile(ev), o);
  EXPECT_EQ(r.bytes_d2h, 0U);
  EXPECT_EQ(r.bytes_h2d, 0U);
  EXPECT_EQ(r.evictions, 1U);
}

TEST(ReplayDiscard, AReadAfterADiscardIsRefusedWhenCompiled)
{
  std::vector<tt::event> ev = {born(7, 64), discard(7, 64), discard_event(7), read(7)};
  EXPECT_THAT([&] { (void)tr::compiled_trace::compile(ev); },
              testing::ThrowsMessage<tierpool::logic_error>(testing::HasSubstr(
                "replay: event 4 reads tensor 7 after its discard event, before a write_discard access")));
  ev.back() = discard(7, 64);  // rewritten first: fine; so is a discard of a dead id
  ev.push_back(discard_event(99));
  ev.push_back(read(7));
  EXPECT_EQ(tr::compiled_trace::compile(ev).requests(), 3U);
}

// run_options::trace_prefetches (tierpool replay --no-trace-prefetch): a recorded program's
// prefetch calls are replayed by default and skipped on request, so that a prefetcher's rows
// compare it alone. Tensor 1 is written by the host, then the trace prefetches it to the
// device before a kernel reads it: a prefetch copy beside the 100 us kernel before, or the
// read's own miss without it (as early in stream order: the host runs ahead).
TEST(ReplayPoolMode, TheTracesOwnPrefetchesCanBeLeftOut)
{
  constexpr std::uint64_t kB = 1U << 20U;
  tt::event host_write = discard(1, kB);
  host_write.stream = tt::host_stream;
  tt::event pf{};
  pf.kind = tt::event_kind::prefetch;
  pf.tensor = 1;
  pf.tier = 0;
  std::vector<tt::event> const ev = {born(1, kB), host_write, pf, kernel(100000), read(1), kernel(1000)};
  auto const t = tr::compiled_trace::compile(ev);
  tr::run_options o;
  o.policy = "lru";
  o.capacity_bytes = 2 * kB;
  tr::replay_result const with = tr::run(t, o);
  o.trace_prefetches = false;
  tr::replay_result const without = tr::run(t, o);
  EXPECT_EQ(with.prefetches, 1U);
  EXPECT_EQ(without.prefetches, 0U);
  EXPECT_EQ(with.misses + 1, without.misses) << "the read finds the prefetched copy";
  EXPECT_EQ(with.bytes_h2d, without.bytes_h2d) << "the same copy, made by the prefetch or by the miss";
  EXPECT_EQ(with.prefetches_on_time, 1U) << "done beside the 100 us kernel";
}

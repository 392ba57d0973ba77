// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// uvm_replay_tests.cpp — the UVM baseline (replay_mode::uvm / uvm_hints, Note [The UVM
// model] in runtime/replay/uvm_replay.cpp): small traces whose makespan is computed by
// hand on pcie4 (a copy of B bytes takes 2000 + ceil(B / 25) ns), determinism, the ideal
// time as a floor on the generated DNN traces, and the errors.
#include <tierpool/error.hpp>
#include <tierpool/replay.hpp>
#include <tierpool/trace.hpp>
#include <tierpool/trace_gen.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tr = tierpool::replay;
namespace tt = tierpool::trace;

namespace {

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;
constexpr std::uint64_t kFault = 25'000;  // the default fault cost, ns

// A copy of `bytes` on pcie4, ns (link_model::transfer_ns).
std::uint64_t copy_ns(std::uint64_t bytes) { return 2000 + (bytes + 24) / 25; }

// A tensor whose bytes start in host memory (tier 1), or born on the device (no tier).
tt::event alloc(std::uint64_t id, std::uint64_t bytes, bool host = true)
{
  tt::event e{};
  e.kind = tt::event_kind::allocate;
  e.tensor = id;
  e.bytes = bytes;
  e.tier = host ? 1U : tt::no_tier;
  return e;
}

tt::event access(std::uint64_t id, tt::access_kind mode = tt::access_kind::read, std::uint32_t stream = 0)
{
  tt::event e{};
  e.kind = tt::event_kind::access;
  e.tensor = id;
  e.mode = mode;
  e.stream = stream;
  return e;
}

tt::event host_read(std::uint64_t id)
{
  tt::event e = access(id);
  e.stream = tt::host_stream;
  return e;
}

tt::event compute(std::uint64_t ns, std::uint32_t stream = 0)
{
  tt::event e{};
  e.kind = tt::event_kind::compute;
  e.stream = stream;
  e.duration_ns = ns;
  return e;
}

tr::replay_result run_uvm(std::vector<tt::event> const& ev, std::uint64_t capacity, bool hints = false,
                          std::uint64_t page = 64 * kKiB, bool drop_clean = false)
{
  tr::run_options o;
  o.mode = hints ? tr::replay_mode::uvm_hints : tr::replay_mode::uvm;
  o.capacity_bytes = capacity;
  o.uvm_page_bytes = page;
  o.uvm_drop_clean = drop_clean;
  return tr::run(tr::compiled_trace::compile(ev), o);
}

double ns(std::uint64_t v) { return static_cast<double>(v) * 1e-9; }

}  // namespace

TEST(ReplayUvm, ModeNamesRoundTrip)
{
  for (tr::replay_mode m : {tr::replay_mode::pool, tr::replay_mode::cache, tr::replay_mode::uvm, tr::replay_mode::uvm_hints}) {
    EXPECT_EQ(tr::parse_replay_mode(tr::to_string(m)), m);
  }
  EXPECT_EQ(tr::to_string(tr::replay_mode::uvm_hints), "uvm-hints");
  EXPECT_THROW((void)tr::parse_replay_mode("uvm_hints"), tierpool::logic_error);
}

TEST(ReplayUvm, OneTensorFaultedInPaysTheFaultTheCopyAndTheKernel)
{
  // 1 MiB = 16 pages, all in host memory: one fault group, one copy, then the kernel.
  auto const r = run_uvm({alloc(1, 1 * kMiB), access(1), compute(100'000)}, 4 * kMiB);
  EXPECT_EQ(r.mode, tr::replay_mode::uvm);
  EXPECT_EQ(r.requests, 1U);
  EXPECT_EQ(r.hits, 0U);
  EXPECT_EQ(r.misses, 1U);
  EXPECT_EQ(r.bytes_h2d, 1 * kMiB);
  EXPECT_EQ(r.copies_h2d, 1U);
  EXPECT_EQ(r.bytes_d2h, 0U);
  EXPECT_EQ(r.bytes_missed, 1 * kMiB);
  EXPECT_DOUBLE_EQ(r.makespan_seconds, ns(kFault + copy_ns(1 * kMiB) + 100'000));
  EXPECT_DOUBLE_EQ(r.stall_seconds, ns(kFault + copy_ns(1 * kMiB)));
  EXPECT_DOUBLE_EQ(r.compute_seconds, 100e-6);
  EXPECT_DOUBLE_EQ(r.ideal_seconds, 100e-6);  // computed for uvm rows too
  EXPECT_EQ(r.must_move_h2d, 1 * kMiB);
}

TEST(ReplayUvm, TheFaultCostIsAnOption)
{
  tr::run_options o;
  o.mode = tr::replay_mode::uvm;
  o.capacity_bytes = 4 * kMiB;
  o.uvm_fault_ns = 40'000.0;
  auto const r = tr::run(tr::compiled_trace::compile(std::vector<tt::event>{alloc(1, 1 * kMiB), access(1), compute(100'000)}), o);
  EXPECT_DOUBLE_EQ(r.makespan_seconds, ns(40'000 + copy_ns(1 * kMiB) + 100'000));
}

TEST(ReplayUvm, ResidentPagesHitAndCostNothing)
{
  auto const r = run_uvm({alloc(1, 1 * kMiB), access(1), compute(10'000), access(1), compute(10'000)}, 4 * kMiB);
  EXPECT_EQ(r.hits, 1U);
  EXPECT_EQ(r.misses, 1U);
  EXPECT_EQ(r.copies_h2d, 1U);
  EXPECT_DOUBLE_EQ(r.makespan_seconds, ns(kFault + copy_ns(1 * kMiB) + 20'000));
}

TEST(ReplayUvm, LruEvictionWritesDirtyPagesBackOnTheFaultsCriticalPath)
{
  // 2 MiB of device = 32 pages; A and B are 24 pages each. A is written by kernel 1; B's
  // fault needs 16 more pages: A's top 16 (dirty) go back first, and the fault waits.
  std::uint64_t const a = 1536 * kKiB;
  std::vector<tt::event> const ev = {alloc(1, a), alloc(2, a), access(1, tt::access_kind::read_write), compute(10'000),
                                     access(2), compute(10'000)};
  auto const r = run_uvm(ev, 2 * kMiB);
  EXPECT_EQ(r.evictions, 16U);  // pages
  EXPECT_EQ(r.bytes_d2h, 1 * kMiB);
  EXPECT_EQ(r.copies_d2h, 1U);
  EXPECT_EQ(r.bytes_h2d, 2 * a);
  std::uint64_t const k1 = kFault + copy_ns(a) + 10'000;
  std::uint64_t const k2 = kFault + copy_ns(1 * kMiB) + copy_ns(a) + 10'000;
  EXPECT_DOUBLE_EQ(r.makespan_seconds, ns(k1 + k2));
  EXPECT_GE(r.makespan_seconds, r.ideal_seconds);
  // Dirty pages are written back with drop_clean too.
  auto const dc = run_uvm(ev, 2 * kMiB, false, 64 * kKiB, true);
  EXPECT_EQ(dc.bytes_d2h, 1 * kMiB);
  EXPECT_DOUBLE_EQ(dc.makespan_seconds, r.makespan_seconds);
}

TEST(ReplayUvm, CleanPagesGoBackByDefaultAndAreDroppedWithDropClean)
{
  std::uint64_t const a = 1536 * kKiB;
  std::vector<tt::event> const ev = {alloc(1, a), alloc(2, a), access(1), compute(10'000), access(2), compute(10'000)};
  auto const keep = run_uvm(ev, 2 * kMiB);
  auto const drop = run_uvm(ev, 2 * kMiB, false, 64 * kKiB, true);
  EXPECT_EQ(keep.evictions, 16U);
  EXPECT_EQ(drop.evictions, 16U);
  EXPECT_EQ(keep.bytes_d2h, 1 * kMiB);  // a managed page has one copy: it migrates back
  EXPECT_EQ(drop.bytes_d2h, 0U);
  EXPECT_DOUBLE_EQ(keep.makespan_seconds - drop.makespan_seconds, ns(copy_ns(1 * kMiB)));
}

TEST(ReplayUvm, LeastRecentlyUsedTensorIsTheVictim)
{
  // Room for two of three 1 MiB tensors: after A, B, A, the fault of C evicts B (least
  // recent), so the next access of A hits; B's refault then evicts C, not A.
  std::vector<tt::event> const ev = {alloc(1, kMiB), alloc(2, kMiB), alloc(3, kMiB), access(1), compute(1000),
                                     access(2), compute(1000), access(1), compute(1000), access(3), compute(1000),
                                     access(1), compute(1000), access(2), compute(1000)};
  auto const r = run_uvm(ev, 2 * kMiB);
  EXPECT_EQ(r.hits, 2U);  // A (third kernel) and A (fifth)
  EXPECT_EQ(r.misses, 4U);
  EXPECT_EQ(r.evictions, 32U);  // B for C, then C for B
  // Had it evicted A for B, a last access of A would miss.
  std::vector<tt::event> more = ev;
  more.push_back(access(1));
  more.push_back(compute(1000));
  EXPECT_EQ(run_uvm(more, 2 * kMiB).hits, 3U);
}

TEST(ReplayUvm, HintsOverlapTheMigrationWithThePreviousKernel)
{
  std::vector<tt::event> const ev = {alloc(1, kMiB), alloc(2, kMiB), access(1), compute(100'000), access(2),
                                     compute(100'000)};
  auto const plain = run_uvm(ev, 4 * kMiB);
  auto const hinted = run_uvm(ev, 4 * kMiB, true);
  std::uint64_t const c = copy_ns(kMiB);
  EXPECT_DOUBLE_EQ(plain.makespan_seconds, ns(2 * (kFault + c + 100'000)));
  // The first kernel waits for its prefetch (no fault cost); the second's prefetch runs
  // while the first computes.
  EXPECT_DOUBLE_EQ(hinted.makespan_seconds, ns(c + 2 * 100'000));
  EXPECT_LT(hinted.makespan_seconds, plain.makespan_seconds);
  EXPECT_EQ(hinted.hits, 2U);
  EXPECT_EQ(hinted.misses, 0U);
  EXPECT_EQ(hinted.prefetches, 2U);
  EXPECT_EQ(hinted.bytes_h2d, plain.bytes_h2d);
  EXPECT_EQ(hinted.mode, tr::replay_mode::uvm_hints);
}

TEST(ReplayUvm, AHintedPrefetchLongerThanTheKernelDelaysTheNextOne)
{
  // B's prefetch (8 MiB) starts with kernel 1 and outlasts its 10 us: kernel 2 waits for it.
  std::vector<tt::event> const ev = {alloc(1, kMiB), alloc(2, 8 * kMiB), access(1), compute(10'000), access(2),
                                     compute(10'000)};
  auto const r = run_uvm(ev, 16 * kMiB, true);
  std::uint64_t const k1_start = copy_ns(kMiB);
  EXPECT_DOUBLE_EQ(r.makespan_seconds, ns(k1_start + copy_ns(8 * kMiB) + 10'000));
}

TEST(ReplayUvm, HintsNeverEvictTheRunningKernelsOperands)
{
  // 2 MiB of device; A (kernel 1) and B (kernel 2) are 1.5 MiB each. B's prefetch may not
  // evict A while kernel 1 runs: it brings the 8 free pages, and the other 16 fault when
  // kernel 2 starts (A is then evictable; it is clean but migrates back).
  std::uint64_t const a = 1536 * kKiB;
  std::vector<tt::event> const ev = {alloc(1, a), alloc(2, a), access(1), compute(100'000), access(2), compute(100'000)};
  auto const r = run_uvm(ev, 2 * kMiB, true);
  std::uint64_t const k1_start = copy_ns(a);
  std::uint64_t const part = k1_start + copy_ns(512 * kKiB);  // 8 pages, during kernel 1
  ASSERT_LT(part, k1_start + 100'000);
  std::uint64_t const k2_start = k1_start + 100'000 + kFault + copy_ns(1 * kMiB) + copy_ns(1 * kMiB);
  EXPECT_DOUBLE_EQ(r.makespan_seconds, ns(k2_start + 100'000));
  EXPECT_EQ(r.misses, 1U);
  EXPECT_EQ(r.prefetches, 2U);
  EXPECT_EQ(r.bytes_h2d, 2 * a);
  EXPECT_EQ(r.bytes_d2h, 1 * kMiB);
}

TEST(ReplayUvm, TwoMebibytePagesRoundTheBytesMovedUp)
{
  std::vector<tt::event> const ev = {alloc(1, 3 * kMiB), access(1), compute(1000)};
  auto const small = run_uvm(ev, 8 * kMiB);
  auto const large = run_uvm(ev, 8 * kMiB, false, 2 * kMiB);
  EXPECT_EQ(small.bytes_h2d, 3 * kMiB);
  EXPECT_EQ(large.bytes_h2d, 4 * kMiB);  // two 2 MiB pages
  EXPECT_DOUBLE_EQ(small.makespan_seconds, ns(kFault + copy_ns(3 * kMiB) + 1000));
  EXPECT_DOUBLE_EQ(large.makespan_seconds, ns(kFault + copy_ns(4 * kMiB) + 1000));
  // A tensor of 100000 bytes is two 64 KiB pages.
  EXPECT_EQ(run_uvm({alloc(1, 100'000), access(1), compute(1)}, 8 * kMiB).bytes_h2d, 128 * kKiB);
}

TEST(ReplayUvm, BornOnTheDeviceFaultsWithoutACopyAndAHostReadTakesItBack)
{
  // A has no tier preference: its first touch populates it on the device (fault cost, no
  // bytes). The host read waits for kernel 1, then migrates A back; kernel 2 refaults it.
  std::vector<tt::event> const ev = {alloc(1, kMiB, false), access(1, tt::access_kind::write_discard), compute(10'000),
                                     host_read(1), access(1), compute(10'000)};
  auto const r = run_uvm(ev, 4 * kMiB);
  std::uint64_t const k1_end = kFault + 10'000;
  std::uint64_t const host = k1_end + copy_ns(kMiB);
  EXPECT_DOUBLE_EQ(r.makespan_seconds, ns(host + kFault + copy_ns(kMiB) + 10'000));
  EXPECT_EQ(r.bytes_h2d, kMiB);
  EXPECT_EQ(r.bytes_d2h, kMiB);
  EXPECT_EQ(r.misses, 3U);
  EXPECT_EQ(r.evictions, 0U);  // the host's migration is not an eviction
  EXPECT_GE(r.makespan_seconds, r.ideal_seconds);
}

TEST(ReplayUvm, WriteDiscardStillMigratesTheOldBytes)
{
  auto const r = run_uvm({alloc(1, kMiB), access(1, tt::access_kind::write_discard), compute(1000)}, 4 * kMiB);
  EXPECT_EQ(r.bytes_h2d, kMiB);
  EXPECT_EQ(r.must_move_h2d, 0U);  // the floor knows better
}

TEST(ReplayUvm, FreedTensorsReleaseTheirPages)
{
  // 2 MiB of device: A (1.5 MiB) freed before B (1.5 MiB): nothing is evicted.
  std::uint64_t const a = 1536 * kKiB;
  tt::event f{};
  f.kind = tt::event_kind::free;
  f.tensor = 1;
  auto const r = run_uvm({alloc(1, a), access(1), compute(1000), f, alloc(2, a), access(2), compute(1000)}, 2 * kMiB);
  EXPECT_EQ(r.evictions, 0U);
  EXPECT_EQ(r.bytes_d2h, 0U);
}

TEST(ReplayUvm, ATensorLargerThanTheDeviceIsUnserved)
{
  auto const r = run_uvm({alloc(1, 8 * kMiB), access(1), compute(1000)}, 4 * kMiB);
  EXPECT_EQ(r.unserved, 1U);
  EXPECT_EQ(r.misses, 1U);
  EXPECT_EQ(r.bytes_h2d, 0U);
}

TEST(ReplayUvm, WithoutComputeEventsEachAccessIsAKernelOfItsOwn)
{
  // A cache trace (objects first seen through a read, their bytes in host memory): 4 KiB
  // objects are one 64 KiB page each; two pages of room.
  tt::event r1 = access(1);
  r1.bytes = 4096;
  tt::event r2 = access(2);
  r2.bytes = 4096;
  auto const r = run_uvm({r1, r2, r1}, 128 * kKiB);
  EXPECT_EQ(r.hits, 1U);
  EXPECT_EQ(r.misses, 2U);
  EXPECT_EQ(r.bytes_h2d, 128 * kKiB);
  EXPECT_DOUBLE_EQ(r.makespan_seconds, ns(2 * (kFault + copy_ns(64 * kKiB))));
}

TEST(ReplayUvm, StreamsFaultOnTheirOwnTimelinesAndShareTheLink)
{
  // A on stream 0, B on stream 1: both kernels fault at 0; B's copy waits for A's on the
  // h2d link, and the kernels overlap.
  std::vector<tt::event> const ev = {alloc(1, kMiB), alloc(2, kMiB), access(1, tt::access_kind::read, 0),
                                     compute(100'000, 0), access(2, tt::access_kind::read, 1), compute(100'000, 1)};
  auto const r = run_uvm(ev, 4 * kMiB);
  std::uint64_t const c = copy_ns(kMiB);
  EXPECT_DOUBLE_EQ(r.makespan_seconds, ns(kFault + 2 * c + 100'000));
  EXPECT_DOUBLE_EQ(r.stall_seconds, ns((kFault + c) + (kFault + 2 * c)));
  EXPECT_DOUBLE_EQ(r.compute_seconds, 100e-6);
}

TEST(ReplayUvm, DeterministicAndNeverBelowTheIdealOnTheGenerators)
{
  for (char const* workload : {"mlp-train", "transformer-train", "llm-infer-stream"}) {
    auto const t = tr::compiled_trace::compile(tt::generate(workload, {}, 1));
    for (tr::replay_mode mode : {tr::replay_mode::uvm, tr::replay_mode::uvm_hints}) {
      for (std::uint64_t page : {64 * kKiB, 2 * kMiB}) {
        for (char const* cap : {"25%", "50%", "100%"}) {
          SCOPED_TRACE(std::string(workload) + " " + std::string(tr::to_string(mode)) + " page " +
                       std::to_string(page) + " at " + cap);
          tr::run_options o;
          o.mode = mode;
          o.capacity_bytes = t.resolve(tr::parse_capacity(cap), mode);
          o.capacity_label = cap;
          o.uvm_page_bytes = page;
          auto const x = tr::run(t, o);
          auto const y = tr::run(t, o);
          EXPECT_GT(x.requests, 0U);
          EXPECT_EQ(x.unserved, 0U);
          EXPECT_EQ(x.hits + x.misses, x.requests);
          EXPECT_EQ(x.hits, y.hits);
          EXPECT_EQ(x.bytes_h2d, y.bytes_h2d);
          EXPECT_EQ(x.bytes_d2h, y.bytes_d2h);
          EXPECT_EQ(x.evictions, y.evictions);
          EXPECT_DOUBLE_EQ(x.makespan_seconds, y.makespan_seconds);
          EXPECT_GT(x.ideal_seconds, 0.0);
          EXPECT_GE(x.makespan_seconds, x.ideal_seconds);
          EXPECT_GE(x.bytes_h2d, x.must_move_h2d);
          EXPECT_GE(x.bytes_d2h, x.must_move_d2h);
        }
      }
    }
  }
}

TEST(ReplayUvm, HintsBeatDemandPagingOnTheGenerators)
{
  for (char const* workload : {"mlp-train", "transformer-train"}) {
    SCOPED_TRACE(workload);
    auto const t = tr::compiled_trace::compile(tt::generate(workload, {}, 1));
    tr::run_options o;
    o.capacity_bytes = t.resolve(tr::parse_capacity("50%"), tr::replay_mode::uvm);
    o.mode = tr::replay_mode::uvm;
    auto const plain = tr::run(t, o);
    o.mode = tr::replay_mode::uvm_hints;
    auto const hinted = tr::run(t, o);
    EXPECT_LT(hinted.makespan_seconds, plain.makespan_seconds);
    EXPECT_GT(hinted.prefetches, 0U);
  }
}

TEST(ReplayUvm, BadOptionsAreTypedErrors)
{
  auto const t = tr::compiled_trace::compile(std::vector<tt::event>{alloc(1, kMiB), access(1), compute(1000)});
  auto attempt = [&](auto&& change) {
    tr::run_options o;
    o.mode = tr::replay_mode::uvm;
    o.capacity_bytes = 4 * kMiB;
    change(o);
    return tr::run(t, o);
  };
  EXPECT_NO_THROW((void)attempt([](tr::run_options&) {}));
  for (std::uint64_t page : {std::uint64_t{0}, std::uint64_t{2048}, std::uint64_t{6144}, 3 * kMiB}) {
    SCOPED_TRACE(page);
    EXPECT_THROW((void)attempt([page](tr::run_options& o) { o.uvm_page_bytes = page; }), tierpool::logic_error);
  }
  for (double f : {-1.0, std::nan(""), std::numeric_limits<double>::infinity(), 2e9}) {
    SCOPED_TRACE(f);
    EXPECT_THROW((void)attempt([f](tr::run_options& o) { o.uvm_fault_ns = f; }), tierpool::logic_error);
  }
  EXPECT_NO_THROW((void)attempt([](tr::run_options& o) { o.uvm_fault_ns = 0.0; }));
  EXPECT_THROW((void)attempt([](tr::run_options& o) { o.policy = "arc"; }), tierpool::logic_error);
  EXPECT_THROW((void)attempt([](tr::run_options& o) { o.prefetch = "sequence"; }), tierpool::logic_error);
  EXPECT_THROW((void)attempt([](tr::run_options& o) { o.staging = tr::parse_staging_tiers("pinned_host=1MiB"); }),
               tierpool::logic_error);
  EXPECT_THROW((void)attempt([](tr::run_options& o) {
                 o.capacity_bytes = 4 * kMiB;
                 o.uvm_page_bytes = 8 * kMiB;
               }),
               tierpool::logic_error);
  EXPECT_THROW(tr::check_uvm_options(12345, 0.0), tierpool::logic_error);
  EXPECT_NO_THROW(tr::check_uvm_options(4096, 0.0));
}

TEST(ReplayUvm, GridCarriesTheUvmOptions)
{
  auto const t = tr::compiled_trace::compile(std::vector<tt::event>{alloc(1, 3 * kMiB), access(1), compute(1000)});
  tr::grid_options g;
  g.mode = tr::replay_mode::uvm;
  g.capacities = tr::parse_capacities("8MiB");
  g.uvm_page_bytes = 2 * kMiB;
  g.uvm_fault_ns = 0.0;
  auto const r = tr::run_grid(t, g);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_EQ(r[0].bytes_h2d, 4 * kMiB);
  EXPECT_DOUBLE_EQ(r[0].makespan_seconds, ns(copy_ns(4 * kMiB) + 1000));
}

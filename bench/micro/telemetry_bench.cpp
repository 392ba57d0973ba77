// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// telemetry_bench.cpp — Google Benchmark micro-benchmarks of what a pool says about itself
// off its hot path: one publish (stats() and the seqlock copy into the shared-memory
// segment; the refresh thread does this every 500 ms), one read of the segment as
// `tierpool top` does it (open, map, copy, unmap), and one pool::fits() answer with N live
// tensors (each record locked in turn, then the tier's layout walked). Run with
// --benchmark_repetitions=5 for medians and spreads.
#include <tierpool/monitor.hpp>
#include <tierpool/pool.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

namespace {

using namespace tierpool::literals;

/// A sim pool (device 64 MiB) holding `n` tensors of 16 KiB in its device tier.
struct populated {
  std::unique_ptr<tierpool::pool> p;
  std::vector<tierpool::tensor> ts;
  explicit populated(std::size_t n)
  {
    tierpool::pool_options o;
    o.backend = tierpool::backend_choice::sim;
    o.read_environment = false;
    o.notice = tierpool::fallback_notice::silent;
    o.publish.interval_ms = 0;  // only the benchmark publishes
    o.tiers = {{.kind = tierpool::tier_kind::device, .capacity_bytes = 64_MiB},
               {.kind = tierpool::tier_kind::host, .capacity_bytes = 1_GiB}};
    p = std::make_unique<tierpool::pool>(o);
    for (std::size_t i = 0; i < n; ++i) { ts.push_back(p->allocate(16_KiB, {.preferred_tier = tierpool::tier_id{0}})); }
  }
};

void bm_publish(benchmark::State& state)
{
  populated f(1000);
  for (auto _ : state) { f.p->publish(); }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(bm_publish);

void bm_read_published(benchmark::State& state)
{
  populated f(1000);
  std::string const seg = f.p->stats_segment();
  for (auto _ : state) {
    tierpool::published_pool got = tierpool::read_published_pool(seg);
    benchmark::DoNotOptimize(got);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(bm_read_published);

void bm_fits(benchmark::State& state)
{
  populated f(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    tierpool::fit_report r = f.p->fits(256_KiB);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(bm_fits)->Arg(100)->Arg(1000)->Arg(4000);

}  // namespace

BENCHMARK_MAIN();

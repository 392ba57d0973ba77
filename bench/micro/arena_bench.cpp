// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// arena_bench.cpp — Google Benchmark micro-benchmarks of the arena's hot path: one
// allocate + free pair at a steady state of live blocks. The workload figures of
// docs/chapters/benchmarks.md come from `tierpool bench arena`; these isolate single operations.
#include <tierpool/arena.hpp>
#include <tierpool/types.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using namespace tierpool::literals;

// Same-size pairs on an empty arena: the best case (one bin, immediate coalescing).
void bm_pair_fixed_size(benchmark::State& state)
{
  tierpool::arena a(16_GiB);
  auto const bytes = static_cast<std::uint64_t>(state.range(0));
  for (auto _ : state) {
    auto slot = a.allocate(bytes);
    benchmark::DoNotOptimize(slot);
    a.deallocate(*slot);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(bm_pair_fixed_size)->Arg(256)->Arg(1 << 20)->Arg(256 << 20);

// Random log-uniform sizes against 1,024 live blocks (about a third of the arena): free a random one, allocate anew.
void bm_pair_random_steady_state(benchmark::State& state)
{
  tierpool::arena a(16_GiB);
  std::mt19937_64 rng(1000);
  std::uniform_real_distribution<double> log_size(8.0, 26.0);  // 256 B .. 64 MiB
  auto draw = [&] { return (static_cast<std::uint64_t>(std::exp2(log_size(rng))) + 255) & ~std::uint64_t{255}; };
  std::vector<tierpool::arena::allocation> live;
  for (int i = 0; i < 1024; ++i) {
    if (auto s = a.allocate(draw())) { live.push_back(*s); }
  }
  std::vector<std::uint64_t> sizes(1 << 16);
  std::vector<std::size_t> victims(1 << 16);
  for (auto& s : sizes) { s = draw(); }
  for (auto& v : victims) { v = static_cast<std::size_t>(rng() % live.size()); }
  std::size_t i = 0;
  for (auto _ : state) {
    auto const k = i & 0xFFFF;
    a.deallocate(live[victims[k]]);
    if (auto s = a.allocate(sizes[k])) {
      live[victims[k]] = *s;
    } else {
      live[victims[k]] = *a.allocate(256);
    }
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(bm_pair_random_steady_state);

}  // namespace

BENCHMARK_MAIN();

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// engines.hpp — internal: the replay loops behind tierpool::replay::run().
#pragma once

#include "replay/detail/compiled_data.hpp"

#include <tierpool/policy.hpp>
#include <tierpool/replay.hpp>

namespace tierpool::replay::detail {

/// Events between two progress callbacks (and between two checks of them).
inline constexpr std::uint64_t kProgressStride = 1ULL << 20U;

/// Cache mode: fills hits, misses, bytes, copies, evictions of `out`. `policy` is fresh.
void run_cache(compiled_data const& d, any_eviction_policy& policy, run_options const& o, replay_result& out);

/// Pool mode: the real pool on a phantom, virtual-clock sim backend.
void run_pool(compiled_data const& d, policy_registry const& registry, run_options const& o, replay_result& out);

/// UVM modes: CUDA managed memory on its own virtual timeline (Note [The UVM model] in
/// uvm_replay.cpp); `hints`: with cudaMemPrefetchAsync one kernel ahead. Fills hits,
/// misses, bytes, copies, evictions (pages), prefetches, stall and makespan of `out`.
void run_uvm(compiled_data const& d, run_options const& o, replay_result& out, bool hints);

}  // namespace tierpool::replay::detail

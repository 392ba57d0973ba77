// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// arena_pool_replay.cpp — an arena trace replayed through a pool (`tierpool bench arena
// --through-pool`): what fragmentation costs a pool (evictions although the free bytes
// covered the request), with no compaction, the defaults (the last resort) and compaction on. Entry point: replay_through_pool.
#include "workloads/arena_workloads.hpp"

#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

namespace tierpool::workloads {

pool_arena_outcome replay_through_pool(alloc_trace const& t, pool_compaction compaction, bool device_only,
                                       std::uint64_t frag_interval)
{
  pool_options o;
  o.read_environment = false;
  o.notice = fallback_notice::silent;
  o.publish.enabled = false;
  o.backend = backend_choice::sim;
  o.sim.memory = sim_memory_mode::phantom;
  o.sim.device_bytes = static_cast<std::size_t>(t.capacity) + (std::size_t{1} << 30U);
  o.compaction = compaction == pool_compaction::ladder;
  o.compact_before_failing = compaction != pool_compaction::off;
  std::size_t const cap = static_cast<std::size_t>(t.capacity);
  // One chunk: the device tier's arena is one region of the trace's capacity, as the arena
  // bench replays it (tiers align to 256 bytes, as the generated traces do).
  o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = cap, .chunk_bytes = cap});
  if (!device_only) { o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = 4 * cap, .chunk_bytes = cap}); }
  pool p(std::move(o));

  pool_arena_outcome out;
  std::vector<std::optional<tensor>> slots(t.slot_count);
  tensor_options const on_device{.preferred_tier = tier_id{0}};
  double frag_sum = 0.0;
  auto const t0 = std::chrono::steady_clock::now();
  for (alloc_op const& op : t.ops) {
    ++out.operations;
    if (op.is_alloc) {
      ++out.allocations;
      try {
        slots[op.slot] = p.allocate(static_cast<std::size_t>(op.bytes), on_device);
      } catch (out_of_memory const&) {
        ++out.failures;
      }
    } else if (slots[op.slot]) {
      p.free(*slots[op.slot]);
      slots[op.slot].reset();
    }
    if (frag_interval != 0 && out.operations % frag_interval == 0) {
      double const f = p.stats().tiers[0].fragmentation;
      frag_sum += f;
      out.frag_max = std::max(out.frag_max, f);
      ++out.frag_samples;
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.frag_mean = out.frag_samples != 0 ? frag_sum / static_cast<double>(out.frag_samples) : 0.0;
  tier_stats const st = p.stats().tiers[0];
  out.fragmented_evictions = st.fragmented_evictions;
  out.evictions = st.evictions;
  out.compactions = st.compactions;
  out.compacted_tensors = st.compacted_tensors;
  out.compacted_bytes = st.compacted_bytes;
  compact_result const c = p.compact(tier_id{0});
  out.end_frag_before = c.tiers[0].fragmentation_before;
  out.end_frag_after = c.tiers[0].fragmentation_after;
  out.end_moved = c.moved_tensors;
  out.valid_at_end = p.validate();
  return out;
}

}  // namespace tierpool::workloads

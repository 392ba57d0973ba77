// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_report.cpp — owns what the pool says about itself: stats() (its figures, gathered
// from the components) and validate() (every invariant, for tests). Their text and JSON
// forms are telemetry's (telemetry/pool_report.hpp).
//
// Invariants checked by validate(), with the quiesce gate closed (no operation running):
//   every live record has >= 1 valid slot;  record.pins == SUM(slot.pins)
//   SUM(slot sizes of non-absent slots in tier k) == tier k's usage().used_bytes
//   COUNT(non-absent slots in tier k) == tier_state::resident
//   SUM(bytes of records with slot.pins > 0 in tier k) == tier_state::pinned_bytes()
//   each tier's validate() and its policy's validate()
#include <tierpool/detail/parse.hpp>
#include <tierpool/log.hpp>
#include <tierpool/monitor.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/detail/pool_impl.hpp"
#include "telemetry/pool_report.hpp"

namespace tierpool::detail {

pool_stats pool_impl::stats() const
{
  pool_stats st;
  for (auto const& tsp : engine_.tiers()) {
    tier_state const& ts = *tsp;
    tier_stats t;
    t.name = ts.name;
    t.kind = ts.kind;
    t.numa_node = ts.mem->config().numa_node;
    t.policy = ts.policy_spec;
    t.reuses_in_order = ts.reused_in_order.load(std::memory_order_relaxed);
    t.merges_in_order = ts.merged_in_order.load(std::memory_order_relaxed);
    t.fragmented_evictions = ts.fragmented_evictions.load(std::memory_order_relaxed);
    t.window_evictions = ts.window_evictions.load(std::memory_order_relaxed);
    t.compactions = ts.compactions.load(std::memory_order_relaxed);
    t.waits_to_compact = ts.waits_to_compact.load(std::memory_order_relaxed);
    t.compacted_tensors = ts.compacted_tensors.load(std::memory_order_relaxed);
    t.compacted_bytes = ts.compacted_bytes.load(std::memory_order_relaxed);
    t.compaction_copy_failures = ts.compaction_copy_failures.load(std::memory_order_relaxed);
    if (is_storage(ts.kind)) {
      t.bytes_written = ts.storage_written.load(std::memory_order_relaxed);
      t.bytes_read = ts.storage_read.load(std::memory_order_relaxed);
      if (ts.file) {
        storage_file_figures const f = ts.file->figures();
        t.storage_file = ts.file->description();
        t.storage_engine = std::string(to_string(ts.file->engine()));
        t.storage_direct = ts.file->direct();
        t.write_failures = f.write_failures;
        t.read_failures = f.read_failures;
        t.write_seconds = f.write_seconds;
        t.read_seconds = f.read_seconds;
        t.packed_bytes = f.packed_bytes;
        t.packed_logical_bytes = f.logical_bytes;
        t.lossy_writes = f.lossy_writes;
        t.max_relative_rms_error = f.max_relative_rms_error;
      } else {
        t.storage_file = "phantom";
        t.storage_engine = "phantom";
      }
    }
    tier_usage u{};
    {
      std::lock_guard tl(ts.mem->mutex());
      u = ts.mem->usage();
      for (auto const& [tenant, b] : ts.tenant_bytes) {
        bool const shared = std::any_of(ts.tenant_shares.begin(), ts.tenant_shares.end(),
                                        [t = tenant](auto const& e) { return e.first == t; });
        if (b <= 0 && !shared) { continue; }
        auto const rk = ts.rank_of(tenant);
        t.tenants.push_back({tenant, static_cast<std::size_t>(std::max<std::int64_t>(b, 0)), ts.share_of(tenant),
                             rk.priority, rk.hard});
      }
    }
    std::sort(t.tenants.begin(), t.tenants.end(), [](auto const& a, auto const& b) { return a.tenant < b.tenant; });
    t.share_skips = ts.share_skips.load(std::memory_order_relaxed);
    t.share_refusals = ts.share_refusals.load(std::memory_order_relaxed);
    t.capacity_bytes = u.capacity_bytes;
    t.reserved_bytes = u.reserved_bytes;
    t.used_bytes.current = static_cast<std::int64_t>(u.used_bytes);
    t.used_bytes.peak = static_cast<std::int64_t>(u.peak_used_bytes);
    t.used_bytes.allocated = ts.bytes_allocated.load(std::memory_order_relaxed);
    t.used_bytes.freed = ts.bytes_freed.load(std::memory_order_relaxed);
    t.pinned_bytes = ts.pinned_bytes();
    t.in_flight_bytes = u.deferred_bytes;
    t.largest_free_block = u.largest_free_block;
    t.fragmentation = u.external_fragmentation;
    t.resident_tensors = ts.resident.load(std::memory_order_relaxed);
    t.evictions = ts.evictions.load(std::memory_order_relaxed);
    t.evictions_clean = ts.evictions_clean.load(std::memory_order_relaxed);
    t.allocation_failures = ts.alloc_failures.load(std::memory_order_relaxed);
    st.tiers.push_back(std::move(t));
  }
  st.tenants = tenants_.snapshot();
  st.tensors = counters_.live_tensors.load(std::memory_order_relaxed);
  st.tensor_bytes = counters_.live_tensor_bytes.load(std::memory_order_relaxed);
  for (counter_shard const& c : counters_.shards) {  // per-shard figures (Note [The hit path takes no shared lock])
    st.hits += c.hits.load(std::memory_order_relaxed);
    st.misses += c.misses.load(std::memory_order_relaxed);
    st.prefetch_hits += c.prefetch_hits.load(std::memory_order_relaxed);
    st.prefetch_late += c.prefetch_late.load(std::memory_order_relaxed);
    st.planner_busy_skips += c.planner_busy.load(std::memory_order_relaxed);
    st.bytes_h2d += c.bytes_h2d.load(std::memory_order_relaxed);
    st.bytes_d2h += c.bytes_d2h.load(std::memory_order_relaxed);
    st.copies_h2d += c.copies_h2d.load(std::memory_order_relaxed);
    st.copies_d2h += c.copies_d2h.load(std::memory_order_relaxed);
    st.bytes_up += c.bytes_up.load(std::memory_order_relaxed);
    st.bytes_down += c.bytes_down.load(std::memory_order_relaxed);
    st.copies_up += c.copies_up.load(std::memory_order_relaxed);
    st.copies_down += c.copies_down.load(std::memory_order_relaxed);
  }
  // Every counted acquire is one hit or miss, and a lease or a failure (the hit path counts
  // nothing more). Read without a lock, the figures may be a moment apart: never below 0.
  st.acquire_failures = counters_.acquire_failures.load(std::memory_order_relaxed);
  st.acquires = st.hits + st.misses - std::min(st.acquire_failures, st.hits + st.misses);
  st.busy_retries = counters_.busy_retries.load(std::memory_order_relaxed);
  st.prefetch_queued = counters_.prefetch_queued.load(std::memory_order_relaxed);
  st.prefetch_dropped = counters_.prefetch_dropped.load(std::memory_order_relaxed);
  st.managed_prefetches = counters_.managed_prefetches.load(std::memory_order_relaxed);
  st.low_memory_callbacks = lowmem_.calls();
  st.prefetch = prefetch_spec_;
  st.pressure_shrinks = counters_.pressure_shrinks.load(std::memory_order_relaxed);
  st.pressure_released_bytes = counters_.pressure_released_bytes.load(std::memory_order_relaxed);
  st.write_throughs = counters_.write_throughs.load(std::memory_order_relaxed);
  if (lost()) {
    std::lock_guard lk(lost_mtx_);
    st.device_lost = true;
    st.lost_tensors = lost_ids_.size();
  }
  st.write_through_bytes = counters_.write_through_bytes.load(std::memory_order_relaxed);
  st.write_through_misses = counters_.write_through_misses.load(std::memory_order_relaxed);
  st.evicted_dropped = counters_.evicted_dropped.load(std::memory_order_relaxed);
  st.evicted_moved = counters_.evicted_moved.load(std::memory_order_relaxed);
  st.evicted_compressed = counters_.evicted_compressed.load(std::memory_order_relaxed);
  st.evicted_recompute = counters_.evicted_recompute.load(std::memory_order_relaxed);
  st.evicted_recompute_bytes = counters_.evicted_recompute_bytes.load(std::memory_order_relaxed);
  st.rebuilds = counters_.rebuilds.load(std::memory_order_relaxed);
  st.rebuild_failures = counters_.rebuild_failures.load(std::memory_order_relaxed);
  st.rebuild_seconds = static_cast<double>(counters_.rebuild_ns.load(std::memory_order_relaxed)) * 1e-9;
  st.recipes = recipes_live_.load(std::memory_order_relaxed);
  st.recipes_ended = counters_.recipes_ended.load(std::memory_order_relaxed);
  st.discards = counters_.discards.load(std::memory_order_relaxed);
  st.evicted_discarded = counters_.evicted_discarded.load(std::memory_order_relaxed);
  st.evicted_discarded_bytes = counters_.evicted_discarded_bytes.load(std::memory_order_relaxed);
  st.predicted_prefetches = counters_.predicted_prefetches.load(std::memory_order_relaxed);
  st.planned_prefetches = counters_.planned_prefetches.load(std::memory_order_relaxed);
  st.planned_prefetch_bytes = counters_.planned_prefetch_bytes.load(std::memory_order_relaxed);
  st.plan_harm_skips = counters_.plan_harm_skips.load(std::memory_order_relaxed);
  st.plan_no_room = counters_.plan_no_room.load(std::memory_order_relaxed);
  st.early_write_backs = counters_.early_write_backs.load(std::memory_order_relaxed);
  st.prefetch_on_time_device = counters_.prefetch_on_time_device.load(std::memory_order_relaxed);
  st.prefetch_late_device = counters_.prefetch_late_device.load(std::memory_order_relaxed);
  st.prefetch_lateness_seconds = static_cast<double>(counters_.prefetch_lateness_ns.load(std::memory_order_relaxed)) * 1e-9;
  st.prefetch_lead_seconds = static_cast<double>(counters_.prefetch_lead_ns.load(std::memory_order_relaxed)) * 1e-9;
  st.prefetch_wasted_bytes = counters_.prefetch_wasted_bytes.load(std::memory_order_relaxed);
  st.early_write_back_bytes = counters_.early_write_back_bytes.load(std::memory_order_relaxed);
  st.early_write_backs_wasted = counters_.early_write_backs_wasted.load(std::memory_order_relaxed);
  st.early_write_back_wasted_bytes = counters_.early_write_back_wasted_bytes.load(std::memory_order_relaxed);
  if (prediction_.planner != nullptr) {
    prediction::outside_hold const lock(prediction_);
    st.planner_state = std::string(to_string(prediction_.planner->state()));
    if (prediction_.asleep.load(std::memory_order_relaxed) != 0) { st.planner_state = "asleep"; }  // Note [A planner that finds no schedule sleeps]
    st.planner_period = prediction_.planner->period();
    st.planner_relearns = prediction_.planner->relearns();
    st.planner_mispredicted = prediction_.planner->mispredicted();
    if (timer_ != nullptr && measured_times_.load(std::memory_order_relaxed) == 1) {
      plan_predictor& planner = *prediction_.planner;  // what has completed by now, first
      timer_->resolve([&planner](std::uint64_t position, tick ns) { planner.set_compute(position, ns); });
    }
    st.planner_timed_accesses = timer_ != nullptr ? timer_->measured() : 0;
    st.planner_period_compute_seconds = static_cast<double>(prediction_.planner->period_compute()) * 1e-9;
    auto const& o = prediction_.planner->options();
    st.planner_prefetching = o.prefetch && (!o.probe || prediction_.probe.on);
    st.planner_periods_prefetching = prediction_.periods_on;
    st.planner_periods_without = prediction_.periods_off;
    st.planner_period_seconds_prefetching = static_cast<double>(prediction_.probe.took_on) * 1e-9;
    st.planner_period_seconds_without = static_cast<double>(prediction_.probe.took_off) * 1e-9;
    if (prediction_.planner->options().oracle) { st.planner_state = "oracle"; }
  }
  st.managed_prefetch_bytes = counters_.managed_prefetch_bytes.load(std::memory_order_relaxed);
  st.prefetches = counters_.prefetches.load(std::memory_order_relaxed);
  st.prefetch_wasted = counters_.prefetch_wasted.load(std::memory_order_relaxed);
  st.stall_seconds = static_cast<double>(streams_->stall_ns()) * 1e-9;
  return st;
}

std::string pool_impl::summary() const { return format_summary(stats(), backend_->caps().name); }

std::string pool_impl::summary_json() const { return format_summary_json(stats(), backend_->caps().name); }

std::vector<record_ref> pool_impl::records_by_id() const
{
  std::vector<record_ref> recs;
  {
    std::lock_guard lock(table_mtx_);
    recs.reserve(table_.size());
    table_.for_each([&recs](record_ref const& rec) { recs.push_back(rec); });
  }
  // In id order (Note [Records indexed by id]): validate() and snapshot() stay linear in
  // the tensors (issue 19).
  return recs;
}

bool pool_impl::validate() const
{
  // One consistent moment (Note [The quiesce gate], op_gate.hpp): the gate is closed, so no
  // operation is changing a record, a tier or a policy, and none is waiting on a lock this
  // check holds. No record lock is taken: eviction elsewhere never finds a victim busy
  // because of validate(); other threads wait at the gate for as long as the check takes.
  if (gate_.inside()) {
    throw logic_error("pool::validate: called from inside a pool operation on this thread (a low-memory "
                      "callback of a nested call); call it from outside the pool's calls");
  }
  std::optional<op_gate::closed> quiet(std::in_place, gate_);
  std::vector<record_ref> const recs = records_by_id();

  bool ok = true;
  std::vector<std::string> violations;  // logged once the gate is open again: the sink is the program's code
  auto fail = [&](std::string const& why) {
    violations.push_back("tierpool: pool::validate: " + why);
    ok = false;
  };
  std::size_t const n = engine_.tiers().size();
  std::vector<std::size_t> bytes(n, 0);
  std::vector<std::size_t> pinned(n, 0);
  std::vector<std::uint64_t> resident(n, 0);
  std::vector<std::uint64_t> registered(n, 0);  // copies in their tier's register of pinned copies
  std::vector<std::map<std::uint32_t, std::int64_t>> by_tenant(n);  // Note [Tenants' shares of a tier]
  for (auto const& r : recs) {
    std::string const name = "tensor " + std::to_string(static_cast<std::uint64_t>(r->id));
    if (r->freed) {
      fail(name + ": freed but still in the table");
      continue;
    }
    std::uint32_t pins = 0;
    bool any_valid = false;
    for (std::size_t k = 0; k < n; ++k) {
      copy_slot const& s = r->slots[k];
      pins += s.pins;
      if (s.state == copy_state::absent) {
        if (s.pins != 0) { fail(name + ": pinned in tier " + std::to_string(k) + " without a copy there"); }
        continue;
      }
      any_valid = any_valid || s.state == copy_state::valid;
      if (s.blk.ptr == nullptr || s.blk.slot.size < r->bytes) { fail(name + ": bad block in tier " + std::to_string(k)); }
      bytes[k] += static_cast<std::size_t>(s.blk.slot.size);
      ++resident[k];
      by_tenant[k][r->tenant] += static_cast<std::int64_t>(r->bytes);
      if (s.pins != 0) {
        pinned[k] += r->bytes;
        if (s.state != copy_state::valid) { fail(name + ": leased copy in tier " + std::to_string(k) + " is stale"); }
      }
      // Note [A register of pinned copies]: once the tier keeps it, a pinned copy is in it
      // (unless an entry was lost), and only pinned copies are.
      tier_state const& ts = *engine_.tiers()[k];
      if (s.pin_registered) {
        ++registered[k];
        if (s.pins == 0) { fail(name + ": unpinned copy in the register of tier " + std::to_string(k)); }
      } else if (s.pins != 0 && ts.track_pins.load() && !ts.pins_lost.load()) {
        fail(name + ": pinned copy missing from the register of tier " + std::to_string(k));
      }
    }
    if (!any_valid && !r->needs_rebuild && !r->discarded) { fail(name + ": no valid copy"); }  // discarded: maybe none
    if (r->needs_rebuild && !r->has_recipe) { fail(name + ": dropped for recompute without a recipe"); }
    // Note [Copy slots only where a copy is]: a record is spilled only while two tiers hold
    // a copy; unspilled, its inline slot holds it.
    if (r->slots.spilled()) {
      std::size_t held = 0;
      for (std::size_t k = 0; k < n; ++k) { held += r->slots[k].state != copy_state::absent ? 1U : 0U; }
      if (held < 2) { fail(name + ": copy slots spilled to the heap for " + std::to_string(held) + " copy"); }
    } else if (r->slots[r->slots.home()].state == copy_state::absent && !r->needs_rebuild && !r->discarded) {
      fail(name + ": inline copy slot empty");
    }
    if (pins != r->pins) { fail(name + ": pin count " + std::to_string(r->pins) + " != sum over tiers"); }
  }
  if (absent_copy_slot.state != copy_state::absent || absent_copy_slot.pins != 0 || absent_copy_slot.ready ||
      absent_copy_slot.blk.ptr != nullptr || !absent_copy_slot.users.empty() || absent_copy_slot.pin_registered) {
    fail("the shared absent copy slot was written (a slot used before materialize)");
  }
  for (std::size_t k = 0; k < n; ++k) {
    tier_state const& ts = *engine_.tiers()[k];
    std::lock_guard tl(ts.mem->mutex());
    if (!ts.mem->validate()) { fail("tier " + ts.name + ": tier::validate failed"); }
    for (auto const& r : ts.tenant_ranks) {  // no placement in flight with the gate closed
      if (r.placing != 0) {
        fail("tier " + ts.name + ": tenant " + std::to_string(r.tenant) + " has " + std::to_string(r.placing) +
             " bytes counted as placing");
      }
    }
    if (!ts.policy->validate()) { fail("tier " + ts.name + ": policy " + std::string(ts.policy->name()) + ": validate failed"); }
    tier_usage const u = ts.mem->usage();
    if (u.used_bytes != bytes[k]) {
      fail("tier " + ts.name + ": used " + std::to_string(u.used_bytes) + " != copies " + std::to_string(bytes[k]));
    }
    if (ts.resident.load() != resident[k]) { fail("tier " + ts.name + ": resident count mismatch"); }
    for (auto const& [tenant, b] : ts.tenant_bytes) {
      auto const it = by_tenant[k].find(tenant);
      std::int64_t const want = it == by_tenant[k].end() ? 0 : it->second;
      if (b != want) {
        fail("tier " + ts.name + ": tenant " + std::to_string(tenant) + " counted " + std::to_string(b) + " bytes, its copies hold " +
             std::to_string(want));
      }
      by_tenant[k].erase(tenant);
    }
    if (!by_tenant[k].empty()) {
      fail("tier " + ts.name + ": tenant " + std::to_string(by_tenant[k].begin()->first) + " has copies but no entry");
    }
    if (ts.pinned_bytes() != pinned[k]) { fail("tier " + ts.name + ": pinned bytes mismatch"); }
    // No call is inside: every block place() handed out is settled (Note [Blocks being
    // placed are waited for], placement.cpp).
    if (std::int64_t const unsettled = ts.unsettled_bytes.load(std::memory_order_relaxed); unsettled != 0) {
      fail("tier " + ts.name + ": " + std::to_string(unsettled) + " bytes of blocks handed out and never settled");
    }
    std::uint64_t entries = 0;
    for (pin_register_shard& reg : ts.pin_reg) {
      std::lock_guard g(reg.mtx);
      for (std::size_t i = 0; i < reg.entries.size(); ++i) {
        pinned_entry const& e = reg.entries[i];
        if (e.owner->pin_index != i || !e.owner->pin_registered || e.owner->blk.slot.offset != e.offset) {
          fail("tier " + ts.name + ": register of pinned copies: entry " + std::to_string(i) + " does not match its copy");
        }
      }
      entries += reg.entries.size();
    }
    if (entries != registered[k]) { fail("tier " + ts.name + ": register of pinned copies: entry count mismatch"); }
  }
  quiet.reset();
  for (std::string const& v : violations) { log_message(log_level::error, v); }
  return ok;
}

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_report.cpp — owns the forms of a pool's figures (pool_report.hpp): the summary
// table (like torch.cuda.memory_summary) and the JSON of pool::summary_json() and
// tierpool::to_json(pool_stats) (Boost.JSON).
#include "telemetry/pool_report.hpp"

#include <boost/json.hpp>

#include <tierpool/detail/parse.hpp>
#include <tierpool/monitor.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

namespace tierpool::detail {

std::string format_summary(pool_stats const& st, std::string_view backend)
{
  std::string out;
  char line[256];
  auto add = [&](int n) {
    if (n > 0) { out.append(line, std::min(static_cast<std::size_t>(n), sizeof(line) - 1)); }
  };
  add(std::snprintf(line, sizeof line, "tierpool pool summary (backend: %s)\n", std::string(backend).c_str()));
  add(std::snprintf(line, sizeof line, "%-12s %-12s %11s %11s %11s %11s %11s %9s %9s %6s\n", "tier", "kind", "capacity",
                    "reserved", "used", "peak", "pinned", "resident", "evicted", "frag"));
  for (tier_stats const& t : st.tiers) {
    add(std::snprintf(line, sizeof line, "%-12s %-12s %11s %11s %11s %11s %11s %9llu %9llu %5.1f%%\n", t.name.c_str(),
                      std::string(to_string(t.kind)).c_str(), format_byte_size(t.capacity_bytes).c_str(),
                      format_byte_size(t.reserved_bytes).c_str(),
                      format_byte_size(static_cast<std::uint64_t>(t.used_bytes.current)).c_str(),
                      format_byte_size(static_cast<std::uint64_t>(t.used_bytes.peak)).c_str(),
                      format_byte_size(t.pinned_bytes).c_str(), static_cast<unsigned long long>(t.resident_tensors),
                      static_cast<unsigned long long>(t.evictions), t.fragmentation * 100.0));
  }
  for (tier_stats const& t : st.tiers) {  // a storage tier: its file and I/O
    if (t.kind != tier_kind::storage) { continue; }
    add(std::snprintf(line, sizeof line, "storage %s: %s, engine %s%s\n", t.name.c_str(), t.storage_file.c_str(),
                      t.storage_engine.c_str(), t.storage_direct ? ", O_DIRECT" : ""));
    add(std::snprintf(line, sizeof line, "storage %s: written %s (%.6f s, %llu failed), read %s (%.6f s, %llu failed)\n",
                      t.name.c_str(), format_byte_size(t.bytes_written).c_str(), t.write_seconds,
                      static_cast<unsigned long long>(t.write_failures), format_byte_size(t.bytes_read).c_str(),
                      t.read_seconds, static_cast<unsigned long long>(t.read_failures)));
    if (t.storage_engine == "compressed") {
      add(std::snprintf(line, sizeof line, "storage %s: holds %s in %s (ratio %.3f), %llu lossy copies (max rel. RMS error %.4f)\n",
                        t.name.c_str(), format_byte_size(t.packed_logical_bytes).c_str(),
                        format_byte_size(t.packed_bytes).c_str(),
                        t.packed_bytes != 0 ? static_cast<double>(t.packed_logical_bytes) / static_cast<double>(t.packed_bytes) : 0.0,
                        static_cast<unsigned long long>(t.lossy_writes), t.max_relative_rms_error));
    }
  }
  for (tier_stats const& t : st.tiers) {  // policies can be long: a line each
    add(std::snprintf(line, sizeof line, "policy of %s: %s\n", t.name.c_str(), t.policy.empty() ? "?" : t.policy.c_str()));
  }
  add(std::snprintf(line, sizeof line, "prefetch: %s\n", st.prefetch.c_str()));
  if (st.device_lost) {
    add(std::snprintf(line, sizeof line, "DEVICE LOST: %llu tensors lost with it; host copies of the others remain\n",
                      static_cast<unsigned long long>(st.lost_tensors)));
  }
  if (st.write_throughs + st.write_through_misses != 0) {
    add(std::snprintf(line, sizeof line, "write-through: %llu written back at release (%s), %llu found no room\n",
                      static_cast<unsigned long long>(st.write_throughs), format_byte_size(st.write_through_bytes).c_str(),
                      static_cast<unsigned long long>(st.write_through_misses)));
  }
  if (st.pressure_shrinks != 0) {
    add(std::snprintf(line, sizeof line, "device pressure: %llu shrinks, %s given back\n",
                      static_cast<unsigned long long>(st.pressure_shrinks),
                      format_byte_size(st.pressure_released_bytes).c_str()));
  }
  add(std::snprintf(line, sizeof line, "tensors %llu (%s); acquires %llu (failed %llu): hits %llu, misses %llu; busy retries %llu\n",
                    static_cast<unsigned long long>(st.tensors), format_byte_size(st.tensor_bytes).c_str(),
                    static_cast<unsigned long long>(st.acquires), static_cast<unsigned long long>(st.acquire_failures),
                    static_cast<unsigned long long>(st.hits), static_cast<unsigned long long>(st.misses),
                    static_cast<unsigned long long>(st.busy_retries)));
  add(std::snprintf(line, sizeof line, "copies h2d %llu (%s), d2h %llu (%s); all tiers: up %llu (%s), down %llu (%s)\n",
                    static_cast<unsigned long long>(st.copies_h2d), format_byte_size(st.bytes_h2d).c_str(),
                    static_cast<unsigned long long>(st.copies_d2h), format_byte_size(st.bytes_d2h).c_str(),
                    static_cast<unsigned long long>(st.copies_up), format_byte_size(st.bytes_up).c_str(),
                    static_cast<unsigned long long>(st.copies_down), format_byte_size(st.bytes_down).c_str()));
  add(std::snprintf(line, sizeof line,
                    "prefetches %llu: hits %llu, late %llu, wasted %llu; queued %llu, dropped %llu; host stalls %.6f s\n",
                    static_cast<unsigned long long>(st.prefetches), static_cast<unsigned long long>(st.prefetch_hits),
                    static_cast<unsigned long long>(st.prefetch_late),
                    static_cast<unsigned long long>(st.prefetch_wasted),
                    static_cast<unsigned long long>(st.prefetch_queued),
                    static_cast<unsigned long long>(st.prefetch_dropped), st.stall_seconds));
  if (st.prefetch_on_time_device + st.prefetch_late_device != 0) {
    add(std::snprintf(line, sizeof line,
                      "prefetches in device time: on time %llu (ready %.6f s ahead in all), late %llu (waited %.6f s)\n",
                      static_cast<unsigned long long>(st.prefetch_on_time_device), st.prefetch_lead_seconds,
                      static_cast<unsigned long long>(st.prefetch_late_device), st.prefetch_lateness_seconds));
  }
  std::uint64_t at_eviction = 0;  // write-backs an eviction made (on the critical path of the request that evicted)
  for (tier_stats const& t : st.tiers) { at_eviction += t.evictions - std::min(t.evictions, t.evictions_clean); }
  if (at_eviction + st.early_write_backs != 0) {
    add(std::snprintf(line, sizeof line, "write-backs: at eviction %llu, early %llu (%s); prefetched then unused %s\n",
                      static_cast<unsigned long long>(at_eviction), static_cast<unsigned long long>(st.early_write_backs),
                      format_byte_size(st.early_write_back_bytes).c_str(), format_byte_size(st.prefetch_wasted_bytes).c_str()));
  }
  if (st.evicted_compressed + st.evicted_recompute + st.recipes + st.rebuilds != 0) {  // eviction actions beyond moving
    add(std::snprintf(line, sizeof line,
                      "eviction actions: dropped %llu, moved %llu, compressed %llu, for recompute %llu (%s); rebuilt %llu "
                      "(failed %llu, %.6f s); recipes %llu\n",
                      static_cast<unsigned long long>(st.evicted_dropped), static_cast<unsigned long long>(st.evicted_moved),
                      static_cast<unsigned long long>(st.evicted_compressed),
                      static_cast<unsigned long long>(st.evicted_recompute),
                      format_byte_size(st.evicted_recompute_bytes).c_str(), static_cast<unsigned long long>(st.rebuilds),
                      static_cast<unsigned long long>(st.rebuild_failures), st.rebuild_seconds,
                      static_cast<unsigned long long>(st.recipes)));
  }
  if (!st.planner_state.empty()) {
    add(std::snprintf(line, sizeof line,
                      "planner %s (period %llu, relearns %llu, mispredicted %llu, busy skips %llu): prefetched %llu (%s), "
                      "harm skips %llu, no room %llu; early write-backs %llu (%s), wasted %llu (%s)\n",
                      st.planner_state.c_str(), static_cast<unsigned long long>(st.planner_period),
                      static_cast<unsigned long long>(st.planner_relearns),
                      static_cast<unsigned long long>(st.planner_mispredicted),
                      static_cast<unsigned long long>(st.planner_busy_skips),
                      static_cast<unsigned long long>(st.planned_prefetches),
                      format_byte_size(st.planned_prefetch_bytes).c_str(),
                      static_cast<unsigned long long>(st.plan_harm_skips),
                      static_cast<unsigned long long>(st.plan_no_room),
                      static_cast<unsigned long long>(st.early_write_backs),
                      format_byte_size(st.early_write_back_bytes).c_str(),
                      static_cast<unsigned long long>(st.early_write_backs_wasted),
                      format_byte_size(st.early_write_back_wasted_bytes).c_str()));
    if (st.planner_periods_prefetching + st.planner_periods_without != 0) {
      add(std::snprintf(line, sizeof line,
                        "planner prefetching %s: periods timed with prefetches %llu (mean %.3f ms), without %llu "
                        "(mean %.3f ms)\n",
                        st.planner_prefetching ? "on" : "off",
                        static_cast<unsigned long long>(st.planner_periods_prefetching),
                        st.planner_period_seconds_prefetching * 1e3,
                        static_cast<unsigned long long>(st.planner_periods_without),
                        st.planner_period_seconds_without * 1e3));
    }
    if (st.planner_period_compute_seconds > 0.0 || st.planner_timed_accesses != 0) {
      add(std::snprintf(line, sizeof line, "planner compute: %.3f ms a period (%s)\n", st.planner_period_compute_seconds * 1e3,
                        st.planner_timed_accesses != 0
                          ? ("measured with events at " + std::to_string(st.planner_timed_accesses) + " accesses").c_str()
                          : "device times known ahead"));
    }
  }
  for (tenant_stats const& t : st.tenants) {
    if (t.quota_bytes == 0 && st.tenants.size() == 1) { continue; }  // one tenant, no quota: nothing to say
    add(std::snprintf(line, sizeof line, "tenant %u: %llu tensors, live %s (peak %s), quota %s, refused %llu\n", t.tenant,
                      static_cast<unsigned long long>(t.tensors), format_byte_size(t.live_bytes).c_str(),
                      format_byte_size(t.peak_bytes).c_str(),
                      t.quota_bytes == 0 ? "none" : format_byte_size(t.quota_bytes).c_str(),
                      static_cast<unsigned long long>(t.quota_refusals)));
  }
  return out;
}

namespace {

boost::json::object stats_json(pool_stats const& st)
{
  boost::json::array tiers;
  for (tier_stats const& t : st.tiers) {
    boost::json::object o;
    o["name"] = t.name;
    o["kind"] = std::string(to_string(t.kind));
    o["numa_node"] = t.numa_node;
    o["policy"] = t.policy;
    o["fragmented_evictions"] = t.fragmented_evictions;
    o["window_evictions"] = t.window_evictions;
    o["compactions"] = t.compactions;
    o["waits_to_compact"] = t.waits_to_compact;
    o["compacted_tensors"] = t.compacted_tensors;
    o["compacted_bytes"] = t.compacted_bytes;
    o["compaction_copy_failures"] = t.compaction_copy_failures;
    o["reuses_in_order"] = t.reuses_in_order;
    o["merges_in_order"] = t.merges_in_order;
    o["share_skips"] = t.share_skips;
    o["share_refusals"] = t.share_refusals;
    if (!t.tenants.empty()) {
      boost::json::array tt;
      for (tier_tenant_stats const& x : t.tenants) {
        tt.push_back({{"tenant", x.tenant},
                      {"resident_bytes", x.resident_bytes},
                      {"share_bytes", x.share_bytes},
                      {"priority", x.priority},
                      {"hard_share", x.hard_share}});
      }
      o["tenants"] = std::move(tt);
    }
    o["capacity_bytes"] = t.capacity_bytes;
    o["reserved_bytes"] = t.reserved_bytes;
    o["used_bytes"] = {{"current", t.used_bytes.current},
                       {"peak", t.used_bytes.peak},
                       {"allocated", t.used_bytes.allocated},
                       {"freed", t.used_bytes.freed}};
    o["pinned_bytes"] = t.pinned_bytes;
    o["in_flight_bytes"] = t.in_flight_bytes;
    o["largest_free_block"] = t.largest_free_block;
    o["fragmentation"] = t.fragmentation;
    o["resident_tensors"] = t.resident_tensors;
    o["evictions"] = t.evictions;
    o["evictions_clean"] = t.evictions_clean;
    o["allocation_failures"] = t.allocation_failures;
    if (t.kind == tier_kind::storage) {
      o["storage"] = {{"file", t.storage_file},         {"engine", t.storage_engine},
                      {"direct", t.storage_direct},     {"bytes_written", t.bytes_written},
                      {"bytes_read", t.bytes_read},     {"write_failures", t.write_failures},
                      {"read_failures", t.read_failures}, {"write_seconds", t.write_seconds},
                      {"read_seconds", t.read_seconds}};
      if (t.storage_engine == "compressed") {
        auto& so = o["storage"].as_object();
        so["packed_bytes"] = t.packed_bytes;
        so["logical_bytes"] = t.packed_logical_bytes;
        so["lossy_writes"] = t.lossy_writes;
        so["max_relative_rms_error"] = t.max_relative_rms_error;
      }
    }
    tiers.push_back(std::move(o));
  }
  boost::json::object root;
  root["tiers"] = std::move(tiers);
  root["tensors"] = st.tensors;
  root["tensor_bytes"] = st.tensor_bytes;
  root["acquires"] = st.acquires;
  root["acquire_failures"] = st.acquire_failures;
  root["busy_retries"] = st.busy_retries;
  root["hits"] = st.hits;
  root["misses"] = st.misses;
  root["bytes_h2d"] = st.bytes_h2d;
  root["bytes_d2h"] = st.bytes_d2h;
  root["copies_h2d"] = st.copies_h2d;
  root["copies_d2h"] = st.copies_d2h;
  root["bytes_up"] = st.bytes_up;
  root["bytes_down"] = st.bytes_down;
  root["copies_up"] = st.copies_up;
  root["copies_down"] = st.copies_down;
  root["prefetches"] = st.prefetches;
  root["prefetch_hits"] = st.prefetch_hits;
  root["prefetch_late"] = st.prefetch_late;
  root["prefetch_wasted"] = st.prefetch_wasted;
  root["prefetch_queued"] = st.prefetch_queued;
  root["prefetch_dropped"] = st.prefetch_dropped;
  root["managed_prefetches"] = st.managed_prefetches;
  root["managed_prefetch_bytes"] = st.managed_prefetch_bytes;
  root["stall_seconds"] = st.stall_seconds;
  root["low_memory_callbacks"] = st.low_memory_callbacks;
  root["prefetch"] = st.prefetch;
  root["pressure_shrinks"] = st.pressure_shrinks;
  root["pressure_released_bytes"] = st.pressure_released_bytes;
  root["write_throughs"] = st.write_throughs;
  root["device_lost"] = st.device_lost;
  root["lost_tensors"] = st.lost_tensors;
  root["write_through_bytes"] = st.write_through_bytes;
  root["write_through_misses"] = st.write_through_misses;
  root["evicted_dropped"] = st.evicted_dropped;
  root["evicted_moved"] = st.evicted_moved;
  root["evicted_compressed"] = st.evicted_compressed;
  root["evicted_recompute"] = st.evicted_recompute;
  root["evicted_recompute_bytes"] = st.evicted_recompute_bytes;
  root["rebuilds"] = st.rebuilds;
  root["rebuild_failures"] = st.rebuild_failures;
  root["rebuild_seconds"] = st.rebuild_seconds;
  root["recipes"] = st.recipes;
  root["recipes_ended"] = st.recipes_ended;
  root["discards"] = st.discards;
  root["evicted_discarded"] = st.evicted_discarded;
  root["evicted_discarded_bytes"] = st.evicted_discarded_bytes;
  root["predicted_prefetches"] = st.predicted_prefetches;
  root["prefetch_on_time_device"] = st.prefetch_on_time_device;
  root["prefetch_late_device"] = st.prefetch_late_device;
  root["prefetch_lateness_seconds"] = st.prefetch_lateness_seconds;
  root["prefetch_lead_seconds"] = st.prefetch_lead_seconds;
  root["prefetch_wasted_bytes"] = st.prefetch_wasted_bytes;
  root["planner_state"] = st.planner_state;
  root["planner_period"] = st.planner_period;
  root["planner_relearns"] = st.planner_relearns;
  root["planner_mispredicted"] = st.planner_mispredicted;
  root["planner_busy_skips"] = st.planner_busy_skips;
  root["planner_timed_accesses"] = st.planner_timed_accesses;
  root["planner_period_compute_seconds"] = st.planner_period_compute_seconds;
  root["planner_prefetching"] = st.planner_prefetching;
  root["planner_periods_prefetching"] = st.planner_periods_prefetching;
  root["planner_periods_without"] = st.planner_periods_without;
  root["planner_period_seconds_prefetching"] = st.planner_period_seconds_prefetching;
  root["planner_period_seconds_without"] = st.planner_period_seconds_without;
  root["planned_prefetches"] = st.planned_prefetches;
  root["planned_prefetch_bytes"] = st.planned_prefetch_bytes;
  root["plan_harm_skips"] = st.plan_harm_skips;
  root["plan_no_room"] = st.plan_no_room;
  root["early_write_backs"] = st.early_write_backs;
  root["early_write_back_bytes"] = st.early_write_back_bytes;
  root["early_write_backs_wasted"] = st.early_write_backs_wasted;
  root["early_write_back_wasted_bytes"] = st.early_write_back_wasted_bytes;
  boost::json::array tenants;
  for (tenant_stats const& t : st.tenants) {
    tenants.push_back(boost::json::object{{"tenant", t.tenant},
                                          {"tensors", t.tensors},
                                          {"live_bytes", t.live_bytes},
                                          {"peak_bytes", t.peak_bytes},
                                          {"quota_bytes", t.quota_bytes},
                                          {"quota_refusals", t.quota_refusals}});
  }
  root["tenants"] = std::move(tenants);
  return root;
}

}  // namespace

std::string format_summary_json(pool_stats const& st, std::string_view backend)
{
  boost::json::object root;
  root["backend"] = std::string(backend);
  for (auto& kv : stats_json(st)) { root[kv.key()] = std::move(kv.value()); }
  return boost::json::serialize(root);
}

}  // namespace tierpool::detail

namespace tierpool {

std::string to_json(pool_stats const& stats) { return boost::json::serialize(detail::stats_json(stats)); }

}  // namespace tierpool

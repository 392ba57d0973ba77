// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_report.cpp — owns what the pool says about itself: stats(), summary() (a table,
// like torch.cuda.memory_summary), summary_json() (Boost.JSON) and validate() (every
// invariant, for tests).
//
// Invariants checked by validate(), with the quiesce gate closed (no operation running):
//   every live record has >= 1 valid slot;  record.pins == SUM(slot.pins)
//   SUM(slot sizes of non-absent slots in tier k) == tier k's usage().used_bytes
//   COUNT(non-absent slots in tier k) == tier_state::resident
//   SUM(bytes of records with slot.pins > 0 in tier k) == tier_state::pinned_bytes()
//   each tier's validate() and its policy's validate()
#include <boost/json.hpp>

#include <tierpool/detail/parse.hpp>
#include <tierpool/monitor.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/detail/pool_impl.hpp"

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
    t.reuses_in_order = ts.reused_in_order.load(std::memory_order_relaxed);
    tier_usage u{};
    {
      std::lock_guard tl(ts.mem->mutex());
      u = ts.mem->usage();
    }
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
  }
  // Every counted acquire is one hit or miss, and a lease or a failure (the hit path counts
  // nothing more). Read without a lock, the figures may be a moment apart: never below 0.
  st.acquire_failures = counters_.acquire_failures.load(std::memory_order_relaxed);
  st.acquires = st.hits + st.misses - std::min(st.acquire_failures, st.hits + st.misses);
  st.busy_retries = counters_.busy_retries.load(std::memory_order_relaxed);
  st.bytes_h2d = counters_.bytes_h2d.load(std::memory_order_relaxed);
  st.bytes_d2h = counters_.bytes_d2h.load(std::memory_order_relaxed);
  st.copies_h2d = counters_.copies_h2d.load(std::memory_order_relaxed);
  st.copies_d2h = counters_.copies_d2h.load(std::memory_order_relaxed);
  st.bytes_up = counters_.bytes_up.load(std::memory_order_relaxed);
  st.bytes_down = counters_.bytes_down.load(std::memory_order_relaxed);
  st.copies_up = counters_.copies_up.load(std::memory_order_relaxed);
  st.copies_down = counters_.copies_down.load(std::memory_order_relaxed);
  st.prefetch_queued = counters_.prefetch_queued.load(std::memory_order_relaxed);
  st.prefetch_dropped = counters_.prefetch_dropped.load(std::memory_order_relaxed);
  st.managed_prefetches = counters_.managed_prefetches.load(std::memory_order_relaxed);
  st.low_memory_callbacks = lowmem_.calls();
  st.predicted_prefetches = counters_.predicted_prefetches.load(std::memory_order_relaxed);
  st.managed_prefetch_bytes = counters_.managed_prefetch_bytes.load(std::memory_order_relaxed);
  st.prefetches = counters_.prefetches.load(std::memory_order_relaxed);
  st.prefetch_wasted = counters_.prefetch_wasted.load(std::memory_order_relaxed);
  st.stall_seconds = static_cast<double>(streams_->stall_ns()) * 1e-9;
  return st;
}

std::string pool_impl::summary() const
{
  pool_stats const st = stats();
  std::string out;
  char line[256];
  auto add = [&](int n) {
    if (n > 0) { out.append(line, std::min(static_cast<std::size_t>(n), sizeof(line) - 1)); }
  };
  add(std::snprintf(line, sizeof line, "tierpool pool summary (backend: %s)\n", backend_->caps().name.c_str()));
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
    o["reuses_in_order"] = t.reuses_in_order;
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
  root["predicted_prefetches"] = st.predicted_prefetches;
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

std::string pool_impl::summary_json() const
{
  boost::json::object root;
  root["backend"] = backend_->caps().name;
  for (auto& kv : stats_json(stats())) { root[kv.key()] = std::move(kv.value()); }
  return boost::json::serialize(root);
}

std::vector<std::shared_ptr<tensor_record>> pool_impl::records_by_id() const
{
  std::vector<std::shared_ptr<tensor_record>> recs;
  {
    std::lock_guard lock(table_mtx_);
    recs.reserve(table_.size());
    table_.for_each([&recs](std::shared_ptr<tensor_record> const& rec) { recs.push_back(rec); });
  }
  std::sort(recs.begin(), recs.end(), [](auto const& a, auto const& b) { return a->id < b->id; });
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
  op_gate::closed const quiet(gate_);
  std::vector<std::shared_ptr<tensor_record>> const recs = records_by_id();

  bool ok = true;
  auto fail = [&](std::string const& why) {
    std::fprintf(stderr, "tierpool: pool::validate: %s\n", why.c_str());
    ok = false;
  };
  std::size_t const n = engine_.tiers().size();
  std::vector<std::size_t> bytes(n, 0);
  std::vector<std::size_t> pinned(n, 0);
  std::vector<std::uint64_t> resident(n, 0);
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
      if (s.blk.ptr == nullptr || s.blk.bytes != r->bytes) { fail(name + ": bad block in tier " + std::to_string(k)); }
      bytes[k] += static_cast<std::size_t>(s.blk.slot.size);
      ++resident[k];
      if (s.pins != 0) {
        pinned[k] += r->bytes;
        if (s.state != copy_state::valid) { fail(name + ": leased copy in tier " + std::to_string(k) + " is stale"); }
      }
    }
    if (!any_valid) { fail(name + ": no valid copy"); }
    if (pins != r->pins) { fail(name + ": pin count " + std::to_string(r->pins) + " != sum over tiers"); }
  }
  for (std::size_t k = 0; k < n; ++k) {
    tier_state const& ts = *engine_.tiers()[k];
    std::lock_guard tl(ts.mem->mutex());
    if (!ts.mem->validate()) { fail("tier " + ts.name + ": tier::validate failed"); }
    if (!ts.policy->validate()) { fail("tier " + ts.name + ": policy validate failed"); }
    tier_usage const u = ts.mem->usage();
    if (u.used_bytes != bytes[k]) {
      fail("tier " + ts.name + ": used " + std::to_string(u.used_bytes) + " != copies " + std::to_string(bytes[k]));
    }
    if (ts.resident.load() != resident[k]) { fail("tier " + ts.name + ": resident count mismatch"); }
    if (ts.pinned_bytes() != pinned[k]) { fail("tier " + ts.name + ": pinned bytes mismatch"); }
  }
  return ok;
}

}  // namespace tierpool::detail

namespace tierpool {

std::string to_json(pool_stats const& stats) { return boost::json::serialize(detail::stats_json(stats)); }

}  // namespace tierpool

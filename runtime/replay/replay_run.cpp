// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// replay_run.cpp — owns run() (one policy × capacity: pick the engine, time it, add the
// time model and the ideal time) and run_grid() (every pair in parallel on oneTBB, results
// in grid order, the ratio to Belady).
#include "replay/detail/engines.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/policy.hpp>

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

namespace tierpool::replay {

namespace {

// Time `copies` copies of `bytes` bytes in all occupy a link: each pays the latency, and
// the bytes go at the link's bandwidth (as link_model::transfer_ns, summed).
double link_seconds(link_model const& l, std::uint64_t bytes, std::uint64_t copies) noexcept
{
  double s = static_cast<double>(copies) * static_cast<double>(l.latency_ns) * 1e-9;
  if (l.bandwidth_bytes_per_s > 0.0) { s += static_cast<double>(bytes) / l.bandwidth_bytes_per_s; }
  return s;
}

// Pool mode runs on the sim backend's 64-bit nanosecond clock, and a copy's modelled time
// saturates at 2^62 ns (link_model::transfer_ns): past 2^61 ns (about 73 years) the
// figures can no longer be trusted.
constexpr double kClockRangeSeconds = static_cast<double>(std::uint64_t{1} << 61U) * 1e-9;

std::string seconds_text(double s)
{
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string link_text(link_model const& l)
{
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.3g bytes/s, %llu ns per copy", l.bandwidth_bytes_per_s,
                static_cast<unsigned long long>(l.latency_ns));
  return buf;
}

}  // namespace

std::vector<staging_tier> parse_staging_tiers(std::string_view list)
{
  std::vector<staging_tier> out;
  while (!list.empty()) {
    std::size_t const comma = list.find(',');
    std::string_view const item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    std::string const what = "replay: bad tier '" + std::string(item) + "': ";
    std::size_t const eq = item.find('=');
    if (eq == std::string_view::npos) { throw logic_error(what + "expected KIND=SIZE (pinned_host=32MiB)"); }
    std::string_view const kind = item.substr(0, eq);
    staging_tier t;
    if (kind == "pinned_host") {
      t.kind = tier_kind::pinned_host;
    } else if (kind == "host") {
      t.kind = tier_kind::host;
    } else {
      throw logic_error(what + "the kind must be pinned_host or host (the device tier is --capacity)");
    }
    try {
      t.capacity_bytes = tierpool::detail::parse_byte_size(item.substr(eq + 1));
    } catch (logic_error const& e) {
      throw logic_error(what + e.what());
    }
    if (t.capacity_bytes < 256) { throw logic_error(what + "a tier needs at least 256 bytes"); }
    out.push_back(t);
  }
  return out;
}

replay_result run(compiled_trace const& trace, run_options const& o)
{
  detail::compiled_data const& d = trace.data();
  TIERPOOL_EXPECTS(o.capacity_bytes > 0, "replay: the capacity must be > 0");
  policy_registry fallback;
  policy_registry const* registry = o.registry;
  if (registry == nullptr) {
    fallback = policy_registry::with_builtins();
    registry = &fallback;
  }

  replay_result r;
  r.policy = o.policy;
  r.prefetch = o.prefetch;
  r.capacity_label = o.capacity_label.empty() ? std::to_string(o.capacity_bytes) : o.capacity_label;
  r.capacity_bytes = o.capacity_bytes;
  r.mode = o.mode;
  r.ignore_size = d.options.ignore_size;
  r.events = o.mode == replay_mode::cache ? d.cache.size() : d.ops.size();
  r.requests = d.requests;

  // The ideal time does not depend on the run: compute it first, so that a link too slow
  // for the simulated clock is refused before the run rather than saturating it.
  // A pool run with recipes may drop and rebuild the recomputable tensors: its floors leave
  // them out (Note [Floors with recompute], compiled_trace.cpp).
  std::vector<std::uint8_t> const leave_out =
    o.mode == replay_mode::pool && o.recompute ? detail::recomputable_mask(d) : std::vector<std::uint8_t>{};
  detail::must_move const m = detail::compute_must_move(d, o.capacity_bytes, leave_out);
  double const floor_h2d = link_seconds(o.link, m.h2d_bytes, m.h2d_copies);
  double const floor_d2h = link_seconds(o.link, m.d2h_bytes, 0);
  if (o.mode != replay_mode::cache) {
    double const floor = std::max(floor_h2d, floor_d2h);
    if (!(floor < kClockRangeSeconds)) {
      throw logic_error("replay: at " + r.capacity_label + " the copies alone take at least " + seconds_text(floor) +
                        " on the link (" + link_text(o.link) + "), past the simulated clock's range (" +
                        seconds_text(kClockRangeSeconds) + "): give a faster --link");
    }
  }

  auto const t0 = std::chrono::steady_clock::now();
  if (o.mode == replay_mode::cache) {
    if (o.prefetch != "none") {
      throw logic_error("replay: --prefetch is a pool-mode option (cache mode has no prefetch)");
    }
    if (!o.staging.empty()) { throw logic_error("replay: --tiers is a pool-mode option (cache mode has one tier)"); }
    if (o.host_capacity_bytes != 0 || o.storage_bytes != 0) {
      throw logic_error("replay: --host-capacity and --storage are pool-mode options (cache mode has one tier)");
    }
    any_eviction_policy policy = registry->create(o.policy);
    detail::run_cache(d, policy, o, r);
  } else if (is_uvm(o.mode)) {
    // The UVM baseline evicts LRU pages, as the driver does: no other policy, no tiers.
    if (o.prefetch != "none") {
      throw logic_error("replay: --prefetch is a pool-mode option (uvm-hints models the user's prefetches)");
    }
    if (!o.staging.empty()) { throw logic_error("replay: --tiers is a pool-mode option (UVM has device and host)"); }
    if (o.host_capacity_bytes != 0 || o.storage_bytes != 0) {
      throw logic_error("replay: --host-capacity and --storage are pool-mode options (UVM has device and host)");
    }
    if (o.policy != "lru") {
      throw logic_error("replay: " + std::string(to_string(o.mode)) +
                        " evicts LRU pages as the driver does: give the policy lru (got '" + o.policy + "')");
    }
    if (d.options.ignore_size) { throw logic_error("replay: ignoring sizes is a cache-mode option"); }
    TIERPOOL_EXPECTS(d.options.pool, "replay: this trace was compiled without the pool-mode array (compile_options::pool)");
    detail::run_uvm(d, o, r, o.mode == replay_mode::uvm_hints);
  } else {
    if (d.options.ignore_size) { throw logic_error("replay: ignoring sizes is a cache-mode option"); }
    TIERPOOL_EXPECTS(d.options.pool, "replay: this trace was compiled without the pool-mode array (compile_options::pool)");
    detail::run_pool(d, *registry, o, r);
  }
  auto const t1 = std::chrono::steady_clock::now();
  r.wall_seconds = std::chrono::duration<double>(t1 - t0).count();
  if (r.wall_seconds > 0.0) {
    r.requests_per_second = static_cast<double>(r.requests) / r.wall_seconds;
    r.events_per_second = static_cast<double>(r.events) / r.wall_seconds;
  }

  // Time model and ideal time (docs/chapters/replay.md).
  r.must_move_h2d = m.h2d_bytes;
  r.must_move_d2h = m.d2h_bytes;
  if (o.mode == replay_mode::cache) {
    // Blocking cache: every copy stalls the one timeline; nothing overlaps.
    r.compute_seconds = static_cast<double>(d.compute_ns) * 1e-9;
    r.stall_seconds = link_seconds(o.link, r.bytes_h2d, r.copies_h2d) + link_seconds(o.link, r.bytes_d2h, r.copies_d2h);
    r.makespan_seconds = r.compute_seconds + r.stall_seconds;
    r.ideal_seconds = r.compute_seconds + floor_h2d + floor_d2h;
  } else {
    // Streams run in parallel and each link direction is its own.
    r.compute_seconds = static_cast<double>(d.max_stream_compute_ns) * 1e-9;
    r.ideal_seconds = std::max({r.compute_seconds, floor_h2d, floor_d2h});
    r.phase_floor_seconds = detail::window_bound_seconds(d, o.capacity_bytes, o.link.bandwidth_bytes_per_s, leave_out);
    if (!(r.makespan_seconds < kClockRangeSeconds)) {
      throw logic_error("replay: " + r.policy + " at " + r.capacity_label + " ran the simulated clock to " +
                        seconds_text(r.makespan_seconds) + ", past its range (" + seconds_text(kClockRangeSeconds) +
                        "): the figures would be wrong; give a faster --link");
    }
  }
  return r;
}

std::vector<replay_result> run_grid(compiled_trace const& trace, grid_options const& options)
{
  TIERPOOL_EXPECTS(!options.policies.empty(), "replay: no policy given");
  TIERPOOL_EXPECTS(!options.capacities.empty(), "replay: no capacity given");
  policy_registry fallback;
  policy_registry const* registry = options.registry;
  if (registry == nullptr) {
    fallback = policy_registry::with_builtins();
    registry = &fallback;
  }
  // Fail fast on a bad spec, before any run starts.
  for (std::string const& spec : options.policies) { (void)registry->create(spec); }

  std::size_t const nc = options.capacities.size();
  std::size_t const total = options.policies.size() * nc;
  std::vector<replay_result> results(total);
  std::mutex report_mtx;
  std::size_t done = 0;

  auto one = [&](std::size_t k) {
    capacity_spec const& c = options.capacities[k % nc];
    run_options o;
    o.mode = options.mode;
    o.policy = options.policies[k / nc];
    o.capacity_bytes = trace.resolve(c, options.mode);
    o.capacity_label = c.label;
    o.link = options.link;
    o.prefetch = options.prefetch;
    o.staging = options.staging;
    o.host_capacity_bytes = options.host_capacity ? trace.resolve(*options.host_capacity, options.mode) : 0;
    o.storage_bytes = options.storage_bytes;
    o.storage_read_link = options.storage_read_link;
    o.storage_write_link = options.storage_write_link;
    o.storage_ratio = options.storage_ratio;
    o.recompute = options.recompute;
    o.compaction = options.compaction;
    o.trace_prefetches = options.trace_prefetches;
    o.uvm_page_bytes = options.uvm_page_bytes;
    o.uvm_fault_ns = options.uvm_fault_ns;
    o.uvm_drop_clean = options.uvm_drop_clean;
    o.record_activity = options.record_activity;
    o.record_timeline = options.record_timeline;
    o.registry = registry;
    if (options.on_progress) {
      o.progress = [&, k](std::uint64_t a, std::uint64_t b) {
        std::lock_guard lock(report_mtx);
        options.on_progress(k, b == 0 ? 1.0 : static_cast<double>(a) / static_cast<double>(b));
      };
    }
    results[k] = run(trace, o);
    if (options.on_run_done) {
      std::lock_guard lock(report_mtx);
      ++done;
      options.on_run_done(results[k], done, total);
    }
  };

  // More threads than the machine runs only makes oneTBB warn: clamp to its concurrency.
  int const hw = tbb::info::default_concurrency();
  int const threads = options.threads == 0 ? hw : std::min(hw, static_cast<int>(options.threads));
  tbb::task_arena arena(threads);
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, total, 1), [&](tbb::blocked_range<std::size_t> const& r) {
      for (std::size_t k = r.begin(); k != r.end(); ++k) { one(k); }
    });
  });

  // Bytes moved relative to the reference policy on the same capacity.
  for (std::size_t p = 0; p < options.policies.size() && !options.reference.empty(); ++p) {
    if (options.policies[p] != options.reference) { continue; }
    for (std::size_t k = 0; k < total; ++k) {
      replay_result const& b = results[p * nc + k % nc];
      std::uint64_t const ref = b.bytes_h2d + b.bytes_d2h;
      std::uint64_t const mine = results[k].bytes_h2d + results[k].bytes_d2h;
      if (ref != 0) {
        results[k].moved_vs_belady = static_cast<double>(mine) / static_cast<double>(ref);
      } else if (mine == 0) {
        results[k].moved_vs_belady = 1.0;
      }
    }
    break;
  }
  return results;
}

}  // namespace tierpool::replay

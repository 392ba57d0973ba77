// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// top_command.cpp — owns `tierpool top`: the live figures every pool on this machine (or
// in this container) publishes in shared memory (include/tierpool/monitor.hpp), refreshed
// like top(1): per pool its tensors, hit rate, bytes moved each way with their rates,
// prefetch outcomes and stall time, and per tier its use, peak, pinned and in-flight bytes,
// largest free block, fragmentation and evictions. --json prints one JSON object per
// refresh; --clean removes the segments crashed programs left (and says which it may not).
// What a segment says comes from whichever process wrote it: the reader makes its text
// printable and its figures finite, and one pool that cannot be shown never hides the
// others. Entry point:
// tierpool::cli::top_command().

// GCC 12 reports a false -Wnull-dereference inside Boost.ProgramOptions (see policies_command.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "checked_options.hpp"
#include "commands.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/monitor.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <unistd.h>

namespace tierpool::cli {
namespace {

namespace po = boost::program_options;
namespace json = boost::json;

/// Rate of a counter between two snapshots of one pool, per second of its uptime.
double rate(std::uint64_t now, std::uint64_t before, double dt)
{
  return dt > 0 && now >= before ? static_cast<double>(now - before) / dt : 0.0;
}

std::string bytes(std::uint64_t b) { return detail::format_byte_size(b); }

void print_pool(published_pool const& p, published_pool const* prev)
{
  pool_stats const& s = p.stats;
  std::printf("pid %lld  %s  %s (%s)  up %.1f s  updated %.1f s ago%s\n", static_cast<long long>(p.pid),
              p.name.c_str(), p.backend.c_str(), p.device.c_str(), p.uptime_seconds, p.age_seconds,
              p.alive ? "" : "  [process exited]");
  double const hit = s.acquires == 0 ? 0.0 : 100.0 * static_cast<double>(s.hits) / static_cast<double>(s.acquires);
  std::string h2d = bytes(s.bytes_h2d);
  std::string d2h = bytes(s.bytes_d2h);
  if (prev != nullptr) {
    double const dt = p.uptime_seconds - prev->uptime_seconds;
    h2d += " (" + bytes(static_cast<std::uint64_t>(rate(s.bytes_h2d, prev->stats.bytes_h2d, dt))) + "/s)";
    d2h += " (" + bytes(static_cast<std::uint64_t>(rate(s.bytes_d2h, prev->stats.bytes_d2h, dt))) + "/s)";
  }
  std::printf("  tensors %llu (%s)  acquires %llu  hits %.1f %%  h2d %s  d2h %s  stall %.3f s\n",
              static_cast<unsigned long long>(s.tensors), bytes(s.tensor_bytes).c_str(),
              static_cast<unsigned long long>(s.acquires), hit, h2d.c_str(), d2h.c_str(), s.stall_seconds);
  std::printf("  prefetch: issued %llu  hits %llu  late %llu  wasted %llu  queued %llu  dropped %llu\n",
              static_cast<unsigned long long>(s.prefetches), static_cast<unsigned long long>(s.prefetch_hits),
              static_cast<unsigned long long>(s.prefetch_late), static_cast<unsigned long long>(s.prefetch_wasted),
              static_cast<unsigned long long>(s.prefetch_queued), static_cast<unsigned long long>(s.prefetch_dropped));
  if (s.prefetch_on_time_device + s.prefetch_late_device != 0) {
    std::printf("  prefetch in device time: on time %llu (ready %.6f s ahead)  late %llu  waited %.6f s  unused %s\n",
                static_cast<unsigned long long>(s.prefetch_on_time_device), s.prefetch_lead_seconds,
                static_cast<unsigned long long>(s.prefetch_late_device), s.prefetch_lateness_seconds,
                bytes(s.prefetch_wasted_bytes).c_str());
  }
  if (!s.planner_state.empty()) {
    std::printf("  planner: %s  period %llu  relearns %llu  mispredicted %llu  busy skips %llu  prefetched %llu (%s)  "
                "harm skips %llu  early write-backs %llu (%s, wasted %llu)\n",
                s.planner_state.c_str(), static_cast<unsigned long long>(s.planner_period),
                static_cast<unsigned long long>(s.planner_relearns),
                static_cast<unsigned long long>(s.planner_mispredicted),
                static_cast<unsigned long long>(s.planner_busy_skips),
                static_cast<unsigned long long>(s.planned_prefetches), bytes(s.planned_prefetch_bytes).c_str(),
                static_cast<unsigned long long>(s.plan_harm_skips), static_cast<unsigned long long>(s.early_write_backs),
                bytes(s.early_write_back_bytes).c_str(), static_cast<unsigned long long>(s.early_write_backs_wasted));
    if (s.planner_periods_prefetching + s.planner_periods_without != 0) {
      std::printf("  prefetching %s  periods with %llu (mean %.3f ms)  without %llu (mean %.3f ms)\n",
                  s.planner_prefetching ? "on" : "off", static_cast<unsigned long long>(s.planner_periods_prefetching),
                  s.planner_period_seconds_prefetching * 1e3, static_cast<unsigned long long>(s.planner_periods_without),
                  s.planner_period_seconds_without * 1e3);
    }
  }
  std::printf("  %-14s %11s %11s %11s %11s %11s %12s %6s %10s  %s\n", "tier", "capacity", "used", "peak", "pinned",
              "in flight", "largest free", "frag", "evictions", "policy");
  for (tier_stats const& t : s.tiers) {
    std::printf("  %-14s %11s %11s %11s %11s %11s %12s %5.1f%% %10llu  %s\n", t.name.c_str(),
                bytes(t.capacity_bytes).c_str(), bytes(static_cast<std::uint64_t>(t.used_bytes.current)).c_str(),
                bytes(static_cast<std::uint64_t>(t.used_bytes.peak)).c_str(), bytes(t.pinned_bytes).c_str(),
                bytes(t.in_flight_bytes).c_str(), bytes(t.largest_free_block).c_str(), 100.0 * t.fragmentation,
                static_cast<unsigned long long>(t.evictions), t.policy.c_str());
  }
  for (tier_stats const& t : s.tiers) {
    if (t.kind == tier_kind::storage) {
      std::printf("  storage %s: written %s, read %s\n", t.name.c_str(), bytes(t.bytes_written).c_str(),
                  bytes(t.bytes_read).c_str());
    }
  }
  std::printf("  prefetch predictor: %s\n", s.prefetch.c_str());
  if (s.pressure_shrinks != 0) {
    std::printf("  device pressure: %llu shrinks, %s given back\n", static_cast<unsigned long long>(s.pressure_shrinks),
                bytes(s.pressure_released_bytes).c_str());
  }
  if (p.tier_count > s.tiers.size()) { std::printf("  (%u more tiers not published)\n", p.tier_count - static_cast<unsigned>(s.tiers.size())); }
  for (tenant_stats const& t : s.tenants) {
    std::printf("  tenant %u: %llu tensors, %s (peak %s), quota %s, %llu refused\n", t.tenant,
                static_cast<unsigned long long>(t.tensors), bytes(t.live_bytes).c_str(), bytes(t.peak_bytes).c_str(),
                t.quota_bytes == 0 ? "none" : bytes(t.quota_bytes).c_str(),
                static_cast<unsigned long long>(t.quota_refusals));
  }
  if (p.tenant_count > s.tenants.size()) {
    std::printf("  (%u more tenants not published)\n", p.tenant_count - static_cast<unsigned>(s.tenants.size()));
  }
  for (std::string const& why : p.problems) { std::printf("  (segment corrected: %s)\n", why.c_str()); }
}

json::object pool_json(published_pool const& p)
{
  json::array problems;
  for (std::string const& s : p.problems) { problems.emplace_back(s); }
  return json::object{{"segment", p.segment},
                      {"pid", p.pid},
                      {"alive", p.alive},
                      {"name", p.name},
                      {"backend", p.backend},
                      {"device", p.device},
                      {"interval_ms", p.interval_ms},
                      {"updates", p.updates},
                      {"uptime_seconds", p.uptime_seconds},
                      {"age_seconds", p.age_seconds},
                      {"tier_count", p.tier_count},
                      {"tenant_count", p.tenant_count},
                      {"stats", json::parse(to_json(p.stats))},
                      {"problems", std::move(problems)}};
}

}  // namespace

int top_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool top: live figures of every pool on this machine (or in this container), read\n"
    "from the shared-memory segment each pool publishes (/dev/shm/tierpool.<pid>.<n>; no\n"
    "GPU tool needed). A pool publishes unless pool_options::publish.enabled is false or\n"
    "TIERPOOL_PUBLISH=0, every publish.interval_ms (default 500 ms).\n\noptions");
  // Numbers are taken as text and checked here: Boost.ProgramOptions would read "-1" into
  // an unsigned option as 2^64 - 1.
  std::string interval_text = "1";
  std::string iterations_text = "0";
  std::vector<std::string> pid_texts;
  std::string shm_dir;
  desc.add_options()
    ("help,h", "show this help")
    ("interval,d", po::value(&interval_text)->default_value("1"), "seconds between refreshes, in (0, 86400]")
    ("iterations,n", po::value(&iterations_text)->default_value("0"), "refreshes before exiting; 0 = until interrupted")
    ("once", "one refresh, then exit (-n 1)")
    ("pid,p", po::value(&pid_texts)->composing(), "only this process's pools; repeatable")
    ("all", "also show segments of processes that have exited (left by a crash)")
    ("json", "one JSON object per refresh instead of the table")
    ("clean", "remove the segments of exited processes, say which, and exit")
    ("shm-dir", po::value(&shm_dir), "read segments in this directory instead of /dev/shm");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool top: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0U) {
    std::cout << desc << '\n';
    return 0;
  }
  double interval = 0.0;
  {
    char* end = nullptr;
    errno = 0;
    interval = std::strtod(interval_text.c_str(), &end);
    if (interval_text.empty() || end != interval_text.c_str() + interval_text.size() || errno == ERANGE ||
        !(interval > 0.0) || interval > 86400.0) {
      std::fprintf(stderr, "tierpool top: --interval must be in (0, 86400] seconds, got %s\n", interval_text.c_str());
      return 2;
    }
  }
  std::int64_t iterations = 0;
  std::vector<std::int64_t> pids;
  try {  // checked_options.hpp: the option's name and range in the message
    iterations =
      parse_checked<std::int64_t>("--iterations", iterations_text, 0, std::numeric_limits<std::int64_t>::max());
    for (std::string const& t : pid_texts) {
      pids.push_back(parse_checked<std::int64_t>("--pid", t, 1, std::numeric_limits<pid_t>::max()));
    }
  } catch (logic_error const& e) {
    std::fprintf(stderr, "tierpool top: %s\n", e.what());
    return 2;
  }
  if (!shm_dir.empty()) { set_stats_segment_directory(shm_dir); }
  if (vm.count("clean") != 0U) {
    published_cleanup const done = clean_exited_pools();
    std::string const dir = stats_segment_directory();
    for (std::string const& n : done.removed) { std::printf("removed %s/%s\n", dir.c_str(), n.c_str()); }
    for (std::string const& f : done.failed) { std::printf("could not remove %s/%s\n", dir.c_str(), f.c_str()); }
    std::printf("%zu stale segment(s) removed", done.removed.size());
    if (!done.failed.empty()) {
      std::printf("; %zu could not be removed (only a segment's owner or root may remove it)", done.failed.size());
    }
    std::printf("\n");
    return done.failed.empty() ? 0 : 1;
  }
  if (vm.count("once") != 0U) { iterations = 1; }
  bool const as_json = vm.count("json") != 0U;
  bool const all = vm.count("all") != 0U;
  bool const clear = !as_json && iterations != 1 && ::isatty(STDOUT_FILENO) != 0;

  std::map<std::string, published_pool> previous;  // by segment, for rates
  for (std::int64_t it = 0; iterations == 0 || it < iterations; ++it) {
    if (it != 0) { std::this_thread::sleep_for(std::chrono::duration<double>(interval)); }
    published_scan scan = scan_published_pools(all);
    if (!pids.empty()) {
      std::erase_if(scan.pools, [&](published_pool const& p) {
        return std::find(pids.begin(), pids.end(), p.pid) == pids.end();
      });
    }
    if (as_json) {
      json::array pools;
      json::array skipped;
      for (std::string const& s : scan.skipped) { skipped.emplace_back(s); }
      for (published_pool const& p : scan.pools) {
        try {  // one pool that cannot be shown never spoils the others
          pools.push_back(pool_json(p));
        } catch (std::exception const& e) {
          skipped.emplace_back(p.segment + ": cannot be shown as JSON: " + e.what());
        }
      }
      std::cout << json::serialize(json::object{
                     {"time", static_cast<std::int64_t>(std::time(nullptr))},
                     {"pools", std::move(pools)},
                     {"skipped", std::move(skipped)}})
                << std::endl;
    } else {
      if (clear) { std::fputs("\x1b[H\x1b[2J", stdout); }
      std::time_t const now = std::time(nullptr);
      char when[32];
      std::strftime(when, sizeof when, "%H:%M:%S", std::localtime(&now));
      std::printf("tierpool top — %zu pool(s), %s%s\n\n", scan.pools.size(), when,
                  iterations == 1 ? "" : "  (Ctrl-C to quit)");
      if (scan.pools.empty()) {
        std::printf("no pool is publishing%s (a pool publishes unless publish.enabled is false or TIERPOOL_PUBLISH=0)\n",
                    pids.empty() ? "" : " in the processes asked for");
      }
      for (published_pool const& p : scan.pools) {
        auto const prev = previous.find(p.segment);
        print_pool(p, prev == previous.end() ? nullptr : &prev->second);
        std::printf("\n");
      }
      for (std::string const& s : scan.skipped) { std::printf("skipped %s\n", s.c_str()); }
      std::fflush(stdout);
    }
    previous.clear();
    for (published_pool& p : scan.pools) { previous.emplace(p.segment, std::move(p)); }
  }
  return 0;
}

}  // namespace tierpool::cli

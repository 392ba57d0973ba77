// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// monitor_tests.cpp — the live figures a pool publishes in shared memory (pool_options::
// publish, include/tierpool/monitor.hpp) and `tierpool top`, which reads them: the figures
// read back equal pool::stats(); the segment goes with the pool; the refresh thread keeps
// it current; a reader never sees a torn copy; bad segments are refused with reasons;
// segments of exited processes are skipped and cleaned.
#include <gtest/gtest.h>

#include <tierpool/monitor.hpp>
#include <tierpool/pool.hpp>

#include <boost/json.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "telemetry/stats_segment.hpp"
#include "unit/pool_test_util.hpp"

namespace tierpool::test {
namespace {

using namespace std::chrono_literals;

// The virtual clock: its backend starts no thread, so a test that forks (in_child) forks a
// process whose only other thread is the refresh thread, if any (a child forked while a
// backend thread was starting up hung on its first allocation under AddressSanitizer).
pool_options published(std::string const& name, std::uint32_t interval_ms = 0)
{
  pool_options o = small_tiers(make_sim(sim_clock_mode::virtual_clock));
  o.publish = {.enabled = true, .name = name, .interval_ms = interval_ms};
  return o;
}

bool segment_exists(std::string const& seg)
{
  int const fd = ::shm_open(("/" + seg).c_str(), O_RDONLY, 0);
  if (fd >= 0) { ::close(fd); }
  return fd >= 0;
}

/// Write raw bytes as a segment named `seg` (removed by the guard).
struct raw_segment {
  std::string name;
  raw_segment(std::string n, void const* data, std::size_t bytes) : name(std::move(n))
  {
    int const fd = ::shm_open(("/" + name).c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, data, bytes), static_cast<ssize_t>(bytes));
    ::close(fd);
  }
  ~raw_segment() { ::shm_unlink(("/" + name).c_str()); }
  raw_segment(raw_segment const&) = delete;
  raw_segment& operator=(raw_segment const&) = delete;
};

telemetry::segment_layout read_layout(std::string const& seg)
{
  telemetry::segment_layout lay{};
  int const fd = ::shm_open(("/" + seg).c_str(), O_RDONLY, 0);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::read(fd, &lay, sizeof lay), static_cast<ssize_t>(sizeof lay));
  ::close(fd);
  return lay;
}

/// Run `body` in a forked child, bounded by alarm(seconds) so that a hang fails instead
/// of waiting forever; its exit code, or minus the signal that ended it.
template <class F>
int in_child(F&& body, unsigned seconds = 60)
{
  std::fflush(nullptr);
  pid_t const child = ::fork();
  if (child < 0) { return -1000; }
  if (child == 0) {
    ::alarm(seconds);
    int code = 98;
    try {
      code = body();
    } catch (...) {  // NOLINT(bugprone-empty-catch): reported as 98
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  int st = 0;
  if (::waitpid(child, &st, 0) != child) { return -1001; }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

/// A sticky directory of our own (mkdtemp from `tmpl`), holding one segment named after a
/// process that has exited: what a crash leaves in /dev/shm.
void make_stale_segment_dir(char const* tmpl, std::string& dir, std::string& stale)
{
  std::string name = tmpl;
  ASSERT_NE(::mkdtemp(name.data()), nullptr);
  dir = name;
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);
  pid_t const dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) { ::_exit(0); }
  int st = 0;
  ASSERT_EQ(::waitpid(dead, &st, 0), dead);
  stale = "tierpool." + std::to_string(dead) + ".1";
  { std::ofstream(dir + "/" + stale) << "left by a crash"; }
}

constexpr int kSkip = 77;  // the child could not set up what it needs

/// Become the unprivileged user nobody (65534); false when this process may not.
bool become_nobody()
{
  return ::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0 && ::geteuid() == 65534;
}

bool has_segment_files(std::string const& dir)
{
  std::error_code ec;
  for (auto const& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind("tierpool.", 0) == 0) { return true; }
  }
  return false;
}

struct env_guard {
  char const* name;
  env_guard(char const* n, char const* v) : name(n) { ::setenv(n, v, 1); }
  ~env_guard() { ::unsetenv(name); }
  env_guard(env_guard const&) = delete;
  env_guard& operator=(env_guard const&) = delete;
};

TEST(Monitor, PublishedFiguresEqualStats)
{
  pool p(published("monitor-test"));
  std::string const seg = p.stats_segment();
  ASSERT_FALSE(seg.empty()) << p.publishing_error();
  EXPECT_EQ(seg.rfind("tierpool." + std::to_string(::getpid()) + ".", 0), 0U) << seg;
  std::vector<tensor> ts;
  for (int i = 0; i < 6; ++i) {
    ts.push_back(p.allocate(256_KiB, {.name = "t" + std::to_string(i), .tenant = static_cast<std::uint32_t>(i % 2)}));
    fill(p, ts.back(), static_cast<std::uint64_t>(i), 1);
  }
  for (int i = 0; i < 6; ++i) { (void)p.acquire(ts[static_cast<std::size_t>(i)], access_mode::read); }
  p.set_quota(1, 4_MiB);
  p.publish();
  pool_stats const want = p.stats();
  published_pool const got = read_published_pool(seg);
  EXPECT_EQ(got.segment, seg);
  EXPECT_EQ(got.pid, ::getpid());
  EXPECT_TRUE(got.alive);
  EXPECT_EQ(got.name, "monitor-test");
  EXPECT_EQ(got.backend, "sim");
  EXPECT_EQ(got.device, p.backend().caps().device_name);
  EXPECT_EQ(got.interval_ms, 0U);
  EXPECT_EQ(got.updates, 2U);  // at creation, and publish()
  EXPECT_EQ(got.tier_count, 3U);
  EXPECT_EQ(got.tenant_count, 2U);
  pool_stats const& s = got.stats;
  EXPECT_EQ(s.tensors, 6U);
  EXPECT_EQ(s.tensor_bytes, want.tensor_bytes);
  EXPECT_EQ(s.acquires, want.acquires);
  EXPECT_EQ(s.hits, want.hits);
  EXPECT_EQ(s.misses, want.misses);
  EXPECT_GT(s.misses, 0U);
  EXPECT_EQ(s.bytes_h2d, want.bytes_h2d);
  EXPECT_EQ(s.bytes_d2h, want.bytes_d2h);
  EXPECT_EQ(s.bytes_down, want.bytes_down);
  EXPECT_EQ(s.copies_up, want.copies_up);
  ASSERT_EQ(s.tiers.size(), want.tiers.size());
  for (std::size_t k = 0; k < s.tiers.size(); ++k) {
    SCOPED_TRACE(want.tiers[k].name);
    EXPECT_EQ(s.tiers[k].name, want.tiers[k].name);
    EXPECT_EQ(s.tiers[k].kind, want.tiers[k].kind);
    EXPECT_EQ(s.tiers[k].capacity_bytes, want.tiers[k].capacity_bytes);
    EXPECT_EQ(s.tiers[k].reserved_bytes, want.tiers[k].reserved_bytes);
    EXPECT_EQ(s.tiers[k].used_bytes.current, want.tiers[k].used_bytes.current);
    EXPECT_EQ(s.tiers[k].used_bytes.peak, want.tiers[k].used_bytes.peak);
    EXPECT_EQ(s.tiers[k].largest_free_block, want.tiers[k].largest_free_block);
    EXPECT_DOUBLE_EQ(s.tiers[k].fragmentation, want.tiers[k].fragmentation);
    EXPECT_EQ(s.tiers[k].resident_tensors, want.tiers[k].resident_tensors);
    EXPECT_EQ(s.tiers[k].evictions, want.tiers[k].evictions);
  }
  EXPECT_GT(s.tiers[0].evictions, 0U);  // 1.5 MiB through a 1 MiB device tier
  ASSERT_EQ(s.tenants.size(), 2U);
  EXPECT_EQ(s.tenants[1].tenant, 1U);
  EXPECT_EQ(s.tenants[1].tensors, 3U);
  EXPECT_EQ(s.tenants[1].live_bytes, 768_KiB);
  EXPECT_EQ(s.tenants[1].quota_bytes, 4_MiB);
  // The JSON of the figures is the pool's own summary less "backend".
  boost::json::object summary = boost::json::parse(p.summary_json()).as_object();
  summary.erase("backend");
  EXPECT_EQ(boost::json::parse(to_json(want)), boost::json::value(summary));
  EXPECT_TRUE(p.validate());
  for (int i = 0; i < 6; ++i) { EXPECT_TRUE(check(p, ts[static_cast<std::size_t>(i)], static_cast<std::uint64_t>(i), 1)); }
}

// The planner's figures and the prefetches judged in device time reach `tierpool top`.
TEST(Monitor, PlannerFiguresArePublished)
{
  pool_options o = published("monitor-planner");
  o.prefetch = "plan";
  pool p(o);
  std::string const seg = p.stats_segment();
  ASSERT_FALSE(seg.empty()) << p.publishing_error();
  stream_handle const s = p.create_stream();
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 8; ++i) {  // twice the 1 MiB device tier, read in a loop
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{2}}));
    fill(p, ts.back(), i, 1);
  }
  for (int iter = 0; iter < 16; ++iter) {  // enough periods for a trial without prefetches
    for (auto const& t : ts) {
      lease l = p.acquire(t, access_mode::read_write, s);
      p.synchronize(s);
    }
  }
  p.publish();
  pool_stats const want = p.stats();
  ASSERT_EQ(want.planner_state, "planned");
  ASSERT_GT(want.planned_prefetches, 0U);
  ASSERT_GE(want.planner_periods_prefetching, 4U);
  ASSERT_GT(want.planner_periods_without, 0U);
  ASSERT_GT(want.planner_period_seconds_prefetching, 0.0);
  EXPECT_NE(p.summary().find("planner prefetching "), std::string::npos) << p.summary();
  pool_stats const got = read_published_pool(seg).stats;
  EXPECT_EQ(got.planner_prefetching, want.planner_prefetching);
  EXPECT_EQ(got.planner_periods_prefetching, want.planner_periods_prefetching);
  EXPECT_EQ(got.planner_periods_without, want.planner_periods_without);
  EXPECT_EQ(got.planner_period_seconds_prefetching, want.planner_period_seconds_prefetching);
  EXPECT_EQ(got.planner_period_seconds_without, want.planner_period_seconds_without);
  EXPECT_EQ(got.planner_state, want.planner_state);
  EXPECT_EQ(got.planner_period, want.planner_period);
  EXPECT_EQ(got.planner_relearns, want.planner_relearns);
  EXPECT_EQ(got.planner_busy_skips, want.planner_busy_skips);
  EXPECT_EQ(got.planned_prefetches, want.planned_prefetches);
  EXPECT_EQ(got.planned_prefetch_bytes, want.planned_prefetch_bytes);
  EXPECT_EQ(got.plan_harm_skips, want.plan_harm_skips);
  EXPECT_EQ(got.early_write_backs, want.early_write_backs);
  EXPECT_EQ(got.early_write_backs_wasted, want.early_write_backs_wasted);
  EXPECT_EQ(got.early_write_back_wasted_bytes, want.early_write_back_wasted_bytes);
  EXPECT_EQ(got.prefetch_on_time_device, want.prefetch_on_time_device);
  EXPECT_EQ(got.prefetch_late_device, want.prefetch_late_device);
  EXPECT_GT(got.prefetch_on_time_device + got.prefetch_late_device, 0U) << "a virtual clock judges in device time";
  EXPECT_DOUBLE_EQ(got.prefetch_lateness_seconds, want.prefetch_lateness_seconds);
  EXPECT_DOUBLE_EQ(got.prefetch_lead_seconds, want.prefetch_lead_seconds);
  EXPECT_EQ(got.prefetch_wasted_bytes, want.prefetch_wasted_bytes);
  // Which policy and predictor ran, with their parameters (what `tierpool top` shows).
  EXPECT_EQ(got.prefetch, want.prefetch);
  EXPECT_EQ(got.prefetch.rfind("plan:", 0), 0U) << got.prefetch;
  ASSERT_EQ(got.tiers.size(), want.tiers.size());
  for (std::size_t k = 0; k < got.tiers.size(); ++k) {
    EXPECT_EQ(got.tiers[k].policy, want.tiers[k].policy);
    EXPECT_EQ(got.tiers[k].policy.rfind("lru:", 0), 0U) << got.tiers[k].policy;
  }
  // rw leases leave the device copies dirty: the summary says which write-backs were whose.
  std::uint64_t at_eviction = 0;
  for (tier_stats const& t : want.tiers) { at_eviction += t.evictions - t.evictions_clean; }
  EXPECT_GT(at_eviction + want.early_write_backs, 0U);
  EXPECT_NE(p.summary().find("write-backs: at eviction " + std::to_string(at_eviction) + ", early " +
                             std::to_string(want.early_write_backs)),
            std::string::npos)
    << p.summary();
  for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
}

TEST(Monitor, SegmentGoesWithThePool)
{
  std::string seg;
  {
    pool p(published("short-lived"));
    seg = p.stats_segment();
    ASSERT_TRUE(segment_exists(seg));
    published_scan const scan = scan_published_pools();
    EXPECT_TRUE(std::any_of(scan.pools.begin(), scan.pools.end(),
                            [&](published_pool const& q) { return q.segment == seg && q.name == "short-lived"; }));
    p.close();
    EXPECT_FALSE(segment_exists(seg));
    EXPECT_EQ(p.stats_segment(), "");
    p.publish();  // a no-op once closed
  }
  try {
    (void)read_published_pool(seg);
    ADD_FAILURE() << "read a removed segment";
  } catch (stats_segment_error const& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/shm/" + seg), std::string::npos) << e.what();
  }
  // Destruction without close() removes it too.
  {
    pool p(published("destroyed"));
    seg = p.stats_segment();
    ASSERT_TRUE(segment_exists(seg));
  }
  EXPECT_FALSE(segment_exists(seg));
}

TEST(Monitor, RefreshThreadKeepsTheSegmentCurrent)
{
  pool p(published("refreshing", 5));
  std::string const seg = p.stats_segment();
  std::vector<tensor> ts;
  for (int i = 0; i < 3; ++i) { ts.push_back(p.allocate(64_KiB)); }
  // Bounded poll: the thread refreshes every 5 ms; nothing here calls publish().
  published_pool got = read_published_pool(seg);
  for (auto const deadline = std::chrono::steady_clock::now() + 20s;
       got.stats.tensors != 3 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(1ms);
    got = read_published_pool(seg);
  }
  EXPECT_EQ(got.stats.tensors, 3U);
  EXPECT_EQ(got.stats.tensor_bytes, 192_KiB);
  EXPECT_GE(got.updates, 2U);
  EXPECT_EQ(got.interval_ms, 5U);
}

TEST(Monitor, IntervalZeroPublishesOnlyWhenAsked)
{
  pool p(published("by-hand", 0));
  tensor t = p.allocate(64_KiB);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(read_published_pool(p.stats_segment()).stats.tensors, 0U);  // as at construction
  p.publish();
  EXPECT_EQ(read_published_pool(p.stats_segment()).stats.tensors, 1U);
}

TEST(Monitor, DisabledByOptionOrEnvironment)
{
  pool_options off = published("off");
  off.publish.enabled = false;
  pool a(off);
  EXPECT_EQ(a.stats_segment(), "");
  EXPECT_EQ(a.publishing_error(), "");
  a.publish();  // no-op

  pool_options env_read = published("env");
  env_read.read_environment = true;
  {
    env_guard const g("TIERPOOL_PUBLISH", "0");
    pool b(env_read);
    EXPECT_EQ(b.stats_segment(), "");
  }
  {
    pool_options on = env_read;
    on.publish.enabled = false;
    env_guard const g("TIERPOOL_PUBLISH", "on");
    pool c(on);
    EXPECT_NE(c.stats_segment(), "");
  }
  env_guard const g("TIERPOOL_PUBLISH", "sometimes");
  try {
    pool d(env_read);
    ADD_FAILURE() << "TIERPOOL_PUBLISH=sometimes accepted";
  } catch (logic_error const& e) {
    EXPECT_STREQ(e.what(), "TIERPOOL_PUBLISH: expected 0 or 1 (or off / on), got 'sometimes'");
  }
}

// Publishing is best effort: with no file descriptor left (shm_open fails with EMFILE) the
// pool is built, says why it does not publish, and works. In a child process, so that the
// limit does not reach the other tests.
TEST(Monitor, APoolThatCannotPublishWorksAsUsual)
{
#if defined(__SANITIZE_ADDRESS__)
  // The AddressSanitizer / UBSan runtimes need descriptors of their own (UBSan's vptr
  // check then reports a false "invalid vptr"); the plain and TSan builds run this.
  GTEST_SKIP() << "needs a process without file descriptors, which the ASan/UBSan runtime cannot live in";
#endif
  pid_t const child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 0;
    try {
      auto be = make_sim();  // before the limit: the sim backend needs nothing from it
      pool_options o = small_tiers(be);
      o.publish = {.enabled = true, .name = "no-fds", .interval_ms = 0};
      o.notice = fallback_notice::silent;
      rlimit const none{.rlim_cur = 0, .rlim_max = 0};
      if (::setrlimit(RLIMIT_NOFILE, &none) != 0) { ::_exit(10); }
      pool p(o);
      if (!p.stats_segment().empty()) { code = 11; }
      if (p.publishing_error().find("creating /dev/shm/tierpool.") != 0 ||
          p.publishing_error().find("Too many open files") == std::string::npos) {
        code = 12;
      }
      tensor t = p.allocate(64_KiB);
      fill(p, t, 5, 1);
      if (!check(p, t, 5, 1) || !p.validate()) { code = 13; }
      p.publish();  // a no-op
    } catch (...) {
      code = 14;
    }
    ::_exit(code);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "10: setrlimit, 11: published anyway, 12: no reason, 13: pool broken, 14: threw";
}

TEST(Monitor, FiguresBeyondTheArraysAreCounted)
{
  pool p(published("many-tenants"));
  std::vector<tensor> ts;
  for (std::uint32_t t = 0; t < 20; ++t) { ts.push_back(p.allocate(4_KiB, {.tenant = t})); }
  p.publish();
  published_pool const got = read_published_pool(p.stats_segment());
  EXPECT_EQ(got.tenant_count, 20U);
  ASSERT_EQ(got.stats.tenants.size(), telemetry::kMaxTenants);
  EXPECT_EQ(got.stats.tenants.back().tenant, telemetry::kMaxTenants - 1);
  EXPECT_EQ(got.stats.tensors, 20U);
}

// The seqlock: a reader racing a writer gets one whole copy or retries, never a mix. The
// source makes every counter the same number, so a torn copy shows as two different ones.
TEST(Monitor, ReaderNeverSeesATornCopy)
{
  std::atomic<std::uint64_t> k{0};
  auto source = [&k] {
    std::uint64_t const v = k.fetch_add(1, std::memory_order_relaxed);
    pool_stats st;
    st.tensors = st.tensor_bytes = st.acquires = st.hits = st.misses = st.bytes_h2d = st.bytes_d2h = v;
    st.prefetch_hits = st.prefetch_late = st.low_memory_callbacks = v;
    for (int t = 0; t < 4; ++t) {
      tier_stats ts;
      ts.name = "tier" + std::to_string(v);
      ts.capacity_bytes = ts.reserved_bytes = ts.pinned_bytes = ts.evictions = v;
      st.tiers.push_back(ts);
    }
    return st;
  };
  std::string why;
  auto pub = telemetry::publisher::create("torn", "sim", "simulated device", 0, source, why);
  ASSERT_NE(pub, nullptr) << why;
  // The writer rewrites far more often than a pool does (every 500 ms by default), with
  // a short pause so that a reader can also win; a reader that loses every retry gets a
  // typed "kept rewriting" error, never a mixed copy.
  std::jthread writer([&](std::stop_token const& stop) {
    while (!stop.stop_requested()) {
      pub->publish();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  std::uint64_t last = 0;
  int reads = 0;
  int busy = 0;
  for (auto const end = std::chrono::steady_clock::now() + 300ms; std::chrono::steady_clock::now() < end;) {
    published_pool got;
    try {
      got = read_published_pool(pub->segment());
    } catch (stats_segment_error const& e) {
      ASSERT_NE(std::string(e.what()).find("kept rewriting"), std::string::npos) << e.what();
      ++busy;
      continue;
    }
    ++reads;
    pool_stats const& s = got.stats;
    std::uint64_t const v = s.tensors;
    ASSERT_EQ(s.tensor_bytes, v);
    ASSERT_EQ(s.misses, v);
    ASSERT_EQ(s.low_memory_callbacks, v);
    ASSERT_EQ(s.tiers.size(), 4U);
    ASSERT_EQ(s.tiers[3].evictions, v);
    ASSERT_EQ(s.tiers[3].name, "tier" + std::to_string(v));
    ASSERT_GE(v, last);  // never older than a copy already seen
    last = v;
  }
  writer.request_stop();
  writer.join();
  EXPECT_GT(reads, 10) << busy << " reads found the writer busy";
  EXPECT_GT(last, 0U);
}

TEST(Monitor, BadSegmentsAreRefusedWithReasons)
{
  std::string const base = "tierpool." + std::to_string(::getpid()) + ".90";
  auto reason = [](std::string const& seg) {
    try {
      (void)read_published_pool(seg);
    } catch (stats_segment_error const& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  char junk[64] = "not a tierpool segment";
  raw_segment const small(base + "1", junk, sizeof junk);
  EXPECT_NE(reason(small.name).find("too small for a tierpool stats segment (64 bytes"), std::string::npos)
    << reason(small.name);

  std::vector<char> zeros(sizeof(telemetry::segment_layout), 'x');
  raw_segment const foreign(base + "2", zeros.data(), zeros.size());
  EXPECT_NE(reason(foreign.name).find("not a tierpool stats segment (bad magic"), std::string::npos);

  pool p(published("template"));
  telemetry::segment_layout lay = read_layout(p.stats_segment());
  lay.version = telemetry::kVersion + 1;  // a newer tierpool's
  raw_segment const future(base + "3", &lay, sizeof lay);
  EXPECT_NE(reason(future.name).find("layout version " + std::to_string(telemetry::kVersion + 1)), std::string::npos) << reason(future.name);

  lay.version = telemetry::kVersion;
  lay.seq = 3;  // a writer that died mid-write: odd forever
  raw_segment const stuck(base + "4", &lay, sizeof lay);
  EXPECT_NE(reason(stuck.name).find("kept rewriting"), std::string::npos) << reason(stuck.name);

  EXPECT_NE(reason("../etc/passwd").find("not a segment name"), std::string::npos);
  EXPECT_NE(reason("tierpool.0.0").find("No such file"), std::string::npos) << reason("tierpool.0.0");

  // A scan reports each and still returns the good pool.
  published_scan const scan = scan_published_pools();
  for (std::string const& n : {small.name, foreign.name, future.name, stuck.name}) {
    EXPECT_TRUE(std::any_of(scan.skipped.begin(), scan.skipped.end(),
                            [&](std::string const& s) { return s.rfind(n + ": ", 0) == 0; }))
      << n;
  }
  EXPECT_TRUE(std::any_of(scan.pools.begin(), scan.pools.end(),
                          [&](published_pool const& q) { return q.segment == p.stats_segment(); }));
}

TEST(Monitor, SegmentsOfExitedProcessesAreSkippedAndCleaned)
{
  pid_t const child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) { ::_exit(0); }
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);

  pool p(published("survivor"));
  telemetry::segment_layout lay = read_layout(p.stats_segment());
  lay.payload.pid = child;
  std::string const dead = "tierpool." + std::to_string(child) + ".1";
  raw_segment const stale(dead, &lay, sizeof lay);

  published_scan const live_only = scan_published_pools();
  EXPECT_FALSE(std::any_of(live_only.pools.begin(), live_only.pools.end(),
                           [&](published_pool const& q) { return q.segment == dead; }));
  published_scan const all = scan_published_pools(true);
  auto const it = std::find_if(all.pools.begin(), all.pools.end(),
                               [&](published_pool const& q) { return q.segment == dead; });
  ASSERT_NE(it, all.pools.end());
  EXPECT_FALSE(it->alive);
  EXPECT_EQ(it->name, "survivor");

  std::vector<std::string> const removed = remove_exited_pools();
  EXPECT_NE(std::find(removed.begin(), removed.end(), dead), removed.end());
  EXPECT_FALSE(segment_exists(dead));
  EXPECT_TRUE(segment_exists(p.stats_segment()));  // ours is live: kept
}

// Issue 12 item 6: a segment only ftruncate()d is sparse; with /dev/shm full, the first
// store to it killed the process with SIGBUS and left the file. Its pages are reserved at
// creation now: a full /dev/shm is a publishing error, the pool works, no file is left.
// In a child with a mount namespace of its own and a 64 KiB tmpfs, filled, on /dev/shm.
TEST(Monitor, AFullShmIsAnErrorAtCreationNotASigbus)
{
  int const code = in_child([] {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=64k,mode=1777") != 0) {
      return kSkip;
    }
    {
      std::ofstream filler("/dev/shm/fill", std::ios::binary);
      std::vector<char> const block(4096, 'x');
      for (int i = 0; i < 64 && filler.write(block.data(), static_cast<std::streamsize>(block.size())); ++i) {}
    }
    pool_options o = published("full-shm");
    o.notice = fallback_notice::silent;
    pool p(o);
    if (!p.stats_segment().empty()) { return 11; }
    if (p.publishing_error().find("reserving " + std::to_string(sizeof(telemetry::segment_layout)) +
                                  " bytes for /dev/shm/tierpool.") != 0 ||
        p.publishing_error().find("No space left on device") == std::string::npos) {
      std::fprintf(stderr, "publishing_error: %s\n", p.publishing_error().c_str());
      return 12;
    }
    if (has_segment_files("/dev/shm")) { return 13; }
    tensor t = p.allocate(64_KiB);
    fill(p, t, 9, 1);
    p.publish();  // a no-op
    return check(p, t, 9, 1) && p.validate() ? 0 : 14;
  });
  if (code == kSkip) { GTEST_SKIP() << "cannot mount a tmpfs on /dev/shm in a mount namespace of its own (needs CAP_SYS_ADMIN)"; }
  EXPECT_EQ(code, 0) << "-7: SIGBUS; 11: published anyway; 12: no reason; 13: segment left behind; 14: pool broken";
}

// Issue 12 item 16: segments name the program's tensors and tiers; only the owner (and
// root) may read them, whatever the umask.
TEST(Monitor, SegmentsAreOwnerOnlyByDefault)
{
  mode_t const old_mask = ::umask(0);
  pool p(published("private"));
  ::umask(old_mask);
  ASSERT_FALSE(p.stats_segment().empty()) << p.publishing_error();
  struct ::stat sb {};
  ASSERT_EQ(::stat(("/dev/shm/" + p.stats_segment()).c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 07777U, 0600U);
  EXPECT_TRUE(S_ISREG(sb.st_mode));
  EXPECT_EQ(sb.st_uid, ::geteuid());
}

TEST(Monitor, PublishGroupLetsThatGroupRead)
{
  auto mode_and_group = [](pool const& p) {
    struct ::stat sb {};
    EXPECT_EQ(::stat(("/dev/shm/" + p.stats_segment()).c_str(), &sb), 0) << p.stats_segment();
    return std::pair<unsigned, gid_t>(sb.st_mode & 07777U, sb.st_gid);
  };
  // By number, and by name (our own group: any process may give a file to it).
  gid_t const mine = ::getegid();
  pool_options o = published("group-by-number");
  o.publish.group = std::to_string(mine);
  pool a(o);
  ASSERT_FALSE(a.stats_segment().empty()) << a.publishing_error();
  EXPECT_EQ(mode_and_group(a), (std::pair<unsigned, gid_t>(0640U, mine)));
  if (::group const* g = ::getgrgid(mine); g != nullptr) {
    o.publish.group = g->gr_name;
    pool b(o);
    ASSERT_FALSE(b.stats_segment().empty()) << b.publishing_error();
    EXPECT_EQ(mode_and_group(b), (std::pair<unsigned, gid_t>(0640U, mine)));
  }
  // Another group, given by TIERPOOL_PUBLISH_GROUP (which wins over the field), where we
  // may (root may give a file to any group).
  if (::geteuid() == 0) {
    pool_options e = published("group-from-env");
    e.publish.group = "0";
    e.read_environment = true;
    env_guard const g("TIERPOOL_PUBLISH_GROUP", "65534");
    pool c(e);
    ASSERT_FALSE(c.stats_segment().empty()) << c.publishing_error();
    EXPECT_EQ(mode_and_group(c), (std::pair<unsigned, gid_t>(0640U, 65534)));
    e.ignore_environment = {"TIERPOOL_PUBLISH_GROUP"};  // the program decides: the field wins
    pool f(e);
    ASSERT_FALSE(f.stats_segment().empty()) << f.publishing_error();
    EXPECT_EQ(mode_and_group(f), (std::pair<unsigned, gid_t>(0640U, 0)));
  }
  // No such group: a publishing error, the pool works, nothing is left behind.
  pool_options bad = published("no-group");
  bad.publish.group = "no-such-group-tierpool";
  bad.notice = fallback_notice::silent;
  pool d(bad);
  EXPECT_EQ(d.stats_segment(), "");
  EXPECT_EQ(d.publishing_error(), "publish.group 'no-such-group-tierpool': no such group");
  tensor t = d.allocate(4_KiB);
  EXPECT_TRUE(d.validate());
}

// Issue 12 item 16: a segment another user may not read is skipped with a reason that
// says so (mode, owner). As the user nobody, in a child; root could read anything.
TEST(Monitor, ASegmentThatMayNotBeReadIsSkippedWithThatReason)
{
  pool p(published("not-yours"));
  std::string const seg = p.stats_segment();
  ASSERT_FALSE(seg.empty()) << p.publishing_error();
  std::string const owner = std::to_string(::geteuid());
  std::string const group = std::to_string(::getegid());
  int const code = in_child([&] {
    if (!become_nobody()) { return kSkip; }
    try {
      (void)read_published_pool(seg);
      return 11;  // read: the segment is readable by others
    } catch (stats_segment_error const& e) {
      std::string const want = "stats segment /dev/shm/" + seg + ": not permitted to read it (mode 0600, owner uid " +
                               owner + ", group gid " + group + ")";
      if (std::string(e.what()).rfind(want, 0) != 0 ||
          std::string(e.what()).find("publish_options::group") == std::string::npos) {
        std::fprintf(stderr, "%s\n", e.what());
        return 12;
      }
    }
    published_scan const scan = scan_published_pools();
    bool const said = std::any_of(scan.skipped.begin(), scan.skipped.end(), [&](std::string const& s) {
      return s.rfind(seg + ": ", 0) == 0 && s.find("not permitted to read it") != std::string::npos;
    });
    return said ? 0 : 13;
  });
  if (code == kSkip) { GTEST_SKIP() << "cannot become the user nobody (not root?)"; }
  EXPECT_EQ(code, 0) << "11: read another user's segment; 12: wrong reason; 13: the scan did not say";
}

// Issue 12 item 8: /dev/shm is world-writable, so anyone may put a FIFO (opening one
// blocks until a writer comes) or a link there under a segment's name. They are refused
// without being waited on. In a child bounded by alarm(): before, the read hung.
TEST(Monitor, AFifoOrALinkNamedLikeASegmentIsRefusedNotWaitedOn)
{
  pool p(published("beside-a-fifo"));
  std::string const base = "tierpool." + std::to_string(::getpid()) + ".95";
  std::string const fifo = base + "1";
  std::string const link = base + "2";
  std::string const dir = base + "3";
  ASSERT_EQ(::mkfifo(("/dev/shm/" + fifo).c_str(), 0666), 0) << std::strerror(errno);
  ASSERT_EQ(::symlink(("/dev/shm/" + p.stats_segment()).c_str(), ("/dev/shm/" + link).c_str()), 0);
  ASSERT_EQ(::mkdir(("/dev/shm/" + dir).c_str(), 0700), 0);
  struct cleanup {
    std::vector<std::string> names;
    ~cleanup()
    {
      for (std::string const& n : names) { ::remove(("/dev/shm/" + n).c_str()); }
    }
  } const guard{{fifo, link, dir}};
  int const code = in_child(
    [&] {
      auto reason = [](std::string const& seg) {
        try {
          (void)read_published_pool(seg);
        } catch (stats_segment_error const& e) {
          return std::string(e.what());
        }
        return std::string("(read)");
      };
      if (reason(fifo) != "stats segment /dev/shm/" + fifo + ": a FIFO, not a stats segment") { return 11; }
      if (reason(link) != "stats segment /dev/shm/" + link + ": a symbolic link, not a stats segment") { return 12; }
      if (reason(dir) != "stats segment /dev/shm/" + dir + ": a directory, not a stats segment") { return 13; }
      published_scan const scan = scan_published_pools();
      bool const fifo_skipped = std::any_of(scan.skipped.begin(), scan.skipped.end(),
                                            [&](std::string const& s) { return s.rfind(fifo + ": ", 0) == 0; });
      bool const pool_read = std::any_of(scan.pools.begin(), scan.pools.end(),
                                         [&](published_pool const& q) { return q.segment == p.stats_segment(); });
      return fifo_skipped && pool_read ? 0 : 14;
    },
    20);
  EXPECT_EQ(code, 0) << "-14: hung (SIGALRM); 11: FIFO, 12: link, 13: directory not refused as such; 14: scan";
}

// A segment's owner may shrink it while `tierpool top` reads it (truncate it and write it
// back, again and again). The reader used to map the file: a load past the new end killed
// it with SIGBUS. It reads with pread now: a short read is an error about that segment,
// and the other reads see the whole record.
TEST(Monitor, ASegmentShrunkWhileReadIsAnErrorNotASigbus)
{
  // The layout of a real segment, copied; the pool is gone before anything forks: a child
  // forked while the pool's refresh thread holds an allocator lock would hang on its first
  // allocation (it did, under AddressSanitizer).
  telemetry::segment_layout lay{};
  {
    pool p(published("shrinking"));
    p.publish();
    lay = read_layout(p.stats_segment());
  }
  std::string const fake = "tierpool." + std::to_string(::getpid()) + ".961";
  std::string const path = "/dev/shm/" + fake;
  int const fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  struct cleanup {
    std::string path;
    int fd;
    ~cleanup()
    {
      ::close(fd);
      ::remove(path.c_str());
    }
  } const guard{path, fd};
  ASSERT_EQ(::pwrite(fd, &lay, sizeof lay, 0), static_cast<ssize_t>(sizeof lay));
  // The shrinker and the reader are processes of their own, with no threads: a forked child
  // of this (multi-threaded) test may not start threads under ThreadSanitizer.
  std::fflush(nullptr);
  pid_t const shrinker = ::fork();
  ASSERT_GE(shrinker, 0);
  if (shrinker == 0) {
    ::alarm(60);
    // Each state lasts a few microseconds, so that a reader slowed down (a sanitizer, a
    // loaded machine) still meets both, a whole segment and a short one.
    for (;;) {
      if (::ftruncate(fd, 0) != 0) { ::_exit(1); }
      ::usleep(10);
      if (::pwrite(fd, &lay, sizeof lay, 0) != static_cast<ssize_t>(sizeof lay)) { ::_exit(1); }
      ::usleep(10);
    }
  }
  int const code = in_child(
    [&] {
      int whole = 0;
      int refused = 0;
      auto const t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20'000 || whole == 0 || refused == 0; ++i) {
        try {
          if (read_published_pool(fake).name == "shrinking") { ++whole; }
        } catch (stats_segment_error const&) {
          ++refused;
        }
        if (i > 2'000'000 || std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30)) { break; }
      }
      return whole > 0 && refused > 0 ? 0 : 11;
    },
    60);
  ::kill(shrinker, SIGKILL);
  ::waitpid(shrinker, nullptr, 0);
  EXPECT_EQ(code, 0) << "-7: SIGBUS; -14: hung; 11: never read whole, or never saw it short";
}

// Issue 12 item 9: what a segment says is another process's word. Text is made printable
// (no escape sequence or newline reaches a terminal; JSON stays valid UTF-8) and figures
// finite, and the pool is still shown.
TEST(Monitor, WhatASegmentSaysIsMadePrintableAndFinite)
{
  using telemetry::printable;
  EXPECT_EQ(printable("plain name"), "plain name");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80");  // kept
  EXPECT_EQ(printable("a\x1b[2Jb\nc\x7f"), "a\\x1b[2Jb\\nc\\x7f");
  EXPECT_EQ(printable("\xc2\x9b"), "\\xc2\\x9b");  // C1 CSI
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");            // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("x\xe2\x9c"), "x\\xe2\\x9c");          // cut short
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  // A long UTF-8 name is cut between characters, never inside one.
  std::array<char, 8> a{};
  telemetry::put_string(a, "abcdef\xc3\xa9xyz");  // 'é' would straddle the 7-byte limit
  EXPECT_EQ(telemetry::get_string(a), "abcdef");
  telemetry::put_string(a, "abcde\xc3\xa9xyz");  // 'é' ends at the limit
  EXPECT_EQ(telemetry::get_string(a), "abcde\xc3\xa9");

  pool p(published("template"));
  telemetry::segment_layout lay = read_layout(p.stats_segment());
  telemetry::put_string(lay.payload.name, "evil\x1b[2J\nname\xff");
  telemetry::put_string(lay.payload.tiers[0].name, "\xfe\x9b tier");
  lay.payload.tiers[1].fragmentation = std::numeric_limits<double>::quiet_NaN();
  lay.payload.stall_seconds = std::numeric_limits<double>::infinity();
  raw_segment const evil("tierpool." + std::to_string(::getpid()) + ".971", &lay, sizeof lay);
  published_pool const got = read_published_pool(evil.name);
  EXPECT_EQ(got.name, "evil\\x1b[2J\\nname\\xff");
  EXPECT_EQ(got.stats.tiers[0].name, "\\xfe\\x9b tier");
  EXPECT_EQ(got.stats.tiers[1].fragmentation, 0.0);
  EXPECT_EQ(got.stats.stall_seconds, 0.0);
  std::vector<std::string> const want{"stall_seconds was +infinity; shown as 0",
                                      "tier '" + got.stats.tiers[1].name + "' fragmentation was NaN; shown as 0"};
  EXPECT_EQ(got.problems, want);
  EXPECT_TRUE(read_published_pool(p.stats_segment()).problems.empty());
  // Its JSON is valid.
  EXPECT_NO_THROW((void)boost::json::parse(to_json(got.stats)));
}

// Issue 12 item 18: in /dev/shm (sticky) only a segment's owner or root may remove it;
// clean says which it could not remove and why. In a sticky directory of our own, so that
// no other test's cleaning races this one, as the user nobody.
TEST(Monitor, CleanSaysWhatItMayNotRemove)
{
  std::string dir;
  std::string stale;
  ASSERT_NO_FATAL_FAILURE(make_stale_segment_dir("/tmp/tierpool-clean-XXXXXX", dir, stale));
  int const code = in_child([&] {
    if (!become_nobody()) { return kSkip; }
    set_stats_segment_directory(dir);
    published_cleanup const done = clean_exited_pools();
    if (!done.removed.empty()) { return 11; }
    if (done.failed != std::vector<std::string>{stale + ": Operation not permitted"}) { return 12; }
    return 0;
  });
  bool const still_there = std::filesystem::exists(dir + "/" + stale);
  std::filesystem::remove_all(dir);
  if (code == kSkip) { GTEST_SKIP() << "cannot become the user nobody (not root?)"; }
  EXPECT_EQ(code, 0) << "11: removed another user's segment; 12: did not say why";
  EXPECT_TRUE(still_there);
}

#ifdef TIERPOOL_CLI
std::string run(std::string const& cmd)
{
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) { return out; }
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) != 0;) { out.append(buf, n); }
  EXPECT_EQ(::pclose(f), 0) << cmd;
  return out;
}

TEST(Monitor, TopShowsThisProcesssPool)
{
  pool p(published("top-test"));
  std::vector<tensor> ts;
  for (int i = 0; i < 3; ++i) {
    ts.push_back(p.allocate(512_KiB, {.tenant = 7}));
    fill(p, ts.back(), static_cast<std::uint64_t>(i), 1);
  }
  for (tensor const& t : ts) { (void)p.acquire(t, access_mode::read); }
  p.publish();
  pool_stats const want = p.stats();
  std::string const pid = std::to_string(::getpid());

  std::string const js = run(std::string(TIERPOOL_CLI) + " top --once --json --pid " + pid);
  boost::json::object const doc = boost::json::parse(js).as_object();
  boost::json::array const& pools = doc.at("pools").as_array();
  ASSERT_EQ(pools.size(), 1U) << js;
  boost::json::object const& q = pools[0].as_object();
  EXPECT_EQ(q.at("name").as_string(), "top-test");
  EXPECT_EQ(q.at("segment").as_string(), p.stats_segment());
  EXPECT_EQ(q.at("stats").at("tensors").to_number<std::uint64_t>(), 3U);
  EXPECT_EQ(q.at("stats").at("bytes_h2d").to_number<std::uint64_t>(), want.bytes_h2d);
  EXPECT_EQ(q.at("stats").at("tiers").as_array()[0].at("evictions").to_number<std::uint64_t>(), want.tiers[0].evictions);

  std::string const text = run(std::string(TIERPOOL_CLI) + " top -n 1 --pid " + pid);
  EXPECT_NE(text.find("tierpool top — 1 pool(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("pid " + pid + "  top-test  sim"), std::string::npos) << text;
  EXPECT_NE(text.find("tensors 3 (1.5 MiB)"), std::string::npos) << text;
  EXPECT_NE(text.find("tenant 7: 3 tensors, 1.5 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("  device "), std::string::npos) << text;
}

/// `cmd`'s standard output and exit status (bounded: run under timeout(1)).
std::pair<std::string, int> run_status(std::string const& cmd)
{
  std::string out;
  FILE* f = ::popen(("timeout 30 " + cmd).c_str(), "r");
  if (f == nullptr) { return {out, -1}; }
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) != 0;) { out.append(buf, n); }
  int const st = ::pclose(f);
  return {out, WIFEXITED(st) ? WEXITSTATUS(st) : -1};
}

// Issue 12 item 8: `top` never waits on a FIFO named like a segment; it says it skipped it.
TEST(Monitor, TopSkipsAFifoNamedLikeASegment)
{
  pool p(published("top-beside-a-fifo"));
  std::string const fifo = "tierpool." + std::to_string(::getpid()) + ".981";
  ASSERT_EQ(::mkfifo(("/dev/shm/" + fifo).c_str(), 0666), 0) << std::strerror(errno);
  auto const [js, rc] = run_status(std::string(TIERPOOL_CLI) + " top --once --json");
  ::unlink(("/dev/shm/" + fifo).c_str());
  ASSERT_EQ(rc, 0) << "124: timed out (waited on the FIFO)\n" << js;
  boost::json::object const doc = boost::json::parse(js).as_object();
  bool skipped = false;
  for (auto const& v : doc.at("skipped").as_array()) {
    skipped = skipped || std::string(v.as_string()).rfind(fifo + ": ", 0) == 0;
  }
  EXPECT_TRUE(skipped) << js;
  bool shown = false;
  for (auto const& v : doc.at("pools").as_array()) { shown = shown || v.at("segment").as_string() == p.stats_segment(); }
  EXPECT_TRUE(shown) << js;
}

// Issue 12 item 9: one segment with a bad name and non-finite figures neither breaks
// `top --json` for the others nor writes escape sequences or newlines to the terminal.
TEST(Monitor, TopShowsABadSegmentSafelyBesideTheOthers)
{
  pool p(published("good-pool"));
  telemetry::segment_layout lay = read_layout(p.stats_segment());
  telemetry::put_string(lay.payload.name, "bad\x1b[2J\npool\xff");
  telemetry::put_string(lay.payload.tiers[0].name, "t\xfe\r\n");
  lay.payload.tiers[0].fragmentation = std::numeric_limits<double>::quiet_NaN();
  lay.payload.stall_seconds = -std::numeric_limits<double>::infinity();
  raw_segment const bad("tierpool." + std::to_string(::getpid()) + ".982", &lay, sizeof lay);
  std::string const pid = std::to_string(::getpid());

  auto const [js, rc] = run_status(std::string(TIERPOOL_CLI) + " top --once --json --pid " + pid);
  ASSERT_EQ(rc, 0) << js;
  boost::json::object doc;
  ASSERT_NO_THROW(doc = boost::json::parse(js).as_object()) << js;
  boost::json::array const& pools = doc.at("pools").as_array();
  ASSERT_EQ(pools.size(), 2U) << js;
  for (auto const& v : pools) {
    if (v.at("segment").as_string() == bad.name) {
      EXPECT_EQ(v.at("name").as_string(), "bad\\x1b[2J\\npool\\xff");
      EXPECT_EQ(v.at("stats").at("tiers").as_array()[0].at("name").as_string(), "t\\xfe\\x0d\\n");
      EXPECT_EQ(v.at("problems").as_array().size(), 2U) << js;
    } else {
      EXPECT_EQ(v.at("name").as_string(), "good-pool");
      EXPECT_TRUE(v.at("problems").as_array().empty());
    }
  }

  auto const [text, trc] = run_status(std::string(TIERPOOL_CLI) + " top -n 1 --pid " + pid);
  ASSERT_EQ(trc, 0) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_NE(text.find("pid " + pid + "  bad\\x1b[2J\\npool\\xff  sim"), std::string::npos) << text;
  EXPECT_NE(text.find("pid " + pid + "  good-pool  sim"), std::string::npos) << text;
  EXPECT_NE(text.find("(segment corrected: stall_seconds was -infinity; shown as 0)"), std::string::npos) << text;
}

// Issue 12 item 16: `top` says when it skips a segment it may not read.
TEST(Monitor, TopSaysWhenItMayNotReadASegment)
{
  pool p(published("top-not-yours"));
  std::string const seg = p.stats_segment();
  int const code = in_child([&] {
    if (!become_nobody()) { return kSkip; }
    auto const [text, rc] = run_status(std::string(TIERPOOL_CLI) + " top --once");
    std::string const want = "skipped " + seg + ": stats segment /dev/shm/" + seg + ": not permitted to read it (mode 0600";
    if (rc != 0 || text.find(want) == std::string::npos) {
      std::fprintf(stderr, "%s", text.c_str());
      return 11;
    }
    return 0;
  });
  if (code == kSkip) { GTEST_SKIP() << "cannot become the user nobody (not root?)"; }
  EXPECT_EQ(code, 0);
}

// Issue 12 item 18: `top --clean` says which stale segments it could not remove and why,
// and ends with a non-zero status.
TEST(Monitor, TopCleanSaysWhatItCouldNotRemove)
{
  std::string dir;
  std::string stale;
  ASSERT_NO_FATAL_FAILURE(make_stale_segment_dir("/tmp/tierpool-topclean-XXXXXX", dir, stale));
  int const code = in_child([&] {
    if (!become_nobody()) { return kSkip; }
    auto const [text, rc] = run_status(std::string(TIERPOOL_CLI) + " top --clean --shm-dir " + dir);
    std::string const want = "could not remove " + dir + "/" + stale +
                             ": Operation not permitted\n0 stale segment(s) removed; 1 could not be removed "
                             "(only a segment's owner or root may remove it)\n";
    if (rc != 1 || text != want) {
      std::fprintf(stderr, "status %d:\n%s", rc, text.c_str());
      return 11;
    }
    return 0;
  });
  // And its owner can.
  auto const [text, rc] = run_status(std::string(TIERPOOL_CLI) + " top --clean --shm-dir " + dir);
  std::filesystem::remove_all(dir);
  if (code == kSkip) { GTEST_SKIP() << "cannot become the user nobody (not root?)"; }
  EXPECT_EQ(code, 0);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(text, "removed " + dir + "/" + stale + "\n1 stale segment(s) removed\n");
}
#endif

}  // namespace
}  // namespace tierpool::test

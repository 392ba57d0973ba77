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

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "telemetry/stats_segment.hpp"
#include "unit/pool_test_util.hpp"

namespace tierpool::test {
namespace {

using namespace std::chrono_literals;

pool_options published(std::string const& name, std::uint32_t interval_ms = 0)
{
  pool_options o = small_tiers(make_sim());
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
      if (p.publishing_error().find("shm_open(/tierpool.") != 0 ||
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
  lay.version = 7;
  raw_segment const future(base + "3", &lay, sizeof lay);
  EXPECT_NE(reason(future.name).find("layout version 7"), std::string::npos) << reason(future.name);

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
#endif

}  // namespace
}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// log_tests.cpp — the library's messages (include/tierpool/log.hpp): level names and
// filtering, a capturing sink seeing the fallback notice, validate() violations, a trace
// that stopped and a pool destroyed with live leases; restoring the default sink (stderr);
// replacing the sink while other threads log (never calling a replaced sink); misuse from
// inside the sink; TIERPOOL_LOG_LEVEL (in a child process: it is read once per process);
// and a scan of the sources: nothing in the library writes to stderr but the default sink.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/backend_factory.hpp>
#include <tierpool/log.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/pool.hpp>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

/// Captures every message while it lives; restores the default sink and the level after.
class capture {
 public:
  explicit capture(log_level level = log_level::debug) : old_level_(get_log_level())
  {
    set_log_level(level);
    set_log_sink([this](log_level l, std::string_view m) {
      std::lock_guard lock(mtx_);
      lines_.emplace_back(l, std::string(m));
    });
  }
  capture(capture const&) = delete;
  capture& operator=(capture const&) = delete;
  ~capture()
  {
    set_log_sink({});
    set_log_level(old_level_);
  }
  [[nodiscard]] std::vector<std::pair<log_level, std::string>> lines() const
  {
    std::lock_guard lock(mtx_);
    return lines_;
  }
  /// The messages that contain `part`.
  [[nodiscard]] std::vector<std::pair<log_level, std::string>> with(std::string_view part) const
  {
    std::vector<std::pair<log_level, std::string>> out;
    for (auto const& l : lines()) {
      if (l.second.find(part) != std::string::npos) { out.push_back(l); }
    }
    return out;
  }

 private:
  log_level old_level_;
  mutable std::mutex mtx_;
  std::vector<std::pair<log_level, std::string>> lines_;
};

TEST(Log, LevelNamesRoundTripAndParseIgnoringCase)
{
  for (log_level const l : {log_level::debug, log_level::info, log_level::warning, log_level::error, log_level::off}) {
    EXPECT_EQ(parse_log_level(to_string(l)), l) << to_string(l);
  }
  EXPECT_EQ(parse_log_level("WARN"), log_level::warning);
  EXPECT_EQ(parse_log_level("Error"), log_level::error);
  EXPECT_EQ(parse_log_level(""), std::nullopt);
  EXPECT_EQ(parse_log_level("verbose"), std::nullopt);
}

TEST(Log, TheLevelFiltersWhatTheSinkSees)
{
  capture c(log_level::warning);
  EXPECT_FALSE(log_enabled(log_level::info));
  EXPECT_TRUE(log_enabled(log_level::warning));
  log_message(log_level::debug, "tierpool: d");
  log_message(log_level::info, "tierpool: i");
  log_message(log_level::warning, "tierpool: w");
  log_message(log_level::error, "tierpool: e");
  log_message(log_level::off, "tierpool: never");  // not a message level: dropped
  using lines = std::vector<std::pair<log_level, std::string>>;
  EXPECT_EQ(c.lines(), (lines{{log_level::warning, "tierpool: w"}, {log_level::error, "tierpool: e"}}));

  set_log_level(log_level::debug);
  EXPECT_EQ(get_log_level(), log_level::debug);
  log_message(log_level::debug, "tierpool: d2");
  EXPECT_EQ(c.lines().back(), (std::pair<log_level, std::string>{log_level::debug, "tierpool: d2"}));

  set_log_level(log_level::off);
  EXPECT_FALSE(log_enabled(log_level::error));
  log_message(log_level::error, "tierpool: e2");
  EXPECT_EQ(c.lines().size(), 3U);
}

TEST(Log, AnEmptySinkRestoresTheDefaultOnStderr)
{
  {
    capture c;
    testing::internal::CaptureStderr();
    log_message(log_level::error, "tierpool: to the sink");
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(c.lines().size(), 1U);
  }  // set_log_sink({})
  log_level const before = get_log_level();
  set_log_level(log_level::warning);
  testing::internal::CaptureStderr();
  log_message(log_level::warning, "tierpool: on stderr");
  log_message(log_level::info, "tierpool: filtered");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "tierpool: on stderr\n");
  set_log_level(before);
}

TEST(Log, TheSinkSeesTheFallbackNoticeAndSilentSendsNothing)
{
  capture c;
  backend_selection const loud = select_backend(backend_choice::automatic);
  if (!loud.fell_back) { GTEST_SKIP() << "a usable CUDA device is present: " << loud.reason; }
  auto const notices = c.with("using the simulated device");
  ASSERT_EQ(notices.size(), 1U);
  EXPECT_EQ(notices[0].first, log_level::warning);
  EXPECT_EQ(notices[0].second, "tierpool: " + loud.reason +
                                 "; to use it without this message choose it (TIERPOOL_BACKEND=sim, "
                                 "backend_choice::sim) or set fallback_notice::silent");
  backend_selection const quiet = select_backend(backend_choice::automatic, {}, 0, fallback_notice::silent);
  EXPECT_TRUE(quiet.fell_back);
  EXPECT_EQ(c.with("using the simulated device").size(), 1U);
}

// A policy whose own check fails: validate() reports it.
struct broken_policy {
  void on_insert(tensor_view const&) noexcept {}
  void on_access(tensor_view const&) noexcept {}
  void on_erase(tensor_id) noexcept {}
  void on_pin(tensor_id) noexcept {}
  void on_unpin(tensor_id) noexcept {}
  void propose(eviction_request const&, eviction_proposal&) {}
  [[nodiscard]] std::string_view name() const noexcept { return "broken"; }
  [[nodiscard]] bool validate() const noexcept { return false; }
};

TEST(Log, TheSinkSeesValidateViolationsAfterTheCheck)
{
  policy_registry reg = policy_registry::with_builtins();
  reg.add("broken", "fails its own check", {}, [](policy_params const&) { return any_eviction_policy{broken_policy{}}; });
  pool_options o = small_tiers(make_sim(), 1_MiB, 0, 16_MiB);
  o.registry = &reg;
  o.tiers[0].policy = "broken";
  o.publish.enabled = false;
  pool p{o};
  tensor t = p.allocate(4_KiB);
  // The sink runs after validate() reopened the pool: it may call the pool.
  std::size_t tensors_seen = 0;
  set_log_level(log_level::warning);
  std::vector<std::string> lines;
  set_log_sink([&](log_level l, std::string_view m) {
    EXPECT_EQ(l, log_level::error);
    lines.emplace_back(m);
    tensors_seen = p.stats().tensors;
  });
  EXPECT_FALSE(p.validate());
  set_log_sink({});
  EXPECT_EQ(lines, (std::vector<std::string>{"tierpool: pool::validate: tier device: policy broken: validate failed"}));
  EXPECT_EQ(tensors_seen, 1U);
}

TEST(Log, TheSinkSeesTheTraceWriteFailureOnce)
{
  if (!std::filesystem::exists("/dev/full")) { GTEST_SKIP() << "no /dev/full"; }
  capture c;
  std::string error;
  {
    pool_options o = small_tiers(make_sim());
    o.publish.enabled = false;
    o.trace_path = "/dev/full";
    pool p{o};
    tensor t = p.allocate(4_KiB);
    p.close();  // the buffered events are written here, into a full device
    error = p.tracing_error();
  }
  ASSERT_NE(error, "");
  auto const got = c.with("trace");
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].first, log_level::error);
  EXPECT_EQ(got[0].second, "tierpool: recording the trace stopped: " + error +
                             "; later events are not recorded; free space there or record to another path "
                             "(TIERPOOL_TRACE, pool_options::trace_path)");
}

TEST(Log, TheSinkSeesAPoolDestroyedWithLiveLeases)
{
  capture c;
  tensor t;
  lease l;
  {
    pool_options o = small_tiers(make_sim());
    o.publish.enabled = false;
    pool p{o};
    t = p.allocate(4_KiB, {.name = "kept"});
    l = p.acquire_host(t, access_mode::read);
  }
  auto const got = c.with("pool destroyed with live leases");
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].first, log_level::error);
  EXPECT_NE(got[0].second.find("1 lease(s) still live on tensors 1 'kept' (1)"), std::string::npos) << got[0].second;
  EXPECT_NE(got[0].second.find("; end every lease before destroying the pool"), std::string::npos) << got[0].second;
  l.release();
}

// set_log_sink waits for a message in progress: a sink that was replaced is never called
// again, so it may die at once. More threads than cores log while the sink is replaced.
TEST(Log, ReplacingTheSinkWhileThreadsLogNeverCallsAReplacedSink)
{
  log_level const before = get_log_level();
  set_log_level(log_level::info);
  unsigned const n_threads = std::max(4U, 2 * std::thread::hardware_concurrency());
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> sent{0};
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < n_threads; ++i) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        log_message(log_level::info, "tierpool: busy");
        sent.fetch_add(1);
      }
    });
  }
  std::atomic<int> late_calls{0};
  std::uint64_t delivered = 0;
  std::shared_ptr<std::atomic<bool>> alive;
  std::shared_ptr<std::uint64_t> count;
  for (int round = 0; round < 200; ++round) {
    auto next_alive = std::make_shared<std::atomic<bool>>(true);
    auto next_count = std::make_shared<std::uint64_t>(0);  // the sink's own state: no lock (one message at a time)
    set_log_sink([next_alive, next_count, &late_calls](log_level, std::string_view) {
      if (!next_alive->load()) { late_calls.fetch_add(1); }
      ++*next_count;
    });
    if (alive) {  // the sink just replaced is never called again
      alive->store(false);
      delivered += *count;
    }
    alive = next_alive;
    count = next_count;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  set_log_level(log_level::off);  // the threads' last messages go nowhere
  stop = true;
  for (auto& t : threads) { t.join(); }
  set_log_sink({});
  alive->store(false);
  delivered += *count;
  set_log_level(before);
  EXPECT_EQ(late_calls.load(), 0) << "a replaced sink was called after set_log_sink returned";
  EXPECT_GT(delivered, 0U);
  EXPECT_LE(delivered, sent.load());
}

TEST(Log, SettingTheSinkFromInsideItThrowsAndItsOwnMessagesAreDropped)
{
  capture outer;
  std::string what;
  int calls = 0;
  set_log_sink([&](log_level, std::string_view) {
    ++calls;
    log_message(log_level::error, "tierpool: from inside");  // dropped, not recursive
    try {
      set_log_sink({});
    } catch (logic_error const& e) {
      what = e.what();
    }
  });
  log_message(log_level::error, "tierpool: outer");
  set_log_sink({});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(what, "set_log_sink: called from inside the log sink (it holds the log lock); set the sink from outside it");
}

TEST(Log, AThrowingSinkIsSwallowed)
{
  capture outer;
  set_log_sink([](log_level, std::string_view) { throw std::runtime_error("sink"); });
  EXPECT_NO_THROW(log_message(log_level::error, "tierpool: x"));
  set_log_sink({});
}

// TIERPOOL_LOG_LEVEL is read once per process: the test runs this executable again with
// the variable set, and the child (TIERPOOL_LOG_TEST_CHILD set) prints the level it starts
// with, logs at info and error, and exits before any test runs.
int child_if_asked()
{
  if (std::getenv("TIERPOOL_LOG_TEST_CHILD") == nullptr) { return 0; }
  std::printf("level %s\n", std::string(to_string(get_log_level())).c_str());
  std::fflush(stdout);
  log_message(log_level::info, "tierpool: child info");
  log_message(log_level::error, "tierpool: child error");
  std::fflush(stderr);
  std::_Exit(0);
}
[[maybe_unused]] int const child_done = child_if_asked();

std::string run_child(std::string const& level, int& rc)
{
  std::string const cmd = "TIERPOOL_LOG_LEVEL='" + level + "' TIERPOOL_LOG_TEST_CHILD=1 " +
                          std::filesystem::read_symlink("/proc/self/exe").string() + " 2>&1";
  std::string out;
  FILE* const f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) {
    rc = -1;
    return out;
  }
  std::array<char, 4096> buf{};
  for (std::size_t n = 0; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) { out.append(buf.data(), n); }
  rc = ::pclose(f);
  return out;
}

TEST(LogEnvironment, TheVariableSetsTheFirstLevel)
{
  int rc = 0;
  std::string out = run_child("info", rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "level info\ntierpool: child info\ntierpool: child error\n");

  out = run_child("ERROR", rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "level error\ntierpool: child error\n");

  out = run_child("off", rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "level off\n");

  out = run_child("chatty", rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "tierpool: TIERPOOL_LOG_LEVEL: unknown level 'chatty' (valid: debug, info, warning, error, off); "
                 "using warning\nlevel warning\ntierpool: child error\n");
}

// Nothing in the library writes to stderr behind the sink's back: a scan of its sources
// (comments left out) for stderr, std::cerr, std::clog and perror outside log.cpp.
TEST(Log, NoLibrarySourceWritesToStderrButTheDefaultSink)
{
  std::filesystem::path const root = std::filesystem::path(TIERPOOL_TEST_FIXTURES).parent_path().parent_path();
  std::regex const word(R"((^|[^A-Za-z0-9_:])(stderr|std::cerr|std::clog|perror)([^A-Za-z0-9_]|$))");
  std::vector<std::string> found;
  std::size_t files = 0;
  for (char const* dir : {"runtime", "include", "policies"}) {
    for (auto const& e : std::filesystem::recursive_directory_iterator(root / dir)) {
      std::string const ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".in")) { continue; }
      if (e.path().filename() == "log.cpp" && e.path().parent_path().filename() == "util") { continue; }
      ++files;
      std::ifstream in(e.path());
      int n = 0;
      bool in_block = false;
      for (std::string line; std::getline(in, line);) {
        ++n;
        // Drop comments: block comments (doxygen) and line comments.
        std::string code;
        for (std::size_t i = 0; i < line.size(); ++i) {
          if (in_block) {
            if (line.compare(i, 2, "*/") == 0) {
              in_block = false;
              ++i;
            }
          } else if (line.compare(i, 2, "/*") == 0) {
            in_block = true;
            ++i;
          } else if (line.compare(i, 2, "//") == 0) {
            break;
          } else if (line[i] == '"') {  // a string literal: left out (it may hold "//" or the word)
            for (++i; i < line.size() && line[i] != '"'; ++i) {
              if (line[i] == '\\') { ++i; }
            }
            code += "\"\"";
          } else {
            code.push_back(line[i]);
          }
        }
        if (std::regex_search(code, word)) {
          found.push_back(std::filesystem::relative(e.path(), root).string() + ":" + std::to_string(n) + ": " + line);
        }
      }
    }
  }
  EXPECT_GT(files, 100U);
  EXPECT_TRUE(found.empty()) << "writes to stderr outside the log sink:\n" << testing::PrintToString(found);
}

}  // namespace
}  // namespace tierpool::test

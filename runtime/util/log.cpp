// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// log.cpp — owns the process-wide log state of include/tierpool/log.hpp: the level (from
// TIERPOOL_LOG_LEVEL or set_log_level) and the sink, and the default sink (stderr). The
// only place in the library that writes to stderr.
//
// Note [The log state outlives every pool]
// ----------------------------------------
// Rationale: a pool may be destroyed by a static object's destructor, or a backend's
// worker thread may report a host callable's exception while the program exits; a message
// then must not reach a sink (or a mutex) that static destruction already ended.
// Approach: the state is made at the first call (a function-local static, so its
// construction is thread-safe and reads the environment once) and never destroyed: one
// small allocation that is still reachable at exit, so leak checkers do not report it.
// One mutex guards the sink and is held while the sink runs: messages reach it one at a
// time, and set_log_sink() waits for a message in progress, so the old sink is never
// called after set_log_sink() returns (a test's capturing sink may die right after).
// The level is an atomic read before anything else: a message below it costs one load.
// Limitations: a sink that blocks holds up every thread that logs; messages logged by the
// sink itself (on the sink's thread) are dropped rather than delivered recursively.
#include <tierpool/error.hpp>
#include <tierpool/log.hpp>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

namespace tierpool {
namespace {

struct log_state {
  std::mutex mtx;  // guards sink; held while a sink runs
  log_sink sink;   // empty: stderr_log_sink
  std::atomic<log_level> level{log_level::warning};

  log_state()
  {
    char const* const env = std::getenv("TIERPOOL_LOG_LEVEL");
    if (env == nullptr || *env == '\0') { return; }
    if (auto const l = parse_log_level(env)) {
      level.store(*l, std::memory_order_relaxed);
      return;
    }
    // The program cannot have set a sink yet (this runs at the first log call).
    std::string const m = std::string("tierpool: TIERPOOL_LOG_LEVEL: unknown level '") + env +
                          "' (valid: debug, info, warning, error, off); using warning";
    stderr_log_sink(log_level::warning, m);
  }
};

log_state& state() noexcept
{
  static log_state* const s = new log_state();  // never destroyed: Note [The log state outlives every pool]
  return *s;
}

thread_local bool in_sink = false;  // this thread is inside the sink

}  // namespace

std::string_view to_string(log_level level) noexcept
{
  switch (level) {
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warning: return "warning";
    case log_level::error: return "error";
    case log_level::off: return "off";
  }
  return "unknown";
}

std::optional<log_level> parse_log_level(std::string_view text) noexcept
{
  std::string lower;
  try {
    lower.reserve(text.size());
    for (char const c : text) { lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c)))); }
  } catch (...) {
    return std::nullopt;
  }
  for (log_level const l : {log_level::debug, log_level::info, log_level::warning, log_level::error, log_level::off}) {
    if (lower == to_string(l)) { return l; }
  }
  if (lower == "warn") { return log_level::warning; }
  return std::nullopt;
}

void set_log_sink(log_sink sink)
{
  if (in_sink) {
    throw logic_error("set_log_sink: called from inside the log sink (it holds the log lock); set the sink from "
                      "outside it");
  }
  log_state& s = state();
  log_sink old;
  {
    std::lock_guard lock(s.mtx);  // waits for a message the old sink is handling
    old = std::exchange(s.sink, std::move(sink));
  }
}  // the old sink is destroyed here, with no lock held

void set_log_level(log_level level) noexcept { state().level.store(level, std::memory_order_relaxed); }

log_level get_log_level() noexcept { return state().level.load(std::memory_order_relaxed); }

bool log_enabled(log_level level) noexcept
{
  return level != log_level::off && level >= state().level.load(std::memory_order_relaxed);
}

void log_message(log_level level, std::string_view message) noexcept
{
  if (!log_enabled(level) || in_sink) { return; }
  log_state& s = state();
  try {
    std::lock_guard lock(s.mtx);
    in_sink = true;
    struct leave {
      ~leave() { in_sink = false; }
    } const guard;
    if (s.sink) {
      s.sink(level, message);
    } else {
      stderr_log_sink(level, message);
    }
  } catch (...) {  // the sink threw (or the lock failed): the message is dropped
  }
}

void stderr_log_sink(log_level level, std::string_view message) noexcept
{
  (void)level;
  try {
    std::string line;
    line.reserve(message.size() + 1);
    line.append(message);
    line.push_back('\n');
    (void)std::fwrite(line.data(), 1, line.size(), stderr);  // one write: lines of threads do not interleave
  } catch (...) {  // no memory for the line: two writes
    (void)std::fwrite(message.data(), 1, message.size(), stderr);
    (void)std::fputc('\n', stderr);
  }
}

}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// host_faults.cpp — owns the exceptions of host callables (host_faults.hpp).
//
// Note [Exceptions of host callables]
// -----------------------------------
// Rationale: pool::enqueue_host runs any callable in stream order on the backend's thread
// (a sim worker, CUDA's callback thread). An exception escaping there would end the
// process (the backend's host functions are C callbacks), and the thread that queued the
// callable has long moved on.
// Approach: the trampoline catches everything and hands it here, keyed by stream. The
// program meets it where it meets the stream's completion: the next pool::synchronize(s)
// rethrows the first exception (the exception object itself: its type is kept) and warns
// of how many more there were. Later work on the stream runs as queued; a callable's
// failure does not poison its stream (CUDA host functions cannot fail a stream either).
// Each stream's entry has an epoch that destroy_stream bumps: a callable queued before
// and failing after it (or after the pool's end, close()) can be reported by no
// synchronize, so it is logged (log_level::error) as it comes, as are the exceptions kept
// when the stream or the pool ends. Handles the backend reuses get a fresh epoch, so an
// old stream's exception never surfaces in a new stream's synchronize.
// Limitations: only the first exception per stream is kept between two synchronizes; a
// message logged on a backend thread runs the program's log sink there.
#include "streams/host_faults.hpp"

#include <tierpool/log.hpp>

#include <algorithm>
#include <utility>

namespace tierpool::detail {

std::uint64_t host_faults::enlist(stream_handle s)
{
  std::lock_guard lock(mtx_);
  for (entry const& e : entries_) {
    if (e.stream == s) { return e.epoch; }
  }
  entries_.push_back(entry{s, 0, nullptr, 0});
  return 0;
}

void host_faults::capture(stream_handle s, std::uint64_t epoch, std::exception_ptr e) noexcept
{
  bool orphan = true;
  {
    std::lock_guard lock(mtx_);
    if (!closed_) {
      for (entry& en : entries_) {
        if (en.stream != s || en.epoch != epoch) { continue; }
        orphan = false;
        if (en.first) {
          ++en.more;
        } else {
          en.first = e;
          pending_.fetch_add(1, std::memory_order_release);
        }
        break;
      }
    }
  }
  if (orphan) {
    try {
      log_unreported({entry{s, epoch, std::move(e), 0}}, "after its stream was destroyed or its pool ended");
    } catch (...) {  // no memory for the message
    }
  }
}

std::exception_ptr host_faults::take(stream_handle s, std::uint64_t& more) noexcept
{
  more = 0;
  if (pending_.load(std::memory_order_acquire) == 0) { return nullptr; }
  std::lock_guard lock(mtx_);
  for (entry& en : entries_) {
    if (en.stream != s || !en.first) { continue; }
    more = std::exchange(en.more, 0);
    pending_.fetch_sub(1, std::memory_order_relaxed);
    return std::exchange(en.first, nullptr);
  }
  return nullptr;
}

void host_faults::retire(stream_handle s) noexcept
{
  std::vector<entry> lost;
  {
    std::lock_guard lock(mtx_);
    for (entry& en : entries_) {
      if (en.stream != s) { continue; }
      ++en.epoch;
      if (en.first) {
        try {
          lost.push_back(en);
        } catch (...) {  // no memory: dropped unlogged
        }
        en.first = nullptr;
        en.more = 0;
        pending_.fetch_sub(1, std::memory_order_relaxed);
      }
    }
  }
  log_unreported(lost, "before pool::destroy_stream, and no pool::synchronize(stream) reported it");
}

void host_faults::close() noexcept
{
  std::vector<entry> lost;
  {
    std::lock_guard lock(mtx_);
    closed_ = true;
    for (entry& en : entries_) {
      if (en.first) {
        try {
          lost.push_back(en);
        } catch (...) {  // no memory: dropped unlogged
        }
      }
    }
    entries_.clear();
    pending_.store(0, std::memory_order_relaxed);
  }
  log_unreported(lost, "before its pool ended, and no pool::synchronize(stream) reported it");
}

std::string host_faults::describe(std::exception_ptr const& e)
{
  try {
    std::rethrow_exception(e);
  } catch (std::exception const& ex) {
    return std::string("'") + ex.what() + "'";
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

void host_faults::log_unreported(std::vector<entry> const& lost, char const* why) noexcept
{
  if (lost.empty() || !log_enabled(log_level::error)) { return; }
  for (entry const& en : lost) {
    try {
      std::string m = "tierpool: a host callable (pool::enqueue_host) on stream " + std::to_string(en.stream.value) +
                      " threw " + describe(en.first);
      if (en.more != 0) { m += " (and " + std::to_string(en.more) + " more after it)"; }
      m += std::string(" ") + why + "; call pool::synchronize(stream) before destroying the stream or the pool to "
                                    "get the exception";
      log_message(log_level::error, m);
    } catch (...) {  // no memory for the message
    }
  }
}

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_tracer.cpp — owns a pool's trace recording (pool_tracer.hpp).
#include "telemetry/pool_tracer.hpp"

#include <tierpool/log.hpp>

#include <exception>
#include <string>

namespace tierpool::detail {

void pool_tracer::open(std::string const& path, bool quiet)
{
  quiet_ = quiet;
  recorder_ = std::make_unique<trace::recorder>(path);
}

void pool_tracer::record(trace::event const& e) noexcept
{
  if (!recorder_) { return; }
  try {
    recorder_->record(e);
  } catch (std::exception const& ex) {  // the recorder has stopped: later events are dropped quietly
    report_failure(ex.what());
  }
}

void pool_tracer::close() noexcept
{
  if (!recorder_) { return; }
  try {
    recorder_->close();  // the last buffered events: a full disk shows here on a short run
  } catch (std::exception const& ex) {
    report_failure(ex.what());
  }
}

std::string pool_tracer::error() const { return recorder_ ? recorder_->error() : std::string(); }

void pool_tracer::report_failure(char const* what) noexcept
{
  if (reported_.exchange(true, std::memory_order_acq_rel)) { return; }  // once per pool
  if (quiet_) { return; }  // the program reports tracing_error() itself
  try {
    log_message(log_level::error, std::string("tierpool: recording the trace stopped: ") + what +
                                    "; later events are not recorded; free space there or record "
                                    "to another path (TIERPOOL_TRACE, pool_options::trace_path)");
  } catch (...) {  // no memory for the message: pool::tracing_error() still says why
  }
}

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// recorder.cpp — owns trace::recorder: a writer behind one mutex, for `TIERPOOL_TRACE=path`.
// The caller stamps each event; the recorder only serializes and buffers. The first write
// error stops the recording (include/tierpool/trace.hpp, "Failure"): it is thrown once,
// kept in error_, and every later call is a no-op, so a full disk costs one message, not
// one per event.
#include <tierpool/trace.hpp>

#include <cstdlib>
#include <utility>

namespace tierpool::trace {

recorder::recorder(std::filesystem::path path)
  : path_(std::move(path)), writer_(path_, output_format_for(path_))
{
}

recorder::~recorder() = default;  // writer_'s destructor flushes and closes

std::unique_ptr<recorder> recorder::from_environment(char const* variable)
{
  char const* const value = std::getenv(variable);  // NOLINT(concurrency-mt-unsafe): read once at startup
  if (value == nullptr || *value == '\0') { return nullptr; }
  return std::make_unique<recorder>(std::filesystem::path(value));
}

void recorder::stop(char const* what) noexcept
{
  try {
    error_ = what != nullptr && *what != '\0' ? what : "I/O error";
  } catch (...) {  // no memory for the message: still stopped
    error_ = "?";
  }
  try {
    writer_.close();  // releases the file; its buffer cannot be written either
  } catch (...) {  // NOLINT(bugprone-empty-catch): the first error is the one kept
  }
}

void recorder::record(event const& e)
{
  std::lock_guard const lock(mtx_);
  if (!error_.empty()) {
    ++dropped_;
    return;
  }
  if (closed_) { throw trace_error("trace '" + path_.string() + "': record after close"); }
  try {
    writer_.write(e);
  } catch (trace_error const& ex) {
    stop(ex.what());
    throw;
  }
}

void recorder::flush()
{
  std::lock_guard const lock(mtx_);
  if (!error_.empty() || closed_) { return; }
  try {
    writer_.flush();
  } catch (trace_error const& ex) {
    stop(ex.what());
    throw;
  }
}

void recorder::close()
{
  std::lock_guard const lock(mtx_);
  if (closed_) { return; }
  closed_ = true;
  if (!error_.empty()) { return; }
  try {
    writer_.close();
  } catch (trace_error const& ex) {
    stop(ex.what());
    throw;
  }
}

std::uint64_t recorder::events_recorded() const
{
  std::lock_guard const lock(mtx_);
  return writer_.events_written();
}

std::string recorder::error() const
{
  std::lock_guard const lock(mtx_);
  return error_;
}

std::uint64_t recorder::events_dropped() const
{
  std::lock_guard const lock(mtx_);
  return dropped_;
}

}  // namespace tierpool::trace

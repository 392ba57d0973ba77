// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// recorder.cpp — owns trace::recorder: a writer behind one mutex, for `TIERPOOL_TRACE=path`.
// The caller stamps each event; the recorder only serializes and buffers.
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

void recorder::record(event const& e)
{
  std::lock_guard const lock(mtx_);
  writer_.write(e);
}

void recorder::flush()
{
  std::lock_guard const lock(mtx_);
  writer_.flush();
}

void recorder::close()
{
  std::lock_guard const lock(mtx_);
  writer_.close();
}

std::uint64_t recorder::events_recorded() const
{
  std::lock_guard const lock(mtx_);
  return writer_.events_written();
}

}  // namespace tierpool::trace

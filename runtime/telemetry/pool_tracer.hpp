// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file pool_tracer.hpp
 * @brief Internal: a pool's trace recording (TIERPOOL_TRACE, pool_options::trace_path) —
 *        the recorder, and the one log message when recording stops (a full disk).
 *
 * Owns: the trace::recorder (layer trace, below). Never throws from record() or close():
 * a failure stops the recording, error() says why, and the pool goes on.
 */
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <tierpool/trace.hpp>

namespace tierpool::detail {

/// @brief The recording of one pool's calls. record() may be called from any thread.
class pool_tracer {
 public:
  /// @brief Start recording to `path`. `quiet`: no log message on failure (the program
  ///        reads error() itself). @throws trace_error when the file cannot be created
  void open(std::string const& path, bool quiet);
  /// @brief True when recording was started (it may have stopped since: error()).
  [[nodiscard]] bool active() const noexcept { return recorder_ != nullptr; }
  /// @brief Record `e` (its time already stamped). A failed write stops the recording.
  void record(trace::event const& e) noexcept;
  /// @brief Write what is buffered and close the file (idempotent), reporting a failure.
  void close() noexcept;
  /// @brief Why recording stopped; empty when it works or nothing is recorded.
  [[nodiscard]] std::string error() const;

 private:
  void report_failure(char const* what) noexcept;

  std::unique_ptr<trace::recorder> recorder_;  ///< null: not recording
  std::atomic<bool> reported_{false};          ///< the failure was logged (once)
  bool quiet_{false};                          ///< constant after open()
};

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file log.hpp
 * @brief The library's messages: a level and a sink the program sets. Every line tierpool
 *        writes on its own (a fallback to the simulated device, a trace that stopped,
 *        validate() violations, a pool destroyed with live leases, ...) goes through the
 *        sink; nothing in the library writes to stderr except the default sink.
 *
 * Defaults: the sink writes each message and a newline to stderr; the level is `warning`,
 * or what `TIERPOOL_LOG_LEVEL` says (`debug`, `info`, `warning`, `error`, `off`), read once
 * per process at the first message or level call. set_log_level() wins over the variable.
 * The chapter: docs/chapters/monitoring.md, "Messages and logging".
 *
 * Thread safety: every function may be called from any thread at any time. Messages are
 * handed to the sink one at a time (the sink needs no lock of its own), in the order their
 * threads reached it; set_log_sink() waits for a message the old sink is handling, so once
 * it returns the old sink is never called again.
 *
 * @code
 * std::vector<std::string> lines;
 * tierpool::set_log_sink([&](tierpool::log_level, std::string_view m) { lines.emplace_back(m); });
 * tierpool::set_log_level(tierpool::log_level::info);
 * ...
 * tierpool::set_log_sink({});  // back to stderr (before `lines` goes away)
 * @endcode
 */
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include <tierpool/export.hpp>

namespace tierpool {

/// @brief How much a message matters; a sink sees the messages at or above the log level.
enum class log_level : std::uint8_t {
  debug,    ///< details for whoever debugs tierpool itself
  info,     ///< what the library decided, for the curious
  warning,  ///< something the program should know (a fallback to the simulated device); the default level
  error,    ///< something failed and the library went on (a trace stopped, validate() found a violation)
  off,      ///< as a level: no message at all (never the level of a message)
};

/// @brief Lower-case name of a level ("debug", "info", "warning", "error", "off").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(log_level level) noexcept;

/**
 * @brief Parse a level's name as to_string() writes it (also `warn`), ignoring case.
 * @return The level, or std::nullopt when `text` names none.
 */
[[nodiscard]] TIERPOOL_EXPORT std::optional<log_level> parse_log_level(std::string_view text) noexcept;

/**
 * @brief Where messages go: called with the message's level and its text, one line
 *        without a newline, starting with "tierpool: ". Called on whichever thread the
 *        message arose on (a pool call's, or a backend's worker thread for a host callable
 *        whose exception no synchronize() can report), never under a pool lock, one
 *        message at a time. It must not call set_log_sink() (that throws); an exception
 *        from it is swallowed.
 */
using log_sink = std::function<void(log_level level, std::string_view message)>;

/**
 * @brief Send the library's messages to `sink` from now on; an empty sink restores the
 *        default (stderr). Waits until the old sink has finished a message it is handling:
 *        once this returns the old sink is not called again (and may be destroyed).
 * @throws tierpool::logic_error when called from inside the sink.
 */
TIERPOOL_EXPORT void set_log_sink(log_sink sink);

/// @brief Pass messages at `level` or above to the sink (`off`: none). Wins over TIERPOOL_LOG_LEVEL.
TIERPOOL_EXPORT void set_log_level(log_level level) noexcept;

/// @brief The level now (TIERPOOL_LOG_LEVEL's, warning, or set_log_level's).
[[nodiscard]] TIERPOOL_EXPORT log_level get_log_level() noexcept;

/// @brief True when a message at `level` reaches the sink (a check before building a costly message).
[[nodiscard]] TIERPOOL_EXPORT bool log_enabled(log_level level) noexcept;

/**
 * @brief Hand `message` to the sink when `level` is enabled (a plug-in's messages may go
 *        this way too). A message at level `off` is dropped. Never throws: a message that
 *        cannot be delivered (the sink threw, or called from inside the sink) is dropped.
 */
TIERPOOL_EXPORT void log_message(log_level level, std::string_view message) noexcept;

/// @brief The default sink: `message` and a newline on stderr, in one write.
TIERPOOL_EXPORT void stderr_log_sink(log_level level, std::string_view message) noexcept;

}  // namespace tierpool

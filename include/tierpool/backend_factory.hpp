// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file backend_factory.hpp
 * @brief Choosing a backend: by name, by `TIERPOOL_BACKEND`, or automatically (CUDA when
 *        a usable device exists, otherwise the simulated device, with one line saying so).
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <tierpool/backend.hpp>
#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/export.hpp>

namespace tierpool {

/// @brief Which backend to build.
enum class backend_choice : std::uint8_t {
  automatic,  ///< CUDA when compiled in and a device is usable, otherwise sim
  sim,        ///< the simulated device
  cuda,       ///< the CUDA backend; an error when unavailable
};

/// @brief Name of a choice as parse_backend_choice() accepts it ("auto", "sim", "cuda").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(backend_choice c) noexcept;

/**
 * @brief Parse a backend name.
 * @param name "auto", "sim" or "cuda" (exact, lower case).
 * @return The choice.
 * @throws tierpool::logic_error for any other name; the message quotes it and lists the
 *         valid names.
 */
[[nodiscard]] TIERPOOL_EXPORT backend_choice parse_backend_choice(std::string_view name);

/**
 * @brief The choice named by `TIERPOOL_BACKEND`.
 * @return std::nullopt when the variable is unset or empty.
 * @throws tierpool::logic_error when it names no backend (the message names the variable).
 */
[[nodiscard]] TIERPOOL_EXPORT std::optional<backend_choice> backend_choice_from_env();

/**
 * @brief Whether an automatic fallback to sim is announced (and, for a pool, a trace that
 *        stopped or live figures it cannot publish): one message at log_level::warning
 *        (error for the trace) through the log sink, stderr by default (log.hpp).
 */
enum class fallback_notice : std::uint8_t {
  stderr_line,  ///< one "tierpool: ...; using the simulated device; ..." message to the log sink
  silent,       ///< no message (the reason is still in backend_selection::reason)
};

/// @brief The result of a selection: the backend and why it was chosen.
struct backend_selection {
  std::unique_ptr<tierpool::backend> backend;  ///< never null
  /// One line saying why, e.g. "requested explicitly" or
  /// "no usable CUDA device (no CUDA driver (cudaErrorInsufficientDriver: ...)); using the simulated device".
  std::string reason;
  bool fell_back{false};  ///< true when `automatic` wanted CUDA and got sim instead
};

/**
 * @brief Build the chosen backend.
 *
 * `automatic` tries CUDA device `device` (when the CUDA backend is compiled in) and falls
 * back to sim when there is no usable driver or device, announcing it per `notice`.
 * A sim backend is simulated device `device` (sim_options::device_ordinal is replaced by
 * it), so that pools on devices 0 and 1 are two devices on the simulator too.
 *
 * @param choice  Which backend.
 * @param sim     Options for the sim backend (used when sim is built).
 * @param device  Device ordinal, >= 0: the CUDA device, or the simulated device (0..255).
 * @param notice  Whether a fallback sends its one message to the log sink.
 * @return The backend (never null) and the reason.
 * @throws tierpool::backend_error if `cuda` is requested and unavailable (code no_device,
 *         or not_supported when the CUDA backend is not compiled in); the message carries
 *         the reason.
 * @throws tierpool::logic_error if `device` is negative, or the sim options are invalid
 *         (a simulated device past 255 among them).
 * Thread safety: may be called concurrently.
 */
[[nodiscard]] TIERPOOL_EXPORT backend_selection select_backend(backend_choice choice, sim_options const& sim = {},
                                                               int device = 0,
                                                               fallback_notice notice = fallback_notice::stderr_line);

/**
 * @brief select_backend() with the choice from `TIERPOOL_BACKEND`, or `default_choice`
 *        when the variable is unset or empty. The reason says when the variable chose.
 * @throws tierpool::logic_error if `TIERPOOL_BACKEND` names no backend; otherwise as select_backend().
 */
[[nodiscard]] TIERPOOL_EXPORT backend_selection select_backend_from_env(
  sim_options const& sim = {}, int device = 0, fallback_notice notice = fallback_notice::stderr_line,
  backend_choice default_choice = backend_choice::automatic);

}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file trace_gen.hpp
 * @brief Synthetic traces of the tiering workloads (docs/chapters/benchmarks.md): mlp-train,
 *        transformer-train, llm-infer-stream, kv-paging and random-reuse.
 *
 * @ingroup trace
 *
 * A trace depends only on the workload, its parameters and the seed: random numbers come
 * from std::mt19937_64 turned into doubles as `(x >> 11) * 2^-53` and into integers by
 * inversion, never from a standard-library distribution (whose output differs between
 * implementations). Tensor ids are 1, 2, 3, ... in allocation order and never reused.
 * Every trace allocates before it uses and frees everything it allocated by its end.
 * Times are left 0: a replay derives them from compute durations and transfers.
 *
 * Parameters are `key=value` texts; a byte parameter accepts units (`64MiB`), a rate
 * accepts a decimal. `tierpool trace gen --list` prints every workload's parameters with
 * their defaults (the table in docs/chapters/traces.md).
 *
 * @code
 * namespace tt = tierpool::trace;
 * auto events = tt::generate("mlp-train", {{"layers", "4"}, {"width", "1024"}}, 1);
 * tt::writer w("mlp.tpb", tt::format::binary);
 * for (auto const& e : events) { w.write(e); }
 * @endcode
 */
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <tierpool/export.hpp>
#include <tierpool/trace.hpp>

namespace tierpool::trace {

/// @brief Generator parameters as (key, value) texts, e.g. {{"layers", "8"}, {"width", "2048"}}.
using generator_params = std::vector<std::pair<std::string, std::string>>;

/// @brief One parameter a workload accepts.
struct generator_param_info {
  std::string_view key;            ///< e.g. "layers"
  std::string_view default_value;  ///< as text, e.g. "8"
  std::string_view help;           ///< one line, with the unit
};

/// @brief A named set of parameter values (`preset=NAME`); explicit keys override it.
struct generator_preset {
  std::string_view name;     ///< e.g. "serving"
  std::string_view summary;  ///< one line: what it models
  std::string_view values;   ///< space-separated key=value pairs, e.g. "max_batch=4096 arrival=30"
};

/// @brief A workload the generators know.
struct workload_info {
  std::string_view name;                            ///< e.g. "mlp-train"
  std::string_view summary;                         ///< one line
  std::span<generator_param_info const> params;     ///< accepted keys, with defaults
  bool random{false};                               ///< whether the seed changes the trace
  std::span<generator_preset const> presets{};      ///< `preset=NAME` values (may be empty)
};

/// @brief Every workload, in the order docs/chapters/benchmarks.md lists them.
[[nodiscard]] TIERPOOL_EXPORT std::span<workload_info const> workloads() noexcept;

/**
 * @brief Split `key=value` texts (command-line arguments) into parameters.
 * @throws tierpool::logic_error for an item without '=' or with an empty key
 */
[[nodiscard]] TIERPOOL_EXPORT generator_params parse_generator_params(std::span<std::string const> items);

/// @brief Receives generated events in order.
using event_sink = std::function<void(event const&)>;

/**
 * @brief Generate a workload's trace, streaming each event to `sink` (no whole-trace buffer).
 *
 * Thread safety: reentrant (no shared state).
 * @param workload A name from workloads().
 * @param params   Overrides of the defaults; each key at most once.
 * @param seed     Seeds the random workloads (ignored by the others).
 * @param sink     Called once per event, in trace order.
 * @throws tierpool::logic_error for an unknown workload (listing the known ones), an unknown
 *         key (listing the accepted ones), a repeated key, or a value that does not parse or
 *         is out of range (naming the key and the range)
 */
TIERPOOL_EXPORT void generate(std::string_view workload, generator_params const& params, std::uint64_t seed,
                              event_sink const& sink);

/// @brief generate() into a vector. @throws tierpool::logic_error as the streaming overload
[[nodiscard]] TIERPOOL_EXPORT std::vector<event> generate(std::string_view workload,
                                                          generator_params const& params = {},
                                                          std::uint64_t seed = 1);

}  // namespace tierpool::trace

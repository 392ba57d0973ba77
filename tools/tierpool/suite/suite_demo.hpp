// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_demo.hpp — the oversubscription demo as a child process of `tierpool suite`: how to
// find it, run it on a device or a simulated preset, and read its times (used by the
// oversub-train workload and by `suite calibrate`'s fit of the host's costs).
#pragma once

#include "suite/suite_presets.hpp"

#include <boost/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tierpool::cli::suite {

/// How many training iterations the suite asks the demo for: the first pays once for
/// what a long run pays once, the other three are the steady state (Note [Steady state]
/// in examples/oversubscribe/oversubscribe.cpp).
inline constexpr int kDemoIterations = 4;

/// The demo beside this executable (build/examples/oversubscribe/oversubscribe, or in
/// the same folder), or TIERPOOL_DEMO; empty when there is none.
[[nodiscard]] std::string find_demo();

/// Run the demo with `args` (its output discarded) and read the JSON it writes to
/// `json_path`; nullopt when it cannot start, fails, or writes no JSON object, with the
/// reason in `*why` (its last line on stderr, e.g. an out-of-memory error) when given.
[[nodiscard]] std::optional<boost::json::object> run_demo(std::string const& demo, std::vector<std::string> args,
                                                          std::string const& json_path, std::string* why = nullptr);

/// The demo's flags for a simulated preset: the sim on the virtual clock with kernel
/// time, the preset's host link, its kernels' roofline and its host costs.
void append_sim_demo_args(device_preset const& p, std::vector<std::string>& args);

/// A number of the demo's JSON (0 when missing or not a number).
[[nodiscard]] double num(boost::json::object const& o, char const* key);

/// The times of one demo run, seconds: the device's (virtual clock) on a simulated
/// preset, the wall clock's on a GPU.
struct demo_times {
  double first{0.0};             ///< the first iteration
  double steady{0.0};            ///< iterations 2..N, mean
  double reference_steady{0.0};  ///< the reference run's (unlimited memory), iterations 2..N
};
[[nodiscard]] demo_times demo_times_of(boost::json::object const& r, bool simulated);

}  // namespace tierpool::cli::suite

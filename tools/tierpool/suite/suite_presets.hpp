// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_presets.hpp — the devices `tierpool suite run` can run on: CUDA ordinals and the
// simulated presets (docs/chapters/suite.md, "Simulated presets").
#pragma once

#include <tierpool/backends/sim_backend.hpp>

#include <cstdint>
#include <optional>
#include <utility>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tierpool::cli::suite {

/// A simulated machine: its device memory, its host link and its device's own copy speed.
struct device_preset {
  std::string_view name;        ///< as in --devices sim:NAME
  std::string_view title;       ///< the device and what the preset models
  std::uint64_t memory_bytes;   ///< device memory
  link_model host_link;         ///< host -> device (and both ways where `d2h_link` is not set)
  link_model device_link;       ///< device <-> device (HBM)
  std::string_view link_name;   ///< the host link's kind (pcie4, pcie5, nvlink-c2c, cxl)
  link_model d2h_link{};        ///< device -> host, when it differs (a calibrated preset)
  /// The kernels' roofline for the demo (`--kernel-roofline`): fp32 FLOP/s (0: the demo's
  /// default) and memory bytes/s (0: device_link's bandwidth).
  double kernel_flops{0.0};
  double kernel_bytes{0.0};
  /// The host's time per call on the virtual clock (sim_options::host_costs): zero in the
  /// stock presets, fitted by `tierpool suite calibrate` (docs/chapters/suite.md).
  sim_host_costs host_costs{};
  /// The device -> host link in effect.
  [[nodiscard]] link_model const& d2h() const noexcept { return d2h_link.unthrottled() ? host_link : d2h_link; }
};

/// The format name of a preset file (`tierpool suite calibrate` writes one).
inline constexpr std::string_view kPresetFormat = "tierpool-suite-preset";

/**
 * @brief Read a preset file (docs/chapters/suite.md, "Calibration"). The preset lives as
 *        long as the process.
 * @throws tierpool::logic_error naming the file: missing, unreadable, not JSON, not a
 *         preset, or a field missing or out of range (bandwidth > 0, latency >= 0, finite).
 */
[[nodiscard]] device_preset const& load_preset_file(std::string const& path);

/// Every preset, in the order --list prints them.
[[nodiscard]] std::span<device_preset const> presets() noexcept;

/// The demo's kernel roofline on a preset, FLOP/s and bytes/s: what `--kernel-roofline`
/// gives it (the demo's own default, 50e12 and 3e12, where the preset names none).
[[nodiscard]] std::pair<double, double> kernel_roofline_of(device_preset const& p) noexcept;

/// The roofline of a stock preset whose GPU `gpu_name` names (an H200, GH200, H100 or
/// A100, by the name CUDA reports); nullopt for any other GPU.
[[nodiscard]] std::optional<std::pair<double, double>> kernel_roofline_for_gpu(std::string_view gpu_name) noexcept;

/// The sim options of a preset: phantom memory, the virtual clock, its links.
[[nodiscard]] sim_options sim_options_for(device_preset const& p);

/// One device of a run.
struct device_spec {
  std::string id;                       ///< "sim:h200-sxm" or "cuda:0"
  bool simulated{true};
  int cuda_ordinal{-1};                 ///< CUDA devices
  device_preset const* preset{nullptr}; ///< simulated devices
};

/// Parse --devices: `all`, or CUDA ordinals and sim:PRESET, comma-separated; sim:FILE.json
/// reads a preset file (load_preset_file).
/// @throws tierpool::logic_error naming an unknown preset, a bad or missing ordinal, a
///         duplicate, or an empty list.
[[nodiscard]] std::vector<device_spec> parse_devices(std::string_view text);

}  // namespace tierpool::cli::suite

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file svg.hpp
 * @brief Internal: what every SVG plot of tierpool starts with and is made of — the header
 *        with its background and title, escaped text, numbers in pixels, axis ticks. Used
 *        by the replay plots (replay/replay_plot.cpp) and the snapshot layout plot
 *        (core/snapshot_plot.cpp), so that they look alike.
 */
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tierpool::detail {

/// `s` with &, <, > and " escaped for SVG text and attributes.
[[nodiscard]] std::string xml_escape(std::string_view s);
/// `v` with one decimal ("12.5"): coordinates and sizes in pixels.
[[nodiscard]] std::string svg_number(double v);
/// The SVG header (width x height px), a white background and the title centred on top:
/// every plot starts so. The caller appends its elements and "</svg>\n".
void svg_open(std::string& out, double width, double height, std::string_view title);
/// Ticks from 0 to a rounded maximum at or above `max`: decimal steps 1/2/5 x 10^k, or
/// powers of two when `binary` (byte axes read 64.0 MiB, 128.0 MiB, ...). At least two.
[[nodiscard]] std::vector<double> svg_ticks(double max, bool binary);

}  // namespace tierpool::detail

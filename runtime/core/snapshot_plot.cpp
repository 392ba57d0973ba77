// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// snapshot_plot.cpp — owns snapshot_svg(): each tier's layout over a series of snapshots,
// as PyTorch's memory_viz draws a device's segments: one panel per tier, one column per
// snapshot (oldest left), the tier's offsets top to bottom; a used block is a bar coloured
// by its tensor (a colour fixed by the tensor's id, so it keeps it across snapshots, with
// a tooltip naming it), a pending block grey, a released chunk light grey, free space
// blank; thin lines mark where chunks start. A legend names the largest tensors of the
// last snapshot. Self-contained SVG (no scripts, no external fonts), opened like every
// plot of tierpool (util/svg.hpp).
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/snapshot.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/svg.hpp"

namespace tierpool {

namespace {

using detail::svg_number;
using detail::xml_escape;

constexpr double kLeft = 100.0;      // room for the offset labels
constexpr double kTop = 70.0;        // the title, then the first panel's header
constexpr double kPanelH = 240.0;    // height of one tier's panel
constexpr double kPanelGap = 80.0;   // column labels below a panel, the next one's header
constexpr double kLegendW = 300.0;   // the legend, right of the panels
constexpr double kMinPlotW = 480.0;  // the panels' width at least
constexpr std::size_t kLegendRows = 16;

// A colour per tensor: hues a golden angle apart by id, so that neighbours differ.
std::string tensor_colour(tensor_id id)
{
  double const h = std::fmod(static_cast<double>(static_cast<std::uint64_t>(id)) * 0.618033988749895, 1.0);
  double const s = 0.62;
  double const l = (static_cast<std::uint64_t>(id) % 3U == 0U) ? 0.46 : 0.58;
  auto channel = [&](double n) {
    double const k = std::fmod(n + h * 12.0, 12.0);
    double const a = s * std::min(l, 1.0 - l);
    double const v = l - a * std::max(-1.0, std::min({k - 3.0, 9.0 - k, 1.0}));
    return static_cast<unsigned>(std::lround(v * 255.0));
  };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", channel(0.0), channel(8.0), channel(4.0));
  return buf;
}

std::uint64_t extent_of(tier_snapshot const& t) noexcept
{
  std::uint64_t e = 0;
  for (chunk_snapshot const& c : t.chunks) { e = std::max(e, c.offset + c.bytes); }
  return e;
}

std::string tensor_label(tensor_snapshot const* t, tensor_id id)
{
  std::string s = t != nullptr && !t->name.empty() ? t->name + " (tensor " + to_string(id) + ")" : "tensor " + to_string(id);
  return s;
}

}  // namespace

std::string snapshot_svg(std::span<pool_snapshot const> series, std::string_view title)
{
  TIERPOOL_EXPECTS(!series.empty(), "snapshot_svg: no snapshot to draw");
  std::size_t const n = series.size();
  std::size_t tiers = 0;
  for (pool_snapshot const& s : series) { tiers = std::max(tiers, s.tiers.size()); }
  double const col_w = std::clamp(720.0 / static_cast<double>(n), 6.0, 80.0);
  double const plot_w = std::max(kMinPlotW, col_w * static_cast<double>(n));
  double const cw = plot_w / static_cast<double>(n);
  double const width = kLeft + plot_w + 40.0 + kLegendW;
  std::size_t const legend_rows = std::min(series.back().tensors.size(), kLegendRows) + 4;  // + header, "more", keys
  double const height = std::max(kTop + static_cast<double>(std::max<std::size_t>(tiers, 1)) * (kPanelH + kPanelGap) + 10.0,
                                 kTop + 40.0 + static_cast<double>(legend_rows) * 18.0);

  // Tensors by id in each snapshot (names for the tooltips).
  std::vector<std::unordered_map<std::uint64_t, tensor_snapshot const*>> by_id(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (tensor_snapshot const& t : series[i].tensors) { by_id[i][static_cast<std::uint64_t>(t.id)] = &t; }
  }

  std::string out;
  detail::svg_open(out, width, height, title);
  out += "<defs><pattern id=\"pending\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
         "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#dddddd\"/>"
         "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#888888\" stroke-width=\"2\"/></pattern></defs>\n";
  out += "<g font-family=\"sans-serif\" font-size=\"12\">\n";
  std::size_t const label_every = n <= 24 ? 1 : (n + 11) / 12;
  for (std::size_t k = 0; k < tiers; ++k) {
    double const y0 = kTop + static_cast<double>(k) * (kPanelH + kPanelGap);
    // The tier's name and figures from the last snapshot that has it; its extent over all.
    tier_snapshot const* last = nullptr;
    std::uint64_t extent = 0;
    for (pool_snapshot const& s : series) {
      if (k < s.tiers.size()) {
        last = &s.tiers[k];
        extent = std::max(extent, extent_of(s.tiers[k]));
      }
    }
    std::vector<double> const yt = detail::svg_ticks(static_cast<double>(std::max<std::uint64_t>(extent, 1)), true);
    double const yr = yt.back();
    auto py = [&](double off) { return y0 + off / yr * kPanelH; };
    out += "<text x=\"" + svg_number(kLeft) + "\" y=\"" + svg_number(y0 - 10.0) + "\" font-size=\"13\">" +
           xml_escape("tier " + std::to_string(k) + ": " + last->name + " (" + std::string(to_string(last->kind)) +
                      "), " + detail::format_byte_size(last->used_bytes) + " used of " +
                      detail::format_byte_size(last->capacity_bytes) + " at the last snapshot") +
           "</text>\n";
    for (double v : yt) {
      double const y = py(v);
      out += "<line x1=\"" + svg_number(kLeft - 4.0) + "\" y1=\"" + svg_number(y) + "\" x2=\"" + svg_number(kLeft) +
             "\" y2=\"" + svg_number(y) + "\" stroke=\"#888888\"/>\n";
      out += "<text x=\"" + svg_number(kLeft - 7.0) + "\" y=\"" + svg_number(y + 4.0) + "\" text-anchor=\"end\">" +
             xml_escape(detail::format_byte_size(static_cast<std::uint64_t>(std::llround(v)))) + "</text>\n";
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (k >= series[i].tiers.size()) { continue; }
      tier_snapshot const& t = series[i].tiers[k];
      double const x = kLeft + static_cast<double>(i) * cw;
      double const bw = cw >= 4.0 ? cw - 1.0 : cw;
      for (block_snapshot const& b : t.blocks) {
        if (b.state == block_state::free) { continue; }
        double const y = py(static_cast<double>(b.offset));
        double const h = std::max(0.5, static_cast<double>(b.bytes) / yr * kPanelH);
        std::string const geom = "x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\" width=\"" + svg_number(bw) +
                                 "\" height=\"" + svg_number(h) + "\"";
        if (b.state == block_state::used) {
          auto const it = by_id[i].find(static_cast<std::uint64_t>(b.tensor));
          tensor_snapshot const* ts = it == by_id[i].end() ? nullptr : it->second;
          out += "<rect " + geom + " fill=\"" + tensor_colour(b.tensor) + "\"><title>" +
                 xml_escape(tensor_label(ts, b.tensor) + ", " + detail::format_byte_size(b.bytes) + " at " +
                            detail::format_byte_size(b.offset) + (ts != nullptr && ts->leased() ? ", leased" : "") +
                            (ts != nullptr && ts->dirty && ts->home == tier_id{static_cast<std::uint32_t>(k)} ? ", dirty" : "")) +
                 "</title></rect>\n";
        } else if (b.state == block_state::pending) {
          out += "<rect " + geom + " fill=\"url(#pending)\"><title>pending free, " + detail::format_byte_size(b.bytes) +
                 "</title></rect>\n";
        } else {
          out += "<rect " + geom + " fill=\"#eeeeee\"><title>released chunk, " + detail::format_byte_size(b.bytes) +
                 "</title></rect>\n";
        }
      }
      for (chunk_snapshot const& c : t.chunks) {
        if (c.offset == 0) { continue; }
        double const y = py(static_cast<double>(c.offset));
        out += "<line x1=\"" + svg_number(x) + "\" y1=\"" + svg_number(y) + "\" x2=\"" + svg_number(x + bw) +
               "\" y2=\"" + svg_number(y) + "\" stroke=\"#bbbbbb\"/>\n";
      }
      if (i % label_every == 0 || i + 1 == n) {
        out += "<text x=\"" + svg_number(x + cw / 2.0) + "\" y=\"" + svg_number(y0 + kPanelH + 16.0) +
               "\" text-anchor=\"middle\">" + std::to_string(i + 1) + "</text>\n";
      }
    }
    // The extent in use (below it the chunks' end) and the frame.
    out += "<rect x=\"" + svg_number(kLeft) + "\" y=\"" + svg_number(y0) + "\" width=\"" + svg_number(plot_w) +
           "\" height=\"" + svg_number(kPanelH) + "\" fill=\"none\" stroke=\"#888888\"/>\n";
    if (extent > 0) {
      double const y = py(static_cast<double>(extent));
      out += "<line x1=\"" + svg_number(kLeft) + "\" y1=\"" + svg_number(y) + "\" x2=\"" + svg_number(kLeft + plot_w) +
             "\" y2=\"" + svg_number(y) + "\" stroke=\"#444444\" stroke-dasharray=\"4 3\"/>\n";
    }
    out += "<text x=\"" + svg_number(kLeft + plot_w / 2.0) + "\" y=\"" + svg_number(y0 + kPanelH + 34.0) +
           "\" text-anchor=\"middle\" fill=\"#444444\">snapshot (oldest first); offset down; dashed: end of the tier's "
           "chunks</text>\n";
  }

  // Legend: the largest tensors of the last snapshot.
  pool_snapshot const& end = series.back();
  std::vector<tensor_snapshot const*> big;
  big.reserve(end.tensors.size());
  for (tensor_snapshot const& t : end.tensors) { big.push_back(&t); }
  std::sort(big.begin(), big.end(), [](auto const* a, auto const* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->id < b->id;
  });
  double const lx = kLeft + plot_w + 40.0;
  out += "<text x=\"" + svg_number(lx) + "\" y=\"" + svg_number(kTop) + "\" font-size=\"13\">" +
         xml_escape(std::to_string(end.tensors.size()) + " tensors at the last snapshot") + "</text>\n";
  std::size_t const rows = std::min(big.size(), kLegendRows);
  for (std::size_t r = 0; r < rows; ++r) {
    double const y = kTop + 20.0 + static_cast<double>(r) * 18.0;
    tensor_snapshot const& t = *big[r];
    out += "<rect x=\"" + svg_number(lx) + "\" y=\"" + svg_number(y - 10.0) + "\" width=\"12\" height=\"12\" fill=\"" +
           tensor_colour(t.id) + "\"/>\n";
    out += "<text x=\"" + svg_number(lx + 18.0) + "\" y=\"" + svg_number(y) + "\">" +
           xml_escape(tensor_label(&t, t.id) + ", " + detail::format_byte_size(t.bytes)) + "</text>\n";
  }
  if (big.size() > rows) {
    out += "<text x=\"" + svg_number(lx) + "\" y=\"" + svg_number(kTop + 20.0 + static_cast<double>(rows) * 18.0) +
           "\" fill=\"#444444\">" + std::to_string(big.size() - rows) + " more (hover a block for its name)</text>\n";
  }
  double const ky = kTop + 30.0 + static_cast<double>(rows + 1) * 18.0;
  out += "<rect x=\"" + svg_number(lx) + "\" y=\"" + svg_number(ky - 10.0) +
         "\" width=\"12\" height=\"12\" fill=\"url(#pending)\"/><text x=\"" + svg_number(lx + 18.0) + "\" y=\"" +
         svg_number(ky) + "\">pending free (last use running)</text>\n";
  out += "<rect x=\"" + svg_number(lx) + "\" y=\"" + svg_number(ky + 8.0) +
         "\" width=\"12\" height=\"12\" fill=\"#eeeeee\" stroke=\"#cccccc\"/><text x=\"" + svg_number(lx + 18.0) +
         "\" y=\"" + svg_number(ky + 18.0) + "\">released chunk; blank: free</text>\n";
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace tierpool

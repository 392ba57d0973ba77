// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// replay_plot.cpp — owns to_svg(): a self-contained SVG (no scripts, no external fonts) with
// two panels, capacity vs miss ratio and capacity vs bytes moved (h2d + d2h), one polyline
// with point markers per policy, axes with ticks and labels, and a legend.
#include <tierpool/detail/parse.hpp>
#include <tierpool/replay.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tierpool::replay {

namespace {

constexpr double kPanelW = 440.0;   // plot area of one panel, px
constexpr double kPanelH = 300.0;
constexpr double kLeft = 90.0;      // room for the y tick labels
constexpr double kGap = 120.0;      // between the panels
constexpr double kTop = 60.0;       // title
constexpr double kBottom = 70.0;    // x tick labels and axis title
constexpr double kLegendW = 200.0;

constexpr char const* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string xml_escape(std::string_view s)
{
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Ticks from 0 to a rounded maximum: decimal steps 1/2/5 x 10^k, or powers of two for
// byte axes (so that labels read 64.0 MiB, 128.0 MiB, ...).
std::vector<double> ticks(double max, bool binary)
{
  if (!(max > 0.0)) { max = 1.0; }
  double step = 0.0;
  if (binary && max >= 4.0) {
    step = std::exp2(std::ceil(std::log2(max / 5.0)));
  } else {
    double const raw = max / 5.0;
    double const mag = std::pow(10.0, std::floor(std::log10(raw)));
    double const f = raw / mag;
    step = (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * mag;
  }
  std::vector<double> t;
  for (double v = 0.0; v < max + step * 0.999; v += step) { t.push_back(v); }
  if (t.size() < 2) { t.push_back(step); }
  return t;
}

std::string tick_label(double v, bool bytes, bool ratio)
{
  if (bytes) { return tierpool::detail::format_byte_size(static_cast<std::uint64_t>(std::llround(v))); }
  char buf[32];
  if (ratio) {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  }
  return buf;
}

struct series {
  std::string policy;
  std::vector<std::pair<double, double>> miss;   // (capacity, miss ratio)
  std::vector<std::pair<double, double>> moved;  // (capacity, bytes moved)
};

void panel(std::string& out, double x0, std::vector<series> const& all, bool moved_panel, double xmax, double ymax,
           bool objects)
{
  auto const xt = ticks(xmax, !objects);
  auto const yt = ticks(ymax, moved_panel && !objects);
  double const xr = xt.back();
  double const yr = yt.back();
  double const y0 = kTop;
  auto px = [&](double v) { return x0 + v / xr * kPanelW; };
  auto py = [&](double v) { return y0 + kPanelH - v / yr * kPanelH; };

  out += "<g font-family=\"sans-serif\" font-size=\"12\">\n";
  // grid and ticks
  for (double v : yt) {
    out += "<line x1=\"" + num(x0) + "\" y1=\"" + num(py(v)) + "\" x2=\"" + num(x0 + kPanelW) + "\" y2=\"" + num(py(v)) +
           "\" stroke=\"#e0e0e0\"/>\n";
    out += "<text x=\"" + num(x0 - 6) + "\" y=\"" + num(py(v) + 4) + "\" text-anchor=\"end\">" +
           xml_escape(tick_label(v, moved_panel && !objects, !moved_panel)) + "</text>\n";
  }
  for (double v : xt) {
    out += "<line x1=\"" + num(px(v)) + "\" y1=\"" + num(y0 + kPanelH) + "\" x2=\"" + num(px(v)) + "\" y2=\"" +
           num(y0 + kPanelH + 5) + "\" stroke=\"black\"/>\n";
    out += "<text x=\"" + num(px(v)) + "\" y=\"" + num(y0 + kPanelH + 20) + "\" text-anchor=\"middle\">" +
           xml_escape(tick_label(v, !objects, false)) + "</text>\n";
  }
  // axes
  out += "<line x1=\"" + num(x0) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(x0) + "\" y2=\"" + num(y0 + kPanelH) +
         "\" stroke=\"black\"/>\n";
  out += "<line x1=\"" + num(x0) + "\" y1=\"" + num(y0 + kPanelH) + "\" x2=\"" + num(x0 + kPanelW) + "\" y2=\"" +
         num(y0 + kPanelH) + "\" stroke=\"black\"/>\n";
  out += "<text x=\"" + num(x0 + kPanelW / 2) + "\" y=\"" + num(y0 + kPanelH + 45) +
         "\" text-anchor=\"middle\" font-size=\"13\">" + std::string(objects ? "capacity (objects)" : "capacity") +
         "</text>\n";
  double const ly = y0 + kPanelH / 2;
  double const lx = x0 - 72;
  out += "<text x=\"" + num(lx) + "\" y=\"" + num(ly) + "\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 " +
         num(lx) + " " + num(ly) + ")\">" +
         std::string(moved_panel ? (objects ? "objects moved (h2d + d2h)" : "bytes moved (h2d + d2h)") : "miss ratio") +
         "</text>\n";
  // series
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto const& pts = moved_panel ? all[i].moved : all[i].miss;
    char const* color = kColors[i % std::size(kColors)];
    std::string poly;
    for (auto const& [x, y] : pts) { poly += num(px(x)) + "," + num(py(y)) + " "; }
    out += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\" points=\"" + poly + "\"/>\n";
    for (auto const& [x, y] : pts) {
      out += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"3.5\" fill=\"" + color + "\"><title>" +
             xml_escape(all[i].policy) + ": " + xml_escape(tick_label(x, !objects, false)) + " -> " +
             xml_escape(tick_label(y, moved_panel && !objects, !moved_panel)) + "</title></circle>\n";
    }
  }
  out += "</g>\n";
}

}  // namespace

std::string to_svg(std::span<replay_result const> results, std::string_view title)
{
  std::vector<series> all;
  std::map<std::string, std::size_t> index;  // policy -> position in `all` (first-seen order kept by `all`)
  double xmax = 0.0;
  double ymax_moved = 0.0;
  double ymax_miss = 0.0;
  bool objects = false;
  for (replay_result const& r : results) {
    auto [it, fresh] = index.try_emplace(r.policy, all.size());
    if (fresh) { all.push_back(series{r.policy, {}, {}}); }
    series& s = all[it->second];
    auto const x = static_cast<double>(r.capacity_bytes);
    auto const moved = static_cast<double>(r.bytes_h2d + r.bytes_d2h);
    s.miss.emplace_back(x, r.miss_ratio());
    s.moved.emplace_back(x, moved);
    xmax = std::max(xmax, x);
    ymax_moved = std::max(ymax_moved, moved);
    ymax_miss = std::max(ymax_miss, r.miss_ratio());
    objects = objects || r.ignore_size;
  }
  for (series& s : all) {
    std::sort(s.miss.begin(), s.miss.end());
    std::sort(s.moved.begin(), s.moved.end());
  }
  double const width = kLeft + kPanelW + kGap + kPanelW + 30.0 + kLegendW;
  double const height = kTop + kPanelH + kBottom + 10.0;
  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + num(width / 2) + "\" y=\"28\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"16\">" +
         xml_escape(title) + "</text>\n";
  panel(out, kLeft, all, false, xmax, std::max(ymax_miss, 1e-9), objects);
  panel(out, kLeft + kPanelW + kGap, all, true, xmax, ymax_moved, objects);
  // legend
  double const lx = kLeft + kPanelW + kGap + kPanelW + 30.0;
  out += "<g font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<text x=\"" + num(lx) + "\" y=\"" + num(kTop + 4) + "\" font-size=\"13\">policy</text>\n";
  for (std::size_t i = 0; i < all.size(); ++i) {
    double const y = kTop + 24.0 + 20.0 * static_cast<double>(i);
    char const* color = kColors[i % std::size(kColors)];
    out += "<line x1=\"" + num(lx) + "\" y1=\"" + num(y) + "\" x2=\"" + num(lx + 24) + "\" y2=\"" + num(y) +
           "\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
    out += "<circle cx=\"" + num(lx + 12) + "\" cy=\"" + num(y) + "\" r=\"3.5\" fill=\"" + color + "\"/>\n";
    out += "<text x=\"" + num(lx + 32) + "\" y=\"" + num(y + 4) + "\">" + xml_escape(all[i].policy) + "</text>\n";
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace tierpool::replay

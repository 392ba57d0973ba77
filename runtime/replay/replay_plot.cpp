// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// replay_plot.cpp — owns to_svg(): a self-contained SVG (no scripts, no external fonts) with
// two panels, capacity vs miss ratio and capacity vs bytes moved (h2d + d2h), one polyline
// with point markers per policy, axes with ticks and labels, and a legend; and
// to_ideal_svg(): makespan / ideal per capacity, one polyline per (mode, prefetch, policy),
// with the floor (1.0) and the target (1.25) drawn across.
#include <tierpool/detail/parse.hpp>
#include <tierpool/replay.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "util/svg.hpp"

namespace tierpool::replay {

namespace {

constexpr double kPanelW = 440.0;   // plot area of one panel, px
constexpr double kPanelH = 300.0;
constexpr double kLeft = 90.0;      // room for the y tick labels
constexpr double kGap = 120.0;      // between the panels
constexpr double kTop = 60.0;       // title
constexpr double kBottom = 70.0;    // x tick labels and axis title
constexpr double kLegendW = 200.0;  // at least; wider for long labels (legend_width)
constexpr double kCharW = 7.0;      // a generous width of one 12 px sans-serif character

constexpr char const* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// The pieces every plot shares (util/svg.hpp): header, escaping, pixel numbers, ticks.
using tierpool::detail::svg_open;
using tierpool::detail::xml_escape;
std::string num(double v) { return tierpool::detail::svg_number(v); }
std::vector<double> ticks(double max, bool binary) { return tierpool::detail::svg_ticks(max, binary); }

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

// Room for the legend: its line and marker (32 px) and the longest label, counted in
// characters (a UTF-8 continuation byte is not one).
template <class Series, class Label>
double legend_width_of(std::vector<Series> const& all, Label label)
{
  std::size_t longest = 0;
  for (Series const& s : all) {
    std::string_view const text = label(s);
    auto const chars = static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U; }));
    longest = std::max(longest, chars);
  }
  return std::max(kLegendW, 32.0 + kCharW * static_cast<double>(longest) + 10.0);
}

double legend_width(std::vector<series> const& all)
{
  return legend_width_of(all, [](series const& s) -> std::string_view { return s.policy; });
}

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

// Ticks covering [lo, hi] in decimal steps 1/2/5 x 10^k, the first at or below lo and the
// last at or above hi.
std::vector<double> ticks_between(double lo, double hi)
{
  if (!(hi > lo)) { hi = lo + 1.0; }
  double const raw = (hi - lo) / 6.0;
  double const mag = std::pow(10.0, std::floor(std::log10(raw)));
  double const f = raw / mag;
  double const step = (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 2.5 ? 2.5 : f <= 5.0 ? 5.0 : 10.0) * mag;
  double const first = std::floor(lo / step + 1e-9) * step;
  std::vector<double> t;
  for (int k = 0;; ++k) {
    double const v = first + step * k;
    t.push_back(v);
    if (v >= hi - step * 1e-9 || k > 100) { break; }
  }
  if (t.size() < 2) { t.push_back(t.back() + step); }
  return t;
}

// One (mode, prefetch, policy) of the makespan / ideal plot: a value per capacity column.
struct ideal_series {
  replay_mode mode{replay_mode::pool};
  std::string prefetch;
  std::string policy;
  std::string label;
  std::vector<std::pair<std::size_t, replay_result const*>> points;  // (capacity column, run)
};

std::string ratio_text(double v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fx", v);
  return buf;
}

std::string seconds_text(double s)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g s", s);
  return buf;
}

char const* mode_dash(replay_mode m)
{
  switch (m) {
    case replay_mode::uvm: return "7 4";
    case replay_mode::uvm_hints: return "2 3";
    default: return "";
  }
}

}  // namespace

// Note [The makespan / ideal plot]
// One series per (mode, prefetch, policy), in first-seen order: the table's rows grouped the
// way the CLI runs them. The x axis is categorical, one column per capacity label, ordered by
// the resolved bytes of the label's first row (pool and UVM rows of one label resolve a few
// bytes apart: whole pages against 256-byte units). The y axis spans at least [1, 1.25] so
// that the two reference lines, the floor (1.0) and the project's target (1.25), are always
// drawn; a row left with unserved requests can lie under 1.0 (its makespan leaves them out),
// and the axis then reaches down to it. A column whose rows have a phase floor gets a grey
// bar at phase floor / ideal (the axis reaches up to it): no row of it can lie under that.
// Series carry class="series" and data-series, the reference lines class="reference" and
// data-y, the floors class="phase-floor", data-column and data-y, so that tests (and
// scripts) find them.
std::string to_ideal_svg(std::span<replay_result const> results, std::string_view title)
{
  // capacity columns: label -> resolved bytes of its first row
  std::vector<std::pair<std::uint64_t, std::string>> columns;
  for (replay_result const& r : results) {
    bool const seen = std::any_of(columns.begin(), columns.end(),
                                  [&](auto const& c) { return c.second == r.capacity_label; });
    if (!seen) { columns.emplace_back(r.capacity_bytes, r.capacity_label); }
  }
  std::stable_sort(columns.begin(), columns.end(), [](auto const& a, auto const& b) { return a.first < b.first; });
  auto column_of = [&](std::string const& label) {
    return static_cast<std::size_t>(
      std::find_if(columns.begin(), columns.end(), [&](auto const& c) { return c.second == label; }) - columns.begin());
  };
  bool const objects = std::any_of(results.begin(), results.end(), [](replay_result const& r) { return r.ignore_size; });
  bool const modes_vary = std::any_of(results.begin(), results.end(),
                                      [&](replay_result const& r) { return r.mode != results.front().mode; });
  bool const prefetch_vary = std::any_of(results.begin(), results.end(),
                                         [&](replay_result const& r) { return r.prefetch != results.front().prefetch; });

  std::vector<ideal_series> all;
  double lo = 1.0;
  double hi = 1.25;
  for (replay_result const& r : results) {
    auto it = std::find_if(all.begin(), all.end(), [&](ideal_series const& s) {
      return s.mode == r.mode && s.prefetch == r.prefetch && s.policy == r.policy;
    });
    if (it == all.end()) {
      ideal_series s{r.mode, r.prefetch, r.policy, r.policy, {}};
      if (modes_vary) { s.label += " · " + std::string(to_string(r.mode)); }
      if (prefetch_vary && !is_uvm(r.mode)) { s.label += " · prefetch " + r.prefetch; }
      all.push_back(std::move(s));
      it = all.end() - 1;
    }
    it->points.emplace_back(column_of(r.capacity_label), &r);
    double const v = r.makespan_vs_ideal();
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  for (ideal_series& s : all) {
    std::stable_sort(s.points.begin(), s.points.end(), [](auto const& a, auto const& b) { return a.first < b.first; });
  }
  // The phase floor of each column (replay_result::phase_floor_seconds / ideal_seconds of
  // its first row that has one): no row of the column can lie under it.
  std::vector<double> floor_of(columns.size(), 0.0);
  for (replay_result const& r : results) {
    std::size_t const c = column_of(r.capacity_label);
    if (floor_of[c] == 0.0 && r.phase_floor_seconds > 0.0 && r.ideal_seconds > 0.0) {
      floor_of[c] = r.phase_floor_seconds / r.ideal_seconds;
      hi = std::max(hi, floor_of[c]);
    }
  }

  auto const yt = ticks_between(lo, hi);
  double const ylo = yt.front();
  double const yhi = yt.back();
  double const legend_h = 40.0 + 20.0 * static_cast<double>(all.size());
  double const legend_w = legend_width_of(all, [](ideal_series const& s) -> std::string_view { return s.label; });
  double const x0 = kLeft;
  double const y0 = kTop;
  double const width = kLeft + kPanelW + 40.0 + legend_w;
  double const height = std::max(kTop + kPanelH + kBottom + 10.0, kTop + legend_h + 10.0);
  double const ncol = static_cast<double>(std::max<std::size_t>(columns.size(), 1));
  auto px = [&](std::size_t col) { return x0 + (static_cast<double>(col) + 0.5) / ncol * kPanelW; };
  auto py = [&](double v) { return y0 + kPanelH - (v - ylo) / (yhi - ylo) * kPanelH; };

  std::string out;
  svg_open(out, width, height, title);
  out += "<g font-family=\"sans-serif\" font-size=\"12\">\n";
  for (double v : yt) {
    out += "<line x1=\"" + num(x0) + "\" y1=\"" + num(py(v)) + "\" x2=\"" + num(x0 + kPanelW) + "\" y2=\"" + num(py(v)) +
           "\" stroke=\"#e0e0e0\"/>\n";
    out += "<text x=\"" + num(x0 - 6) + "\" y=\"" + num(py(v) + 4) + "\" text-anchor=\"end\">" + tick_label(v, false, true) +
           "</text>\n";
  }
  for (std::size_t c = 0; c < columns.size(); ++c) {
    double const x = px(c);
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(y0 + kPanelH) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(y0 + kPanelH + 5) + "\" stroke=\"black\"/>\n";
    out += "<text x=\"" + num(x) + "\" y=\"" + num(y0 + kPanelH + 20) + "\" text-anchor=\"middle\">" +
           xml_escape(columns[c].second) + "</text>\n";
    std::string const resolved = objects ? std::to_string(columns[c].first) :
                                           tierpool::detail::format_byte_size(columns[c].first);
    if (resolved != columns[c].second) {
      out += "<text x=\"" + num(x) + "\" y=\"" + num(y0 + kPanelH + 34) + "\" text-anchor=\"middle\" fill=\"#555555\">(" +
             xml_escape(resolved) + ")</text>\n";
    }
  }
  // axes and their titles
  out += "<line x1=\"" + num(x0) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(x0) + "\" y2=\"" + num(y0 + kPanelH) +
         "\" stroke=\"black\"/>\n";
  out += "<line x1=\"" + num(x0) + "\" y1=\"" + num(y0 + kPanelH) + "\" x2=\"" + num(x0 + kPanelW) + "\" y2=\"" +
         num(y0 + kPanelH) + "\" stroke=\"black\"/>\n";
  out += "<text x=\"" + num(x0 + kPanelW / 2) + "\" y=\"" + num(y0 + kPanelH + 56) +
         "\" text-anchor=\"middle\" font-size=\"13\">" +
         std::string(objects ? "capacity (objects)" : "device capacity") + "</text>\n";
  {
    double const ly = y0 + kPanelH / 2;
    double const lx = x0 - 60;
    out += "<text x=\"" + num(lx) + "\" y=\"" + num(ly) +
           "\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 " + num(lx) + " " + num(ly) +
           ")\">makespan / ideal</text>\n";
  }
  // reference lines: the floor and the target
  // (labels at opposite ends, so that they never overlap when the two lines are close)
  struct reference {
    double y;
    char const* key;
    char const* text;
    char const* dash;
    bool left;
  };
  for (reference const& ref : {reference{1.0, "1", "ideal (1.0)", "", true},
                               reference{1.25, "1.25", "target (1.25)", "8 4", false}}) {
    out += "<line class=\"reference\" data-y=\"" + std::string(ref.key) + "\" x1=\"" + num(x0) + "\" y1=\"" +
           num(py(ref.y)) + "\" x2=\"" + num(x0 + kPanelW) + "\" y2=\"" + num(py(ref.y)) +
           "\" stroke=\"#333333\" stroke-width=\"1.5\"" +
           (*ref.dash != '\0' ? " stroke-dasharray=\"" + std::string(ref.dash) + "\"" : std::string()) + "/>\n";
    // the floor's label under its line where the plot has room there (the target's line is above)
    bool const under = ref.left && py(ref.y) + 16 <= y0 + kPanelH;
    out += "<text x=\"" + num(ref.left ? x0 + 4 : x0 + kPanelW - 4) + "\" y=\"" + num(py(ref.y) + (under ? 14 : -4)) +
           "\" text-anchor=\"" + (ref.left ? "start" : "end") + "\" fill=\"#333333\">" + ref.text + "</text>\n";
  }
  // phase floors: a short bar per column that has one
  auto precise = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return std::string(buf);
  };
  bool floor_labelled = false;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (floor_of[c] <= 0.0) { continue; }
    double const half = std::min(30.0, kPanelW / ncol / 3.0);
    out += "<line class=\"phase-floor\" data-column=\"" + xml_escape(columns[c].second) + "\" data-y=\"" +
           precise(floor_of[c]) + "\" x1=\"" + num(px(c) - half) + "\" y1=\"" + num(py(floor_of[c])) + "\" x2=\"" +
           num(px(c) + half) + "\" y2=\"" + num(py(floor_of[c])) + "\" stroke=\"#777777\" stroke-width=\"4\"><title>phase floor @ " +
           xml_escape(columns[c].second) + ": " + ratio_text(floor_of[c]) + " of the ideal time</title></line>\n";
    if (!floor_labelled) {
      out += "<text x=\"" + num(px(c) + half + 4) + "\" y=\"" + num(py(floor_of[c]) + 4) +
             "\" fill=\"#555555\">phase floor</text>\n";
      floor_labelled = true;
    }
  }
  // series
  for (std::size_t i = 0; i < all.size(); ++i) {
    ideal_series const& s = all[i];
    char const* color = kColors[i % std::size(kColors)];
    char const* dash = mode_dash(s.mode);
    std::string poly;
    for (auto const& [c, r] : s.points) { poly += num(px(c)) + "," + num(py(r->makespan_vs_ideal())) + " "; }
    out += "<g class=\"series\" data-series=\"" + xml_escape(s.label) + "\">\n";
    out += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\"" +
           (*dash != '\0' ? " stroke-dasharray=\"" + std::string(dash) + "\"" : std::string()) + " points=\"" + poly +
           "\"/>\n";
    for (auto const& [c, r] : s.points) {
      std::string tip = s.label + " @ " + r->capacity_label + ": " + ratio_text(r->makespan_vs_ideal()) + " (makespan " +
                        seconds_text(r->makespan_seconds) + ", ideal " + seconds_text(r->ideal_seconds) + ")";
      if (r->unserved != 0) { tip += ", " + std::to_string(r->unserved) + " requests unserved"; }
      out += "<circle cx=\"" + num(px(c)) + "\" cy=\"" + num(py(r->makespan_vs_ideal())) + "\" r=\"3.5\" fill=\"" +
             (r->unserved != 0 ? std::string("white") : std::string(color)) + "\" stroke=\"" + color + "\"><title>" +
             xml_escape(tip) + "</title></circle>\n";
    }
    out += "</g>\n";
  }
  out += "</g>\n";
  // legend
  double const lx = x0 + kPanelW + 40.0;
  out += "<g font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<text x=\"" + num(lx) + "\" y=\"" + num(kTop + 4) + "\" font-size=\"13\">" +
         std::string("policy") + (modes_vary ? " · mode" : "") + (prefetch_vary ? " · prefetch" : "") + "</text>\n";
  for (std::size_t i = 0; i < all.size(); ++i) {
    double const y = kTop + 24.0 + 20.0 * static_cast<double>(i);
    char const* color = kColors[i % std::size(kColors)];
    char const* dash = mode_dash(all[i].mode);
    out += "<line x1=\"" + num(lx) + "\" y1=\"" + num(y) + "\" x2=\"" + num(lx + 24) + "\" y2=\"" + num(y) +
           "\" stroke=\"" + color + "\" stroke-width=\"2\"" +
           (*dash != '\0' ? " stroke-dasharray=\"" + std::string(dash) + "\"" : std::string()) + "/>\n";
    out += "<circle cx=\"" + num(lx + 12) + "\" cy=\"" + num(y) + "\" r=\"3.5\" fill=\"" + color + "\"/>\n";
    out += "<text x=\"" + num(lx + 32) + "\" y=\"" + num(y + 4) + "\">" + xml_escape(all[i].label) + "</text>\n";
  }
  out += "</g>\n</svg>\n";
  return out;
}

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
  double const width = kLeft + kPanelW + kGap + kPanelW + 30.0 + legend_width(all);
  double const height = std::max(kTop + kPanelH + kBottom + 10.0, kTop + 44.0 + 20.0 * static_cast<double>(all.size()));
  std::string out;
  svg_open(out, width, height, title);
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

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_report_html.cpp — `tierpool suite report --html`: one self-contained page (inline
// CSS and SVG, no script, no external resource): the bundles, then per workload its plots
// (one per distinct value of the plot's split parameters) and its table (the grid the text
// output prints, make_grid).
#include "suite/suite_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace tierpool::cli::suite {

namespace {

std::string esc(std::string const& s)
{
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string px(double v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string badge(bundle const& b)
{
  return b.simulated ? R"( <span class="badge sim">simulated</span>)" : R"( <span class="badge real">measured</span>)";
}

// ---- plots ------------------------------------------------------------------------------

constexpr double kLeft = 78;      // room for the y tick labels and the y axis label
constexpr double kTop = 34;       // the plot's title
constexpr double kPlotW = 560;
constexpr double kPlotH = 300;
constexpr double kBottom = 56;    // x tick labels and the x axis label
constexpr double kCharW = 7.4;    // about one character of 12px DejaVu Sans (wide: labels never clip)
constexpr double kLegendRow = 18;
constexpr std::size_t kOpenRows = 40;  // a longer table is folded (<details>) under its plots

char const* const kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1",
                               "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#7f7f7f"};
char const* const kDashes[] = {"", "7 4", "2 3", "9 3 2 3"};

/// Value -> pixel along one axis, linear or logarithmic.
struct scale {
  double lo = 0;
  double hi = 1;
  bool log = false;
  double p0 = 0;  // pixel of lo
  double p1 = 1;  // pixel of hi
  [[nodiscard]] double operator()(double v) const
  {
    double const t = log ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
};

struct tick {
  double value;
  std::string label;
};

struct point {
  double x;
  double y;
  figure const* f;
};

struct line {
  std::size_t bundle;
  std::size_t series;  // index into the plot's series names
  std::vector<point> points;
};

/// 1, 2 or 5 times a power of ten, about (hi - lo) / 5.
double nice_step(double span)
{
  double const raw = span / 5.0;
  double const mag = std::pow(10.0, std::floor(std::log10(raw)));
  double const f = raw / mag;
  return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

/// The nearest 1, 2 or 5 times a power of ten at or above (`up`) or at or below `v` > 0.
double nice_125(double v, bool up)
{
  double const decade = std::pow(10.0, std::floor(std::log10(v)));
  double const steps[] = {1.0, 2.0, 5.0, 10.0};
  if (up) {
    for (double m : steps) {
      if (decade * m >= v * (1 - 1e-12)) { return decade * m; }
    }
  }
  double out = decade;
  for (double m : steps) {
    if (decade * m <= v * (1 + 1e-12)) { out = decade * m; }
  }
  return out;
}

/// A tick label: short SI multiples from 10^4 on (5k, 2.5M, 4G), so labels stay narrow.
std::string tick_label(double v)
{
  static char const* const suffix[] = {"", "k", "M", "G", "T", "P"};
  std::size_t k = 0;
  double m = v;
  while (std::abs(v) >= 1e4 && std::abs(m) >= 1e3 && k + 1 < std::size(suffix)) {
    m /= 1e3;
    ++k;
  }
  return k == 0 ? format_number(v) : format_number(m) + suffix[k];
}

std::vector<tick> linear_ticks(double lo, double hi, bool bytes)
{
  std::vector<tick> out;
  double const step = nice_step(hi - lo);
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    double const clean = std::abs(v) < step * 1e-9 ? 0.0 : v;
    out.push_back({clean, bytes ? format_bytes(clean) : tick_label(clean)});
  }
  return out;
}

/// Powers of 2, every 1, 2, 4... octaves so that at most 9 remain (4 KiB, 16 KiB, ...).
std::vector<tick> byte_log_ticks(double lo, double hi)
{
  int const a = static_cast<int>(std::floor(std::log2(lo)));
  int const b = static_cast<int>(std::ceil(std::log2(hi)));
  int step = 1;
  while ((b - a) / step + 1 > 9) { step *= 2; }
  std::vector<tick> out;
  for (int e = (a / step) * step; e <= b; e += step) {
    double const v = std::ldexp(1.0, e);
    if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) { out.push_back({v, format_bytes(v)}); }
  }
  return out;
}

/// A log axis that is not bytes: the data's own values when few, else 1-2-5 per decade.
std::vector<tick> log_ticks(double lo, double hi, std::vector<double> const& xs)
{
  std::vector<tick> out;
  if (!xs.empty() && xs.size() <= 10) {
    for (double v : xs) { out.push_back({v, format_number(v)}); }
    return out;
  }
  for (double d = std::pow(10.0, std::floor(std::log10(lo))); d <= hi; d *= 10.0) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (d * m >= lo && d * m <= hi) { out.push_back({d * m, tick_label(d * m)}); }
    }
  }
  return out;
}

/// Ticks whose labels would overlap the previous kept one are dropped.
std::vector<tick> spaced(std::vector<tick> ticks, scale const& s)
{
  std::vector<tick> out;
  double last_right = -1e9;
  for (tick& t : ticks) {
    double const half = static_cast<double>(t.label.size()) * kCharW / 2;
    if (s(t.value) - half < last_right + 8) { continue; }
    last_right = s(t.value) + half;
    out.push_back(std::move(t));
  }
  return out;
}

/// The plot's lines: one per (bundle x series), points sorted by x; `series` gets the names.
std::vector<line> collect_lines(table const& t, plot_group const& g, std::size_t n_bundles, std::vector<std::string>& series)
{
  plot_spec const& p = *t.plot;
  std::map<std::pair<std::size_t, std::size_t>, std::vector<point>> by_line;
  for (row const& r : t.rows) {
    param const* x = find_param(*r.first, p.x);
    if (x == nullptr || !x->number || r.first->name != g.figure || join_params(*r.first, p.split) != g.split) { continue; }
    if (p.x_log && *x->number <= 0) { continue; }
    std::string name;
    // a series parameter the figure lacks (tierpool_vs_baseline has no path): "-"
    for (std::string const& k : p.series) {
      param const* v = find_param(*r.first, k);
      name += (name.empty() ? "" : " ") + (v != nullptr ? format_param(*v) : std::string("-"));
    }
    auto const it = std::find(series.begin(), series.end(), name);
    std::size_t const s = static_cast<std::size_t>(it - series.begin());
    if (it == series.end()) { series.push_back(name); }
    for (std::size_t b = 0; b < n_bundles; ++b) {
      if (r.cells[b] != nullptr) { by_line[{b, s}].push_back({*x->number, r.cells[b]->value, r.cells[b]}); }
    }
  }
  std::vector<line> out;
  for (auto& [key, pts] : by_line) {
    std::sort(pts.begin(), pts.end(), [](point const& a, point const& b) { return a.x < b.x; });
    out.push_back({key.first, key.second, std::move(pts)});
  }
  return out;
}

scale x_scale(std::vector<line> const& lines, plot_spec const& p, std::vector<tick>& ticks)
{
  std::vector<double> xs;
  for (line const& l : lines) {
    for (point const& pt : l.points) { xs.push_back(pt.x); }
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  scale s{xs.front(), xs.back(), p.x_log, kLeft + 12, kLeft + kPlotW - 12};
  if (s.lo == s.hi) {
    s.lo = p.x_log ? s.lo / 2 : s.lo - 1;
    s.hi = p.x_log ? s.hi * 2 : s.hi + 1;
  }
  bool const bytes = is_byte_key(p.x);
  ticks = p.x_log ? (bytes ? byte_log_ticks(s.lo, s.hi) : log_ticks(s.lo, s.hi, xs)) : linear_ticks(s.lo, s.hi, bytes);
  ticks = spaced(std::move(ticks), s);
  return s;
}

/// Linear from 0 (or the lowest value below it); logarithmic when every value is positive
/// and they span more than 50x (a slow and a fast device on one plot).
scale y_scale(std::vector<line> const& lines, std::vector<tick>& ticks)
{
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (line const& l : lines) {
    for (point const& pt : l.points) {
      lo = std::min(lo, pt.y);
      hi = std::max(hi, pt.y);
    }
  }
  if (lo > 0 && hi / lo > 50) {
    scale s{nice_125(lo, false), nice_125(hi, true), true, kTop + kPlotH, kTop};
    ticks = log_ticks(s.lo, s.hi, {});
    return s;
  }
  lo = std::min(lo, 0.0);
  if (hi <= lo) { hi = lo + 1; }
  double const step = nice_step(hi - lo);
  scale s{std::floor(lo / step) * step, std::ceil(hi / step) * step, false, kTop + kPlotH, kTop};
  ticks = linear_ticks(s.lo, s.hi, false);
  return s;
}

std::string axes(scale const& x, std::vector<tick> const& xt, scale const& y, std::vector<tick> const& yt,
                 std::string const& x_label, std::string const& y_label)
{
  std::string out = R"(<rect class="frame" x=")" + px(kLeft) + R"(" y=")" + px(kTop) + R"(" width=")" + px(kPlotW) +
                    R"(" height=")" + px(kPlotH) + R"("/>)" + "\n";
  for (tick const& t : yt) {
    std::string const py = px(y(t.value));
    out += R"(<line class="grid" x1=")" + px(kLeft) + R"(" x2=")" + px(kLeft + kPlotW) + R"(" y1=")" + py + R"(" y2=")" + py + R"("/>)";
    out += R"(<text class="tick" x=")" + px(kLeft - 6) + R"(" y=")" + py + R"(" text-anchor="end" dominant-baseline="middle">)" +
           esc(t.label) + "</text>\n";
  }
  for (tick const& t : xt) {
    std::string const pxv = px(x(t.value));
    out += R"(<line class="grid" x1=")" + pxv + R"(" x2=")" + pxv + R"(" y1=")" + px(kTop) + R"(" y2=")" + px(kTop + kPlotH) + R"("/>)";
    out += R"(<text class="tick" x=")" + pxv + R"(" y=")" + px(kTop + kPlotH + 18) + R"(" text-anchor="middle">)" +
           esc(t.label) + "</text>\n";
  }
  out += R"(<text class="axis" x=")" + px(kLeft + kPlotW / 2) + R"(" y=")" + px(kTop + kPlotH + 44) +
         R"(" text-anchor="middle">)" + esc(x_label) + "</text>\n";
  out += "<text class=\"axis\" transform=\"translate(18 " + px(kTop + kPlotH / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + esc(y_label) + "</text>\n";
  return out;
}

std::string marker(std::size_t bundle, double x, double y, char const* color)
{
  std::string const attrs = R"( fill=")" + std::string(color) + R"(" stroke="white" stroke-width="1")";
  switch (bundle % 4) {
    case 0: return "<circle cx=\"" + px(x) + "\" cy=\"" + px(y) + "\" r=\"3.5\"" + attrs + ">";
    case 1: return "<rect x=\"" + px(x - 3.5) + "\" y=\"" + px(y - 3.5) + "\" width=\"7\" height=\"7\"" + attrs + ">";
    case 2:
      return "<polygon points=\"" + px(x) + "," + px(y - 4.5) + " " + px(x + 4.5) + "," + px(y + 3.5) + " " + px(x - 4.5) +
             "," + px(y + 3.5) + "\"" + attrs + ">";
    default:
      return "<polygon points=\"" + px(x) + "," + px(y - 5) + " " + px(x + 5) + "," + px(y) + " " + px(x) + "," + px(y + 5) +
             " " + px(x - 5) + "," + px(y) + "\"" + attrs + ">";
  }
}

char const* marker_close(std::size_t bundle)
{
  return bundle % 4 == 0 ? "</circle>" : bundle % 4 == 1 ? "</rect>" : "</polygon>";
}

std::string line_label(line const& l, std::span<bundle const> bundles, std::vector<std::string> const& series)
{
  std::string const& s = series[l.series];
  if (bundles.size() == 1) { return s.empty() ? bundles[0].label : s; }
  return bundles[l.bundle].label + (s.empty() ? "" : " · " + s);
}

/// A line's colour (its series) and dash (its bundle), for the plot and its legend alike.
char const* color_of(line const& l) { return kColors[l.series % std::size(kColors)]; }
std::string stroke_of(line const& l)
{
  return R"( fill="none" stroke=")" + std::string(color_of(l)) + R"(" stroke-width="1.8" stroke-dasharray=")" +
         kDashes[l.bundle % std::size(kDashes)] + "\"";
}

std::string draw_line(line const& l, scale const& x, scale const& y, std::string const& label)
{
  char const* color = color_of(l);
  std::string pts;
  for (point const& p : l.points) { pts += (pts.empty() ? "" : " ") + px(x(p.x)) + "," + px(y(p.y)); }
  std::string out = "<g><polyline" + stroke_of(l) + R"( points=")" + pts + R"("/>)";
  for (point const& p : l.points) {
    out += marker(l.bundle, x(p.x), y(p.y), color) + "<title>" + esc(label + ": " + format_cell(*p.f)) + "</title>" +
           marker_close(l.bundle);
  }
  return out + "</g>\n";
}

std::string legend(std::vector<line> const& lines, std::vector<std::string> const& labels, std::string const& heading)
{
  double const x0 = kLeft + kPlotW + 20;
  std::string out = R"(<text class="legend-head" x=")" + px(x0) + R"(" y=")" + px(kTop + 4) + R"(">)" + esc(heading) + "</text>\n";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    double const y = kTop + 22 + static_cast<double>(i) * kLegendRow;
    out += R"(<line x1=")" + px(x0) + R"(" x2=")" + px(x0 + 28) + R"(" y1=")" + px(y) + R"(" y2=")" + px(y) + "\"" +
           stroke_of(lines[i]) + "/>";
    out += marker(lines[i].bundle, x0 + 14, y, color_of(lines[i])) + marker_close(lines[i].bundle);
    out += R"(<text class="legend" x=")" + px(x0 + 36) + R"(" y=")" + px(y) + R"(" dominant-baseline="middle">)" +
           esc(labels[i]) + "</text>\n";
  }
  return out;
}

std::string y_label_of(table const& t, std::vector<line> const& lines)
{
  std::vector<std::string> names;
  for (line const& l : lines) {
    std::string const n = l.points.front().f->name + (l.points.front().f->unit.empty() ? "" : " (" + l.points.front().f->unit + ")");
    if (std::find(names.begin(), names.end(), n) == names.end()) { names.push_back(n); }
  }
  std::string out;
  for (std::string const& n : names) { out += (out.empty() ? "" : ", ") + n; }
  return out.empty() ? t.name : out;
}

std::string series_heading(plot_spec const& p, std::span<bundle const> bundles)
{
  std::string out = bundles.size() > 1 ? "device" : "";
  for (std::string const& k : p.series) { out += (out.empty() ? "" : " · ") + k; }
  return out;
}

// Each plot carries its own style: it reads the same when saved or copied on its own.
char const* const kSvgStyle = R"(<style>
text { font-family: "DejaVu Sans", Verdana, sans-serif; fill: #222; }
.frame { fill: none; stroke: #999; }
.grid { stroke: #e6e6e6; }
.tick { font-size: 11px; fill: #444; }
.axis { font-size: 12px; }
.title { font-size: 13px; font-weight: bold; }
.legend { font-size: 12px; }
.legend-head { font-size: 11px; fill: #666; }
</style>
<rect width="100%" height="100%" fill="white"/>
)";

// ---- the page ------------------------------------------------------------------------------

char const* const kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 24px 32px; color: #222; max-width: 1400px; }
h1 { font-size: 26px; margin-bottom: 4px; }
h2 { font-size: 20px; margin-top: 36px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h2 code { font-size: 15px; color: #666; font-weight: normal; }
p.note { color: #555; margin-top: 4px; }
table { border-collapse: collapse; font-size: 13px; margin: 12px 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f5f7; }
table.figures td { white-space: nowrap; }
details summary { cursor: pointer; color: #335; margin: 8px 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.absent { color: #aaa; text-align: center; }
tr:nth-child(even) td { background: #fafbfc; }
.badge { display: inline-block; font-size: 11px; font-weight: 600; padding: 1px 6px; border-radius: 8px; vertical-align: middle; }
.badge.sim { background: #fff1d6; color: #8a5a00; border: 1px solid #e8c27a; }
.badge.real { background: #dff3e4; color: #1d6b34; border: 1px solid #9fd3ad; }
figure.plot { margin: 12px 0; }
svg { max-width: 100%; height: auto; }
ul.skipped li { margin: 2px 0; }
)";

std::string bundles_table(std::span<bundle const> bundles, std::size_t baseline)
{
  std::string out = "<table class=\"bundles\">\n<thead><tr><th>#</th><th>device</th><th>results</th><th>name</th><th>memory</th>"
                    "<th>link</th><th>tierpool</th><th>suite</th><th>machine</th><th>created</th><th>file</th></tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < bundles.size(); ++i) {
    bundle const& b = bundles[i];
    std::string const cells[] = {
      std::to_string(i) + (i == baseline ? " (baseline)" : ""),
      "<code>" + esc(b.device_id) + "</code>",
      badge(b),
      esc(b.device_name),
      b.memory_bytes ? format_bytes(static_cast<double>(*b.memory_bytes)) : std::string(),
      esc(b.link),
      esc(b.tierpool_version),
      "v" + std::to_string(b.suite_version) + (b.suite_preset.empty() ? "" : " (" + esc(b.suite_preset) + ")"),
      esc(b.machine),
      esc(b.created_utc),
      esc(b.file)};
    out += "<tr>";
    for (std::string const& c : cells) { out += "<td>" + c + "</td>"; }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string figures_table(table const& t, std::span<bundle const> bundles, std::size_t baseline)
{
  grid const g = make_grid(t, bundles, baseline);
  std::string out = "<table class=\"figures\">\n<thead><tr>";
  for (std::size_t c = 0; c < g.heading.size(); ++c) {
    std::size_t const b = c - g.first_value_column;
    bool const bundle_column = c >= g.first_value_column && b < bundles.size();
    out += "<th>" + esc(g.heading[c]) + (bundle_column ? badge(bundles[b]) : std::string()) + "</th>";
  }
  out += "</tr></thead>\n<tbody>\n";
  for (auto const& cells : g.cells) {
    out += "<tr>";
    for (std::size_t c = 0; c < cells.size(); ++c) {
      char const* cls = c < g.first_value_column ? "" : cells[c] == "-" ? " class=\"absent\"" : " class=\"num\"";
      out += std::string("<td") + cls + ">" + esc(cells[c]) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string workload_section(table const& t, std::span<bundle const> bundles, std::size_t baseline)
{
  std::string out = "<section id=\"w-" + esc(t.name) + "\">\n<h2>" + esc(t.title) + " <code>" + esc(t.name) + "</code></h2>\n";
  if (t.plot) {
    for (plot_group const& g : plot_groups(t)) {
      std::string const svg = to_svg(t, bundles, g);
      if (!svg.empty()) { out += "<figure class=\"plot\">\n" + svg + "</figure>\n"; }
    }
  }
  std::string const figures = figures_table(t, bundles, baseline);
  if (t.rows.size() <= kOpenRows) { return out + figures + "</section>\n"; }
  return out + "<details>\n<summary>the table: " + std::to_string(t.rows.size()) + " figures</summary>\n" + figures +
         "</details>\n</section>\n";
}

std::string skipped_list(std::span<bundle const> bundles)
{
  std::string items;
  for (bundle const& b : bundles) {
    for (skipped_workload const& s : b.skipped) {
      items += "<li><code>" + esc(b.label) + "</code>: <code>" + esc(s.workload) + "</code>: " + esc(s.reason) + "</li>\n";
    }
  }
  return items.empty() ? std::string() : "<h2>Skipped workloads</h2>\n<ul class=\"skipped\">\n" + items + "</ul>\n";
}

}  // namespace

std::vector<plot_group> plot_groups(table const& t)
{
  std::vector<plot_group> out;
  if (!t.plot) { return out; }
  for (row const& r : t.rows) {
    plot_group g{r.first->name, join_params(*r.first, t.plot->split)};
    if (std::find(out.begin(), out.end(), g) == out.end()) { out.push_back(std::move(g)); }
  }
  return out;
}

std::string to_svg(table const& t, std::span<bundle const> bundles, plot_group const& g)
{
  std::vector<std::string> series;
  std::vector<line> const lines = collect_lines(t, g, bundles.size(), series);
  if (lines.empty()) { return {}; }
  std::vector<tick> xt;
  std::vector<tick> yt;
  scale const x = x_scale(lines, *t.plot, xt);
  scale const y = y_scale(lines, yt);
  std::vector<std::string> labels;
  std::size_t longest = series_heading(*t.plot, bundles).size();
  for (line const& l : lines) {
    labels.push_back(line_label(l, bundles, series));
    longest = std::max(longest, labels.back().size());
  }
  double const width = kLeft + kPlotW + 20 + 40 + static_cast<double>(longest) * kCharW + 10;
  double const height = std::max(kTop + kPlotH + kBottom, kTop + 22 + static_cast<double>(lines.size()) * kLegendRow);
  std::string const title = t.name + ": " + g.figure + (g.split.empty() ? "" : ", " + g.split);
  std::string out = R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" + px(width) + R"(" height=")" + px(height) +
                    R"(" viewBox="0 0 )" + px(width) + " " + px(height) + R"(" role="img">)" + "\n<title>" + esc(title) +
                    "</title>\n" + kSvgStyle;
  out += R"(<text class="title" x=")" + px(kLeft) + R"(" y="20">)" + esc(title) + "</text>\n";
  std::string const x_label = t.plot->x_label + (t.plot->x_log ? " (log scale)" : "");
  out += axes(x, xt, y, yt, x_label, y_label_of(t, lines) + (y.log ? " (log scale)" : ""));
  for (std::size_t i = 0; i < lines.size(); ++i) { out += draw_line(lines[i], x, y, labels[i]); }
  out += legend(lines, labels, series_heading(*t.plot, bundles));
  return out + "</svg>\n";
}

std::string to_html(std::span<bundle const> bundles, std::size_t baseline, std::span<table const> tables)
{
  bool const any_sim = std::any_of(bundles.begin(), bundles.end(), [](bundle const& b) { return b.simulated; });
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                    "<title>tierpool suite report</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  out += "<h1>tierpool suite report</h1>\n<p class=\"note\">" + std::to_string(bundles.size()) +
         " bundle(s); ratios are a figure's value divided by the baseline's, <code>" + esc(bundles[baseline].label) +
         "</code>.";
  if (any_sim) {
    out += R"( Results marked <span class="badge sim">simulated</span> ran on the simulated device with a device preset )"
           "and the virtual clock: they model the hardware, they were not measured on it.";
  }
  out += "</p>\n<h2>Bundles</h2>\n" + bundles_table(bundles, baseline);
  for (table const& t : tables) { out += workload_section(t, bundles, baseline); }
  return out + skipped_list(bundles) + "</body>\n</html>\n";
}

}  // namespace tierpool::cli::suite

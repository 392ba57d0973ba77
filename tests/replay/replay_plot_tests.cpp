// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// replay_plot_tests.cpp — the SVG plots of replay results (runtime/replay/replay_plot.cpp):
// both are well-formed XML (checked by a small parser written here: tags nest and close,
// attributes are quoted, '<' and '&' appear only as markup or entities); to_ideal_svg() has
// one series per (mode, prefetch, policy) with one point per capacity, the reference lines
// at 1.0 and 1.25 at the heights the y scale gives them, and a legend entry per series.
#include <tierpool/replay.hpp>
#include <tierpool/trace.hpp>
#include <tierpool/trace_gen.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace tr = tierpool::replay;

namespace {

// ---- a minimal XML well-formedness check ------------------------------------------------

bool is_name_char(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == ':' || c == '.';
}

// An '&' at s[i] starts an entity: &amp; &lt; &gt; &quot; &apos; or &#N; / &#xH;.
bool entity_at(std::string_view s, std::size_t i)
{
  for (std::string_view e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
    if (s.substr(i, e.size()) == e) { return true; }
  }
  if (s.substr(i, 2) == "&#") {
    std::size_t const semi = s.find(';', i);
    return semi != std::string_view::npos && semi > i + 2 && semi - i < 12;
  }
  return false;
}

// Empty when well-formed; else what is wrong and where.
std::string xml_problem(std::string_view s)
{
  std::vector<std::string> open;
  bool root_seen = false;
  std::size_t i = 0;
  auto at = [&](std::size_t p) { return " at offset " + std::to_string(p); };
  while (i < s.size()) {
    char const c = s[i];
    if (c == '&') {
      if (!entity_at(s, i)) { return "bare '&'" + at(i); }
      ++i;
      continue;
    }
    if (s.substr(i, 3) == "]]>") { return "']]>' in text" + at(i); }  // a bare '>' is legal, this is not
    if (c != '<') {
      if (open.empty() && c != '\n' && c != ' ' && c != '\t' && c != '\r') { return "text outside the root" + at(i); }
      ++i;
      continue;
    }
    if (s.substr(i, 5) == "<?xml") {
      if (i != 0) { return "XML declaration not first" + at(i); }
      std::size_t const end = s.find("?>", i);
      if (end == std::string_view::npos) { return "unclosed declaration"; }
      i = end + 2;
      continue;
    }
    if (s.substr(i, 4) == "<!--") {
      std::size_t const end = s.find("-->", i);
      if (end == std::string_view::npos) { return "unclosed comment"; }
      i = end + 3;
      continue;
    }
    bool const closing = i + 1 < s.size() && s[i + 1] == '/';
    std::size_t p = i + (closing ? 2 : 1);
    std::size_t const name_start = p;
    while (p < s.size() && is_name_char(s[p])) { ++p; }
    if (p == name_start) { return "tag without a name" + at(i); }
    std::string const name(s.substr(name_start, p - name_start));
    if (closing) {
      while (p < s.size() && s[p] == ' ') { ++p; }
      if (p >= s.size() || s[p] != '>') { return "malformed end tag </" + name + at(i); }
      if (open.empty() || open.back() != name) {
        return "end tag </" + name + "> does not close <" + (open.empty() ? std::string("nothing") : open.back()) + ">" +
               at(i);
      }
      open.pop_back();
      i = p + 1;
      continue;
    }
    // attributes
    std::vector<std::string> attrs;
    for (;;) {
      std::size_t const ws = p;
      while (p < s.size() && (s[p] == ' ' || s[p] == '\n' || s[p] == '\t')) { ++p; }
      if (p >= s.size()) { return "unclosed tag <" + name; }
      if (s[p] == '>' || s.substr(p, 2) == "/>") { break; }
      if (p == ws) { return "no blank before an attribute of <" + name + at(p); }
      std::size_t const a = p;
      while (p < s.size() && is_name_char(s[p])) { ++p; }
      if (p == a || p >= s.size() || s[p] != '=') { return "malformed attribute in <" + name + at(a); }
      std::string const attr(s.substr(a, p - a));
      if (std::find(attrs.begin(), attrs.end(), attr) != attrs.end()) { return "attribute " + attr + " twice" + at(a); }
      attrs.push_back(attr);
      ++p;
      if (p >= s.size() || (s[p] != '"' && s[p] != '\'')) { return "unquoted attribute " + attr + at(p); }
      char const q = s[p++];
      std::size_t const end = s.find(q, p);
      if (end == std::string_view::npos) { return "unterminated attribute " + attr; }
      for (std::size_t k = p; k < end; ++k) {
        if (s[k] == '<') { return "'<' in attribute " + attr + at(k); }
        if (s[k] == '&' && !entity_at(s, k)) { return "bare '&' in attribute " + attr + at(k); }
      }
      p = end + 1;
    }
    bool const empty = s[p] == '/';
    if (open.empty()) {
      if (root_seen) { return "second root element <" + name + ">" + at(i); }
      root_seen = true;
    }
    if (!empty) { open.push_back(name); }
    i = p + (empty ? 2 : 1);
  }
  if (!open.empty()) { return "unclosed <" + open.back() + ">"; }
  if (!root_seen) { return "no root element"; }
  return {};
}

TEST(ReplayPlotXml, TheCheckerCatchesWhatItShould)
{
  EXPECT_EQ(xml_problem("<?xml version=\"1.0\"?>\n<svg a=\"1\"><g><line x=\"1\"/></g></svg>\n"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></g>"), "");
  EXPECT_NE(xml_problem("<svg a=1></svg>"), "");
  EXPECT_NE(xml_problem("<svg a=\"x<y\"></svg>"), "");
  EXPECT_NE(xml_problem("<svg><text>a & b</text></svg>"), "");
  EXPECT_EQ(xml_problem("<svg><text>a &amp; b &#183;</text></svg>"), "");
  EXPECT_NE(xml_problem("<svg></svg><svg></svg>"), "");
  EXPECT_EQ(xml_problem("<svg><text>a -> b</text></svg>"), "");
  EXPECT_NE(xml_problem("<svg a=\"1\" a=\"2\"></svg>"), "");
}

// ---- results to plot ----------------------------------------------------------------

tr::replay_result row(tr::replay_mode mode, std::string prefetch, std::string policy, std::string cap,
                      std::uint64_t bytes, double makespan, double ideal)
{
  tr::replay_result r;
  r.mode = mode;
  r.prefetch = std::move(prefetch);
  r.policy = std::move(policy);
  r.capacity_label = std::move(cap);
  r.capacity_bytes = bytes;
  r.requests = 10;
  r.hits = 5;
  r.misses = 5;
  r.makespan_seconds = makespan;
  r.ideal_seconds = ideal;
  return r;
}

// 2 policies x 2 prefetchers in pool mode, plus uvm and uvm-hints (lru): 6 series, 2
// capacities each (listed 50% first: columns are ordered by bytes).
std::vector<tr::replay_result> grid()
{
  using tr::replay_mode;
  std::vector<tr::replay_result> out;
  for (char const* pf : {"none", "plan"}) {
    for (char const* pol : {"lru", "belady"}) {
      out.push_back(row(replay_mode::pool, pf, pol, "50%", 1000, 1.5, 1.0));
      out.push_back(row(replay_mode::pool, pf, pol, "25%", 500, 2.0, 1.0));
    }
  }
  out.push_back(row(replay_mode::uvm, "none", "lru", "50%", 960, 3.0, 1.0));
  out.push_back(row(replay_mode::uvm, "none", "lru", "25%", 448, 4.0, 1.0));
  out.push_back(row(replay_mode::uvm_hints, "none", "lru", "50%", 960, 1.0, 1.0));  // exactly at the floor
  out.push_back(row(replay_mode::uvm_hints, "none", "lru", "25%", 448, 2.5, 1.0));
  return out;
}

std::size_t count(std::string const& s, std::string const& what)
{
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) { ++n; }
  return n;
}

// The value of attribute `attr` in the first element whose start tag contains `marker`.
std::optional<double> attribute_after(std::string const& svg, std::string const& marker, std::string const& attr)
{
  std::size_t const p = svg.find(marker);
  if (p == std::string::npos) { return std::nullopt; }
  std::size_t const tag_start = svg.rfind('<', p);
  std::size_t const tag_end = svg.find('>', p);
  std::string const tag = svg.substr(tag_start, tag_end - tag_start);
  std::smatch m;
  if (!std::regex_search(tag, m, std::regex(" " + attr + "=\"([-0-9.]+)\""))) { return std::nullopt; }
  return std::stod(m[1].str());
}

TEST(ReplayPlotIdeal, OneSeriesPerModePrefetchAndPolicyWithAPointPerCapacity)
{
  auto const res = grid();
  std::string const svg = tr::to_ideal_svg(res, "ideal <test> & more");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0U);
  EXPECT_EQ(count(svg, "<g class=\"series\""), 6U);
  EXPECT_EQ(count(svg, "<polyline"), 6U);
  for (char const* label : {"lru · pool · prefetch none", "belady · pool · prefetch none", "lru · pool · prefetch plan",
                            "belady · pool · prefetch plan", "lru · uvm", "lru · uvm-hints"}) {
    EXPECT_EQ(count(svg, "data-series=\"" + std::string(label) + "\""), 1U) << label;
    EXPECT_EQ(count(svg, ">" + std::string(label) + "</text>"), 1U) << "legend entry " << label;
  }
  // one marker per row, and every polyline has two points (one per capacity)
  EXPECT_EQ(count(svg, "<circle cx=") - 6U /* legend markers */, res.size());
  std::regex const poly("<polyline[^>]* points=\"([^\"]*)\"");
  std::size_t polylines = 0;
  for (std::sregex_iterator it(svg.begin(), svg.end(), poly), end; it != end; ++it) {
    std::string const pts = (*it)[1].str();
    EXPECT_EQ(std::count(pts.begin(), pts.end(), ','), 2) << pts;
    ++polylines;
  }
  EXPECT_EQ(polylines, 6U);
  // axes and title
  EXPECT_NE(svg.find(">makespan / ideal</text>"), std::string::npos);
  EXPECT_NE(svg.find(">device capacity</text>"), std::string::npos);
  EXPECT_NE(svg.find("ideal &lt;test&gt; &amp; more"), std::string::npos);
  // capacity columns in byte order: 25% left of 50%
  EXPECT_LT(svg.find(">25%</text>"), svg.find(">50%</text>"));
  // uvm dashed, uvm-hints dotted
  EXPECT_NE(svg.find("stroke-dasharray=\"7 4\""), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray=\"2 3\""), std::string::npos);
}

TEST(ReplayPlotIdeal, ReferenceLinesAtOneAndTheTargetOnTheValueScale)
{
  auto const res = grid();
  std::string const svg = tr::to_ideal_svg(res, "t");
  EXPECT_EQ(count(svg, "class=\"reference\" data-y=\"1\""), 1U);
  EXPECT_EQ(count(svg, "class=\"reference\" data-y=\"1.25\""), 1U);
  EXPECT_NE(svg.find(">ideal (1.0)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">target (1.25)</text>"), std::string::npos);
  auto const y1 = attribute_after(svg, "data-y=\"1\"", "y1");
  auto const y125 = attribute_after(svg, "data-y=\"1.25\"", "y1");
  ASSERT_TRUE(y1 && y125);
  EXPECT_GT(*y1, *y125) << "1.25 is drawn above 1.0";
  // uvm-hints at 50% is exactly 1.0: its marker sits on the 1.0 line
  // (the tooltip is inside the circle: look the circle up from it)
  std::size_t const tip = svg.find("<title>lru · uvm-hints @ 50%: 1.000x");
  ASSERT_NE(tip, std::string::npos);
  std::size_t const circle = svg.rfind("<circle", tip);
  std::smatch m;
  std::string const tag = svg.substr(circle, svg.find('>', circle) - circle);
  ASSERT_TRUE(std::regex_search(tag, m, std::regex(" cy=\"([-0-9.]+)\"")));
  EXPECT_DOUBLE_EQ(std::stod(m[1].str()), *y1);
  // uvm at 25% (4.0x) is the highest point: above the target line
  std::size_t const top_tip = svg.find("<title>lru · uvm @ 25%: 4.000x");
  ASSERT_NE(top_tip, std::string::npos);
  std::size_t const top_circle = svg.rfind("<circle", top_tip);
  std::string const top_tag = svg.substr(top_circle, svg.find('>', top_circle) - top_circle);
  ASSERT_TRUE(std::regex_search(top_tag, m, std::regex(" cy=\"([-0-9.]+)\"")));
  EXPECT_LT(std::stod(m[1].str()), *y125);
}

TEST(ReplayPlotIdeal, APhaseFloorIsABarInItsColumnBetweenTheLines)
{
  auto res = grid();
  EXPECT_EQ(count(tr::to_ideal_svg(res, "t"), "class=\"phase-floor\""), 0U) << "no floor, no bar";
  for (tr::replay_result& r : res) {
    if (r.capacity_label == "50%") { r.phase_floor_seconds = 1.5 * r.ideal_seconds; }
  }
  std::string const svg = tr::to_ideal_svg(res, "t");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"phase-floor\""), 1U);
  EXPECT_EQ(count(svg, "data-column=\"50%\" data-y=\"1.5\""), 1U);
  EXPECT_EQ(count(svg, ">phase floor</text>"), 1U);
  // on the value scale: between the 1.25 line and uvm's 4.0x at 25 %
  auto const bar = attribute_after(svg, "class=\"phase-floor\"", "y1");
  auto const y125 = attribute_after(svg, "data-y=\"1.25\"", "y1");
  ASSERT_TRUE(bar && y125);
  EXPECT_LT(*bar, *y125) << "1.5 is drawn above 1.25";
}

TEST(ReplayPlotIdeal, RowsUnderTheFloorStretchTheAxisAndUnservedRunsAreHollow)
{
  // One mode, one prefetcher: labels are the policy alone. lru at 10% left requests
  // unserved and finished under its ideal time (0.8x): the axis reaches down to it.
  std::vector<tr::replay_result> res{row(tr::replay_mode::pool, "none", "lru", "10%", 100, 0.8, 1.0),
                                     row(tr::replay_mode::pool, "none", "lru", "20%", 200, 1.1, 1.0)};
  res[0].unserved = 3;
  std::string const svg = tr::to_ideal_svg(res, "t");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<g class=\"series\""), 1U);
  EXPECT_EQ(count(svg, "data-series=\"lru\""), 1U);
  EXPECT_NE(svg.find("3 requests unserved"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"white\" stroke=\"#1f77b4\""), std::string::npos) << "hollow marker";
  std::size_t const tip = svg.find("<title>lru @ 10%: 0.800x");
  ASSERT_NE(tip, std::string::npos);
  std::size_t const circle = svg.rfind("<circle", tip);
  std::string const tag = svg.substr(circle, svg.find('>', circle) - circle);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(tag, m, std::regex(" cy=\"([-0-9.]+)\"")));
  auto const y1 = attribute_after(svg, "data-y=\"1\"", "y1");
  ASSERT_TRUE(y1);
  double const cy = std::stod(m[1].str());
  EXPECT_GT(cy, *y1) << "0.8 is drawn under the 1.0 line";
  EXPECT_LE(cy, 60.0 + 300.0 + 0.05) << "and inside the plot area";
}

TEST(ReplayPlotIdeal, RealRunsInEveryModeAreWellFormed)
{
  namespace tt = tierpool::trace;
  auto const events = tt::generate("mlp-train", {{"layers", "3"}, {"width", "256"}, {"batch", "32"}}, 1);
  auto const t = tr::compiled_trace::compile(events);
  std::vector<tr::replay_result> all;
  for (tr::replay_mode m : {tr::replay_mode::pool, tr::replay_mode::uvm}) {
    tr::grid_options g;
    g.mode = m;
    g.policies = {"lru"};
    g.capacities = tr::parse_capacities("25%,50%,75%");
    g.threads = 2;
    auto part = tr::run_grid(t, g);
    all.insert(all.end(), part.begin(), part.end());
  }
  std::string const svg = tr::to_ideal_svg(all, "mlp");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<g class=\"series\""), 2U);
  EXPECT_EQ(count(svg, "data-series=\"lru · pool\""), 1U);
  EXPECT_EQ(count(svg, "data-series=\"lru · uvm\""), 1U);
  std::string const old = tr::to_svg(all, "mlp");
  EXPECT_EQ(xml_problem(old), "");
}

}  // namespace

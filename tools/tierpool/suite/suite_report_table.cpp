// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_report_table.cpp — the comparison table of `tierpool suite report` (one row per
// figure identity, one column per bundle, ratios to the baseline) and its text and CSV
// renderings; the HTML page (suite_report_html.cpp) renders the same grid.
#include "suite/suite_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace tierpool::cli::suite {

namespace {

/// The table of workload `name`, added (empty) to `tables` when it is new.
table& table_for(std::vector<table>& tables, workload const& w)
{
  auto it = std::find_if(tables.begin(), tables.end(), [&](table const& t) { return t.name == w.name; });
  if (it != tables.end()) {
    if (!it->plot && w.plot) { it->plot = w.plot; }
    return *it;
  }
  tables.push_back({w.name, w.title, w.plot, {}, {}});
  return tables.back();
}

void add_figure(table& t, std::map<std::string, std::size_t>& index, figure const& f, std::size_t bundle, std::size_t n)
{
  auto [it, fresh] = index.try_emplace(f.identity, t.rows.size());
  if (fresh) { t.rows.push_back({&f, std::vector<figure const*>(n, nullptr), std::vector<std::optional<double>>(n)}); }
  t.rows[it->second].cells[bundle] = &f;
  for (param const& p : f.params) {
    if (std::find(t.param_keys.begin(), t.param_keys.end(), p.key) == t.param_keys.end()) { t.param_keys.push_back(p.key); }
  }
}

void set_ratios(table& t, std::size_t baseline)
{
  for (row& r : t.rows) {
    figure const* base = r.cells[baseline];
    for (std::size_t i = 0; i < r.cells.size(); ++i) {
      if (base != nullptr && r.cells[i] != nullptr && base->value != 0.0) { r.ratios[i] = r.cells[i]->value / base->value; }
    }
  }
}

std::string csv_field(std::string const& s)
{
  if (s.find_first_of(",\"\n") == std::string::npos) { return s; }
  std::string out = "\"";
  for (char c : s) { out += c == '"' ? std::string("\"\"") : std::string(1, c); }
  return out + "\"";
}

std::string plain_number(double v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

/// The text table: columns padded, numbers right-aligned, a rule under the heading.
std::string render_grid(grid const& g)
{
  std::vector<std::size_t> width(g.heading.size());
  for (std::size_t c = 0; c < g.heading.size(); ++c) {
    width[c] = g.heading[c].size();
    for (auto const& line : g.cells) { width[c] = std::max(width[c], line[c].size()); }
  }
  auto const line_of = [&](std::vector<std::string> const& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      std::string const pad(width[c] - cells[c].size(), ' ');
      out += "  " + (c >= g.first_value_column ? pad + cells[c] : cells[c] + pad);
    }
    out.erase(out.find_last_not_of(' ') + 1);
    return out + "\n";
  };
  std::string out = line_of(g.heading);
  std::size_t total = 0;
  for (std::size_t w : width) { total += w + 2; }
  out += "  " + std::string(total - 2, '-') + "\n";
  for (auto const& line : g.cells) { out += line_of(line); }
  return out;
}

std::string bundle_line(bundle const& b, std::size_t i, std::size_t baseline)
{
  std::string out = "  [" + std::to_string(i) + "] " + b.label + (i == baseline ? "  (baseline)" : "") + "\n      ";
  out += (b.device_name.empty() ? b.device_id : b.device_name);
  if (b.memory_bytes) { out += ", " + format_bytes(static_cast<double>(*b.memory_bytes)); }
  if (!b.link.empty()) { out += ", link " + b.link; }
  if (!b.tierpool_version.empty()) { out += ", tierpool " + b.tierpool_version; }
  out += ", suite v" + std::to_string(b.suite_version) + ", " + b.file + "\n";
  return out;
}

}  // namespace

std::vector<table> build_tables(std::span<bundle const> bundles, std::size_t baseline)
{
  std::vector<table> tables;
  std::map<std::string, std::map<std::string, std::size_t>> index;  // workload -> identity -> row
  for (std::size_t b = 0; b < bundles.size(); ++b) {
    for (workload const& w : bundles[b].workloads) {
      table& t = table_for(tables, w);
      for (figure const& f : w.figures) { add_figure(t, index[w.name], f, b, bundles.size()); }
    }
  }
  for (table& t : tables) { set_ratios(t, baseline); }
  return tables;
}

grid make_grid(table const& t, std::span<bundle const> bundles, std::size_t baseline)
{
  grid g;
  g.heading.push_back("figure");
  for (std::string const& k : t.param_keys) { g.heading.push_back(k); }
  g.first_value_column = g.heading.size();
  for (bundle const& b : bundles) { g.heading.push_back(b.label); }
  for (std::size_t i = 0; i < bundles.size(); ++i) {
    if (i != baseline) { g.heading.push_back(bundles[i].label + " / base"); }
  }
  for (row const& r : t.rows) {
    std::vector<std::string> line{r.first->name};
    for (std::string const& k : t.param_keys) {
      param const* p = find_param(*r.first, k);
      line.push_back(p != nullptr ? format_param(*p) : std::string());
    }
    for (figure const* f : r.cells) { line.push_back(f != nullptr ? format_cell(*f) : std::string("-")); }
    for (std::size_t i = 0; i < r.cells.size(); ++i) {
      if (i != baseline) { line.push_back(r.ratios[i] ? format_ratio(r.ratios[i]) : std::string("-")); }
    }
    g.cells.push_back(std::move(line));
  }
  return g;
}

std::string format_number(double v)
{
  char buf[32];
  if (std::abs(v) >= 1e4 && std::abs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  }
  return buf;
}

std::string format_value(double v, std::string const& unit)
{
  if (unit == "B") { return format_bytes(v); }
  if (unit == "bool") { return v != 0.0 ? "true" : "false"; }
  return format_number(v) + (unit.empty() ? "" : " " + unit);
}

std::string format_cell(figure const& f)
{
  std::string out = format_value(f.value, f.unit);
  if (f.min != f.max) {
    bool const bytes = f.unit == "B";
    out += " (" + (bytes ? format_bytes(f.min) : format_number(f.min)) + ".." +
           (bytes ? format_bytes(f.max) : format_number(f.max)) + ")";
  }
  return out;
}

std::string format_ratio(std::optional<double> r)
{
  if (!r) { return {}; }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fx", *r);
  return buf;
}

bool is_byte_key(std::string const& key)
{
  return key == "bytes" || (key.size() > 6 && key.ends_with("_bytes"));
}

std::string format_bytes(double bytes)
{
  static char const* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t u = 0;
  while (std::abs(bytes) >= 1024.0 && u + 1 < std::size(units)) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, bytes == std::floor(bytes) ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::string format_param(param const& p)
{
  return p.number && is_byte_key(p.key) ? format_bytes(*p.number) : p.text;
}

param const* find_param(figure const& f, std::string const& key)
{
  auto it = std::find_if(f.params.begin(), f.params.end(), [&](param const& p) { return p.key == key; });
  return it == f.params.end() ? nullptr : &*it;
}

std::string join_params(figure const& f, std::span<std::string const> keys)
{
  std::string out;
  for (std::string const& k : keys) {
    param const* p = find_param(f, k);
    out += (out.empty() ? "" : ";") + k + "=" + (p != nullptr ? p->text : std::string());
  }
  return out;
}

std::string to_text(std::span<bundle const> bundles, std::size_t baseline, std::span<table const> tables)
{
  std::string out = "suite report: " + std::to_string(bundles.size()) + " bundle" + (bundles.size() == 1 ? "" : "s") +
                    ", baseline [" + std::to_string(baseline) + "] " + bundles[baseline].label + "\n";
  for (std::size_t i = 0; i < bundles.size(); ++i) { out += bundle_line(bundles[i], i, baseline); }
  for (table const& t : tables) {
    out += "\n" + t.name + ": " + t.title + "\n";
    out += render_grid(make_grid(t, bundles, baseline));
  }
  std::string skipped;
  for (bundle const& b : bundles) {
    for (skipped_workload const& s : b.skipped) { skipped += "  " + b.label + ": " + s.workload + ": " + s.reason + "\n"; }
  }
  if (!skipped.empty()) { out += "\nskipped workloads:\n" + skipped; }
  return out;
}

std::string to_csv(std::span<bundle const> bundles, std::span<table const> tables)
{
  std::string out = "device,simulated,file,workload,figure,params,unit,value,min,max,reps,ratio_to_baseline\n";
  for (std::size_t b = 0; b < bundles.size(); ++b) {
    for (table const& t : tables) {
      for (row const& r : t.rows) {
        figure const* f = r.cells[b];
        if (f == nullptr) { continue; }
        std::string params;
        for (param const& p : f->params) { params += (params.empty() ? "" : ";") + p.key + "=" + p.text; }
        std::string const fields[] = {bundles[b].device_id, bundles[b].simulated ? "true" : "false", bundles[b].file, t.name,
                                      f->name, params, f->unit, plain_number(f->value), plain_number(f->min),
                                      plain_number(f->max), std::to_string(f->reps),
                                      r.ratios[b] ? plain_number(*r.ratios[b]) : std::string()};
        for (std::size_t i = 0; i < std::size(fields); ++i) { out += (i == 0 ? "" : ",") + csv_field(fields[i]); }
        out += "\n";
      }
    }
  }
  return out;
}

}  // namespace tierpool::cli::suite

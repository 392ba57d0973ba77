// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_report_bundle.cpp — reading and checking suite bundles (docs/chapters/suite.md):
// every error names the file and, for a missing or mistyped field, the field's path.
#include "suite/suite_report.hpp"

#include <tierpool/error.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace tierpool::cli::suite {

namespace json = boost::json;

namespace {

constexpr char const* kFormat = "tierpool-suite-bundle";

/// Reads fields of one JSON object, naming `where` (its path in the bundle) in errors.
class fields {
public:
  fields(std::string const& file, json::object const& o, std::string where) : file_(file), o_(o), where_(std::move(where)) {}

  [[nodiscard]] json::value const& required(char const* key) const
  {
    json::value const* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) { fail(key, "is missing (a required field)"); }
    return *v;
  }
  [[nodiscard]] std::string text(char const* key) const
  {
    json::value const& v = required(key);
    if (!v.is_string()) { fail(key, "must be a string"); }
    return std::string(v.get_string());
  }
  [[nodiscard]] std::string optional_text(char const* key) const
  {
    json::value const* v = o_.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
  }
  [[nodiscard]] double number(char const* key) const
  {
    json::value const& v = required(key);
    if (!v.is_number()) { fail(key, "must be a number"); }
    return v.to_number<double>();
  }
  [[nodiscard]] std::int64_t integer(char const* key) const
  {
    json::value const& v = required(key);
    if (!v.is_int64() && !(v.is_uint64() && v.get_uint64() <= std::numeric_limits<std::int64_t>::max())) {
      fail(key, "must be an integer");
    }
    return v.to_number<std::int64_t>();
  }
  [[nodiscard]] bool boolean(char const* key) const
  {
    json::value const& v = required(key);
    if (!v.is_bool()) { fail(key, "must be true or false"); }
    return v.get_bool();
  }
  [[nodiscard]] fields object(char const* key) const
  {
    json::value const& v = required(key);
    if (!v.is_object()) { fail(key, "must be an object"); }
    return {file_, v.get_object(), path(key)};
  }
  /// An object field that may be absent (an empty one then).
  [[nodiscard]] fields optional_object(char const* key) const
  {
    json::value const* v = o_.if_contains(key);
    return {file_, v != nullptr && v->is_object() ? v->get_object() : empty_, path(key)};
  }
  [[nodiscard]] json::array const& array(char const* key) const
  {
    json::value const& v = required(key);
    if (!v.is_array()) { fail(key, "must be an array"); }
    return v.get_array();
  }
  /// Element `i` of array `key` as an object.
  [[nodiscard]] fields element(char const* key, json::array const& a, std::size_t i) const
  {
    std::string const at = path(key) + "[" + std::to_string(i) + "]";
    if (!a[i].is_object()) { throw logic_error(file_ + ": " + at + " must be an object"); }
    return {file_, a[i].get_object(), at};
  }
  [[nodiscard]] std::vector<std::string> strings(char const* key) const
  {
    std::vector<std::string> out;
    for (json::value const& v : array(key)) {
      if (!v.is_string()) { fail(key, "must be an array of strings"); }
      out.emplace_back(v.get_string());
    }
    return out;
  }
  [[nodiscard]] json::object const& raw() const { return o_; }
  [[nodiscard]] std::string path(char const* key) const { return where_.empty() ? std::string(key) : where_ + "." + key; }
  [[noreturn]] void fail(char const* key, char const* what) const
  {
    throw logic_error(file_ + ": field '" + path(key) + "' " + what);
  }

private:
  static inline json::object const empty_{};
  std::string const& file_;
  json::object const& o_;
  std::string where_;
};

std::string number_text(double v)
{
  char buf[32];
  if (std::abs(v) < 1e15 && v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.10g", v);
  }
  return buf;
}

param read_param(fields const& where, std::string const& key, json::value const& v)
{
  if (v.is_object() || v.is_array() || v.is_null()) { where.fail(key.c_str(), "must be a string, a number or a boolean"); }
  if (v.is_string()) { return {key, std::string(v.get_string()), std::nullopt}; }
  if (v.is_number()) {
    double const d = v.to_number<double>();
    return {key, number_text(d), d};
  }
  return {key, v.get_bool() ? "true" : "false", std::nullopt};
}

std::string identity_of(figure const& f)
{
  std::vector<param const*> sorted;
  for (param const& p : f.params) { sorted.push_back(&p); }
  std::sort(sorted.begin(), sorted.end(), [](param const* a, param const* b) { return a->key < b->key; });
  std::string id = f.name;
  for (param const* p : sorted) { id += ";" + p->key + "=" + p->text; }
  return id;
}

figure read_figure(fields const& f)
{
  figure out;
  out.name = f.text("name");
  out.unit = f.text("unit");
  out.value = f.number("value");
  out.min = f.number("min");
  out.max = f.number("max");
  out.reps = f.integer("reps");
  fields const params = f.object("params");
  for (auto const& kv : params.raw()) {
    out.params.push_back(read_param(params, std::string(kv.key()), kv.value()));
  }
  out.identity = identity_of(out);
  return out;
}

plot_spec read_plot(fields const& p)
{
  plot_spec out;
  out.x = p.text("x");
  out.x_label = p.optional_text("x_label");
  if (out.x_label.empty()) { out.x_label = out.x; }
  json::value const* log = p.raw().if_contains("x_log");
  out.x_log = log != nullptr && log->is_bool() && log->get_bool();
  out.split = p.strings("split");
  out.series = p.strings("series");
  return out;
}

workload read_workload(fields const& w)
{
  workload out;
  out.name = w.text("name");
  out.title = w.text("title");
  if (w.raw().contains("plot")) { out.plot = read_plot(w.object("plot")); }
  json::array const& figures = w.array("figures");
  for (std::size_t i = 0; i < figures.size(); ++i) { out.figures.push_back(read_figure(w.element("figures", figures, i))); }
  return out;
}

std::string link_name(json::object const& device)
{
  json::value const* link = device.if_contains("link");
  if (link == nullptr) { return {}; }
  if (link->is_string()) { return std::string(link->get_string()); }
  if (link->is_object()) {
    json::value const* name = link->get_object().if_contains("name");
    if (name != nullptr && name->is_string()) { return std::string(name->get_string()); }
  }
  return {};
}

void read_device(fields const& d, bundle& b)
{
  b.device_id = d.text("id");
  b.simulated = d.boolean("simulated");
  b.device_name = d.optional_text("name");
  json::value const* mem = d.raw().if_contains("memory_bytes");
  if (mem != nullptr && (mem->is_uint64() || (mem->is_int64() && mem->get_int64() >= 0))) {
    b.memory_bytes = mem->to_number<std::uint64_t>();
  }
  b.link = link_name(d.raw());
  if (json::value const* k = d.raw().if_contains("kernel_roofline"); k != nullptr && k->is_object()) {
    json::value const* f = k->as_object().if_contains("flops_per_second");
    json::value const* by = k->as_object().if_contains("bytes_per_second");
    if (f != nullptr && by != nullptr && f->is_number() && by->is_number() && f->to_number<double>() > 0 &&
        by->to_number<double>() > 0) {
      b.kernel_roofline = std::pair{f->to_number<double>(), by->to_number<double>()};
    }
  }
}

void read_context(fields const& top, bundle& b)
{
  b.suite_preset = top.optional_text("suite_preset");
  b.created_utc = top.optional_text("created_utc");
  b.tierpool_version = top.optional_object("tierpool").optional_text("version");
  fields const machine = top.optional_object("machine");
  b.machine = machine.optional_text("hostname");
  std::string const cpu = machine.optional_text("cpu");
  if (!cpu.empty()) { b.machine += (b.machine.empty() ? "" : ", ") + cpu; }
}

void read_skipped(fields const& top, bundle& b)
{
  if (!top.raw().contains("skipped")) { return; }
  json::array const& skipped = top.array("skipped");
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    fields const s = top.element("skipped", skipped, i);
    b.skipped.push_back({s.text("workload"), s.text("reason")});
  }
}

json::value parse_file(std::string const& path)
{
  std::error_code ec_fs;
  if (!std::filesystem::is_regular_file(path, ec_fs)) {
    throw logic_error("'" + path + "': " + (std::filesystem::exists(path, ec_fs) ? "not a file" : "no such file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) { throw logic_error("cannot open '" + path + "'"); }
  std::ostringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(text.str(), ec);
  if (ec) { throw logic_error(path + ": not valid JSON: " + ec.message()); }
  return v;
}

}  // namespace

bundle read_bundle(std::string const& path)
{
  json::value const v = parse_file(path);
  json::value const* format = v.is_object() ? v.get_object().if_contains("format") : nullptr;
  if (format == nullptr || !format->is_string() || format->get_string() != kFormat) {
    throw logic_error(path + ": not a tierpool suite bundle (no \"format\": \"" + kFormat + "\")");
  }
  fields const top(path, v.get_object(), "");
  bundle b;
  b.file = path;
  b.suite_version = top.integer("suite_version");
  read_device(top.object("device"), b);
  read_context(top, b);
  json::array const& workloads = top.array("workloads");
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    b.workloads.push_back(read_workload(top.element("workloads", workloads, i)));
  }
  read_skipped(top, b);
  return b;
}

void label_bundles(std::vector<bundle>& bundles)
{
  for (bundle& b : bundles) {
    b.label = b.device_id + (b.simulated ? " (sim)" : "");
    auto const same = std::count_if(bundles.begin(), bundles.end(), [&](bundle const& o) { return o.device_id == b.device_id; });
    if (same > 1) { b.label += " [" + b.file.substr(b.file.find_last_of('/') + 1) + "]"; }
  }
}

std::size_t resolve_baseline(std::span<bundle const> bundles, std::string const& spec)
{
  if (spec.empty()) { return 0; }
  std::size_t index = 0;
  auto const r = std::from_chars(spec.data(), spec.data() + spec.size(), index);
  if (r.ec == std::errc{} && r.ptr == spec.data() + spec.size()) {
    if (index >= bundles.size()) {
      throw logic_error("--baseline " + spec + " is out of range: " + std::to_string(bundles.size()) +
                        (bundles.size() == 1 ? " bundle" : " bundles") + " (0.." + std::to_string(bundles.size() - 1) + ")");
    }
    return index;
  }
  auto const it = std::find_if(bundles.begin(), bundles.end(), [&](bundle const& b) { return b.device_id == spec; });
  if (it == bundles.end()) {
    std::string ids;
    for (bundle const& b : bundles) { ids += (ids.empty() ? "" : ", ") + b.device_id; }
    throw logic_error("--baseline '" + spec + "' names no bundle's device (devices: " + ids + ")");
  }
  return static_cast<std::size_t>(it - bundles.begin());
}

}  // namespace tierpool::cli::suite

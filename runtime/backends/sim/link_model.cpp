// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// link_model.cpp — the copy-link model of the sim backend: transfer times, presets,
// parsing of "pcie4" / "BW,LAT" descriptions, and the direction a copy uses.
// Main entry points: link_model::transfer_ns, parse_link_model, link_for.
#include <tierpool/backends/sim_backend.hpp>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>
#include <utility>

namespace tierpool {

tick link_model::transfer_ns(std::size_t bytes) const noexcept
{
  tick t = latency_ns;
  if (bandwidth_bytes_per_s > 0.0 && bytes > 0) {
    // ceil so that a non-empty copy always costs at least 1 ns of bandwidth time.
    double const ns = std::ceil(static_cast<double>(bytes) * 1e9 / bandwidth_bytes_per_s);
    constexpr auto max_tick = static_cast<double>(std::numeric_limits<tick>::max() / 2);
    t += ns >= max_tick ? static_cast<tick>(max_tick) : static_cast<tick>(ns);
  }
  return t;
}

namespace {

std::string_view trim(std::string_view s) noexcept
{
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) {
    s.remove_suffix(1);
  }
  return s;
}

bool iequals(std::string_view a, std::string_view b) noexcept
{
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

/// Parses a whole string as a finite, non-negative double; nullopt otherwise.
std::optional<double> parse_number(std::string_view s) noexcept
{
  s = trim(s);
  if (s.empty()) {
    return std::nullopt;
  }
  double v = 0.0;
  auto const [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v) || v < 0.0) {
    return std::nullopt;
  }
  return v;
}

std::optional<link_model> fail(std::string* error, std::string msg)
{
  if (error != nullptr) {
    *error = std::move(msg);
  }
  return std::nullopt;
}

}  // namespace

std::optional<link_model> parse_link_model(std::string_view text, std::string* error)
{
  static constexpr std::array<std::pair<std::string_view, link_model>, 11> presets{{
    {"pcie4", link_model::pcie4()},
    {"pcie5", link_model::pcie5()},
    {"nvlink-c2c", link_model::nvlink_c2c()},
    {"c2c", link_model::nvlink_c2c()},
    {"cxl", link_model::cxl()},
    {"hbm", link_model::hbm()},
    {"host", link_model::host_memcpy()},
    {"nvme4-read", link_model::nvme4_read()},
    {"nvme4-write", link_model::nvme4_write()},
    {"none", link_model{}},
    {"unthrottled", link_model{}},
  }};
  std::string_view const t = trim(text);
  if (t.empty()) {
    return fail(error, "empty link description (expected a preset such as 'pcie4' or 'BW,LAT')");
  }
  for (auto const& [name, model] : presets) {
    if (iequals(t, name)) {
      return model;
    }
  }
  auto const comma = t.find(',');
  if (comma == std::string_view::npos) {
    return fail(error, "unknown link preset '" + std::string(t) +
                         "' (presets: pcie4, pcie5, nvlink-c2c, cxl, hbm, host, nvme4-read, nvme4-write, none; or BW,LAT "
                         "with bytes/s and ns, e.g. 25e9,2000)");
  }
  auto const bw = parse_number(t.substr(0, comma));
  if (!bw) {
    return fail(error, "bad bandwidth '" + std::string(trim(t.substr(0, comma))) +
                         "' in link '" + std::string(t) + "' (expected a non-negative number of bytes/s)");
  }
  auto const lat = parse_number(t.substr(comma + 1));
  if (!lat || *lat > 1e18) {
    return fail(error, "bad latency '" + std::string(trim(t.substr(comma + 1))) +
                         "' in link '" + std::string(t) + "' (expected a non-negative number of ns)");
  }
  return link_model{*bw, static_cast<tick>(std::llround(*lat))};
}

std::string_view to_string(sim_link link) noexcept
{
  switch (link) {
    case sim_link::h2d: return "h2d";
    case sim_link::d2h: return "d2h";
    case sim_link::d2d: return "d2d";
    case sim_link::h2h: return "h2h";
    case sim_link::s2h: return "s2h";
    case sim_link::h2s: return "h2s";
  }
  return "unknown";
}

sim_link link_for(tier_kind dst, tier_kind src) noexcept
{
  if (src == tier_kind::storage) { return sim_link::s2h; }
  if (dst == tier_kind::storage) { return sim_link::h2s; }
  bool const dst_dev = dst == tier_kind::device;
  bool const src_dev = src == tier_kind::device;
  if (dst_dev) {
    return src_dev ? sim_link::d2d : sim_link::h2d;
  }
  return src_dev ? sim_link::d2h : sim_link::h2h;
}

link_model const& sim_links::get(sim_link link) const noexcept
{
  switch (link) {
    case sim_link::h2d: return h2d;
    case sim_link::d2h: return d2h;
    case sim_link::d2d: return d2d;
    case sim_link::h2h: return h2h;
    case sim_link::s2h: return s2h;
    case sim_link::h2s: return h2s;
  }
  return h2h;
}

std::string_view to_string(sim_call kind) noexcept
{
  switch (kind) {
    case sim_call::allocate: return "allocate";
    case sim_call::copy: return "copy";
    case sim_call::event: return "event";
    case sim_call::stream_create: return "stream_create";
    case sim_call::prefetch: return "prefetch";
    case sim_call::host_func: return "host_func";
    case sim_call::compute: return "compute";
    case sim_call::any: return "any";
  }
  return "unknown";
}

}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_presets.cpp — the simulated presets and the --devices parser of `tierpool suite run`.
// The figures are vendors' headline numbers rounded to what a copy engine reaches
// (docs/chapters/suite.md cites them); `suite calibrate` is how a measured machine replaces them.
#include "suite/suite_presets.hpp"

#include <tierpool/backends/cuda_backend.hpp>
#include <tierpool/error.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <deque>
#include <fstream>
#include <sstream>

namespace tierpool::cli::suite {
namespace {

constexpr std::uint64_t GiB = 1ULL << 30U;

// fp32 without tensor cores, vendors' datasheets: A100 19.5 TFLOP/s, H100 PCIe 51.2,
// H100/H200 SXM and GH200 67; the kernels' memory bandwidth is the device link's (HBM).
constexpr std::array<device_preset, 5> kPresets = {{
  {"a100-pcie4", "NVIDIA A100 PCIe 80 GB on PCIe 4.0 x16 (simulated)", 80 * GiB, link_model::pcie4(),
   link_model{1.9e12, 2'000}, "pcie4", link_model{}, 19.5e12},
  {"h100-pcie", "NVIDIA H100 PCIe 80 GB on PCIe 5.0 x16 (simulated)", 80 * GiB, link_model::pcie5(),
   link_model{2.0e12, 2'000}, "pcie5", link_model{}, 51.2e12},
  {"h200-sxm", "NVIDIA H200 SXM 141 GB on PCIe 5.0 x16 to the host (simulated)", 141'000'000'000ULL,
   link_model::pcie5(), link_model{4.8e12, 2'000}, "pcie5", link_model{}, 67e12},
  {"gh200", "NVIDIA GH200 Grace Hopper 96 GB, NVLink-C2C to the host (simulated)", 96 * GiB,
   link_model::nvlink_c2c(), link_model{4.0e12, 2'000}, "nvlink-c2c", link_model{}, 67e12},
  {"h100-cxl", "NVIDIA H100 PCIe 80 GB, host tier on a CXL memory expander (simulated)", 80 * GiB,
   link_model::cxl(), link_model{2.0e12, 2'000}, "cxl", link_model{}, 51.2e12},
}};

std::string names()
{
  std::string s;
  for (device_preset const& p : kPresets) { s += (s.empty() ? "" : ", ") + std::string(p.name); }
  return s;
}

// Presets read from files: their strings and the preset, kept for the process's life.
struct loaded_preset {
  std::string name;
  std::string title;
  std::string link_name;
  device_preset preset{};
};
std::deque<loaded_preset>& loaded()
{
  static std::deque<loaded_preset> l;
  return l;
}

double field(boost::json::object const& o, char const* key, std::string const& where)
{
  boost::json::value const* v = o.if_contains(key);
  if (v == nullptr || !v->is_number()) { throw logic_error(where + ": '" + key + "' is missing or not a number"); }
  double const d = v->to_number<double>();
  if (!std::isfinite(d) || d < 0) { throw logic_error(where + ": '" + key + "' must be finite and >= 0"); }
  return d;
}

link_model link_field(boost::json::object const& o, char const* key, std::string const& where)
{
  boost::json::value const* v = o.if_contains(key);
  if (v == nullptr || !v->is_object()) { throw logic_error(where + ": '" + key + "' is missing"); }
  std::string const at = where + ": " + key;
  double const bw = field(v->as_object(), "bandwidth_bytes_per_second", at);
  double const lat = field(v->as_object(), "latency_seconds", at);
  if (bw <= 0) { throw logic_error(at + ": 'bandwidth_bytes_per_second' must be > 0"); }
  return link_model{bw, static_cast<tick>(std::llround(lat * 1e9))};
}

}  // namespace

std::span<device_preset const> presets() noexcept { return kPresets; }

device_preset const& load_preset_file(std::string const& path)
{
  std::ifstream in(path);
  if (!in) { throw logic_error("preset file " + path + ": cannot be read"); }
  std::stringstream ss;
  ss << in.rdbuf();
  boost::system::error_code ec;
  boost::json::value const v = boost::json::parse(ss.str(), ec);
  if (ec) { throw logic_error("preset file " + path + ": not JSON (" + ec.message() + ")"); }
  boost::json::object const* o = v.if_object();
  boost::json::value const* fmt = o != nullptr ? o->if_contains("format") : nullptr;
  if (fmt == nullptr || !fmt->is_string() || fmt->as_string() != kPresetFormat) {
    throw logic_error("preset file " + path + ": not a tierpool suite preset (no \"format\": \"" +
                      std::string(kPresetFormat) + "\")");
  }
  loaded_preset lp;
  boost::json::value const* name = o->if_contains("name");
  lp.name = name != nullptr && name->is_string() ? std::string(name->as_string()) : path;
  boost::json::value const* title = o->if_contains("title");
  lp.title = title != nullptr && title->is_string() ? std::string(title->as_string()) : lp.name + " (calibrated)";
  lp.link_name = "calibrated";
  std::string const where = "preset file " + path;
  double const mem = field(*o, "memory_bytes", where);
  if (mem < 1 << 20) { throw logic_error(where + ": 'memory_bytes' must be at least 1 MiB"); }
  link_model const h2d = link_field(*o, "h2d", where);
  link_model const d2h = link_field(*o, "d2h", where);
  link_model const dev = o->contains("device_link") ? link_field(*o, "device_link", where) : link_model::hbm();
  double flops = 0.0;
  double kbytes = 0.0;
  if (boost::json::value const* k = o->if_contains("kernels")) {
    if (!k->is_object()) { throw logic_error(where + ": 'kernels' must be an object"); }
    flops = field(k->as_object(), "flops_per_second", where + ": kernels");
    kbytes = field(k->as_object(), "bytes_per_second", where + ": kernels");
    if (flops <= 0 || kbytes <= 0) { throw logic_error(where + ": kernels: the roofline's figures must be > 0"); }
  }
  sim_host_costs hc;
  if (boost::json::value const* h = o->if_contains("host_costs")) {
    if (!h->is_object()) { throw logic_error(where + ": 'host_costs' must be an object"); }
    std::string const at = where + ": host_costs";
    auto ns = [&](char const* key) {
      boost::json::value const* given = h->as_object().if_contains(key);
      if (given == nullptr) { return tick{0}; }
      double const sec = field(h->as_object(), key, at);
      if (sec > 1.0) { throw logic_error(at + ": '" + key + "' is over a second"); }
      return static_cast<tick>(std::llround(sec * 1e9));
    };
    hc = sim_host_costs{.copy = ns("copy_seconds"), .event = ns("event_seconds"), .compute = ns("kernel_seconds"),
                        .host_func = ns("host_func_seconds")};
  }
  std::deque<loaded_preset>& all = loaded();
  all.push_back(std::move(lp));
  loaded_preset& back = all.back();
  back.preset = device_preset{back.name, back.title, static_cast<std::uint64_t>(mem), h2d, dev, back.link_name, d2h,
                              flops, kbytes, hc};
  return back.preset;
}

std::pair<double, double> kernel_roofline_of(device_preset const& p) noexcept
{
  if (p.kernel_flops <= 0) { return {50e12, 3e12}; }  // the demo's default (compute_backend.hpp)
  return {p.kernel_flops, p.kernel_bytes > 0 ? p.kernel_bytes : p.device_link.bandwidth_bytes_per_s};
}

std::optional<std::pair<double, double>> kernel_roofline_for_gpu(std::string_view gpu_name) noexcept
{
  // GH200 before H200, which its name contains.
  for (auto const& [part, preset] : {std::pair<char const*, char const*>{"GH200", "gh200"}, {"H200", "h200-sxm"},
                                     {"H100", "h100-pcie"}, {"A100", "a100-pcie4"}}) {
    if (gpu_name.find(part) == std::string_view::npos) { continue; }
    for (device_preset const& p : kPresets) {
      if (p.name == preset) { return kernel_roofline_of(p); }
    }
  }
  return std::nullopt;
}

sim_options sim_options_for(device_preset const& p)
{
  sim_options o;
  o.device_bytes = static_cast<std::size_t>(p.memory_bytes);
  o.managed_bytes = std::size_t{1} << 30U;  // phantom: the link workload's managed buffers
  o.memory = sim_memory_mode::phantom;
  o.clock = sim_clock_mode::virtual_clock;
  sim_links l = sim_links::from_host_link(p.host_link);
  l.d2h = p.d2h();
  l.d2d = p.device_link;
  o.links = l;
  o.host_costs = p.host_costs;
  return o;
}

std::vector<device_spec> parse_devices(std::string_view text)
{
  std::vector<device_spec> out;
  if (text == "all") {
    int const n = cuda_device_count();
    for (int i = 0; i < n; ++i) { out.push_back({"cuda:" + std::to_string(i), false, i, nullptr}); }
    if (out.empty()) { return parse_devices("sim:h200-sxm,sim:gh200"); }
    return out;
  }
  for (std::string_view rest = text; !rest.empty();) {
    std::size_t const comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) { throw logic_error("--devices: an empty item in '" + std::string(text) + "'"); }
    device_spec d;
    if (item.substr(0, 4) == "sim:" && item.size() > 9 && item.substr(item.size() - 5) == ".json") {
      device_preset const& p = load_preset_file(std::string(item.substr(4)));
      d = {"sim:" + std::string(p.name), true, -1, &p};
    } else if (item.substr(0, 4) == "sim:") {
      std::string_view const name = item.substr(4);
      auto const it = std::find_if(kPresets.begin(), kPresets.end(), [&](device_preset const& p) { return p.name == name; });
      if (it == kPresets.end()) {
        throw logic_error("--devices: unknown simulated preset '" + std::string(name) + "' (presets: " + names() + ")");
      }
      d = {std::string(item), true, -1, &*it};
    } else {
      std::string_view const num = item.substr(0, 5) == "cuda:" ? item.substr(5) : item;
      int ord = -1;
      auto const r = std::from_chars(num.data(), num.data() + num.size(), ord);
      if (num.empty() || r.ec != std::errc{} || r.ptr != num.data() + num.size() || ord < 0) {
        throw logic_error("--devices: '" + std::string(item) + "' is neither a CUDA ordinal nor sim:PRESET (presets: " +
                          names() + ")");
      }
      std::string why;
      int const n = cuda_device_count(&why);
      if (ord >= n) {
        throw logic_error("--devices: CUDA device " + std::to_string(ord) + " does not exist (" +
                          (n > 0 ? std::to_string(n) + " CUDA devices" : "no CUDA device: " + why) +
                          "); simulated presets: sim:" + names());
      }
      d = {"cuda:" + std::to_string(ord), false, ord, nullptr};
    }
    if (std::any_of(out.begin(), out.end(), [&](device_spec const& e) { return e.id == d.id; })) {
      throw logic_error("--devices: '" + d.id + "' is named twice");
    }
    out.push_back(std::move(d));
  }
  if (out.empty()) { throw logic_error("--devices: no device given"); }
  return out;
}

}  // namespace tierpool::cli::suite

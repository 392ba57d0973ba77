// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_calibrate.cpp — `tierpool suite calibrate BUNDLE`: the measured link of a bundle as
// a preset the simulator accepts (`suite run --devices sim:FILE.json`), so that a policy
// experiment on the simulator can be checked against the machine it models
// (docs/chapters/suite.md, "Calibration").
//
// Per direction, the baseline copies (`link`, path=baseline, mode=uni, pair=device-pinned_host)
// give (bytes, seconds = bytes / bandwidth) points; a least-squares line t = a + b * bytes
// gives the latency a (clamped at 0) and the bandwidth 1 / b, the link model the simulator
// uses (link_model::transfer_ns). The fit's worst relative error over the points is printed
// and kept in the preset (`fit_max_error`).
// GCC 12: a false -Wnull-dereference in std::string assignment inlined from
// boost::program_options (see bench_pool_command.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif
#include "commands.hpp"
#include "suite/suite_presets.hpp"
#include "suite/suite_report.hpp"

#include <tierpool/error.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace tierpool::cli {
namespace {

namespace po = boost::program_options;
namespace json = boost::json;

struct link_fit {
  double bandwidth{0.0};  // bytes/s
  double latency{0.0};    // s
  double max_error{0.0};  // worst |model - measured| / measured over the points
  std::size_t points{0};
};

std::string param_text(suite::figure const& f, char const* key)
{
  suite::param const* p = suite::find_param(f, key);
  return p == nullptr ? std::string() : p->text;
}

link_fit fit_direction(suite::bundle const& b, char const* direction)
{
  std::vector<std::pair<double, double>> pts;  // bytes, seconds
  for (suite::workload const& w : b.workloads) {
    if (w.name != "link") { continue; }
    for (suite::figure const& f : w.figures) {
      suite::param const* bytes = suite::find_param(f, "bytes");
      if (f.name != "bandwidth" || f.unit != "GB/s" || bytes == nullptr || !bytes->number || f.value <= 0 ||
          param_text(f, "path") != "baseline" || param_text(f, "mode") != "uni" ||
          param_text(f, "pair") != "device-pinned_host" || param_text(f, "direction") != direction) {
        continue;
      }
      pts.emplace_back(*bytes->number, *bytes->number / (f.value * 1e9));
    }
  }
  if (pts.size() < 2) {
    throw logic_error(b.file + ": the link workload has " + std::to_string(pts.size()) + " " + direction +
                      " baseline figure(s) of device-pinned_host; calibration needs at least two sizes "
                      "(tierpool suite run --only link)");
  }
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto const& [x, y] : pts) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  double const n = static_cast<double>(pts.size());
  double const den = n * sxx - sx * sx;
  double slope = den != 0 ? (n * sxy - sx * sy) / den : 0.0;
  double icpt = (sy - slope * sx) / n;
  if (icpt < 0) {  // no negative latency: the line through the origin
    icpt = 0;
    slope = sxy / sxx;
  }
  if (!(slope > 0)) { throw logic_error(b.file + ": the " + std::string(direction) + " figures give no positive bandwidth"); }
  link_fit out{1.0 / slope, icpt, 0.0, pts.size()};
  for (auto const& [x, y] : pts) { out.max_error = std::max(out.max_error, std::abs(icpt + slope * x - y) / y); }
  return out;
}

json::object link_json(link_fit const& f)
{
  return json::object{{"bandwidth_bytes_per_second", f.bandwidth}, {"latency_seconds", f.latency},
                      {"fit_max_error", f.max_error}, {"points", f.points}};
}

}  // namespace

int suite_calibrate_command(int argc, char** argv)
{
  std::string bundle_path;
  std::string out_path;
  std::string name;
  po::options_description desc("tierpool suite calibrate BUNDLE [-o PRESET.json] [options]");
  // clang-format off
  desc.add_options()
    ("help,h", "this help")
    ("output,o", po::value(&out_path), "the preset file to write (default: calibrated-DEVICE.json)")
    ("name", po::value(&name), "the preset's name (default: calibrated-DEVICE)")
    ("bundle", po::value(&bundle_path), "the bundle (positional)");
  // clang-format on
  po::positional_options_description pos;
  pos.add("bundle", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool suite calibrate: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0U) {
    std::cout << desc << '\n';
    return 0;
  }
  if (bundle_path.empty()) {
    std::fprintf(stderr, "tierpool suite calibrate: no bundle given\n");
    return 2;
  }
  try {
    suite::bundle const b = suite::read_bundle(bundle_path);
    link_fit const h2d = fit_direction(b, "h2d");
    link_fit const d2h = fit_direction(b, "d2h");
    std::string dev = b.device_id;
    std::replace(dev.begin(), dev.end(), ':', '-');
    if (name.empty()) { name = "calibrated-" + dev; }
    if (out_path.empty()) { out_path = name + ".json"; }
    json::object p;
    p["format"] = std::string(suite::kPresetFormat);
    p["name"] = name;
    p["title"] = (b.device_name.empty() ? b.device_id : b.device_name) + ", calibrated from " + b.file;
    p["memory_bytes"] = b.memory_bytes.value_or(0) != 0 ? *b.memory_bytes : std::uint64_t{80} << 30U;
    p["h2d"] = link_json(h2d);
    p["d2h"] = link_json(d2h);
    p["calibrated_from"] = json::object{{"device", b.device_id}, {"simulated", b.simulated}, {"file", b.file},
                                        {"created_utc", b.created_utc}};
    std::ofstream f(out_path);
    f << json::serialize(p) << '\n';
    if (!f) { throw logic_error("cannot write " + out_path); }
    std::printf("%s: h2d %.4g GB/s + %.3g us, d2h %.4g GB/s + %.3g us (worst fit error %.2f %% / %.2f %% over %zu / %zu "
                "sizes) -> %s\n",
                b.device_id.c_str(), h2d.bandwidth * 1e-9, h2d.latency * 1e6, d2h.bandwidth * 1e-9, d2h.latency * 1e6,
                h2d.max_error * 100, d2h.max_error * 100, h2d.points, d2h.points, out_path.c_str());
    std::printf("simulate it: tierpool suite run --devices sim:%s\n", out_path.c_str());
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tierpool suite calibrate: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace tierpool::cli

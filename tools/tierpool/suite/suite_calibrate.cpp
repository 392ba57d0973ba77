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
//
// Note [Fitting the host's costs]
//   A link alone does not predict a training step of small kernels and copies: on a GPU
//   such a step is bound by the host, each CUDA call costing microseconds (Note [Host
//   time per call] in the sim backend). When the bundle has the demo's steady-state
//   iteration times (oversub-train, suite version 2), calibrate fits the host's time per
//   kernel launch, per copy and per event call, so that the simulator, given them,
//   predicts those times:
//     1. Run the demo on the simulator (the fitted link, the host costs so far, starting at
//        zero) for every measured row; read its calls per iteration of each kind and its
//        predicted steady time (and the reference's).
//     2. Solve for costs >= 0 that make calls . costs closest to the measured times, in
//        relative terms (non-negative least squares over the reference and the rows).
//     3. Repeat with the new costs: the calls depend on them (an event the host polls may
//        have completed by then, and a wait is skipped), so the fit is a fixed point.
//   The link's latency was fitted to plain copies timed one at a time from the host, so it
//   holds the host's time to issue a copy too; each round gives the simulator the link's
//   latency less the copy's host cost (at least zero), or a copy would pay that cost twice.
//   The round whose simulated times are closest to the measured ones (least worst error)
//   is kept; the preset holds its costs, the latencies it used, and that error. Without the demo, or with a bundle
//   of suite version 1 (its times include the first iteration), the preset has the link
//   only, and calibrate says why.
// GCC 12: a false -Wnull-dereference in std::string assignment inlined from
// boost::program_options (see bench_pool_command.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif
#include "commands.hpp"
#include "suite/suite_demo.hpp"
#include "suite/suite_presets.hpp"
#include "suite/suite_report.hpp"

#include <tierpool/error.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
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

// ---- the host's costs (Note [Fitting the host's costs]) -----------------------------------

// One measured steady time and what to run on the simulator to predict it.
struct measured_row {
  std::string label;   // "mlp lru next-op 2x", or "mlp reference"
  std::string model;   // the demo's --model: mlp or transformer
  std::string policy;  // empty: the model's reference run (taken from its rows' runs)
  bool prefetch{true};
  double oversubscription{1.0};
  double seconds{0.0};
};

std::vector<measured_row> measured_rows(suite::bundle const& b, std::string* why)
{
  if (b.suite_version < 2) {
    *why = "the bundle is of suite version " + std::to_string(b.suite_version) +
           " (its oversub-train times include the first iteration; version 2 has the steady state)";
    return {};
  }
  std::vector<measured_row> out;
  for (char const* model : {"mlp", "transformer"}) {
    std::vector<measured_row> rows;
    std::vector<double> refs;
    for (suite::workload const& w : b.workloads) {
      if (w.name != "oversub-train") { continue; }
      for (suite::figure const& f : w.figures) {
        suite::param const* x = suite::find_param(f, "oversubscription");
        if (param_text(f, "model") != std::string("demo-") + model || x == nullptr || !x->number || f.value <= 0) {
          continue;
        }
        if (f.name == "reference_iteration_time") { refs.push_back(f.value); }
        if (f.name != "iteration_time") { continue; }
        measured_row r;
        r.model = model;
        r.policy = param_text(f, "policy");
        r.prefetch = param_text(f, "prefetch") != "none";
        r.oversubscription = *x->number;
        r.seconds = f.value;
        r.label = std::string(model) + " " + r.policy + " " + param_text(f, "prefetch") + " " + x->text + "x";
        rows.push_back(r);
      }
    }
    if (rows.empty() || refs.empty()) { continue; }
    std::sort(refs.begin(), refs.end());
    measured_row ref;
    ref.label = std::string(model) + " reference";
    ref.model = model;
    ref.seconds = refs[refs.size() / 2];
    out.push_back(ref);
    out.insert(out.end(), rows.begin(), rows.end());
  }
  if (out.empty()) { *why = "the bundle has no oversub-train steady times (tierpool suite run --only oversub-train)"; }
  return out;
}

using costs = std::array<double, 3>;  // seconds per kernel, copy, event call

// The demo's calls per iteration: kernel, copy, event.
costs calls_of(boost::json::object const& r, char const* key)
{
  costs c{};
  boost::json::value const* v = r.if_contains(key);
  if (v == nullptr || !v->is_object()) { return c; }
  c[0] = suite::num(v->as_object(), "kernel");
  c[1] = suite::num(v->as_object(), "copy");
  c[2] = suite::num(v->as_object(), "event");
  return c;
}

// Non-negative least squares of sum_i w_i (a_i . x - t_i)^2 over three unknowns: every
// subset of them free (the others zero), solved by the normal equations; the best
// solution with no negative component.
costs nnls3(std::vector<costs> const& a, std::vector<double> const& t, std::vector<double> const& w)
{
  costs best{};
  double best_err = INFINITY;
  for (unsigned mask = 1; mask < 8; ++mask) {
    std::vector<int> idx;
    for (int j = 0; j < 3; ++j) {
      if ((mask >> static_cast<unsigned>(j)) & 1U) { idx.push_back(j); }
    }
    std::size_t const n = idx.size();
    std::array<std::array<double, 4>, 3> m{};  // [A^T W A | A^T W t]
    for (std::size_t i = 0; i < a.size(); ++i) {
      for (std::size_t r = 0; r < n; ++r) {
        for (std::size_t c = 0; c < n; ++c) { m[r][c] += w[i] * a[i][static_cast<std::size_t>(idx[r])] * a[i][static_cast<std::size_t>(idx[c])]; }
        m[r][3] += w[i] * a[i][static_cast<std::size_t>(idx[r])] * t[i];
      }
    }
    bool ok = true;
    for (std::size_t c = 0; c < n && ok; ++c) {  // Gauss-Jordan with partial pivoting
      std::size_t piv = c;
      for (std::size_t r = c + 1; r < n; ++r) {
        if (std::abs(m[r][c]) > std::abs(m[piv][c])) { piv = r; }
      }
      if (std::abs(m[piv][c]) < 1e-300) { ok = false; break; }
      std::swap(m[piv], m[c]);
      for (std::size_t r = 0; r < n; ++r) {
        if (r == c) { continue; }
        double const f = m[r][c] / m[c][c];
        for (std::size_t k = c; k < 4; ++k) { m[r][k] -= f * m[c][k]; }
      }
    }
    if (!ok) { continue; }
    costs x{};
    for (std::size_t r = 0; r < n; ++r) { x[static_cast<std::size_t>(idx[r])] = m[r][3] / m[r][r]; }
    if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) { continue; }
    double err = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      double const d = a[i][0] * x[0] + a[i][1] * x[1] + a[i][2] * x[2] - t[i];
      err += w[i] * d * d;
    }
    if (err < best_err) {
      best_err = err;
      best = x;
    }
  }
  return best;
}

struct host_fit {
  costs c{};
  double max_error{0.0};                // worst |sim - measured| / measured, over the rows
  std::vector<std::pair<measured_row, double>> predicted;  // each row and its simulated time
  int rounds{0};
};

sim_host_costs to_sim(costs const& c)
{
  auto ns = [](double s) { return static_cast<tick>(std::llround(s * 1e9)); };
  return sim_host_costs{.copy = ns(c[1]), .event = ns(c[2]), .compute = ns(c[0]), .host_func = 0};
}

// The rows on the simulator with `c`: the simulated steady times and the calls.
struct sim_round {
  std::vector<double> seconds;
  std::vector<costs> calls;
  std::vector<std::string> failed;  // per row: why the demo failed on the simulator (empty: it ran)
};

// The link less the host's time to issue a copy (Note [Fitting the host's costs]).
link_model less_copy_cost(link_model l, costs const& c)
{
  auto const host = static_cast<tick>(std::llround(c[1] * 1e9));
  l.latency_ns = l.latency_ns > host ? l.latency_ns - host : 0;
  return l;
}

sim_round simulate(std::string const& demo, suite::device_preset preset, costs const& c,
                   std::vector<measured_row> const& rows, std::string const& scratch)
{
  preset.host_costs = to_sim(c);
  preset.host_link = less_copy_cost(preset.host_link, c);
  preset.d2h_link = less_copy_cost(preset.d2h_link, c);
  sim_round out;
  out.seconds.assign(rows.size(), 0.0);
  out.calls.assign(rows.size(), costs{});
  out.failed.assign(rows.size(), std::string());
  std::map<std::string, std::vector<double>> ref_s;  // per model: its runs' reference times
  std::map<std::string, costs> ref_calls;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    measured_row const& r = rows[i];
    if (r.policy.empty()) { continue; }
    char x[32];
    std::snprintf(x, sizeof x, "%g", r.oversubscription);
    std::vector<std::string> args = {"--model", r.model, "--oversubscription", x, "--policy", r.policy,
                                     "--iterations", std::to_string(suite::kDemoIterations)};
    if (!r.prefetch) { args.emplace_back("--no-prefetch"); }
    suite::append_sim_demo_args(preset, args);
    args.emplace_back("--skip-math");  // the same calls and times, no numbers (20x faster)
    std::string why;
    std::optional<boost::json::object> const j = suite::run_demo(demo, args, scratch, &why);
    if (!j) {  // left out of this round's fit and error (an out-of-memory at these costs, say)
      out.failed[i] = why.empty() ? "failed" : why;
      continue;
    }
    suite::demo_times const t = suite::demo_times_of(*j, true);
    out.seconds[i] = t.steady;
    out.calls[i] = calls_of(*j, "calls_per_iteration");
    ref_s[r.model].push_back(t.reference_steady);
    ref_calls.emplace(r.model, calls_of(*j, "reference_calls_per_iteration"));  // the runs are all alike
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {  // each model's reference: the median of its runs'
    if (!rows[i].policy.empty()) { continue; }
    std::vector<double>& v = ref_s[rows[i].model];
    std::sort(v.begin(), v.end());
    out.seconds[i] = v.empty() ? 0.0 : v[v.size() / 2];
    out.calls[i] = ref_calls[rows[i].model];
  }
  return out;
}

host_fit fit_host_costs(std::string const& demo, suite::device_preset const& preset, std::vector<measured_row> const& rows,
                        int rounds, bool verbose)
{
  std::string const scratch =
    (std::filesystem::temp_directory_path() / ("tierpool-calibrate-" + std::to_string(::getpid()) + ".json")).string();
  host_fit best;
  best.max_error = INFINITY;
  costs c{};
  for (int round = 1; round <= rounds; ++round) {
    sim_round const s = simulate(demo, preset, c, rows, scratch);
    double worst = 0;
    std::size_t failed = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!s.failed[i].empty() || s.seconds[i] <= 0) {
        ++failed;
        if (verbose) { std::printf("  round %d: %s did not run on the simulator: %s\n", round, rows[i].label.c_str(), s.failed[i].c_str()); }
        continue;
      }
      worst = std::max(worst, std::abs(s.seconds[i] - rows[i].seconds) / rows[i].seconds);
    }
    if (failed * 2 > rows.size()) { worst = INFINITY; }  // a round that runs less than half the rows loses
    if (verbose) {
      std::printf("  round %d: kernel %.3g us, copy %.3g us, event %.3g us -> worst error %.1f %%\n", round, c[0] * 1e6,
                  c[1] * 1e6, c[2] * 1e6, worst * 100);
    }
    if (worst < best.max_error) {
      best.c = c;
      best.max_error = worst;
      best.rounds = round;
      best.predicted.clear();
      for (std::size_t i = 0; i < rows.size(); ++i) { best.predicted.emplace_back(rows[i], s.seconds[i]); }
    }
    std::vector<costs> a;
    std::vector<double> t;
    std::vector<double> w;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!s.failed[i].empty() || s.seconds[i] <= 0) { continue; }
      a.push_back(s.calls[i]);
      t.push_back(rows[i].seconds);
      w.push_back(1.0 / (rows[i].seconds * rows[i].seconds));  // relative error
    }
    c = nnls3(a, t, w);
  }
  std::error_code ec;
  std::filesystem::remove(scratch, ec);
  return best;
}

}  // namespace

int suite_calibrate_command(int argc, char** argv)
{
  std::string bundle_path;
  std::string out_path;
  std::string name;
  std::string demo;
  int rounds = 6;
  bool link_only = false;
  po::options_description desc("tierpool suite calibrate BUNDLE [-o PRESET.json] [options]");
  // clang-format off
  desc.add_options()
    ("help,h", "this help")
    ("output,o", po::value(&out_path), "the preset file to write (default: calibrated-DEVICE.json)")
    ("name", po::value(&name), "the preset's name (default: calibrated-DEVICE)")
    ("demo", po::value(&demo), "the oversubscription demo, run on the simulator to fit the host's costs "
                               "(default: found beside tierpool, or TIERPOOL_DEMO)")
    ("fit-rounds", po::value(&rounds), "rounds of the host-cost fit, 1-20 (default 6)")
    ("link-only", po::bool_switch(&link_only), "fit the link only, not the host's costs")
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
  if (rounds < 1 || rounds > 20) {
    std::fprintf(stderr, "tierpool suite calibrate: --fit-rounds must be 1-20 (got %d)\n", rounds);
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
    // The host's costs (Note [Fitting the host's costs]).
    std::string why_not;
    std::vector<measured_row> rows = link_only ? std::vector<measured_row>{} : measured_rows(b, &why_not);
    if (link_only) { why_not = "--link-only"; }
    if (demo.empty() && !rows.empty()) { demo = suite::find_demo(); }
    if (demo.empty() && !rows.empty()) {
      why_not = "the oversubscription demo was not found (build examples, or give --demo PATH)";
      rows.clear();
    }
    std::optional<host_fit> hf;
    if (!rows.empty()) {
      std::string const title = p["title"].as_string().c_str();
      suite::device_preset sp{name, title, p["memory_bytes"].to_number<std::uint64_t>(),
                              link_model{h2d.bandwidth, static_cast<tick>(std::llround(h2d.latency * 1e9))},
                              link_model::hbm(), "calibrated",
                              link_model{d2h.bandwidth, static_cast<tick>(std::llround(d2h.latency * 1e9))}};
      if (b.kernel_roofline) {  // the measured device's kernels, for the demo's runs (its reference)
        sp.kernel_flops = b.kernel_roofline->first;
        sp.kernel_bytes = b.kernel_roofline->second;
      }
      std::printf("fitting the host's costs to %zu steady iteration times (the demo on the simulator, %d rounds):\n",
                  rows.size(), rounds);
      hf = fit_host_costs(demo, sp, rows, rounds, true);
      json::array table;
      for (auto const& [row, sim_s] : hf->predicted) {
        json::value sim_v = sim_s > 0 ? json::value(sim_s) : json::value(nullptr);  // null: did not run there
        table.push_back(json::object{{"row", row.label}, {"measured_seconds", row.seconds}, {"simulated_seconds", sim_v}});
      }
      p["host_costs"] = json::object{{"kernel_seconds", hf->c[0]},
                                     {"copy_seconds", hf->c[1]},
                                     {"event_seconds", hf->c[2]},
                                     {"fit_max_error", hf->max_error},
                                     {"fit_round", hf->rounds},
                                     {"rows", std::move(table)}};
    }
    if (hf) {  // the latencies the fit simulated with: the host's copy cost taken out
      for (auto const& [key, fit] : {std::pair<char const*, link_fit const*>{"h2d", &h2d}, {"d2h", &d2h}}) {
        json::object& l = p[key].as_object();
        l["measured_latency_seconds"] = fit->latency;
        l["latency_seconds"] = std::max(0.0, fit->latency - hf->c[1]);
      }
    }
    if (b.kernel_roofline) {
      p["kernels"] = json::object{{"flops_per_second", b.kernel_roofline->first},
                                  {"bytes_per_second", b.kernel_roofline->second}};
    }
    p["calibrated_from"] = json::object{{"device", b.device_id}, {"simulated", b.simulated}, {"file", b.file},
                                        {"created_utc", b.created_utc}};
    std::ofstream f(out_path);
    f << json::serialize(p) << '\n';
    if (!f) { throw logic_error("cannot write " + out_path); }
    std::printf("%s: h2d %.4g GB/s + %.3g us, d2h %.4g GB/s + %.3g us (worst fit error %.2f %% / %.2f %% over %zu / %zu "
                "sizes) -> %s\n",
                b.device_id.c_str(), h2d.bandwidth * 1e-9, h2d.latency * 1e6, d2h.bandwidth * 1e-9, d2h.latency * 1e6,
                h2d.max_error * 100, d2h.max_error * 100, h2d.points, d2h.points, out_path.c_str());
    if (hf) {
      std::printf("host costs: kernel %.3g us, copy %.3g us, event %.3g us (round %d; the links' latencies less the "
                  "copy's: h2d %.3g us, d2h %.3g us); the simulator's steady iteration time against the measured one:\n",
                  hf->c[0] * 1e6, hf->c[1] * 1e6, hf->c[2] * 1e6, hf->rounds,
                  std::max(0.0, h2d.latency - hf->c[1]) * 1e6, std::max(0.0, d2h.latency - hf->c[1]) * 1e6);
      for (auto const& [row, sim_s] : hf->predicted) {
        if (sim_s <= 0) {
          std::printf("  %-24s measured %8.3f ms  did not run on the simulator\n", row.label.c_str(), row.seconds * 1e3);
          continue;
        }
        std::printf("  %-24s measured %8.3f ms  simulated %8.3f ms  %+6.1f %%\n", row.label.c_str(), row.seconds * 1e3,
                    sim_s * 1e3, (sim_s / row.seconds - 1) * 100);
      }
      std::printf("worst error %.1f %%\n", hf->max_error * 100);
    } else {
      std::printf("host costs: not fitted (%s); the preset models the link only\n", why_not.c_str());
    }
    std::printf("simulate it: tierpool suite run --devices sim:%s\n", out_path.c_str());
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tierpool suite calibrate: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace tierpool::cli

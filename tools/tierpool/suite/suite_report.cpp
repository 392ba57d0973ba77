// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_report.cpp — `tierpool suite report A.json B.json ...`: bundles side by side
// (docs/chapters/suite.md): one table per workload on stdout with ratios to a baseline,
// optionally CSV and one self-contained HTML page with plots. Every bundle is read and
// checked before anything is written.

// GCC 12 reports a false -Wnull-dereference inside std::string assignment when it inlines
// Boost.ProgramOptions' typed_value<std::string>::notify (see bench_pool_command.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "commands.hpp"
#include "suite/suite_report.hpp"

#include <tierpool/error.hpp>

#include <boost/program_options.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tierpool::cli {

namespace po = boost::program_options;

namespace {

struct report_options {
  std::vector<std::string> files;
  std::string baseline;
  std::string html_path;
  std::string csv_path;
  bool quiet = false;
};

void write_file(std::string const& path, std::string const& text)
{
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) { throw std::runtime_error("cannot create '" + path + "'"); }
  f << text;
  f.close();
  if (!f) { throw std::runtime_error("cannot write '" + path + "'"); }
}

/// Bundles of different suite versions compare, with a warning naming both versions.
void warn_versions(std::vector<suite::bundle> const& bundles)
{
  for (suite::bundle const& b : bundles) {
    if (b.suite_version == bundles.front().suite_version) { continue; }
    std::fprintf(stderr,
                 "tierpool suite report: warning: bundles of different suite versions: %s is version %lld, %s is "
                 "version %lld; a workload's figures may not compare\n",
                 bundles.front().file.c_str(), static_cast<long long>(bundles.front().suite_version), b.file.c_str(),
                 static_cast<long long>(b.suite_version));
  }
}

int run_report(report_options const& o)
{
  std::vector<suite::bundle> bundles;
  for (std::string const& f : o.files) { bundles.push_back(suite::read_bundle(f)); }
  suite::label_bundles(bundles);
  std::size_t const baseline = suite::resolve_baseline(bundles, o.baseline);
  warn_versions(bundles);
  std::vector<suite::table> const tables = suite::build_tables(bundles, baseline);
  if (!o.quiet) { std::fputs(suite::to_text(bundles, baseline, tables).c_str(), stdout); }
  if (!o.csv_path.empty()) { write_file(o.csv_path, suite::to_csv(bundles, tables)); }
  if (!o.html_path.empty()) { write_file(o.html_path, suite::to_html(bundles, baseline, tables)); }
  return 0;
}

}  // namespace

int suite_report_command(int argc, char** argv)
{
  report_options o;
  po::options_description desc("tierpool suite report BUNDLE.json... [options]");
  // clang-format off
  desc.add_options()
    ("help,h", "this help")
    ("baseline", po::value(&o.baseline), "the bundle the ratios divide by: a 0-based index or a device id (default 0, the first)")
    ("html", po::value(&o.html_path), "write one self-contained HTML page (tables, SVG plots) to FILE")
    ("csv", po::value(&o.csv_path), "write one CSV row per bundle, workload and figure to FILE")
    ("quiet,q", "no tables on stdout (warnings and errors still go to stderr)")
    ("bundle", po::value(&o.files), "the bundles (positional)");
  // clang-format on
  po::positional_options_description pos;
  pos.add("bundle", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool suite report: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  if (o.files.empty()) {
    std::fprintf(stderr, "tierpool suite report: no bundles given\n\n");
    std::cerr << desc << '\n';
    return 2;
  }
  o.quiet = vm.count("quiet") != 0;
  try {
    return run_report(o);
  } catch (logic_error const& e) {
    std::fprintf(stderr, "tierpool suite report: %s\n", e.what());
    return 2;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tierpool suite report: %s\n", e.what());
    return 1;
  }
}

}  // namespace tierpool::cli

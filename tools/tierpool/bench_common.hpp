// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// bench_common.hpp — what the `tierpool bench` commands share: a sink that keeps timed
// loops from being folded away, the median/min/max of per-run figures (and its JSON), and
// the parsing of their options with the usage on error.
#pragma once

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <utility>
#include <vector>

namespace tierpool::cli::bench_common {

using clock_type = std::chrono::steady_clock;

/// Keep `p` (and the memory it points to) alive for the optimizer.
inline void keep(void const* p) noexcept
{
#if defined(__GNUC__) || defined(__clang__)
  asm volatile("" : : "r"(p) : "memory");
#else
  static void const* volatile sink = nullptr;
  sink = p;
#endif
}

inline double elapsed_ns(clock_type::time_point a, clock_type::time_point b) noexcept
{
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

/// Median, min and max of a set of per-run figures (and the runs, in order).
struct spread {
  double median{0.0};
  double min{0.0};
  double max{0.0};
  std::vector<double> runs;
};

inline spread summarize(std::vector<double> runs)
{
  spread s;
  s.runs = runs;
  if (runs.empty()) { return s; }
  std::sort(runs.begin(), runs.end());
  auto const n = runs.size();
  s.median = n % 2 == 1 ? runs[n / 2] : 0.5 * (runs[n / 2 - 1] + runs[n / 2]);
  s.min = runs.front();
  s.max = runs.back();
  return s;
}

inline boost::json::object to_json(spread const& s)
{
  boost::json::array a;
  for (double v : s.runs) { a.push_back(v); }
  return boost::json::object{{"min", s.min}, {"max", s.max}, {"runs", std::move(a)}};
}

/// Parses argv into `vm`; prints the error and the usage and returns false on a bad option.
inline bool parse_args(char const* name, boost::program_options::options_description const& desc, int argc,
                       char** argv, boost::program_options::variables_map& vm)
{
  namespace po = boost::program_options;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool bench %s: %s\n\n", name, e.what());
    std::cerr << desc << '\n';
    return false;
  }
  return true;
}

inline int usage_error(char const* name, char const* message)
{
  std::fprintf(stderr, "tierpool bench %s: %s\n", name, message);
  return 2;
}

}  // namespace tierpool::cli::bench_common

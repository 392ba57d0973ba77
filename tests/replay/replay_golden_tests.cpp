// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// replay_golden_tests.cpp — replay golden tests (docs/notes/conventions.md, "Tests"): the small committed traces
// under tests/replay/golden/*.tpt are replayed in pool mode and in cache mode, per policy and
// capacity, and the deterministic figures are compared with tests/replay/golden/expected.txt.
// A behaviour change (policy, pool, sim backend, replay) shows up as a diff of that file.
//
// Regenerate after an intended change, then review the diff:
//   TIERPOOL_UPDATE_GOLDEN=1 ./replay_test --gtest_filter='ReplayGolden.*'
#include <tierpool/replay.hpp>
#include <tierpool/trace.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tr = tierpool::replay;
namespace fs = std::filesystem;

namespace {

fs::path golden_dir() { return TIERPOOL_REPLAY_GOLDEN_DIR; }

long long ns(double seconds) { return std::llround(seconds * 1e9); }

// One line per run: only deterministic figures (no wall time), times in whole ns.
std::string describe(std::string const& trace, tr::replay_result const& r)
{
  std::ostringstream s;
  s << trace << " mode=" << to_string(r.mode) << " policy=" << r.policy << " capacity=" << r.capacity_label << " ("
    << r.capacity_bytes << ")"
    << " requests=" << r.requests << " hits=" << r.hits << " misses=" << r.misses << " unserved=" << r.unserved
    << " bytes_missed=" << r.bytes_missed << " h2d=" << r.bytes_h2d << "/" << r.copies_h2d << " d2h=" << r.bytes_d2h
    << "/" << r.copies_d2h << " evictions=" << r.evictions << " prefetches=" << r.prefetches
    << " must_move=" << r.must_move_h2d << "/" << r.must_move_d2h << " stall_ns=" << ns(r.stall_seconds)
    << " makespan_ns=" << ns(r.makespan_seconds) << " ideal_ns=" << ns(r.ideal_seconds) << "\n";
  return s.str();
}

std::string replay_all()
{
  std::vector<fs::path> traces;
  for (auto const& entry : fs::directory_iterator(golden_dir())) {
    if (entry.path().extension() == ".tpt") { traces.push_back(entry.path()); }
  }
  std::sort(traces.begin(), traces.end());
  std::string out =
    "# tierpool replay golden figures: tests/replay/replay_golden_tests.cpp\n"
    "# regenerate: TIERPOOL_UPDATE_GOLDEN=1 replay_test --gtest_filter='ReplayGolden.*'\n";
  for (fs::path const& p : traces) {
    auto const events = tierpool::trace::read_all(p);
    auto const compiled = tr::compiled_trace::compile(events);
    for (tr::replay_mode mode : {tr::replay_mode::pool, tr::replay_mode::cache}) {
      tr::grid_options g;
      g.mode = mode;
      g.policies = {"lru", "arc"};
      g.capacities = tr::parse_capacities("25%,50%,90%");
      g.threads = 2;
      for (auto const& r : tr::run_grid(compiled, g)) { out += describe(p.filename().string(), r); }
    }
  }
  return out;
}

}  // namespace

TEST(ReplayGolden, FiguresMatchTheCommittedFile)
{
  fs::path const expected_path = golden_dir() / "expected.txt";
  std::string const got = replay_all();
  char const* update = std::getenv("TIERPOOL_UPDATE_GOLDEN");
  if (update != nullptr && std::string_view(update) == "1") {
    std::ofstream(expected_path, std::ios::binary | std::ios::trunc) << got;
    GTEST_SKIP() << "rewrote " << expected_path;
  }
  std::ifstream in(expected_path, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << expected_path << " (run with TIERPOOL_UPDATE_GOLDEN=1 to create it)";
  std::stringstream want;
  want << in.rdbuf();
  // Compare line by line so that a failure names the run that changed.
  std::istringstream a(got);
  std::istringstream b(want.str());
  std::string la;
  std::string lb;
  int line = 0;
  while (true) {
    bool const ga = static_cast<bool>(std::getline(a, la));
    bool const gb = static_cast<bool>(std::getline(b, lb));
    ++line;
    if (!ga && !gb) { break; }
    EXPECT_EQ(la, lb) << "line " << line << " of " << expected_path
                      << " differs (TIERPOOL_UPDATE_GOLDEN=1 rewrites it after an intended change)";
    if (!ga || !gb) { break; }
  }
}

TEST(ReplayGolden, ReplayIsReproducible)
{
  EXPECT_EQ(replay_all(), replay_all());
}

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_regression_tests.cpp — replays every committed fuzz input through the fuzzers'
// property check (fuzz/fuzz_harness.hpp): inputs that once crashed a reader
// (tests/trace/regressions/<reader>/) and the seed corpus (fuzz/corpus/<reader>/).
// An input must read cleanly or fail with tierpool::trace_error, and what reads cleanly
// must survive the text encoding.
#include "fuzz_harness.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace tt = tierpool::trace;

std::size_t replay_folder(std::filesystem::path const& dir, tt::format f)
{
  std::size_t n = 0;
  if (!std::filesystem::is_directory(dir)) { return 0; }
  for (auto const& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().filename().string().starts_with(".")) { continue; }
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string const bytes = ss.str();
    EXPECT_NO_THROW(tierpool::fuzz::check_input(f, bytes)) << entry.path();
    ++n;
  }
  return n;
}

class TraceFuzzInputs : public ::testing::TestWithParam<tt::format> {};

TEST_P(TraceFuzzInputs, ReadCleanlyOrFailWithTraceError)
{
  std::string const name(tt::to_string(GetParam()));
  std::size_t const regressions =
    replay_folder(std::filesystem::path(TIERPOOL_TRACE_REGRESSIONS_DIR) / name, GetParam());
  std::size_t const corpus = replay_folder(std::filesystem::path(TIERPOOL_FUZZ_CORPUS_DIR) / name, GetParam());
  EXPECT_GT(corpus, 0U) << "no seed corpus under fuzz/corpus/" << name;
  RecordProperty("regressions", static_cast<int>(regressions));
}

INSTANTIATE_TEST_SUITE_P(Readers, TraceFuzzInputs,
                         ::testing::Values(tt::format::text, tt::format::binary, tt::format::oracle_general,
                                           tt::format::csv),
                         [](::testing::TestParamInfo<tt::format> const& p) { return std::string(tt::to_string(p.param)); });

}  // namespace

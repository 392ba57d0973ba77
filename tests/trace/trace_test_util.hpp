// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_test_util.hpp — helpers shared by the trace tests: scratch files under the build
// tree, reading a whole in-memory trace, and the message of the trace_error it throws.
#pragma once

#include <tierpool/trace.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace trace_test {

namespace tt = tierpool::trace;

/// A file path unique to the running test, under the build tree.
inline std::filesystem::path scratch(std::string_view leaf)
{
  auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::path(TIERPOOL_TEST_BINARY_DIR) / "trace_scratch" /
             (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::create_directories(dir);
  return dir / std::string(leaf);
}

/// Write `bytes` to `path` (binary).
inline void write_file(std::filesystem::path const& path, std::string_view bytes)
{
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Every event of an in-memory trace.
inline std::vector<tt::event> read_memory(std::string_view bytes, tt::reader_options const& o = {})
{
  auto r = tt::open_memory_reader(bytes, o, "mem");
  std::vector<tt::event> out;
  tt::event e;
  while (r->next(e)) { out.push_back(e); }
  return out;
}

/// The trace_error message of reading `bytes` to the end, or "" if it reads cleanly.
inline std::string error_of(std::string_view bytes, tt::reader_options const& o = {})
{
  try {
    (void)read_memory(bytes, o);
  } catch (tierpool::trace_error const& e) {
    return e.what();
  }
  return "";
}

/// Little-endian bytes of an unsigned integer.
template <class T>
std::string le(T v)
{
  std::string s;
  for (std::size_t i = 0; i < sizeof(T); ++i) { s.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF)); }
  return s;
}

}  // namespace trace_test

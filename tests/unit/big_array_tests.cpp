// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// big_array_tests.cpp — the huge-page mappings behind big arrays and record slabs (Note
// [Big arrays on huge pages]): TIERPOOL_HUGE_PAGES parses as documented, and without it a
// mapping gets no huge pages where the kernel gives them only on request ("madvise").
// Each test runs in a process of its own (CTest), so the variable is read here first.
#include <gtest/gtest.h>

#include <tierpool/detail/big_array.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace tierpool::test {
namespace {

TEST(BigArray, HugePagesVariableParses)
{
  EXPECT_EQ(detail::parse_huge_pages(nullptr), false);
  EXPECT_EQ(detail::parse_huge_pages(""), false);
  EXPECT_EQ(detail::parse_huge_pages("0"), false);
  EXPECT_EQ(detail::parse_huge_pages("1"), true);
  EXPECT_EQ(detail::parse_huge_pages("yes"), std::nullopt);
  EXPECT_EQ(detail::parse_huge_pages("00"), std::nullopt);
  EXPECT_EQ(detail::parse_huge_pages(" 1"), std::nullopt);
}

std::string thp_mode()
{
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  auto const a = line.find('[');
  auto const b = line.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

/// AnonHugePages (kB) of the mapping that starts at `base`, from /proc/self/smaps.
long anon_huge_kb(void const* base)
{
  std::ifstream f("/proc/self/smaps");
  auto const want = reinterpret_cast<std::uintptr_t>(base);
  std::string line;
  bool in = false;
  while (std::getline(f, line)) {
    std::uintptr_t lo = 0;
    std::uintptr_t hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      in = lo <= want && want < hi;
      continue;
    }
    if (in && line.rfind("AnonHugePages:", 0) == 0) { return std::stol(line.substr(14)); }
  }
  return -1;
}

TEST(BigArray, TheDefaultMapsWithoutHugePages)
{
  ASSERT_EQ(::unsetenv("TIERPOOL_HUGE_PAGES"), 0);
  EXPECT_FALSE(detail::huge_pages_wanted());
  ASSERT_EQ(::setenv("TIERPOOL_HUGE_PAGES", "1", 1), 0);
  EXPECT_FALSE(detail::huge_pages_wanted()) << "read once, at the first call";
  std::size_t const bytes = detail::huge_round_up(8U << 20U);
  void* const p = detail::map_huge(bytes);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % (2U << 20U), 0U);
  std::memset(p, 1, bytes);
  long const huge = anon_huge_kb(p);
  std::string const mode = thp_mode();
  detail::unmap_huge(p, bytes);
  if (mode != "madvise" && mode != "never") { GTEST_SKIP() << "transparent huge pages are '" << mode << "'"; }
  EXPECT_EQ(huge, 0) << "huge pages in a mapping made without the hint (THP mode " << mode << ")";
}

}  // namespace
}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// fuzz_csv.cpp — libFuzzer target for the csv trace reader (see fuzz_harness.hpp).
#include "fuzz_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  tierpool::fuzz::check_input(tierpool::trace::format::csv,
                              std::string_view(reinterpret_cast<char const*>(data), size));
  return 0;
}

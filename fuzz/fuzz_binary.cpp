// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// fuzz_binary.cpp — libFuzzer target for the binary trace reader (see fuzz_harness.hpp).
#include "fuzz_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  tierpool::fuzz::check_input(tierpool::trace::format::binary,
                              std::string_view(reinterpret_cast<char const*>(data), size));
  return 0;
}

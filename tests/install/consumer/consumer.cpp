// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// consumer.cpp — compiles against the installed headers only (no CUDA header needed) and
// links tierpool::tierpool from the installed package.
#include <tierpool/tierpool.hpp>

#include <cstdio>

int main()
{
  std::printf("tierpool %s, cuda backend compiled in: %d\n", tierpool::version_string, TIERPOOL_HAS_CUDA);
  return tierpool::to_string(tierpool::status::ok) == "ok" ? 0 : 1;
}

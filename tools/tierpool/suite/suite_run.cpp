// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_run.cpp — `tierpool suite run`: the suite's workloads per device, one bundle each
// (docs/chapters/suite.md).
#include "commands.hpp"

#include <cstdio>

namespace tierpool::cli {

int suite_run_command(int argc, char** argv)
{
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "tierpool suite run: not built yet\n");
  return 2;
}

}  // namespace tierpool::cli

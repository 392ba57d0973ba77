// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_report.cpp — `tierpool suite report`: bundles side by side (docs/chapters/suite.md).
#include "commands.hpp"

#include <cstdio>

namespace tierpool::cli {

int suite_report_command(int argc, char** argv)
{
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "tierpool suite report: not built yet\n");
  return 2;
}

}  // namespace tierpool::cli

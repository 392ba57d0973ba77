// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// commands.hpp — entry points of the `tierpool` subcommands. Each takes the arguments
// after its own name (argv[0] is the command path, e.g. "tierpool info") and returns
// the process exit code. Commands print errors themselves; main() catches the rest.
#pragma once

namespace tierpool::cli {

/// `tierpool info`: backend in use and why, devices, NUMA nodes, default tiers.
int info_command(int argc, char** argv);
/// `tierpool bench arena ...`: the arena workloads of BENCHMARKS.md §1.
int bench_arena_command(int argc, char** argv);
/// `tierpool bench hitpath ...`: acquire + release of a resident tensor (BENCHMARKS.md §3).
int bench_hitpath_command(int argc, char** argv);
/// `tierpool bench copy ...`: pool migration throughput against memcpy (BENCHMARKS.md §3).
int bench_copy_command(int argc, char** argv);

}  // namespace tierpool::cli

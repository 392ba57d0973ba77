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
/// `tierpool policies`: every eviction policy with its description and parameters
/// (--json; --plugin PATH loads plug-ins first).
int policies_command(int argc, char** argv);
/// `tierpool bench arena ...`: the arena workloads (docs/chapters/benchmarks.md).
int bench_arena_command(int argc, char** argv);
/// `tierpool bench hitpath ...`: acquire + release of a resident tensor (docs/chapters/benchmarks.md).
int bench_hitpath_command(int argc, char** argv);
/// `tierpool bench copy ...`: pool migration throughput against memcpy (docs/chapters/benchmarks.md).
int bench_copy_command(int argc, char** argv);
/// `tierpool bench scale ...`: per-tensor costs from 10,000 to 1,000,000 tensors (docs/chapters/benchmarks.md).
int bench_scale_command(int argc, char** argv);
/// `tierpool trace gen <workload> ...`: a tiering workload (docs/chapters/benchmarks.md) as a trace file.
int trace_gen_command(int argc, char** argv);
/// `tierpool trace convert IN -o OUT`: any readable trace to native text or binary.
int trace_convert_command(int argc, char** argv);
/// `tierpool trace stat FILE`: events, requests, objects, working set, peak live bytes.
int trace_stat_command(int argc, char** argv);
/// `tierpool replay TRACE ...`: replay a trace per policy × capacity (docs/chapters/replay.md).
int replay_command(int argc, char** argv);
int top_command(int argc, char** argv);
/// `tierpool snapshot view FILE.json ... [--svg OUT.svg]`: pool snapshots per tier, or their layout plot.
int snapshot_view_command(int argc, char** argv);
/// `tierpool suite run ...`: the benchmark suite per device, one JSON bundle each (docs/chapters/suite.md).
int suite_run_command(int argc, char** argv);
/// `tierpool suite report A.json B.json ...`: bundles side by side: tables, CSV, HTML with plots.
int suite_report_command(int argc, char** argv);
/// `tierpool codec measure ...`: codec ratio, throughput and error on real tensors (docs/chapters/codecs.md).
int codec_measure_command(int argc, char** argv);
/// `tierpool suite calibrate BUNDLE`: a bundle's measured link as a preset file the simulator accepts.
int suite_calibrate_command(int argc, char** argv);

}  // namespace tierpool::cli

# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# CLI tests: run the `tierpool` executable. Shared file: each command's owner adds a block.

# ---- tierpool info ----------------------------------------------------------------
set(_tp_cxl_xml ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/two_sockets_cxl.xml)

add_test(NAME cli.info.sim COMMAND $<TARGET_FILE:tierpool_cli> info --backend sim)
set_tests_properties(cli.info.sim PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "backend: sim \\(requested: sim\\)")

# Without options: auto selection (sim here, with the fallback reason; cuda on a GPU machine).
add_test(NAME cli.info.auto COMMAND $<TARGET_FILE:tierpool_cli> info)
set_tests_properties(cli.info.auto PROPERTIES LABELS cpu ENVIRONMENT "TIERPOOL_BACKEND="
  PASS_REGULAR_EXPRESSION "backend: sim \\(requested: auto\\)\n  why: no usable CUDA device|backend: cuda \\(requested: auto\\)")

add_test(NAME cli.info.env_backend COMMAND $<TARGET_FILE:tierpool_cli> info)
set_tests_properties(cli.info.env_backend PROPERTIES LABELS cpu ENVIRONMENT "TIERPOOL_BACKEND=sim"
  PASS_REGULAR_EXPRESSION "backend: sim \\(requested: TIERPOOL_BACKEND=sim\\)")

add_test(NAME cli.info.hwloc_xmlfile_far_node COMMAND $<TARGET_FILE:tierpool_cli> info --backend sim)
set_tests_properties(cli.info.hwloc_xmlfile_far_node PROPERTIES LABELS cpu
  ENVIRONMENT "HWLOC_XMLFILE=${_tp_cxl_xml}"
  PASS_REGULAR_EXPRESSION "node 2 \\(L#2\\): 14\\.9 GiB, cpu-less, far, subtype CXL-DRAM, bandwidth 24000 MiB/s, latency 350 ns")

add_test(NAME cli.info.far_tier COMMAND $<TARGET_FILE:tierpool_cli> info --backend sim --topology ${_tp_cxl_xml})
set_tests_properties(cli.info.far_tier PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "host \\(far\\) +14\\.9 GiB on node 2")

add_test(NAME cli.info.json
  COMMAND ${CMAKE_COMMAND} -DTIERPOOL_CLI=$<TARGET_FILE:tierpool_cli> -DFIXTURE=${_tp_cxl_xml}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_info_json_check.cmake)
set_tests_properties(cli.info.json PROPERTIES LABELS cpu)

add_test(NAME cli.info.device_bytes_env COMMAND $<TARGET_FILE:tierpool_cli> info --backend sim)
set_tests_properties(cli.info.device_bytes_env PROPERTIES LABELS cpu ENVIRONMENT "TIERPOOL_DEVICE_BYTES=512MiB"
  PASS_REGULAR_EXPRESSION "0 device +512\\.0 MiB  \\[TIERPOOL_DEVICE_BYTES=512MiB\\]")

add_test(NAME cli.info.help COMMAND $<TARGET_FILE:tierpool_cli> info --help)
set_tests_properties(cli.info.help PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "--backend.*--topology.*--json")

# Failures: one test checks the exit status, its twin the message.
add_test(NAME cli.info.bad_backend_fails COMMAND $<TARGET_FILE:tierpool_cli> info --backend bogus)
set_tests_properties(cli.info.bad_backend_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.info.bad_backend_message COMMAND $<TARGET_FILE:tierpool_cli> info --backend bogus)
set_tests_properties(cli.info.bad_backend_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: unknown backend 'bogus' \\(valid: auto, sim, cuda\\)")

add_test(NAME cli.info.bad_device_bytes_fails COMMAND $<TARGET_FILE:tierpool_cli> info --backend sim)
set_tests_properties(cli.info.bad_device_bytes_fails PROPERTIES LABELS cpu WILL_FAIL TRUE
  ENVIRONMENT "TIERPOOL_DEVICE_BYTES=lots")
add_test(NAME cli.info.bad_device_bytes_message COMMAND $<TARGET_FILE:tierpool_cli> info --backend sim)
set_tests_properties(cli.info.bad_device_bytes_message PROPERTIES LABELS cpu ENVIRONMENT "TIERPOOL_DEVICE_BYTES=lots"
  PASS_REGULAR_EXPRESSION "invalid byte size 'lots'")

add_test(NAME cli.info.missing_topology_fails COMMAND $<TARGET_FILE:tierpool_cli> info --backend sim --topology /nonexistent.xml)
set_tests_properties(cli.info.missing_topology_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
# ---- end tierpool info ------------------------------------------------------------

# ---- tierpool bench arena ---------------------------------------------------------
# Short runs (--ops) of BENCHMARKS.md §1 workloads; figures are not asserted, behaviour is.
add_test(NAME cli.bench_arena.table COMMAND $<TARGET_FILE:tierpool_cli> bench arena --workload dnn-static --ops 5000 --runs 1)
set_tests_properties(cli.bench_arena.table PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "arena workload dnn-static \\(seed 1000\\): 5000 operations.*failed allocations +0 .*arena valid at end +yes")

# Writing a trace and replaying the written file gives the same failures.
add_test(NAME cli.bench_arena.trace_roundtrip
  COMMAND sh -c "\"$0\" bench arena --workload dnn-tight --seed 1001 --ops 30000 --runs 1 --json --write-trace \"$1\" | grep -o '\"failures\":[0-9]*' > \"$1.a\" && \"$0\" bench arena --trace \"$1\" --runs 1 --json | grep -o '\"failures\":[0-9]*' > \"$1.b\" && cmp \"$1.a\" \"$1.b\" && head -n 3 \"$1\" && cat \"$1.b\""
          $<TARGET_FILE:tierpool_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_arena_roundtrip.trace)
set_tests_properties(cli.bench_arena.trace_roundtrip PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "# tierpool-alloc-trace v1\ncapacity [0-9]+\nalignment 256\n\"failures\":[0-9]+")

# A corrupt trace fails with a message naming the line; its twin checks the exit status.
set(_tp_bad_trace ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_arena_corrupt.trace)
file(WRITE ${_tp_bad_trace} "# tierpool-alloc-trace v1\ncapacity 1048576\nalignment 256\na 0 4096\nf zero\n")
add_test(NAME cli.bench_arena.corrupt_trace_message COMMAND $<TARGET_FILE:tierpool_cli> bench arena --trace ${_tp_bad_trace})
set_tests_properties(cli.bench_arena.corrupt_trace_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: alloc trace '[^']*cli_bench_arena_corrupt\\.trace' line 5: expected a slot")
add_test(NAME cli.bench_arena.corrupt_trace_fails COMMAND $<TARGET_FILE:tierpool_cli> bench arena --trace ${_tp_bad_trace})
set_tests_properties(cli.bench_arena.corrupt_trace_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.bench_arena.unknown_workload_fails COMMAND $<TARGET_FILE:tierpool_cli> bench arena --workload rand99)
set_tests_properties(cli.bench_arena.unknown_workload_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
# ---- end tierpool bench arena -----------------------------------------------------

# ---- tierpool bench hitpath / bench copy ----------------------------------------
# Short runs of BENCHMARKS.md §3; figures are not asserted (benchmarks are not timed
# tests), only that each command runs, prints its fields and rejects bad options.
add_test(NAME cli.bench_hitpath.table COMMAND $<TARGET_FILE:tierpool_cli> bench hitpath --threads 2 --ops 2000 --runs 1)
set_tests_properties(cli.bench_hitpath.table PROPERTIES LABELS cpu ENVIRONMENT "TIERPOOL_BACKEND="
  PASS_REGULAR_EXPRESSION "pool hit path: .*backend sim .*ns per pair, 1 thread +[0-9.]+.*ns per pair, 2 threads +[0-9.]+.*ratio to 1 thread +[0-9.]+.*pool valid at end +yes")

add_test(NAME cli.bench_hitpath.json COMMAND $<TARGET_FILE:tierpool_cli> bench hitpath --threads 2 --ops 2000 --runs 1 --json)
set_tests_properties(cli.bench_hitpath.json PROPERTIES LABELS cpu ENVIRONMENT "TIERPOOL_BACKEND="
  PASS_REGULAR_EXPRESSION "^{\"benchmark\":\"hitpath\",\"backend\":\"sim\",\"threads\":2,\"runs\":1,.*\"ns_per_pair\":[-+.0-9Ee]+,.*\"ns_per_pair_1thread\":[-+.0-9Ee]+,.*\"ratio_to_1thread\":[-+.0-9Ee]+,.*\"misses\":0,.*\"valid\":true}")

add_test(NAME cli.bench_hitpath.bad_threads_fails COMMAND $<TARGET_FILE:tierpool_cli> bench hitpath --threads 0)
set_tests_properties(cli.bench_hitpath.bad_threads_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.bench_hitpath.bad_threads_message COMMAND $<TARGET_FILE:tierpool_cli> bench hitpath --threads 0)
set_tests_properties(cli.bench_hitpath.bad_threads_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool bench hitpath: --threads must be in 1\\.\\.64")
add_test(NAME cli.bench_hitpath.unknown_option_message COMMAND $<TARGET_FILE:tierpool_cli> bench hitpath --bogus)
set_tests_properties(cli.bench_hitpath.unknown_option_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool bench hitpath: unrecognised option '--bogus'")

add_test(NAME cli.bench_copy.table COMMAND $<TARGET_FILE:tierpool_cli> bench copy --bytes 8MiB --tensor-bytes 1MiB --runs 1)
set_tests_properties(cli.bench_copy.table PROPERTIES LABELS cpu ENVIRONMENT "TIERPOOL_BACKEND="
  PASS_REGULAR_EXPRESSION "pool copy throughput: 8 tensors x 1\\.0 MiB = 8\\.0 MiB, device tier 2\\.0 MiB.*pool GB/s +[0-9.]+.*memcpy GB/s +[0-9.]+.*ratio pool / memcpy +[0-9.]+.*bytes intact +yes.*pool valid at end +yes")

add_test(NAME cli.bench_copy.json COMMAND $<TARGET_FILE:tierpool_cli> bench copy --bytes 8MiB --tensor-bytes 1MiB --runs 1 --json)
set_tests_properties(cli.bench_copy.json PROPERTIES LABELS cpu ENVIRONMENT "TIERPOOL_BACKEND="
  PASS_REGULAR_EXPRESSION "^{\"benchmark\":\"copy\",\"backend\":\"sim\",\"bytes\":8388608,.*\"runs\":1,\"pool_gbps\":[-+.0-9Ee]+,.*\"memcpy_gbps\":[-+.0-9Ee]+,.*\"ratio\":[-+.0-9Ee]+,.*\"bytes_moved_per_run\":{\"min\":16777216,\"max\":16777216,\"expected\":16777216},.*\"bytes_intact\":true,\"valid\":true}")

add_test(NAME cli.bench_copy.too_small_fails COMMAND $<TARGET_FILE:tierpool_cli> bench copy --bytes 1MiB --tensor-bytes 1MiB)
set_tests_properties(cli.bench_copy.too_small_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.bench_copy.too_small_message COMMAND $<TARGET_FILE:tierpool_cli> bench copy --bytes 1MiB --tensor-bytes 1MiB)
set_tests_properties(cli.bench_copy.too_small_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool bench copy: --bytes must hold at least 2 tensors of --tensor-bytes")
add_test(NAME cli.bench_copy.bad_bytes_fails COMMAND $<TARGET_FILE:tierpool_cli> bench copy --bytes lots)
set_tests_properties(cli.bench_copy.bad_bytes_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.bench_copy.bad_bytes_message COMMAND $<TARGET_FILE:tierpool_cli> bench copy --bytes lots)
set_tests_properties(cli.bench_copy.bad_bytes_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: invalid byte size 'lots'")
add_test(NAME cli.bench_copy.bad_lower_message COMMAND $<TARGET_FILE:tierpool_cli> bench copy --lower managed)
set_tests_properties(cli.bench_copy.bad_lower_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool bench copy: unknown --lower 'managed' \\(valid: pinned_host, host\\)")
# ---- end tierpool bench hitpath / bench copy ------------------------------------

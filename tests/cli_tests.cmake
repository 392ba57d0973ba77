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
# Short runs (--ops) of the arena workloads (docs/chapters/benchmarks.md); figures are not asserted, behaviour is.
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
# --through-pool with no tier below: with no compaction the fragmented placements fail; the
# defaults (compaction as the last resort) and compaction on place them all.
add_test(NAME cli.bench_arena.through_pool_device_only
  COMMAND $<TARGET_FILE:tierpool_cli> bench arena --workload rand85 --through-pool --seeds 1 --ops 300000 --device-only)
set_tests_properties(cli.bench_arena.through_pool_device_only PROPERTIES LABELS cpu TIMEOUT 120
  PASS_REGULAR_EXPRESSION "compaction off +default \\(last resort\\) +compaction on.*failures +[1-9][0-9]* \\([0-9-]+\\) +0 \\(0-0\\) +0 \\(0-0\\).*per seed")
add_test(NAME cli.bench_arena.unknown_workload_fails COMMAND $<TARGET_FILE:tierpool_cli> bench arena --workload rand99)
set_tests_properties(cli.bench_arena.unknown_workload_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)

# Unsigned options: -1 wrapped (--runs -1 ran for ever), 0 runs silently meant 1.
foreach(_tp_case "runs;-1;1\\.\\.1000" "runs;0;1\\.\\.1000" "ops;-1;0\\.\\.100000000" "sl-log2;9;2\\.\\.6" "scan-limit;-1;0\\.\\.4294967295" "seed;-1;0\\.\\.18446744073709551615")
  list(GET _tp_case 0 _tp_opt)
  list(GET _tp_case 1 _tp_val)
  list(GET _tp_case 2 _tp_range)
  set(_tp_base --ops 100)
  if(_tp_opt STREQUAL "ops")
    set(_tp_base --runs 1)
  endif()
  add_test(NAME cli.bench_arena.bad_${_tp_opt}_${_tp_val}_message
    COMMAND $<TARGET_FILE:tierpool_cli> bench arena --workload dnn-static ${_tp_base} --${_tp_opt} ${_tp_val})
  set_tests_properties(cli.bench_arena.bad_${_tp_opt}_${_tp_val}_message PROPERTIES LABELS cpu TIMEOUT 60
    PASS_REGULAR_EXPRESSION "tierpool: error: --${_tp_opt} must be an integer in ${_tp_range}, got '${_tp_val}'")
endforeach()
add_test(NAME cli.bench_arena.bad_runs_fails COMMAND $<TARGET_FILE:tierpool_cli> bench arena --workload dnn-static --ops 100 --runs 0)
set_tests_properties(cli.bench_arena.bad_runs_fails PROPERTIES LABELS cpu TIMEOUT 60 WILL_FAIL TRUE)

# A directory as the trace says so (std::bad_alloc before).
add_test(NAME cli.bench_arena.directory_trace_message COMMAND $<TARGET_FILE:tierpool_cli> bench arena --trace ${CMAKE_CURRENT_BINARY_DIR} --runs 1)
set_tests_properties(cli.bench_arena.directory_trace_message PROPERTIES LABELS cpu TIMEOUT 60
  PASS_REGULAR_EXPRESSION "tierpool: error: cannot read alloc trace '[^']*': it is a directory")
# A 84-byte trace naming slot 67108863 took 2.1 GB (a slot table up to the largest number):
# slots are renumbered, and --write-trace writes the file's numbers back.
set(_tp_sparse_trace ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_arena_sparse.trace)
file(WRITE ${_tp_sparse_trace} "# tierpool-alloc-trace v1\ncapacity 1048576\nalignment 256\na 67108863 4096\na 5 256\nf 67108863\n")
add_test(NAME cli.bench_arena.sparse_slots
  COMMAND sh -c "\"$0\" bench arena --trace \"$1\" --runs 1 --json --write-trace \"$1.out\" && tail -n 3 \"$1.out\""
          $<TARGET_FILE:tierpool_cli> ${_tp_sparse_trace})
set_tests_properties(cli.bench_arena.sparse_slots PROPERTIES LABELS cpu TIMEOUT 60
  PASS_REGULAR_EXPRESSION "\"slots\":2,.*\"failures\":0,.*\"valid\":true}\na 67108863 4096\na 5 256\nf 67108863\n$")
# ---- end tierpool bench arena -----------------------------------------------------

# ---- tierpool bench hitpath / bench copy ----------------------------------------
# Short runs of the runtime-overhead benchmarks (docs/chapters/benchmarks.md); figures are not asserted (benchmarks are not timed
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
# bench scale: a short run prints every column for each count and a valid pool; bad counts are refused.
add_test(NAME cli.bench_scale.table COMMAND $<TARGET_FILE:tierpool_cli> bench scale --tensors 500,20000 --device-bytes 4MiB --runs 1)
set_tests_properties(cli.bench_scale.table PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "pool scale: 4\\.0 KiB tensors, device tier 4\\.0 MiB.*\n +500 +[0-9]+ \\([0-9]+-[0-9]+\\) .* 0\\.00 .*\n +20000 .* 1\\.00 .*pool valid at end of every run: yes")
add_test(NAME cli.bench_scale.json COMMAND $<TARGET_FILE:tierpool_cli> bench scale --tensors 3000 --device-bytes 4MiB --runs 2 --json)
set_tests_properties(cli.bench_scale.json PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^{\"benchmark\":\"scale\",\"sim\":\"phantom-virtual\",\"tensor_bytes\":4096,\"device_bytes\":4194304,.*\"runs\":2,\"valid\":true,\"rows\":\\[{\"tensors\":3000,\"metadata_bytes_per_tensor\":[-+.0-9Ee]+,.*\"fits_ms\":[-+.0-9Ee]+,")
add_test(NAME cli.bench_scale.bad_count_message COMMAND $<TARGET_FILE:tierpool_cli> bench scale --tensors 10,-5)
set_tests_properties(cli.bench_scale.bad_count_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool bench scale: --tensors must be an integer in 1\\.\\.10000000, got '-5'")
add_test(NAME cli.bench_scale.bad_count_fails COMMAND $<TARGET_FILE:tierpool_cli> bench scale --tensors 0)
set_tests_properties(cli.bench_scale.bad_count_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
# --device N: the pool runs on simulated device N (CUDA device N on a GPU); a negative or
# non-numeric ordinal is refused (exit 2) with the flag's range.
add_test(NAME cli.bench_hitpath.device COMMAND $<TARGET_FILE:tierpool_cli> bench hitpath --backend sim --device 1 --ops 1000 --runs 1)
set_tests_properties(cli.bench_hitpath.device PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "backend sim \\(simulated device 1 \\(.*pool valid at end +yes")
add_test(NAME cli.bench_copy.device COMMAND $<TARGET_FILE:tierpool_cli> bench copy --backend sim --device 2 --bytes 4MiB --tensor-bytes 1MiB --runs 1)
set_tests_properties(cli.bench_copy.device PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "backend sim \\(simulated device 2 \\(.*pool valid at end +yes")
foreach(_tp_cmd hitpath copy)
  foreach(_tp_bad -1 one)
    add_test(NAME cli.bench_${_tp_cmd}.bad_device_${_tp_bad}_fails COMMAND $<TARGET_FILE:tierpool_cli> bench ${_tp_cmd} --device ${_tp_bad})
    set_tests_properties(cli.bench_${_tp_cmd}.bad_device_${_tp_bad}_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
    add_test(NAME cli.bench_${_tp_cmd}.bad_device_${_tp_bad}_message COMMAND $<TARGET_FILE:tierpool_cli> bench ${_tp_cmd} --device ${_tp_bad})
    set_tests_properties(cli.bench_${_tp_cmd}.bad_device_${_tp_bad}_message PROPERTIES LABELS cpu
      PASS_REGULAR_EXPRESSION "tierpool bench ${_tp_cmd}: --device must be an integer in 0\\.\\.255, got '${_tp_bad}'")
  endforeach()
endforeach()
# The pool of both commands reads TIERPOOL_POLICY, _PREFETCH, _TRACE and _PUBLISH (an
# invalid value: an error naming the variable, exit 2) and ignores _DEVICE_BYTES; a trace
# that cannot be written fails the command (exit 1). Output and exit status together.
function(_tp_bench_env_test name env regex)  # ARGN: the command and its flags
  string(JOIN " " _args ${ARGN})
  add_test(NAME cli.bench_${name} COMMAND sh -c "\"$0\" bench ${_args} 2>&1; echo \"exit status $?\""
                                          $<TARGET_FILE:tierpool_cli>)
  set_tests_properties(cli.bench_${name} PROPERTIES LABELS cpu ENVIRONMENT "TIERPOOL_BACKEND=;${env}"
    PASS_REGULAR_EXPRESSION "${regex}")
endfunction()
set(_tp_hit hitpath --ops 200 --runs 1)
_tp_bench_env_test(hitpath.env_prefetch_invalid "TIERPOOL_PREFETCH=garbage"
  "tierpool: error: TIERPOOL_PREFETCH: unknown predictor 'garbage'[^\n]*\nexit status 2\n$" ${_tp_hit})
_tp_bench_env_test(hitpath.env_publish_invalid "TIERPOOL_PUBLISH=sometimes"
  "tierpool: error: TIERPOOL_PUBLISH: expected 0 or 1 \\(or off / on\\), got 'sometimes'\nexit status 2\n$" ${_tp_hit})
_tp_bench_env_test(hitpath.env_policy_invalid "TIERPOOL_POLICY=nope"
  "tierpool: error: TIERPOOL_POLICY: unknown policy 'nope'[^\n]*\nexit status 2\n$" ${_tp_hit})
_tp_bench_env_test(hitpath.env_trace_uncreatable "TIERPOOL_TRACE=/nonexistent-dir/run.tpt"
  "tierpool: error: TIERPOOL_TRACE: cannot create trace '/nonexistent-dir/run\\.tpt': No such file or directory\nexit status 2\n$" ${_tp_hit})
_tp_bench_env_test(hitpath.env_publish_off "TIERPOOL_PUBLISH=0"
  "\"published\":false,.*\"valid\":true}\nexit status 0\n$" ${_tp_hit} --json)
_tp_bench_env_test(hitpath.env_publish_on "TIERPOOL_PUBLISH=1"
  "\"published\":true,.*\"valid\":true}\nexit status 0\n$" ${_tp_hit} --json)
_tp_bench_env_test(hitpath.env_prefetch "TIERPOOL_PREFETCH=sequence:depth=4"
  "pool valid at end +yes\nexit status 0\n$" ${_tp_hit} --tensors-per-thread 4)
# Ignored, as --help says: the command sizes its tiers (no misses on a 1 KiB device tier).
_tp_bench_env_test(hitpath.env_device_bytes_ignored "TIERPOOL_DEVICE_BYTES=1KiB"
  "\"misses\":0,.*\"valid\":true}\nexit status 0\n$" ${_tp_hit} --json)
# The trace records the timed loop: 2 events (access, release) per pair.
set(_tp_hit_trace ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_hitpath.tpt)
add_test(NAME cli.bench_hitpath.env_trace
  COMMAND sh -c "rm -f \"$1\"; \"$0\" bench hitpath --ops 200 --runs 1 > /dev/null; echo \"exit status $?\"; grep -c ' read ' \"$1\""
          $<TARGET_FILE:tierpool_cli> ${_tp_hit_trace})
set_tests_properties(cli.bench_hitpath.env_trace PROPERTIES LABELS cpu
  ENVIRONMENT "TIERPOOL_BACKEND=;TIERPOOL_TRACE=${_tp_hit_trace}" PASS_REGULAR_EXPRESSION "^exit status 0\n[1-9][0-9][0-9]+\n$")
if(EXISTS /dev/full)
  _tp_bench_env_test(hitpath.env_trace_full "TIERPOOL_TRACE=/dev/full"
    "tierpool bench hitpath: the trace \\(TIERPOOL_TRACE\\) was not recorded completely: cannot (write|close) trace '/dev/full': No space left on device\nexit status 1\n$" ${_tp_hit})
  _tp_bench_env_test(copy.env_trace_full "TIERPOOL_TRACE=/dev/full"
    "tierpool bench copy: the trace \\(TIERPOOL_TRACE\\) was not recorded completely: cannot (write|close) trace '/dev/full': No space left on device\nexit status 1\n$"
    copy --bytes 8MiB --tensor-bytes 1MiB --runs 1)
endif()
_tp_bench_env_test(copy.env_prefetch_invalid "TIERPOOL_PREFETCH=garbage"
  "tierpool: error: TIERPOOL_PREFETCH: unknown predictor 'garbage'[^\n]*\nexit status 2\n$" copy --bytes 8MiB --tensor-bytes 1MiB --runs 1)
_tp_bench_env_test(copy.env_publish_off "TIERPOOL_PUBLISH=0"
  "\"published\":false,.*\"valid\":true}\nexit status 0\n$" copy --bytes 8MiB --tensor-bytes 1MiB --runs 1 --json)
add_test(NAME cli.bench_hitpath.help_environment COMMAND $<TARGET_FILE:tierpool_cli> bench hitpath --help)
set_tests_properties(cli.bench_hitpath.help_environment PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "Environment: TIERPOOL_BACKEND is the default of --backend; TIERPOOL_DEVICE_BYTES is\nignored")
# ---- end tierpool bench hitpath / bench copy ------------------------------------

# ---- bench hitpath / bench copy: checked numbers (added with checked_options.hpp) -----
# -1 given to --runs or --ops wrapped to 2^32 - 1 / 2^64 - 1 and ran for ever.
foreach(_tp_case "hitpath;runs;1\\.\\.1000" "hitpath;ops;1\\.\\.1000000000" "copy;runs;1\\.\\.1000")
  list(GET _tp_case 0 _tp_cmd)
  list(GET _tp_case 1 _tp_opt)
  list(GET _tp_case 2 _tp_range)
  add_test(NAME cli.bench_${_tp_cmd}.negative_${_tp_opt}_message COMMAND $<TARGET_FILE:tierpool_cli> bench ${_tp_cmd} --${_tp_opt} -1)
  set_tests_properties(cli.bench_${_tp_cmd}.negative_${_tp_opt}_message PROPERTIES LABELS cpu TIMEOUT 60
    ENVIRONMENT "TIERPOOL_BACKEND="
    PASS_REGULAR_EXPRESSION "tierpool bench ${_tp_cmd}: --${_tp_opt} must be an integer in ${_tp_range}, got '-1'")
  add_test(NAME cli.bench_${_tp_cmd}.negative_${_tp_opt}_fails COMMAND $<TARGET_FILE:tierpool_cli> bench ${_tp_cmd} --${_tp_opt} -1)
  set_tests_properties(cli.bench_${_tp_cmd}.negative_${_tp_opt}_fails PROPERTIES LABELS cpu TIMEOUT 60
    ENVIRONMENT "TIERPOOL_BACKEND=" WILL_FAIL TRUE)
endforeach()
# ---- end bench hitpath / bench copy: checked numbers ----------------------------------

# ---- tierpool trace gen / convert / stat -----------------------------------------
add_test(NAME cli.trace.gen_stdout COMMAND $<TARGET_FILE:tierpool_cli> trace gen mlp-train layers=2 width=64 batch=8 iterations=1)
set_tests_properties(cli.trace.gen_stdout PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^# tierpool-trace v1\nphase init\nalloc 1 16384 name=w1\nalloc 2 16384 name=g1\n")

add_test(NAME cli.trace.gen_list COMMAND $<TARGET_FILE:tierpool_cli> trace gen --list)
set_tests_properties(cli.trace.gen_list PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "mlp-train.*layers=8 .*transformer-train.*llm-infer-stream.*kv-paging  \\(random: depends on --seed\\).*random-reuse")

# A generated binary trace is well-formed by stat's account.
add_test(NAME cli.trace.gen_stat_json
  COMMAND sh -c "\"$0\" trace gen kv-paging requests=5 --seed 3 -o \"$1\" && \"$0\" trace stat \"$1\" --json"
          $<TARGET_FILE:tierpool_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_kv.tpb)
set_tests_properties(cli.trace.gen_stat_json PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "kv-paging \\(seed 3\\): [0-9]+ events.*-> [^ ]*cli_trace_kv\\.tpb \\(binary\\)\n{\"file\":[^\n]*\"format\":\"binary\".*\"live_at_end\":0,.*\"accesses_not_live\":0,\"frees_not_live\":0,\"allocates_live\":0,\"prefetches_not_live\":0,\"discards_not_live\":0,\"reads_after_discard\":0,\"saturated\":false}")

# The same workload written as text, and as binary converted to text, is byte-identical.
add_test(NAME cli.trace.convert_roundtrip
  COMMAND sh -c "\"$0\" trace gen llm-infer-stream layers=3 steps=20 -o \"$1.tpt\" && \"$0\" trace gen llm-infer-stream layers=3 steps=20 -o \"$1.tpb\" && \"$0\" trace convert \"$1.tpb\" -o \"$1.back.tpt\" && cmp \"$1.tpt\" \"$1.back.tpt\" && echo identical"
          $<TARGET_FILE:tierpool_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_llm)
set_tests_properties(cli.trace.convert_roundtrip PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "\\(binary\\) -> [^\n]*cli_trace_llm\\.back\\.tpt \\(text\\)\nidentical")

set(_tp_trace_csv ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_ops.csv)
file(WRITE ${_tp_trace_csv} "key;op\nk1;get\nk2;SET\n")
add_test(NAME cli.trace.convert_csv
  COMMAND sh -c "\"$0\" trace convert \"$1\" --csv-delimiter ';' --csv-id-column 0 --csv-op-column 1 --csv-size-column -1 --csv-time-column -1 --csv-default-size 4KiB -o \"$1.tpt\" && cat \"$1.tpt\""
          $<TARGET_FILE:tierpool_cli> ${_tp_trace_csv})
set_tests_properties(cli.trace.convert_csv PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "2 events: [^\n]*\\(csv\\) -> [^\n]*\\(text\\)\n# tierpool-trace v1\nread [0-9]+ bytes=4096\nrw [0-9]+ bytes=4096\n$")

if(EXISTS "${TIERPOOL_SAMPLE_TRACES_DIR}/cloudphysics.oracleGeneral.bin")
  set(_tp_cloudphysics "${TIERPOOL_SAMPLE_TRACES_DIR}/cloudphysics.oracleGeneral.bin")
  add_test(NAME cli.trace.stat_cloudphysics COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_cloudphysics})
  set_tests_properties(cli.trace.stat_cloudphysics PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "\\(oracle_general\\)\n  events +113872\n.*  requests +113872\n.*  unique objects +48974\n  tensors +0\n  working set +2029769728 \\(1\\.9 GiB\\)\n  peak live +2029769728 ")
  add_test(NAME cli.trace.convert_cloudphysics_json
    COMMAND sh -c "\"$0\" trace convert \"$1\" -o \"$2\" && \"$0\" trace stat \"$2\" --json"
            $<TARGET_FILE:tierpool_cli> ${_tp_cloudphysics} ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_cloudphysics.tpb)
  set_tests_properties(cli.trace.convert_cloudphysics_json PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "113872 events: .*\\(oracle_general\\) -> .*\\(binary\\)\n.*\"requests\":113872,.*\"objects\":48974,\"tensors\":0,\"working_set_bytes\":2029769728,")
endif()

# Failures: one test checks the exit status, its twin the message.
set(_tp_trace_corrupt ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_corrupt.tpt)
file(WRITE ${_tp_trace_corrupt} "# tierpool-trace v1\nread 1 bytes=8\nallok 2 3\n")
add_test(NAME cli.trace.stat_corrupt_message COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_trace_corrupt})
set_tests_properties(cli.trace.stat_corrupt_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: trace '[^']*cli_trace_corrupt\\.tpt' line 3: unknown keyword 'allok' \\(expected alloc, free, read, rw, wd, prefetch, compute, phase, release, discard\\)")
add_test(NAME cli.trace.stat_corrupt_fails COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_trace_corrupt})
set_tests_properties(cli.trace.stat_corrupt_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.trace.gen_unknown_workload_message COMMAND $<TARGET_FILE:tierpool_cli> trace gen cnn-train)
set_tests_properties(cli.trace.gen_unknown_workload_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: unknown workload 'cnn-train' \\(valid: mlp-train, transformer-train, llm-infer-stream, kv-paging, random-reuse\\)")
add_test(NAME cli.trace.gen_unknown_workload_fails COMMAND $<TARGET_FILE:tierpool_cli> trace gen cnn-train)
set_tests_properties(cli.trace.gen_unknown_workload_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.trace.gen_bad_param_message COMMAND $<TARGET_FILE:tierpool_cli> trace gen mlp-train depth=3)
set_tests_properties(cli.trace.gen_bad_param_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: unknown parameter 'depth' for workload mlp-train \\(valid: layers, width, batch, iterations, dtype_bytes, tflops, hints, streams, comm_gbps\\)")
add_test(NAME cli.trace.convert_without_output_fails COMMAND $<TARGET_FILE:tierpool_cli> trace convert ${_tp_trace_corrupt})
set_tests_properties(cli.trace.convert_without_output_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.trace.convert_without_output_message COMMAND $<TARGET_FILE:tierpool_cli> trace convert ${_tp_trace_corrupt})
set_tests_properties(cli.trace.convert_without_output_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool trace convert: give the output file with -o")

# stat counts release events in their own slot (events_by_kind had 6 slots; release is 6,
# so it was counted as a request).
set(_tp_trace_release ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_release.tpt)
file(WRITE ${_tp_trace_release} "# tierpool-trace v1\nalloc 1 8\nread 1\nrelease 1\n")
add_test(NAME cli.trace.stat_counts_release COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_trace_release})
set_tests_properties(cli.trace.stat_counts_release PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "  events +3\n    allocate +1\n    free +0\n    access +1\n    prefetch +0\n    compute +0\n    phase +0\n    release +1\n    discard +0\n  requests +1\n")
add_test(NAME cli.trace.stat_counts_release_json COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_trace_release} --json)
set_tests_properties(cli.trace.stat_counts_release_json PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "\"events_by_kind\":{\"allocate\":1,\"free\":0,\"access\":1,\"prefetch\":0,\"compute\":0,\"phase\":0,\"release\":1,\"discard\":0},\"requests\":1,")

# Pipes: stat opens its input once (it opened it twice: a FIFO hung, a pipe lost its header).
add_test(NAME cli.trace.stat_pipe
  COMMAND sh -c "cat \"$1\" | \"$0\" trace stat /dev/stdin" $<TARGET_FILE:tierpool_cli> ${_tp_trace_release})
set_tests_properties(cli.trace.stat_pipe PROPERTIES LABELS cpu TIMEOUT 30
  PASS_REGULAR_EXPRESSION "trace /dev/stdin \\(text\\)\n  events +3\n")
add_test(NAME cli.trace.stat_fifo
  COMMAND sh -c "rm -f \"$2\" && mkfifo \"$2\" && { timeout 20 sh -c 'cat \"$0\" > \"$1\"' \"$1\" \"$2\" & } && timeout 20 \"$0\" trace stat \"$2\"; s=$?; rm -f \"$2\"; echo status=$s"
          $<TARGET_FILE:tierpool_cli> ${_tp_trace_release} ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_fifo)
set_tests_properties(cli.trace.stat_fifo PROPERTIES LABELS cpu TIMEOUT 30
  PASS_REGULAR_EXPRESSION "trace [^\n]*cli_trace_fifo \\(text\\)\n  events +3\n.*status=0\n")
add_test(NAME cli.trace.stat_speed_pipe_passes_message
  COMMAND sh -c "cat \"$1\" | \"$0\" trace stat /dev/stdin --speed --passes 2" $<TARGET_FILE:tierpool_cli> ${_tp_trace_release})
set_tests_properties(cli.trace.stat_speed_pipe_passes_message PROPERTIES LABELS cpu TIMEOUT 30
  PASS_REGULAR_EXPRESSION "tierpool trace stat: --passes 2 reads '/dev/stdin' more than once, but it is not a regular file")
add_test(NAME cli.trace.stat_speed_pipe_default_passes
  COMMAND sh -c "cat \"$1\" | \"$0\" trace stat /dev/stdin --speed" $<TARGET_FILE:tierpool_cli> ${_tp_trace_release})
set_tests_properties(cli.trace.stat_speed_pipe_default_passes PROPERTIES LABELS cpu TIMEOUT 30
  PASS_REGULAR_EXPRESSION "^read 3 events in [0-9.]+ s \\(best of 1\\)")
add_test(NAME cli.trace.stat_directory_message COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli.trace.stat_directory_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: cannot read trace '[^']*': it is a directory")
add_test(NAME cli.trace.stat_directory_fails COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli.trace.stat_directory_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)

# Unsigned options given -1 (read as 2^32 - 1: --passes -1 ran for ever) are refused.
add_test(NAME cli.trace.stat_negative_passes_message
  COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_trace_release} --speed --passes -1)
set_tests_properties(cli.trace.stat_negative_passes_message PROPERTIES LABELS cpu TIMEOUT 30
  PASS_REGULAR_EXPRESSION "tierpool: error: --passes must be an integer in 1\\.\\.1000, got '-1'")
add_test(NAME cli.trace.stat_negative_passes_fails
  COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_trace_release} --speed --passes -1)
set_tests_properties(cli.trace.stat_negative_passes_fails PROPERTIES LABELS cpu TIMEOUT 30 WILL_FAIL TRUE)
add_test(NAME cli.trace.gen_negative_seed_message COMMAND $<TARGET_FILE:tierpool_cli> trace gen mlp-train --seed -1)
set_tests_properties(cli.trace.gen_negative_seed_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: --seed must be an integer in 0\\.\\.18446744073709551615, got '-1'")
add_test(NAME cli.trace.convert_bad_csv_column_message
  COMMAND $<TARGET_FILE:tierpool_cli> trace convert ${_tp_trace_csv} --csv-size-column 4294967296 -o ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_unused.tpt)
set_tests_properties(cli.trace.convert_bad_csv_column_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: --csv-size-column must be an integer in -1\\.\\.65535, got '4294967296'")

# convert X -o X wrote 65,536 of 113,872 events and succeeded: refused, also when the
# output is another path (or a hard link) to the input; the input is left intact.
add_test(NAME cli.trace.convert_onto_input
  COMMAND sh -c "\"$0\" trace gen mlp-train -o \"$1\" > /dev/null && ln -f \"$1\" \"$1.link\" && \"$0\" trace convert \"$1\" -o \"$1\"; echo status=$?; \"$0\" trace convert \"$1\" -o \"$(dirname \"$1\")/./$(basename \"$1\")\"; echo status=$?; \"$0\" trace convert \"$1\" -o \"$1.link\"; echo status=$?; \"$0\" trace stat \"$1\" | grep -E '^  events'"
          $<TARGET_FILE:tierpool_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_self.tpt)
set_tests_properties(cli.trace.convert_onto_input PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool trace convert: the output '[^']*cli_trace_self\\.tpt' is the input '[^']*cli_trace_self\\.tpt' \\(the same file\\)[^\n]*\nstatus=2\n.*status=2\n.*\\.link' is the input [^\n]*\nstatus=2\n  events +471\n$")
# A failed convert leaves an existing output as it was (it left a header-only file) and no
# temporary file.
add_test(NAME cli.trace.convert_failure_keeps_output
  COMMAND sh -c "mkdir -p \"$2\" && printf 'keep\\n' > \"$2/out.tpt\" && \"$0\" trace convert \"$1\" -o \"$2/out.tpt\"; echo status=$?; cat \"$2/out.tpt\"; ls \"$2\""
          $<TARGET_FILE:tierpool_cli> ${_tp_trace_corrupt} ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_keep)
set_tests_properties(cli.trace.convert_failure_keeps_output PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "line 3: unknown keyword 'allok'.*status=2\nkeep\nout\\.tpt\n$")
# Sums saturate and say so (a working set of 2^64 - 1 + 512 bytes showed 511 B).
set(_tp_trace_huge ${CMAKE_CURRENT_BINARY_DIR}/cli_trace_huge.tpt)
file(WRITE ${_tp_trace_huge} "# tierpool-trace v1\nread 43 bytes=18446744073709551615\nread 2 bytes=512\n")
add_test(NAME cli.trace.stat_saturates COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_trace_huge})
set_tests_properties(cli.trace.stat_saturates PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "  working set +18446744073709551615 \\([^)]*\\)\n.*  note +a sum passed 2\\^64 - 1 and shows 18446744073709551615 \\(saturated, not wrapped\\)")
# ---- end tierpool trace ----------------------------------------------------------

# ---- tierpool policies ------------------------------------------------------------
# Sorted, with descriptions and parameters (name, type, default); other policies may sit
# between the ones named here.
add_test(NAME cli.policies.list COMMAND $<TARGET_FILE:tierpool_cli> policies)
set_tests_properties(cli.policies.list PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "eviction policies \\([0-9]+\\).*\narc +Adaptive Replacement Cache[^\n]*\n +capacity +bytes +default 0 +cache size c in bytes.*\nbelady +Belady's MIN[^\n]*\n +\\(no parameters\\).*\ngdsf +GreedyDual-Size-Frequency.*\nlirs +Low Inter-reference Recency Set.*\n +hir_ratio +real +default 0\\.01 .*\nlru +Least recently used.*\nrepeat +Tensor-aware")

add_test(NAME cli.policies.json COMMAND $<TARGET_FILE:tierpool_cli> policies --json)
set_tests_properties(cli.policies.json PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^{\"policy_abi_version\":[0-9]+,\"policies\":\\[{\"name\":\"arc\",\"description\":\"Adaptive Replacement Cache[^\"]*\",\"plugin\":null,\"parameters\":\\[{\"name\":\"capacity\",\"type\":\"bytes\",\"default\":\"0\",\"description\":\"[^\"]+\"},.*{\"name\":\"belady\",[^]]*\"parameters\":\\[\\]}")

add_test(NAME cli.policies.plugin COMMAND $<TARGET_FILE:tierpool_cli> policies --json --plugin $<TARGET_FILE:policy_test_mru_plugin>)
set_tests_properties(cli.policies.plugin PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "{\"name\":\"mru\",\"description\":\"Most recently used first \\(example plug-in\\)[^\"]*\",\"plugin\":\"[^\"]*libpolicy_test_mru_plugin\\.so\",\"parameters\":\\[{\"name\":\"spare\",\"type\":\"unsigned_integer\",\"default\":\"1\"")

add_test(NAME cli.policies.help COMMAND $<TARGET_FILE:tierpool_cli> policies --help)
set_tests_properties(cli.policies.help PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "--plugin.*--json")

# A plug-in that cannot be loaded: the message carries dlerror()'s text; its twin the exit status.
add_test(NAME cli.policies.missing_plugin_message COMMAND $<TARGET_FILE:tierpool_cli> policies --plugin /nonexistent/libnothing.so)
set_tests_properties(cli.policies.missing_plugin_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: policy plug-in '/nonexistent/libnothing\\.so' could not be loaded: .*No such file or directory")
add_test(NAME cli.policies.missing_plugin_fails COMMAND $<TARGET_FILE:tierpool_cli> policies --plugin /nonexistent/libnothing.so)
set_tests_properties(cli.policies.missing_plugin_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.policies.wrong_abi_message COMMAND $<TARGET_FILE:tierpool_cli> policies --plugin $<TARGET_FILE:policy_test_wrong_abi_plugin>)
set_tests_properties(cli.policies.wrong_abi_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: policy plug-in '[^']*' was built against policy interface v[0-9]+, this tierpool has v[0-9]+")
# Prefetch predictors are listed too (the README said so; none were), text and JSON.
add_test(NAME cli.policies.predictors COMMAND $<TARGET_FILE:tierpool_cli> policies)
set_tests_properties(cli.policies.predictors PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "\nprefetch predictors \\([0-9]+\\); a spec is name\\[:key=value,\\.\\.\\.\\], e\\.g\\. for TIERPOOL_PREFETCH or tierpool replay --prefetch\n\nnone +never prefetches[^\n]*\n +\\(no parameters\\)\nsequence +[^\n]+\n +depth +unsigned_integer +default 4 ")
add_test(NAME cli.policies.predictors_json COMMAND $<TARGET_FILE:tierpool_cli> policies --json)
set_tests_properties(cli.policies.predictors_json PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "\\],\"predictors\":\\[{\"name\":\"none\",\"description\":\"[^\"]+\",\"plugin\":null,\"parameters\":\\[\\]},{\"name\":\"oracle\",.*{\"name\":\"plan\",.*{\"name\":\"sequence\",[^]]*\"parameters\":\\[{\"name\":\"depth\",\"type\":\"unsigned_integer\",\"default\":\"4\"")
# ---- end tierpool policies --------------------------------------------------------

# ---- tierpool replay --------------------------------------------------------------
# Behaviour, not figures: the table, the files, the typed errors. The golden figures are in
# tests/replay (replay_test).
set(_tp_replay_trace ${CMAKE_CURRENT_SOURCE_DIR}/replay/golden/cache_small.tpt)
set(_tp_replay_mlp ${CMAKE_CURRENT_SOURCE_DIR}/replay/golden/mlp_small.tpt)
add_test(NAME cli.replay.cache_table COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace}
  --mode cache --policy lru,arc --capacity 25%,50% --quiet)
set_tests_properties(cli.replay.cache_table PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "60 requests, 10 objects, working set 52\\.0 KiB.*policy +capacity +requests +hit +miss +unserved +byte miss.*\nlru +25% \\(13\\.0 KiB\\) +60 .*\narc +50% \\(26\\.0 KiB\\) +60 ")
add_test(NAME cli.replay.pool_files
  COMMAND sh -c "\"$0\" replay \"$1\" --policy lru --capacity 50%,90% --quiet --json \"$2.json\" --csv \"$2.csv\" --plot \"$2.svg\" > /dev/null && head -c 80 \"$2.json\" && echo && head -n 1 \"$2.csv\" && grep -c '<polyline' \"$2.svg\""
          $<TARGET_FILE:tierpool_cli> ${_tp_replay_mlp} ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_pool)
set_tests_properties(cli.replay.pool_files PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^\\[\n  {\"policy\":\"lru\",\"mode\":\"pool\",\"prefetch\":\"none\",\"capacity\":\"50%\".*\npolicy,mode,prefetch,capacity,capacity_bytes,.*requests_per_second,events_per_second\n2\n$")
# --plot with several prefetchers: one line per policy and prefetcher in each panel (the rows
# of one policy made a single zigzag line across prefetchers).
# The storage tier below a host tier too small for the rest (docs/chapters/tiers.md, "The storage tier").
add_test(NAME cli.replay.storage COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --capacity 25%
  --host-capacity 25% --storage 1TiB --quiet)
set_tests_properties(cli.replay.storage PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "\nlru +25% ")
add_test(NAME cli.replay.storage_needs_pool COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --mode cache
  --storage 1GiB --quiet)
set_tests_properties(cli.replay.storage_needs_pool PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.replay.storage_bad_size COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --storage 0 --quiet)
set_tests_properties(cli.replay.storage_bad_size PROPERTIES LABELS cpu WILL_FAIL TRUE)
# --storage-link: a compressed tier's codec rates on the storage links.
add_test(NAME cli.replay.storage_link COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --capacity 25%
  --host-capacity 25% --storage 1TiB --storage-link 0.9e9,0/0.27e9,0 --quiet)
set_tests_properties(cli.replay.storage_link PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "\nlru +25% ")
add_test(NAME cli.replay.storage_link_needs_both COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp}
  --capacity 25% --host-capacity 25% --storage 1TiB --storage-link 0.9e9,0 --quiet)
set_tests_properties(cli.replay.storage_link_needs_both PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "invalid --storage-link '0.9e9,0': give READ/WRITE")
add_test(NAME cli.replay.storage_link_needs_storage COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp}
  --capacity 25% --storage-link nvme4-read/nvme4-write --quiet)
set_tests_properties(cli.replay.storage_link_needs_storage PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "--storage-link needs --storage")
# --storage-codec: a compressed tier from `tierpool codec measure --json` (a tiny demo run).
add_test(NAME cli.replay.storage_codec
  COMMAND sh -c "\"$0\" codec measure -r 1 --steps 1 --batch 16 --width 16 --json > \"$2.json\" && \"$0\" replay \"$1\" --capacity 25% --host-capacity 25% --storage 1TiB --storage-codec \"$2.json:q8\" --quiet"
          $<TARGET_FILE:tierpool_cli> ${_tp_replay_mlp} ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_codec)
set_tests_properties(cli.replay.storage_codec PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "\nlru +25% ")
add_test(NAME cli.replay.storage_codec_unknown
  COMMAND sh -c "\"$0\" codec measure -r 1 --steps 1 --batch 16 --width 16 --json > \"$2.json\" && \"$0\" replay \"$1\" --capacity 25% --storage 1TiB --storage-codec \"$2.json:brotli\" --quiet"
          $<TARGET_FILE:tierpool_cli> ${_tp_replay_mlp} ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_codec_unknown)
set_tests_properties(cli.replay.storage_codec_unknown PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "no codec 'brotli' measured for tensor 'activations'")
add_test(NAME cli.replay.storage_codec_not_with_ratio COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp}
  --capacity 25% --storage 1TiB --storage-codec x.json:lz4 --storage-ratio 2 --quiet)
set_tests_properties(cli.replay.storage_codec_not_with_ratio PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "not with --storage-ratio or --storage-link")
add_test(NAME cli.replay.storage_ratio_bad COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp}
  --capacity 25% --storage 1TiB --storage-ratio 0.5 --quiet)
set_tests_properties(cli.replay.storage_ratio_bad PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "invalid --storage-ratio '0.5': a number in \\[1, 1000000\\]")
# --no-recompute: the generator marks transformer-train's activations; with recipes some are
# dropped (the JSON's evicted_recompute), without them none.
add_test(NAME cli.replay.recompute_or_not
  COMMAND sh -c "\"$0\" trace gen transformer-train blocks=4 iterations=2 --seed 1 -o \"$1.tpt\" > /dev/null && \"$0\" replay \"$1.tpt\" --capacity 25% --host-capacity 25% --storage 1TiB --quiet --json \"$1.a.json\" > /dev/null && \"$0\" replay \"$1.tpt\" --capacity 25% --host-capacity 25% --storage 1TiB --no-recompute --quiet --json \"$1.b.json\" > /dev/null && grep -o '\"evicted_recompute\":[0-9]*' \"$1.a.json\" \"$1.b.json\""
          $<TARGET_FILE:tierpool_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_recompute)
set_tests_properties(cli.replay.recompute_or_not PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "a.json:\"evicted_recompute\":[1-9][0-9]*\n[^\n]*b.json:\"evicted_recompute\":0\n")
add_test(NAME cli.replay.plot_per_prefetcher
  COMMAND sh -c "\"$0\" replay \"$1\" --policy lru --prefetch none,plan --capacity 25%,50% -q --plot \"$2.svg\" > /dev/null && grep -c '<polyline' \"$2.svg\" && grep -c '>lru (prefetch plan)</text>' \"$2.svg\""
          $<TARGET_FILE:tierpool_cli> ${_tp_replay_mlp} ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_plot_pf)
set_tests_properties(cli.replay.plot_per_prefetcher PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "^4\n1\n$")
# --plot-ideal: makespan / ideal, one series per (mode, prefetch, policy): 2 policies x 2
# prefetchers of the pool and one uvm row set; the reference lines at 1.0 and 1.25.
set(_tp_replay_ideal_cmd "\"$0\" replay \"$1\" --policy lru,belady --prefetch none,plan --mode pool,uvm --capacity 25%,50% -q --plot-ideal \"$2.svg\" > /dev/null")
add_test(NAME cli.replay.plot_ideal
  COMMAND sh -c "${_tp_replay_ideal_cmd} && grep -c '<g class=\"series\"' \"$2.svg\" && grep -c 'class=\"reference\" data-y=\"1\"' \"$2.svg\" && grep -c 'class=\"reference\" data-y=\"1.25\"' \"$2.svg\" && grep -c '>makespan / ideal</text>' \"$2.svg\""
          $<TARGET_FILE:tierpool_cli> ${_tp_replay_mlp} ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_ideal)
set_tests_properties(cli.replay.plot_ideal PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "^5\n1\n1\n1\n$")
# The same files parsed by a real XML parser (Python's minidom), where python3 is found:
# well-formed, and the series and reference lines are elements with those attributes.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME cli.replay.plot_ideal_xml
    COMMAND sh -c "${_tp_replay_ideal_cmd} --plot \"$2.plot.svg\" && \"$3\" \"$4\" \"$2.svg\" \"$2.plot.svg\""
            $<TARGET_FILE:tierpool_cli> ${_tp_replay_mlp} ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_ideal_xml
            ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/replay/check_svg.py)
  set_tests_properties(cli.replay.plot_ideal_xml PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "^series 5 5 refs 1 1\\.25 points \\[2\\]\nplot polylines 10\n$")
endif()
# --timeline: every run's copies and kernels as Chrome trace-event JSON (one process per row,
# lanes for the trace's stream and both links), and the activity table on stdout.
if(Python3_Interpreter_FOUND)
  add_test(NAME cli.replay.timeline
    COMMAND sh -c "\"$0\" replay \"$1\" --policy lru --capacity 25%,50% -q --timeline \"$2.json\" | grep -c '^lru  ' && \"$3\" -c \"import json,sys; d=json.load(open(sys.argv[1]))['traceEvents']; print(len({e['pid'] for e in d}), sorted({e['args']['name'] for e in d if e.get('name')=='thread_name'}), all(e['dur']>=0 for e in d if e['ph']=='X'))\" \"$2.json\""
            $<TARGET_FILE:tierpool_cli> ${_tp_replay_mlp} ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_timeline ${Python3_EXECUTABLE})
  set_tests_properties(cli.replay.timeline PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "^4\n2 \\['d2h link', 'h2d link', 'stream 0'\\] True\n$")
endif()
add_test(NAME cli.replay.activity_needs_pool_mode
  COMMAND sh -c "\"$0\" replay \"$1\" --mode cache --activity -q; echo \"exit $?\""
          $<TARGET_FILE:tierpool_cli> ${_tp_replay_trace})
set_tests_properties(cli.replay.activity_needs_pool_mode PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "--activity and --timeline need --mode pool.*exit 2")
add_test(NAME cli.replay.compaction_needs_pool_mode
  COMMAND sh -c "\"$0\" replay \"$1\" --mode cache --compaction -q; echo \"exit $?\""
          $<TARGET_FILE:tierpool_cli> ${_tp_replay_trace})
set_tests_properties(cli.replay.compaction_needs_pool_mode PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "--compaction needs --mode pool.*exit 2")
add_test(NAME cli.replay.no_trace_prefetch_needs_pool_mode
  COMMAND sh -c "\"$0\" replay \"$1\" --mode uvm --no-trace-prefetch -q; echo \"exit $?\""
          $<TARGET_FILE:tierpool_cli> ${_tp_replay_trace})
set_tests_properties(cli.replay.no_trace_prefetch_needs_pool_mode PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "--no-trace-prefetch needs --mode pool.*exit 2")
# --no-trace-prefetch on a recording with the program's own prefetches (the ResNet-18 fixture:
# lru at 25 % issues 306 of them by default, none with the flag; tests/data/README.md).
add_test(NAME cli.replay.no_trace_prefetch
  COMMAND $<TARGET_FILE:tierpool_cli> replay ${CMAKE_CURRENT_SOURCE_DIR}/data/resnet18_torch.tpb -p lru -c 25% --no-recompute
          --no-trace-prefetch -q --json /dev/stdout)
set_tests_properties(cli.replay.no_trace_prefetch PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "\"prefetches\":0,")
# --compaction (Note [Compacting around vacated blocks], runtime/migration/placement.cpp):
# GPT-2 small on a device tier above its 16.6 GiB peak. Without compaction the tier's
# vacated room is scattered between live tensors and the pool moves gigabytes; with it,
# nothing crosses the link.
add_test(NAME cli.replay.compaction_above_the_peak
  COMMAND sh -c "\"$0\" replay \"$1\" -p lru -c 20GiB --no-recompute -q --json \"$2.off.json\" > /dev/null && \"$0\" replay \"$1\" -p lru -c 20GiB --no-recompute --compaction -q --json \"$2.on.json\" > /dev/null && grep -o '\"bytes_h2d\":[0-9]*\\|\"fragmented_evictions\":[0-9]*\\|\"compactions\":[0-9]*' \"$2.off.json\" \"$2.on.json\""
          $<TARGET_FILE:tierpool_cli> ${CMAKE_CURRENT_SOURCE_DIR}/data/gpt2_small_train.tpt ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_compaction)
set_tests_properties(cli.replay.compaction_above_the_peak PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "off.json:\"bytes_h2d\":[1-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]+\n[^\n]*off.json:\"fragmented_evictions\":[1-9][0-9]*\n[^\n]*off.json:\"compactions\":0\n[^\n]*on.json:\"bytes_h2d\":0\n[^\n]*on.json:\"fragmented_evictions\":0\n[^\n]*on.json:\"compactions\":[1-9][0-9]*\n")
add_test(NAME cli.replay.unknown_policy_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --policy bogus -q)
set_tests_properties(cli.replay.unknown_policy_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.replay.unknown_policy_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --policy bogus -q)
set_tests_properties(cli.replay.unknown_policy_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: .*bogus.*lru")
add_test(NAME cli.replay.ignore_size_needs_cache_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --ignore-size)
set_tests_properties(cli.replay.ignore_size_needs_cache_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.replay.bad_capacity_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --capacity 150%)
set_tests_properties(cli.replay.bad_capacity_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: invalid capacity '150%'")
# --tiers: host tiers between the device tier and the backing host tier (pool mode only).
add_test(NAME cli.replay.tiers_header COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --capacity 25% --tiers pinned_host=1MiB -q)
set_tests_properties(cli.replay.tiers_header PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tiers device,pinned_host=1MiB,host")
add_test(NAME cli.replay.bad_tier_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --tiers managed=1MiB -q)
set_tests_properties(cli.replay.bad_tier_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: replay: bad tier 'managed=1MiB': the kind must be pinned_host or host")
add_test(NAME cli.replay.bad_tier_size_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --tiers pinned_host=100 -q)
set_tests_properties(cli.replay.bad_tier_size_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "bad tier 'pinned_host=100': a tier needs at least 256 bytes")
add_test(NAME cli.replay.tiers_need_pool_mode_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --mode cache --tiers pinned_host=1MiB -q)
set_tests_properties(cli.replay.tiers_need_pool_mode_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.replay.help COMMAND $<TARGET_FILE:tierpool_cli> replay --help)
set_tests_properties(cli.replay.help PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "--policy.*--capacity.*--mode.*--plot.*--plot-ideal")

# Unserved requests are a column of the table, and each row with some is warned about
# (only the JSON showed them; the row's makespan can be under its ideal time).
set(_tp_replay_unserved ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_unserved.tpt)
file(WRITE ${_tp_replay_unserved} "# tierpool-trace v1\nread 1 bytes=4096\nread 2 bytes=100\nread 1 bytes=4096\nread 2 bytes=100\n")
add_test(NAME cli.replay.unserved_column COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_unserved} --mode cache --capacity 1KiB,8KiB -q)
set_tests_properties(cli.replay.unserved_column PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "miss +unserved +byte miss.*\nlru +1KiB \\(1\\.0 KiB\\) +4 +0\\.2500 +0\\.7500 +2 .*\nlru +8KiB \\(8\\.0 KiB\\) +4 +0\\.5000 +0\\.5000 +0 .*tierpool replay: warning: lru at 1KiB left 2 of 4 requests unserved")
add_test(NAME cli.replay.unserved_pool_mode COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_unserved} --capacity 1KiB -q)
set_tests_properties(cli.replay.unserved_pool_mode PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool replay: warning: lru at 1KiB left 2 of 4 requests unserved")

# --mode pool,uvm,uvm-hints: one command, one table with a mode column; the UVM modes run
# lru only (the driver's eviction), and their rows carry "vs belady" from the pool's belady.
add_test(NAME cli.replay.uvm_modes_table COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp}
  --policy belady,lru --capacity 50% --mode pool,uvm,uvm-hints -q)
set_tests_properties(cli.replay.uvm_modes_table PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "mode pool,uvm,uvm-hints, link pcie4, prefetch none, uvm page 64\\.0 KiB, fault 25 us;.*\npolicy +mode +capacity +requests .*\nbelady +pool +50% .*\nlru +pool +50% .*\nlru +uvm +50% [^\n]* 1\\.[0-9][0-9][0-9] [^\n]*\nlru +uvm-hints +50% [^\n]*\n$")
add_test(NAME cli.replay.uvm_json_mode
  COMMAND sh -c "\"$0\" replay \"$1\" --capacity 50% --mode uvm-hints --uvm-page 2MiB --uvm-fault-us 40 -q --json \"$2.json\" > /dev/null && head -c 100 \"$2.json\""
          $<TARGET_FILE:tierpool_cli> ${_tp_replay_mlp} ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_uvm)
set_tests_properties(cli.replay.uvm_json_mode PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^\\[\n  {\"policy\":\"lru\",\"mode\":\"uvm-hints\",\"prefetch\":\"none\",\"capacity\":\"50%\"")
add_test(NAME cli.replay.uvm_prefetch_needs_pool_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --mode uvm-hints --prefetch sequence -q)
set_tests_properties(cli.replay.uvm_prefetch_needs_pool_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool replay: --prefetch needs --mode pool")
add_test(NAME cli.replay.uvm_cache_mix_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --mode pool,cache -q)
set_tests_properties(cli.replay.uvm_cache_mix_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: --mode 'pool,cache': cache mode cannot be mixed with the others")
add_test(NAME cli.replay.uvm_cache_mix_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --mode uvm,cache -q)
set_tests_properties(cli.replay.uvm_cache_mix_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
foreach(_tp_page 3000 2KiB 3MiB bogus)
  add_test(NAME cli.replay.uvm_bad_page_${_tp_page}_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --mode uvm --uvm-page ${_tp_page} -q)
  set_tests_properties(cli.replay.uvm_bad_page_${_tp_page}_message PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "tierpool: error: invalid --uvm-page '${_tp_page}': ")
endforeach()
add_test(NAME cli.replay.uvm_bad_page_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --mode uvm --uvm-page 3000 -q)
set_tests_properties(cli.replay.uvm_bad_page_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
foreach(_tp_fault -1 nan inf x)
  add_test(NAME cli.replay.uvm_bad_fault_${_tp_fault}_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --mode uvm --uvm-fault-us ${_tp_fault} -q)
  set_tests_properties(cli.replay.uvm_bad_fault_${_tp_fault}_message PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "tierpool: error: --uvm-fault-us must be a number of microseconds in 0\\.\\.1000000, got '${_tp_fault}'")
endforeach()

# Numbers out of range are refused with the option and its range (-1 wrapped: --loop -1
# threw std::bad_alloc; --threads 0 / 10000 were taken).
add_test(NAME cli.replay.negative_loop_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --loop -1 -q)
set_tests_properties(cli.replay.negative_loop_message PROPERTIES LABELS cpu TIMEOUT 60
  PASS_REGULAR_EXPRESSION "tierpool: error: --loop must be an integer in 1\\.\\.1000000, got '-1'")
add_test(NAME cli.replay.negative_loop_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --loop -1 -q)
set_tests_properties(cli.replay.negative_loop_fails PROPERTIES LABELS cpu TIMEOUT 60 WILL_FAIL TRUE)
foreach(_tp_threads -1 0 10000)
  add_test(NAME cli.replay.threads_${_tp_threads}_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --threads ${_tp_threads} -q)
  set_tests_properties(cli.replay.threads_${_tp_threads}_message PROPERTIES LABELS cpu TIMEOUT 60
    PASS_REGULAR_EXPRESSION "tierpool: error: --threads must be an integer in 1\\.\\.1024, got '${_tp_threads}'")
endforeach()
add_test(NAME cli.replay.threads_0_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --threads 0 -q)
set_tests_properties(cli.replay.threads_0_fails PROPERTIES LABELS cpu TIMEOUT 60 WILL_FAIL TRUE)

# An empty name in a policy list is refused (',' silently meant lru).
foreach(_tp_list "," "lru,,arc" "lru,")
  string(MAKE_C_IDENTIFIER "${_tp_list}" _tp_id)
  add_test(NAME cli.replay.empty_policy_name_${_tp_id} COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --policy "${_tp_list}" -q)
  set_tests_properties(cli.replay.empty_policy_name_${_tp_id} PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "tierpool: error: --policy '${_tp_list}' has an empty policy name")
endforeach()
add_test(NAME cli.replay.empty_policy_name_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_trace} --policy , -q)
set_tests_properties(cli.replay.empty_policy_name_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)

# An empty trace, or one without accesses, says so (it said "capacity at least 256 bytes (got 1)").
set(_tp_replay_empty ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_empty.tpt)
file(WRITE ${_tp_replay_empty} "# tierpool-trace v1\n")
set(_tp_replay_noaccess ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_noaccess.tpt)
file(WRITE ${_tp_replay_noaccess} "# tierpool-trace v1\nalloc 1 4096\nfree 1\n")
add_test(NAME cli.replay.empty_trace_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_empty} -q)
set_tests_properties(cli.replay.empty_trace_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: trace '[^']*cli_replay_empty\\.tpt' is empty: nothing to replay")
add_test(NAME cli.replay.empty_trace_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_empty} -q)
set_tests_properties(cli.replay.empty_trace_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.replay.no_accesses_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_noaccess} -q)
set_tests_properties(cli.replay.no_accesses_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: trace '[^']*cli_replay_noaccess\\.tpt' has no accesses \\(2 events\\): nothing to replay")

# Overflows: a size past the cache word's 60 bits (masked before), a link too slow for the
# simulated clock (the makespan saturated under its own ideal time).
set(_tp_replay_huge ${CMAKE_CURRENT_BINARY_DIR}/cli_replay_huge.tpt)
file(WRITE ${_tp_replay_huge} "# tierpool-trace v1\nread 43 bytes=18446744073709551615\nread 2 bytes=512\n")
add_test(NAME cli.replay.huge_size_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_huge} --mode cache -q)
set_tests_properties(cli.replay.huge_size_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: replay: tensor 43 has 18446744073709551615 bytes \\(at most 2\\^60 - 1")
add_test(NAME cli.replay.slow_link_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --link 1e-300,0 --capacity 50% -q)
set_tests_properties(cli.replay.slow_link_message PROPERTIES LABELS cpu TIMEOUT 60
  PASS_REGULAR_EXPRESSION "tierpool: error: replay: at 50% the copies alone take at least [^ ]+ s on the link \\(1e-300 bytes/s, 0 ns per copy\\), past the simulated clock's range")
add_test(NAME cli.replay.slow_link_fails COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_replay_mlp} --link 1e-300,0 --capacity 50% -q)
set_tests_properties(cli.replay.slow_link_fails PROPERTIES LABELS cpu TIMEOUT 60 WILL_FAIL TRUE)
add_test(NAME cli.replay.directory_message COMMAND $<TARGET_FILE:tierpool_cli> replay ${CMAKE_CURRENT_BINARY_DIR} -q)
set_tests_properties(cli.replay.directory_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: cannot read trace '[^']*': it is a directory")

# The model fixtures (tests/data/README.md): traces of ResNet-18 and GPT-2 small training
# written by scripts/make_model_traces.py. `trace stat` gives the figures the script prints
# (a regenerated fixture that changes fails here until the figures, the README and the
# docs are updated with it), and each replays in pool mode at 50 % with lru.
set(_tp_fixture_resnet ${CMAKE_CURRENT_SOURCE_DIR}/data/resnet18_train.tpt)
set(_tp_fixture_gpt2 ${CMAKE_CURRENT_SOURCE_DIR}/data/gpt2_small_train.tpt)
add_test(NAME cli.fixtures.resnet18_stat COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_fixture_resnet})
set_tests_properties(cli.fixtures.resnet18_stat PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "events +4975\n +allocate +802\n +free +802\n +access +2689\n +prefetch +0\n +compute +668\n +phase +14\n.*\n +tensors +802\n +working set +5417443032 .*\n +peak live +872929924 .*\n +live at end +0\n +compute +0\\.018479 s\n.*well-formed +yes")
add_test(NAME cli.fixtures.gpt2_small_stat COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_fixture_gpt2})
set_tests_properties(cli.fixtures.gpt2_small_stat PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "events +12681\n +allocate +2139\n +free +2139\n +access +6636\n +prefetch +0\n +compute +1753\n +phase +14\n.*\n +tensors +2139\n +working set +174082882584 .*\n +peak live +17859263492 .*\n +live at end +0\n +compute +0\\.379709 s\n.*well-formed +yes")
add_test(NAME cli.fixtures.resnet18_replay COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_fixture_resnet} -p lru -c 50% -q)
set_tests_properties(cli.fixtures.resnet18_replay PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "802 objects, working set 5\\.0 GiB, peak live 832\\.5 MiB\n.*\nlru +50% \\(416\\.2 MiB\\) +2689 +0\\.[0-9]+ +0\\.[0-9]+ +0 ")
add_test(NAME cli.fixtures.gpt2_small_replay COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_fixture_gpt2} -p lru -c 50% -q)
set_tests_properties(cli.fixtures.gpt2_small_replay PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "2139 objects, working set 162\\.1 GiB, peak live 16\\.6 GiB\n.*\nlru +50% \\(8\\.3 GiB\\) +6636 +0\\.[0-9]+ +0\\.[0-9]+ +0 ")
# The committed fixtures are what the script writes, byte for byte (where python3 is found);
# and its --check fails where they are not (an empty folder).
if(Python3_Interpreter_FOUND)
  add_test(NAME cli.fixtures.script_check
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/make_model_traces.py --check --out-dir ${CMAKE_CURRENT_SOURCE_DIR}/data)
  set_tests_properties(cli.fixtures.script_check PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "resnet18_train\\.tpt: tensors 802, events 4975, .*\ngpt2_small_train\\.tpt: tensors 2139, events 12681, "
    FAIL_REGULAR_EXPRESSION "differs")
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/cli_fixtures_empty)
  add_test(NAME cli.fixtures.script_check_fails
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/make_model_traces.py --check --out-dir ${CMAKE_CURRENT_BINARY_DIR}/cli_fixtures_empty)
  set_tests_properties(cli.fixtures.script_check_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
endif()
# tests/data/torch_mlp_offload.tpb: a PyTorch training run recorded through tierpool.torch's
# offload (scripts/make_torch_trace.py; tests/data/README.md). `trace stat` gives its figures,
# and the replays over lru, s3fifo and belady in cache and pool modes are sane
# (cli_torch_trace_check.cmake); the same check fails for a trace of another request count.
set(_tp_fixture_torch ${CMAKE_CURRENT_SOURCE_DIR}/data/torch_mlp_offload.tpb)
add_test(NAME cli.fixtures.torch_mlp_stat COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_fixture_torch})
set_tests_properties(cli.fixtures.torch_mlp_stat PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "\\(binary\\)\n +events +922\n +allocate +87\n +free +87\n +access +296\n +prefetch +156\n.*\n +release +296\n.*\n +tensors +87\n +working set +622104 .*\n +peak live +274188 .*\n +live at end +0\n.*well-formed +yes")
add_test(NAME cli.fixtures.torch_mlp_replay
  COMMAND ${CMAKE_COMMAND} -DTIERPOOL_CLI=$<TARGET_FILE:tierpool_cli> -DTRACE=${_tp_fixture_torch} -DREQUESTS=296
          -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/torch_trace_check -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_torch_trace_check.cmake)
set_tests_properties(cli.fixtures.torch_mlp_replay PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "torch trace replay: sane")
add_test(NAME cli.fixtures.torch_mlp_replay_check_fails
  COMMAND ${CMAKE_COMMAND} -DTIERPOOL_CLI=$<TARGET_FILE:tierpool_cli> -DTRACE=${_tp_replay_trace} -DREQUESTS=296
          -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/torch_trace_check_fails -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_torch_trace_check.cmake)
set_tests_properties(cli.fixtures.torch_mlp_replay_check_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
# tests/data/resnet18_torch.tpb and gpt2_torch.tpb: real PyTorch training recorded through
# tierpool.torch with tierpool.torch.roofline's compute (scripts/record_torch_models.py;
# tests/data/README.md). `trace stat` gives their figures (compute and phases included), and
# each replays in pool mode at 50 % with lru and the planner, timed by its compute.
set(_tp_fixture_resnet_torch ${CMAKE_CURRENT_SOURCE_DIR}/data/resnet18_torch.tpb)
add_test(NAME cli.fixtures.resnet18_torch_stat COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_fixture_resnet_torch})
set_tests_properties(cli.fixtures.resnet18_torch_stat PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "events +6385\n +allocate +561\n +free +561\n +access +1865\n +prefetch +973\n +compute +546\n +phase +14\n +release +1865\n.*\n +tensors +561\n +working set +3431762880 .*\n +peak live +1192409472 .*\n +live at end +0\n +compute +0\\.017256 s\n.*well-formed +yes")
add_test(NAME cli.fixtures.resnet18_torch_replay
  COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_fixture_resnet_torch} -p lru -c 50% --prefetch plan --no-recompute -q)
set_tests_properties(cli.fixtures.resnet18_torch_replay PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "561 objects, working set 3\\.2 GiB, peak live 1\\.1 GiB\n.*\nlru +50% \\(568\\.6 MiB\\) +1865 .* 67\\.8 ms +[0-9.]+ +129\\.9 ms ")
set(_tp_fixture_gpt2_torch ${CMAKE_CURRENT_SOURCE_DIR}/data/gpt2_torch.tpb)
add_test(NAME cli.fixtures.gpt2_torch_stat COMMAND $<TARGET_FILE:tierpool_cli> trace stat ${_tp_fixture_gpt2_torch})
set_tests_properties(cli.fixtures.gpt2_torch_stat PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "events +15259\n +allocate +1374\n +free +1374\n +access +4541\n +prefetch +2368\n +compute +1047\n +phase +14\n +release +4541\n.*\n +tensors +1374\n +working set +17330257920 .*\n +peak live +6428901376 .*\n +live at end +0\n +compute +0\\.100093 s\n.*well-formed +yes")
add_test(NAME cli.fixtures.gpt2_torch_replay
  COMMAND $<TARGET_FILE:tierpool_cli> replay ${_tp_fixture_gpt2_torch} -p lru -c 50% --prefetch plan --no-recompute -q)
set_tests_properties(cli.fixtures.gpt2_torch_replay PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "1374 objects, working set 16\\.1 GiB, peak live 6\\.0 GiB\n.*\nlru +50% \\(3\\.0 GiB\\) +4541 .* 333\\.6 ms +[0-9.]+ +503\\.8 ms ")
# ---- end tierpool replay ----------------------------------------------------------

# ---- tierpool top -------------------------------------------------------------------
# (tests/unit/monitor_tests.cpp runs `top --json` and `top -n 1` against a pool of its own.)
add_test(NAME cli.top.help COMMAND $<TARGET_FILE:tierpool_cli> top --help)
set_tests_properties(cli.top.help PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "--interval.*--iterations.*--json.*--clean")
add_test(NAME cli.top.once COMMAND $<TARGET_FILE:tierpool_cli> top --once)
set_tests_properties(cli.top.once PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "tierpool top — [0-9]+ pool\\(s\\)")
add_test(NAME cli.top.clean COMMAND $<TARGET_FILE:tierpool_cli> top --clean)
set_tests_properties(cli.top.clean PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "[0-9]+ stale segment\\(s\\) removed")
add_test(NAME cli.top.bad_interval_fails COMMAND $<TARGET_FILE:tierpool_cli> top --interval 0)
set_tests_properties(cli.top.bad_interval_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.top.bad_interval_message COMMAND $<TARGET_FILE:tierpool_cli> top --interval 0)
set_tests_properties(cli.top.bad_interval_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "--interval must be in \\(0, 86400\\] seconds, got 0")
# Numeric options out of range (-n -1 was read as 2^64 - 1 and never ended) are refused
# with the option's name and range; TIMEOUT bounds the old, endless behaviour.
foreach(_tp_top_case
    "iterations_negative|-n|-1|--iterations must be an integer in 0\\.\\.9223372036854775807, got '-1'"
    "iterations_fraction|-n|1.5|--iterations must be an integer in 0\\.\\.9223372036854775807, got '1\\.5'"
    "iterations_too_big|--iterations|99999999999999999999|--iterations must be an integer in 0\\.\\.9223372036854775807, got '99999999999999999999'"
    "pid_negative|-p|-1|--pid must be an integer in 1\\.\\.2147483647, got '-1'"
    "pid_zero|--pid|0|--pid must be an integer in 1\\.\\.2147483647, got '0'"
    "pid_too_big|--pid|4294967297|--pid must be an integer in 1\\.\\.2147483647, got '4294967297'"
    "interval_negative|-d|-1|--interval must be in \\(0, 86400\\] seconds, got -1"
    "interval_nan|--interval|nan|--interval must be in \\(0, 86400\\] seconds, got nan"
    "interval_overflow|--interval|1e999|--interval must be in \\(0, 86400\\] seconds, got 1e999")
  string(REPLACE "|" ";" _tp_top_fields "${_tp_top_case}")
  list(GET _tp_top_fields 0 _tp_top_name)
  list(GET _tp_top_fields 1 _tp_top_opt)
  list(GET _tp_top_fields 2 _tp_top_val)
  list(GET _tp_top_fields 3 _tp_top_msg)
  add_test(NAME cli.top.${_tp_top_name}_fails COMMAND $<TARGET_FILE:tierpool_cli> top ${_tp_top_opt} ${_tp_top_val})
  set_tests_properties(cli.top.${_tp_top_name}_fails PROPERTIES LABELS cpu WILL_FAIL TRUE TIMEOUT 30)
  add_test(NAME cli.top.${_tp_top_name}_message COMMAND $<TARGET_FILE:tierpool_cli> top ${_tp_top_opt} ${_tp_top_val})
  set_tests_properties(cli.top.${_tp_top_name}_message PROPERTIES LABELS cpu TIMEOUT 30
    PASS_REGULAR_EXPRESSION "tierpool top: ${_tp_top_msg}")
endforeach()
add_test(NAME cli.top.plus_sign_accepted COMMAND $<TARGET_FILE:tierpool_cli> top -n +1 -p +1)
set_tests_properties(cli.top.plus_sign_accepted PROPERTIES LABELS cpu TIMEOUT 30
  PASS_REGULAR_EXPRESSION "tierpool top — 0 pool\\(s\\)")
# ---- end tierpool top ---------------------------------------------------------------

# ---- tierpool snapshot view -------------------------------------------------------
# tests/data/snapshot_demo.json: the demo's pool after one step (tests/data/README.md).
set(_tp_snapshot ${CMAKE_CURRENT_SOURCE_DIR}/data/snapshot_demo.json)
add_test(NAME cli.snapshot.view_text COMMAND $<TARGET_FILE:tierpool_cli> snapshot view ${_tp_snapshot})
set_tests_properties(cli.snapshot.view_text PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "snapshot_demo\\.json: 50 tensors \\([0-9.]+ KiB\\), backend sim, time [0-9.]+ ms\n  tier name +capacity +used +pending +free +largest +frag +blocks +tensors +dirty\n  0 +device .*\n  1 +pinned_host .*\n  2 +host [^\n]*[0-9]+%")
# The layout plot over two snapshots (the same file twice): an SVG with every tier's panel.
add_test(NAME cli.snapshot.view_svg
  COMMAND sh -c "\"$0\" snapshot view \"$1\" \"$1\" --svg \"$2\" --title 'two snapshots' && grep -o -e 'two snapshots' -e 'tier 2: host' -e '</svg>' \"$2\" | sort -u"
          $<TARGET_FILE:tierpool_cli> ${_tp_snapshot} ${CMAKE_CURRENT_BINARY_DIR}/cli_snapshot_view.svg)
set_tests_properties(cli.snapshot.view_svg PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "wrote [^\n]*cli_snapshot_view\\.svg: 3 tiers over 2 snapshots\n</svg>\ntier 2: host\ntwo snapshots\n$")
# A corrupt, a foreign and a missing file: a message naming the file, exit status 2.
set(_tp_bad_snapshot ${CMAKE_CURRENT_BINARY_DIR}/cli_snapshot_corrupt.json)
file(WRITE ${_tp_bad_snapshot} "{\"version\": 1, \"tensors\": [")
set(_tp_foreign_snapshot ${CMAKE_CURRENT_BINARY_DIR}/cli_snapshot_foreign.json)
file(WRITE ${_tp_foreign_snapshot} "{\"version\": 7}")
foreach(_tp_case
    "corrupt|${_tp_bad_snapshot}|tierpool: error: snapshot '[^']*cli_snapshot_corrupt\\.json': not JSON"
    "foreign|${_tp_foreign_snapshot}|tierpool: error: snapshot '[^']*cli_snapshot_foreign\\.json': schema version 7, this tierpool reads version 1"
    "missing|${CMAKE_CURRENT_BINARY_DIR}/no_such_snapshot.json|tierpool: error: cannot read snapshot '[^']*no_such_snapshot\\.json': No such file or directory")
  string(REPLACE "|" ";" _tp_fields "${_tp_case}")
  list(GET _tp_fields 0 _tp_name)
  list(GET _tp_fields 1 _tp_file)
  list(GET _tp_fields 2 _tp_msg)
  add_test(NAME cli.snapshot.${_tp_name}_file
    COMMAND sh -c "\"$0\" snapshot view \"$1\" \"$2\" 2>&1; echo \"exit status $?\""
            $<TARGET_FILE:tierpool_cli> ${_tp_snapshot} ${_tp_file})
  set_tests_properties(cli.snapshot.${_tp_name}_file PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "^${_tp_msg}[^\n]*\nexit status 2\n$")
endforeach()
add_test(NAME cli.snapshot.no_file_fails COMMAND $<TARGET_FILE:tierpool_cli> snapshot view)
set_tests_properties(cli.snapshot.no_file_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
# ---- end tierpool snapshot view ---------------------------------------------------

# ---- tierpool codec measure -------------------------------------------------------
# A small demo model (figures are not asserted, keys and behaviour are; docs/chapters/codecs.md).
add_test(NAME cli.codec.measure_json
  COMMAND ${CMAKE_COMMAND} -DTIERPOOL_CLI=$<TARGET_FILE:tierpool_cli> -DWORK=${CMAKE_CURRENT_BINARY_DIR}/cli_codec
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_codec_json_check.cmake)
set_tests_properties(cli.codec.measure_json PROPERTIES LABELS cpu)
add_test(NAME cli.codec.measure_table
  COMMAND $<TARGET_FILE:tierpool_cli> codec measure --reps 2 --steps 1 --batch 16 --width 32 --codec none,lz4,q8 --q8-block 64)
set_tests_properties(cli.codec.measure_table PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "activations: [0-9.]+ MiB, [0-9.]+ % zeros; memcpy [0-9.]+ GB/s \\[[0-9.]+\\.\\.[0-9.]+\\]\n.*\n  none .* exact\n  lz4 .* exact\n  q8-64 .* max [0-9.e-]+, rms")
add_test(NAME cli.codec.help COMMAND $<TARGET_FILE:tierpool_cli> codec measure --help)
set_tests_properties(cli.codec.help PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "--codec.*--input.*--source.*--reps.*--json")
add_test(NAME cli.codec.unknown_codec_message COMMAND $<TARGET_FILE:tierpool_cli> codec measure --codec lz4,brotli)
set_tests_properties(cli.codec.unknown_codec_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: unknown codec 'brotli' \\(valid: none, lz4, zstd, q8\\)")
add_test(NAME cli.codec.unknown_codec_fails COMMAND $<TARGET_FILE:tierpool_cli> codec measure --codec brotli)
set_tests_properties(cli.codec.unknown_codec_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.codec.bad_reps_fails COMMAND $<TARGET_FILE:tierpool_cli> codec measure --reps 0)
set_tests_properties(cli.codec.bad_reps_fails PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.codec.missing_input_message COMMAND $<TARGET_FILE:tierpool_cli> codec measure --input /nonexistent.npy)
set_tests_properties(cli.codec.missing_input_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "tierpool: error: cannot open '/nonexistent.npy'")
# q8 on bytes that are not float32: skipped with the reason, the lossless codecs still measured.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cli_codec_odd.bin "seven b")
add_test(NAME cli.codec.q8_skips_non_float COMMAND $<TARGET_FILE:tierpool_cli> codec measure --reps 1 --input ${CMAKE_CURRENT_BINARY_DIR}/cli_codec_odd.bin)
set_tests_properties(cli.codec.q8_skips_non_float PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "  zstd-3 .* exact\n  skipped q8: codec q8: 7 bytes are not a whole number of float32 values \\[not_float32\\]")
# ---- end tierpool codec measure ---------------------------------------------------

# TIERPOOL_HUGE_PAGES (Note [Big arrays on huge pages]): a value other than 0 or 1 is named
# in a warning and the run goes on; 1 (huge pages asked for) runs as usual.
add_test(NAME cli.huge_pages.invalid_warns
  COMMAND ${CMAKE_COMMAND} -E env TIERPOOL_HUGE_PAGES=maybe
          $<TARGET_FILE:tierpool_cli> bench scale --tensors 100000 --runs 1 --ops 1000)
set_tests_properties(cli.huge_pages.invalid_warns PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "TIERPOOL_HUGE_PAGES must be 0 or 1, got 'maybe'; using 0")
add_test(NAME cli.huge_pages.on
  COMMAND ${CMAKE_COMMAND} -E env TIERPOOL_HUGE_PAGES=1
          $<TARGET_FILE:tierpool_cli> bench scale --tensors 100000 --runs 1 --ops 1000)
set_tests_properties(cli.huge_pages.on PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "pool valid at end of every run: yes" FAIL_REGULAR_EXPRESSION "TIERPOOL_HUGE_PAGES")

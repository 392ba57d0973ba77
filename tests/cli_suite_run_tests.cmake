# CLI tests of `tierpool suite run` (docs/chapters/suite.md).
set(_tp_suite_out ${CMAKE_CURRENT_BINARY_DIR}/suite_run_out)

# A short run on two presets: one bundle each, with the schema's fields, the simulated
# mark, figures with units and spreads, and the workloads that did not run named.
add_test(NAME cli.suite_run.two_presets
  COMMAND ${CMAKE_COMMAND} -DTIERPOOL=$<TARGET_FILE:tierpool_cli> -DOUT=${_tp_suite_out}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_suite_run_check.cmake)
set_tests_properties(cli.suite_run.two_presets PROPERTIES LABELS cpu)

# The serving-scale KV cache (quick: lru and s3fifo at 2x on the kv-paging serving preset,
# about 80 s): both runs' figures, and the preset named in their parameters.
add_test(NAME cli.suite_run.kv_serving
  COMMAND $<TARGET_FILE:tierpool_cli> suite report ${_tp_suite_out}_kvs/sim-gh200.json)
add_test(NAME cli.suite_run.kv_serving_run
  COMMAND $<TARGET_FILE:tierpool_cli> suite run --devices sim:gh200 --only kv-serving --preset quick
          --out ${_tp_suite_out}_kvs)
set_tests_properties(cli.suite_run.kv_serving_run PROPERTIES LABELS cpu FIXTURES_SETUP suite_kvs
  PASS_REGULAR_EXPRESSION "kv-serving +\\.\\.\\. 6 figures")
set_tests_properties(cli.suite_run.kv_serving PROPERTIES LABELS cpu FIXTURES_REQUIRED suite_kvs
  PASS_REGULAR_EXPRESSION "makespan +kv-paging +lru +none +pool +2 +serving.*makespan +kv-paging +s3fifo +none +pool +2 +serving")

add_test(NAME cli.suite_run.list COMMAND $<TARGET_FILE:tierpool_cli> suite run --list)
set_tests_properties(cli.suite_run.list PROPERTIES PASS_REGULAR_EXPRESSION "h200-sxm.*gh200.*h100-cxl")

# Bad input: each a clear message and a failing exit, nothing run.
foreach(_tp_case
    "unknown_preset|--devices;sim:h999|unknown simulated preset 'h999' \\(presets: a100-pcie4"
    "no_gpu|--devices;3|CUDA device 3 does not exist"
    "bad_device|--devices;gpu0|'gpu0' is neither a CUDA ordinal nor sim:PRESET"
    "twice|--devices;sim:gh200,sim:gh200|'sim:gh200' is named twice"
    "empty_item|--devices;sim:gh200,,sim:h100-pcie|an empty item"
    "short_budget|--devices;sim:gh200;--budget;0.5s|too short for any workload on 1 device"
    "short_budget_serving|--devices;sim:gh200;--only;kv-serving;--preset;quick;--budget;20s|too short for any workload on 1 device\\(s\\): the shortest needs about 75 s"
    "bad_budget|--budget;-3m|--budget must be a positive duration"
    "bad_budget_unit|--budget;5y|--budget must be a positive duration"
    "unknown_workload|--only;link,warp|unknown workload 'warp'"
    "bad_preset|--preset;huge|--preset must be quick or full"
    "bad_seed|--seed;-1|--seed must be an integer in 0..18446744073709551615, got '-1'")
  string(REPLACE "|" ";" _tp_parts "${_tp_case}")
  list(GET _tp_parts 0 _tp_name)
  list(GET _tp_parts -1 _tp_msg)
  list(REMOVE_AT _tp_parts 0 -1)
  add_test(NAME cli.suite_run.bad_${_tp_name}_message
    COMMAND $<TARGET_FILE:tierpool_cli> suite run ${_tp_parts} --out ${_tp_suite_out}_bad -q)
  set_tests_properties(cli.suite_run.bad_${_tp_name}_message PROPERTIES PASS_REGULAR_EXPRESSION "${_tp_msg}")
  add_test(NAME cli.suite_run.bad_${_tp_name}_fails
    COMMAND $<TARGET_FILE:tierpool_cli> suite run ${_tp_parts} --out ${_tp_suite_out}_bad -q)
  set_tests_properties(cli.suite_run.bad_${_tp_name}_fails PROPERTIES WILL_FAIL TRUE)
endforeach()

# --mpi without an MPI build: refused with the way to get one. With TIERPOOL_ENABLE_MPI:
# two ranks on one machine, one preset each, both bundles written by rank 0.
if(NOT TIERPOOL_ENABLE_MPI)
  add_test(NAME cli.suite_run.mpi_not_built COMMAND $<TARGET_FILE:tierpool_cli> suite run --mpi --devices sim:gh200)
  set_tests_properties(cli.suite_run.mpi_not_built PROPERTIES PASS_REGULAR_EXPRESSION "built without MPI.*TIERPOOL_ENABLE_MPI=ON")
else()
  find_package(MPI REQUIRED COMPONENTS CXX)
  add_test(NAME cli.suite_run.mpi_two_ranks
    COMMAND ${CMAKE_COMMAND} -DTIERPOOL=$<TARGET_FILE:tierpool_cli> -DMPIEXEC=${MPIEXEC_EXECUTABLE}
            -DOUT=${CMAKE_CURRENT_BINARY_DIR}/suite_mpi_out -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_suite_mpi_check.cmake)
  set_tests_properties(cli.suite_run.mpi_two_ranks PROPERTIES LABELS cpu RUN_SERIAL TRUE)
endif()

# Calibration: a preset's own link recovered from its bundle, and the calibrated preset
# reproducing every figure of the original run (simulated against "measured": 1.000x).
add_test(NAME cli.suite_calibrate.round_trip
  COMMAND ${CMAKE_COMMAND} -DTIERPOOL=$<TARGET_FILE:tierpool_cli> -DOUT=${CMAKE_CURRENT_BINARY_DIR}/suite_calibrate_out
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_suite_calibrate_check.cmake)
set_tests_properties(cli.suite_calibrate.round_trip PROPERTIES LABELS cpu)

# Calibration of the host's costs: a simulated GPU with known ones, recovered by the fit
# (Note [Fitting the host's costs]); needs the demo (examples/ is added after tests/, so
# the option, not the target, says whether it is built).
if(TIERPOOL_BUILD_EXAMPLES)
  add_test(NAME cli.suite_calibrate.host_costs
    COMMAND ${CMAKE_COMMAND} -DTIERPOOL=$<TARGET_FILE:tierpool_cli> -DDEMO=$<TARGET_FILE:oversubscribe>
            -DTRUTH=${CMAKE_CURRENT_SOURCE_DIR}/data/suite/truth-host-costs.json
            -DOUT=${CMAKE_CURRENT_BINARY_DIR}/suite_calibrate_host_out
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_suite_calibrate_host_check.cmake)
  set_tests_properties(cli.suite_calibrate.host_costs PROPERTIES LABELS cpu TIMEOUT 600)
endif()
add_test(NAME cli.suite_calibrate.v1_bundle_link_only
  COMMAND $<TARGET_FILE:tierpool_cli> suite calibrate ${CMAKE_CURRENT_SOURCE_DIR}/data/suite/h200-sxm.json
          -o ${CMAKE_CURRENT_BINARY_DIR}/suite_calibrate_v1.json)
set_tests_properties(cli.suite_calibrate.v1_bundle_link_only PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "host costs: not fitted \\(the bundle is of suite version 1 \\(its oversub-train times include the first iteration")
add_test(NAME cli.suite_calibrate.bad_rounds
  COMMAND $<TARGET_FILE:tierpool_cli> suite calibrate ${CMAKE_CURRENT_SOURCE_DIR}/data/suite/h200-sxm.json --fit-rounds 0)
set_tests_properties(cli.suite_calibrate.bad_rounds PROPERTIES LABELS cpu WILL_FAIL TRUE)
add_test(NAME cli.suite_calibrate.bad_rounds_message
  COMMAND $<TARGET_FILE:tierpool_cli> suite calibrate ${CMAKE_CURRENT_SOURCE_DIR}/data/suite/h200-sxm.json --fit-rounds 0)
set_tests_properties(cli.suite_calibrate.bad_rounds_message PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "--fit-rounds must be 1-20 \\(got 0\\)")

set(_tp_preset_dir ${CMAKE_CURRENT_SOURCE_DIR}/data/suite)
foreach(_tp_case
    "missing|sim:/nonexistent/p.json|preset file /nonexistent/p.json: cannot be read"
    "corrupt|sim:${_tp_preset_dir}/corrupt.json|not JSON"
    "foreign|sim:${_tp_preset_dir}/h200-sxm.json|not a tierpool suite preset"
    "bad_field|sim:${_tp_preset_dir}/preset-negative.json|'bandwidth_bytes_per_second' must be > 0"
    "bad_host_costs|sim:${_tp_preset_dir}/preset-bad-host-costs.json|host_costs: 'copy_seconds' must be finite and >= 0"
    "bad_kernels|sim:${_tp_preset_dir}/preset-bad-kernels.json|kernels: the roofline's figures must be > 0")
  string(REPLACE "|" ";" _tp_parts "${_tp_case}")
  list(GET _tp_parts 0 _tp_name)
  list(GET _tp_parts 1 _tp_dev)
  list(GET _tp_parts 2 _tp_msg)
  add_test(NAME cli.suite_run.preset_${_tp_name}_message
    COMMAND $<TARGET_FILE:tierpool_cli> suite run --devices ${_tp_dev} --only link -q --out ${_tp_suite_out}_bad)
  set_tests_properties(cli.suite_run.preset_${_tp_name}_message PROPERTIES PASS_REGULAR_EXPRESSION "${_tp_msg}")
  add_test(NAME cli.suite_run.preset_${_tp_name}_fails
    COMMAND $<TARGET_FILE:tierpool_cli> suite run --devices ${_tp_dev} --only link -q --out ${_tp_suite_out}_bad)
  set_tests_properties(cli.suite_run.preset_${_tp_name}_fails PROPERTIES WILL_FAIL TRUE)
endforeach()
add_test(NAME cli.suite_calibrate.no_link_message
  COMMAND $<TARGET_FILE:tierpool_cli> suite calibrate ${_tp_preset_dir}/missing-link.json -o ${_tp_suite_out}_bad/p.json)
set_tests_properties(cli.suite_calibrate.no_link_message PROPERTIES PASS_REGULAR_EXPRESSION "calibration needs at least two sizes")
add_test(NAME cli.suite_calibrate.foreign_fails COMMAND $<TARGET_FILE:tierpool_cli> suite calibrate ${_tp_preset_dir}/foreign.json)
set_tests_properties(cli.suite_calibrate.foreign_fails PROPERTIES WILL_FAIL TRUE)

# nvbandwidth's figures beside the link workload's (a stand-in printing its -j layout, fed to
# a preset through the test hook): the three passed testcases for GPU column 0, the waived
# one absent; a failing nvbandwidth is named in `skipped`.
add_test(NAME cli.suite_run.nvbandwidth
  COMMAND ${CMAKE_COMMAND} -E env TIERPOOL_SUITE_NVBANDWIDTH_ON_SIM=1
          ${CMAKE_COMMAND} -DTIERPOOL=$<TARGET_FILE:tierpool_cli> -DOUT=${CMAKE_CURRENT_BINARY_DIR}/suite_nvbw_out
          -DFAKE=${CMAKE_CURRENT_SOURCE_DIR}/data/suite/fake_nvbandwidth.sh -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_suite_nvbw_check.cmake)
set_tests_properties(cli.suite_run.nvbandwidth PROPERTIES LABELS cpu)

# A demo row that fails (a stand-in demo, failing at 4x) is skipped with its error.
add_test(NAME cli.suite_run.demo_row_fails
  COMMAND ${CMAKE_COMMAND} -DTIERPOOL=$<TARGET_FILE:tierpool_cli> -DOUT=${CMAKE_CURRENT_BINARY_DIR}/suite_demo_fail_out
          -DFAKE=${CMAKE_CURRENT_SOURCE_DIR}/data/suite/fake_demo.sh -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_suite_demo_fail_check.cmake)
set_tests_properties(cli.suite_run.demo_row_fails PROPERTIES LABELS cpu)

# The budget: what no longer fits is skipped and the bundle says so (the demo's workload
# needs about 40 s; 8 s leave room for the short ones only), and the run still succeeds.
add_test(NAME cli.suite_run.budget_skips
  COMMAND ${CMAKE_COMMAND} -DTIERPOOL=$<TARGET_FILE:tierpool_cli> -DOUT=${CMAKE_CURRENT_BINARY_DIR}/suite_budget_out
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_suite_budget_check.cmake)
set_tests_properties(cli.suite_run.budget_skips PROPERTIES LABELS cpu)

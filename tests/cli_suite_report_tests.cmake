# CLI tests of `tierpool suite report` (docs/chapters/suite.md).
# Fixture bundles in data/suite/: h200-sxm.json and gh200.json (simulated, suite version 1;
# gh200 lacks a uvm and the alloc_free_batch figures), h200-sxm-v2.json (suite version 2,
# the same device id), and bad ones: corrupt.json, foreign.json, missing-unit.json.
# Multi-step checks (exit status, files written, HTML, the browser) run data/suite/check_report.cmake.
set(_tp_sr_data ${CMAKE_CURRENT_SOURCE_DIR}/data/suite)
set(_tp_sr_out ${CMAKE_CURRENT_BINARY_DIR}/suite_report)
set(_tp_sr_pair ${_tp_sr_data}/h200-sxm.json ${_tp_sr_data}/gh200.json)
find_package(Python3 QUIET COMPONENTS Interpreter)

# suite_report_check(NAME MODE ARGS... [VARS -Dk=v...]): a check_report.cmake test; ARGS are
# the command's arguments (joined with '|' for the script), VARS extra -D definitions.
function(suite_report_check name mode)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "ARGS;VARS;LABELS")
  list(JOIN arg_ARGS "|" joined)
  add_test(NAME cli.suite_report.${name}
    COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:tierpool_cli> -DMODE=${mode} -DOUT=${_tp_sr_out}/${name}
            "-DARGS=${joined}" ${arg_VARS} -P ${_tp_sr_data}/check_report.cmake)
  set_tests_properties(cli.suite_report.${name} PROPERTIES LABELS "cpu;${arg_LABELS}")
endfunction()

# ---- the text report ----------------------------------------------------------------
add_test(NAME cli.suite_report.text COMMAND $<TARGET_FILE:tierpool_cli> suite report ${_tp_sr_pair})
set_tests_properties(cli.suite_report.text PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
  "baseline \\[0\\] sim:h200-sxm \\(sim\\).*\nlink: Link bandwidth per tier pair and direction\n.*sim:h200-sxm \\(sim\\) +sim:gh200 \\(sim\\) +sim:gh200 \\(sim\\) / base\n.*bandwidth +device-pinned_host +h2d +uni +tierpool +4 KiB +1\\.25 GB/s +2\\.55 GB/s +2\\.040x\n")

# A spread (min != max) is shown; a figure absent in a bundle reads '-', its ratio too.
add_test(NAME cli.suite_report.spread_and_absent COMMAND $<TARGET_FILE:tierpool_cli> suite report ${_tp_sr_pair})
set_tests_properties(cli.suite_report.spread_and_absent PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
  "alloc_free +tierpool +256 B +218 ns \\(211\\.\\.229\\) +210 ns \\(204\\.\\.220\\) +0\\.963x\n.*alloc_free_batch +tierpool +256 B +131 ns \\(127\\.\\.138\\) +- +-\n")

add_test(NAME cli.suite_report.skipped COMMAND $<TARGET_FILE:tierpool_cli> suite report ${_tp_sr_pair})
set_tests_properties(cli.suite_report.skipped PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
  "\nskipped workloads:\n  sim:h200-sxm \\(sim\\): kv-paging: budget: 3\\.1 s left, it needs about 8 s\n")

# --baseline by device id and by index: the ratios divide by gh200 (1.25 / 2.55 = 0.490).
foreach(_tp_b sim:gh200 1)
  string(REPLACE ":" "_" _tp_bn "${_tp_b}")
  add_test(NAME cli.suite_report.baseline_${_tp_bn} COMMAND $<TARGET_FILE:tierpool_cli> suite report ${_tp_sr_pair} --baseline ${_tp_b})
  set_tests_properties(cli.suite_report.baseline_${_tp_bn} PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
    "baseline \\[1\\] sim:gh200 \\(sim\\).*sim:h200-sxm \\(sim\\) / base\n.*bandwidth +device-pinned_host +h2d +uni +tierpool +4 KiB +1\\.25 GB/s +2\\.55 GB/s +0\\.490x\n")
endforeach()

# Two bundles of one device: the columns carry the file names. Different suite versions:
# a warning naming both, exit 0.
add_test(NAME cli.suite_report.same_device COMMAND $<TARGET_FILE:tierpool_cli> suite report
  ${_tp_sr_data}/h200-sxm.json ${_tp_sr_data}/h200-sxm-v2.json)
set_tests_properties(cli.suite_report.same_device PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
  "sim:h200-sxm \\(sim\\) \\[h200-sxm\\.json\\] +sim:h200-sxm \\(sim\\) \\[h200-sxm-v2\\.json\\]")
suite_report_check(version_warning run ARGS ${_tp_sr_data}/h200-sxm.json ${_tp_sr_data}/h200-sxm-v2.json
  VARS -DEXPECT_RC=0
  "-DEXPECT_ERR=tierpool suite report: warning: bundles of different suite versions: [^\n]*h200-sxm\\.json is version 1, [^\n]*h200-sxm-v2\\.json is version 2")

add_test(NAME cli.suite_report.help COMMAND $<TARGET_FILE:tierpool_cli> suite report --help)
set_tests_properties(cli.suite_report.help PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "--baseline.*--html.*--csv.*--quiet")

# ---- CSV ----------------------------------------------------------------------------------
# One row of gh200 ('@' stands for the ';' between params, which a CMake list would split at).
suite_report_check(csv csv ARGS ${_tp_sr_pair} --csv report.csv --quiet
  VARS "-DEXPECT_LINE=sim:gh200,true,${_tp_sr_data}/gh200.json,link,bandwidth,pair=device-pinned_host@direction=h2d@mode=uni@path=tierpool@bytes=4096,GB/s,2.55,2.55,2.55,3,2.04")

# ---- HTML ---------------------------------------------------------------------------------
if(Python3_Interpreter_FOUND)
  suite_report_check(html html ARGS ${_tp_sr_pair} ${_tp_sr_data}/h200-sxm-v2.json --html report.html --quiet
    VARS -DPYTHON=${Python3_EXECUTABLE} -DCHECK_HTML=${_tp_sr_data}/check_html.py)
  # A real browser renders the page: its DOM has the plots and tables; a screenshot is taken
  # (build/tests/suite_report/browser/shot.png). Only where chromium is installed
  # (scripts/install-deps.sh installs it).
  find_program(TIERPOOL_CHROMIUM NAMES chromium chromium-browser google-chrome google-chrome-stable)
  if(TIERPOOL_CHROMIUM)
    suite_report_check(browser browser ARGS ${_tp_sr_pair} ${_tp_sr_data}/h200-sxm-v2.json --html report.html --quiet
      VARS -DPYTHON=${Python3_EXECUTABLE} -DCHECK_HTML=${_tp_sr_data}/check_html.py -DCHROMIUM=${TIERPOOL_CHROMIUM}
      LABELS browser)
    set_tests_properties(cli.suite_report.browser PROPERTIES TIMEOUT 240)
  else()
    message(STATUS "tierpool: chromium not found: the suite report's browser test (cli.suite_report.browser) is left out")
  endif()
endif()

# ---- what `tierpool suite run` writes --------------------------------------------------
# The producer's bundles read as the schema says (a quick run of two short workloads).
suite_report_check(from_suite_run roundtrip ARGS --html report.html --csv report.csv --quiet
  VARS "-DRUN_ARGS=--devices|sim:h200-sxm,sim:gh200|--preset|quick|--only|link,allocator|--budget|2m"
       -DEXPECT_DEVICE=sim:gh200)
set_tests_properties(cli.suite_report.from_suite_run PROPERTIES TIMEOUT 120)

# ---- errors: exit 2, a message, nothing written ------------------------------------------
# suite_report_error(NAME REGEX ARGS...)
function(suite_report_error name regex)
  suite_report_check(${name} run ARGS ${ARGN} --html report.html --csv report.csv VARS -DEXPECT_RC=2 "-DEXPECT_ERR=${regex}")
endfunction()
suite_report_error(missing_file "tierpool suite report: '[^']*/no-such-bundle\\.json': no such file"
  ${_tp_sr_data}/h200-sxm.json ${_tp_sr_data}/no-such-bundle.json)
suite_report_error(corrupt_json "tierpool suite report: [^\n]*/corrupt\\.json: not valid JSON: "
  ${_tp_sr_data}/h200-sxm.json ${_tp_sr_data}/corrupt.json)
suite_report_error(foreign_json "tierpool suite report: [^\n]*/foreign\\.json: not a tierpool suite bundle"
  ${_tp_sr_data}/foreign.json)
suite_report_error(missing_field
  "tierpool suite report: [^\n]*/missing-unit\\.json: field 'workloads\\[0\\]\\.figures\\[1\\]\\.unit' is missing"
  ${_tp_sr_data}/missing-unit.json)
suite_report_error(no_bundles "tierpool suite report: no bundles given")
suite_report_error(baseline_out_of_range "tierpool suite report: --baseline 2 is out of range: 2 bundles \\(0\\.\\.1\\)"
  ${_tp_sr_pair} --baseline 2)
suite_report_error(baseline_unknown_id
  "tierpool suite report: --baseline 'sim:b200' names no bundle's device \\(devices: sim:h200-sxm, sim:gh200\\)"
  ${_tp_sr_pair} --baseline sim:b200)

# ---- bench/gpu/copy_timing_report.py on the H200's recorded copy timing ---------------------
# The copies of the 4x demo through pageable memory (bench/results/gpu-2026-12-04): the
# report counts them, and the 1 MiB device <- pageable copies' median is 200.6 us.
if(Python3_Interpreter_FOUND)
  add_test(NAME bench.copy_timing_report
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/gpu/copy_timing_report.py
                   ${PROJECT_SOURCE_DIR}/bench/results/gpu-2026-12-04/copies_4x_pageable_spill.jsonl.gz)
  set_tests_properties(bench.copy_timing_report PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "5496 copies over 525.1 ms.*host +device +>=1MiB +1104 +200.6.*stream 2: 3656 copies, busy 418.2 ms")
  add_test(NAME bench.copy_timing_report_usage COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/gpu/copy_timing_report.py)
  set_tests_properties(bench.copy_timing_report_usage PROPERTIES LABELS cpu WILL_FAIL TRUE)
endif()

# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# cli_info_json_check.cmake — run with `cmake -DTIERPOOL_CLI=<exe> -DFIXTURE=<xml> -P`:
# runs `tierpool info --json --backend sim --topology FIXTURE`, parses the output as JSON
# and checks the key fields (the exit code too, which PASS_REGULAR_EXPRESSION cannot).
execute_process(
  COMMAND "${TIERPOOL_CLI}" info --json --backend sim --topology "${FIXTURE}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tierpool info --json exited with ${rc}: ${err}")
endif()

function(expect_json expected)
  string(JSON actual ERROR_VARIABLE jerr GET "${out}" ${ARGN})
  if(jerr)
    message(FATAL_ERROR "JSON path ${ARGN}: ${jerr}\n${out}")
  endif()
  if(NOT actual STREQUAL expected)
    message(FATAL_ERROR "JSON path ${ARGN}: expected '${expected}', got '${actual}'")
  endif()
endfunction()

string(JSON version GET "${out}" version)
if(NOT version MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
  message(FATAL_ERROR "bad version '${version}'")
endif()
expect_json(sim backend name)
expect_json(sim backend requested)
expect_json(OFF backend fell_back)
expect_json(xml:${FIXTURE} topology source)
string(JSON nodes LENGTH "${out}" topology numa_nodes)
if(NOT nodes EQUAL 3)
  message(FATAL_ERROR "expected 3 NUMA nodes, got ${nodes}")
endif()
expect_json(2 topology numa_nodes 2 os_index)
expect_json(16000000000 topology numa_nodes 2 bytes)
expect_json(OFF topology numa_nodes 2 has_cpus)
expect_json(ON topology numa_nodes 2 is_far)
expect_json(CXL-DRAM topology numa_nodes 2 subtype)
expect_json(24000 topology numa_nodes 2 bandwidth_mbps)
expect_json(350 topology numa_nodes 2 latency_ns)
expect_json(ON topology numa_nodes 0 has_cpus)
string(JSON ndev LENGTH "${out}" devices)
if(NOT ndev EQUAL 1)
  message(FATAL_ERROR "expected 1 device, got ${ndev}")
endif()
expect_json(device tiers 0 kind)
expect_json(pinned_host tiers 1 kind)
expect_json(0 tiers 1 numa_node)
# The last tier is the far host tier on the CXL node.
string(JSON ntiers LENGTH "${out}" tiers)
math(EXPR last "${ntiers} - 1")
expect_json(host tiers ${last} kind)
expect_json(ON tiers ${last} far)
expect_json(2 tiers ${last} numa_node)
expect_json(16000000000 tiers ${last} bytes)
message(STATUS "tierpool info --json: ok (${ntiers} tiers)")

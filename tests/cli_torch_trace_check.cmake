# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# cli_torch_trace_check.cmake — run with
#   cmake -DTIERPOOL_CLI=<exe> -DTRACE=<file> -DREQUESTS=<n> -DWORKDIR=<dir> -P
# Replays TRACE (tests/data/torch_mlp_offload.tpb: a PyTorch training run recorded through
# tierpool.torch's offload, scripts/make_torch_trace.py) with `tierpool replay --json` and
# checks that the figures are sane:
# - cache mode, every object of size 1 (--ignore-size), lru and belady at 10%, 25%, 50%:
#   every row served REQUESTS requests; belady misses no more than lru at each capacity
#   (Belady's optimality for unit sizes), and fewer at 10%; lru's misses do not grow with the
#   capacity (LRU is a stack algorithm); both have no miss beyond the compulsory ones at 50%;
# - pool mode (the real pool on the simulated device), lru, s3fifo and belady at 25% and
#   50%: nothing unserved, bytes copied in at 25%, makespan at least the ideal time, and no
#   more bytes copied in at 50% than at 25% for each policy.
# WORKDIR is the test's own folder: two of these checks run at once under ctest -j (the
# negative control replays another trace), and shared file names made them read each
# other's JSON.
file(MAKE_DIRECTORY "${WORKDIR}")

function(replay_json out_var tag)
  set(json "${WORKDIR}/torch_trace_check_${tag}.json")
  execute_process(COMMAND "${TIERPOOL_CLI}" replay "${TRACE}" ${ARGN} -q --json "${json}"
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tierpool replay ${ARGN} exited with ${rc}: ${err}")
  endif()
  file(READ "${json}" text)
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

function(row_field out_var json index key)
  string(JSON v ERROR_VARIABLE jerr GET "${json}" ${index} ${key})
  if(jerr)
    message(FATAL_ERROR "row ${index} ${key}: ${jerr}")
  endif()
  set(${out_var} "${v}" PARENT_SCOPE)
endfunction()

# ---- cache mode, unit sizes ----
replay_json(cache cache --mode cache --ignore-size --policy lru,belady --capacity 10%,25%,50%)
string(JSON rows LENGTH "${cache}")
if(NOT rows EQUAL 6)
  message(FATAL_ERROR "cache mode: expected 6 rows (2 policies x 3 capacities), got ${rows}")
endif()
set(prev_lru "")
foreach(i RANGE 0 2)
  math(EXPR j "${i} + 3")  # policy-major: lru rows 0..2, belady rows 3..5
  row_field(lru_policy "${cache}" ${i} policy)
  row_field(bel_policy "${cache}" ${j} policy)
  if(NOT lru_policy STREQUAL "lru" OR NOT bel_policy STREQUAL "belady")
    message(FATAL_ERROR "cache mode: rows out of order: ${lru_policy}, ${bel_policy}")
  endif()
  foreach(k ${i} ${j})
    row_field(req "${cache}" ${k} requests)
    row_field(unserved "${cache}" ${k} unserved)
    if(NOT req EQUAL REQUESTS OR NOT unserved EQUAL 0)
      message(FATAL_ERROR "cache mode row ${k}: ${req} requests (expected ${REQUESTS}), ${unserved} unserved")
    endif()
  endforeach()
  row_field(cap "${cache}" ${i} capacity)
  row_field(lru_miss "${cache}" ${i} misses)
  row_field(bel_miss "${cache}" ${j} misses)
  message(STATUS "cache ${cap}: lru ${lru_miss} misses, belady ${bel_miss}")
  if(bel_miss GREATER lru_miss)
    message(FATAL_ERROR "cache mode at ${cap}: belady misses ${bel_miss} > lru ${lru_miss}")
  endif()
  if(i EQUAL 0 AND NOT bel_miss LESS lru_miss)
    message(FATAL_ERROR "cache mode at ${cap}: belady (${bel_miss}) should miss less than lru (${lru_miss})")
  endif()
  if(NOT prev_lru STREQUAL "" AND lru_miss GREATER prev_lru)
    message(FATAL_ERROR "cache mode: lru misses grew with the capacity (${prev_lru} -> ${lru_miss} at ${cap})")
  endif()
  set(prev_lru ${lru_miss})
endforeach()
row_field(objects_miss "${cache}" 5 misses)
row_field(lru50 "${cache}" 2 misses)
if(NOT objects_miss EQUAL lru50)
  message(FATAL_ERROR "cache mode at 50%: lru ${lru50} misses, belady ${objects_miss}: both should be the compulsory ones")
endif()

# ---- pool mode ----
replay_json(pool pool --mode pool --policy lru,s3fifo,belady --capacity 25%,50%)
string(JSON rows LENGTH "${pool}")
if(NOT rows EQUAL 6)
  message(FATAL_ERROR "pool mode: expected 6 rows, got ${rows}")
endif()
foreach(p 0 1 2)
  math(EXPR a "${p} * 2")
  math(EXPR b "${a} + 1")
  row_field(name "${pool}" ${a} policy)
  foreach(k ${a} ${b})
    row_field(req "${pool}" ${k} requests)
    row_field(unserved "${pool}" ${k} unserved)
    row_field(make "${pool}" ${k} makespan_seconds)
    row_field(ideal "${pool}" ${k} ideal_seconds)
    if(NOT req EQUAL REQUESTS OR NOT unserved EQUAL 0)
      message(FATAL_ERROR "pool mode row ${k} (${name}): ${req} requests (expected ${REQUESTS}), ${unserved} unserved")
    endif()
    if(make LESS ideal)  # if(LESS) compares numbers as doubles
      message(FATAL_ERROR "pool mode row ${k} (${name}): makespan ${make} under the ideal ${ideal}")
    endif()
  endforeach()
  row_field(h2d25 "${pool}" ${a} bytes_h2d)
  row_field(h2d50 "${pool}" ${b} bytes_h2d)
  message(STATUS "pool ${name}: bytes_h2d ${h2d25} at 25%, ${h2d50} at 50%")
  if(NOT h2d25 GREATER 0)
    message(FATAL_ERROR "pool mode (${name}) at 25%: no bytes copied in: the trace should not fit")
  endif()
  if(h2d50 GREATER h2d25)
    message(FATAL_ERROR "pool mode (${name}): more bytes copied in at 50% (${h2d50}) than at 25% (${h2d25})")
  endif()
endforeach()
message(STATUS "torch trace replay: sane")

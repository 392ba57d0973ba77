# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# replay_check.cmake — a recorded run of the demo replays to the live run's figures.
# Run with `cmake -DDEMO=<oversubscribe> -DCLI=<tierpool> -DWORK=<scratch dir> -P`:
#   1. the demo on the sim's virtual clock (deterministic), prefetching, recording --trace;
#   2. `tierpool replay` of that trace with the demo's device capacity and tier layout;
#   3. evictions of the device tier, copies and bytes each way must be equal.
file(MAKE_DIRECTORY "${WORK}")
set(trace "${WORK}/demo.tpt")
set(live_json "${WORK}/demo.json")
set(replay_json "${WORK}/replay.json")
file(REMOVE "${trace}" "${live_json}" "${replay_json}")

execute_process(
  COMMAND "${DEMO}" --backend sim --virtual-clock --iterations 2 --layers 8 --width 256 --batch 32
          --trace "${trace}" --json "${live_json}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the demo exited with ${rc}:\n${out}\n${err}")
endif()
file(READ "${live_json}" live)
string(JSON device_bytes GET "${live}" device_bytes)
string(JSON tiers GET "${live}" run_totals replay_tiers)

set(args replay "${trace}" --policy lru --capacity ${device_bytes} --threads 1 --quiet --json "${replay_json}")
if(NOT tiers STREQUAL "")
  list(APPEND args --tiers "${tiers}")
endif()
execute_process(COMMAND "${CLI}" ${args} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tierpool ${args} exited with ${rc}:\n${out}\n${err}")
endif()
file(READ "${replay_json}" replayed)

set(failed "")
foreach(pair bytes_h2d:bytes_h2d bytes_d2h:bytes_d2h copies_h2d:copies_h2d copies_d2h:copies_d2h
             device_evictions:evictions)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 live_key)
  list(GET pair 1 replay_key)
  string(JSON a GET "${live}" run_totals ${live_key})
  string(JSON b GET "${replayed}" 0 ${replay_key})
  message(STATUS "${live_key}: live ${a}, replay ${b}")
  if(NOT a EQUAL b)
    string(APPEND failed "  ${live_key}: live ${a}, replay ${b}\n")
  endif()
endforeach()
string(JSON evictions GET "${live}" run_totals device_evictions)
if(evictions EQUAL 0)
  string(APPEND failed "  the live run evicted nothing: the check would prove nothing\n")
endif()
if(NOT failed STREQUAL "")
  message(FATAL_ERROR "the replay of the recorded demo differs from the live run "
                      "(tierpool ${args}):\n${failed}")
endif()

# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# replay_check.cmake — a recorded run of the demo replays to the live run's figures.
# Run with `cmake -DDEMO=<oversubscribe> -DCLI=<tierpool> -DWORK=<scratch dir> -P`:
#   1. the demo on the sim's virtual clock (deterministic), prefetching, recording --trace;
#   2. `tierpool replay` of that trace with the demo's device capacity and tier layout;
#   3. evictions of the device tier, copies and bytes each way must be equal;
#   4. with -DPYTHON=<python3> (to do the arithmetic): the kernels the demo gave the pool
#      (--kernel-time routes them through pool::note_compute, so the trace has them) sum to
#      its roofline time within 1 %, and the replay's makespan is within 3 % of the live
#      run's virtual time (the replay also covers the parameter check after training);
#   5. the recording has the demo's phases (init, then per step iter N, forward, backward,
#      optimizer).
file(MAKE_DIRECTORY "${WORK}")
set(trace "${WORK}/demo.tpt")
set(live_json "${WORK}/demo.json")
set(replay_json "${WORK}/replay.json")
file(REMOVE "${trace}" "${live_json}" "${replay_json}")

execute_process(
  COMMAND "${DEMO}" --backend sim --virtual-clock --kernel-time --iterations 2 --layers 8 --width 256 --batch 32
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
# The demo marks its phases in the recording (pool::note_phase): each of the 2 steps has
# "iter N", forward, backward and optimizer.
file(STRINGS "${trace}" phases REGEX "phase ")
list(JOIN phases "|" phases)
string(REGEX REPLACE "@[0-9]+ " "" phases "${phases}")
message(STATUS "phases: ${phases}")
if(NOT phases STREQUAL "phase init|phase \"iter 0\"|phase forward|phase backward|phase optimizer|phase \"iter 1\"|phase forward|phase backward|phase optimizer")
  string(APPEND failed "  the recording's phases are not the demo's two steps: ${phases}\n")
endif()
string(JSON evictions GET "${live}" run_totals device_evictions)
if(evictions EQUAL 0)
  string(APPEND failed "  the live run evicted nothing: the check would prove nothing\n")
endif()
if(PYTHON)
  string(JSON live_s GET "${live}" virtual_seconds)
  string(JSON roofline_s GET "${live}" roofline_seconds_per_iteration)
  string(JSON replay_s GET "${replayed}" 0 makespan_seconds)
  string(JSON compute_s GET "${replayed}" 0 compute_seconds)
  message(STATUS "device time: live ${live_s} s, replay ${replay_s} s; kernels: roofline 2 x ${roofline_s} s, "
                 "trace ${compute_s} s")
  execute_process(
    COMMAND "${PYTHON}" -c "import sys; l, r, k, c = map(float, sys.argv[1:]); print(('' if abs(r / l - 1) <= 0.03 else f'  the replay makespan {r} s is not within 3 % of the live virtual time {l} s\\n') + ('' if abs(c / (2 * k) - 1) <= 0.01 else f'  the trace has {c} s of compute, the demo 2 x {k} s\\n'), end='')"
            ${live_s} ${replay_s} ${roofline_s} ${compute_s}
    OUTPUT_VARIABLE timing RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(APPEND failed "  the timing check did not run (${PYTHON} exited with ${rc})\n")
  endif()
  string(APPEND failed "${timing}")
endif()
if(NOT failed STREQUAL "")
  message(FATAL_ERROR "the replay of the recorded demo differs from the live run "
                      "(tierpool ${args}):\n${failed}")
endif()

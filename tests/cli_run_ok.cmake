# run_ok(COMMAND...): run a command in a CMake -P check script; fail the test with its
# output when it exits non-zero. Leaves its output in `out`, `err` (and `rc`).
macro(run_ok)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN} failed (${rc}):\n${out}\n${err}")
  endif()
endmacro()

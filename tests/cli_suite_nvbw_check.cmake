# cli.suite_run.nvbandwidth (see cli_suite_run_tests.cmake).
file(REMOVE_RECURSE ${OUT})
foreach(run ok:${FAKE} bad:/bin/false)
  string(REPLACE ":" ";" parts "${run}")
  list(GET parts 0 name)
  list(GET parts 1 exe)
  execute_process(COMMAND ${TIERPOOL} suite run --devices sim:h100-pcie --only link --preset quick -q
                          --nvbandwidth ${exe} --out ${OUT}/${name} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "suite run (${name}) failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()
set(py [=[
import json, sys
out = sys.argv[1]
b = json.load(open(f"{out}/ok/sim-h100-pcie.json"))
nv = {(f["params"]["direction"], f["params"]["mode"]): f["value"] for f in b["workloads"][0]["figures"]
      if f["params"].get("path") == "nvbandwidth"}
assert nv == {("h2d", "uni"): 55.1, ("d2h", "uni"): 53.2, ("h2d", "bidi"): 41.7}, nv
assert all(f["params"]["bytes"] == 256 << 20 for f in b["workloads"][0]["figures"] if f["params"].get("path") == "nvbandwidth")
assert b["skipped"] == [], b["skipped"]
bad = json.load(open(f"{out}/bad/sim-h100-pcie.json"))
assert bad["skipped"] == [{"workload": "link", "reason": "nvbandwidth: /bin/false exited with status 256"}], bad["skipped"]
print("nvbandwidth figures ok")
]=])
file(WRITE ${OUT}/check.py "${py}")
execute_process(COMMAND python3 ${OUT}/check.py ${OUT} RESULT_VARIABLE prc OUTPUT_VARIABLE pout ERROR_VARIABLE perr)
if(NOT prc EQUAL 0)
  message(FATAL_ERROR "check failed:\n${pout}\n${perr}")
endif()

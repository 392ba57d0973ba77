# cli.suite_run.budget_skips (see cli_suite_run_tests.cmake).
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${TIERPOOL} suite run --devices sim:gh200 --preset quick --budget 8s
                        --only link,oversub-train,replay-train --out ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "suite run failed (${rc}):\n${out}\n${err}")
endif()
if(NOT err MATCHES "oversub-train +skipped: budget: [0-9.]+ s left for this device, it needs about 40 s")
  message(FATAL_ERROR "no budget skip on stderr:\n${err}")
endif()
set(py [=[
import json, sys
b = json.load(open(sys.argv[1]))
assert [w["name"] for w in b["workloads"]] == ["link", "replay-train"], [w["name"] for w in b["workloads"]]
assert len(b["skipped"]) == 1 and b["skipped"][0]["workload"] == "oversub-train", b["skipped"]
assert b["skipped"][0]["reason"].startswith("budget: "), b["skipped"]
assert 7.5 < b["budget_seconds"] <= 8, b["budget_seconds"]
print("budget skip ok")
]=])
file(WRITE ${OUT}/check.py "${py}")
execute_process(COMMAND python3 ${OUT}/check.py ${OUT}/sim-gh200.json RESULT_VARIABLE prc OUTPUT_VARIABLE pout ERROR_VARIABLE perr)
if(NOT prc EQUAL 0)
  message(FATAL_ERROR "check failed:\n${pout}\n${perr}")
endif()

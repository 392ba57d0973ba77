# cli.suite_run.demo_row_fails: a configuration the demo cannot run (a stand-in failing at
# 4x with an out-of-memory error) is named in `skipped` with the demo's own error, and the
# other rows of oversub-train are still there; the run succeeds.
file(REMOVE_RECURSE ${OUT})
include(${CMAKE_CURRENT_LIST_DIR}/cli_run_ok.cmake)
run_ok(${TIERPOOL} suite run --devices sim:gh200 --preset quick --only oversub-train --demo ${FAKE} --out ${OUT})
if(NOT err MATCHES "demo-mlp lru next-op 4x failed: oversubscribe: out of memory: [^\n]*cause: fragmentation")
  message(FATAL_ERROR "the failed row is not named on stderr:\n${err}")
endif()
set(py [=[
import json, sys
b = json.load(open(sys.argv[1]))
w = b["workloads"][0]
assert w["name"] == "oversub-train", w["name"]
rows = {(f["params"]["model"], f["params"]["policy"], f["params"]["prefetch"], f["params"]["oversubscription"])
        for f in w["figures"] if f["name"] == "iteration_time"}
assert len(rows) == 10 and all(r[3] in (1, 2) for r in rows), sorted(rows)    # 5 configurations x (1x, 2x)
assert all(f["value"] == 0.002 for f in w["figures"] if f["name"] == "iteration_time")  # the steady state
(s,) = b["skipped"]
assert s["workload"] == "oversub-train" and s["reason"].count("4x failed: oversubscribe: out of memory") == 5, s
print("a failed row is skipped with its error; the others ran")
]=])
file(WRITE ${OUT}/check.py "${py}")
run_ok(python3 ${OUT}/check.py ${OUT}/sim-gh200.json)
message(STATUS "${out}")

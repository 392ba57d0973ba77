# cli.suite_run.mpi_two_ranks: `mpirun -n 2 tierpool suite run --mpi` on two presets (one
# machine, as CI runs it): rank 0 writes both ranks' bundles, each naming its rank, and the
# merged report (report.html, report.csv).
file(REMOVE_RECURSE ${OUT})
set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
execute_process(COMMAND ${MPIEXEC} --oversubscribe -n 2 ${TIERPOOL} suite run --mpi --devices sim:h200-sxm,sim:gh200
                        --preset quick --budget 1m --only link,replay-train --out ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun failed (${rc}):\n${out}\n${err}")
endif()
set(py [=[
import json, sys
out = sys.argv[1]
for rank, dev in ((0, "h200-sxm"), (1, "gh200")):
    b = json.load(open(f"{out}/rank{rank}-sim-{dev}.json"))
    assert b["format"] == "tierpool-suite-bundle", b.get("format")
    assert b["device"]["id"] == "sim:" + dev, b["device"]
    assert b["mpi"]["rank"] == rank and b["mpi"]["size"] == 2 and b["mpi"]["host"], b["mpi"]
    assert [w["name"] for w in b["workloads"]] == ["link", "replay-train"]
html = open(f"{out}/report.html").read()
assert "sim:h200-sxm" in html and "sim:gh200" in html and "<svg" in html, "the merged report"
assert open(f"{out}/report.csv").read().count("sim:gh200") > 10
print("mpi bundles and merged report ok")
]=])
file(WRITE ${OUT}/check.py "${py}")
execute_process(COMMAND python3 ${OUT}/check.py ${OUT} RESULT_VARIABLE prc OUTPUT_VARIABLE pout ERROR_VARIABLE perr)
if(NOT prc EQUAL 0)
  message(FATAL_ERROR "bundle check failed:\n${pout}\n${perr}\nmpirun said:\n${out}\n${err}")
endif()
message(STATUS "${pout}")

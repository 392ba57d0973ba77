# cli.suite_calibrate.round_trip: the link workload on sim:a100-pcie4, calibrated into a
# preset file (25 GB/s and 2 us expected back), then the suite on that preset and the
# report of both: every shared figure within 0.5 % of the original (the fit rounds the
# latency to whole nanoseconds).
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
include(${CMAKE_CURRENT_LIST_DIR}/cli_run_ok.cmake)
run_ok(${TIERPOOL} suite run --devices sim:a100-pcie4 --only link,replay-train --preset quick -q --out ${OUT}/measured)
run_ok(${TIERPOOL} suite calibrate ${OUT}/measured/sim-a100-pcie4.json -o ${OUT}/preset.json --name cal-a100)
if(NOT out MATCHES "h2d 25 GB/s \\+ 2 us, d2h 25 GB/s \\+ 2 us")
  message(FATAL_ERROR "calibration did not recover the preset's link:\n${out}")
endif()
run_ok(${TIERPOOL} suite run --devices sim:${OUT}/preset.json --only link,replay-train --preset quick -q --out ${OUT}/sim)
if(NOT EXISTS ${OUT}/sim/sim-cal-a100.json)
  message(FATAL_ERROR "no bundle of the calibrated preset")
endif()
run_ok(${TIERPOOL} suite report ${OUT}/measured/sim-a100-pcie4.json ${OUT}/sim/sim-cal-a100.json --csv ${OUT}/r.csv --quiet)
set(py [=[
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["device"] == "sim:cal-a100"]
assert len(rows) >= 100, len(rows)
worst = max(abs(float(r["ratio_to_baseline"]) - 1) for r in rows if r["ratio_to_baseline"])
assert worst < 0.005, f"a calibrated figure is {worst:.2%} off the measured one"
print(f"calibration round trip: {len(rows)} figures, worst error {worst:.3%}")
]=])
file(WRITE ${OUT}/check.py "${py}")
run_ok(python3 ${OUT}/check.py ${OUT}/r.csv)
message(STATUS "${out}")

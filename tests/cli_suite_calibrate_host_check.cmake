# cli.suite_calibrate.host_costs: a simulated GPU whose host costs are known (kernel 10 us,
# copy 6 us, event 1.6 us; tests/data/suite/truth-host-costs.json) runs the link and the
# demo's workloads; `suite calibrate` must fit host costs that predict every steady
# iteration time within 15 % (Note [Fitting the host's costs]), near the truth: the MLP's
# and the transformer-shaped model's rows. The fit
# cannot tell a copy's host cost from the link's latency, so their sum is what is checked.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
include(${CMAKE_CURRENT_LIST_DIR}/cli_run_ok.cmake)
run_ok(${TIERPOOL} suite run --devices sim:${TRUTH} --only link,oversub-train --preset quick -q --out ${OUT}/measured
       --demo ${DEMO})
run_ok(${TIERPOOL} suite calibrate ${OUT}/measured/sim-truth.json -o ${OUT}/fit.json --demo ${DEMO})
if(NOT out MATCHES "host costs: kernel [0-9.]+ us, copy [0-9.]+ us, event [0-9.]+ us .*  mlp reference +measured .*worst error")
  message(FATAL_ERROR "no host-cost fit in calibrate's output:\n${out}")
endif()
set(py [=[
import json, sys
p = json.load(open(sys.argv[1]))
h = p["host_costs"]
assert h["fit_max_error"] < 0.15, h
rows = h["rows"]
names = [r["row"] for r in rows]
# quick: each model's reference, the MLP's 3 configurations and the transformer's 2 at 1x, 2x, 4x
assert len(rows) == 17 and names[0] == "mlp reference" and "transformer reference" in names, names
assert sum(n.startswith("transformer ") for n in names) == 7, names
for r in rows:
    err = abs(r["simulated_seconds"] / r["measured_seconds"] - 1)
    assert err <= h["fit_max_error"] + 1e-12, (r, h["fit_max_error"])
assert 5e-6 <= h["kernel_seconds"] <= 15e-6, h
assert 0.5e-6 <= h["event_seconds"] <= 4e-6, h
per_copy = h["copy_seconds"] + p["h2d"]["latency_seconds"]
assert abs(per_copy - 16.68e-6) < 0.2 * 16.68e-6, (per_copy, h, p["h2d"])
assert p["h2d"]["measured_latency_seconds"] >= p["h2d"]["latency_seconds"], p["h2d"]
# The bundle's kernel roofline (the truth preset names none: the demo's default) is kept.
assert p["kernels"] == {"flops_per_second": 5e13, "bytes_per_second": 3e12}, p.get("kernels")
print(f"host costs fitted: kernel {h['kernel_seconds']*1e6:.2f} us, copy {h['copy_seconds']*1e6:.2f} us, "
      f"event {h['event_seconds']*1e6:.2f} us; worst error {h['fit_max_error']:.1%}")
]=])
file(WRITE ${OUT}/check.py "${py}")
run_ok(python3 ${OUT}/check.py ${OUT}/fit.json)
message(STATUS "${out}")
# The fitted preset loads and runs (the demo's workload on it).
run_ok(${TIERPOOL} suite run --devices sim:${OUT}/fit.json --only link -q --out ${OUT}/sim)

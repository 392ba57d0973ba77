# cli.suite_run.two_presets: `tierpool suite run` on sim:h200-sxm and sim:gh200 (quick, a
# few workloads), then python3 checks each bundle against docs/chapters/suite.md's schema.
# The budget is generous: the check wants every workload run (skips are
# cli.suite_run.budget_skips' subject), and the ASan+UBSan Debug build under ctest -j2 needs
# 40-60 s where a release build needs 2.
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${TIERPOOL} suite run --devices sim:h200-sxm,sim:gh200 --preset quick --budget 4m
                        --only link,replay-train,infer-stream,allocator --out ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "suite run failed (${rc}):\n${out}\n${err}")
endif()
foreach(dev h200-sxm gh200)
  if(NOT EXISTS ${OUT}/sim-${dev}.json)
    message(FATAL_ERROR "no bundle ${OUT}/sim-${dev}.json:\n${out}\n${err}")
  endif()
endforeach()
set(py [=[
import json, sys
out = sys.argv[1]
want = {"h200-sxm": 50e9, "gh200": 450e9}
for dev, bw in want.items():
    b = json.load(open(f"{out}/sim-{dev}.json"))
    assert b["format"] == "tierpool-suite-bundle" and b["suite_version"] == 2, b.get("format")
    assert b["suite_preset"] == "quick"
    d = b["device"]
    assert d["id"] == "sim:" + dev and d["simulated"] is True and d["link"]["h2d_bytes_per_second"] == bw, d
    for k in ("hostname", "cpu", "cores", "host_memory_bytes", "numa_nodes"):
        assert k in b["machine"], k
    names = [w["name"] for w in b["workloads"]]
    assert names == ["link", "replay-train", "infer-stream", "allocator"], names
    for w in b["workloads"]:
        assert w["figures"], w["name"]
        for f in w["figures"]:
            assert f["unit"] and f["reps"] >= 1 and f["min"] <= f["value"] <= f["max"], f
    link = {(f["params"]["pair"], f["params"]["direction"], f["params"]["mode"], f["params"]["path"], f["params"]["bytes"]): f["value"]
            for f in b["workloads"][0]["figures"] if f["name"] == "bandwidth"}
    ratios = [f["value"] for f in b["workloads"][0]["figures"] if f["name"] == "tierpool_vs_baseline"]
    assert len(ratios) == len(link) // 2 and min(ratios) >= 0.95, ratios
    big = link[("device-pinned_host", "h2d", "uni", "baseline", 256 << 20)]
    assert abs(big - bw * 1e-9) / (bw * 1e-9) < 0.02, (dev, big)                  # the preset's link, on the virtual clock
    small = link[("device-pinned_host", "h2d", "uni", "baseline", 4096)]
    assert small < big / 5, (small, big)                                         # latency-bound at 4 KiB
    for key, v in link.items():
        base = link[key[:3] + ("baseline", key[4])]
        assert v >= 0.95 * base, (key, v, base)                                  # the pool's copies run at the link's speed
    rt = [f for f in b["workloads"][1]["figures"] if f["name"] == "vs_unlimited"]
    assert all(f["value"] >= 0.999 for f in rt), "no run beats unlimited memory"
    assert b["skipped"] == [], b["skipped"]
print("bundles ok")
]=])
file(WRITE ${OUT}/check.py "${py}")
execute_process(COMMAND python3 ${OUT}/check.py ${OUT} RESULT_VARIABLE prc OUTPUT_VARIABLE pout ERROR_VARIABLE perr)
if(NOT prc EQUAL 0)
  message(FATAL_ERROR "bundle check failed:\n${pout}\n${perr}")
endif()
message(STATUS "${pout}")

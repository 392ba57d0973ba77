#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""example.oversubscribe.timing: the demo's per-iteration times, steady state, calls per
iteration, --host-costs and --skip-math, on the simulator's virtual clock.

usage: timing_check.py DEMO WORKDIR
"""
import json
import os
import subprocess
import sys

demo, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
base = ["--backend", "sim", "--virtual-clock", "--kernel-time", "--link", "25e9,2000", "--iterations", "3",
        "--layers", "8", "--width", "64", "--batch", "8", "--oversubscription", "2"]


def run(name, *extra):
    path = os.path.join(work, name + ".json")
    r = subprocess.run([demo, *base, *extra, "--json", path], capture_output=True, text=True)
    assert r.returncode == 0, (name, r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return json.load(open(path)), r.stdout


plain, out = run("plain")
assert plain["math"] is True and plain["verified"] is True, plain["verified"]
it = plain["virtual_iteration_seconds"]
ref = plain["reference_virtual_iteration_seconds"]
assert len(it) == 3 and len(ref) == 3 and all(t > 0 for t in it + ref), (it, ref)
# The iterations, and before them the trainer's setup: the whole virtual run.
assert sum(it) <= plain["virtual_seconds"] * (1 + 1e-9) and sum(it) > 0.5 * plain["virtual_seconds"], (it, plain["virtual_seconds"])
steady = (it[1] + it[2]) / 2
assert abs(plain["virtual_steady_seconds_per_iteration"] - steady) <= 1e-12 + 1e-9 * steady, plain
assert abs(plain["reference_virtual_steady_seconds_per_iteration"] - (ref[1] + ref[2]) / 2) <= 1e-9 * ref[1] + 1e-12
assert len(plain["iteration_seconds"]) == 3 and plain["steady_seconds_per_iteration"] > 0  # the wall clock's too
calls = plain["calls_per_iteration"]
assert calls["kernel"] == plain["kernels_per_iteration"] > 0 and calls["copy"] > 0 and calls["event"] > 0, calls
assert plain["reference_calls_per_iteration"]["kernel"] == calls["kernel"]
assert plain["roofline_seconds_per_iteration"] > 0 and plain["kernel_roofline"]["flops_per_second"] == 50e12
assert "steady state (iterations 2-3, virtual clock)" in out, out

# --skip-math: the same calls, bytes and times, no numbers, not verified.
skip, out = run("skip", "--skip-math")
assert skip["math"] is False and skip["verified"] is False
for key in ("virtual_iteration_seconds", "reference_virtual_iteration_seconds", "calls_per_iteration",
            "bytes_h2d", "bytes_d2h", "copies_h2d", "copies_d2h", "evictions"):
    assert skip[key] == plain[key], (key, skip[key], plain[key])
assert "not verified: --skip-math" in out, out

# --host-costs: the reference is bound by its kernels' launches (each costs the host 50 us,
# far above their roofline time), and the oversubscribed run pays for its copies' calls too.
costly, out = run("costly", "--host-costs", "kernel=50us,copy=20us,event=2us")
assert costly["verified"] is True
k = costly["reference_calls_per_iteration"]["kernel"]
r_steady = costly["reference_virtual_steady_seconds_per_iteration"]
assert r_steady >= k * 50e-6, (r_steady, k)
assert r_steady > 5 * plain["reference_virtual_steady_seconds_per_iteration"], (r_steady, plain)
c = costly["calls_per_iteration"]
floor = c["kernel"] * 50e-6 + c["copy"] * 20e-6 + c["event"] * 2e-6
assert costly["virtual_steady_seconds_per_iteration"] >= 0.99 * floor, (costly["virtual_steady_seconds_per_iteration"], floor)
# Bigger roofline, slower kernels: the reference takes longer on the virtual clock.
slow, _ = run("slow", "--kernel-roofline", "1e9,1e9")
assert slow["kernel_roofline"] == {"flops_per_second": 1e9, "bytes_per_second": 1e9}
assert slow["reference_virtual_steady_seconds_per_iteration"] > 10 * plain["reference_virtual_steady_seconds_per_iteration"]
print("timing ok: steady %.3f ms (plain), %.3f ms (host costs, floor %.3f ms), reference %.3f / %.3f ms" % (
    plain["virtual_steady_seconds_per_iteration"] * 1e3, costly["virtual_steady_seconds_per_iteration"] * 1e3,
    floor * 1e3, plain["reference_virtual_steady_seconds_per_iteration"] * 1e3, r_steady * 1e3))

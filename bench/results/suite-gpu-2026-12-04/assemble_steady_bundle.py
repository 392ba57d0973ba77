#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Assemble a suite-version-2 bundle of the H200's steady-state demo times, by hand.

The H200 bundle of 2026-12-04 (cuda-0.json, suite version 1) timed the demo over 3
iterations, the first included; `suite calibrate` fits the host's costs to steady-state
times only (version 2). The GPU's demo profile (../gpu-2026-12-04/demo_profile_events.txt)
ran the same demo (lru, next-operation prefetch) for 5 and for 20 iterations at 1x and 2x:
the difference of the two runs over 15 iterations is the steady state (iterations 6..20).
This script writes those rows, with cuda-0.json's fingerprint and link figures, as
h200-steady-demo-profile.json, marked "assembled" so that nobody takes it for a suite run.

usage: python3 assemble_steady_bundle.py   (in this folder)
"""
import json
import re

profile = open("../gpu-2026-12-04/demo_profile_events.txt").read()
runs = {}
for m in re.finditer(r"^(x\d+_it\d+): iterations (\d+) seconds ([0-9.]+) \([0-9.]+ ms/it\) reference ([0-9.]+)",
                     profile, re.M):
    runs[m.group(1)] = (int(m.group(2)), float(m.group(3)), float(m.group(4)))

b = json.load(open("cuda-0.json"))
b["suite_version"] = 2
b["assembled"] = ("by hand from ../gpu-2026-12-04/demo_profile_events.txt (steady state = (20-iteration run - "
                  "5-iteration run) / 15) and cuda-0.json's link; assemble_steady_bundle.py")
figs = []
refs = []
for x in (1, 2):
    n5, t5, r5 = runs[f"x{x}_it5"]
    n20, t20, r20 = runs[f"x{x}_it20"]
    steady = (t20 - t5) / (n20 - n5)
    ref = (r20 - r5) / (n20 - n5)
    refs.append(ref)
    p = {"model": "demo-mlp", "policy": "lru", "prefetch": "next-op", "oversubscription": float(x)}
    for name, v in (("iteration_time", steady), ("reference_iteration_time", ref), ("vs_unlimited", steady / ref)):
        figs.append({"name": name, "unit": "x" if name == "vs_unlimited" else "s", "value": v, "min": v, "max": v,
                     "reps": 1, "params": p})
b["workloads"] = [w for w in b["workloads"] if w["name"] == "link"] + [
    {"name": "oversub-train", "title": "Oversubscribed training: steady state from the demo profile (assembled)",
     "figures": figs}]
json.dump(b, open("h200-steady-demo-profile.json", "w"), separators=(",", ":"))
for f in figs:
    print(f["name"], f["params"]["oversubscription"], "%.4g" % f["value"])

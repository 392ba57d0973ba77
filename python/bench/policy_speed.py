#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""How much slower is an eviction policy written in Python? Replays the same traces with
tierpool.example_policies.LruPolicy (Python) and the built-in C++ ``lru``, one run at a
time on one thread, and prints the median and spread of each run's host time
(replay_result.wall_seconds: the replay loop, not the trace's compilation) over --runs
runs, side by side with their ratio. The two must give the same figures (checked).

    build/pyenv/bin/python python/bench/policy_speed.py [--runs 7] [--markdown]

Traces: a generated random-reuse trace (tierpool.trace_gen), the committed model trace
tests/data/gpt2_small_train.tpt, and the CloudPhysics trace in ../shared/traces when it
is there (cache mode only: a block trace has no pool-mode compute). Not a test: figures
depend on the machine; bench/results/python-policy-speed-*.md records some.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import tierpool
from tierpool.example_policies import LruPolicy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIGURES = ("hits", "misses", "bytes_h2d", "bytes_d2h", "evictions")


def traces(tmp):
    gen = os.path.join(tmp, "random_reuse_200k.tpb")
    tierpool.trace_gen("random-reuse", gen, {"tensors": "512", "accesses": "200000", "skew": "0.8"}, 11)
    out = [("random-reuse 200k (generated)", gen, ("cache", "pool"))]
    gpt2 = os.path.join(ROOT, "tests", "data", "gpt2_small_train.tpt")
    out.append(("gpt2_small_train.tpt (x20)", gpt2, ("cache", "pool")))
    cp = os.path.join(ROOT, "..", "shared", "traces", "cloudphysics.oracleGeneral.bin")
    if os.path.exists(cp):
        out.append(("cloudphysics.oracleGeneral.bin", cp, ("cache",)))
    return out


def one(path, policy, mode, capacity, loop):
    r = tierpool.replay(path, policies=[policy], capacities=capacity, mode=mode, loop=loop, threads=1)[0]
    return r["wall_seconds"], r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs per (trace, mode, policy); at least 5")
    ap.add_argument("--capacity", default="20%", help="device capacity (default 20%%)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args()
    runs = max(5, args.runs)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, path, modes in traces(tmp):
            loop = 20 if "gpt2" in label else 1
            for mode in modes:
                times = {}
                figures = {}
                for policy in (LruPolicy, "lru"):
                    name = policy if isinstance(policy, str) else "Python LruPolicy"
                    ts = []
                    for i in range(runs + 1):
                        t, r = one(path, policy, mode, args.capacity, loop)
                        if i > 0:  # the first run warms caches and imports
                            ts.append(t)
                    times[name] = ts
                    figures[name] = {k: r[k] for k in FIGURES}
                    requests = r["requests"]
                if figures["Python LruPolicy"] != figures["lru"]:
                    print(f"MISMATCH on {label} {mode}: {figures}", file=sys.stderr)
                    return 1
                py, cpp = times["Python LruPolicy"], times["lru"]
                rows.append((label, mode, requests, py, cpp))
    fmt = lambda ts: f"{statistics.median(ts) * 1e3:8.2f} ms [{min(ts) * 1e3:.2f}, {max(ts) * 1e3:.2f}]"
    per = lambda ts, n: f"{statistics.median(ts) / n * 1e9:7.0f} ns"
    if args.markdown:
        print(f"| trace | mode | requests | C++ lru: median [min, max] | per request | Python LruPolicy: median [min, max] | per request | ratio |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for label, mode, n, py, cpp in rows:
            ratio = statistics.median(py) / statistics.median(cpp)
            print(f"| {label} | {mode} | {n:,} | {fmt(cpp).strip()} | {per(cpp, n).strip()} | {fmt(py).strip()} | "
                  f"{per(py, n).strip()} | {ratio:.1f}x |")
    else:
        print(f"{'trace':34} {'mode':5} {'requests':>9}  {'C++ lru (median [min, max])':>34} {'/req':>10}  "
              f"{'Python LruPolicy':>34} {'/req':>10}  ratio")
        for label, mode, n, py, cpp in rows:
            ratio = statistics.median(py) / statistics.median(cpp)
            print(f"{label:34} {mode:5} {n:9,}  {fmt(cpp):>34} {per(cpp, n)}  {fmt(py):>34} {per(py, n)}  {ratio:5.1f}x")
    print(f"\n{runs} runs each after one warm-up, threads=1, capacity {args.capacity}; same figures "
          f"({', '.join(FIGURES)}) for both policies.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

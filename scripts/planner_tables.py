#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""The prefetch x policy x UVM tables of docs/chapters/replay.md ("Prefetch and the planner").

Runs `tierpool replay` on the three generated training and inference traces, the two
real-model fixtures written by hand and the two recorded from PyTorch (--only picks some), with every policy, prefetcher and UVM mode at 25 % and 50 %, and
prints one markdown table per trace: the makespan and, in brackets, makespan / ideal.
Then one table of the iterations from the second on (the planner issue's "within 1.10x of
the oracle from the second iteration on"): per trace and capacity, the best online row's
time against the best `oracle` row's, and each policy's `plan` against its `oracle`.
With --svg-dir, also writes each trace's makespan / ideal plot (--plot-ideal).
With --every-policy, instead: only the iterations from the second on, in pool mode, with
every built-in policy (`tierpool policies`), best online, best `plan` and best `oracle` row.

    python3 scripts/planner_tables.py [--tierpool build/bin/tierpool] [--svg-dir DIR] [--date D]
    python3 scripts/planner_tables.py --every-policy [--tierpool build/bin/tierpool] [--only gpt2-torch,resnet-torch]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

TRACES = [
    ("tt", "transformer-train iterations=4 --seed 1", ["transformer-train", "iterations=4", "--seed", "1"]),
    ("mlp", "mlp-train (defaults)", ["mlp-train"]),
    ("llm", "llm-infer-stream (defaults)", ["llm-infer-stream"]),
    ("gpt2", "tests/data/gpt2_small_train.tpt (GPT-2 small, by hand from its layer shapes)", None),
    ("resnet", "tests/data/resnet18_train.tpt (ResNet-18, by hand from its layer shapes)", None),
    ("gpt2-torch", "tests/data/gpt2_torch.tpb (GPT-2 small, recorded from PyTorch)", None),
    ("resnet-torch", "tests/data/resnet18_torch.tpb (ResNet-18, recorded from PyTorch)", None),
]
POLICIES = "lru,belady,repeat"
EVERY_POLICY = "lru,belady,repeat,cflru,arc,lirs,s3fifo,two_q,gdsf,sieve,clock,lfu,fifo,random"
EVERY_PREFETCH = "none,plan,plan:timing=off,plan:conservative=on,oracle,oracle:timing=off"
PREFETCH = "none,sequence,plan,plan:conservative=on,oracle,oracle:timing=off"
MODES = "pool,uvm,uvm-hints"
CAPACITIES = ["25%", "50%"]


def ms(seconds):
    return f"{seconds * 1e3:.1f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tierpool", default="build/bin/tierpool")
    ap.add_argument("--svg-dir", default=None)
    ap.add_argument("--date", default=None, help="in the SVG names (planner-ideal-KEY-DATE.svg)")
    ap.add_argument("--every-policy", action="store_true",
                    help="only the table from the second iteration on, over every built-in policy")
    ap.add_argument("--only", default=None, help="these trace keys only (comma-separated: "
                    + ", ".join(k for k, _, _ in TRACES) + ")")
    a = ap.parse_args()
    keys = [k for k, _, _ in TRACES]
    only = keys if a.only is None else a.only.split(",")
    for k in only:
        if k not in keys:
            ap.error(f"unknown trace key {k!r} (valid: {', '.join(keys)})")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    later = []  # (trace, capacity, {(policy, prefetch): seconds from the second iteration on})
    with tempfile.TemporaryDirectory() as tmp:
        for key, title, gen in TRACES:
            if key not in only:
                continue
            if gen is None:
                trace = os.path.join(root, "tests", "data", title.split(" ")[0].split("/")[-1])
            else:
                trace = os.path.join(tmp, key + ".tpb")
                subprocess.run([a.tierpool, "trace", "gen", *gen, "-o", trace], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out = os.path.join(tmp, key + ".json")
            if a.every_policy:
                subprocess.run([a.tierpool, "replay", trace, "-p", EVERY_POLICY, "-c", ",".join(CAPACITIES),
                                "--prefetch", EVERY_PREFETCH, "--no-recompute", "-q", "--activity", "--json", out],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                per = {}
                for r in json.load(open(out)):
                    its = r.get("iteration_seconds") or []
                    if r["mode"] == "pool" and len(its) >= 2:
                        per.setdefault(r["capacity"], {})[(r["policy"], r["prefetch"])] = sum(its[1:])
                later += [(key, c, per[c]) for c in CAPACITIES if c in per]
                continue
            cmd = [a.tierpool, "replay", trace, "-p", POLICIES, "-c", ",".join(CAPACITIES), "--prefetch", PREFETCH,
                   "--mode", MODES, "--no-recompute", "-q", "--activity", "--json", out]  # swap only: docs/chapters/replay.md, "Floors with recompute"
            if a.svg_dir:
                name = f"planner-ideal-{key}" + (f"-{a.date}" if a.date else "") + ".svg"
                cmd += ["--plot-ideal", os.path.join(a.svg_dir, name)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rows = json.load(open(out))
            ideal = {}
            floor = {}
            cells = {}
            order = []
            per = {}
            for r in rows:
                its = r.get("iteration_seconds") or []
                if r["mode"] == "pool" and len(its) >= 2:
                    per.setdefault(r["capacity"], {})[(r["policy"], r["prefetch"])] = sum(its[1:])
                k = (r["policy"], r["mode"], r["prefetch"])
                if k not in cells:
                    cells[k] = {}
                    order.append(k)
                cap = r["capacity"]
                cells[k][cap] = f"{ms(r['makespan_seconds'])} ({r['makespan_vs_ideal']:.2f}x)"
                ideal[cap] = r["ideal_seconds"]
                if r.get("phase_floor_seconds", 0) > 0:
                    floor[cap] = r["phase_floor_seconds"]
            print(f"**{title}**: makespan and makespan / ideal (ideal: "
                  + ", ".join(f"{c} {ms(ideal[c])}" for c in CAPACITIES if c in ideal)
                  + ("; phase floor: " + ", ".join(f"{c} {ms(floor[c])} ({floor[c] / ideal[c]:.2f}x)"
                                                    for c in CAPACITIES if c in floor) if floor else "")
                  + ")\n")
            print("| policy | mode | prefetch | " + " | ".join(CAPACITIES) + " |")
            print("|---|---|---|" + "---|" * len(CAPACITIES))
            for k in order:
                print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells[k].get(c, "-") for c in CAPACITIES) + " |")
            print()
            for c in CAPACITIES:
                if c in per:
                    later.append((key, c, per[c]))
    if a.every_policy:
        print_every_policy(later)
    else:
        print_later(later)
    return 0


def print_every_policy(later):
    print("**From the second iteration on, every built-in policy** (" + EVERY_POLICY.replace(",", ", ")
          + "; prefetch " + EVERY_PREFETCH.replace(",", ", ") + "): the best online row, the best `plan` "
          "row and the best `oracle` row\n")
    print("| trace | capacity | best online | best `plan` | best oracle | online / oracle | plan / oracle |")
    print("|---|---|---|---|---|---|---|")
    for key, c, v in later:
        on = min(((t, k) for k, t in v.items() if online(*k)), default=None)
        pl = min(((t, k) for k, t in v.items() if k[1].startswith("plan")), default=None)
        orc = min(((t, k) for k, t in v.items() if k[1].startswith("oracle")), default=None)
        if on is None or pl is None or orc is None:
            continue
        print(f"| {key} | {c} | {ms(on[0])}, {on[1][0]} {on[1][1]} | {ms(pl[0])}, {pl[1][0]} {pl[1][1]} | "
              f"{ms(orc[0])}, {orc[1][0]} {orc[1][1]} | {on[0] / orc[0]:.3f}x | {pl[0] / orc[0]:.3f}x |")
    print()


def online(policy, prefetch):
    """Rows that read no future: every `plan` row, and no prefetch but with belady."""
    return prefetch.startswith("plan") or (prefetch in ("none", "sequence") and policy != "belady")


def print_later(later):
    print("**From the second iteration on** (pool mode; device time of the iterations after the "
          "first, `--activity`): best online against best `oracle` (with or without `timing`), and "
          "each policy's `plan` against its best `oracle`\n")
    print("| trace | capacity | best online | best oracle | ratio | " + " | ".join(
        f"{p} plan / oracle" for p in POLICIES.split(",")) + " |")
    print("|---|---|---|---|---|" + "---|" * len(POLICIES.split(",")))
    for key, c, v in later:
        on = min(((t, k) for k, t in v.items() if online(*k)), default=None)
        orc = min(((t, k) for k, t in v.items() if k[1].startswith("oracle")), default=None)
        if on is None or orc is None:
            continue
        ratios = []
        for p in POLICIES.split(","):
            a = v.get((p, "plan"))
            b = min((t for k, t in v.items() if k[0] == p and k[1].startswith("oracle")), default=None)
            ratios.append(f"{a / b:.3f}x" if a and b else "-")
        print(f"| {key} | {c} | {ms(on[0])}, {on[1][0]} {on[1][1]} | {ms(orc[0])}, {orc[1][0]} {orc[1][1]} | "
              f"{on[0] / orc[0]:.3f}x | " + " | ".join(ratios) + " |")
    print()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The standard rows the planner's changes are measured on, and a comparison of prefetch specs.

The rows: the five traces of docs/chapters/replay.md ("Prefetch and the planner"), the 16
generator variants of bench/results/planner-align-cpu-2026-12-05.md and the two traces
recorded from PyTorch with and without their own prefetches, each at 25 % and 50 % of the
working set, with lru, repeat and belady (pool mode, virtual clock, pcie4, swap only).

    python3 scripts/planner_rows.py --specs none,plan,plan:frees=off --base plan:frees=off

prints, per policy and per spec, the ratio of each row's makespan to the base spec's
(min, max, geometric mean) and how many rows are slower than `none`; `--rows` lists every
row. Runs are deterministic, so each row runs once. The traces are generated into
--work (default: a temporary directory).

--long runs instead the long rows: generated training runs of 10-12 iterations and ResNet-18
recorded from PyTorch for 12 steps, where the
planner's trials of prefetching against not (Note [Measuring whether prefetching pays])
have periods to act on, as in a real training run of thousands of steps.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# key -> (generator or fixture path, parameters, replay options)
TRACES = {
    "tt": ("transformer-train", ["iterations=4"], []),
    "mlp": ("mlp-train", [], []),
    "llm": ("llm-infer-stream", [], []),
    "gpt2": ("tests/data/gpt2_small_train.tpt", None, []),
    "resnet": ("tests/data/resnet18_train.tpt", None, []),
}
MLP_VARIANTS = ["layers=4", "layers=12", "width=1024", "width=4096 layers=6", "batch=64", "batch=1024",
                "iterations=4", "layers=16 width=1024 batch=512"]
TT_VARIANTS = ["blocks=6", "blocks=24", "hidden=1024", "hidden=512 seq=2048", "batch=8", "batch=2 seq=512",
               "iterations=4", "blocks=8 hidden=1536 iterations=3"]
for v in MLP_VARIANTS:
    TRACES["mlp " + v] = ("mlp-train", v.split(), [])
for v in TT_VARIANTS:
    TRACES["tt2 " + v] = ("transformer-train", ([] if "iterations=" in v else ["iterations=2"]) + v.split(), [])
TRACES["gpt2-torch"] = ("tests/data/gpt2_torch.tpb", None, [])
TRACES["resnet-torch"] = ("tests/data/resnet18_torch.tpb", None, [])
TRACES["gpt2-torch no-tp"] = ("tests/data/gpt2_torch.tpb", None, ["--no-trace-prefetch"])
TRACES["resnet-torch no-tp"] = ("tests/data/resnet18_torch.tpb", None, ["--no-trace-prefetch"])

LONG = {
    "tt iterations=12": ("transformer-train", ["iterations=12"], []),
    "mlp iterations=12": ("mlp-train", ["iterations=12"], []),
    "tt blocks=24 iterations=10": ("transformer-train", ["blocks=24", "iterations=10"], []),
    "tt hidden=512 seq=2048 iterations=10": ("transformer-train", ["hidden=512", "seq=2048", "iterations=10"], []),
    "mlp layers=16 width=1024 batch=512 iterations=10": ("mlp-train", ["layers=16", "width=1024", "batch=512",
                                                                     "iterations=10"], []),
    # ResNet-18 recorded from PyTorch for 12 steps (tests/data/README.md), with and without
    # its own prefetches
    "resnet-torch 12 steps": ("tests/data/resnet18_torch_12steps.tpb", None, []),
    "resnet-torch 12 steps no-tp": ("tests/data/resnet18_torch_12steps.tpb", None, ["--no-trace-prefetch"]),
}


def trace_file(tierpool, work, key):
    src, params, _ = TRACES[key]
    if params is None:
        return os.path.join(ROOT, src)
    name = src + ("-" + "-".join(params) if params else "")
    path = os.path.join(work, name.replace("=", "").replace(" ", "") + ".tpb")
    if not os.path.exists(path):
        subprocess.run([tierpool, "trace", "gen", src, *params, "--seed", "1", "-o", path], check=True,
                       stdout=subprocess.DEVNULL)
    return path


def run(tierpool, work, key, specs, policies):
    out = os.path.join(work, "out.json")
    cmd = [tierpool, "replay", trace_file(tierpool, work, key), "-p", ",".join(policies), "-c", "25%,50%",
           "--prefetch", ",".join(specs), "--no-recompute", "--threads", "1", "-q", "--json", out,
           *TRACES[key][2]]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tierpool", default=os.path.join(ROOT, "build", "bin", "tierpool"))
    ap.add_argument("--specs", required=True, help="prefetch specs, separated by ';' or ','")
    ap.add_argument("--base", help="the spec the others are compared with (default: the first)")
    ap.add_argument("--policies", default="lru,repeat,belady")
    ap.add_argument("--only", help="trace keys, separated by ';' (default: every row)")
    ap.add_argument("--work", help="where generated traces go (kept between runs)")
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--long", action="store_true", help="the long rows (10-12 iterations) instead")
    a = ap.parse_args()
    if a.long:
        TRACES.clear()
        TRACES.update(LONG)
    specs = [s for s in (a.specs.split(";") if ";" in a.specs else a.specs.split(",")) if s]
    # a spec's own parameters use ','; "plan:frees=off,timing=off" is one spec when ';' separates
    if "none" not in specs:
        specs = ["none"] + specs
    base = a.base or specs[1 if specs[0] == "none" and len(specs) > 1 else 0]
    policies = a.policies.split(",")
    keys = a.only.split(";") if a.only else list(TRACES)
    work = a.work or tempfile.mkdtemp(prefix="planner-rows-")
    os.makedirs(work, exist_ok=True)
    table = {}  # (key, policy, capacity) -> spec -> makespan
    for key in keys:
        if key not in TRACES:
            sys.exit(f"unknown trace key {key!r}; known: {', '.join(TRACES)}")
        for row in run(a.tierpool, work, key, specs, policies):
            table.setdefault((key, row["policy"], row["capacity"]), {})[row["prefetch"]] = row["makespan_seconds"]
    if a.rows:
        print("| trace | policy | capacity | " + " | ".join(specs) + " |")
        print("|---" * (3 + len(specs)) + "|")
        for (key, pol, cap), m in table.items():
            cells = []
            for s in specs:
                v = m.get(s)
                cells.append("-" if v is None else f"{v * 1e3:.1f}" + ("" if s == base else f" ({v / m[base]:.3f}x)"))
            print(f"| {key} | {pol} | {cap} | " + " | ".join(cells) + " |")
        print()
    print(f"| policy | spec | vs {base}: min | max | geometric mean | rows slower than none |")
    print("|---|---|---|---|---|---|")
    for pol in policies:
        for s in specs:
            rs = [m[s] / m[base] for (k, p, c), m in table.items() if p == pol and s in m and base in m]
            slower = sum(1 for (k, p, c), m in table.items() if p == pol and s in m and m[s] > m["none"] * 1.0005)
            if not rs:
                continue
            g = math.exp(sum(math.log(r) for r in rs) / len(rs))
            print(f"| {pol} | {s} | {min(rs):.3f} | {max(rs):.3f} | {g:.4f} | {slower} of {len(rs)} |")


if __name__ == "__main__":
    main()

# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Module functions (policies, trace generation, replay) and the docstrings."""

import pydoc

import pytest

import tierpool


def test_policies():
    pols = {p["name"]: p for p in tierpool.policies()}
    assert {"lru", "s3fifo", "belady", "arc"} <= set(pols)
    assert pols["lru"]["description"]
    for p in pols.values():
        for prm in p["parameters"]:
            assert set(prm) == {"name", "type", "default", "description"}


def test_trace_gen_and_replay(tmp_path):
    names = [w["name"] for w in tierpool.workloads()]
    assert "mlp-train" in names
    path = tmp_path / "mlp.tpb"
    n = tierpool.trace_gen("mlp-train", str(path), {"layers": "3", "width": "256"}, seed=1)
    assert n > 0 and path.stat().st_size > 0
    rows = tierpool.replay(str(path), ["lru", "belady"], "50%,100%", mode="pool")
    assert [(r["policy"], r["capacity"]) for r in rows] == [
        ("lru", "50%"), ("lru", "100%"), ("belady", "50%"), ("belady", "100%")]
    for r in rows:
        assert r["requests"] > 0 and 0.0 <= r["hit_ratio"] <= 1.0
        assert r["makespan_seconds"] >= r["ideal_seconds"] > 0
    cache = tierpool.replay(str(path), ["lru"], "10%", mode="cache")
    assert cache[0]["mode"] == "cache"
    assert cache[0]["overlapped_seconds"] is None and "phases" not in cache[0]


def test_replay_activity(tmp_path):
    # Where the device time went: the states partition the makespan, and the per-phase
    # rows (the generator's init, forward, backward, optimizer) partition it too.
    path = tmp_path / "mlp.tpb"
    tierpool.trace_gen("mlp-train", str(path), {"layers": "3", "width": "256"}, seed=1)
    (r,) = tierpool.replay(str(path), ["lru"], "40%", activity=True)
    keys = ["idle_seconds", "compute_only_seconds", "overlapped_seconds", "exposed_h2d_seconds",
            "exposed_d2h_seconds", "exposed_both_seconds"]
    assert abs(sum(r[k] for k in keys) - r["makespan_seconds"]) < 1e-9
    assert r["exposed_h2d_seconds"] + r["exposed_d2h_seconds"] + r["exposed_both_seconds"] > 0
    names = [p["name"] for p in r["phases"]]
    assert {"forward", "backward", "optimizer"} <= set(names), names
    assert abs(sum(p[k] for p in r["phases"] for k in keys) - r["makespan_seconds"]) < 1e-9
    # The device time per iteration: the generator's iterations, within the makespan (the
    # init phase comes before the first), and the sum from the second on.
    its = r["iteration_seconds"]
    assert len(its) >= 2 and all(t > 0 for t in its), its
    assert sum(its) <= r["makespan_seconds"] + 1e-12
    assert abs(r["steady_seconds"] - sum(its[1:])) < 1e-12
    (plain,) = tierpool.replay(str(path), ["lru"], "40%")
    assert plain["overlapped_seconds"] is None and "phases" not in plain
    assert "iteration_seconds" not in plain
    assert plain["makespan_seconds"] == r["makespan_seconds"]


def test_replay_with_the_planner(tmp_path):
    # The learned forecast drives belady as the trace's true one does once it holds (the
    # planner gives it before each acquire), and the rows say how the planner's early
    # write-backs went.
    path = tmp_path / "mlp10.tpb"
    tierpool.trace_gen("mlp-train", str(path), {"iterations": "10"}, seed=1)
    (truth,) = tierpool.replay(str(path), ["belady"], "25%", activity=True)
    (learned,) = tierpool.replay(str(path), ["belady"], "25%", activity=True,
                                 prefetch="plan:prefetch=off,writeback=off,keep=off")
    assert len(truth["iteration_seconds"]) == len(learned["iteration_seconds"]) == 10
    for k in range(4, 9):
        assert learned["iteration_seconds"][k] == pytest.approx(truth["iteration_seconds"][k], abs=1e-9), k
    (plan,) = tierpool.replay(str(path), ["lru"], "50%", prefetch="plan")
    assert plan["prefetch"] == "plan"
    assert 0 <= plan["early_write_backs_wasted"] <= plan["early_write_backs"]
    assert plan["early_write_back_wasted_bytes"] >= plan["early_write_backs_wasted"]
    # Ten iterations: 4 planned periods with prefetches, then a trial of 3 without, which
    # loses here (prefetching pays on mlp-train); probe=off times nothing.
    assert plan["planner_periods_prefetching"] >= 4
    assert plan["planner_periods_without"] == 3
    (always,) = tierpool.replay(str(path), ["lru"], "50%", prefetch="plan:probe=off")
    assert always["planner_periods_prefetching"] == always["planner_periods_without"] == 0


def test_generator_presets(tmp_path):
    kv = next(w for w in tierpool.workloads() if w["name"] == "kv-paging")
    assert "max_batch=4096" in kv["presets"]["serving"]
    path = tmp_path / "kv.tpb"  # the serving preset, made small by explicit keys
    n = tierpool.trace_gen("kv-paging", str(path), {"preset": "serving", "requests": "30", "max_batch": "8"})
    assert n > 0
    with pytest.raises(tierpool.LogicError, match="unknown preset 'x' \\(valid: serving\\)"):
        tierpool.trace_gen("kv-paging", str(tmp_path / "x.tpb"), {"preset": "x"})


def test_help_has_docstrings():
    text = pydoc.render_doc(tierpool.Pool, renderer=pydoc.plaintext)
    for name in ["allocate", "acquire", "acquire_host", "fits", "stats", "close"]:
        assert name in text
    for cls in [tierpool.Pool, tierpool.Tensor, tierpool.Lease, tierpool.TierOptions, tierpool.FitReport]:
        assert cls.__doc__
        for attr, member in vars(cls).items():
            if attr.startswith("_") and attr not in ("__enter__", "__exit__", "__dlpack__", "__dlpack_device__"):
                continue
            if callable(member) or isinstance(member, property):
                assert member.__doc__, f"{cls.__name__}.{attr} has no docstring"
    for fn in [tierpool.policies, tierpool.replay, tierpool.trace_gen, tierpool.workloads]:
        assert fn.__doc__
    assert tierpool.LogicError.__doc__ and tierpool.OutOfMemory.__doc__

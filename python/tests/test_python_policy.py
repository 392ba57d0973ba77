# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Eviction policies and prefetch predictors written in Python: in a Pool under pressure
(every byte checked), failure -> lru fallback -> PolicyError, refused answers, bad types
and names, registration, threads, replay (a Python LRU gives the C++ lru's figures)."""

import copy
import faulthandler
import os
import random
import threading

import numpy as np
import pytest

import tierpool
from conftest import KiB, make_pool
from tierpool.example_policies import FifoPolicy, LruPolicy, RandomPolicy

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data")
SAMPLE_TRACE = os.path.join(DATA, "random_reuse_4k.tpt")


@pytest.fixture(autouse=True)
def no_hang():
    """A deadlock fails the test (with every thread's stack) instead of hanging the run."""
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def clean_registrations():
    yield
    for name in list(tierpool._policy._registered):
        tierpool.unregister_policy(name)


def pattern(n, seed):
    return ((np.arange(n, dtype=np.uint64) * 131 + seed * 7) % 251).astype(np.uint8)


def fill(pool, t, seed):
    with pool.acquire_host(t, "write_discard") as lease:
        v = np.asarray(lease)
        v[:] = pattern(t.nbytes, seed)
        del v


def check_bytes(pool, t, seed):
    with pool.acquire_host(t, "read") as lease:
        v = np.asarray(lease)
        ok = np.array_equal(v, pattern(t.nbytes, seed))
        del v
    assert ok, f"tensor {t.name}: bytes differ"


class Recording(LruPolicy):
    """An LRU that counts its hooks."""

    name = "recording"

    def __init__(self):
        super().__init__()
        self.calls = {"on_insert": 0, "on_access": 0, "on_erase": 0, "on_pin": 0, "on_unpin": 0, "propose": 0}

    def on_insert(self, view):
        self.calls["on_insert"] += 1
        assert isinstance(view, tierpool.TensorView) and view.bytes > 0
        super().on_insert(view)

    def on_access(self, view):
        self.calls["on_access"] += 1
        super().on_access(view)

    def on_erase(self, id):
        self.calls["on_erase"] += 1
        super().on_erase(id)

    def on_pin(self, id):
        self.calls["on_pin"] += 1
        super().on_pin(id)

    def on_unpin(self, id):
        self.calls["on_unpin"] += 1
        super().on_unpin(id)

    def propose(self, request):
        self.calls["propose"] += 1
        assert isinstance(request, tierpool.EvictionRequest) and request.tier == request.from_
        return super().propose(request)


# ---- in a pool ----


@pytest.mark.parametrize("policy", [LruPolicy, FifoPolicy, RandomPolicy, Recording])
def test_python_policy_under_pressure_keeps_every_byte(policy):
    n = 8 * KiB
    rng = random.Random(7)
    with make_pool(device_bytes=32 * KiB, policy=policy) as pool:
        assert pool.stats()["tiers"][0]["policy"] == policy.name
        ts = [pool.allocate(n, name=f"t{i}") for i in range(12)]
        seeds = list(range(len(ts)))
        for t, s in zip(ts, seeds):
            fill(pool, t, s)
        evictions = 0
        for step in range(60):
            i = rng.randrange(len(ts))
            with pool.acquire(ts[i], "read_write") as lease:
                pool.synchronize(lease.stream)
                v = np.asarray(lease)
                assert np.array_equal(v, pattern(n, seeds[i]))
                seeds[i] += 100
                v[:] = pattern(n, seeds[i])
                del v
            now = pool.stats()["tiers"][0]["evictions"]
            if now != evictions:  # after each eviction: every tensor's bytes
                evictions = now
                for t, s in zip(ts, seeds):
                    check_bytes(pool, t, s)
        assert evictions > 0
        stats = pool.stats()
        assert stats["policy_fallbacks"] == 0 and stats["tiers"][0]["policy_fallbacks"] == 0
        assert pool.validate()
        for t in ts:
            t.free()


def test_hooks_are_called_and_views_carry_the_fields():
    seen = []

    class Spy(LruPolicy):
        name = "spy"

        def on_insert(self, view):
            seen.append((view.id, view.tier, view.bytes, view.pinned, view.access_count))
            super().on_insert(view)

    with make_pool(device_bytes=32 * KiB, policy=Spy) as pool:
        t = pool.allocate(4 * KiB)
        with pool.acquire(t, "write_discard"):
            pass
        assert (t.id, 0, 4 * KiB) in [s[:3] for s in seen]
        t.free()


def test_a_prefetch_insert_says_it_is_not_a_use():
    inserts = []

    class Spy(LruPolicy):
        name = "prefetch_spy"

        def on_insert(self, view):
            inserts.append((view.id, view.prefetch))
            super().on_insert(view)

    with make_pool(device_bytes=32 * KiB, policy=Spy) as pool:
        ts = [pool.allocate(8 * KiB) for _ in range(6)]  # 48 KiB in a 32 KiB tier
        for i, t in enumerate(ts):
            with pool.acquire_host(t, "write_discard") as lease:
                view = np.asarray(lease)
                view[:] = i + 1
                del view
        for t in ts:  # the device holds the last four; the first two are below
            with pool.acquire(t, "read"):
                pass
        early, late = ts[0], ts[1]
        assert pool.residency(early)["home"] != 0 and pool.residency(late)["home"] != 0
        inserts.clear()
        pool.prefetch(early)
        pool.synchronize()
        for t, value in ((early, 1), (late, 2)):  # its use; then a demand miss: an insert that is a use
            with pool.acquire(t, "read") as lease:
                pool.synchronize(lease.stream)
                view = np.asarray(lease)
                assert np.array_equal(view, np.full(8 * KiB, value, dtype=np.uint8))
                del view
        assert (early.id, True) in inserts and (early.id, False) not in inserts
        assert (late.id, False) in inserts and (late.id, True) not in inserts
        for t in ts:
            t.free()
    d = tierpool.PolicyDriver(Spy)
    d.on_insert(7, 10, prefetch=True)
    d.on_insert(8, 10)
    assert inserts[-2:] == [(7, True), (8, False)]


def test_per_tier_policy_from_a_dict():
    tiers = [
        {"kind": "device", "capacity_bytes": 32 * KiB, "chunk_bytes": 32 * KiB, "policy": FifoPolicy},
        {"kind": "host", "capacity_bytes": 1024 * KiB, "chunk_bytes": 1024 * KiB, "policy": "lru"},
    ]
    with make_pool(tiers=tiers) as pool:
        names = [t["policy"] for t in pool.stats()["tiers"]]
        assert names[0] == "py_fifo" and names[1].startswith("lru")


# ---- failure: fallback to lru, the next call raises ----


class RaisesAfter(LruPolicy):
    name = "raises_after"
    limit = 3

    def __init__(self):
        super().__init__()
        self.proposals = 0

    def propose(self, request):
        self.proposals += 1
        if self.proposals > self.limit:
            raise ValueError("boom from propose")
        return super().propose(request)


def pressure(pool, ts, rounds=3):
    for _ in range(rounds):
        for t in ts:
            with pool.acquire(t, "read_write"):
                pass


def test_a_raising_policy_falls_back_to_lru_and_the_next_call_raises():
    n = 8 * KiB
    with make_pool(device_bytes=32 * KiB, policy=RaisesAfter) as pool:
        ts = [pool.allocate(n, name=f"t{i}") for i in range(8)]
        for i, t in enumerate(ts):
            fill(pool, t, i)
        with pytest.raises(tierpool.PolicyError) as info:
            pressure(pool, ts)  # the call that failed completes (lru answers); the next raises
        err = info.value
        assert isinstance(err, tierpool.LogicError) and isinstance(err, tierpool.Error)
        assert "raises_after" in str(err) and "tier 0" in str(err) and "propose" in str(err)
        assert "falls back to lru" in str(err)
        assert isinstance(err.__cause__, ValueError) and "boom" in str(err.__cause__)
        assert err.__cause__.__traceback__ is not None
        # Raised once: the pool goes on with lru, consistent, every byte intact.
        pressure(pool, ts)
        stats = pool.stats()
        assert stats["policy_fallbacks"] == 1 and stats["tiers"][0]["policy_fallbacks"] == 1
        assert stats["tiers"][1]["policy_fallbacks"] == 0
        lines = [ln for ln in pool.summary().splitlines() if "lru took over" in ln]
        assert len(lines) == 1 and lines[0].startswith(f"policy of {stats['tiers'][0]['name']}:")
        assert pool.validate()
        for i, t in enumerate(ts):
            check_bytes(pool, t, i)
            t.free()


def test_a_raising_hook_other_than_propose():
    class BadInsert(LruPolicy):
        name = "bad_insert"

        def on_insert(self, view):
            if view.bytes == 3 * KiB:
                raise KeyError("no such thing")
            super().on_insert(view)

    with make_pool(device_bytes=32 * KiB, policy=BadInsert) as pool:
        t = pool.allocate(3 * KiB)
        with pytest.raises(tierpool.PolicyError, match="on_insert") as info:
            pool.validate()
        assert isinstance(info.value.__cause__, KeyError)
        assert pool.validate()
        t.free()


class BadErase(LruPolicy):
    name = "bad_erase"

    def on_erase(self, id):
        raise RuntimeError("erase failed")


def test_close_raises_a_failure_after_closing():
    pool = make_pool(device_bytes=32 * KiB, policy=BadErase)
    t = pool.allocate(4 * KiB)
    t.free()  # on_erase raises; Tensor.free does not check the pool
    with pytest.raises(tierpool.PolicyError, match="on_erase"):
        pool.close()
    pool.close()  # closed already (idempotent); nothing left to raise


def test_with_block_raises_a_failure_at_its_end():
    with pytest.raises(tierpool.PolicyError, match="on_erase"):
        with make_pool(device_bytes=32 * KiB, policy=BadErase) as pool:
            pool.allocate(4 * KiB).free()


def test_with_block_does_not_hide_the_blocks_own_exception():
    with pytest.raises(KeyError):
        with make_pool(device_bytes=32 * KiB, policy=BadErase) as pool:
            pool.allocate(4 * KiB).free()
            raise KeyError("mine")


NONSENSE = [
    (lambda self, r, v: None, "not a list"),
    (lambda self, r, v: "12", "not a list"),
    (lambda self, r, v: iter(v), "not a list"),
    (lambda self, r, v: [1.5], "not a tensor id"),
    (lambda self, r, v: [True], "not a tensor id"),
    (lambda self, r, v: [-1], "not a tensor id"),
    (lambda self, r, v: [2**70], "not a tensor id"),
    (lambda self, r, v: [10**12], "not resident"),
    (lambda self, r, v: v[:1] + v[:1] + v[1:], "twice"),
    (lambda self, r, v: [], "bytes for a request"),
]


@pytest.mark.parametrize("answer,message", NONSENSE)
def test_nonsense_answers_count_as_failures(answer, message):
    class Nonsense(LruPolicy):
        name = "nonsense"

        def propose(self, request):
            return answer(self, request, LruPolicy.propose(self, request))

    d = tierpool.PolicyDriver(Nonsense)
    for i in range(1, 6):
        d.on_insert(i, 100)
    victims, nbytes = d.propose(150)
    assert d.failed
    assert victims == [1, 2] and nbytes == 200  # lru's answer instead
    with pytest.raises(tierpool.PolicyError, match=message):
        d.check()
    d.check()  # once


def test_a_pinned_victim_is_refused():
    class ProposesPinned(LruPolicy):
        name = "proposes_pinned"

        def propose(self, request):
            return sorted(list(self.order) + list(self.pinned))

    d = tierpool.PolicyDriver(ProposesPinned)
    for i in range(1, 4):
        d.on_insert(i, 100)
    d.on_pin(1)
    assert d.propose(1000) == ([2, 3], 200)
    assert d.failed
    with pytest.raises(tierpool.PolicyError, match="pinned tensor 1"):
        d.check()


def test_nonsense_in_a_pool_keeps_it_consistent():
    class Garbage(LruPolicy):
        name = "garbage"

        def propose(self, request):
            return [123456789]

    with make_pool(device_bytes=32 * KiB, policy=Garbage) as pool:
        ts = [pool.allocate(8 * KiB) for _ in range(6)]
        for i, t in enumerate(ts):
            fill(pool, t, i)
        with pytest.raises(tierpool.PolicyError, match="123456789"):
            pressure(pool, ts)
        pressure(pool, ts)
        assert pool.validate()
        for i, t in enumerate(ts):
            check_bytes(pool, t, i)
            t.free()


# ---- bad types, names, registration ----


def test_bad_policy_objects():
    with pytest.raises(tierpool.LogicError, match="spec"):
        make_pool(policy=123)

    class NoPropose:
        def on_insert(self, view):
            pass

    with pytest.raises(tierpool.LogicError, match="propose"):
        make_pool(policy=NoPropose)

    class FailsToMake(tierpool.EvictionPolicy):
        def __init__(self):
            raise RuntimeError("cannot make it")

        def propose(self, request):
            return []

    with pytest.raises(tierpool.LogicError, match="cannot make it"):
        make_pool(policy=FailsToMake)


def test_unknown_policy_names():
    tierpool.register_policy("mine", LruPolicy)
    with pytest.raises(tierpool.LogicError, match="mine") as info:
        make_pool(policy="nosuch")
    assert "lru" in str(info.value)  # the message lists what exists
    with pytest.raises(tierpool.LogicError):
        tierpool.replay(SAMPLE_TRACE, policies=["nosuch"], capacities="10%")
    with pytest.raises(tierpool.LogicError):
        tierpool.PolicyDriver("nosuch")


def test_register_policy_by_name_with_parameters():
    class Param(LruPolicy):
        made = []

        def __init__(self, depth=1, label="x", fast=False):
            super().__init__()
            Param.made.append((depth, label, fast))

    tierpool.register_policy("param", Param, "An LRU with parameters", {"depth": 1, "label": "x", "fast": False})
    info = {p["name"]: p for p in tierpool.policies()}["param"]
    assert info["description"] == "An LRU with parameters"
    assert [(p["name"], p["type"]) for p in info["parameters"]] == [
        ("depth", "integer"),
        ("label", "string"),
        ("fast", "boolean"),
    ]
    with make_pool(policy="param:depth=3,fast=true") as pool:
        assert pool.stats()["tiers"][0]["policy"].startswith("param")
    assert (3, "x", True) in Param.made
    tiers = [tierpool.TierOptions(kind="device", capacity_bytes=32 * KiB, chunk_bytes=32 * KiB, policy="param"),
             {"kind": "host", "capacity_bytes": 1024 * KiB, "chunk_bytes": 1024 * KiB}]
    with make_pool(tiers=tiers, policy="lru") as pool:
        assert [t["policy"] for t in pool.stats()["tiers"]][0].startswith("param")
    with pytest.raises(tierpool.LogicError):
        make_pool(policy="param:nosuch=1")


def test_registration_errors():
    with pytest.raises(tierpool.LogicError, match="already"):
        tierpool.register_policy("lru", LruPolicy)
    tierpool.register_policy("once", LruPolicy)
    with pytest.raises(tierpool.LogicError, match="already"):
        tierpool.register_policy("once", LruPolicy)
    with pytest.raises(tierpool.LogicError, match="a-z0-9_"):
        tierpool.register_policy("Bad-Name", LruPolicy)
    with pytest.raises(tierpool.LogicError):
        tierpool.register_policy("notcallable", 3)
    with pytest.raises(tierpool.LogicError):
        tierpool.register_policy("badparam", LruPolicy, parameters={"k": [1]})
    assert tierpool.unregister_policy("once")
    assert not tierpool.unregister_policy("once")


def test_a_class_whose_name_is_taken_gets_another():
    class Lru(LruPolicy):
        name = "lru"  # a built-in's name

    with make_pool(policy=Lru) as pool:
        assert pool.stats()["tiers"][0]["policy"] == "lru_2"


def test_copy_is_a_deep_copy():
    d = tierpool.PolicyDriver(LruPolicy)
    for i in range(1, 5):
        d.on_insert(i, 10)
    c = d.copy()
    assert c.python_object is not d.python_object
    assert c.propose(15) == d.propose(15) == ([1, 2], 20)
    c.on_access(1, bytes=10)
    assert c.propose(15) == ([2, 3], 20)
    assert d.propose(15) == ([1, 2], 20)  # independent
    assert copy.deepcopy(d.python_object).order == d.python_object.order


def test_not_overridden_hooks_are_not_called():
    class OnlyPropose:
        def propose(self, request):
            return []

    d = tierpool.PolicyDriver(OnlyPropose)
    d.on_insert(1, 10)  # no on_insert: nothing called, no failure
    d.on_erase(1)
    assert not d.failed


# ---- threads ----


def test_a_python_policy_used_from_several_threads():
    n = 4 * KiB
    errors = []
    barrier = threading.Barrier(4, timeout=60)
    with make_pool(device_bytes=32 * KiB, policy=LruPolicy) as pool:

        def worker(k):
            try:
                rng = random.Random(k)
                mine = [pool.allocate(n, name=f"w{k}.{i}") for i in range(6)]
                for i, t in enumerate(mine):
                    fill(pool, t, 10 * k + i)
                barrier.wait()  # all 24 tensors (96 KiB) live before anyone acquires: eviction
                for _ in range(40):
                    i = rng.randrange(len(mine))
                    with pool.acquire(mine[i], "read"):
                        pass
                    if rng.random() < 0.3:
                        with pool.acquire(mine[i], "read_write"):
                            pass
                        seen = pool.fits(n)
                        assert seen.bytes == n
                    if rng.random() < 0.2:
                        pool.stats()
                barrier.wait()  # nobody frees before everyone is done
                for i, t in enumerate(mine):
                    check_bytes(pool, t, 10 * k + i)
                    t.free()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "deadlock"
        assert not errors, errors
        assert pool.stats()["tiers"][0]["evictions"] > 0
        assert pool.stats()["policy_fallbacks"] == 0
        assert pool.validate()


# ---- replay ----


@pytest.fixture(scope="module")
def generated_trace(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("traces") / "rr.tpb")
    tierpool.trace_gen("random-reuse", path, {"tensors": "64", "accesses": "4000"}, 5)
    return path


FIGURES = ["hits", "misses", "bytes_h2d", "bytes_d2h", "copies_h2d", "copies_d2h", "evictions", "makespan_seconds"]


@pytest.mark.parametrize("mode", ["cache", "pool"])
@pytest.mark.parametrize("trace", ["sample", "generated"])
def test_replay_python_lru_matches_cpp_lru(mode, trace, generated_trace):
    path = SAMPLE_TRACE if trace == "sample" else generated_trace
    caps = "5%,10%,25%,50%"
    rows = tierpool.replay(path, policies=[LruPolicy, "lru"], capacities=caps, mode=mode, threads=4)
    assert len(rows) == 8
    py, cpp = rows[:4], rows[4:]
    assert {r["policy"] for r in py} == {"py_lru"} and {r["policy"] for r in cpp} == {"lru"}
    for a, b in zip(py, cpp):
        assert a["capacity"] == b["capacity"]
        for k in FIGURES:
            assert a[k] == b[k], (mode, a["capacity"], k)
    assert any(r["evictions"] > 0 for r in py)


def test_replay_grid_of_several_python_policies_on_worker_threads(generated_trace):
    rows = tierpool.replay(generated_trace, policies=[LruPolicy, FifoPolicy, RandomPolicy, "fifo"],
                           capacities="5%,10%,20%,40%,60%", mode="pool", threads=8)
    assert len(rows) == 20
    by = {(r["policy"], r["capacity"]): r for r in rows}
    for cap in ["5%", "10%", "20%", "40%", "60%"]:
        assert by[("py_fifo", cap)]["hits"] == by[("fifo", cap)]["hits"]


def test_replay_with_a_registered_policy_name(generated_trace):
    tierpool.register_policy("mylru", LruPolicy)
    a = tierpool.replay(generated_trace, policies=["mylru"], capacities="10%", mode="cache")
    b = tierpool.replay(generated_trace, policies=["lru"], capacities="10%", mode="cache")
    assert a[0]["policy"] == "mylru" and a[0]["hits"] == b[0]["hits"]


def test_replay_raises_the_policy_error(generated_trace):
    class Fails(LruPolicy):
        name = "fails"

        def propose(self, request):
            raise ZeroDivisionError("bad")

    with pytest.raises(tierpool.PolicyError, match="fails") as info:
        tierpool.replay(generated_trace, policies=[Fails], capacities="10%,20%", mode="pool", threads=2)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


# ---- predictors ----


class NextInSequence(tierpool.Predictor):
    """Predicts that the tensor acquired after X is the one acquired after X last time."""

    name = "next_in_seq"

    def __init__(self):
        self.after = {}
        self.last = None
        self.frees = 0

    def on_access(self, access):
        if self.last is not None and self.last != access.id:
            self.after[self.last] = access.id
        self.last = access.id
        nxt = self.after.get(access.id)
        return [nxt] if nxt is not None else []

    def on_free(self, id):
        self.frees += 1
        self.after.pop(id, None)


def test_python_predictor_in_a_pool():
    with make_pool(device_bytes=32 * KiB, prefetch=NextInSequence) as pool:
        ts = [pool.allocate(8 * KiB) for _ in range(6)]
        for i, t in enumerate(ts):
            fill(pool, t, i)
        for _ in range(4):
            for t in ts:
                with pool.acquire(t, "read"):
                    pass
        stats = pool.stats()
        assert stats["prefetch"] == "next_in_seq"
        assert stats["prefetches"] > 0
        assert stats["predictor_failures"] == 0
        assert pool.validate()
        for i, t in enumerate(ts):
            check_bytes(pool, t, i)
            t.free()


class Recorder(tierpool.Predictor):
    """Records the ids it is told of (class-wide: the pool makes the instance)."""

    name = "recorder"
    seen = []

    def on_access(self, access):
        Recorder.seen.append(access.id)
        return []


def test_a_predictor_is_told_of_an_acquire_that_failed_and_of_a_retry_once():
    """An acquire that fails with OutOfMemory is told as the access the program asked for,
    before the thread's next call on the pool; a retry of the same tensor that succeeds is
    told once (Note [A failed acquire is still a step of the schedule])."""
    Recorder.seen = []
    with make_pool(device_bytes=32 * KiB, prefetch=Recorder) as pool:
        a, b, c = (pool.allocate(n * KiB) for n in (24, 16, 8))
        ids = {t.id: name for t, name in ((a, "a"), (b, "b"), (c, "c"))}
        with pool.acquire(a, "write_discard"):  # 24 of the 32 KiB pinned: b cannot have room
            with pytest.raises(tierpool.OutOfMemory):
                pool.acquire(b, "write_discard")
            with pool.acquire_host(b, "write_discard"):  # the program goes on another way
                pass
            assert [ids[i] for i in Recorder.seen] == ["a"]  # not told yet
        with pool.acquire(c, "write_discard"):  # b is told first
            pass
        assert [ids[i] for i in Recorder.seen] == ["a", "b", "c"]
        lease = pool.acquire(a, "read")
        with pytest.raises(tierpool.OutOfMemory):
            pool.acquire(b, "read")
        lease.release()
        with pool.acquire(b, "read"):  # the retry: room now, told once
            pass
        assert [ids[i] for i in Recorder.seen] == ["a", "b", "c", "a", "b"]
        assert pool.stats()["acquire_failures"] == 2
        # A failed acquire whose tensor is freed next: told before the free (an activation
        # read through a host lease and dropped by autograd), not lost with it.
        d = pool.allocate(16 * KiB)
        ids[d.id] = "d"
        with pool.acquire(a, "read"):
            with pytest.raises(tierpool.OutOfMemory):
                pool.acquire(d, "write_discard")
        d.free()
        with pool.acquire(c, "read"):
            pass
        assert [ids[i] for i in Recorder.seen][5:] == ["a", "d", "c"]
        assert pool.validate()


def test_a_raising_predictor_is_disabled_and_the_next_call_raises():
    class Bad(tierpool.Predictor):
        def on_access(self, access):
            return ["nope"]

    with make_pool(device_bytes=32 * KiB, prefetch=Bad) as pool:
        t = pool.allocate(4 * KiB)
        with pool.acquire(t, "read"):
            pass
        with pytest.raises(tierpool.PolicyError, match="predictor"):
            pool.stats()
        assert pool.stats()["predictor_failures"] == 1
        with pool.acquire(t, "read"):
            pass
        pool.stats()  # disabled: no new failure
        t.free()


def test_python_predictor_in_replay_and_registered(generated_trace):
    tierpool.register_predictor("seqpy", NextInSequence)
    # At 70 % some prefetches find room they need not wait for: in a replay the host never
    # waits, so at 20 % every vacated block is still behind pending work (tiers.md, step 6).
    a = tierpool.replay(generated_trace, policies=["lru"], capacities="70%", mode="pool", prefetch=NextInSequence)
    b = tierpool.replay(generated_trace, policies=["lru"], capacities="70%", mode="pool", prefetch="seqpy")
    assert a[0]["prefetch"] == "next_in_seq" and b[0]["prefetch"] == "seqpy"
    assert a[0]["hits"] == b[0]["hits"] and a[0]["prefetches"] == b[0]["prefetches"] > 0


def test_module_level_pool_with_a_python_policy_exits_cleanly(tmp_path):
    # Note [Python objects at exit] (py_policy.hpp): the cycle module -> Pool -> policy ->
    # class -> module is broken at exit; nanobind reports no leak.
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(
        "import tierpool\n"
        "from tierpool.example_policies import LruPolicy\n"
        "class Mine(LruPolicy):\n"
        "    name = 'mine'\n"
        "pool = tierpool.Pool(backend='sim', read_environment=False, publish=False, quiet=True, policy=Mine,\n"
        "                     tiers=[{'kind': 'device', 'capacity_bytes': 1 << 16}, {'kind': 'host', 'capacity_bytes': 1 << 20}])\n"
        "ts = [pool.allocate(1 << 14) for _ in range(8)]\n"
        "for t in ts:\n"
        "    with pool.acquire(t, 'write_discard'):\n"
        "        pass\n"
        "driver = tierpool.PolicyDriver(Mine)\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert "leaked" not in r.stderr, r.stderr


def test_the_chapters_examples_run():
    # docs/chapters/python_policies.md: its Python blocks, in order, run as written.
    import re

    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "chapters", "python_policies.md")
    with open(path, encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 2
    cwd = os.getcwd()
    os.chdir(os.path.join(os.path.dirname(__file__), "..", ".."))  # the example names tests/data/...
    try:
        scope = {"LruPolicy": LruPolicy}
        for code in blocks:
            exec(compile(code, path, "exec"), scope)  # noqa: S102 - the chapter's own code
        assert len(scope["rows"]) == 4
    finally:
        os.chdir(cwd)


def test_tierpool_policy_variable_names_a_registered_python_policy(monkeypatch):
    tierpool.register_policy("envpol", LruPolicy)
    monkeypatch.setenv("TIERPOOL_POLICY", "envpol")
    with make_pool(read_environment=True) as pool:
        assert {t["policy"] for t in pool.stats()["tiers"]} == {"envpol"}

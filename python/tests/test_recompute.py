# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Eviction actions from Python: recipes (Pool.set_recompute) that let the pool drop a
tensor instead of writing it back and rebuild it on next use, the pool's `actions`
option, allocate(compressible=False), and the figures in stats() and residency()."""

import gc
import threading
import weakref

import numpy as np
import pytest

import tierpool
from conftest import KiB, make_pool

T = 16 * KiB  # a quarter of the 64 KiB device tier


def source_bytes(seed=1):
    return np.random.default_rng(seed).integers(0, 256, T, dtype=np.uint8)


def derived(src):
    return src ^ np.uint8(0x5A)


def make_pair(p, seed=1):
    """x: the input, in the host tier; a = derived(x), written on the device."""
    src = source_bytes(seed)
    x = p.allocate(T, preferred_tier=1, name="x")
    with p.acquire_host(x, "write_discard") as h:
        h.numpy()[:] = src
    a = p.allocate(T, preferred_tier=0, name="a")
    with p.acquire(a, "write_discard") as d:
        d.numpy()[:] = derived(src)
    return x, a, src


def push_out(p, n=4):
    """Fill the device tier with fresh tensors: every older copy there is evicted."""
    ts = []
    for i in range(n):
        t = p.allocate(T, preferred_tier=0, name=f"push{i}")
        with p.acquire(t, "write_discard") as d:
            d.numpy()[:] = 100 + i
        ts.append(t)
    return ts


def dropped_pair():
    """make_pair with a cheap host recipe for a, then push_out: a is dropped for recompute."""
    p = make_pool()
    x, a, src = make_pair(p)
    r = Recipe()
    p.set_recompute(a, r, inputs=[x], cost_seconds=1e-9)
    keep = push_out(p)
    assert p.residency(a)["dropped_for_recompute"]
    return p, x, a, src, r, keep


def host_bytes(p, t):
    with p.acquire_host(t, "read") as h:
        return h.numpy().copy()


def device_bytes(p, t):
    with p.acquire(t, "read") as d:
        return d.numpy().copy()


class Recipe:
    """out = derived(inputs[0]), recording each call."""

    def __init__(self):
        self.calls = []

    def __call__(self, call):
        assert isinstance(call, tierpool.RecomputeCall) and isinstance(call.out, tierpool.RecipeBuffer)
        assert call.out.open and not call.out.readonly and call.out.nbytes == call.bytes
        assert isinstance(call.inputs, tuple) and len(call.inputs) == 1
        assert call.inputs[0].readonly and call.inputs[0].nbytes == T
        seen = {"id": call.id, "bytes": call.bytes, "tier": call.tier, "stream": call.stream,
                "on_device": call.on_device, "device": call.out.device}
        src = call.inputs[0].numpy()
        try:
            src[0] = 0
            seen["input_writable"] = True
        except ValueError:
            seen["input_writable"] = False
        call.out.numpy()[:] = derived(src)
        del src
        self.calls.append(seen)


@pytest.mark.parametrize("on_device", [False, True])
def test_a_cheap_recipe_drops_the_tensor_and_rebuilds_its_exact_bytes(on_device):
    p = make_pool()
    x, a, src = make_pair(p)
    r = Recipe()
    p.set_recompute(a, r, inputs=[x], on_device=on_device, cost_seconds=1e-9)
    res = p.residency(a)
    assert res["recomputable"] and not res["dropped_for_recompute"]
    assert p.stats()["recipes"] == 1
    keep = push_out(p)
    st = p.stats()
    assert st["evicted_recompute"] == 1 and st["evicted_recompute_bytes"] == T, st
    assert st["evicted_moved"] == 0 and st["rebuilds"] == 0
    res = p.residency(a)
    assert res["dropped_for_recompute"] and res["recomputable"]
    assert not any(c["valid"] for c in res["copies"]), res
    assert r.calls == []
    got = device_bytes(p, a)
    assert np.array_equal(got, derived(src))
    assert len(r.calls) == 1
    c = r.calls[0]
    assert c["id"] == a.id and c["bytes"] == T and c["on_device"] == on_device and c["device"] == on_device
    assert c["tier"] == (0 if on_device else 1)
    assert not c["input_writable"]
    st = p.stats()
    assert st["rebuilds"] == 1 and st["rebuild_failures"] == 0 and st["rebuild_seconds"] > 0
    assert not p.residency(a)["dropped_for_recompute"] and p.residency(a)["recomputable"]  # a read keeps it
    assert np.array_equal(host_bytes(p, a), derived(src))
    assert len(r.calls) == 1  # resident now: no second rebuild
    assert np.array_equal(host_bytes(p, x), src)  # the input is untouched
    assert p.validate()
    del keep
    p.close()


def test_a_dear_recipe_is_written_back():
    p = make_pool()
    x, a, src = make_pair(p)
    r = Recipe()
    p.set_recompute(a, r, inputs=[x], cost_seconds=10.0)  # far more than a 16 KiB round trip
    keep = push_out(p)
    st = p.stats()
    assert st["evicted_recompute"] == 0 and st["evicted_moved"] >= 1, st
    assert not p.residency(a)["dropped_for_recompute"]
    assert np.array_equal(device_bytes(p, a), derived(src))
    assert r.calls == []
    del keep
    p.close()


class RecipeFailed(Exception):
    pass


def test_an_exception_from_the_recipe_leaves_the_acquire_and_the_tensor_stays_dropped():
    p = make_pool()
    x, a, src = make_pair(p)
    r = Recipe()
    failures = [RecipeFailed("the recipe failed on purpose")]

    def fail_first(call):
        if failures:
            raise failures.pop()
        r(call)

    p.set_recompute(a, fail_first, inputs=[x], cost_seconds=0.0)
    keep = push_out(p)
    assert p.residency(a)["dropped_for_recompute"]
    with pytest.raises(RecipeFailed, match="the recipe failed on purpose"):
        p.acquire(a, "read")
    st = p.stats()
    assert st["rebuild_failures"] == 1 and st["rebuilds"] == 0, st
    assert p.residency(a)["dropped_for_recompute"] and p.residency(a)["recomputable"]
    assert np.array_equal(device_bytes(p, a), derived(src))  # asked again: rebuilt
    assert len(r.calls) == 1 and p.stats()["rebuilds"] == 1
    assert p.validate()
    del keep
    p.close()


def test_a_view_that_outlives_the_recipe_fails_the_rebuild():
    p = make_pool()
    x, a, src = make_pair(p)
    kept, bufs = [], []

    def leaky_once(call):
        out = call.out.numpy()
        out[:] = derived(call.inputs[0].numpy())
        bufs.append(call.out)
        if not kept:
            kept.append(out)  # still alive when the call returns

    p.set_recompute(a, leaky_once, inputs=[x], cost_seconds=0.0)
    keep = push_out(p)
    with pytest.raises(BufferError, match="outlived the call"):
        p.acquire_host(a, "read")
    assert p.residency(a)["dropped_for_recompute"]
    assert p.stats()["rebuild_failures"] == 1
    assert np.array_equal(host_bytes(p, a), derived(src))  # asked again: rebuilt
    assert p.stats()["rebuilds"] == 1
    buf = bufs[-1]  # a buffer kept past its call gives no new view
    assert not buf.open
    with pytest.raises(BufferError, match="no longer reachable"):
        memoryview(buf)
    with pytest.raises(BufferError, match="no longer reachable"):
        buf.numpy()
    kept.clear()
    del keep
    p.close()


def test_a_write_ends_the_recipe():
    p = make_pool()
    x, a, src = make_pair(p)
    r = Recipe()
    p.set_recompute(a, r, inputs=[x], cost_seconds=1e-9)
    with p.acquire(a, "read_write") as d:
        d.numpy()[:] = 9
    st = p.stats()
    assert st["recipes"] == 0 and st["recipes_ended"] == 1, st
    assert not p.residency(a)["recomputable"]
    keep = push_out(p)
    assert p.stats()["evicted_recompute"] == 0  # written back: the recipe no longer gives its bytes
    assert np.array_equal(host_bytes(p, a), np.full(T, 9, np.uint8))
    assert r.calls == []
    del keep
    p.close()


@pytest.mark.parametrize("how", ["free", "del"])
def test_freeing_the_input_rebuilds_the_dependent_first(how):
    p, x, a, src, r, keep = dropped_pair()
    if how == "free":
        p.free(x)
    else:
        del x  # the handle's end frees it: the recipe runs from the Tensor's destructor
    assert len(r.calls) == 1
    assert not p.residency(a)["recomputable"] and not p.residency(a)["dropped_for_recompute"]
    st = p.stats()
    assert st["recipes"] == 0 and st["recipes_ended"] == 1 and st["rebuilds"] == 1, st
    assert np.array_equal(host_bytes(p, a), derived(src))  # from x's bytes before the free
    assert p.validate()
    del keep
    p.close()


def test_clear_recompute_rebuilds_a_dropped_tensor_and_ends_the_recipe():
    p, x, a, src, r, keep = dropped_pair()
    p.clear_recompute(a)
    assert len(r.calls) == 1
    assert not p.residency(a)["recomputable"] and p.stats()["recipes"] == 0
    p.clear_recompute(a)  # no recipe: nothing happens
    assert np.array_equal(host_bytes(p, a), derived(src))
    del keep
    p.close()


def test_discard_ends_recipes_without_rebuilding_dead_bytes():
    p, x, a, src, r, keep = dropped_pair()
    p.discard(a)  # its own recipe: ended, nothing rebuilt
    assert r.calls == [] and p.stats()["recipes"] == 0
    assert p.residency(a)["discarded"] and not p.residency(a)["recomputable"]
    with pytest.raises(tierpool.LogicError, match="was discarded"):
        p.acquire_host(a, "read")
    b = p.allocate(T, preferred_tier=0, name="b")
    with p.acquire(b, "write_discard") as d:
        d.numpy()[:] = derived(src)
    p.set_recompute(b, r, inputs=[x], cost_seconds=1e-9)
    keep += push_out(p)
    assert p.residency(b)["dropped_for_recompute"]
    p.discard(x)  # an input: b is rebuilt from x's bytes first, then its recipe ends
    assert len(r.calls) == 1 and p.stats()["recipes"] == 0
    assert np.array_equal(host_bytes(p, b), derived(src))
    assert p.validate()
    del keep
    p.close()


def test_misuse_raises_the_mapped_exception():
    p = make_pool()
    x, a, src = make_pair(p)
    with pytest.raises(tierpool.LogicError, match="no recompute function"):
        p.set_recompute(a, None, inputs=[x])
    with pytest.raises(tierpool.LogicError, match="is the tensor itself"):
        p.set_recompute(a, Recipe(), inputs=[a])
    with pytest.raises(TypeError, match="not callable"):
        p.set_recompute(a, 42, inputs=[x])
    with pytest.raises(TypeError, match="each input is a Tensor"):
        p.set_recompute(a, Recipe(), inputs=[x.id])
    q = make_pool()
    y = q.allocate(T)
    with pytest.raises(tierpool.LogicError, match="tensor of another pool"):
        p.set_recompute(a, Recipe(), inputs=[y])
    y.free()
    q.close()
    p.set_recompute(a, Recipe(), inputs=[x])
    b = p.allocate(T)
    with pytest.raises(tierpool.LogicError, match="is an input of another tensor's recipe"):
        p.set_recompute(x, Recipe(), inputs=[b])
    with pytest.raises(tierpool.LogicError, match="has a recipe itself"):
        p.set_recompute(b, Recipe(), inputs=[a])
    assert p.stats()["recipes"] == 1
    p.close()


def test_recompute_off_never_drops():
    p = make_pool(actions={"recompute": False, "by_cost": True, "h2d_bytes_per_s": 25e9})
    x, a, src = make_pair(p)
    r = Recipe()
    p.set_recompute(a, r, inputs=[x], cost_seconds=0.0)
    keep = push_out(p)
    st = p.stats()
    assert st["evicted_recompute"] == 0 and st["evicted_moved"] >= 1, st
    assert not p.residency(a)["dropped_for_recompute"]
    assert np.array_equal(device_bytes(p, a), derived(src))
    assert r.calls == []
    del keep
    p.close()


def test_bad_action_options_raise_logic_error():
    with pytest.raises(tierpool.LogicError, match="actions.h2d_bytes_per_s"):
        make_pool(actions={"h2d_bytes_per_s": -1.0})
    with pytest.raises(tierpool.LogicError, match="actions.storage_read_bytes_per_s"):
        make_pool(actions={"storage_read_bytes_per_s": -5})
    with pytest.raises(tierpool.LogicError, match="unknown action option 'recompte'"):
        make_pool(actions={"recompte": False})
    p = make_pool(actions={"d2h_bytes_per_s": 1e9, "storage_write_bytes_per_s": 5e9, "by_cost": False})
    p.close()


def test_a_tensor_not_compressible_passes_over_the_compressed_tier():
    tiers = [
        tierpool.TierOptions(kind="device", capacity_bytes=64 * KiB, chunk_bytes=64 * KiB, name="dev"),
        {"kind": "host", "capacity_bytes": 64 * KiB, "chunk_bytes": 64 * KiB, "name": "host"},
        tierpool.TierOptions(kind="storage", capacity_bytes=4096 * KiB, name="packed",
                             storage={"engine": "compressed", "codec": "lz4"}),
    ]
    p = make_pool(tiers=tiers)
    ts = []
    for i in range(16):  # 256 KiB through 128 KiB of memory tiers
        t = p.allocate(T, name=f"t{i}", compressible=(i % 8 != 0))
        with p.acquire(t, "write_discard") as d:
            d.numpy()[:] = i
        ts.append(t)
    in_packed = [any(c["tier"] == 2 and c["valid"] for c in p.residency(t)["copies"]) for t in ts]
    assert not in_packed[0] and not in_packed[8], in_packed
    assert in_packed[1], in_packed  # the compressible ones of the same age went there
    for i, t in enumerate(ts):
        assert np.array_equal(host_bytes(p, t), np.full(T, i, np.uint8)), i
    st = p.stats()
    assert st["evicted_compressed"] > 0, st
    evictions = sum(t["evictions"] for t in st["tiers"])
    assert st["evicted_dropped"] + st["evicted_moved"] + st["evicted_compressed"] + st["evicted_recompute"] == evictions
    assert p.validate()
    p.close()


def test_closing_the_pool_lets_go_of_the_recipe_functions():
    p = make_pool()
    x, a, src = make_pair(p)

    class Closure(Recipe):
        pass

    fn = Closure()
    fn.pool = p  # a cycle through C++: pool -> recipe -> fn -> pool
    alive = weakref.ref(fn)
    p.set_recompute(a, fn, inputs=[x])
    del fn
    gc.collect()
    assert alive() is not None
    del x, a
    p.close()
    gc.collect()
    assert alive() is None


def test_threads_asking_for_a_dropped_tensor_rebuild_it_once():
    p, x, a, src, r, keep = dropped_pair()
    results, errors = [], []
    start = threading.Barrier(4)

    def reader():
        try:
            start.wait()
            results.append(np.array_equal(host_bytes(p, a), derived(src)))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == [True] * 4
    assert len(r.calls) == 1 and p.stats()["rebuilds"] == 1
    del keep
    p.close()

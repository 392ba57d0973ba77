# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Lease views (buffer protocol, numpy, DLPack): a release waits for the last view, a live
view pins its tensor, and the pool says so (summary, stats, OutOfMemory, close)."""

import gc
import threading

import numpy as np
import pytest

import tierpool
from conftest import KiB, make_pool


def pattern(n, seed):
    return ((np.arange(n, dtype=np.uint64) * 131 + seed) % 251).astype(np.uint8)


def fill(pool, t, seed):
    with pool.acquire_host(t, "write_discard") as lease:
        np.asarray(lease)[:] = pattern(t.nbytes, seed)


def check(pool, t, seed):
    with pool.acquire_host(t, "read") as lease:
        assert np.array_equal(np.asarray(lease), pattern(t.nbytes, seed)), t.name


def test_a_release_waits_for_the_last_view(pool):
    t = pool.allocate(4 * KiB, name="kept")
    fill(pool, t, 1)
    with pool.acquire(t, "read") as lease:
        a = np.from_dlpack(lease)  # a device lease on sim: the view waits for the copy-in
        m = memoryview(lease)
    # The block ended: the lease is released for the program, but its bytes stay put.
    assert not lease.active and lease.release_pending and lease.exports == 2
    assert pool.residency(t)["leases"] == 1
    with pytest.raises(BufferError, match="released.*view"):
        memoryview(lease)  # no new view of a released lease
    assert np.array_equal(a, pattern(4 * KiB, 1)) and m[7] == pattern(4 * KiB, 1)[7]
    pins = pool.stats()["python_views"]
    assert pins["leases"] == 1 and pins["bytes"] == 4 * KiB
    assert pins["pins"][0]["name"] == "kept" and pins["pins"][0]["released"] and pins["pins"][0]["views"] == 2
    assert "pinned by Python views: 1 lease(s), 4096 bytes: 'kept'" in pool.summary()
    m.release()
    assert lease.release_pending and pool.residency(t)["leases"] == 1
    del a  # the last view: the lease ends now
    assert not lease.release_pending and lease.exports == 0
    assert pool.residency(t)["leases"] == 0
    assert pool.stats()["python_views"] == {"leases": 0, "bytes": 0, "pins": []}
    assert "pinned by Python views" not in pool.summary()
    with pytest.raises(BufferError, match="released"):
        memoryview(lease)
    assert pool.validate()


def test_a_tensor_block_ending_under_a_view_frees_it_when_the_view_dies(pool):
    with pool.allocate(8 * KiB, name="scoped") as t:
        fill(pool, t, 5)
        with pool.acquire_host(t, "read") as lease:
            view = lease.numpy()
    assert not t.valid  # the handle is gone; the tensor lives until its lease ends
    assert np.array_equal(view, pattern(8 * KiB, 5))
    assert pool.stats()["python_views"]["leases"] == 1
    del view
    assert pool.stats()["python_views"]["leases"] == 0
    assert pool.validate()
    for tier in pool.stats()["tiers"]:  # the tensor was freed once its lease ended
        assert tier["used_bytes"]["current"] == 0 and tier["used_bytes"]["freed"] == tier["used_bytes"]["allocated"]
    pool.close()  # nothing is left leased


def test_a_view_in_a_reference_cycle_pins_until_the_collector_runs():
    p = make_pool(device_bytes=64 * KiB)
    gc.disable()
    try:
        big = p.allocate(48 * KiB, name="cycled")
        fill(p, big, 2)
        lease = p.acquire(big, "read")
        holder = {"view": np.from_dlpack(lease)}
        holder["self"] = holder  # a cycle: only the cycle collector frees it
        lease.release()
        del holder, lease
        other = p.allocate(32 * KiB, name="other")
        # The pinned 48 KiB leave no room for 32 KiB on the 64 KiB device tier.
        with pytest.raises(tierpool.OutOfMemory) as err:
            p.acquire(other, "write_discard")
        e = err.value
        assert e.cause == "pinned" and e.python_view_bytes == 48 * KiB
        assert "Python views" in str(e) and "'cycled'" in str(e) and "gc.collect()" in str(e)
        gc.collect()  # the cycle dies, the view with it, the lease with that
        assert p.stats()["python_views"]["leases"] == 0
        with p.acquire(other, "write_discard"):
            pass
        check(p, big, 2)
        assert p.validate()
    finally:
        gc.enable()
    p.close()


def test_close_names_the_leases_views_hold():
    p = make_pool()
    t = p.allocate(4 * KiB, name="held")
    with p.acquire_host(t, "read_write") as lease:
        view = np.asarray(lease)
    with pytest.raises(tierpool.LogicError, match="Python views pin 1 lease.*'held'"):
        p.close()
    with pytest.raises(tierpool.LogicError, match="Python views pin 1 lease.*'held'"):
        with p:  # the end of a with block says the same
            pass
    del view
    p.close()


def test_torch_sees_the_bytes_and_keeps_them_alive(pool):
    torch = pytest.importorskip("torch")
    t = pool.allocate(4 * KiB, name="torch")
    fill(pool, t, 3)
    with pool.acquire(t, "read_write") as lease:
        x = torch.from_dlpack(lease)
    assert lease.release_pending
    assert torch.equal(x, torch.from_numpy(pattern(4 * KiB, 3)))
    x[0] = 99  # writes go to the pool's bytes (read_write)
    del x
    gc.collect()
    assert pool.residency(t)["leases"] == 0
    with pool.acquire_host(t, "read") as lease:
        assert np.asarray(lease)[0] == 99


def test_dlpack_stream_keyword(pool):
    t = pool.allocate(4 * KiB)
    with pool.acquire_host(t, "write_discard") as lease:
        cap = lease.__dlpack__(stream=None)
        del cap
        with pytest.raises(ValueError, match="host memory has no stream"):
            lease.__dlpack__(stream=5)
        np.from_dlpack(lease)  # numpy passes the keyword its way; it must be accepted


def test_views_from_many_threads_keep_every_byte():
    # More threads than cores, each writing and checking its own tensors through views
    # while the others evict them: the GIL is released around acquire, so they interleave.
    p = make_pool(device_bytes=64 * KiB, host_bytes=4096 * KiB)
    n, threads, rounds = 8 * KiB, 8, 40
    errors = []

    def work(k):
        try:
            mine = [p.allocate(n, name=f"t{k}.{i}") for i in range(3)]
            for i, t in enumerate(mine):
                fill(p, t, k * 10 + i)
            for r in range(rounds):
                t = mine[r % 3]
                seed = k * 10 + (r % 3)
                with p.acquire(t, "read_write") as lease:
                    v = np.from_dlpack(lease)
                    if not np.array_equal(v, pattern(n, seed)):
                        errors.append(f"{t.name} round {r}: bytes differ")
                    del v
            for t in mine:
                t.free()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    assert p.validate()
    st = p.stats()
    assert st["python_views"]["leases"] == 0
    p.close()

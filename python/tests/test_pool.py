# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""The pool from Python: bytes across eviction, views, context managers, figures."""

import json

import numpy as np
import pytest

import tierpool
from conftest import KiB, make_pool


def pattern(n, seed):
    return ((np.arange(n, dtype=np.uint64) * 131 + seed) % 251).astype(np.uint8)


def test_bytes_survive_eviction_and_come_back(pool):
    n = 16 * KiB
    t = pool.allocate(n, name="t")
    with pool.acquire_host(t, "write_discard") as lease:
        view = np.asarray(lease)
        view[:] = pattern(n, 1)
        del view
    # Into the device, overwritten there, then pushed out by others.
    with pool.acquire(t, "read_write") as lease:
        pool.synchronize(lease.stream)
        view = np.asarray(lease)
        assert np.array_equal(view, pattern(n, 1))
        view[:] = pattern(n, 2)
        del view
    fillers = [pool.allocate(n, name=f"f{i}") for i in range(4)]
    for f in fillers:
        with pool.acquire(f, "write_discard"):
            pass
    assert not pool.residency(t)["copies"][0]["valid"] or pool.residency(t)["home"] != 0
    assert pool.stats()["tiers"][0]["evictions"] > 0
    with pool.acquire(t, "read") as lease:
        pool.synchronize(lease.stream)
        view = np.asarray(lease)
        assert not view.flags.writeable  # a read lease is read-only
        assert np.array_equal(view, pattern(n, 2))  # every byte
        del view
    with pool.acquire_host(t, "read") as lease:
        assert bytes(memoryview(lease)) == pattern(n, 2).tobytes()
    assert pool.validate()


def test_buffer_protocol_is_zero_copy(pool):
    t = pool.allocate(4 * KiB)
    with pool.acquire_host(t, "write_discard") as lease:
        a = np.asarray(lease)
        b = np.asarray(lease)
        assert a.dtype == np.uint8 and a.shape == (4 * KiB,)
        assert a.ctypes.data == lease.data_ptr == b.ctypes.data
        a[:] = 9
        assert int(b.sum()) == 9 * 4 * KiB
        m = memoryview(lease)
        assert m.nbytes == 4 * KiB and not m.readonly
        m[0] = 1
        assert a[0] == 1
        assert lease.exports == 3
        m.release()
        del a, b
        assert lease.exports == 0


def test_dlpack_is_zero_copy(pool):
    t = pool.allocate(4 * KiB)
    with pool.acquire_host(t, "write_discard") as lease:
        assert lease.__dlpack_device__() == (1, 0)  # kDLCPU
        a = np.from_dlpack(lease)
        assert a.ctypes.data == lease.data_ptr
        if a.flags.writeable:
            a[:] = 3
        else:  # numpy < 2 (Debian's 1.24, used with Debian's torch) marks DLPack arrays read-only
            np.asarray(lease)[:] = 3
        b = lease.numpy()
        assert b.ctypes.data == lease.data_ptr and int(b[100]) == 3 and int(a[100]) == 3
        del a, b
        assert lease.exports == 0
    with pool.acquire(t, "read") as lease:  # a device lease on sim is host memory too
        pool.synchronize(lease.stream)
        assert lease.__dlpack_device__() == (1, 0)
        a = np.from_dlpack(lease)
        assert a.ctypes.data == lease.data_ptr and int(a.sum()) == 3 * 4 * KiB
        del a


def test_phantom_memory_has_no_views():
    p = make_pool(sim_memory="phantom")
    t = p.allocate(4 * KiB)
    with p.acquire_host(t, "write_discard") as lease:
        with pytest.raises(BufferError, match="phantom"):
            memoryview(lease)
    p.close()


def test_context_managers_release_free_and_close():
    with make_pool() as p:
        with p.allocate(8 * KiB, name="ctx") as t:
            assert t.nbytes == 8 * KiB and t.name == "ctx" and t.valid
            with p.acquire_host(t, "write_discard") as lease:
                assert lease.active and lease.nbytes == 8 * KiB and lease.access == "write_discard"
            assert not lease.active
            assert p.stats()["tensors"] == 1
        assert not t.valid
        assert p.stats()["tensors"] == 0
    with pytest.raises(tierpool.LogicError):
        p.allocate(16)


def test_stats_and_summary_name_the_tier_policy():
    p = make_pool(
        tiers=[
            {"kind": "device", "capacity_bytes": 64 * KiB, "policy": "s3fifo", "name": "dev"},
            {"kind": "host", "capacity_bytes": 1024 * KiB, "name": "far"},
        ]
    )
    st = p.stats()
    assert [t["name"] for t in st["tiers"]] == ["dev", "far"]
    assert st["tiers"][0]["policy"].startswith("s3fifo")
    assert st["tiers"][1]["policy"].startswith("lru")
    assert st["tiers"][0]["capacity_bytes"] == 64 * KiB
    assert "s3fifo" in p.summary()
    assert json.loads(p.summary_json())["tiers"][0]["kind"] == "device"
    assert "tensors" in json.loads(p.snapshot_json())
    p.close()


def test_fits_streams_capacity_trim(pool):
    f = pool.fits(4 * KiB)
    assert isinstance(f, tierpool.FitReport)
    assert f.tier == "dev" and f.fits_now == 16 and f.limit == "capacity"
    s = pool.create_stream()
    t = pool.allocate(4 * KiB)
    with pool.acquire(t, "write_discard", stream=s) as lease:
        assert lease.stream == s
    pool.synchronize(s)
    pool.destroy_stream(s)
    r = pool.set_capacity(0, 32 * KiB)
    assert r["capacity_bytes"] == 32 * KiB and r["reached"]
    assert pool.stats()["tiers"][0]["capacity_bytes"] == 32 * KiB
    pool.demote(t, 1)
    assert pool.residency(t)["home"] == 1
    pool.prefetch(t)
    assert isinstance(pool.trim(), int)
    pool.reset_peak_stats()
    assert pool.validate()


def test_events_order_and_record_stream(pool):
    a = pool.create_stream()
    b = pool.create_stream()
    n = 16 * KiB
    t = pool.allocate(n, name="t")
    with pool.acquire(t, "write_discard", stream=a) as lease:
        pool.synchronize(a)
        view = np.asarray(lease)
        view[:] = pattern(n, 3)
        del view
        pool.record_stream(lease, b)  # also used on b: not reused before b's work is done
    pool.order(t, a, b)  # b waits for t's use on a
    with pool.acquire(t, "read", stream=b) as lease:
        pool.synchronize(b)
        assert np.array_equal(np.asarray(lease), pattern(n, 3))
    e = pool.create_event()
    assert isinstance(e, tierpool.Event)
    assert e.query()  # never recorded: complete
    e.record(a)
    e.wait(b)
    e.synchronize()
    assert e.query()
    with pytest.raises(tierpool.LogicError, match="unknown stream|not made by|stream"):
        e.record(987654)
    with pytest.raises(tierpool.LogicError):
        pool.order(t, a, 987654)
    assert "Event" in tierpool.__all__ and tierpool.Event.record.__doc__
    assert pool.validate()


def test_wrap_native_stream_refuses_what_it_cannot_use(pool):
    with pytest.raises(tierpool.LogicError, match="null"):
        pool.wrap_native_stream(0)
    own = pool.create_stream()
    with pytest.raises(tierpool.LogicError, match="own|create_stream"):
        pool.wrap_native_stream(own)  # one of the pool's own streams
    with pytest.raises(tierpool.LogicError):
        pool.wrap_native_stream(0xDEAD0000)  # not a stream of the backend
    pool.destroy_stream(own)


def test_compact_coalesces_free_space_and_keeps_bytes():
    p = make_pool(device_bytes=64 * KiB)
    n = 8 * KiB
    ts = []
    for i in range(8):  # fills the device tier
        t = p.allocate(n, name=f"c{i}", preferred_tier=0)
        with p.acquire_host(t, "write_discard") as lease:
            np.asarray(lease)[:] = pattern(n, i)
        with p.acquire(t, "read"):
            pass
        ts.append(t)
    for t in ts[::2]:  # every other one: 32 KiB free in 8 KiB holes
        p.free(t)
    r = p.compact(0)
    dev = r["tiers"][0]
    assert dev["largest_free_after"] > dev["largest_free_before"], r
    assert dev["fragmentation_after"] < dev["fragmentation_before"], r
    assert r["moved_tensors"] >= 1 and r["moved_bytes"] == r["moved_tensors"] * n
    for i, t in enumerate(ts):
        if i % 2 == 1:
            with p.acquire_host(t, "read") as lease:
                assert np.array_equal(np.asarray(lease), pattern(n, i)), i
    with pytest.raises(tierpool.LogicError):
        p.compact(9)
    assert p.validate()
    p.close()


def _fragmented_device_only(**kwargs):
    """A device-only pool of 64 KiB, every other 8 KiB tensor freed: 32 KiB free in 8 KiB holes."""
    n = 8 * KiB
    tiers = [tierpool.TierOptions(kind="device", capacity_bytes=64 * KiB, chunk_bytes=64 * KiB, name="dev")]
    p = make_pool(tiers=tiers, **kwargs)
    ts = []
    for i in range(8):
        t = p.allocate(n, name=f"f{i}", preferred_tier=0)
        with p.acquire(t, "write_discard") as lease:
            np.asarray(lease)[:] = pattern(n, i)
        ts.append(t)
    for t in ts[::2]:
        p.free(t)
    return p, {i: t for i, t in enumerate(ts) if i % 2 == 1}


def _holds_every_byte(p, kept):
    for i, t in kept.items():
        with p.acquire(t, "read") as lease:
            assert np.array_equal(np.asarray(lease), pattern(8 * KiB, i)), i


def test_compaction_options_decide_whether_a_fragmented_request_fails():
    # No compaction at all: the request fails for fragmentation, and nothing moved.
    p, kept = _fragmented_device_only(compact_before_failing=False)
    with pytest.raises(tierpool.OutOfMemory) as e:
        p.allocate(16 * KiB, name="big", preferred_tier=0)
    assert e.value.cause == "fragmentation", str(e.value)
    assert p.stats()["tiers"][0]["compactions"] == 0
    _holds_every_byte(p, kept)
    assert p.validate()
    p.close()
    # The defaults (compaction as the last resort) and compaction before evicting place it.
    for kwargs in ({}, {"compaction": True}):
        p, kept = _fragmented_device_only(**kwargs)
        big = p.allocate(16 * KiB, name="big", preferred_tier=0)
        assert p.stats()["tiers"][0]["compactions"] == 1, kwargs
        assert p.stats()["tiers"][0]["waits_to_compact"] == 0, kwargs  # the room was free, not vacated
        with p.acquire(big, "write_discard") as lease:
            np.asarray(lease)[:] = pattern(16 * KiB, 99)
        _holds_every_byte(p, kept)
        assert p.validate()
        p.close()


def test_window_eviction_share_is_checked():
    with pytest.raises(tierpool.LogicError, match="window_eviction_share"):
        make_pool(window_eviction_share=-1)
    p = make_pool(window_eviction_share=0)  # off
    assert p.validate()
    p.close()


def test_acquire_all_returns_every_lease_in_order_or_none():
    p = make_pool(device_bytes=64 * KiB, host_bytes=1024 * KiB)
    sizes = [8 * KiB, 32 * KiB, 16 * KiB]
    ts = []
    for i, n in enumerate(sizes):
        t = p.allocate(n, name=f"t{i}", preferred_tier=1)
        with p.acquire_host(t, "write_discard") as lease:
            np.asarray(lease)[:] = pattern(n, i)
        ts.append(t)
    leases = p.acquire_all([ts[0], (ts[1], "read_write"), (ts[2], "read")])
    assert [lease.nbytes for lease in leases] == sizes
    assert p.stats()["tiers"][0]["pinned_bytes"] == sum(sizes)
    for i, lease in enumerate(leases):
        p.synchronize(lease.stream)
        assert np.array_equal(np.asarray(lease), pattern(sizes[i], i)), i
    for lease in leases:
        lease.release()
    assert p.stats()["tiers"][0]["pinned_bytes"] == 0
    # Together larger than the device tier: OutOfMemory, and nothing stays leased.
    big = p.allocate(40 * KiB, name="big", preferred_tier=1)
    with pytest.raises(tierpool.OutOfMemory):
        p.acquire_all([ts[1], big])
    assert p.stats()["tiers"][0]["pinned_bytes"] == 0
    with pytest.raises(tierpool.LogicError, match="a Tensor or a \\(Tensor, access\\) pair"):
        p.acquire_all([(ts[0], "read", 1)])
    with pytest.raises(tierpool.LogicError):
        p.acquire_all([(ts[0], "sideways")])
    with pytest.raises(TypeError, match="a Tensor or a \\(Tensor, access\\) pair"):
        p.acquire_all([42])
    assert p.acquire_all([]) == []
    for i, t in enumerate(ts):
        with p.acquire_host(t, "read") as lease:
            assert np.array_equal(np.asarray(lease), pattern(sizes[i], i)), i
    assert p.validate()
    p.close()


def test_discard_drops_dead_bytes_and_refuses_reads_until_rewritten():
    p = make_pool(device_bytes=64 * KiB, host_bytes=1024 * KiB)
    n = 16 * KiB
    t = p.allocate(n, name="t", preferred_tier=0)
    with p.acquire(t, "write_discard") as lease:
        np.asarray(lease)[:] = pattern(n, 1)
    p.discard(t)
    assert p.residency(t)["discarded"]
    with pytest.raises(tierpool.LogicError, match="was discarded \\(pool::discard\\)"):
        p.acquire(t, "read")
    with pytest.raises(tierpool.LogicError, match="was discarded"):
        p.acquire_host(t, "read_write")
    others = [p.allocate(n, name=f"o{i}") for i in range(4)]
    for i, o in enumerate(others):
        with p.acquire(o, "write_discard") as lease:
            np.asarray(lease)[:] = pattern(n, 10 + i)
    st = p.stats()
    assert st["evicted_discarded"] == 1 and st["evicted_discarded_bytes"] == n, st
    assert st["bytes_d2h"] == 0, "the dead bytes were written back"
    with p.acquire_host(t, "write_discard") as lease:
        np.asarray(lease)[:] = pattern(n, 2)
    assert not p.residency(t)["discarded"]
    with p.acquire_host(t, "read") as lease:
        assert np.array_equal(np.asarray(lease), pattern(n, 2))
    for i, o in enumerate(others):
        with p.acquire_host(o, "read") as lease:
            assert np.array_equal(np.asarray(lease), pattern(n, 10 + i)), i
    with p.acquire(t, "read"):
        with pytest.raises(tierpool.LogicError, match="live lease"):
            p.discard(t)
    assert p.validate()
    p.close()


@pytest.mark.parametrize("clock", ["virtual", "virtual-hidden"])
def test_the_planner_learns_the_compute_the_program_tells_of(clock):
    # A loop of 8 accesses, each after a kernel of its own length (note_compute: 1..8 us on
    # the simulated stream), the host waiting at each iteration's end. Where the device times
    # are hidden, as on a GPU, the pool times the kernels with events once they ran; either
    # way the planner learns 36 us of compute a period, and the bytes stay.
    p = make_pool(256 * KiB, prefetch="plan", sim_clock=clock)
    s = p.create_stream()
    n = 48 * KiB  # 8 x 48 KiB: more than the device tier
    ts = [p.allocate(n) for _ in range(8)]
    for k, t in enumerate(ts):
        with p.acquire_host(t, "write_discard") as lease:
            np.asarray(lease)[:] = pattern(n, k)
    for _ in range(8):
        for k, t in enumerate(ts):
            p.note_compute((k + 1) * 1000, s)
            with p.acquire(t, "read", stream=s):
                pass
        p.synchronize(s)
    st = p.stats()
    assert st["planner_state"] == "planned" and st["planner_period"] == 8
    assert st["planner_busy_skips"] == 0  # one thread: no step ever meets another
    assert st["planner_period_compute_seconds"] == pytest.approx(36e-6, abs=1e-12)
    if clock == "virtual-hidden":
        assert st["planner_timed_accesses"] >= 8 * 7
        assert "planner compute: 0.036 ms a period (measured with events at" in p.summary()
    else:
        assert st["planner_timed_accesses"] == 0
    for k, t in enumerate(ts):
        with p.acquire_host(t, "read") as lease:
            assert bytes(memoryview(lease)) == pattern(n, k).tobytes(), k
    assert p.validate()
    p.close()


def test_an_unknown_sim_clock_is_refused():
    with pytest.raises(tierpool.LogicError, match="virtual-hidden"):
        make_pool(sim_clock="gpu")

# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Python functions the pool calls: low-memory callbacks (on the requesting thread) and
enqueue_host (on a backend thread, in stream order); and typed numpy views of a lease."""

import threading

import numpy as np
import pytest

import tierpool
from conftest import KiB, make_pool


def test_a_low_memory_callback_makes_room_and_the_request_succeeds():
    p = make_pool(device_bytes=64 * KiB)
    big = p.allocate(48 * KiB, name="big")
    other = p.allocate(32 * KiB, name="other")
    held = [p.acquire(big, "write_discard")]  # pins 48 of the 64 KiB
    seen = []

    def make_room(event):
        seen.append(event)
        while held:
            held.pop().release()  # the request starts over once after this

    cb = p.add_low_memory_callback(make_room)
    with p.acquire(other, "write_discard"):
        pass
    assert len(seen) == 1
    e = seen[0]
    assert e["tier"] == 0 and e["tier_name"] == "dev" and e["bytes_needed"] == 32 * KiB
    assert e["capacity_bytes"] == 64 * KiB and e["pinned_bytes"] == 48 * KiB
    p.remove_low_memory_callback(cb)
    lease = p.acquire(big, "read")
    with pytest.raises(tierpool.OutOfMemory, match="pinned"):  # no callback any more
        p.acquire(other, "read")
    assert len(seen) == 1
    lease.release()
    assert p.validate()
    p.close()


def test_an_exception_from_a_low_memory_callback_leaves_the_request():
    p = make_pool(device_bytes=64 * KiB)
    big = p.allocate(48 * KiB)
    other = p.allocate(32 * KiB)
    lease = p.acquire(big, "write_discard")

    def fail(event):
        raise KeyError("no cache to drop")

    p.add_low_memory_callback(fail)
    with pytest.raises(KeyError, match="no cache to drop"):
        p.acquire(other, "write_discard")
    lease.release()
    with p.acquire(other, "write_discard"):  # nothing changed: it works once room is there
        pass
    assert p.validate()
    p.close()


def test_enqueue_host_runs_in_stream_order_and_its_exception_comes_back():
    p = make_pool()
    s = p.create_stream()
    t = p.allocate(4 * KiB)
    with p.acquire_host(t, "write_discard") as h:
        h.numpy()[:] = 7
    order = []
    with p.acquire(t, "read", stream=s) as lease:
        view = lease.numpy(dtype=np.uint32)

        def look():  # after the copy-in queued before it
            order.append(("look", int(view.sum()), threading.get_ident()))

        p.enqueue_host(s, look)
        p.enqueue_host(s, lambda: order.append(("second",)))
        p.synchronize(s)
        del view
    assert order[0][0] == "look" and order[0][1] == 0x07070707 * 1024 and order[1] == ("second",)

    def boom():
        raise ValueError("from the host function")

    p.enqueue_host(s, boom)
    p.enqueue_host(s, lambda: order.append(("after the failure",)))
    with pytest.raises(ValueError, match="from the host function"):
        p.synchronize(s)
    assert order[-1] == ("after the failure",)  # later work ran anyway
    p.synchronize(s)  # reported once
    with pytest.raises(tierpool.LogicError, match="stream"):
        p.enqueue_host(12345, lambda: None)
    p.destroy_stream(s)
    assert p.validate()
    p.close()


def test_typed_views_of_a_lease():
    p = make_pool()
    t = p.allocate(4 * KiB)
    with p.acquire_host(t, "write_discard") as lease:
        f = lease.numpy(dtype=np.float32, shape=(4, 256))
        assert f.shape == (4, 256) and f.dtype == np.float32
        f[:] = np.arange(1024, dtype=np.float32).reshape(4, 256)
        assert lease.numpy(dtype="float64").shape == (512,)
        head = lease.numpy(dtype=np.int16, shape=8)
        assert head.shape == (8,)
        with pytest.raises(ValueError, match="need 8192 bytes; the lease has 4096"):
            lease.numpy(dtype=np.float64, shape=(1024,))
        del f, head
    with p.acquire_host(t, "read") as lease:
        assert np.array_equal(lease.numpy(dtype=np.float32)[:5], np.arange(5, dtype=np.float32))
    p.close()


def test_a_callback_that_removes_itself_runs_to_its_end_and_not_again():
    # The callback's only reference is the pool's: removing it from inside its own call
    # must not free it under the running call (Note [Python callables the pool calls]).
    p = make_pool(device_bytes=64 * KiB)
    big = p.allocate(48 * KiB)
    other = p.allocate(32 * KiB)
    held = [p.acquire(big, "write_discard")]
    calls = []
    ids = []

    def once(event, calls=calls, held=held, ids=ids, p=p):
        p.remove_low_memory_callback(ids[0])
        calls.append(event["bytes_needed"])
        while held:
            held.pop().release()

    ids.append(p.add_low_memory_callback(once))
    del once  # the pool's reference is the only one left
    with p.acquire(other, "write_discard"):
        pass
    assert calls == [32 * KiB]
    lease = p.acquire(big, "read")
    with pytest.raises(tierpool.OutOfMemory):
        p.acquire(other, "read")
    assert calls == [32 * KiB]  # removed: not called again
    lease.release()
    assert p.validate()
    p.close()

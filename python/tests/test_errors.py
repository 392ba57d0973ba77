# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""The C++ exceptions arrive as tierpool's typed Python exceptions, with their figures."""

import pytest

import tierpool
from conftest import KiB, make_pool


def test_hierarchy():
    assert issubclass(tierpool.LogicError, tierpool.Error)
    assert issubclass(tierpool.TraceError, tierpool.LogicError)
    assert issubclass(tierpool.BackendError, tierpool.Error)
    assert issubclass(tierpool.DeviceLost, tierpool.BackendError)
    assert issubclass(tierpool.OutOfMemory, tierpool.Error)
    assert issubclass(tierpool.OutOfMemory, MemoryError)
    assert issubclass(tierpool.QuotaExceeded, tierpool.OutOfMemory)


def test_double_free(pool):
    t = pool.allocate(KiB)
    pool.free(t)
    with pytest.raises(tierpool.LogicError, match="freed"):
        pool.free(t)
    with pytest.raises(tierpool.LogicError, match="freed"):
        t.free()


def test_free_while_leased(pool):
    t = pool.allocate(KiB)
    with pool.acquire_host(t, "read"):
        with pytest.raises(tierpool.LogicError, match="lease"):
            pool.free(t)


def test_unknown_policy():
    with pytest.raises(tierpool.LogicError, match="nope") as info:
        make_pool(policy="nope")
    assert "lru" in str(info.value)  # the message lists the known ones


def test_bad_options():
    with pytest.raises(tierpool.LogicError, match="tier kind"):
        make_pool(tiers=[{"kind": "vram"}])
    with pytest.raises(tierpool.LogicError, match="access"):
        p = make_pool()
        p.acquire_host(p.allocate(16), "write")


def test_out_of_memory_when_all_is_pinned(pool):
    a = pool.allocate(32 * KiB, preferred_tier=0)
    b = pool.allocate(32 * KiB, preferred_tier=0)
    c = pool.allocate(32 * KiB, preferred_tier=1)
    la = pool.acquire(a, "write_discard")
    lb = pool.acquire(b, "write_discard")
    with pytest.raises(tierpool.OutOfMemory) as info:
        pool.acquire(c, "read")
    e = info.value
    assert not isinstance(e, tierpool.QuotaExceeded)
    assert e.cause == "pinned"
    assert e.tier == 0 and e.requested == 32 * KiB
    assert e.figures["capacity_bytes"] == 64 * KiB and e.figures["pinned_bytes"] == 64 * KiB
    assert "pinned" in str(e)
    la.release()
    lb.release()
    with pool.acquire(c, "read"):
        pass


def test_quota_exceeded():
    p = make_pool(tenant_quotas={7: 8 * KiB})
    t = p.allocate(8 * KiB, tenant=7)
    with pytest.raises(tierpool.QuotaExceeded) as info:
        p.allocate(KiB, tenant=7)
    e = info.value
    assert isinstance(e, tierpool.OutOfMemory)
    assert e.cause == "quota" and e.tenant == 7 and e.quota == 8 * KiB and e.live == 8 * KiB
    assert e.requested == KiB
    assert "quota" in str(e)
    p.free(t)
    p.allocate(KiB, tenant=7).free()
    p.close()


def test_close_with_live_leases(pool):
    t = pool.allocate(KiB)
    lease = pool.acquire_host(t, "read")
    with pytest.raises(tierpool.LogicError, match="lease"):
        pool.close()
    lease.release()


def test_trace_error(tmp_path):
    bad = tmp_path / "bad.tpt"
    bad.write_text("this is not a trace\n")
    with pytest.raises(tierpool.TraceError):
        tierpool.replay(str(bad), ["lru"], "50%")


def test_pool_exit_does_not_hide_the_exception():
    p = make_pool()
    t = p.allocate(KiB)
    with pytest.raises(KeyError):
        with p:
            lease = p.acquire_host(t, "read")
            raise KeyError("mine")
    lease.release()
    p.close()
    q = make_pool()
    u = q.allocate(KiB)
    with pytest.raises(tierpool.LogicError, match="lease"):
        with q:
            kept = q.acquire_host(u, "read")  # still alive when the block ends
    kept.release()
    q.close()


def test_backend_error_has_its_code():
    try:
        p = tierpool.Pool(backend="cuda", read_environment=False, publish=False)
    except tierpool.BackendError as e:
        assert not isinstance(e, tierpool.DeviceLost)
        assert e.code == "no_device" and "CUDA" in str(e)
    else:  # a machine with a GPU
        assert p.backend == "cuda"
        p.close()


def test_hard_share_refuses_with_cause_share():
    p = make_pool()
    p.set_tenant_share(3, 0, 16 * KiB)
    p.set_tenant(3, priority=1, hard_shares=True)
    t = p.allocate(32 * KiB, tenant=3)
    dev = {x["tenant"]: x for x in p.stats()["tiers"][0]["tenants"]}
    assert dev[3]["resident_bytes"] == 0 and dev[3]["hard_share"] and dev[3]["priority"] == 1, dev
    assert p.stats()["tiers"][0]["share_refusals"] >= 1
    with pytest.raises(tierpool.OutOfMemory) as info:
        p.acquire(t, "read")
    e = info.value
    assert e.cause == "share" and e.tier == 0 and e.requested == 32 * KiB
    assert "hard share of the tier is 16.0 KiB" in str(e)
    p.set_tenant(3, hard_shares=False)
    with p.acquire(t, "read"):
        pass
    p.free(t)
    p.close()

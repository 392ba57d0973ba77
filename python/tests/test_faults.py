# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Failure paths from Python, through the simulated device's fault injection: a failed copy
or allocation raises a typed BackendError, and nothing already stored is lost."""

import numpy as np
import pytest

import tierpool
from conftest import KiB, make_pool


def pattern(n, seed):
    return ((np.arange(n, dtype=np.uint64) * 131 + seed) % 251).astype(np.uint8)


def test_bad_fault_rules_are_refused():
    with pytest.raises(tierpool.LogicError, match="unknown sim fault kind 'cpy'.*copy"):
        make_pool(sim_faults=[{"kind": "cpy", "nth": 1}])
    with pytest.raises(tierpool.LogicError, match="unknown sim fault option 'when'"):
        make_pool(sim_faults=[{"kind": "copy", "when": 1}])


@pytest.mark.parametrize("nth", range(1, 13))
def test_a_failed_copy_loses_no_byte(nth):
    # 64 KiB of device, five 16 KiB tensors used round-robin: every round evicts and
    # copies in. The nth copy of the run fails; whatever raises, every tensor keeps its bytes.
    p = make_pool(device_bytes=64 * KiB, sim_faults=[{"kind": "copy", "nth": nth}])
    n = 16 * KiB
    ts = [p.allocate(n, name=f"t{i}") for i in range(5)]
    seeds = {}
    failures = 0
    for i, t in enumerate(ts):
        with p.acquire_host(t, "write_discard") as lease:
            np.asarray(lease)[:] = pattern(n, i)
        seeds[t.name] = i
    for r in range(10):
        t = ts[r % 5]
        try:
            with p.acquire(t, "read_write") as lease:
                p.synchronize(lease.stream)
                v = np.asarray(lease)
                assert np.array_equal(v, pattern(n, seeds[t.name])), f"{t.name} round {r}"
                v[:] = pattern(n, 100 + r)
                seeds[t.name] = 100 + r
                del v
        except tierpool.BackendError as e:
            failures += 1
            assert e.code == "injected_fault" and "injected" in str(e)
    assert failures <= 1
    p.synchronize()
    for t in ts:
        with p.acquire_host(t, "read") as lease:
            assert np.array_equal(np.asarray(lease), pattern(n, seeds[t.name])), t.name
    assert p.validate()
    p.close()


def test_a_failed_allocation_is_an_error_and_the_pool_goes_on():
    p = make_pool(sim_faults=[{"kind": "allocate", "nth": 1}])
    with pytest.raises((tierpool.BackendError, tierpool.OutOfMemory)):
        # The first backend allocation is the device tier's chunk: the pool is built
        # without it or refuses the tensor; either way the next tensor works.
        t = p.allocate(4 * KiB)
        with p.acquire(t, "write_discard"):
            pass
        raise tierpool.BackendError("no fault was seen")
    p.close()

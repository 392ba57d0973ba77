# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Fixtures: small pools on the simulated device with real memory, the environment ignored."""

import pytest

import tierpool

KiB = 1024


def make_pool(device_bytes=64 * KiB, host_bytes=1024 * KiB, **kwargs):
    """A two-tier sim pool (device, host) whose device tier is one chunk of `device_bytes`."""
    kwargs.setdefault("backend", "sim")
    kwargs.setdefault("sim_memory", "real")
    kwargs.setdefault("read_environment", False)
    kwargs.setdefault("publish", False)
    kwargs.setdefault("quiet", True)
    tiers = kwargs.pop("tiers", None) or [
        tierpool.TierOptions(kind="device", capacity_bytes=device_bytes, chunk_bytes=device_bytes, name="dev"),
        {"kind": "host", "capacity_bytes": host_bytes, "chunk_bytes": host_bytes, "name": "far"},
    ]
    return tierpool.Pool(tiers=tiers, **kwargs)


@pytest.fixture
def pool():
    p = make_pool()
    yield p
    p.close()

# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""A storage tier from Python: bytes through the file and back, options, typed errors."""

import numpy as np
import pytest

import tierpool
from conftest import KiB, make_pool


def pattern(n, seed):
    return ((np.arange(n, dtype=np.uint64) * 131 + seed) % 251).astype(np.uint8)


def storage_tiers(path, engine="pread"):
    return [
        tierpool.TierOptions(kind="device", capacity_bytes=64 * KiB, chunk_bytes=64 * KiB, name="dev"),
        {"kind": "host", "capacity_bytes": 64 * KiB, "chunk_bytes": 64 * KiB, "name": "host"},
        tierpool.TierOptions(
            kind="storage",
            capacity_bytes=4096 * KiB,
            name="disk",
            storage={"path": path, "engine": engine, "verify_writes": True},
        ),
    ]


@pytest.mark.parametrize("engine", ["pread", "automatic"])
def test_bytes_go_through_the_file_and_come_back(tmp_path, engine):
    p = make_pool(tiers=storage_tiers(tmp_path, engine))
    n = 32 * KiB
    ts = []
    for i in range(12):  # 384 KiB: six times device and host together
        t = p.allocate(n, name=f"t{i}")
        with p.acquire_host(t, "write_discard") as lease:
            np.asarray(lease)[:] = pattern(n, i)
        ts.append(t)
    for i, t in enumerate(ts):
        with p.acquire(t, "read") as lease:
            p.synchronize(lease.stream)
            assert np.array_equal(np.asarray(lease), pattern(n, i)), i
    disk = p.stats()["tiers"][2]
    assert disk["kind"] == "storage"
    assert disk["storage"]["bytes_written"] > 0 and disk["storage"]["bytes_read"] > 0, disk
    assert disk["storage"]["engine"] in ("pread", "io_uring")
    assert p.validate()
    p.close()


def test_options_round_trip_and_bad_names():
    t = tierpool.TierOptions(kind="storage", capacity_bytes=KiB, storage={"path": "/tmp", "direct": False})
    assert t.kind == "storage"
    assert t.storage["path"] == "/tmp" and t.storage["direct"] == "off" and t.storage["engine"] == "automatic"
    with pytest.raises(tierpool.LogicError, match="unknown storage engine 'spdk'"):
        tierpool.TierOptions(kind="storage", storage={"engine": "spdk"})
    with pytest.raises(tierpool.LogicError, match="unknown storage option 'size'"):
        tierpool.TierOptions(kind="storage", storage={"size": 1})


def test_a_missing_directory_fails_at_construction(tmp_path):
    with pytest.raises(tierpool.StorageError) as info:
        make_pool(tiers=storage_tiers(tmp_path / "nope" / "deeper"))
    e = info.value
    assert isinstance(e, tierpool.BackendError)
    assert e.failure == "missing_path" and e.code == "io_error"
    assert "nope" in str(e)


def test_a_compressed_tier_holds_activations_in_less_memory():
    n = 16 * 1024  # float32 values: 64 KiB a tensor
    tiers = storage_tiers("", "compressed")
    tiers[2].storage = {"engine": "compressed", "codec": "q8", "memory_bytes": 2048 * KiB}
    p = make_pool(tiers=tiers)
    rng = np.random.default_rng(3)
    acts, exact = [], []
    for i in range(8):
        a = np.maximum(rng.standard_normal(n).astype(np.float32), 0)
        t = p.allocate(4 * n, name=f"act{i}", lossy_compression=(i % 2 == 0))
        with p.acquire_host(t, "write_discard") as lease:
            np.asarray(lease).view(np.float32)[:] = a
        acts.append((t, a))
    for t, _ in acts:
        p.demote(t, 2)
    disk = p.stats()["tiers"][2]["storage"]
    assert disk["engine"] == "compressed" and disk["lossy_writes"] == 4, disk
    assert disk["packed_bytes"] * 2 < disk["logical_bytes"], disk
    for i, (t, a) in enumerate(acts):
        with p.acquire_host(t, "read") as lease:
            got = np.asarray(lease).view(np.float32).copy()
        if i % 2 == 0:
            assert np.max(np.abs(got - a)) <= np.max(a) / 254 * 1.001
        else:
            assert np.array_equal(got, a), i
    assert p.validate()
    p.close()

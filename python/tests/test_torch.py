# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""tierpool.torch: activation offload through saved_tensors_hooks, on a sim pool (CPU)."""

import gc
import sys

import pytest

torch = pytest.importorskip("torch")

import tierpool  # noqa: E402
import tierpool.torch as tpt  # noqa: E402
from conftest import KiB, make_pool  # noqa: E402

BATCH, WIDTH, LAYERS = 32, 64, 4  # each hidden activation: 32 * 64 * 4 bytes = 8 KiB


def mlp(seed=0):
    torch.manual_seed(seed)
    layers = []
    for _ in range(LAYERS):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(WIDTH, 1))
    return torch.nn.Sequential(*layers)


def train(steps, pool=None, min_bytes=4 * KiB, record=None, **kwargs):
    """Trains the MLP for `steps` SGD steps; returns the losses and the final gradients."""
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(1)
    losses, grads = [], []
    for _ in range(steps):
        x = torch.randn(BATCH, WIDTH, generator=gen)
        y = torch.randn(BATCH, 1, generator=gen)
        opt.zero_grad()
        if pool is None:
            loss = torch.nn.functional.mse_loss(model(x), y)
        else:
            with tpt.offload_activations(pool, min_bytes=min_bytes, **kwargs) as off:
                loss = torch.nn.functional.mse_loss(model(x), y)
            assert off.tensors > 0 and off.live == off.tensors  # in the pool until backward
            if record is not None:
                record.append((off, pool.stats()))
        loss.backward()
        if pool is not None:
            assert off.unpacks == off.tensors and off.live == 0
            assert pool.stats()["tensors"] == 0  # every pool tensor freed after backward
        opt.step()
        losses.append(loss.detach().clone())
        grads = [p.grad.detach().clone() for p in model.parameters()]
    return losses, grads


def bit_equal(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(-1).view(torch.uint8), b.view(-1).view(torch.uint8)) if a.numel() else a.shape == b.shape


def test_import_tierpool_does_not_import_torch():
    import subprocess

    code = "import sys, tierpool; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("prefetch", [False, True])
def test_mlp_training_is_bit_identical_and_the_pool_moves_bytes(prefetch):
    reference_losses, reference_grads = train(3)
    # The device tier (32 KiB) is smaller than one step's saved tensors (120 KiB).
    with make_pool(device_bytes=32 * KiB, host_bytes=4096 * KiB) as pool:
        record = []
        losses, grads = train(3, pool, record=record, prefetch=prefetch)
        stats = pool.stats()
        assert pool.validate()
    for a, b in zip(losses, reference_losses):
        assert bit_equal(a, b)
    for a, b in zip(grads, reference_grads):
        assert bit_equal(a, b)
    off, during = record[0]
    # Per step: each Linear saves its input (8 KiB) and, but for the first (its input needs
    # no gradient), its weight transposed (not contiguous; 16 KiB, the last one's 256 bytes
    # stay below min_bytes); each ReLU saves its output (8 KiB): 9 x 8 KiB + 3 x 16 KiB.
    assert off.tensors == 12 and off.kept == 3
    assert off.bytes == 9 * 8 * KiB + 3 * 16 * KiB == 122880
    assert during["tensors"] == off.tensors
    dev = stats["tiers"][0]
    assert dev["evictions"] > 0
    assert stats["bytes_d2h"] > 0 and stats["bytes_h2d"] > 0
    if prefetch:
        assert off.prefetches > 0
    print(f"\noffload: {off.tensors} tensors, {off.bytes} bytes per step, kept {off.kept}; "
          f"pool over 3 steps: evictions {dev['evictions']}, d2h {stats['bytes_d2h']}, h2d {stats['bytes_h2d']}")


def test_min_bytes_keeps_small_tensors_in_place():
    with make_pool() as pool:
        x = torch.randn(4, 4, requires_grad=True)  # 64 bytes
        with tpt.offload_activations(pool, min_bytes=1024) as off:
            y = (x * x).sum()
        assert off.tensors == 0 and off.kept > 0 and pool.stats()["tensors"] == 0
        y.backward()
        assert torch.equal(x.grad, 2 * x.detach())


def test_residency_is_host_while_evicted():
    with make_pool(device_bytes=16 * KiB, host_bytes=1024 * KiB) as pool:
        xs = [torch.randn(2048, requires_grad=True) for _ in range(4)]  # 8 KiB each
        with tpt.offload_activations(pool, min_bytes=1) as off:
            ys = [x.exp() for x in xs]  # exp saves its output
            loss = sum(y.sum() for y in ys)
        handles = [r() for r in off._order]
        homes = [pool.residency(h.tensor)["home"] for h in handles]
        assert any(home != 0 for home in homes)  # 4 x 8 KiB do not fit in 16 KiB
        del handles
        loss.backward()
        for x in xs:
            assert torch.equal(x.grad, x.detach().exp())
        assert pool.stats()["tensors"] == 0


def test_retain_graph_unpacks_twice_and_frees_with_the_graph():
    with make_pool() as pool:
        x = torch.randn(1024, dtype=torch.float64, requires_grad=True)
        with tpt.offload_activations(pool, min_bytes=1) as off:
            loss = x.sin().sum()
        loss.backward(retain_graph=True)
        first = x.grad.clone()
        assert pool.stats()["tensors"] == off.tensors > 0  # kept for the second backward
        x.grad = None
        loss.backward()
        assert torch.equal(x.grad, first) and torch.equal(first, x.detach().cos())
        assert off.unpacks == 2 * off.tensors
        assert pool.stats()["tensors"] == 0


def test_graph_dropped_without_backward_frees_pool_tensors():
    with make_pool() as pool:
        x = torch.randn(1024, requires_grad=True)
        with tpt.offload_activations(pool, min_bytes=1) as off:
            loss = x.exp().sum()
        assert pool.stats()["tensors"] == off.tensors > 0
        del loss
        gc.collect()
        assert pool.stats()["tensors"] == 0


def test_exception_inside_the_context_removes_the_hooks():
    with make_pool() as pool:
        x = torch.randn(1024, requires_grad=True)
        with pytest.raises(ZeroDivisionError):
            with tpt.offload_activations(pool, min_bytes=1):
                x.exp()
                1 / 0
        gc.collect()
        with tpt.offload_activations(pool, min_bytes=1 << 40) as probe:
            pass
        # No hook left: a saved tensor after the context is not offloaded.
        before = pool.stats()["tensors"]
        loss = x.exp().sum()
        assert pool.stats()["tensors"] == before == 0
        loss.backward()
        assert probe.tensors == 0


def test_pack_and_unpack_round_trip_dtypes_and_layouts():
    """The hooks directly: every dtype and layout comes back bit-identical."""
    cases = [
        torch.randn(33, 7, dtype=torch.float32),
        torch.randn(5, 9, dtype=torch.float64),
        torch.randint(-(2**40), 2**40, (17, 3), dtype=torch.int64),
        torch.rand(41) > 0.5,  # bool
        torch.randn(8, 12).t(),  # transposed
        torch.randn(6, 10, 4).permute(2, 0, 1),  # permuted
        torch.randn(20, 20)[::3, 1::2],  # sliced: gaps
        torch.randn(1, 16).expand(5, 16),  # overlapping (stride 0): comes back contiguous
        torch.tensor(3.5, dtype=torch.float64),  # 0-d
        torch.randn(3).to(torch.float16),
    ]
    with make_pool(device_bytes=4 * KiB) as pool:
        off = tpt.offload_activations(pool, min_bytes=1)
        packed = [off._pack(t) for t in cases]
        assert off.tensors == len(cases) and off.kept == 0
        assert pool.stats()["tensors"] == len(cases)
        for t, p in zip(cases, packed):
            for _ in range(2):  # unpack may run more than once
                u = off._unpack(p)
                assert u.dtype == t.dtype and u.shape == t.shape and u.device == t.device
                assert torch.equal(u, t)
                if t.stride() and min(t.stride()) > 0:
                    assert u.stride() == t.stride()
        del packed, p
        gc.collect()
        assert pool.stats()["tensors"] == 0


def test_saved_non_contiguous_and_integer_tensors_in_autograd():
    """float64 matmul with a transposed operand, an int64 index (gather), a bool mask (where)."""
    torch.manual_seed(3)
    a = torch.randn(64, 32, dtype=torch.float64, requires_grad=True)
    b = torch.randn(64, 32, dtype=torch.float64, requires_grad=True)
    idx = torch.randint(0, 32, (64, 16))
    mask = torch.rand(64, 32) > 0.5

    def run(pool=None):
        for t in (a, b):
            t.grad = None
        if pool is None:
            out = (torch.where(mask, a, b) @ b.t()).gather(1, idx).sum()
        else:
            with tpt.offload_activations(pool, min_bytes=1) as off:
                out = (torch.where(mask, a, b) @ b.t()).gather(1, idx).sum()
            assert off.tensors >= 3
            assert off.host_tensors > 0  # the 32 KiB operands do not fit the 16 KiB device tier
        out.backward()
        return out.detach(), a.grad.clone(), b.grad.clone()

    ref = run()
    with make_pool(device_bytes=16 * KiB) as pool:
        got = run(pool)
        assert pool.stats()["tensors"] == 0
    for r, g in zip(ref, got):
        assert bit_equal(r, g)


def test_pool_closed_before_the_graph_is_dropped():
    pool = make_pool()
    x = torch.randn(1024, requires_grad=True)
    with tpt.offload_activations(pool, min_bytes=1):
        loss = x.exp().sum()
    pool.close()
    del loss  # the handles' free is quiet once the pool is gone
    gc.collect()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU and a CUDA build of torch")
def test_a_torch_stream_is_a_pool_stream_and_dlpack_orders_it():
    """On a GPU: a torch stream wrapped as a pool stream, a device lease on it viewed by
    torch.from_dlpack (kDLCUDA, __dlpack__(stream=) from torch's current stream), the bytes
    read by a CUDA kernel on that stream."""
    pool = tierpool.Pool(backend="cuda", read_environment=False, quiet=True, publish=False,
                         tiers=[{"kind": "device", "capacity_bytes": 64 * KiB, "chunk_bytes": 64 * KiB},
                                {"kind": "pinned_host", "capacity_bytes": 1024 * KiB, "chunk_bytes": 1024 * KiB}])
    s = torch.cuda.Stream()
    h = pool.wrap_native_stream(s.cuda_stream)
    assert pool.wrap_native_stream(s.cuda_stream) == h
    t = pool.allocate(16 * KiB, name="t")
    with pool.acquire_host(t, "write_discard") as lease:
        lease.numpy()[:] = 3
    with torch.cuda.stream(s):
        with pool.acquire(t, "read", stream=h) as lease:
            x = torch.from_dlpack(lease)
            assert x.is_cuda and x.numel() == 16 * KiB
            total = x.to(torch.int64).sum()
            del x
    s.synchronize()
    assert int(total) == 3 * 16 * KiB
    pool.destroy_stream(h)
    assert pool.validate()
    pool.close()

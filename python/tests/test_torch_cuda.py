# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""tierpool.torch on a GPU: CUDA models whose parameters, gradients, optimizer states and
activations live in a pool on the CUDA backend (device tier several times smaller than what
a step touches, pinned host tier below), trained bit for bit like the same model without the
pool on the same GPU; and torch.cuda.MemPool backed by the pool. Every test here skips
without a GPU and a CUDA build of torch (bench/gpu/check.sh runs them on a lent GPU)."""

import gc

import pytest

torch = pytest.importorskip("torch")

import tierpool  # noqa: E402
import tierpool.torch as tpt  # noqa: E402
from conftest import KiB  # noqa: E402
from torch_models import TinyTransformer, bit_equal, make_mlp  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU and a CUDA build of torch")

MiB = 1024 * KiB
WIDTH, LAYERS, BATCH = 256, 6, 64          # MLP: six 256x256 layers (256 KiB of weights each)
SEQ, DIM, HEADS, FF, DEPTH = 16, 128, 4, 512, 3  # transformer: about 770 KiB a layer


def cuda_pool(device_bytes, host_bytes=128 * MiB):
    return tierpool.Pool(backend="cuda", read_environment=False, quiet=True, publish=False,
                         tiers=[{"kind": "device", "capacity_bytes": device_bytes, "chunk_bytes": device_bytes,
                                 "name": "dev"},
                                {"kind": "pinned_host", "capacity_bytes": host_bytes, "chunk_bytes": host_bytes,
                                 "name": "pinned"}])


def mlp():
    return make_mlp(WIDTH, LAYERS)


def transformer():
    return TinyTransformer(WIDTH, DIM, HEADS, FF, DEPTH)


# model name -> (constructor, input shape, device tier in bytes). The Adam step leases a
# parameter, its gradient and both states at once, on the device (a CUDA tensor has no host
# fallback): the tier holds four of the largest parameter and room for the small ones
# around them (with exactly four, 1 MiB for the MLP, the H200 run failed for fragmentation:
# three leased 256 KiB tensors left 256 KiB free in two pieces).
MODELS = {"mlp": (mlp, (BATCH, WIDTH), 5 * MiB // 4), "transformer": (transformer, (BATCH // 8, SEQ, WIDTH), 3 * MiB)}


def train(model_name, pool=None, steps=3, activations=False, report=None):
    """Adam for `steps` steps on the GPU; with a pool, parameters, gradients and states (and
    activations with `activations`) offloaded. Returns (losses, final parameters) on the CPU."""
    # The math attention kernels: deterministic forward and backward, so that two runs
    # without the pool agree bit for bit (the test checks that too).
    for name in ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_cudnn_sdp"):
        if hasattr(torch.backends.cuda, name):
            getattr(torch.backends.cuda, name)(False)
    make, shape, _ = MODELS[model_name]
    model = make().cuda()
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    if pool is not None:
        handle = tpt.offload_module(pool, model)
        opt = tpt.offload_optimizer(handle, opt)
    gen = torch.Generator().manual_seed(1)
    torch.manual_seed(2)  # dropout's draws, on the GPU's generator too
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        x = torch.randn(*shape, generator=gen).cuda()
        y = torch.randn(shape[0], 1, generator=gen).cuda()
        if activations:
            with tpt.offload_activations(pool, min_bytes=16 * KiB, prefetch=True) as off:
                loss = torch.nn.functional.mse_loss(model(x), y)
            assert off.tensors > 0
        else:
            loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        losses.append(loss.detach().cpu())
        opt.step()
    torch.cuda.synchronize()
    if pool is not None:
        if report is not None:
            report.update(param_bytes=handle.param_bytes, state_bytes=opt.state_bytes, stats=pool.stats(),
                          prefetches=handle.prefetches)
        handle.close()
    params = [p.detach().cpu() for p in model.parameters()]
    assert all(p.is_cuda for p in model.parameters())  # back on the GPU after close
    return losses, params


@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.parametrize("activations", [False, True], ids=["params", "params+activations"])
def test_cuda_training_through_the_pool_is_bit_identical(model_name, activations):
    ref = train(model_name)
    again = train(model_name)
    for a, b in zip(ref[0] + ref[1], again[0] + again[1]):
        assert bit_equal(a, b), "training without the pool is not deterministic here: nothing to compare"
    device_bytes = MODELS[model_name][2]
    report = {}
    with cuda_pool(device_bytes) as pool:
        got = train(model_name, pool=pool, activations=activations, report=report)
        assert pool.validate()
        assert pool.stats()["tensors"] == 0
    (losses, params), (ref_losses, ref_params) = got, ref
    assert len(losses) == len(ref_losses) and len(params) == len(ref_params)
    for a, b in zip(losses, ref_losses):
        assert bit_equal(a, b), (a, b)
    for a, b in zip(params, ref_params):
        assert bit_equal(a, b)
    stats = report["stats"]
    working = 2 * report["param_bytes"] + report["state_bytes"]
    assert working > 3 * device_bytes, working  # several times the device tier
    assert stats["tiers"][0]["evictions"] > 0
    assert stats["bytes_d2h"] > 0 and stats["bytes_h2d"] > 0
    print(f"\n{model_name} on {torch.cuda.get_device_name()}: working set {working} B, device tier {device_bytes} B, "
          f"evictions {stats['tiers'][0]['evictions']}, h2d {stats['bytes_h2d']} B, d2h {stats['bytes_d2h']} B, "
          f"prefetches {report['prefetches']}, losses {[float(v) for v in losses]}")


def test_mem_pool_serves_torch_allocations_from_the_device_tier():
    """torch.cuda.use_mem_pool with tierpool's MemPool: the tensors allocated inside come from
    the pool's device tier (the C allocator counts them, the pool holds them as tensors),
    compute on them is right, and their blocks go back when torch frees them."""
    if not hasattr(torch.cuda, "use_mem_pool"):
        pytest.skip(f"torch {torch.__version__} has no torch.cuda.use_mem_pool")
    with cuda_pool(64 * MiB, host_bytes=64 * MiB) as pool:
        mp = tpt.mem_pool(pool)
        before = tpt.allocator_stats()
        with torch.cuda.use_mem_pool(mp):
            x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
            y = x * 2
        mid = tpt.allocator_stats()
        assert mid["mallocs"] > before["mallocs"]
        assert mid["live_bytes"] >= 2 * (4 << 20)
        assert pool.stats()["tensors"] >= 1  # torch's caching allocator may carve both from one segment
        assert float(y.sum()) == float(2 * (((1 << 20) - 1) * (1 << 20) // 2))
        del x, y
        torch.cuda.synchronize()
        del mp
        gc.collect()
        torch.cuda.empty_cache()
        after = tpt.allocator_stats()
        # torch may keep a MemPool's segments cached after the pool object goes: no count of
        # frees is asserted, but nothing failed and nothing foreign came back.
        assert after["failures"] == before["failures"] and after["foreign_frees"] == before["foreign_frees"]
        assert pool.validate()
        print(f"\nmem_pool: before {before}, inside {mid}, after {after}")
    if after["live_blocks"] == 0:
        tpt.allocator_entry_points(None)

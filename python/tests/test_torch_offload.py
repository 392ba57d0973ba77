# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""tierpool.torch: parameter, gradient and optimizer-state offload (offload_module,
offload_optimizer), alone and with activation offload, on a sim pool whose device tier is
several times smaller than what training touches. Losses and final parameters are compared
bit for bit with the same training without the pool."""

import gc

import pytest

torch = pytest.importorskip("torch")

import tierpool  # noqa: E402
import tierpool.torch as tpt  # noqa: E402
from conftest import KiB, make_pool  # noqa: E402
from torch_models import TinyTransformer, bit_equal, make_mlp  # noqa: E402

BATCH, WIDTH, LAYERS = 32, 64, 4
SEQ, DIM, HEADS, FF, DEPTH = 8, 32, 4, 64, 2


def mlp():
    return make_mlp(WIDTH, LAYERS)


def transformer():
    return TinyTransformer(WIDTH, DIM, HEADS, FF, DEPTH)


MODELS = {"mlp": (mlp, (BATCH, WIDTH)), "transformer": (transformer, (BATCH // 4, SEQ, WIDTH))}
OPTIMIZERS = {
    "sgd_momentum": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3),
}


def storage_bytes(t):
    return (t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()).nbytes()


def placeholder(p):
    """True when `p` holds one element of storage with every stride 0 (offload's stand-in)."""
    return storage_bytes(p.data) == p.element_size() and all(st == 0 for st in p.data.stride())


def train(model_name, opt_name, steps=3, pool=None, activations=False, step_on="device", accumulate=1,
          report=None):
    """Trains for `steps` steps (each of `accumulate` backward passes); returns the losses and
    the final parameters. With a pool: parameters, gradients and optimizer states offloaded
    (and activations with `activations`); the handles are closed at the end."""
    make, shape = MODELS[model_name]
    model = make()
    model.train()
    opt = OPTIMIZERS[opt_name](model.parameters())
    if pool is not None:
        handle = tpt.offload_module(pool, model)
        opt = tpt.offload_optimizer(handle, opt, step_on=step_on)
    gen = torch.Generator().manual_seed(1)
    torch.manual_seed(2)  # dropout's draws
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        for _ in range(accumulate):
            x = torch.randn(*shape, generator=gen)
            y = torch.randn(shape[0], 1, generator=gen)
            if activations:
                with tpt.offload_activations(pool, min_bytes=1024, prefetch=True) as off:
                    loss = torch.nn.functional.mse_loss(model(x), y)
                assert off.tensors > 0
            else:
                loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            losses.append(loss.detach().clone())
        if pool is not None:
            # Between uses the parameters hold one element (a NaN placeholder): the pool has them.
            assert all(placeholder(p) for p in model.parameters())
            assert all(p.grad is None for p in model.parameters())
            assert handle.grads == handle.params
        opt.step()
    if pool is not None:
        if report is not None:
            report.update(handle=repr(handle), opt=repr(opt), states=opt.states, state_bytes=opt.state_bytes,
                          param_bytes=handle.param_bytes, saved=handle.saved, prefetches=handle.prefetches,
                          stats=pool.stats(), live_before_close=pool.stats()["tensors"])
        handle.close()
        assert opt.closed
    return losses, [p.detach().clone() for p in model.parameters()]


_reference = {}


def reference(model_name, opt_name, **kwargs):
    key = (model_name, opt_name, tuple(sorted(kwargs.items())))
    if key not in _reference:
        _reference[key] = train(model_name, opt_name, **kwargs)
    return _reference[key]


def assert_identical(got, ref):
    (losses, params), (ref_losses, ref_params) = got, ref
    assert len(losses) == len(ref_losses) and len(params) == len(ref_params)
    for a, b in zip(losses, ref_losses):
        assert bit_equal(a, b), (a, b)
    for a, b in zip(params, ref_params):
        assert bit_equal(a, b)


DEVICE = 32 * KiB  # the device tier: several times smaller than what one step touches


@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_training_with_parameter_optimizer_and_activation_offload_is_bit_identical(model_name, opt_name):
    ref = reference(model_name, opt_name)
    report = {}
    with make_pool(device_bytes=DEVICE, host_bytes=8192 * KiB) as pool:
        got = train(model_name, opt_name, pool=pool, activations=True, report=report)
        assert pool.validate()
        assert pool.stats()["tensors"] == 0  # nothing left in the pool after close
    assert_identical(got, ref)
    stats = report["stats"]
    # The working set: parameters, their gradients, the optimizer's states (and the
    # activations, on top) is several times the device tier, so the pool evicted.
    working = 2 * report["param_bytes"] + report["state_bytes"]
    assert working > 4 * DEVICE, working
    assert stats["tiers"][0]["evictions"] > 0
    assert stats["bytes_d2h"] > 0 and stats["bytes_h2d"] > 0
    assert report["states"] == (2 if opt_name == "adam" else 1) * len(ref[1])
    assert report["saved"] > 0  # weights saved for backward were kept as references
    assert report["prefetches"] > 0 and stats["prefetches"] > 0  # copies issued ahead of use
    # Between steps the pool holds every parameter, gradient and state (and no activation).
    assert report["live_before_close"] == 2 * len(ref[1]) + report["states"]
    print(f"\n{model_name}/{opt_name}: {report['handle']} {report['opt']}; working set {working} bytes, "
          f"device tier {DEVICE}; evictions {stats['tiers'][0]['evictions']}, pool prefetches {stats['prefetches']}")


@pytest.mark.parametrize("model_name", list(MODELS))
def test_parameter_offload_alone_is_bit_identical(model_name):
    ref = reference(model_name, "adam")
    with make_pool(device_bytes=DEVICE, host_bytes=8192 * KiB) as pool:
        got = train(model_name, "adam", pool=pool)
        assert pool.validate()
        assert pool.stats()["tiers"][0]["evictions"] > 0
        assert pool.stats()["tensors"] == 0
    assert_identical(got, ref)


@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.parametrize("tier", [1, 2, 3])
def test_the_transfer_planner_learns_an_offloaded_training_step_and_stays_bit_identical(model_name, tier):
    """prefetch='plan' on the pool under offload_module, offload_optimizer and
    offload_activations: the planner learns the step's schedule from PyTorch's own accesses
    (new activations each step, named by their births), plans it from the second step on
    without a misprediction, and training stays bit for bit what it is without the pool.
    One thread drives the pool (the CPU autograd runs backward on the caller's thread), so
    no planner step meets another.

    In the DEVICE tier (tier=1) and in twice it a unit's leases fill it and some acquires
    fall back to host leases, which ones varying from step to step; the planner is told of
    the failed device acquires too, in order and before the next birth (Note [A failed
    acquire is still a step of the schedule]), and an unpack asks the device again (Note
    [Unpacks ask the device tier again]), so the device requests repeat all the same
    (before both: 6 relearns in 8 steps for the MLP at tier=1; the transformer ended in
    fallback; told after the next birth, the transformer mispredicted twice at tier=2). In
    3 x DEVICE (tier=3) none falls back."""
    steps = 8
    ref = reference(model_name, "adam", steps=steps)
    report = {}
    with make_pool(device_bytes=tier * DEVICE, host_bytes=8192 * KiB, prefetch="plan") as pool:
        got = train(model_name, "adam", steps=steps, pool=pool, activations=True, report=report)
        assert pool.validate()
        assert pool.stats()["tensors"] == 0
    assert_identical(got, ref)
    st = report["stats"]
    assert st["prefetch"].startswith("plan:")  # every parameter spelled out
    assert st["planner_state"] == "planned", (st["planner_state"], st["planner_relearns"], st["planner_mispredicted"])
    assert st["planner_period"] > 0 and st["planned_prefetches"] > 0
    assert st["planner_relearns"] == 0 and st["planner_mispredicted"] == 0
    assert st["planner_busy_skips"] == 0
    assert (st["acquire_failures"] > 0) == (tier < 3)  # host fallbacks only in the small tiers
    assert st["tiers"][0]["evictions"] > 0
    assert 2 * report["param_bytes"] + report["state_bytes"] > 2 * 3 * DEVICE
    print(f"\n{model_name}/adam with plan, device tier {tier * DEVICE}: period {st['planner_period']} accesses, "
          f"{st['planned_prefetches']} planned prefetches, {st['acquire_failures']} host fallbacks")


def test_gradient_accumulation_over_two_backwards_is_bit_identical():
    ref = reference("mlp", "sgd_momentum", accumulate=2)
    with make_pool(device_bytes=DEVICE, host_bytes=8192 * KiB) as pool:
        got = train("mlp", "sgd_momentum", pool=pool, accumulate=2)
    assert_identical(got, ref)


HOST_STEP_RTOL, HOST_STEP_ATOL = 1e-5, 1e-6  # the tolerance docs/chapters/pytorch_offload.md states


@pytest.mark.parametrize("model_name", list(MODELS))
def test_host_step_within_tolerance(model_name):
    ref = reference(model_name, "adam")
    report = {}
    with make_pool(device_bytes=DEVICE, host_bytes=8192 * KiB) as pool:
        losses, params = train(model_name, "adam", pool=pool, activations=True, step_on="host", report=report)
        assert pool.validate()
        assert pool.stats()["tensors"] == 0
    assert "step_on='host'" in report["opt"]
    for a, b in zip(losses, ref[0]):
        assert torch.allclose(a, b, rtol=HOST_STEP_RTOL, atol=HOST_STEP_ATOL)
    for a, b in zip(params, ref[1]):
        assert torch.allclose(a, b, rtol=HOST_STEP_RTOL, atol=HOST_STEP_ATOL)
    # On the sim the host and the device are the same CPU and the same kernels: in fact exact.
    assert all(bit_equal(a, b) for a, b in zip(params, ref[1]))


def test_activation_prefetch_issues_copies_and_stays_bit_identical():
    """offload_activations(prefetch=True): unpacking activation k prefetches k-1; the pool
    issues those copies (stats 'prefetches'), and without prefetch it issues none."""
    import test_torch  # the activation-offload tests' MLP training

    ref_losses, ref_grads = test_torch.train(3)
    figures = {}
    for prefetch in (False, True):
        with make_pool(device_bytes=32 * KiB, host_bytes=4096 * KiB) as pool:
            record = []
            losses, grads = test_torch.train(3, pool, record=record, prefetch=prefetch)
            figures[prefetch] = (record[-1][0].prefetches, pool.stats()["prefetches"], pool.stats()["prefetch_hits"])
        assert all(bit_equal(a, b) for a, b in zip(losses, ref_losses))
        assert all(bit_equal(a, b) for a, b in zip(grads, ref_grads))
    assert figures[False] == (0, 0, 0)
    calls, issued, hits = figures[True]
    assert calls > 0 and issued > 0, figures
    print(f"\nactivation prefetch: {calls} calls in the last step; pool: {issued} copies issued, {hits} hits")


def test_between_steps_only_the_pool_holds_the_parameters():
    with make_pool(device_bytes=DEVICE, host_bytes=8192 * KiB) as pool:
        model = mlp()
        before = [p.detach().clone() for p in model.parameters()]
        with tpt.offload_module(pool, model) as handle:
            assert handle.params == len(before) and pool.stats()["tensors"] == len(before)
            assert handle.param_bytes == sum(p.numel() * p.element_size() for p in before)
            for p, b in zip(model.parameters(), before):
                assert p.shape == b.shape and p.dtype == b.dtype and p.is_leaf and p.requires_grad
                assert placeholder(p) and torch.isnan(p.detach()).all()  # reading it is safe: NaNs
            copies = handle.parameters_copy()
            assert all(bit_equal(copies[n], b) for (n, _), b in zip(model.named_parameters(), before))
            # The pool evicts parameters like any other tensor: most of 67 KB are off the 32 KiB tier.
            homes = [pool.residency(handle.record(p).slot.tensor)["home"] for p in model.parameters()]
            assert any(h != 0 for h in homes)
        assert pool.stats()["tensors"] == 0
        for p, b in zip(model.parameters(), before):
            assert bit_equal(p.detach(), b)


def test_gradients_are_in_the_pool_and_close_gives_them_back():
    x = torch.randn(BATCH, WIDTH)
    ref_model = mlp()
    ref_model(x).square().mean().backward()
    ref_grads = [p.grad.clone() for p in ref_model.parameters()]
    with make_pool(device_bytes=DEVICE, host_bytes=8192 * KiB) as pool:
        model = mlp()
        handle = tpt.offload_module(pool, model)
        model(x).square().mean().backward()
        assert handle.grads == len(ref_grads) and all(p.grad is None for p in model.parameters())
        grads = handle.gradients()
        assert all(bit_equal(grads[n], g) for (n, _), g in zip(model.named_parameters(), ref_grads))
        handle.close()
        assert pool.stats()["tensors"] == 0
        assert all(bit_equal(p.grad, g) for p, g in zip(model.parameters(), ref_grads))


def test_offloading_the_same_module_twice_is_refused():
    with make_pool() as pool:
        model = mlp()
        handle = tpt.offload_module(pool, model)
        with pytest.raises(tierpool.LogicError, match="already offloaded"):
            tpt.offload_module(pool, model)
        with pytest.raises(tierpool.LogicError, match="already offloaded"):
            tpt.offload_module(pool, model[2])  # a part of it too
        handle.close()
        tpt.offload_module(pool, model).close()  # after close it may be offloaded again
        assert pool.stats()["tensors"] == 0


def test_tied_parameters_in_two_units_are_refused_and_one_unit_is_fine():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.Linear(16, 16, bias=False)
            self.dec = torch.nn.Linear(16, 16, bias=False)
            self.dec.weight = self.enc.weight

        def forward(self, x):
            return self.dec(self.enc(x))

    with make_pool() as pool:
        model = Tied()
        with pytest.raises(tierpool.LogicError, match="shared by units 'enc' and 'dec'"):
            tpt.offload_module(pool, model)
        assert pool.stats()["tensors"] == 0  # nothing half-done
        assert not placeholder(model.enc.weight)
        x = torch.randn(4, 16)
        ref = model(x)
        # The whole model as one unit holds the tied weight once.
        with tpt.offload_module(pool, model, units=[model]) as handle:
            assert handle.params == 1
            assert torch.equal(model(x), ref)
        assert pool.stats()["tensors"] == 0


def test_use_after_close_is_a_logic_error_and_the_model_works_again():
    with make_pool() as pool:
        model = mlp()
        x = torch.randn(BATCH, WIDTH)
        ref = model(x)
        handle = tpt.offload_module(pool, model)
        opt = tpt.offload_optimizer(handle, torch.optim.SGD(model.parameters(), lr=0.1))
        assert torch.equal(model(x), ref)
        handle.close()
        handle.close()  # idempotent
        assert opt.closed
        with pytest.raises(tierpool.LogicError, match="closed OffloadedModule"):
            handle.zero_grad()
        with pytest.raises(tierpool.LogicError, match="closed OffloadedOptimizer"):
            opt.step()
        with pytest.raises(tierpool.LogicError, match="closed OffloadedModule"):
            tpt.offload_optimizer(handle, torch.optim.SGD(model.parameters(), lr=0.1))
        assert "forward" not in model[0].__dict__  # the wrappers are gone
        assert torch.equal(model(x), ref)
        assert pool.stats()["tensors"] == 0


def test_backward_after_close_says_so():
    with make_pool() as pool:
        model = mlp()
        handle = tpt.offload_module(pool, model)
        loss = model(torch.randn(BATCH, WIDTH)).sum()
        handle.close()
        # torch 1.x wraps an exception from a saved-tensor hook in RuntimeError; torch 2.x
        # lets the hook's own exception (tierpool.LogicError) through.
        with pytest.raises((RuntimeError, tierpool.LogicError), match="closed OffloadedModule"):
            loss.backward()


def test_an_exception_in_a_units_forward_releases_its_leases():
    class Boom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(8, 8)
            self.b = torch.nn.Linear(8, 8)

        def forward(self, x, fail=False):
            return self.b(self.a(x))

    with make_pool() as pool:
        model = Boom()
        x = torch.randn(2, 8)
        ref = model(x)
        with tpt.offload_module(pool, model) as handle:
            with pytest.raises(RuntimeError):
                model(torch.randn(2, 7))  # a shape error inside unit a
            assert handle._active == []
            assert all(r["leases"] == 0 for r in (pool.residency(handle.record(p).slot.tensor)
                                                  for p in model.parameters()))
            assert torch.equal(model(x), ref)
            assert pool.validate()
        assert pool.stats()["tensors"] == 0


def test_optimizer_over_other_parameters_and_closures_are_refused():
    with make_pool() as pool:
        model = mlp()
        other = torch.nn.Linear(4, 4)
        with tpt.offload_module(pool, model) as handle:
            with pytest.raises(tierpool.LogicError, match="does not hold"):
                tpt.offload_optimizer(handle, torch.optim.SGD(list(model.parameters()) + list(other.parameters()), lr=0.1))
            with pytest.raises(tierpool.LogicError, match="step_on"):
                tpt.offload_optimizer(handle, torch.optim.SGD(model.parameters(), lr=0.1), step_on="gpu")
            opt = tpt.offload_optimizer(handle, torch.optim.SGD(model.parameters(), lr=0.1))
            with pytest.raises(tierpool.LogicError, match="closure"):
                opt.step(lambda: 0.0)
        assert pool.stats()["tensors"] == 0


def test_pool_closed_first_is_quiet_on_gc():
    pool = make_pool()
    model = mlp()
    handle = tpt.offload_module(pool, model)
    del handle
    pool.close()
    gc.collect()


def test_mem_pool_needs_a_cuda_torch_with_a_pluggable_allocator():
    with make_pool() as pool:
        with pytest.raises(tierpool.LogicError, match="mem_pool: not available: .*(CUDAPluggableAllocator|MemPool|'sim')"):
            tpt.mem_pool(pool)


def allocator_functions(pool):
    """The pluggable allocator's two C entry points for `pool`, through ctypes (what
    torch.cuda.CUDAPluggableAllocator loads): malloc(size, device, stream), free(ptr, size,
    device, stream)."""
    import ctypes

    path, malloc_name, free_name = tpt.allocator_entry_points(pool)
    lib = ctypes.CDLL(path)
    malloc = getattr(lib, malloc_name)
    malloc.restype = ctypes.c_void_p
    malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    free = getattr(lib, free_name)
    free.restype = None
    free.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    return malloc, free


def test_the_pluggable_allocator_entry_points_through_ctypes():
    """tierpool_torch_malloc / tierpool_torch_free, called as torch's CUDAPluggableAllocator
    would call them (here through ctypes, on the simulated device): blocks are pool
    tensors pinned in the device tier, the pool evicts its other tensors for them, a free
    gives them back, and bad calls fail without harm."""
    import ctypes

    import numpy as np

    pool = make_pool(device_bytes=64 * 1024)
    malloc, free = allocator_functions(pool)
    before = tpt.allocator_stats()

    other = pool.allocate(32 * 1024, name="other")  # resident on the device, evicted for the blocks
    with pool.acquire_host(other, "write_discard") as lease:
        lease.numpy()[:] = 5
    with pool.acquire(other, "read"):
        pass
    a = malloc(24 * 1024, 0, None)
    b = malloc(24 * 1024, 0, None)
    assert a and b and a != b
    ctypes.memset(a, 1, 24 * 1024)
    ctypes.memset(b, 2, 24 * 1024)
    st = pool.stats()
    assert st["tiers"][0]["pinned_bytes"] >= 48 * 1024 and st["tiers"][0]["evictions"] >= 1  # other went down
    assert tpt.allocator_stats()["live_blocks"] == before["live_blocks"] + 2
    assert malloc(32 * 1024, 0, None) is None  # 48 of 64 KiB pinned: out of memory, a null pointer
    assert malloc(1024, 3, None) is None       # another device
    assert malloc(0, 0, None) is None
    with pytest.raises(tierpool.LogicError, match="block.*live"):
        tpt.allocator_entry_points(make_pool())  # another pool while blocks are live
    assert bytes((ctypes.c_char * 8).from_address(a)) == b"\x01" * 8
    free(a, 24 * 1024, 0, None)
    free(b, 24 * 1024, 0, None)
    free(b, 24 * 1024, 0, None)  # twice: not this allocator's any more, ignored
    after = tpt.allocator_stats()
    assert after["live_blocks"] == before["live_blocks"] and after["live_bytes"] == before["live_bytes"]
    assert after["foreign_frees"] == before["foreign_frees"] + 1
    assert after["failures"] == before["failures"] + 3
    with pool.acquire_host(other, "read") as lease:
        assert np.all(lease.numpy() == 5)  # evicted and back: its bytes are intact
    assert pool.validate()
    tpt.allocator_entry_points(None)
    pool.close()


def test_torch_trace_fixture_is_what_the_script_records(tmp_path):
    """tests/data/torch_mlp_offload.tpb is what scripts/make_torch_trace.py records with
    Debian 12's torch (1.13), byte for byte (the run and the virtual clock are
    deterministic). Another torch saves other tensors for backward (torch 2.11 on a GPU
    machine: a few events differ), so there the recording must only read back."""
    import os
    import subprocess
    import sys

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    out = tmp_path / "t.tpb"
    subprocess.run([sys.executable, os.path.join(root, "scripts", "make_torch_trace.py"), "-o", str(out)], check=True)
    with open(os.path.join(root, "tests", "data", "torch_mlp_offload.tpb"), "rb") as f:
        committed = f.read()
    assert len(committed) < 200 * 1024
    if torch.__version__.startswith("1.13"):
        assert out.read_bytes() == committed
    else:
        (row,) = tierpool.replay(str(out), ["lru"], "50%")
        assert row["hits"] + row["misses"] > 0


def test_gradients_left_in_torch_and_offload_under_no_grad_are_bit_identical():
    """offload_grads=False: gradients stay torch tensors (p.grad), the optimizer's states
    still go to the pool; offload_module called under torch.no_grad works the same."""
    ref = reference("mlp", "adam")
    with make_pool(device_bytes=DEVICE, host_bytes=8192 * KiB) as pool:
        model = mlp()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        with torch.no_grad():
            handle = tpt.offload_module(pool, model, offload_grads=False)
        opt = tpt.offload_optimizer(handle, opt)
        gen = torch.Generator().manual_seed(1)
        losses = []
        for _ in range(3):
            x = torch.randn(BATCH, WIDTH, generator=gen)
            y = torch.randn(BATCH, 1, generator=gen)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            assert handle.grads == 0 and all(p.grad is not None for p in model.parameters())
            opt.step()
            losses.append(loss.detach().clone())
        assert opt.states == 2 * len(ref[1])
        handle.close()
        assert pool.stats()["tensors"] == 0
    assert_identical((losses, [p.detach().clone() for p in model.parameters()]), ref)


def test_parameters_are_zero_copy_views_of_their_leases_while_a_unit_runs():
    seen = []

    class Probe(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x):
            rec = handle.record(self.lin.weight)
            seen.append((self.lin.weight.data_ptr(), rec.slot.lease.data_ptr, rec.slot.lease.access,
                         self.lin.weight.shape))
            return self.lin(x)

    with make_pool() as pool:
        model = torch.nn.Sequential(Probe(), torch.nn.Linear(16, 1))
        handle = tpt.offload_module(pool, model)
        model(torch.randn(4, 16)).sum().backward()
        (ptr, lease_ptr, access, shape), = seen
        assert ptr == lease_ptr and access == "read" and shape == (16, 16)
        assert handle.record(model[0].lin.weight).slot.lease is None  # ended after the forward
        handle.close()


def test_a_unit_bigger_than_the_device_tier_uses_host_leases_and_stays_bit_identical():
    """A 64 KiB weight on a 16 KiB device tier: it cannot be leased on the device, so (the
    model is on the CPU) it is viewed through a host lease, each time it is used."""
    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.Tanh(), torch.nn.Linear(128, 1))

    def run(pool=None):
        model = make()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        if pool is not None:
            handle = tpt.offload_module(pool, model)
            opt = tpt.offload_optimizer(handle, opt)
        gen = torch.Generator().manual_seed(1)
        losses = []
        for _ in range(2):
            x, y = torch.randn(8, 128, generator=gen), torch.randn(8, 1, generator=gen)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach().clone())
        if pool is not None:
            assert handle.record(model[0].weight).slot.host  # the last use was a host lease
            handle.close()
        return losses, [p.detach().clone() for p in model.parameters()]

    ref = run()
    with make_pool(device_bytes=16 * KiB, host_bytes=4096 * KiB) as pool:
        got = run(pool)
        assert pool.validate() and pool.stats()["tensors"] == 0
    assert_identical(got, ref)


class Scaled(torch.nn.Module):
    """A parameter of the model's own (a unit of the root) around children, one of them
    called twice per forward (its weight used twice: the gradients add up in autograd)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.scale = torch.nn.Parameter(torch.randn(WIDTH))
        self.inp = torch.nn.Linear(WIDTH, WIDTH)
        self.shared = torch.nn.Linear(WIDTH, WIDTH)
        self.out = torch.nn.Linear(WIDTH, 1)

    def forward(self, x):
        h = torch.relu(self.inp(x)) * self.scale
        h = torch.tanh(self.shared(h))
        h = torch.tanh(self.shared(h))
        return self.out(h)


def test_root_parameters_a_unit_called_twice_and_retain_graph_are_bit_identical():
    def run(pool=None):
        model = Scaled()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        if pool is not None:
            handle = tpt.offload_module(pool, model)
            assert [type(u).__name__ for u, _ in handle.units] == ["Scaled", "Linear", "Linear", "Linear"]
            assert [len(recs) for _, recs in handle.units] == [1, 2, 2, 2]  # the root: its own only
            opt = tpt.offload_optimizer(handle, opt)
        gen = torch.Generator().manual_seed(1)
        losses = []
        for _ in range(3):
            x, y = torch.randn(BATCH, WIDTH, generator=gen), torch.randn(BATCH, 1, generator=gen)
            opt.zero_grad()
            with (tpt.offload_activations(pool, min_bytes=1024) if pool is not None else _null()):
                loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward(retain_graph=True)  # twice: the saved parameters are rebuilt twice
            loss.backward()
            opt.step()
            losses.append(loss.detach().clone())
        if pool is not None:
            assert handle.saved > 0
            handle.close()
        return losses, [p.detach().clone() for p in model.parameters()]

    ref = run()
    with make_pool(device_bytes=DEVICE, host_bytes=8192 * KiB) as pool:
        got = run(pool)
        assert pool.validate() and pool.stats()["tensors"] == 0
    assert_identical(got, ref)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_torch_optimizers_and_the_models_own_methods_go_through_the_offload():
    """A loop that keeps calling the torch optimizer's step() and zero_grad() (or the
    model's zero_grad()) trains the same, bit for bit; state_dict()s hold values, not
    placeholders; close() gives the optimizer its methods back."""
    ref = reference("mlp", "adam")
    with make_pool(device_bytes=DEVICE, host_bytes=8192 * KiB) as pool:
        model = mlp()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        handle = tpt.offload_module(pool, model)
        wrapper = tpt.offload_optimizer(handle, opt)
        gen = torch.Generator().manual_seed(1)
        losses = []
        for i in range(3):
            x, y = torch.randn(BATCH, WIDTH, generator=gen), torch.randn(BATCH, 1, generator=gen)
            (opt if i % 2 else model).zero_grad()
            assert handle.grads == 0
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach().clone())
        assert wrapper.steps == 3
        sd = handle.state_dict()
        assert set(sd) == set(model.state_dict())
        osd = opt.state_dict()
        with torch.no_grad():
            exp_avg = osd["state"][0]["exp_avg"]
        assert exp_avg.shape == (WIDTH, WIDTH) and exp_avg.abs().sum() > 0
        handle.close()
        assert "step" not in opt.__dict__ and "zero_grad" not in model.__dict__
        assert pool.stats()["tensors"] == 0
        # After close the optimizer's own state_dict has the same values.
        assert torch.equal(opt.state_dict()["state"][0]["exp_avg"], exp_avg)
        assert all(bit_equal(sd[k], v) for k, v in model.state_dict().items())
    assert_identical((losses, [p.detach().clone() for p in model.parameters()]), ref)


def test_a_pool_too_small_for_the_model_fails_the_offload_and_leaves_the_model_whole():
    with make_pool(device_bytes=16 * KiB, host_bytes=32 * KiB) as pool:  # the MLP has 67 KB
        model = mlp()
        before = [p.detach().clone() for p in model.parameters()]
        with pytest.raises(tierpool.OutOfMemory):
            tpt.offload_module(pool, model)
        assert pool.stats()["tensors"] == 0
        assert all(bit_equal(p.detach(), b) for p, b in zip(model.parameters(), before))
        assert "forward" not in model[0].__dict__ and "zero_grad" not in model.__dict__
    with make_pool() as other, tpt.offload_module(other, model) as handle:  # not marked as offloaded
        assert handle.params == len(before)


def test_a_parameter_used_outside_its_unit_is_reported_not_trained_on_as_nan():
    class Head(torch.nn.Module):
        def __init__(self, body):
            super().__init__()
            self.bias = torch.nn.Parameter(torch.zeros(16))
            self.body = [body]  # not a child: the unit of body's parameters is body's

        def forward(self, x):
            return x @ self.body[0].weight.t() + self.bias  # body's weight, without calling body

    with make_pool() as pool:
        body = torch.nn.Linear(16, 16)
        model = torch.nn.Sequential(body, Head(body))
        x = torch.randn(4, 16)
        ref = model(x)
        with tpt.offload_module(pool, model) as handle:
            # torch 1.13 turns an exception in a saved-tensor hook into a RuntimeError with its text.
            with pytest.raises((tierpool.LogicError, RuntimeError), match=r"parameter '0.weight' was used outside its unit"):
                model(x)
            assert handle._active == []
        with tpt.offload_module(pool, model, units=[model]) as handle:  # one unit: fine
            assert torch.equal(model(x), ref)
        assert pool.stats()["tensors"] == 0


def test_a_pluggable_malloc_waiting_for_room_does_not_block_frees():
    """Thread A's malloc finds the device tier pinned by thread B's block and waits in the
    pool for B's lease; B's free must get through meanwhile (the allocator's lock is not
    held across pool calls), and then A's malloc succeeds."""
    import threading
    import time

    pool = make_pool(device_bytes=64 * 1024)
    malloc, free = allocator_functions(pool)
    held = {}
    got = {}
    b_has_block = threading.Event()

    def b():
        held["p"] = malloc(48 * 1024, 0, None)
        b_has_block.set()
        time.sleep(0.3)  # A is waiting in the pool by now
        free(held["p"], 48 * 1024, 0, None)

    def a():
        b_has_block.wait()
        got["p"] = malloc(32 * 1024, 0, None)

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    tb.start()
    ta.start()
    ta.join(30)
    tb.join(30)
    assert held["p"] and got.get("p"), "A's malloc failed: B's free could not get through while A waited"
    free(got["p"], 32 * 1024, 0, None)
    assert tpt.allocator_stats()["live_blocks"] == 0
    assert pool.validate()
    tpt.allocator_entry_points(None)
    pool.close()


def _trace_lines(path):
    lines = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                lines.append(line.split()[1:] if line.startswith("@") else line.split())
    return lines


def test_roofline_notes_each_modules_time_and_the_recording_replays_with_it(tmp_path):
    """tierpool.torch.roofline over an offloaded MLP (parameters, gradients, Adam states and
    activations in the pool): each Linear's forward takes 2 * rows * in * out flops at the
    rate, each ReLU its bytes at the bandwidth, each backward twice that, each parameter's
    step its bytes; the recorded trace carries them as compute events (with the phases the
    program marks), the virtual clock ran them, training stays bit-identical, and the replay
    of the recording is timed by them."""
    path = tmp_path / "t.tpt"
    pool = make_pool(DEVICE, 1024 * KiB, sim_clock="virtual", trace_path=str(path))
    torch.manual_seed(0)
    model = mlp()
    ref_model = mlp()
    ref_model.load_state_dict(model.state_dict())
    handle = tpt.offload_module(pool, model)
    opt = tpt.offload_optimizer(handle, torch.optim.Adam(model.parameters(), lr=1e-3))
    ref_opt = torch.optim.Adam(ref_model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(1))
    y = torch.randn(BATCH, 1, generator=torch.Generator().manual_seed(2))
    with tpt.roofline(pool, model, tflops=1.0, gbps=100.0) as r:
        for step in range(2):
            pool.note_phase(f"iter {step}")
            pool.note_phase("forward")
            with tpt.offload_activations(pool, min_bytes=1024):
                loss = torch.nn.functional.mse_loss(model(x), y)
            pool.note_phase("backward")
            loss.backward()
            pool.note_phase("optimizer")
            opt.step()
            opt.zero_grad()
            ref_loss = torch.nn.functional.mse_loss(ref_model(x), y)
            ref_loss.backward()
            ref_opt.step()
            ref_opt.zero_grad()
            assert bit_equal(loss.detach(), ref_loss.detach())
    # Expected, per step: Linear(64, 64) x 4 and Linear(64, 1), each with a ReLU between.
    def ns(flops, nbytes):
        t = max(flops / 1e3, nbytes / 100.0)
        return int(t) + (t > int(t))
    act = BATCH * WIDTH * 4
    lin = ns(2 * BATCH * WIDTH * WIDTH, act + act + (WIDTH * WIDTH + WIDTH) * 4)  # 263 ns (flop bound)
    relu = ns(0, act + act)  # 164 ns (bandwidth bound)
    head = ns(2 * BATCH * WIDTH, act + BATCH * 4 + (WIDTH + 1) * 4)
    forward = 4 * lin + 4 * relu + head
    assert r.forward_ns == 2 * forward
    assert r.backward_ns == 2 * 2 * forward
    assert r.optimizer_ns > 0 and r.kernels > 0
    stats = pool.stats()
    handle.close()
    pool.close()
    assert stats["tensors"] >= 0
    lines = _trace_lines(path)
    compute = [int(w[1]) for w in lines if w[0] == "compute"]
    assert sum(compute) == r.forward_ns + r.backward_ns + r.optimizer_ns
    assert len(compute) == r.kernels
    phases = [" ".join(w[1:]).strip('"') for w in lines if w[0] == "phase"]
    assert phases == ["iter 0", "forward", "backward", "optimizer", "iter 1", "forward", "backward", "optimizer"]
    (row,) = tierpool.replay(str(path), ["lru"], "50%")
    assert row["compute_seconds"] == pytest.approx(sum(compute) * 1e-9)
    assert row["makespan_seconds"] >= row["compute_seconds"]


def test_roofline_refuses_bad_parameters_and_note_compute_a_negative_time(pool):
    model = mlp()
    for kwargs in ({"tflops": 0}, {"gbps": -1.0}, {"backward": float("nan")}, {"tflops": "fast"}):
        with pytest.raises(tierpool.LogicError, match="must be a positive number"):
            tpt.roofline(pool, model, **kwargs)
    with pytest.raises(tierpool.LogicError, match="costs maps module types"):
        tpt.roofline(pool, model, costs={"Linear": lambda m, i, o: (0, 0)})
    with pytest.raises(tierpool.LogicError, match="got list"):
        tpt.roofline(pool, model, costs=[torch.nn.Linear])
    with pytest.raises(tierpool.LogicError, match="expected a torch.nn.Module"):
        tpt.roofline(pool, object())
    with pytest.raises(tierpool.LogicError, match="a negative duration"):
        pool.note_compute(-1)
    with pytest.raises(tierpool.LogicError, match="unknown stream"):
        pool.note_compute(1, 123456)
    with pytest.raises(tierpool.LogicError, match="an empty phase name"):
        pool.note_phase("")
    pool.note_compute(0)
    pool.note_phase("not recorded")


def test_roofline_times_multihead_attention_whole(pool):
    """nn.MultiheadAttention never calls its out_proj module: the roofline times the whole
    attention (four E x E projections over the rows, QK^T and AV), once per call, and the
    TransformerEncoderLayer around it by its children and that."""
    torch.manual_seed(0)
    e, heads, n, length = 32, 4, 2, 8
    mha = torch.nn.MultiheadAttention(e, heads, batch_first=True)
    x = torch.randn(n, length, e)
    with tpt.roofline(pool, mha, tflops=1.0, gbps=1e9) as r:  # flop bound
        mha(x, x, x, need_weights=False)
    flops = 2 * n * e * e * 4 * length + 4 * n * length * length * e
    assert r.forward_ns == int(flops / 1e3) + (flops % 1000 != 0)
    assert r.kernels == 1  # the forward; its backward is noted only when a backward runs
    layer = torch.nn.TransformerEncoderLayer(e, heads, dim_feedforward=64, batch_first=True, dropout=0.0)
    with tpt.roofline(pool, layer, tflops=1.0, gbps=1e9) as r2:
        layer(x)
    linears = 2 * 2 * n * length * e * 64  # linear1 and linear2
    assert r2.forward_ns >= int((flops + linears) / 1e3)


def test_replay_can_leave_out_a_recordings_own_prefetches():
    """tests/data/resnet18_torch.tpb carries offload_module's own prefetch calls: replayed by
    default, left out with trace_prefetches=False (tierpool replay --no-trace-prefetch)."""
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "resnet18_torch.tpb")
    (own,) = tierpool.replay(path, ["lru"], "25%")
    (alone,) = tierpool.replay(path, ["lru"], "25%", trace_prefetches=False)
    assert own["prefetches"] > 0
    assert alone["prefetches"] == 0
    assert own["compute_seconds"] == alone["compute_seconds"]


def test_roofline_notes_no_device_time_for_a_host_optimizer_step():
    """offload_optimizer(step_on="host") steps on the CPU: the roofline notes the model's
    kernels but no optimizer time."""
    pool = make_pool(DEVICE, 1024 * KiB)
    torch.manual_seed(0)
    model = mlp()
    handle = tpt.offload_module(pool, model)
    opt = tpt.offload_optimizer(handle, torch.optim.Adam(model.parameters(), lr=1e-3), step_on="host")
    x = torch.randn(BATCH, WIDTH)
    with tpt.roofline(pool, model) as r:
        torch.nn.functional.mse_loss(model(x), torch.zeros(BATCH, 1)).backward()
        opt.step()
    assert r.forward_ns > 0 and r.backward_ns > 0
    assert r.optimizer_ns == 0
    handle.close()
    pool.close()

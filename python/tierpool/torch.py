# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""PyTorch offload into a tierpool pool: activations (autograd's saved tensors), and a
model's parameters, gradients and optimizer states (offload_module, offload_optimizer;
further down, and docs/chapters/pytorch_offload.md).

    import tierpool, tierpool.torch
    with tierpool.torch.offload_activations(pool, min_bytes=4096) as off:
        loss = model(x).sum()
    loss.backward()
    print(off.tensors, off.bytes)

Built on ``torch.autograd.graph.saved_tensors_hooks``: while the context is active, each
tensor autograd saves for backward (at least ``min_bytes`` of it) is copied into a pool
tensor of its own, written through a device lease (``pool.acquire(..., "write_discard")``),
and the saved tensor is replaced by a handle. The pool may evict the bytes to a lower tier
when its device tier is full; backward's unpack acquires the pool tensor again (the pool
copies the bytes back in), synchronizes the lease's stream and rebuilds a tensor of the
saved dtype, shape, strides and device. The pool tensor is freed when autograd drops the
handle (after backward, or with the graph when ``retain_graph=True`` was used), so unpack
may run any number of times. See docs/chapters/python.md.

    with tierpool.torch.offload_module(pool, model) as handle:
        opt = tierpool.torch.offload_optimizer(handle, torch.optim.Adam(model.parameters()))
        ...; loss.backward(); opt.step(); opt.zero_grad()

Each parameter, its gradient and the optimizer's state tensors live in pool tensors; a
unit's forward leases its parameters and views them zero-copy; the optimizer steps one
parameter at a time on leased views. Losses and parameters are bit-identical to training
without the pool.

Importing ``tierpool`` does not import torch; importing ``tierpool.torch`` does.
"""

import functools
import weakref

import torch

from ._errors import LogicError, OutOfMemory

__all__ = [
    "offload_activations",
    "OffloadedTensor",
    "offload_module",
    "OffloadedModule",
    "offload_optimizer",
    "OffloadedOptimizer",
    "mem_pool",
    "allocator_entry_points",
    "allocator_stats",
    "roofline",
    "Roofline",
]

# The offload_activations contexts now active, innermost last. Note [Saved tensors under
# offload_module]: a unit of offload_module pushes saved-tensor hooks of its own while its
# forward runs (torch uses the innermost hooks only), and hands the tensors that are not
# its parameters on to the innermost offload_activations context, found here.
_active_activation_offloads = []

# The roofline contexts now active: OffloadedOptimizer tells them of each parameter's step.
_active_rooflines = []


def _non_overlapping(shape, strides):
    """True when no two elements of (shape, strides) share memory (gaps allowed)."""
    dims = sorted((st, sz) for sz, st in zip(shape, strides) if sz > 1)
    reach = 1
    for st, sz in dims:
        if st < reach:
            return False
        reach = st * sz
    return True


class OffloadedTensor:
    """The handle autograd keeps instead of a saved tensor: a pool tensor and its layout."""

    __slots__ = ("pool", "tensor", "dtype", "shape", "strides", "device", "nbytes", "unpacks", "host", "__weakref__")

    def __init__(self, pool, tensor, src):
        self.pool = pool
        self.tensor = tensor
        self.dtype = src.dtype
        self.shape = tuple(src.shape)
        self.strides = tuple(src.stride())
        self.device = src.device
        self.nbytes = src.numel() * src.element_size()
        self.unpacks = 0
        self.host = False  # True: the device tier could not take it when last leased (a host lease then)

    def free(self):
        """Gives the pool tensor back (idempotent; quiet when the pool is already closed)."""
        t, self.tensor = self.tensor, None
        if t is not None:
            try:
                self.pool.free(t)
            except Exception:  # the pool was closed first: its tensors went with it
                pass

    def __del__(self):
        self.free()


def _bytes_of(lease):
    """The lease's bytes as a flat uint8 torch tensor, zero-copy (DLPack)."""
    return torch.from_dlpack(lease)


def _acquire(pool, tensor, access, host):
    """A device lease (synchronized), or a host lease when `host` or the device tier cannot
    take the tensor now (larger than the tier, or the tier pinned full). Returns (lease, host)."""
    if not host:
        try:
            lease = pool.acquire(tensor, access)
        except OutOfMemory:
            host = True
        else:
            pool.synchronize(lease.stream)
            return lease, False
    return pool.acquire_host(tensor, access), True


class offload_activations:
    """Context manager: saved tensors of at least ``min_bytes`` go to ``pool`` until backward.

    Counters (over the context's life): ``tensors`` and ``bytes`` offloaded, ``kept`` (saved
    tensors left in place: smaller than ``min_bytes`` or empty), ``unpacks`` (tensors
    brought back), ``prefetches`` (``pool.prefetch`` calls made ahead of backward) and
    ``host_tensors`` (offloaded tensors the device tier could not take when packed, e.g.
    larger than the tier: written through a host lease instead; unpacking one asks the
    device tier again unless it is bigger than the tier).

    ``prefetch=True``: when backward unpacks a tensor, the one packed just before it (the
    next one backward is likely to need) is prefetched to the device tier.
    ``name``: the pool tensors' name prefix (numbered). ``priority`` goes to ``allocate``.
    """

    def __init__(self, pool, min_bytes=1 << 16, *, prefetch=False, name="activation", priority=0.0):
        self.pool = pool
        self.min_bytes = int(min_bytes)
        self.prefetch = bool(prefetch)
        self.name = name
        self.priority = float(priority)
        self.tensors = 0
        self.bytes = 0
        self.kept = 0
        self.unpacks = 0
        self.prefetches = 0
        self.host_tensors = 0
        self._order = []  # weak references to the handles, in pack order
        self._hooks = None
        self._device_bytes = None  # the device tier's capacity, read at __enter__

    def _host_only(self, h):
        """True for a tensor bigger than the device tier: never asked of it (Note [Unpacks ask
        the device tier again])."""
        return h.host and self._device_bytes is not None and h.nbytes > self._device_bytes

    # -- hooks ---------------------------------------------------------------------------

    def _pack(self, t):
        nbytes = t.numel() * t.element_size()
        if nbytes == 0 or nbytes < self.min_bytes or t.is_sparse or t.is_quantized:
            self.kept += 1
            return t
        with torch.no_grad():
            src = t.detach()
            flat = src.contiguous().reshape(-1).view(torch.uint8)
            pt = self.pool.allocate(nbytes, name=f"{self.name}{self.tensors}", priority=self.priority)
            try:
                lease, host = _acquire(self.pool, pt, "write_discard", False)
                with lease:
                    dst = _bytes_of(lease)
                    dst.copy_(flat.to(dst.device))
                    if dst.device.type == "cuda":
                        torch.cuda.current_stream(dst.device).synchronize()
                    del dst
            except BaseException:
                self.pool.free(pt)
                raise
        handle = OffloadedTensor(self.pool, pt, src)
        handle.host = host
        self.host_tensors += host
        handle_index = len(self._order)
        self._order.append(weakref.ref(handle))
        handle.unpacks = 0
        self.tensors += 1
        self.bytes += nbytes
        return (handle_index, handle)

    def _unpack(self, packed):
        if isinstance(packed, torch.Tensor):
            return packed
        index, h = packed
        if h.tensor is None:
            raise RuntimeError("tierpool.torch: the offloaded tensor was already freed")
        if self.prefetch and index > 0:
            prev = self._order[index - 1]()
            # A tensor bigger than the device tier is not prefetched.
            if prev is not None and prev.tensor is not None and not self._host_only(prev):
                self.pool.prefetch(prev.tensor, 0)
                self.prefetches += 1
        contiguous = torch.empty(h.shape, dtype=h.dtype, device=h.device)
        with torch.no_grad():
            # Note [Unpacks ask the device tier again]: a tensor packed on a host lease because
            # the device tier was full then asks it again here, unless it is bigger than the
            # tier. Which packs found the tier full varies from step to step; asking the
            # device at every unpack keeps the pool's sequence of device acquires (served or
            # not) the same each step, which is what the transfer planner learns (Note [A
            # failed acquire is still a step of the schedule], runtime/core/pool.cpp), and
            # brings the tensor back through the pool's copy, as offload_module's slots do.
            lease, h.host = _acquire(self.pool, h.tensor, "read", self._host_only(h))
            with lease:
                src = _bytes_of(lease)
                contiguous.reshape(-1).view(torch.uint8).copy_(src.to(h.device))
                if src.device.type == "cuda":
                    torch.cuda.current_stream(src.device).synchronize()
                del src
            if h.strides != tuple(contiguous.stride()) and _non_overlapping(h.shape, h.strides):
                out = torch.empty_strided(h.shape, h.strides, dtype=h.dtype, device=h.device)
                out.copy_(contiguous)
            else:
                out = contiguous
        h.unpacks += 1
        self.unpacks += 1
        return out

    # -- context -------------------------------------------------------------------------

    def __enter__(self):
        if self._hooks is not None:
            raise RuntimeError("tierpool.torch.offload_activations is not reentrant")
        self._device_bytes = self.pool.stats()["tiers"][0]["capacity_bytes"]
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        _active_activation_offloads.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        hooks, self._hooks = self._hooks, None
        if self in _active_activation_offloads:
            _active_activation_offloads.remove(self)
        hooks.__exit__(exc_type, exc, tb)
        return False

    @property
    def live(self):
        """How many offloaded tensors still hold a pool tensor."""
        return sum(1 for r in self._order if (h := r()) is not None and h.tensor is not None)

    def __repr__(self):
        return (f"offload_activations(tensors={self.tensors}, bytes={self.bytes}, kept={self.kept}, "
                f"unpacks={self.unpacks}, prefetches={self.prefetches}, live={self.live})")


# ---- parameter, gradient and optimizer-state offload ---------------------------------------


def _placeholder(like):
    """A tensor with the sizes, dtype and device of `like` over one element (all strides 0),
    NaN for a floating dtype (0 else): a parameter's or state's stand-in between uses.

    Note [Placeholders]: between uses a parameter's ``.data`` (and an offloaded optimizer
    state) is such a tensor, not ``torch.empty(0)``: autograd's AccumulateGrad and the
    ``.grad`` setter read the variable's sizes, which must stay the parameter's own. Not a
    storage resized to 0 bytes either (FSDP's way): reading one of those crashes the process,
    while reading this one (printing a parameter between steps) gives NaNs and nothing
    worse. With all strides 0 the variable is not dense, so AccumulateGrad keeps or makes a
    contiguous gradient: the layout the parameter (contiguous: the pool's copy is) has.
    """
    one = torch.full((1,), float("nan") if like.dtype.is_floating_point or like.dtype.is_complex else 0,
                     dtype=like.dtype, device=like.device)
    return one.as_strided(tuple(like.shape), (0,) * like.dim())


def _write(pool, pt, src):
    """Copies the contiguous bytes of torch tensor `src` into pool tensor `pt`."""
    flat = src.detach().contiguous().reshape(-1).view(torch.uint8)
    lease, _ = _acquire(pool, pt, "write_discard", False)
    with lease:
        dst = _bytes_of(lease)
        dst.copy_(flat.to(dst.device))
        if dst.device.type == "cuda":
            torch.cuda.current_stream(dst.device).synchronize()
        del dst


def _read(pool, pt, shape, dtype, device):
    """A new torch tensor (contiguous) with pool tensor `pt`'s bytes."""
    out = torch.empty(shape, dtype=dtype, device=device)
    lease = pool.acquire_host(pt, "read")
    with lease:
        src = _bytes_of(lease)
        out.reshape(-1).view(torch.uint8).copy_(src.to(out.device))
        del src
    return out


def _typed_view(lease, shape, dtype):
    """The lease's bytes as a tensor of `shape` and `dtype`, zero-copy; keeps the lease alive."""
    flat = _bytes_of(lease)
    if flat.numel() == 0:
        return flat.view(dtype).reshape(shape)
    return flat.view(dtype).view(shape)


class _Slot:
    """One offloaded tensor: a parameter, its gradient or an optimizer state (its pool tensor
    and layout), and the lease and view it has while in use."""

    __slots__ = ("name", "tensor", "shape", "dtype", "device", "nbytes", "lease", "view", "host", "placeholder")

    def __init__(self, name, shape, dtype, device):
        self.name = name
        self.tensor = None
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self.nbytes = 0
        self.lease = None
        self.view = None
        self.host = False
        self.placeholder = None

    def open(self, pool, access, host=False):
        """Leases the slot's pool tensor and returns a zero-copy view of its bytes.

        Note [Host leases for a full device tier]: when the device tier cannot take the tensor
        now (bigger than the tier, or the tier pinned full) a host lease is taken instead, but
        only for a tensor that lives on the CPU (the simulated device, or a CPU model): its
        view is a CPU tensor. For a CUDA tensor the OutOfMemory is raised: a host view would be
        on the wrong device. Unlike offload_activations' handles the choice is made again at
        each use, so that a tensor comes back to the device tier once there is room."""
        if host:
            self.lease = pool.acquire_host(self.tensor, access)
        else:
            try:
                self.lease = pool.acquire(self.tensor, access)
            except OutOfMemory:
                if self.device.type != "cpu":
                    raise
                self.lease = pool.acquire_host(self.tensor, access)
                self.host = True
            else:
                pool.synchronize(self.lease.stream)
                self.host = False
        self.view = _typed_view(self.lease, self.shape, self.dtype)
        if not host and self.view.device != self.device:
            got = self.view.device
            self.close()
            raise LogicError(f"tierpool.torch: '{self.name}' is a {self.device} tensor but the pool's leases are "
                             f"{got} memory: move the model to {got} first")
        return self.view

    def close(self):
        """Drops the view and ends the lease; a view still held elsewhere (a tensor the caller
        kept) keeps the lease alive until that tensor goes (Note [Leases outlived by views])."""
        self.view = None
        lease, self.lease = self.lease, None
        if lease is not None and lease.exports == 0:
            lease.release()

    def free(self, pool):
        t, self.tensor = self.tensor, None
        if t is not None:
            try:
                pool.free(t)
            except Exception:  # the pool was closed first
                pass


class _Param:
    """An offloaded parameter: its slot, its gradient's slot, its placeholder."""

    __slots__ = ("param", "name", "unit", "slot", "grad", "placeholder", "acc_node", "acc_hook", "uses", "swapped")

    def __init__(self, param, name, unit):
        self.param = param
        self.name = name
        self.unit = unit
        self.slot = _Slot(name, param.shape, param.dtype, param.device)
        self.grad = None
        self.placeholder = None
        self.acc_node = None
        self.acc_hook = None
        self.uses = 0
        self.swapped = False  # .data is the placeholder (the pool has the values)


class _SavedParam:
    """What autograd keeps for a saved tensor that is (a view of) an offloaded parameter."""

    __slots__ = ("rec", "offset", "shape", "strides")

    def __init__(self, rec, offset, shape, strides):
        self.rec = rec
        self.offset = offset
        self.shape = shape
        self.strides = strides


class _Delegated:
    """A saved tensor handed on to an offload_activations context (or kept, `ctx` None)."""

    __slots__ = ("ctx", "packed")

    def __init__(self, ctx, packed):
        self.ctx = ctx
        self.packed = packed


# An offloaded parameter carries this attribute, a weak reference to its handle: offloading it
# twice is refused. (Not a WeakKeyDictionary: tensors compare elementwise.)
_MARK = "_tierpool_offloaded_by"


def _offloaded_by(p):
    ref = getattr(p, _MARK, None)
    h = ref() if ref is not None else None
    return h if h is not None and not h.closed else None


def _require_module(model, who):
    if not isinstance(model, torch.nn.Module):
        raise LogicError(f"tierpool.torch.{who}: expected a torch.nn.Module, got {type(model).__name__}")


def _default_units(model):
    """The model's children that hold parameters, each one unit with all its parameters (a
    ModuleList's or ModuleDict's children instead of it: containers that are never called);
    and the model itself for the parameters it holds directly (or when it has no such child)."""
    units = []

    def add(prefix, m):
        for name, c in m.named_children():
            if not any(True for _ in c.parameters()):
                continue
            if isinstance(c, (torch.nn.ModuleList, torch.nn.ModuleDict)):
                add(f"{prefix}{name}.", c)
            else:
                units.append((prefix + name, c))

    add("", model)
    own = list(model.parameters(recurse=False))
    if own or not units:
        units.insert(0, ("", model))
    return units


class OffloadedModule:
    """The handle of :func:`offload_module`: a model whose parameters (and gradients) live in
    a pool. ``close()`` (or the end of a ``with`` block) gives the model back its tensors.

    Counters: ``params``, ``param_bytes``, ``grads`` (gradients held in the pool now),
    ``acquires`` (parameter leases taken, forward and backward), ``saved`` (saved tensors
    autograd kept as references to a parameter instead of a copy), ``prefetches``
    (``pool.prefetch`` calls made).
    """

    def __init__(self, pool, model, *, units=None, prefetch=True, offload_grads=True, name="param",
                 priority=0.0):
        _require_module(model, "offload_module")
        self.pool = pool
        self.model = model
        self.prefetch = bool(prefetch)
        self.offload_grads = bool(offload_grads)
        self.priority = float(priority)
        self.closed = False
        self.acquires = 0
        self.saved = 0
        self.prefetches = 0
        self._optimizers = []
        self._active = []  # the _Param records materialised now (units in forward)
        self._last_prefetched = None  # the unit _prefetch_unit asked for last
        self._placeholders = {}  # data_ptr of each parameter's placeholder -> its _Param
        named_units = _default_units(model) if units is None else [
            (u[0], u[1]) if isinstance(u, tuple) else (type(u).__name__, u) for u in units]
        # Note [Units]: a unit is a module whose parameters (all of them, recursively, but the
        # root's own only) are brought in together for its forward. A child is the default
        # unit, not each module that holds parameters: a module may use a sub-module's
        # parameters without calling it (MultiheadAttention reads out_proj.weight), so the
        # parameters of a whole child must be there while it runs.
        names = {id(p): n for n, p in model.named_parameters(remove_duplicate=False)} if _has_remove_duplicate() \
            else {id(p): n for n, p in model.named_parameters()}
        seen = {}
        self.units = []  # (module, [ _Param ])
        self._by_param = {}
        for ui, (uname, unit) in enumerate(named_units):
            params = list(unit.parameters(recurse=unit is not model or units is not None))
            recs = []
            for p in params:
                if id(p) in seen:
                    raise LogicError(
                        f"tierpool.torch.offload_module: parameter '{names.get(id(p), '?')}' is shared by units "
                        f"'{seen[id(p)]}' and '{uname or type(unit).__name__}' (tied weights): offload the module "
                        f"that holds both as one unit (units=[...]) or untie them")
                seen[id(p)] = uname or type(unit).__name__
                if _offloaded_by(p) is not None:
                    raise LogicError(
                        f"tierpool.torch.offload_module: parameter '{names.get(id(p), '?')}' is already offloaded "
                        f"(the module was offloaded twice; close the first handle)")
                recs.append(_Param(p, names.get(id(p), f"{uname}.?"), ui))
            self.units.append((unit, recs))
        missing = [n for n, p in model.named_parameters() if id(p) not in seen]
        if missing:
            raise LogicError(f"tierpool.torch.offload_module: parameters in no unit: {', '.join(missing)}")
        for unit, recs in self.units:
            for rec in recs:
                if rec.param.layout != torch.strided or rec.param.is_quantized:
                    raise LogicError(f"tierpool.torch.offload_module: parameter '{rec.name}' is not a dense tensor")
        # Move every parameter into the pool.
        self.params = 0
        self.param_bytes = 0
        self._wrapped = []
        try:
            for unit, recs in self.units:
                for rec in recs:
                    self._offload_param(rec, name)
            for ui, (unit, recs) in enumerate(self.units):
                self._wrap(ui, unit)
            # Note [zero_grad goes to the pool]: the model's zero_grad (torch 1.13 zeroes
            # p.grad in place by default) would not see the pool's gradients, and the next
            # backward would add to them: the model's zero_grad frees them instead.
            self._had_zero_grad = "zero_grad" in model.__dict__
            self._orig_zero_grad = model.__dict__.get("zero_grad")
            model.zero_grad = self._zero_grad_from_model
        except BaseException:
            self._restore()
            raise

    # -- setting up and tearing down --------------------------------------------------------

    def _offload_param(self, rec, prefix):
        p = rec.param
        nbytes = p.numel() * p.element_size()
        rec.slot.nbytes = nbytes
        rec.placeholder = _placeholder(p.data)
        if nbytes:
            rec.slot.tensor = self.pool.allocate(nbytes, name=f"{prefix}.{rec.name}", priority=self.priority)
            _write(self.pool, rec.slot.tensor, p.data)
            self.params += 1
            self.param_bytes += nbytes
        if p.grad is not None and self.offload_grads and nbytes:
            self._store_grad(rec, p.grad)
            p.grad = None
        if p.requires_grad and self.offload_grads:
            # Note [Gradients to the pool]: torch 1.13 has no post-accumulate-grad hook; the
            # AccumulateGrad node of the parameter (kept alive here, so that autograd uses
            # this one) takes a post hook that runs once the gradient is in p.grad.
            with torch.enable_grad():  # offload_module may be called under no_grad
                rec.acc_node = p.expand_as(p).grad_fn.next_functions[0][0]
            rec.acc_hook = rec.acc_node.register_hook(functools.partial(self._grad_ready, rec))
        setattr(p, _MARK, weakref.ref(self))
        self._by_param[id(p)] = rec
        if nbytes:
            p.data = rec.placeholder
            rec.swapped = True
            self._placeholders[rec.placeholder.data_ptr()] = rec

    def _wrap(self, ui, unit):
        # Note [Forward wrapper, not forward hooks]: the unit's forward is wrapped (an instance
        # attribute, removed by close) instead of a forward pre-hook and a forward hook pair:
        # torch 1.13 does not run forward hooks when forward raises, which would leave the
        # parameters leased and the unit's saved-tensor hooks pushed. try/finally does.
        had = "forward" in unit.__dict__
        orig = unit.__dict__["forward"] if had else None
        bound = unit.forward
        unit.forward = functools.partial(self._forward, ui, bound)
        self._wrapped.append((unit, had, orig))

    def _zero_grad_from_model(self, set_to_none=True):
        self.zero_grad()

    def _restore(self):
        """Gives every parameter (and gradient) back to torch and frees the pool tensors."""
        if getattr(self, "_had_zero_grad", None) is not None:
            if self._had_zero_grad:
                self.model.zero_grad = self._orig_zero_grad
            else:
                self.model.__dict__.pop("zero_grad", None)
            self._had_zero_grad = None
        for unit, had, orig in reversed(self._wrapped):
            if had:
                unit.forward = orig
            else:
                unit.__dict__.pop("forward", None)
        self._wrapped = []
        for unit, recs in self.units:
            for rec in recs:
                p = rec.param
                if rec.acc_hook is not None:
                    rec.acc_hook.remove()
                    rec.acc_hook = None
                rec.acc_node = None
                if rec.slot.tensor is not None:
                    if rec.swapped:  # else the set-up failed before: p.data is still its own
                        p.data = _read(self.pool, rec.slot.tensor, rec.slot.shape, rec.slot.dtype, rec.slot.device)
                        rec.swapped = False
                    rec.slot.free(self.pool)
                if rec.grad is not None:
                    p.grad = _read(self.pool, rec.grad.tensor, rec.grad.shape, rec.grad.dtype, rec.grad.device)
                    rec.grad.free(self.pool)
                    rec.grad = None
                if getattr(p, _MARK, None) is not None and getattr(p, _MARK)() is self:
                    delattr(p, _MARK)

    def close(self):
        """Restores normal tensors (parameters, gradients; and the optimizer states of every
        OffloadedOptimizer on this handle) and frees the pool tensors. Idempotent."""
        if self.closed:
            return
        for opt in list(self._optimizers):
            opt.close()
        self._restore()
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    def _check_open(self, what):
        if self.closed:
            raise LogicError(f"tierpool.torch: {what} on a closed OffloadedModule")

    # -- forward and backward -----------------------------------------------------------------

    def _prefetch_unit(self, ui):
        # Backward rebuilds several saved parameters of one unit in a row: each would ask for
        # the same unit before it; the second and later asks are skipped.
        if not self.prefetch or ui == self._last_prefetched:
            return
        self._last_prefetched = ui
        if not (0 <= ui < len(self.units)):
            return
        for rec in self.units[ui][1]:
            if rec.slot.tensor is not None and not rec.slot.host and rec.uses == 0:
                self.pool.prefetch(rec.slot.tensor, 0)
                self.prefetches += 1

    def _forward(self, ui, orig, *args, **kwargs):
        if self.closed:  # a stale wrapper (cannot happen after close: it is removed)
            return orig(*args, **kwargs)
        recs = self.units[ui][1]
        opened = []
        try:
            for rec in recs:
                if rec.slot.tensor is None:
                    continue
                if rec.uses == 0:
                    rec.param.data = rec.slot.open(self.pool, "read")
                    self.acquires += 1
                    self._active.append(rec)
                rec.uses += 1
                opened.append(rec)
            # Note [Prefetch the next unit]: the next unit in registration order (the order a
            # Sequential runs them) is prefetched while this one computes.
            self._prefetch_unit(ui + 1)
            with torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack):
                return orig(*args, **kwargs)
        finally:
            for rec in opened:
                rec.uses -= 1
                if rec.uses == 0:
                    rec.param.data = rec.placeholder
                    rec.slot.close()
                    self._active.remove(rec)

    def _find(self, t):
        """The materialised parameter whose bytes `t` lies in, and t's offset in elements."""
        if not self._active or t.layout != torch.strided or t.numel() == 0:
            return None, 0
        ptr = t.data_ptr()
        for rec in self._active:
            v = rec.slot.view
            if v is None or t.dtype != rec.slot.dtype or t.device != v.device:
                continue
            base = v.data_ptr()
            if base <= ptr < base + rec.slot.nbytes:
                return rec, (ptr - base) // t.element_size()
        return None, 0

    # Note [Saved tensors under offload_module]: while a unit runs, saved tensors that are (views
    # of) its parameters (a Linear saves its weight, transposed) are saved as references to
    # the parameter's pool tensor, not copied: backward leases the parameter again (zero-copy)
    # and rebuilds the view. Every other saved tensor goes to the innermost offload_activations
    # context when one is active, else stays as it is. Other saved-tensor hooks the caller has
    # pushed are not seen inside a unit (torch runs the innermost hooks only).
    def _pack(self, t):
        rec, offset = self._find(t)
        if rec is not None:
            self.saved += 1
            return _SavedParam(rec, offset, tuple(t.shape), tuple(t.stride()))
        if t.layout == torch.strided and t.numel():
            stale = self._placeholders.get(t.data_ptr())
            if stale is not None and stale.uses == 0:
                # A unit's forward used another unit's parameter (its placeholder: NaNs).
                raise LogicError(
                    f"tierpool.torch: parameter '{stale.name}' was used outside its unit "
                    f"('{type(self.units[stale.unit][0]).__name__}' #{stale.unit}), while it holds no values: "
                    f"make one unit of the module that uses it and the one that holds it (units=[...])")
        ctx = _active_activation_offloads[-1] if _active_activation_offloads else None
        return _Delegated(ctx, t if ctx is None else ctx._pack(t))

    def _unpack(self, packed):
        if isinstance(packed, _Delegated):
            return packed.packed if packed.ctx is None else packed.ctx._unpack(packed.packed)
        rec = packed.rec
        if self.closed or rec.slot.tensor is None:
            raise LogicError(f"tierpool.torch: backward needs parameter '{rec.name}' of a closed OffloadedModule")
        # Backward runs the units in reverse: the previous one is needed next.
        self._prefetch_unit(rec.unit - 1)
        slot = _Slot(rec.slot.name, rec.slot.shape, rec.slot.dtype, rec.slot.device)
        slot.tensor = rec.slot.tensor
        slot.open(self.pool, "read")
        self.acquires += 1
        flat = slot.view.reshape(-1)
        # Note [Leases outlived by views]: the rebuilt tensor is a view of the lease and keeps
        # it alive (DLPack); the lease ends when autograd drops the tensor after its node ran.
        slot.view = slot.lease = None
        return flat.as_strided(packed.shape, packed.strides, packed.offset)

    # -- gradients ------------------------------------------------------------------------------

    def _store_grad(self, rec, g):
        """Adds gradient `g` into the parameter's pool gradient (allocated at the first one).

        Note [Bit-identical accumulation]: torch accumulates a second gradient as old + new;
        the pool's copy does old += new, the same sum (IEEE addition is commutative)."""
        if rec.grad is None:
            slot = _Slot(rec.name + ".grad", g.shape, g.dtype, g.device)
            slot.nbytes = g.numel() * g.element_size()
            slot.tensor = self.pool.allocate(slot.nbytes, name=f"grad.{rec.name}", priority=self.priority)
            try:
                _write(self.pool, slot.tensor, g)
            except BaseException:
                slot.free(self.pool)
                raise
            rec.grad = slot
            return
        view = rec.grad.open(self.pool, "read_write")
        try:
            with torch.no_grad():
                view.add_(g.to(view.device))
                if view.device.type == "cuda":
                    torch.cuda.current_stream(view.device).synchronize()
        finally:
            del view
            rec.grad.close()

    def _grad_ready(self, rec, grad_inputs, grad_outputs):
        g = rec.param.grad
        if g is None or self.closed:
            return
        if g.is_sparse:
            return  # sparse gradients stay in torch
        rec.param.grad = None
        self._store_grad(rec, g)

    @property
    def grads(self):
        """How many gradients the pool holds now."""
        return sum(1 for _, recs in self.units for r in recs if r.grad is not None)

    def zero_grad(self, set_to_none=True):
        """Frees the pool's gradients (as ``zero_grad(set_to_none=True)``, whatever
        `set_to_none` says: a zeroed gradient would be a pool tensor of zeros to add to)."""
        self._check_open("zero_grad")
        self._free_grads(rec for _, recs in self.units for rec in recs)

    def _free_grads(self, recs):
        for rec in recs:
            if rec.grad is not None:
                rec.grad.free(self.pool)
                rec.grad = None
            rec.param.grad = None

    def gradients(self):
        """Copies of the gradients, {name: tensor or None}, wherever they are."""
        self._check_open("gradients")
        out = {}
        for _, recs in self.units:
            for rec in recs:
                if rec.grad is not None:
                    out[rec.name] = _read(self.pool, rec.grad.tensor, rec.grad.shape, rec.grad.dtype, rec.grad.device)
                else:
                    g = rec.param.grad
                    out[rec.name] = None if g is None else g.detach().clone()
        return out

    def parameters_copy(self):
        """Copies of the parameters' values, {name: tensor}."""
        self._check_open("parameters_copy")
        out = {}
        for _, recs in self.units:
            for rec in recs:
                if rec.slot.tensor is None:
                    out[rec.name] = rec.param.detach().clone()
                else:
                    out[rec.name] = _read(self.pool, rec.slot.tensor, rec.slot.shape, rec.slot.dtype, rec.slot.device)
        return out

    def state_dict(self):
        """The model's ``state_dict()`` with copies of the offloaded parameters' values (the
        model's own would hold the placeholders, NaNs; do not save that one)."""
        self._check_open("state_dict")
        sd = self.model.state_dict()
        by_id = {id(rec.param): rec for _, recs in self.units for rec in recs}
        for key, p in self.model.named_parameters():
            rec = by_id.get(id(p))
            if rec is not None and rec.slot.tensor is not None and key in sd:
                sd[key] = _read(self.pool, rec.slot.tensor, rec.slot.shape, rec.slot.dtype, rec.slot.device)
        return sd

    def record(self, param):
        return self._by_param.get(id(param))

    def __repr__(self):
        state = "closed" if self.closed else f"params={self.params}, param_bytes={self.param_bytes}, grads={self.grads}"
        return (f"OffloadedModule({state}, units={len(self.units)}, acquires={self.acquires}, "
                f"saved={self.saved}, prefetches={self.prefetches})")


def _has_remove_duplicate():
    import inspect

    try:
        return "remove_duplicate" in inspect.signature(torch.nn.Module.named_parameters).parameters
    except (TypeError, ValueError):
        return False


def offload_module(pool, model, *, units=None, prefetch=True, offload_grads=True, name="param", priority=0.0):
    """Moves `model`'s parameters (and gradients) into `pool`, unit by unit.

    Each parameter becomes a pool tensor; between uses its ``.data`` is a one-element NaN
    placeholder with the parameter's shape (Note [Placeholders]). When a
    unit's forward runs its parameters are leased (``"read"``) and ``.data`` is a zero-copy
    view of the lease; the next unit is prefetched (``prefetch=True``). Saved tensors that
    are parameters are kept as references (backward leases them again and prefetches the
    unit before). Gradients go to the pool as autograd produces them (``offload_grads``).
    ``units``: modules (or (name, module) pairs) brought in together; default: the model's
    children that hold parameters (and the model for its own). Returns an
    :class:`OffloadedModule`; ``close()`` restores normal tensors. Raises LogicError for a
    model offloaded twice or a parameter shared by two units (tied weights).
    """
    return OffloadedModule(pool, model, units=units, prefetch=prefetch, offload_grads=offload_grads,
                           name=name, priority=priority)


class OffloadedOptimizer:
    """A torch optimizer whose states live in the pool, stepping an :class:`OffloadedModule`'s
    parameters one at a time (from :func:`offload_optimizer`).

    ``step()`` runs, for each parameter with a gradient, the optimizer's own ``step`` on that
    parameter alone: its value (``"read_write"``), gradient (``"read"``) and state tensors
    (``"read_write"``) leased and viewed zero-copy, the next parameter's prefetched. State
    tensors the optimizer creates (Adam's ``exp_avg`` and ``exp_avg_sq``, SGD's
    ``momentum_buffer``) go to the pool after the step that made them; 0-d states (Adam's
    ``step``) and those smaller than ``min_bytes`` stay in torch.

    ``step_on="device"`` (default): device leases, the result bit for bit that of the plain
    optimizer. ``step_on="host"``: host leases, the step on the host copies (ZeRO-Offload's
    CPU-step idea, with torch's CPU kernels); see docs/chapters/pytorch_offload.md for the
    tolerance. Counters: ``steps``, ``states`` (state tensors in the pool), ``state_bytes``.
    """

    def __init__(self, module, optimizer, *, step_on="device", min_bytes=0):
        if not isinstance(module, OffloadedModule):
            raise LogicError("tierpool.torch.offload_optimizer: expected the OffloadedModule of offload_module()")
        module._check_open("offload_optimizer")
        if step_on not in ("device", "host"):
            raise LogicError(f"tierpool.torch.offload_optimizer: step_on must be 'device' or 'host', got {step_on!r}")
        if any(o.optimizer is optimizer for o in module._optimizers):
            raise LogicError("tierpool.torch.offload_optimizer: this optimizer is already offloaded")
        self.module = module
        self.pool = module.pool
        self.optimizer = optimizer
        self.step_on = step_on
        self.min_bytes = int(min_bytes)
        self.steps = 0
        self.closed = False
        self._slots = {}  # id(param) -> {state key: _Slot}
        self._order = []  # (group index, param) in the optimizer's order
        for gi, group in enumerate(optimizer.param_groups):
            for p in group["params"]:
                self._order.append((gi, p))
        for gi, p in self._order:
            if module.record(p) is None:
                raise LogicError("tierpool.torch.offload_optimizer: the optimizer has a parameter the "
                                 "OffloadedModule does not hold")
        # States that exist already (an optimizer that has stepped) go to the pool now.
        for _, p in self._order:
            self._offload_new_states(p)
        # Note [The wrapped optimizer's own methods]: a loop that still calls the torch
        # optimizer's step() would skip every parameter (p.grad is None: the gradients are in
        # the pool) and its zero_grad() would leave the pool's gradients to be added to; both
        # are sent here until close().
        self._orig_step = optimizer.step
        self._orig_state_dict = optimizer.state_dict
        self._patched = {k: optimizer.__dict__[k] for k in ("step", "zero_grad", "state_dict")
                         if k in optimizer.__dict__}
        optimizer.step = self.step
        optimizer.zero_grad = self.zero_grad
        optimizer.state_dict = self.state_dict
        module._optimizers.append(self)

    @property
    def states(self):
        return sum(len(d) for d in self._slots.values())

    @property
    def state_bytes(self):
        return sum(s.nbytes for d in self._slots.values() for s in d.values())

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def _check_open(self, what):
        if self.closed:
            raise LogicError(f"tierpool.torch: {what} on a closed OffloadedOptimizer")

    def _offload_new_states(self, p):
        state = self.optimizer.state.get(p)
        if not state:
            return
        slots = self._slots.setdefault(id(p), {})
        rec = self.module.record(p)
        for key, v in list(state.items()):
            if key in slots or not isinstance(v, torch.Tensor) or v.dim() == 0 or v.layout != torch.strided:
                continue
            nbytes = v.numel() * v.element_size()
            if nbytes == 0 or nbytes < self.min_bytes:
                continue
            slot = _Slot(f"{rec.name}.{key}", v.shape, v.dtype, v.device)
            slot.nbytes = nbytes
            slot.tensor = self.pool.allocate(nbytes, name=f"state.{rec.name}.{key}", priority=self.module.priority)
            try:
                _write(self.pool, slot.tensor, v)
            except BaseException:
                slot.free(self.pool)
                raise
            slots[key] = slot
            slot.placeholder = _placeholder(v)
            state[key] = slot.placeholder

    def zero_grad(self, set_to_none=True):
        """Frees the gradients (the pool's and torch's), as ``zero_grad(set_to_none=True)``."""
        self._check_open("zero_grad")
        self.module._check_open("zero_grad")
        self.module._free_grads(self.module.record(p) for _, p in self._order)

    def _prefetch(self, p):
        if not self.module.prefetch or p is None:
            return
        rec = self.module.record(p)
        for slot in [rec.slot, rec.grad] + list(self._slots.get(id(p), {}).values()):
            if slot is not None and slot.tensor is not None and not slot.host:
                self.pool.prefetch(slot.tensor, 0)
                self.module.prefetches += 1

    def step(self, closure=None):
        """One optimizer step over every parameter with a gradient (see the class docstring)."""
        self._check_open("step")
        self.module._check_open("step")
        if closure is not None:
            raise LogicError("tierpool.torch.OffloadedOptimizer.step: a closure is not supported "
                             "(the forward would run with the parameters leased for the step)")
        groups = self.optimizer.param_groups
        kept = [g["params"] for g in groups]
        host = self.step_on == "host"
        try:
            todo = [(gi, p) for gi, p in self._order
                    if self.module.record(p).grad is not None or p.grad is not None]
            for i, (gi, p) in enumerate(todo):
                self._prefetch(todo[i + 1][1] if i + 1 < len(todo) else None)
                self._step_one(gi, p, groups, host)
        finally:
            for g, params in zip(groups, kept):
                g["params"] = params
        self.steps += 1

    def _step_one(self, gi, p, groups, host):
        # Note [One parameter at a time]: the optimizer steps each parameter alone (its groups
        # narrowed to it) so that only one parameter's value, gradient and states are leased at
        # once and the device tier can be far smaller than the model. torch's single-tensor
        # optimizers (the CPU default) update each parameter independently, so the result is
        # the same bits as one step over all; a foreach or fused implementation may round
        # differently (the tests use the defaults).
        rec = self.module.record(p)
        state = self.optimizer.state
        slots = self._slots.get(id(p), {})
        opened = []
        target = p
        try:
            if host:
                # The host step runs on a stand-in parameter over host views: p's device
                # cannot be changed by assigning .data.
                if rec.slot.tensor is not None:
                    value = rec.slot.open(self.pool, "read_write", host=True)
                    opened.append(rec.slot)
                else:
                    value = p.data
                target = torch.nn.Parameter(value, requires_grad=p.requires_grad)
                if p in state:
                    state[target] = state.pop(p)
            elif rec.slot.tensor is not None:
                p.data = rec.slot.open(self.pool, "read_write")
                opened.append(rec.slot)
            if rec.grad is not None:
                g = rec.grad.open(self.pool, "read", host=host)
                opened.append(rec.grad)
                target.grad = g
            elif host and p.grad is not None:
                target.grad = p.grad.detach().cpu()
            st = state.get(target)
            for key, slot in slots.items():
                st[key] = slot.open(self.pool, "read_write", host=host)
                opened.append(slot)
            for gj, g in enumerate(groups):
                g["params"] = [target] if gj == gi else []
            with torch.no_grad():
                self._orig_step()
            if not host:  # a host step is the CPU's work, not the device's
                for r in _active_rooflines:  # the step's modelled time, while its tensors are leased
                    r._optimizer_step(target, state.get(target))
            for gj, g in enumerate(groups):
                g["params"] = []
            if host and target in state:
                state[p] = state.pop(target)
            st = state.get(p)
            if st:
                for key, slot in slots.items():
                    if slot.placeholder is None:
                        slot.placeholder = _placeholder(slot.view)
                    st[key] = slot.placeholder
        finally:
            if host and target is not p and target in state:
                state[p] = state.pop(target)
            if rec.grad is not None or host:
                target.grad = None
            if rec.slot.tensor is not None and not host:
                p.data = rec.placeholder
            for slot in opened:
                slot.close()
            del target
        self._offload_new_states(p)

    def state_dict(self):
        """The optimizer's ``state_dict()`` with copies of the offloaded states."""
        self._check_open("state_dict")
        state = self.optimizer.state
        swapped = []
        try:
            for _, p in self._order:
                for key, slot in self._slots.get(id(p), {}).items():
                    swapped.append((p, key, state[p][key]))
                    state[p][key] = _read(self.pool, slot.tensor, slot.shape, slot.dtype, slot.device)
            sd = self._orig_state_dict()
            # state_dict() holds the optimizer's own per-parameter dicts: copies of them keep
            # the values once the placeholders are back.
            sd["state"] = {k: dict(v) for k, v in sd["state"].items()}
            return sd
        finally:
            for p, key, old in swapped:
                state[p][key] = old

    def close(self):
        """Gives the optimizer back its state tensors (and its own step, zero_grad and
        state_dict) and frees the states' pool tensors. Idempotent."""
        if self.closed:
            return
        for k in ("step", "zero_grad", "state_dict"):
            if k in self._patched:
                setattr(self.optimizer, k, self._patched[k])
            else:
                self.optimizer.__dict__.pop(k, None)
        for _, p in self._order:
            slots = self._slots.pop(id(p), {})
            st = self.optimizer.state.get(p)
            for key, slot in slots.items():
                if st is not None and slot.tensor is not None:
                    st[key] = _read(self.pool, slot.tensor, slot.shape, slot.dtype, slot.device)
                slot.free(self.pool)
        if self in self.module._optimizers:
            self.module._optimizers.remove(self)
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    def __repr__(self):
        return (f"OffloadedOptimizer({type(self.optimizer).__name__}, step_on={self.step_on!r}, steps={self.steps}, "
                f"states={self.states}, state_bytes={self.state_bytes}{', closed' if self.closed else ''})")


def offload_optimizer(module, optimizer, *, step_on="device", min_bytes=0):
    """Wraps `optimizer` (over `module`'s parameters, `module` an :class:`OffloadedModule`) so
    that its state tensors live in the module's pool: an :class:`OffloadedOptimizer`. Call its
    ``step()`` and ``zero_grad()`` instead of the optimizer's."""
    return OffloadedOptimizer(module, optimizer, step_on=step_on, min_bytes=min_bytes)


ALLOCATOR_MALLOC = "tierpool_torch_malloc"
ALLOCATOR_FREE = "tierpool_torch_free"


def allocator_entry_points(pool):
    """Make `pool` the pool of the extension's C allocator entry points, and return
    ``(path, malloc_name, free_name)`` for ``torch.cuda.memory.CUDAPluggableAllocator``.

    ``tierpool_torch_malloc(size_t size, int device, cudaStream_t stream)`` allocates a
    device-tier tensor of the pool and keeps a lease on it (ordered on `stream`) until
    ``tierpool_torch_free(void* ptr, size_t size, int device, cudaStream_t stream)``: such
    a block never moves (a pluggable allocator hands out raw pointers), but the pool counts
    it and evicts its other tensors to make room. Pass ``None`` to detach. One pool at a
    time; switching while blocks are live raises LogicError. Note [A pluggable allocator
    pins its blocks] in python/src/torch_allocator.cpp.
    """
    from . import _tierpool

    _tierpool._torch_allocator_attach(pool)
    return (_tierpool.__file__, ALLOCATOR_MALLOC, ALLOCATOR_FREE)


def allocator_stats():
    """The C allocator's figures: live_blocks, live_bytes, mallocs, frees, failures, foreign_frees."""
    from . import _tierpool

    return _tierpool._torch_allocator_stats()


def mem_pool(pool):
    """A ``torch.cuda.MemPool`` whose blocks come from `pool` (through
    ``CUDAPluggableAllocator`` and the extension's C entry points, allocator_entry_points).

    Use it with ``torch.cuda.use_mem_pool(mp)``. Needs a CUDA build of torch with
    ``torch.cuda.memory.CUDAPluggableAllocator`` and ``torch.cuda.MemPool`` (torch >= 2.x) and
    a pool on the CUDA backend; otherwise raises LogicError naming what is missing. The
    blocks are pinned for their whole life: see allocator_entry_points and
    docs/chapters/pytorch_offload.md.
    """
    missing = []
    if not torch.cuda.is_available():
        missing.append("torch.cuda is not available (a CPU build of torch or no GPU)")
    if not hasattr(getattr(torch.cuda, "memory", None), "CUDAPluggableAllocator"):
        missing.append(f"torch {torch.__version__} has no torch.cuda.memory.CUDAPluggableAllocator")
    if not hasattr(torch.cuda, "MemPool"):
        missing.append(f"torch {torch.__version__} has no torch.cuda.MemPool")
    if getattr(pool, "backend", None) != "cuda":
        missing.append(f"the pool's backend is {getattr(pool, 'backend', '?')!r}, not 'cuda'")
    if missing:
        raise LogicError("tierpool.torch.mem_pool: not available: " + "; ".join(missing))
    path, malloc_name, free_name = allocator_entry_points(pool)
    allocator = torch.cuda.memory.CUDAPluggableAllocator(path, malloc_name, free_name)
    return torch.cuda.MemPool(allocator.allocator())


# ---- a roofline model of the device time, for recorded traces ---------------------------------

def _tensor_bytes(x):
    """Bytes of the tensors in `x` (a tensor, or a tuple / list / dict of them, nested)."""
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (tuple, list)):
        return sum(_tensor_bytes(y) for y in x)
    if isinstance(x, dict):
        return sum(_tensor_bytes(y) for y in x.values())
    return 0


def _first_tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)):
        for y in x:
            t = _first_tensor(y)
            if t is not None:
                return t
    return None


def _builtin_cost(module, inputs, output):
    """(flops, bytes) of one forward of a leaf module: matrix products counted as 2 flops per
    multiply-add, every other op as the bytes it reads and writes (inputs, outputs, its own
    parameters), which bounds it on a GPU."""
    params = sum(p.numel() * p.element_size() for p in module.parameters(recurse=False))
    nbytes = _tensor_bytes(inputs) + _tensor_bytes(output) + params
    x = _first_tensor(inputs)
    y = _first_tensor(output)
    if isinstance(module, torch.nn.Linear) and x is not None:
        rows = x.numel() // max(module.in_features, 1)
        return 2 * rows * module.in_features * module.out_features, nbytes
    if isinstance(module, torch.nn.modules.conv._ConvNd) and y is not None:
        k = 1
        for d in module.kernel_size:
            k *= d
        return 2 * y.numel() * (module.in_channels // module.groups) * k, nbytes
    if isinstance(module, torch.nn.Embedding) and y is not None:
        return 0, 2 * _tensor_bytes(output)  # a gather: rows read, rows written
    if isinstance(module, torch.nn.MultiheadAttention) and x is not None:
        return _attention_cost(module, inputs, nbytes)
    return 0, nbytes


def _attention_cost(module, inputs, nbytes):
    """nn.MultiheadAttention: its forward computes with its own weights (in_proj_weight, and
    out_proj's through the functional form, never calling out_proj), so it is timed whole:
    the projections of query (L rows), key and value (S rows each) and of the output, E x E
    each, and the two products QK^T and AV (2 L S E each), 2 flops per multiply-add; its
    bytes are its inputs, output and parameters and the scores (heads x L x S) written and
    read about four times (scores, mask, softmax, product)."""
    q = inputs[0]
    k = inputs[1] if len(inputs) > 1 and isinstance(inputs[1], torch.Tensor) else q
    e = module.embed_dim
    if q.dim() == 2:  # unbatched: (L, E)
        n, length, source = 1, q.shape[0], k.shape[0]
    elif module.batch_first:
        n, length, source = q.shape[0], q.shape[1], k.shape[1]
    else:
        n, length, source = q.shape[1], q.shape[0], k.shape[0]
    flops = 2 * n * e * e * (2 * length + 2 * source) + 4 * n * length * source * e
    scores = n * module.num_heads * length * source * q.element_size()
    return flops, nbytes + 4 * scores


class Roofline:
    """The handle of :func:`roofline`: the device time it modelled and told the pool of.

    Counters (nanoseconds and kernels, over the context's life): ``forward_ns``,
    ``backward_ns``, ``optimizer_ns``, ``kernels``.
    """

    def __init__(self, pool, model, *, tflops, gbps, backward, stream, costs):
        _require_module(model, "roofline")
        for name, v in (("tflops", tflops), ("gbps", gbps), ("backward", backward)):
            if not isinstance(v, (int, float)) or not v > 0 or v != v or v == float("inf"):
                raise LogicError(f"tierpool.torch.roofline: {name} must be a positive number, got {v!r}")
        self.pool = pool
        self.model = model
        self.tflops = float(tflops)
        self.gbps = float(gbps)
        self.backward = float(backward)
        self.stream = stream
        if costs is not None and not isinstance(costs, dict):
            raise LogicError("tierpool.torch.roofline: costs maps module types to functions "
                             f"(module, inputs, output) -> (flops, bytes), got {type(costs).__name__}")
        self.costs = dict(costs or {})
        for k, f in self.costs.items():
            if not isinstance(k, type) or not callable(f):
                raise LogicError("tierpool.torch.roofline: costs maps module types to functions "
                                 "(module, inputs, output) -> (flops, bytes)")
        self.forward_ns = 0
        self.backward_ns = 0
        self.optimizer_ns = 0
        self.kernels = 0
        self._handles = None

    def time_ns(self, flops, nbytes):
        """The modelled time of one kernel: max(flops / rate, bytes / bandwidth), in whole ns."""
        ns = max(flops / (self.tflops * 1e3), nbytes / self.gbps)  # flop / (TFLOP/s * 1e12) s, bytes / (GB/s * 1e9) s
        return int(ns) + (ns > int(ns))

    def _note(self, ns):
        if ns > 0:
            self.pool.note_compute(ns, self.stream)
            self.kernels += 1

    def _forward_hook(self, module, inputs, output):
        f = self.costs.get(type(module))
        if f is not None:
            flops, nbytes = f(module, inputs, output)
        elif next(module.children(), None) is None or isinstance(module, torch.nn.MultiheadAttention):
            flops, nbytes = _builtin_cost(module, inputs, output)
        else:
            return  # a container: its children are timed
        ns = self.time_ns(flops, nbytes)
        if ns <= 0:
            return
        self._note(ns)
        self.forward_ns += ns
        if not torch.is_grad_enabled():
            return
        # Note [Backward kernels after their saved tensors]: the module's backward is noted
        # when the gradient of its input is ready, i.e. after autograd ran its node (which
        # leased the saved tensors); with no input that needs a gradient (the first layer),
        # when the gradient of its output is ready, just before.
        bns = int(ns * self.backward)
        x = next((t for t in _flat_tensors(inputs) if t.requires_grad), None)
        if x is None:
            x = next((t for t in _flat_tensors(output) if t.requires_grad), None)
        if x is None or bns <= 0:
            return

        def hook(_grad, bns=bns):
            self._note(bns)
            self.backward_ns += bns

        x.register_hook(hook)

    def _optimizer_step(self, p, state):
        """One parameter's optimizer step (OffloadedOptimizer): it reads and writes the
        parameter and its states and reads the gradient; bandwidth bound."""
        nbytes = 3 * p.numel() * p.element_size()
        if state:
            for v in state.values():
                if isinstance(v, torch.Tensor) and v.dim() > 0:
                    nbytes += 2 * v.numel() * v.element_size()
        ns = self.time_ns(12 * p.numel(), nbytes)
        self._note(ns)
        self.optimizer_ns += ns

    def __enter__(self):
        if self._handles is not None:
            raise RuntimeError("tierpool.torch.roofline is not reentrant")
        self._handles = [m.register_forward_hook(self._forward_hook) for m in self.model.modules()]
        _active_rooflines.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        for h in self._handles or ():
            h.remove()
        self._handles = None
        if self in _active_rooflines:
            _active_rooflines.remove(self)
        return False

    def __repr__(self):
        return (f"roofline(forward_ns={self.forward_ns}, backward_ns={self.backward_ns}, "
                f"optimizer_ns={self.optimizer_ns}, kernels={self.kernels})")


def _flat_tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (tuple, list)):
        for y in x:
            yield from _flat_tensors(y)


def roofline(pool, model, *, tflops=100.0, gbps=2000.0, backward=2.0, stream=None, costs=None):
    """Context manager: tells `pool` the modelled device time of each module `model` runs
    (``Pool.note_compute``), so that a recorded trace (``trace_path``, ``TIERPOOL_TRACE``)
    carries the program's compute and its replay is timed.

    Each leaf module's forward takes max(flops / ``tflops`` TFLOP/s, bytes / ``gbps`` GB/s):
    ``Linear``, convolutions and ``MultiheadAttention`` (timed whole: its projections and
    its two products) count 2 flops per multiply-add; every other module is timed by the
    bytes of its inputs, outputs and parameters. Its backward takes ``backward`` times
    as long, noted when the gradient of its input is ready (Note [Backward kernels after
    their saved tensors]). ``costs`` maps a module type to a function
    ``(module, inputs, output) -> (flops, bytes)`` that replaces the built-in estimate (for a
    container: work done besides its children, an attention's matrix products). Each
    parameter's step under :func:`offload_optimizer` is timed by its bytes (12 flops per
    element; a ``step_on="host"`` step is the CPU's and is not noted). ``stream``: the pool
    stream the kernels go on (None: the default stream).
    On the simulated backend the kernels also run there (on the virtual clock: its time).
    The defaults are of an H100-class device: 100 TFLOP/s of dense fp32/tf32 matrix
    products, 2000 GB/s of memory bandwidth.
    """
    return Roofline(pool, model, tflops=tflops, gbps=gbps, backward=backward, stream=stream, costs=costs)

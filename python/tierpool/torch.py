# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""PyTorch activation offload: autograd's saved tensors live in a tierpool pool.

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

Importing ``tierpool`` does not import torch; importing ``tierpool.torch`` does.
"""

import weakref

import torch

from ._errors import OutOfMemory

__all__ = ["offload_activations", "OffloadedTensor"]


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
        self.host = False  # True: bigger than the device tier can take, kept on host leases

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
    larger than the tier: written and read through host leases instead).

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
            if prev is not None and prev.tensor is not None:
                self.pool.prefetch(prev.tensor, 0)
                self.prefetches += 1
        contiguous = torch.empty(h.shape, dtype=h.dtype, device=h.device)
        with torch.no_grad():
            lease, h.host = _acquire(self.pool, h.tensor, "read", h.host)
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
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        hooks, self._hooks = self._hooks, None
        hooks.__exit__(exc_type, exc, tb)
        return False

    @property
    def live(self):
        """How many offloaded tensors still hold a pool tensor."""
        return sum(1 for r in self._order if (h := r()) is not None and h.tensor is not None)

    def __repr__(self):
        return (f"offload_activations(tensors={self.tensors}, bytes={self.bytes}, kept={self.kept}, "
                f"unpacks={self.unpacks}, prefetches={self.prefetches}, live={self.live})")

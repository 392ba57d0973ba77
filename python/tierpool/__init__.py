# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""tierpool: a tiered GPU memory pool (device, pinned host, managed and host memory).

A Pool holds tensors whose home tier can change; a Lease pins a tensor and makes its
bytes reachable, zero-copy, through the buffer protocol (memoryview, numpy.asarray) and
DLPack (numpy.from_dlpack, torch.from_dlpack). Without a GPU the pool runs on a simulated
device ("sim"). See docs/chapters/python.md.

    import numpy as np, tierpool
    with tierpool.Pool(backend="sim", read_environment=False,
                       tiers=[{"kind": "device", "capacity_bytes": 1 << 20},
                              {"kind": "host", "capacity_bytes": 8 << 20}]) as pool:
        with pool.allocate(4096, name="w") as t:
            with pool.acquire_host(t, "write_discard") as lease:
                view = np.asarray(lease)
                view[:] = 7
                del view
"""

from ._errors import (
    BackendError,
    DeviceLost,
    Error,
    LogicError,
    OutOfMemory,
    PolicyError,
    QuotaExceeded,
    StorageError,
    TraceError,
)
from ._policy import EvictionPolicy, Predictor, register_policy, register_predictor, unregister_policy
from ._tierpool import (
    NO_NEXT_USE,
    AccessView,
    EvictionRequest,
    PolicyDriver,
    TensorView,
    Event,
    FitReport,
    Lease,
    Pool,
    RecipeBuffer,
    RecomputeCall,
    Tensor,
    TierOptions,
    __version__,
    policies,
    replay,
    trace_gen,
    workloads,
)

__all__ = [
    "NO_NEXT_USE",
    "AccessView",
    "BackendError",
    "DeviceLost",
    "Error",
    "EvictionPolicy",
    "EvictionRequest",
    "Event",
    "FitReport",
    "Lease",
    "LogicError",
    "OutOfMemory",
    "PolicyDriver",
    "PolicyError",
    "Pool",
    "Predictor",
    "QuotaExceeded",
    "RecipeBuffer",
    "RecomputeCall",
    "StorageError",
    "Tensor",
    "TensorView",
    "TierOptions",
    "TraceError",
    "__version__",
    "policies",
    "register_policy",
    "register_predictor",
    "replay",
    "trace_gen",
    "unregister_policy",
    "workloads",
]

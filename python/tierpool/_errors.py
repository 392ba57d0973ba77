# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""The exceptions of tierpool, mirroring the C++ hierarchy (include/tierpool/error.hpp).

The extension raises instances of these classes with the figures of the C++ exception
as attributes.
"""

__all__ = [
    "Error",
    "LogicError",
    "BackendError",
    "DeviceLost",
    "OutOfMemory",
    "QuotaExceeded",
    "TraceError",
    "PolicyError",
]


class Error(Exception):
    """Base of every tierpool exception."""


class LogicError(Error, ValueError):
    """A broken precondition: misuse of the API (double free, bad option, unknown policy)."""


class TraceError(LogicError):
    """A trace that cannot be read or written (names the file and the line or offset)."""


class BackendError(Error, RuntimeError):
    """A failure reported by the backend (device, driver, or an injected fault).

    Attributes: ``code`` -- the backend's status ("out_of_memory", "device_error", ...).
    """

    code: str = ""


class StorageError(BackendError):
    """A storage tier failed: bad configuration at pool construction (a missing directory,
    no permission, not enough space, O_DIRECT or io_uring required but unavailable), or a
    file I/O error later (a failed write keeps the tensor's copy above).

    Attributes: ``code`` ("io_error"), ``failure`` ("missing_path", "no_space",
    "torn_write", ...), ``errno`` (the system's errno, 0 if none).
    """

    failure: str = ""
    errno: int = 0


class DeviceLost(BackendError):
    """The device was lost: tensors whose only copy was there are gone.

    Attributes: ``code``, ``lost_tensors`` (ids), ``lost_names`` (their names).
    """

    lost_tensors: list = []
    lost_names: list = []


class OutOfMemory(Error, MemoryError):
    """Every step of the out-of-memory ladder failed; the message is a diagnosis.

    Attributes: ``cause`` ("capacity", "pinned", "fragmentation", "busy", "quota", "share"),
    ``tier`` (index), ``requested`` (bytes), ``figures`` (a dict: capacity_bytes,
    resident_bytes, pinned_bytes, in_flight_bytes, busy_bytes, free_bytes,
    largest_free_block, attempts), ``python_view_bytes`` (bytes of leases that live
    Python views pin; the message names them).
    """

    cause: str = "capacity"
    tier: int = 0
    requested: int = 0
    figures: dict = {}
    python_view_bytes: int = 0


class QuotaExceeded(OutOfMemory):
    """An allocation would take a tenant over its quota; nothing was allocated.

    Attributes: those of OutOfMemory, and ``tenant``, ``quota`` (bytes), ``live``
    (the tenant's live bytes before the request).
    """

    tenant: int = 0
    quota: int = 0
    live: int = 0


class PolicyError(LogicError):
    """A Python eviction policy (or prefetch predictor) failed: it raised, or answered
    something the adapter refused (not a list, an unknown, pinned or repeated id, a
    proposal that does not cover the request). Its tier fell back to ``lru`` (a predictor
    is disabled); this is raised once, by the next call on the pool (or by ``replay``).
    ``__cause__`` is the policy's own exception, when it raised one.
    """

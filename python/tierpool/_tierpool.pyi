"""
tierpool's C++ core (nanobind bindings); use the package `tierpool`, which re-exports it.
"""

from collections.abc import Callable, Mapping, Sequence


class TensorView:
    """
    What an eviction policy is told about a tensor (EvictionPolicy.on_insert / on_access). The adapter reuses one TensorView for every call: read its fields during the call, do not keep it.
    """

    @property
    def id(self) -> int:
        """The tensor's id."""

    @property
    def tier(self) -> int:
        """The tier whose policy is told (index, fastest first)."""

    @property
    def bytes(self) -> int:
        """Size of the tensor's copy in this tier."""

    @property
    def last_access(self) -> int:
        """Tick of the event reported (backend clock)."""

    @property
    def access_count(self) -> int:
        """Accesses so far, this one included."""

    @property
    def pinned(self) -> bool:
        """Pinned now (a pinned tensor must never be proposed)."""

    @property
    def write_access(self) -> bool:
        """on_access: the access writes the tensor."""

    @property
    def next_use(self) -> int | None:
        """
        Forecast tick of the next use (None: no forecast; NO_NEXT_USE: never again).
        """

    @property
    def transfer_cost(self) -> int:
        """Estimated ticks to move it out and back (0: unknown)."""

    @property
    def recompute_cost(self) -> int | None:
        """Estimated ticks to recompute it (None: it cannot be)."""

    @property
    def prefetch(self) -> bool:
        """
        on_insert: a prefetch copied it in ahead of its use; not a use (the use comes as on_access).
        """

    def __repr__(self) -> str:
        """The fields."""

class EvictionRequest:
    """
    What EvictionPolicy.propose is asked: free `bytes_needed` bytes in tier `tier` (`from_` is the same). Reused for every call, like TensorView.
    """

    @property
    def tier(self) -> int:
        """The tier that lacks room (the policy's own)."""

    @property
    def bytes_needed(self) -> int:
        """Free at least this much in total."""

    @property
    def contiguous_bytes(self) -> int:
        """
        The largest single allocation the room must hold (0: no contiguity need).
        """

    @property
    def now(self) -> int:
        """Tick of the request."""

    @property
    def incoming(self) -> int:
        """The tensor the room is for when the engine knows it, else 0."""

    def __repr__(self) -> str:
        """The fields."""

class AccessView:
    """
    A device acquire, as a Predictor sees it (Predictor.on_access). Reused for every call.
    """

    @property
    def id(self) -> int:
        """The tensor acquired."""

    @property
    def bytes(self) -> int:
        """Its size."""

    @property
    def write(self) -> bool:
        """The lease may write it."""

    @property
    def sequence(self) -> int:
        """Number of this access among the pool's device acquires."""

    @property
    def stream(self) -> int:
        """The stream it was acquired on."""

    @property
    def discard(self) -> bool:
        """access='write_discard': the old bytes are not read."""

    def __repr__(self) -> str:
        """The fields."""

NO_NEXT_USE: int = 18446744073709551615

class PolicyDriver:
    """
    One eviction policy driven by hand (tests, tierpool.conformance): a spec of the registry ('lru', a registered Python policy) or a Python class, through the same adapter a Pool uses. Hooks take the TensorView fields as arguments.
    """

    def __init__(self, policy: object) -> None:
        """
        Build the policy (a spec or a class). Raises LogicError for an unknown spec.
        """

    def on_insert(self, id: int, bytes: int = 0, tier: int = 0, last_access: int = 0, access_count: int = 1, pinned: bool = False, write_access: bool = False, next_use: int | None = None, transfer_cost: int = 0, recompute_cost: int | None = None, prefetch: bool = False) -> None:
        """Tell the policy a tensor became resident."""

    def on_access(self, id: int, bytes: int = 0, tier: int = 0, last_access: int = 0, access_count: int = 1, pinned: bool = False, write_access: bool = False, next_use: int | None = None, transfer_cost: int = 0, recompute_cost: int | None = None, prefetch: bool = False) -> None:
        """Tell the policy a tensor was used."""

    def on_erase(self, id: int) -> None:
        """Tell the policy a tensor left the tier."""

    def on_pin(self, id: int) -> None:
        """Tell the policy a tensor was pinned."""

    def on_unpin(self, id: int) -> None:
        """Tell the policy a tensor was unpinned."""

    def propose(self, bytes_needed: int, contiguous_bytes: int = 0, now: int = 0, incoming: int = 0, tier: int = 0) -> tuple:
        """
        Ask for victims: returns (ids, bytes) as the engine would get them (for a Python policy, after the adapter's checks: a refused answer is replaced by the fallback lru's).
        """

    @property
    def name(self) -> str:
        """The policy's name."""

    def validate(self) -> bool:
        """
        The policy's own consistency check (a Python policy: its fallback lru's).
        """

    @property
    def failed(self) -> bool:
        """True once a Python policy failed and its fallback lru answers."""

    @property
    def python_object(self) -> object:
        """The Python policy object (None for a built-in)."""

    def copy(self) -> PolicyDriver:
        """
        A copy of the policy, state included, as the C++ side copies one (a Python policy: copy.deepcopy).
        """

    def check(self) -> None:
        """
        Raise the Python policy's recorded failure (PolicyError) once, if there is one.
        """

class TierOptions:
    """
    One tier of a pool (fastest first in Pool(tiers=[...])).

    kind: 'device', 'pinned_host', 'managed', 'host' or 'storage'; capacity_bytes: 0 = the kind's default; chunk_bytes: bytes requested from the backend at a time (0 = min(capacity, 64 MiB)); policy: eviction policy spec ('' = the pool's); name: for messages and statistics ('' = the kind's name); numa_node: -1 = none; storage: a storage tier's dict (path: a directory, a block device or a new file; engine: 'automatic', 'pread' or 'io_uring'; direct: 'automatic', 'on' or 'off'; piece_bytes; queue_depth; verify_writes; preallocate; engine 'compressed' with codec 'lz4', 'zstd' or 'q8' and memory_bytes: a compressed host tier).
    """

    def __init__(self, kind: str = 'device', capacity_bytes: int = 0, chunk_bytes: int = 0, policy: str = '', name: str = '', numa_node: int = -1, storage: dict | None = None) -> None:
        """Make a tier's options (see the class docstring)."""

    @property
    def kind(self) -> str:
        """
        The memory behind the tier: 'device', 'pinned_host', 'managed', 'host' or 'storage'.
        """

    @kind.setter
    def kind(self, arg: str, /) -> None: ...

    @property
    def capacity_bytes(self) -> int:
        """Capacity in bytes; 0 = the kind's default."""

    @capacity_bytes.setter
    def capacity_bytes(self, arg: int, /) -> None: ...

    @property
    def chunk_bytes(self) -> int:
        """Bytes requested from the backend at a time; 0 = min(capacity, 64 MiB)."""

    @chunk_bytes.setter
    def chunk_bytes(self, arg: int, /) -> None: ...

    @property
    def policy(self) -> str:
        """
        Eviction policy spec ('lru', 's3fifo:small_ratio=0.1'); '' = the pool's.
        """

    @policy.setter
    def policy(self, arg: str, /) -> None: ...

    @property
    def name(self) -> str:
        """Name for messages and statistics; '' = the kind's name."""

    @name.setter
    def name(self, arg: str, /) -> None: ...

    @property
    def numa_node(self) -> int:
        """Host kinds: bind to this NUMA node (-1: none)."""

    @numa_node.setter
    def numa_node(self, arg: int, /) -> None: ...

    @property
    def storage(self) -> dict:
        """
        Storage tiers: where and how (a dict: path, engine, direct, piece_bytes, queue_depth, verify_writes, preallocate, codec, memory_bytes).
        """

    @storage.setter
    def storage(self, arg: dict, /) -> None: ...

    def __repr__(self) -> str:
        """The options as a constructor call."""

class FitReport:
    """
    What Pool.fits() found: how many more tensors of one size a tier can take, now and after eviction, and what limits it (`limit`: 'capacity', 'pinned', 'fragmentation' or 'quota').
    """

    @property
    def tier(self) -> str:
        """The tier's name."""

    @property
    def bytes(self) -> int:
        """The tensor size asked about."""

    @property
    def slot_bytes(self) -> int:
        """What one such tensor takes in the tier (aligned)."""

    @property
    def fits_now(self) -> int:
        """How many fit without evicting or waiting."""

    @property
    def fits_after_eviction(self) -> int:
        """How many fit after evicting what can be."""

    @property
    def largest_now(self) -> int:
        """The largest tensor placeable now without evicting."""

    @property
    def largest_after_eviction(self) -> int:
        """The largest tensor placeable after evicting."""

    @property
    def free_bytes(self) -> int:
        """Free bytes in the tier's chunks."""

    @property
    def growable_bytes(self) -> int:
        """Capacity not yet obtained from the backend."""

    @property
    def evictable_bytes(self) -> int:
        """Bytes of copies eviction could take out now."""

    @property
    def pinned_bytes(self) -> int:
        """Bytes of copies held by live leases."""

    @property
    def in_flight_bytes(self) -> int:
        """Bytes of blocks whose streams have not got there yet."""

    @property
    def quota_left(self) -> int:
        """The tenant's quota minus its live bytes (2**64-1 without a quota)."""

    @property
    def limit(self) -> str:
        """
        What bounds fits_after_eviction: 'capacity', 'pinned', 'fragmentation' or 'quota'.
        """

    def __repr__(self) -> str:
        """A short summary."""

class Tensor:
    """
    A tensor of a Pool (from Pool.allocate): an owning handle to bytes whose home tier can change. `with pool.allocate(n) as t:` frees it at the end of the block; deleting the last reference frees it too (once its leases end).
    """

    @property
    def id(self) -> int:
        """The tensor's id in its pool."""

    @property
    def nbytes(self) -> int:
        """Size in bytes as requested."""

    @property
    def name(self) -> str:
        """The name given to allocate() ('' when none)."""

    @property
    def valid(self) -> bool:
        """False once freed."""

    def free(self) -> None:
        """
        Free the tensor now (as Pool.free). Raises LogicError when already freed (double free) or leased.
        """

    def __enter__(self) -> object:
        """Return the tensor."""

    def __exit__(self, exc_type: object | None, exc: object | None, tb: object | None) -> bool:
        """
        Free the tensor (unless already freed); when Python views still pin one of its leases, it is freed once they are gone.
        """

    def __repr__(self) -> str:
        """id, size and name."""

class Lease:
    """
    A pin on a tensor that makes its bytes reachable (from Pool.acquire or Pool.acquire_host); the tensor is neither moved nor evicted while it lives. `with` releases it.

    Zero-copy views: memoryview(lease) and numpy.asarray(lease) (buffer protocol, host memory only, read-only for access='read') and numpy.from_dlpack(lease) / torch.from_dlpack(lease) (DLPack; kDLCPU on the sim backend and for host leases, kDLCUDA for a device lease on the CUDA backend). A view keeps the lease alive: release() (or the end of a `with` block) while views exist ends the lease only when the last view dies, and until then the tensor stays pinned (Pool.summary() and Pool.stats()['python_views'] name it). A view of a device lease in host memory (the simulated device) waits for the copies the lease's stream was ordered after, so its bytes are there.
    """

    @property
    def nbytes(self) -> int:
        """Size in bytes (0 once released)."""

    @property
    def access(self) -> str:
        """
        The access the lease was taken with: 'read', 'read_write' or 'write_discard'.
        """

    @property
    def active(self) -> bool:
        """True until released (release() or the end of a `with` block)."""

    @property
    def release_pending(self) -> bool:
        """
        True while a release waits for the lease's last view to die (the tensor stays pinned).
        """

    @property
    def host(self) -> bool:
        """True for a lease from acquire_host()."""

    @property
    def stream(self) -> int:
        """The stream the lease is ordered on (0: the default stream)."""

    @property
    def tensor_id(self) -> int:
        """The tensor's id."""

    @property
    def data_ptr(self) -> int:
        """
        The address of the bytes (device memory for a device lease on CUDA; 0 once released).
        """

    @property
    def exports(self) -> int:
        """Zero-copy views of this lease that still exist."""

    def release(self) -> None:
        """
        End the lease (idempotent). While views of its bytes exist, the lease ends when the last of them dies (release_pending is True until then).
        """

    def numpy(self, dtype: object | None = None, shape: object | None = None) -> object:
        """
        A numpy array over the lease's bytes (zero-copy, host memory only); it keeps the lease alive. Without arguments a flat uint8 array of every byte; with dtype (and shape) a typed view of the first bytes (ValueError when they are more than the lease has).
        """

    def __dlpack__(self, **kwargs) -> object:
        """
        A DLPack capsule over the lease's bytes (1-D uint8, zero-copy); it keeps the lease alive. stream (DLPack's keyword): for a device lease on CUDA, the consumer's stream, made to wait for the lease's stream without blocking the host (a stream the pool has not seen is wrapped); None, 1 (the legacy default stream) or 2 (the per-thread one): the host waits for the lease's stream; -1: no wait. For host memory None (the bytes are there when the call returns).
        """

    def __dlpack_device__(self) -> tuple:
        """
        (device type, device id) of the bytes: (1, 0) for host memory (kDLCPU), (2, ordinal) for CUDA device memory.
        """

    def __enter__(self) -> object:
        """Return the lease."""

    def __exit__(self, exc_type: object | None, exc: object | None, tb: object | None) -> bool:
        """Release the lease."""

    def __repr__(self) -> str:
        """tensor, size, access and where."""

class RecipeBuffer:
    """
    The bytes a recompute function writes (RecomputeCall.out) or reads (RecomputeCall.inputs, read-only), valid only while the function runs. Zero-copy views as a Lease gives: memoryview(buf) and numpy.asarray(buf) (buffer protocol; host memory, and the simulated device), buf.numpy(dtype, shape), and DLPack (kDLCUDA for an on_device recipe on the CUDA backend). Every view must be gone when the function returns: one still alive then fails the rebuild with BufferError.
    """

    @property
    def nbytes(self) -> int:
        """Size in bytes."""

    @property
    def readonly(self) -> bool:
        """True for an input's bytes (read them only)."""

    @property
    def device(self) -> bool:
        """True in the device tier (an on_device recipe), False in a host tier."""

    @property
    def data_ptr(self) -> int:
        """
        The address of the bytes (device memory for an on_device recipe on CUDA).
        """

    @property
    def open(self) -> bool:
        """True while the recompute function runs; no view can be made after."""

    @property
    def exports(self) -> int:
        """Zero-copy views that still exist."""

    def numpy(self, dtype: object | None = None, shape: object | None = None) -> object:
        """
        A numpy array over the bytes (zero-copy, host memory only; read-only for an input): a flat uint8 array, or with dtype (and shape) a typed view of the first bytes (ValueError when they are more than there are).
        """

    def __dlpack__(self, **kwargs) -> object:
        """
        A DLPack capsule over the bytes (1-D uint8, zero-copy). stream: as Lease.__dlpack__ (for an on_device buffer on CUDA the consumer's stream waits for RecomputeCall.stream).
        """

    def __dlpack_device__(self) -> tuple:
        """
        (device type, device id) of the bytes: (1, 0) for host memory, (2, ordinal) for CUDA device memory.
        """

    def __repr__(self) -> str:
        """size, access and where."""

class RecomputeCall:
    """
    What a recompute function (Pool.set_recompute) is called with: write every byte of `out` from the bytes of `inputs`.
    """

    @property
    def id(self) -> int:
        """The id of the tensor being rebuilt."""

    @property
    def bytes(self) -> int:
        """Its size in bytes."""

    @property
    def tier(self) -> int:
        """The tier `out` is in."""

    @property
    def stream(self) -> int:
        """
        on_device recipes: the stream to enqueue the work on (the acquire that asked for the tensor, and every later use, is ordered after it; do not wait); host recipes: 0.
        """

    @property
    def on_device(self) -> bool:
        """True for an on_device recipe."""

    @property
    def out(self) -> RecipeBuffer:
        """The tensor's bytes to write in full: a writable RecipeBuffer."""

    @property
    def inputs(self) -> tuple[RecipeBuffer, ...]:
        """
        The inputs' bytes, in set_recompute's order: a tuple of read-only RecipeBuffer, in the same kind of memory as `out`.
        """

    def __repr__(self) -> str:
        """id, size, tier, inputs and where."""

class Event:
    """
    An event of a pool's streams (Pool.create_event): record it on a stream, query it, wait for it on the host, or make another stream wait for it (no host wait). A never-recorded event counts as complete. Keeps the pool's backend alive.
    """

    def record(self, stream: int | None = None) -> None:
        """Capture the work queued on `stream` so far (None: the default stream)."""

    def query(self) -> bool:
        """True when the work the event captured has completed."""

    def synchronize(self) -> None:
        """Block until the work the event captured has completed."""

    def wait(self, stream: int) -> None:
        """
        Make work queued on `stream` after this call wait for the event; the host does not wait.
        """

class Pool:
    """
    A tiered memory pool: tiers from fastest (the device) to slowest, each with an eviction policy; tensors move between them as leases need their bytes.

    Pool(*, tiers=None, policy='lru', prefetch='none', backend='auto', device=0, sim_memory='real', sim_clock='wall', sim_device_bytes=None, read_environment=True, tenant_quotas={}, trace_path='', publish=True, quiet=False, sim_faults=[], sim_fault_seed=0, actions=None, compaction=False, compact_before_failing=True, window_eviction_share=64)

    tiers: a list of TierOptions or dicts with the same keys (None: device, pinned_host, host); policy (and a tier dict's 'policy'): a spec ('lru', a registered Python policy's name) or a Python EvictionPolicy class; prefetch: a spec or a Python Predictor class; backend: 'auto' (CUDA when usable, else the simulated device), 'sim' or 'cuda'; sim_memory: 'real' (bytes) or 'phantom' (address ranges only: no views); sim_clock: 'wall', 'virtual', or 'virtual-hidden' (the virtual clock with its device times hidden from the pool, as a GPU's are: a planner measures them with timed events); sim_device_bytes: the simulated device's memory (default 256 MiB); read_environment: the TIERPOOL_* variables win over these options (False ignores them); publish: live figures for `tierpool top`; quiet: no message when falling back to sim; sim_faults: fault rules of the simulated device, for testing failure paths, each a dict {'kind': 'copy' (allocate, event, stream_create, prefetch, host_func, compute, any), 'nth': fail that matching call (1-based), 'probability': fail each with it}; sim_fault_seed: the seed of the probabilistic rules; actions: the eviction actions, a dict {'recompute': drop tensors with a recipe (Pool.set_recompute) when rebuilding is cheaper (default True), 'by_cost': order a write-back's lower tiers by round-trip cost (default True), 'h2d_bytes_per_s', 'd2h_bytes_per_s', 'storage_write_bytes_per_s', 'storage_read_bytes_per_s': the bandwidths actions are priced with (0: the backend's models or defaults; negative: LogicError)}; compaction: move idle copies within a tier before evicting when its free bytes cover a request in pieces, first waiting for vacated blocks when they and the free bytes cover it (the host waits; stats key waits_to_compact); compact_before_failing: do so once before a request would fail for fragmentation; window_eviction_share: a request for at least 1/share of a tier that must evict takes one contiguous run of victims (0: off; negative: LogicError).

    `with Pool(...) as p:` closes the pool at the end of the block.
    """

    def __init__(self, *, tiers: Sequence[object] | None = None, policy: object = 'lru', prefetch: object = 'none', backend: str = 'auto', device: int = 0, sim_memory: str = 'real', sim_clock: str = 'wall', sim_device_bytes: int | None = None, read_environment: bool = True, tenant_quotas: Mapping[int, int] = {}, trace_path: str = '', publish: bool = True, quiet: bool = False, sim_faults: Sequence[dict] = [], sim_fault_seed: int = 0, actions: Mapping[str, bool | float] | None = None, compaction: bool = False, compact_before_failing: bool = True, window_eviction_share: int = 64) -> None:
        """
        Build a pool (see the class docstring). Raises LogicError for bad options or an unknown policy, BackendError when the backend cannot be built.
        """

    def allocate(self, nbytes: int, *, name: str = '', priority: float = 0.0, tenant: int = 0, preferred_tier: int | None = None, write_through: bool = False, lossy_compression: bool = False, compressible: bool = True) -> Tensor:
        """
        Create a tensor of `nbytes` bytes (contents undefined) in the preferred tier, else the fastest with room. priority in [0, 1] (higher: keep resident longer); tenant: owner for quotas; write_through: keep a host copy valid after every device write; lossy_compression: a compressed tier with codec 'q8' may quantize it (float32); compressible=False: its write-backs pass over compressed tiers (data that does not compress, or must never be decoded). Raises OutOfMemory (QuotaExceeded for a tenant's quota).
        """

    def acquire(self, tensor: Tensor, access: str = 'read', stream: int | None = None) -> Lease:
        """
        Lease the tensor's bytes in device-accessible memory for work on `stream` (None: the default stream), copying them in (and evicting others) if needed. access: 'read', 'read_write' or 'write_discard'. Raises OutOfMemory when the device tier cannot make room (e.g. everything is leased).
        """

    def discard(self, tensor: Tensor) -> None:
        """
        Declare the tensor's bytes dead until a 'write_discard' lease writes new ones: its copies are dropped when evicted, never written back. Reading it before then raises LogicError; so does discarding it while leased or with a recompute recipe. Stats: discards, evicted_discarded(_bytes).
        """

    def acquire_all(self, items: Sequence[Tensor | tuple[Tensor, str]], stream: int | None = None) -> list[Lease]:
        """
        Lease several tensors for one piece of work on `stream` (a kernel's operands): all of them or none. items: Tensors (read) or (Tensor, access) pairs. Returns the Leases in the items' order, taken largest tensor first (a small one leased first can split the room a large one needs); when one acquire fails, those already taken are released and the error is raised.
        """

    def acquire_host(self, tensor: Tensor, access: str = 'read') -> Lease:
        """
        Lease the tensor's bytes in host memory, synchronously (for filling and checking them from Python).
        """

    def prefetch(self, tensor: Tensor, tier: int = 0) -> None:
        """
        Queue a copy of the tensor into `tier` (default: the fastest); never blocks. A hint.
        """

    def demote(self, tensor: Tensor, tier: int) -> None:
        """
        Move the tensor down to `tier`, writing it back if its newest bytes are above. Raises LogicError while it is leased.
        """

    def free(self, tensor: Tensor) -> None:
        """
        Free the tensor now (stream-ordered). Raises LogicError for a double free or a leased tensor.
        """

    def fits(self, nbytes: int, tier: int = 0, tenant: int = 0) -> FitReport:
        """
        How many more tensors of `nbytes` tier `tier` can take, now and after eviction, within `tenant`'s quota: a FitReport.
        """

    def stats(self) -> dict:
        """
        The pool's statistics as a dict (the JSON of summary_json()): 'tiers' is a list of dicts with name, kind, policy, capacity, used bytes, evictions, policy_fallbacks (times a Python policy of the tier failed and lru took over), ...; 'policy_fallbacks' and 'predictor_failures' are the pool's totals; 'python_views' lists the leases that live Python views pin (leases, bytes, pins: tensor, name, bytes, host, views, released). The eviction actions' figures: evicted_dropped, evicted_moved, evicted_compressed, evicted_recompute, evicted_recompute_bytes, rebuilds, rebuild_failures, rebuild_seconds, recipes, recipes_ended.
        """

    def summary(self) -> str:
        """
        A human-readable table of the statistics. A tier whose Python policy failed gets a line saying that lru took over; the last line names the tensors that live Python views pin, when there are any.
        """

    def summary_json(self) -> str:
        """The statistics as one JSON object (str)."""

    def validate(self) -> bool:
        """
        Check every invariant of the pool; True when all hold (violations are logged).
        """

    def create_stream(self, priority: int = 0) -> int:
        """
        Create a stream owned by the pool; returns its handle (an int) for acquire(stream=...).
        """

    def wrap_native_stream(self, native: int) -> int:
        """
        Use a stream the program made (on CUDA a cudaStream_t as an int: torch.cuda.Stream().cuda_stream, cupy's Stream.ptr) as a pool stream: acquire(stream=...) orders copies before its work, a lease's end records its last use there. The program keeps ownership: destroy_stream() the returned handle before destroying the stream. Wrapping it again returns the same handle. Raises LogicError for a null stream, one of the pool's own, or one the backend cannot use.
        """

    def destroy_stream(self, stream: int) -> None:
        """Destroy a stream from create_stream() (after its queued work)."""

    def note_compute(self, duration_ns: int, stream: int | None = None) -> None:
        """
        Tell the pool that device work of `duration_ns` was queued on `stream` (None: the default stream) outside it: the recording (trace_path, TIERPOOL_TRACE) gets a compute event, so that a replay times the run; on the simulated backend the stream also runs for that long. tierpool.torch.roofline calls it with each module's modelled time. Raises LogicError for a negative duration or a foreign stream.
        """

    def note_phase(self, name: str) -> None:
        """
        Mark the start of a phase ('forward', 'iter 3') in the recording: a phase event, which replays split their figures by. Nothing when the pool does not record. Raises LogicError for an empty name.
        """

    def synchronize(self, stream: int | None = None) -> None:
        """
        Block until all work on `stream` (None: the default stream) has completed.
        """

    def residency(self, tensor: Tensor) -> dict:
        """
        Where the tensor lives now, as a dict: home tier, copies (tier, valid, dirty, in_flight, leases), leases, ..., recomputable (it has a recipe: Pool.set_recompute) and dropped_for_recompute (no tier holds its bytes: its recipe rebuilds them on next use).
        """

    def snapshot_json(self) -> str:
        """
        Every live tensor and every tier's blocks at one moment, as JSON (str).
        """

    def create_event(self) -> Event:
        """An Event of this pool's streams."""

    def order(self, tensor: Tensor, from_stream: int, to_stream: int) -> None:
        """
        Make work on `to_stream` after this call wait for the tensor's use on `from_stream` (a writer on one stream, a reader on another); the host does not wait.
        """

    def record_stream(self, lease: Lease, stream: int) -> None:
        """
        The lease's bytes are also used by work on `stream` (torch's record_stream): the pool neither reuses nor evicts them before that work is done.
        """

    def add_low_memory_callback(self, fn: Callable) -> int:
        """
        Call fn(event) when a request cannot be placed after eviction (the step of the out-of-memory ladder before OutOfMemory): event is a dict with tier, tier_name, bytes_needed, capacity_bytes, pinned_bytes. fn may free, demote or release tensors (or drop caches of its own); the request then starts over once. It runs on the requesting thread; an exception it raises leaves the request. Returns an id for remove_low_memory_callback.
        """

    def remove_low_memory_callback(self, id: int) -> None:
        """Unregister a callback (unknown ids are ignored)."""

    def set_recompute(self, tensor: Tensor, fn: Callable[[RecomputeCall], object] | None, inputs: Sequence[Tensor] = (), on_device: bool = False, cost_seconds: float = -1.0) -> None:
        """
        Give the tensor a recipe: the pool may then drop its last copy instead of writing it back (when rebuilding costs less than the round trip, or no lower tier has room) and calls fn(call) to rebuild it on its next acquire or acquire_host, on that thread, with no pool lock held. call is a RecomputeCall: write every byte of call.out (a RecipeBuffer) from call.inputs (read-only RecipeBuffers of `inputs`, Tensors of this pool, in order). on_device: fn gets device-tier bytes and call.stream (enqueue the work there, do not wait); else host bytes. cost_seconds: one rebuild's cost (< 0: measured). An exception fn raises leaves the acquire as it is; the tensor stays dropped and can be asked for again. A lease that may write the tensor or one of its inputs, or freeing an input, ends the recipe (a dropped tensor is rebuilt first). fn must not set or clear recipes nor free tensors; views of the buffers must not outlive the call (BufferError). The pool holds fn until the recipe ends or the pool closes (a fn that refers to the pool keeps it alive until then). Replaces an earlier recipe. Raises LogicError for fn None, more than 64 inputs, an input that is the tensor itself, not live, has a recipe itself, or a tensor that is an input of another recipe.
        """

    def clear_recompute(self, tensor: Tensor) -> None:
        """
        End the tensor's recipe, rebuilding it first when it is dropped (fn's exception leaves this call). No-op without one.
        """

    def enqueue_host(self, stream: int | None, fn: Callable) -> None:
        """
        Run fn() on the host in stream order (after the work queued on `stream` so far, before what is queued after; None: the default stream), on a backend thread that takes the GIL. fn must not call the pool. An exception it raises is raised again by the next synchronize(stream).
        """

    def set_capacity(self, tier: int, nbytes: int) -> dict:
        """
        Grow or shrink tier `tier` to `nbytes` at run time; returns what was done as a dict (reached, why, ...).
        """

    def set_quota(self, tenant: int, nbytes: int) -> None:
        """Set (or, with 0, remove) a tenant's quota in bytes."""

    def compact(self, tier: int | None = None) -> dict:
        """
        Defragment tier `tier` (None: every tier but storage) by moving unleased copies down into free blocks; returns a dict: per tier moved_tensors, moved_bytes, skipped_tensors, free_bytes, largest_free_before/after, fragmentation_before/after, and the totals.
        """

    def set_tenant_share(self, tenant: int, tier: int, nbytes: int) -> None:
        """
        Set (or, with 0, remove) a tenant's share of tier `tier` in bytes: evictions there take from tenants over their share first.
        """

    def set_tenant(self, tenant: int, priority: int = 0, hard_shares: bool = False) -> None:
        """
        Set a tenant's priority (higher keeps its tensors longer) and whether its shares are hard (a limit and a reservation).
        """

    def trim(self) -> int:
        """
        Give every empty chunk back to the backend; returns the bytes given back.
        """

    def reset_peak_stats(self) -> None:
        """Start the peak figures over."""

    @property
    def tier_count(self) -> int:
        """Number of tiers."""

    @property
    def backend(self) -> str:
        """The backend in use: 'sim' or 'cuda'."""

    @property
    def backend_reason(self) -> str:
        """Why this backend was chosen."""

    def close(self) -> None:
        """
        Shut the pool down: wait for copies and free every tier. Raises LogicError while leases live. Later calls raise LogicError. A Python policy's unraised failure is raised (PolicyError) after closing.
        """

    def __enter__(self) -> object:
        """Return the pool."""

    def __exit__(self, exc_type: object | None, exc: object | None, tb: object | None) -> bool:
        """
        Close the pool. When the block raised, a close refused because leases live is not raised over that exception.
        """

def policies() -> list:
    """
    The eviction policies (built-in and registered Python ones): a list of dicts with name, description and parameters (each a dict with name, type, default, description).
    """

def replay(trace: str, policies: Sequence[object] = ['lru'], capacities: str = '10%', mode: str = 'pool', prefetch: object = 'none', loop: int = 1, threads: int = 0, activity: bool = False, trace_prefetches: bool = True) -> object:
    """
    Replay a trace file (any format tierpool reads) for every policy x capacity, as `tierpool replay` does. capacities: comma-separated, '10%' of the working set or byte sizes ('64MiB'); threads: 0 = every hardware thread, or 1 when a Python policy or predictor is in the grid; mode: 'pool', 'cache', 'uvm' or 'uvm-hints'. policies: specs or Python EvictionPolicy classes; prefetch: a spec or a Python Predictor class. Returns one dict per run, policy-major (keys as `tierpool replay --json`: policy, capacity, hits, misses, hit_ratio, makespan_seconds, ideal_seconds, bytes_h2d, ...). Raises TraceError for a bad trace, LogicError for a bad policy or capacity, PolicyError when a Python policy failed (after the grid ran; its tier fell back to lru). activity=True (pool mode): each row also says where the device time went, as `tierpool replay --activity`: compute_only_seconds, overlapped_seconds, exposed_h2d_seconds, exposed_d2h_seconds, exposed_both_seconds, idle_seconds, and 'phases', a list of dicts with the same keys and 'name' per phase label of the trace; 'iteration_seconds', the device time of each iteration (from each marker of the first recurring phase label), and 'steady_seconds', their sum from the second on. trace_prefetches=False (pool mode): the trace's own prefetch events (a recorded program's prefetch calls) are skipped, as `tierpool replay --no-trace-prefetch`.
    """

def trace_gen(workload: str, path: str, params: Mapping[str, str] = {}, seed: int = 1) -> int:
    """
    Generate a synthetic trace of `workload` ('mlp-train', 'transformer-train', 'llm-infer-stream', 'kv-paging', 'random-reuse') into `path` (binary for a .tpb name, else text), with parameters as {'layers': '4'} texts; returns the number of events written.
    """

def workloads() -> list:
    """
    The workloads trace_gen() knows: a list of dicts with name, summary, random, params (key: default) and presets (name: 'key=value ...'; trace_gen(w, path, {'preset': name}) uses one, explicit keys override it).
    """

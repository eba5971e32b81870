"""The Python binding of the numba-metal runtime (cffi over the C ABI in numba_metal_runtime.h).

Devices, buffers, pipelines and queues as thin objects over the library's handles. Importing this
module does not load the library; the first call that needs it does. Status codes become exceptions
from :mod:`numba_metal.errors`: a compile failure is a KernelCompilationError carrying the full
compiler log; a dispatch refused before queueing (a limit or a bad argument) is a KernelLaunchError;
a missing device or feature is an UnsupportedPlatformError; everything else (failed work, allocation,
internal errors, use in a forked child) is a MetalRuntimeError.

Waits (``Queue.wait``) return to Python every ``WAIT_SLICE_NS`` so that a KeyboardInterrupt is raised at
once; on the CPU device the interrupted queue's unfinished work is cancelled first, so that the device is
usable again (other threads whose work was cancelled get an error at their next wait). A Metal GPU cannot
stop work it has been given: its queue stays as it was and later waits wait for that work. At interpreter
exit, work still queued is cancelled on the CPU device (nobody can read its results any more): exit never
waits for a kernel that does not end.

``NUMBA_METAL_MSL_DUMP_DIR``: when set, every source passed to :meth:`Device.compile` is also written
there as ``<sha256 of the source>.metal`` (how the test suite collects the MSL it generates, for Apple's
compiler and the MSL lint).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import sys
import warnings
import weakref
from typing import NamedTuple

from numba_metal.errors import (
    KernelBarrierError,
    KernelCompilationError,
    KernelLaunchError,
    MetalRuntimeError,
    NumbaMetalWarning,
    UnsupportedPlatformError,
)
from numba_metal.runtime import _loader
from numba_metal.runtime._loader import library_path, load

__all__ = [
    "DeviceInfo", "Device", "Buffer", "Pipeline", "Queue", "DispatchPlan", "KernelParam",
    "list_devices", "open_device", "now_ns", "library_path",
    "MATH_SAFE", "MATH_RELAXED", "MATH_FAST",
]

# Status codes (numba_metal_runtime.h); duplicated here so that errors can be raised without cffi lookups.
NM_OK = 0
NM_ERR_INVALID_ARGUMENT = 1
NM_ERR_UNAVAILABLE = 2
NM_ERR_OUT_OF_MEMORY = 3
NM_ERR_COMPILE = 4
NM_ERR_LIMIT = 5
NM_ERR_EXECUTION = 6
NM_ERR_INTERNAL = 7
NM_ERR_FORKED = 8

# How long one call of nm_queue_wait_bounded may block: the latency of a KeyboardInterrupt during a wait.
WAIT_SLICE_NS = 50_000_000

# Device kinds (nm_device_info.kind) by their names in numba-metal (NUMBA_METAL_DEVICE).
_KINDS = {1: "metal", 2: "cpu", 3: "metal-sim"}

# Math modes (nm_compile_options.fast_math). True means MATH_RELAXED: what @jit(fastmath=True) asks for.
MATH_SAFE = 0       # safe math, precise functions: IEEE-like
MATH_RELAXED = 1    # fast-math optimisations that keep Inf and NaN
MATH_FAST = 2       # also assumes no Inf or NaN

# Actions of the simulated Metal device (nm_sim_control).
SIM_FAIL_NEXT_COMMAND_BUFFER = 1
SIM_WATCHDOG_NEXT_COMMAND_BUFFER = 2
SIM_HOLD_GPU = 3

# Kinds of kernel parameters (nm_kernel_param.kind).
PARAM_BUFFER = 1
PARAM_ARGUMENT_BLOCK = 2
PARAM_THREADGROUP = 3
PARAM_BUILTIN = 4


class KernelParam(NamedTuple):
    """One kernel parameter as its compiler laid it out (nm_kernel_param)."""

    kind: int          # PARAM_*
    index: int         # [[buffer(i)]] or [[threadgroup(i)]] index; 0 for built-ins
    size: int          # PARAM_ARGUMENT_BLOCK: the bytes the host packs; else 0
    type: str          # the MSL type as declared, e.g. "device float*"
    name: str
    builtin: str | None = None  # PARAM_BUILTIN: the attribute, e.g. "thread_position_in_grid"


#: The words the CPU device's failure of a dispatch whose work-items diverged at barriers holds
#: (Sources/CPUEngine/cpu_fibers.c): such a failure is a KernelBarrierError.
DIVERGENT_BARRIER = "divergent barrier"


def _message(lib, ffi) -> str:
    return ffi.string(lib.nm_last_error()).decode("utf-8", "replace")


def _raise(rc: int, *, launch: bool = False):
    ffi, lib = load()
    msg = _message(lib, ffi)
    if rc == NM_ERR_COMPILE:
        raise KernelCompilationError(msg)
    if rc == NM_ERR_UNAVAILABLE:
        raise UnsupportedPlatformError(msg)
    if rc == NM_ERR_FORKED:
        raise MetalRuntimeError(msg)
    if launch and rc in (NM_ERR_LIMIT, NM_ERR_INVALID_ARGUMENT):
        raise KernelLaunchError(msg)
    if DIVERGENT_BARRIER in msg:
        raise KernelBarrierError(msg)
    raise MetalRuntimeError(msg)


class DeviceInfo(NamedTuple):
    """What a device is and its limits (nm_device_info)."""

    index: int
    name: str
    kind: str  # 'metal', 'cpu' or 'metal-sim' (the Metal backend on the simulated Metal API)
    max_threads_per_threadgroup: int
    max_threadgroup_memory: int
    simd_width: int
    unified_memory: bool
    recommended_working_set: int
    page_size: int
    max_buffer_slots: int
    max_argument_bytes: int


def _info(index: int) -> DeviceInfo:
    ffi, lib = load()
    out = ffi.new("nm_device_info *")
    rc = lib.nm_device_get_info(index, out)
    if rc:
        _raise(rc)
    return DeviceInfo(
        index=index,
        name=ffi.string(out.name).decode("utf-8", "replace"),
        kind=_KINDS[int(out.kind)],
        max_threads_per_threadgroup=int(out.max_threads_per_threadgroup),
        max_threadgroup_memory=int(out.max_threadgroup_memory),
        simd_width=int(out.simd_width),
        unified_memory=bool(out.unified_memory),
        recommended_working_set=int(out.recommended_working_set),
        page_size=int(out.page_size),
        max_buffer_slots=int(out.max_buffer_slots),
        max_argument_bytes=int(out.max_argument_bytes),
    )


def list_devices(include_simulated: bool = False) -> list[DeviceInfo]:
    """Every device: the Metal GPUs numba-metal can use, then the CPU reference device.

    ``include_simulated``: also the simulated Metal device (kind ``'metal-sim'``), where the library has
    one (builds without Metal). It is never listed otherwise, so it is never taken for a GPU.
    """
    _, lib = load()
    count = int(lib.nm_device_count())
    if count < 0:
        _raise(NM_ERR_FORKED)
    devices = [_info(i) for i in range(count)]
    if include_simulated and sys.platform != "darwin":  # builds with Metal have no simulated device
        devices.append(_info(count))  # UnsupportedPlatformError says why when it cannot be used
    return devices


_devices: dict[int, "Device"] = {}


def open_device(index: int) -> "Device":
    """The device at index; the same index always gives the same Device object."""
    dev = _devices.get(index)
    if dev is None:
        dev = _devices.setdefault(index, Device(index))
    return dev


def now_ns() -> int:
    """The host monotonic clock in nanoseconds: the base of Queue.timestamps."""
    _, lib = load()
    return int(lib.nm_now_ns())


class Device:
    """An opened device (use open_device)."""

    def __init__(self, index: int):
        ffi, lib = load()
        self.info = _info(index)
        out = ffi.new("nm_device **")
        rc = lib.nm_device_open(index, out)
        if rc:
            _raise(rc)
        self.handle = out[0]

    def __repr__(self) -> str:
        return f"<numba_metal.runtime.Device {self.info.index}: {self.info.name}>"

    def new_buffer(self, nbytes: int) -> "Buffer":
        """A zero-filled buffer of nbytes (0 is allowed)."""
        ffi, lib = load()
        if nbytes < 0:
            raise MetalRuntimeError(f"buffer size {nbytes} is negative")
        out = ffi.new("nm_buffer **")
        rc = lib.nm_buffer_new(self.handle, nbytes, out)
        if rc:
            _raise(rc)
        return Buffer(self, out[0], nbytes, None)

    def wrap_buffer(self, address: int, nbytes: int, owner: object) -> "Buffer":
        """A buffer over page-aligned host memory at address, without a copy; keeps owner alive."""
        ffi, lib = load()
        out = ffi.new("nm_buffer **")
        rc = lib.nm_buffer_wrap(self.handle, ffi.cast("void *", address), nbytes, out)
        if rc:
            _raise(rc)
        return Buffer(self, out[0], nbytes, owner)

    def wrap_native_buffer(self, mtl_buffer: int, owner: object) -> "Buffer":
        """A buffer over another library's shared-storage MTLBuffer (an ``id<MTLBuffer>`` address) of this
        Metal device, without a copy; keeps owner alive. UnsupportedPlatformError on the CPU device."""
        ffi, lib = load()
        out = ffi.new("nm_buffer **")
        rc = lib.nm_buffer_wrap_native(self.handle, ffi.cast("void *", mtl_buffer), out)
        if rc:
            _raise(rc)
        return Buffer(self, out[0], int(lib.nm_buffer_length(out[0])), owner)

    def compile(self, source: str, kernel_name: str, fast_math: int = MATH_SAFE, language_version: int = 0,
                params: "list[KernelParam] | None" = None) -> "Pipeline":
        """Compiles kernel_name from MSL source; raises KernelCompilationError with the compiler log.

        ``fast_math``: the math mode, MATH_SAFE, MATH_RELAXED or MATH_FAST (True is MATH_RELAXED).
        ``params``: the kernel's parameters as its compiler laid them out; the MSL must declare exactly
        these. None: the runtime reads them from the MSL (hand-written kernels).
        """
        ffi, lib = load()
        dump = os.environ.get("NUMBA_METAL_MSL_DUMP_DIR")
        if dump:
            _dump_msl(dump, source)
        opts = ffi.new("nm_compile_options *", {"fast_math": int(fast_math), "language_version": language_version})
        abi = ffi.NULL
        if params is not None:
            keep = []  # the C strings must outlive the call

            def c_string(text):
                if text is None:
                    return ffi.NULL
                keep.append(ffi.new("char[]", text.encode("utf-8")))
                return keep[-1]

            array = ffi.new("nm_kernel_param[]", max(1, len(params)))
            for i, p in enumerate(params):
                array[i] = {"kind": p.kind, "index": p.index, "size": p.size, "type": c_string(p.type),
                            "name": c_string(p.name), "builtin": c_string(p.builtin)}
            abi = ffi.new("nm_kernel_abi *", {"param_count": len(params), "params": array})
        out = ffi.new("nm_pipeline **")
        rc = lib.nm_pipeline_new(self.handle, source.encode("utf-8"), kernel_name.encode("utf-8"), opts, abi, out)
        if rc:
            _raise(rc)
        return Pipeline(self, out[0], kernel_name)

    def new_queue(self) -> "Queue":
        """A new in-order queue (one per stream)."""
        ffi, lib = load()
        out = ffi.new("nm_queue **")
        rc = lib.nm_queue_new(self.handle, out)
        if rc:
            _raise(rc)
        return Queue(self, out[0])

    def stats(self) -> dict:
        """live_buffers, live_buffer_bytes, pipelines_compiled, pipelines_from_cache, dispatches."""
        ffi, lib = load()
        out = ffi.new("nm_device_stats *")
        rc = lib.nm_device_get_stats(self.handle, out)
        if rc:
            _raise(rc)
        return {k: int(getattr(out, k)) for k in
                ("live_buffers", "live_buffer_bytes", "pipelines_compiled", "pipelines_from_cache", "dispatches")}

    def memory_info(self) -> dict:
        """free, total, allocated in bytes (nm_memory_info): total is the device's memory budget (Metal's
        recommended working set; the CPU device: physical memory), allocated what this process's device has
        allocated, free what is left of total."""
        ffi, lib = load()
        out = ffi.new("nm_memory_info *")
        rc = lib.nm_device_get_memory_info(self.handle, out)
        if rc:
            _raise(rc)
        return {k: int(getattr(out, k)) for k in ("free", "total", "allocated")}

    def set_time_limit(self, seconds: float | None) -> None:
        """Stops any dispatch that runs longer than ``seconds`` on this device; its wait raises MetalRuntimeError
        naming the kernel. None, 0 or ``inf`` (or more than 2**64 ns): no limit (the default, unless NUMBA_METAL_CPU_TIME_LIMIT_MS is set). The
        CPU device and the simulated Metal device only: a Metal GPU has the OS's watchdog
        (UnsupportedPlatformError)."""
        if seconds is not None and not seconds >= 0:
            raise MetalRuntimeError(f"time limit {seconds!r} is not a number of seconds >= 0 (None: no limit)")
        # Infinity, and any limit beyond what the runtime counts (2**64 ns, 584 years), is no limit.
        ns = 0 if not seconds or seconds >= _NO_LIMIT_SECONDS else max(1, round(seconds * 1e9))
        rc = load()[1].nm_device_set_time_limit(self.handle, ns)
        if rc:
            _raise(rc)

    @property
    def time_limit(self) -> float | None:
        """The per-dispatch time limit in seconds, None when there is none."""
        ffi, lib = load()
        out = ffi.new("uint64_t *")
        rc = lib.nm_device_get_time_limit(self.handle, out)
        if rc:
            _raise(rc)
        return out[0] / 1e9 if out[0] else None

    def sim_control(self, action: int, value: int = 0) -> None:
        """The simulated Metal device only: inject a fault (SIM_FAIL_NEXT_COMMAND_BUFFER,
        SIM_WATCHDOG_NEXT_COMMAND_BUFFER) or hold its GPU (SIM_HOLD_GPU with value 1, release with 0)."""
        rc = load()[1].nm_sim_control(self.handle, action, value)
        if rc:
            _raise(rc)

    def sim_stats(self) -> dict:
        """The simulated Metal device only: live_objects, autoreleased_without_pool,
        uncompleted_command_buffers, peak_uncompleted_command_buffers, failed_command_buffers, and the
        last_math_mode, last_math_functions, last_language_version its Metal compiler received."""
        ffi, lib = load()
        out = ffi.new("nm_sim_stats *")
        rc = lib.nm_sim_get_stats(self.handle, out)
        if rc:
            _raise(rc)
        return {k: int(getattr(out, k)) for k in ("live_objects", "autoreleased_without_pool", "uncompleted_command_buffers",
                                                   "peak_uncompleted_command_buffers", "failed_command_buffers",
                                                   "last_math_mode", "last_math_functions", "last_language_version")}


#: Time limits from this many seconds on (2**64 ns: the runtime's counter) are no limit.
_NO_LIMIT_SECONDS = 2**64 / 1e9

_dump_failures: set = set()   # directories already warned about


def _dump_msl(directory: str, source: str) -> None:
    """Writes source to directory as <sha256>.metal (atomically: parallel processes may write the same file).
    A directory that cannot be written warns, once, and the compile goes on: a debugging aid never fails a
    launch."""
    name = hashlib.sha256(source.encode("utf-8")).hexdigest() + ".metal"
    path = os.path.join(directory, name)
    if os.path.exists(path):
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    except OSError as e:
        if directory not in _dump_failures:
            _dump_failures.add(directory)
            warnings.warn(NumbaMetalWarning(f"NUMBA_METAL_MSL_DUMP_DIR={directory!r}: the generated MSL cannot be "
                                            f"written there ({e.strerror or e}); it is not dumped"), stacklevel=3)


def dlpack_capsule_destructor() -> int:
    """The address of ``nm_dlpack_capsule_destructor``: a PyCapsule destructor for DLPack capsules, in C
    because it must keep a pending exception intact."""
    ffi, lib = load()
    return int(ffi.cast("uintptr_t", ffi.addressof(lib, "nm_dlpack_capsule_destructor")))


class Buffer:
    """A shared-storage buffer. ``address`` is its host pointer, valid until release()."""

    __slots__ = ("handle", "nbytes", "address", "device", "_owner", "__weakref__")

    def __init__(self, device: Device, handle, nbytes: int, owner: object):
        ffi, lib = load()
        self.device = device
        self.handle = handle
        self.nbytes = nbytes
        self.address = int(ffi.cast("uintptr_t", lib.nm_buffer_contents(handle)))
        self._owner = owner

    def write(self, offset: int, src_address: int, n: int) -> None:
        """Copies n bytes from host address src_address into the buffer at offset (immediately)."""
        ffi, lib = load()
        rc = lib.nm_buffer_write(self._live(), offset, ffi.cast("void *", src_address), n)
        if rc:
            _raise(rc)

    def read(self, offset: int, dst_address: int, n: int) -> None:
        """Copies n bytes at offset into host memory at dst_address (immediately)."""
        ffi, lib = load()
        rc = lib.nm_buffer_read(self._live(), offset, ffi.cast("void *", dst_address), n)
        if rc:
            _raise(rc)

    def memory(self) -> memoryview:
        """A writable memoryview of the buffer's nbytes bytes (shared memory; valid until release())."""
        ffi, _ = load()
        return memoryview(ffi.buffer(ffi.cast("char *", self.address), self.nbytes))

    def native_handle(self) -> int:
        """The address of the MTLBuffer under this buffer (a Metal device's; its contents start at byte 0 of
        this buffer); UnsupportedPlatformError on the CPU device."""
        ffi, lib = load()
        out = ffi.new("void **")
        rc = lib.nm_buffer_native(self._live(), out)
        if rc:
            _raise(rc)
        return int(ffi.cast("uintptr_t", out[0]))

    def _live(self):
        if self.handle is None:
            raise MetalRuntimeError("this buffer was released; create a new one")
        return self.handle

    def release(self) -> None:
        """Drops the handle (idempotent). Work already queued keeps the memory valid until it completes."""
        h, self.handle = self.handle, None
        if h is not None:
            try:
                load()[1].nm_buffer_release(h)
            except Exception:  # interpreter shutdown
                pass
            self._owner = None

    def __del__(self):
        self.release()


class Pipeline:
    """A compiled kernel."""

    def __init__(self, device: Device, handle, kernel_name: str):
        ffi, lib = load()
        self.device = device
        self.handle = handle
        self.kernel_name = kernel_name
        info = ffi.new("nm_pipeline_info *")
        rc = lib.nm_pipeline_get_info(handle, info)
        if rc:
            _raise(rc)
        self.max_total_threads_per_threadgroup = int(info.max_total_threads_per_threadgroup)
        self.thread_execution_width = int(info.thread_execution_width)
        self.static_threadgroup_memory = int(info.static_threadgroup_memory)
        self.from_cache = bool(info.from_cache)
        self.compile_ns = int(info.compile_ns)

    def __del__(self):
        h, self.handle = getattr(self, "handle", None), None
        if h is not None:
            try:
                load()[1].nm_pipeline_release(h)
            except Exception:
                pass


class DispatchPlan:
    """A preallocated nm_dispatch_desc reused across launches (the fast path of Queue.submit)."""

    def __init__(self, pipeline: Pipeline, buffer_slots: list[int], arg_slot: int, arg_capacity: int,
                 threadgroup_memory: list[int] = (), label: str | None = None):
        ffi, _ = load()
        n = len(buffer_slots)
        self.pipeline = pipeline
        self._desc = ffi.new("nm_dispatch_desc *")
        self._buffers = ffi.new("nm_buffer *[]", max(n, 1))
        self._offsets = ffi.new("uint64_t[]", max(n, 1))
        self._slots = ffi.new("uint32_t[]", list(buffer_slots) or [0])
        self._args = ffi.new("char[]", max(arg_capacity, 1))
        self._tg = ffi.new("uint32_t[]", 31)
        self._refs: list = [None] * n
        self._label = ffi.new("char[]", label.encode("utf-8")) if label else ffi.NULL
        self.arg_view = memoryview(ffi.buffer(self._args, arg_capacity)) if arg_capacity else memoryview(bytearray(0))
        d = self._desc
        d.pipeline = pipeline.handle
        d.buffer_count = n
        d.buffers = self._buffers
        d.buffer_offsets = self._offsets
        d.buffer_slots = self._slots
        d.arg_bytes = self._args
        d.arg_length = 0
        self._arg_length = 0
        d.arg_slot = arg_slot
        d.threadgroup_memory_lengths = self._tg
        d.label = self._label
        self.set_threadgroup_memory(list(threadgroup_memory))

    def set_buffer(self, i: int, buffer: Buffer, offset: int) -> None:
        """Binds buffer at byte offset to the i-th slot of buffer_slots (keeps a reference while set)."""
        self._buffers[i] = buffer.handle
        self._offsets[i] = offset
        self._refs[i] = buffer

    def clear_buffer(self, i: int) -> None:
        """Unbinds the i-th slot, dropping its reference (a submit needs it bound again first)."""
        self._buffers[i] = load()[0].NULL
        self._offsets[i] = 0
        self._refs[i] = None

    def set_grid(self, groups: tuple[int, int, int], threads: tuple[int, int, int]) -> None:
        """Threadgroups per grid and threads per threadgroup."""
        d = self._desc
        d.groups = groups
        d.threads = threads

    def set_threadgroup_memory(self, lengths: list[int]) -> None:
        """Byte lengths of the [[threadgroup(i)]] arguments."""
        if len(lengths) > 31:
            raise KernelLaunchError(f"{len(lengths)} threadgroup memory arguments exceed Metal's 31")
        for i, n in enumerate(lengths):
            self._tg[i] = n
        self._desc.threadgroup_memory_count = len(lengths)


_live_queues: "weakref.WeakSet[Queue]" = weakref.WeakSet()
_forked_child = False  # set in a child forked after a device was opened: the runtime refuses every call there


def _after_fork_in_child() -> None:
    global _forked_child
    _forked_child = _forked_child or bool(_devices)


os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _cancel_work_at_exit() -> None:
    """Cancels work still queued on the CPU device: its results can no longer be read, and memory it writes
    may be freed while the interpreter shuts down. A Metal GPU finishes (or its watchdog ends) what it has."""
    if _forked_child or _loader.loaded() is None:
        return
    lib = _loader.loaded()[1]
    for q in list(_live_queues):
        if q.handle is not None:
            lib.nm_queue_cancel(q.handle)


class Queue:
    """An in-order work queue (a stream). Work ids increase per queue."""

    def __init__(self, device: Device, handle):
        ffi, lib = load()
        self.device = device
        self.handle = handle
        self._ffi = ffi
        self._id = ffi.new("uint64_t *")
        self._dispatch_fn = lib.nm_queue_dispatch
        _live_queues.add(self)

    def submit(self, plan: DispatchPlan, arg_length: int) -> int:
        """Enqueues plan with the first arg_length bytes of plan.arg_view: exactly one C call."""
        d = plan._desc
        if arg_length != plan._arg_length:  # a cffi field store costs about as much as the call's checks
            d.arg_length = arg_length
            plan._arg_length = arg_length
        rc = self._dispatch_fn(self.handle, d, self._id)
        if rc:
            _raise(rc, launch=True)
        return self._id[0]

    def dispatch(self, pipeline: Pipeline, buffers: list[Buffer], offsets: list[int], slots: list[int],
                 arg_bytes: bytes | None, arg_slot: int, threadgroup_memory: list[int],
                 groups: tuple[int, int, int], threads: tuple[int, int, int], label: str | None = None) -> int:
        """Enqueues one dispatch (builds a descriptor per call; use DispatchPlan + submit when it repeats)."""
        ffi = self._ffi
        n = len(buffers)
        if len(offsets) != n or len(slots) != n:
            raise KernelLaunchError(f"dispatch: {n} buffers but {len(offsets)} offsets and {len(slots)} slots")
        d = ffi.new("nm_dispatch_desc *")
        bufs = ffi.new("nm_buffer *[]", [b.handle for b in buffers] or [ffi.NULL])
        offs = ffi.new("uint64_t[]", list(offsets) or [0])
        sl = ffi.new("uint32_t[]", list(slots) or [0])
        tg = ffi.new("uint32_t[]", list(threadgroup_memory) or [0])
        args = ffi.new("char[]", bytes(arg_bytes)) if arg_bytes else ffi.NULL
        lab = ffi.new("char[]", label.encode("utf-8")) if label else ffi.NULL
        d.pipeline = pipeline.handle
        d.buffer_count = n
        d.buffers = bufs
        d.buffer_offsets = offs
        d.buffer_slots = sl
        d.arg_bytes = args
        d.arg_length = len(arg_bytes) if arg_bytes else 0
        d.arg_slot = arg_slot
        d.threadgroup_memory_count = len(threadgroup_memory)
        d.threadgroup_memory_lengths = tg
        d.groups = groups
        d.threads = threads
        d.label = lab
        out = ffi.new("uint64_t *")
        rc = self._dispatch_fn(self.handle, d, out)
        if rc:
            _raise(rc, launch=True)
        return int(out[0])

    def copy(self, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int, n: int) -> int:
        """Enqueues a copy of n bytes between buffers."""
        out = self._ffi.new("uint64_t *")
        rc = load()[1].nm_queue_copy(self.handle, src._live(), src_offset, dst._live(), dst_offset, n, out)
        if rc:
            _raise(rc)
        return int(out[0])

    def fill(self, buf: Buffer, offset: int, n: int, value: int) -> int:
        """Enqueues setting n bytes at offset to value (0..255)."""
        out = self._ffi.new("uint64_t *")
        rc = load()[1].nm_queue_fill(self.handle, buf._live(), offset, n, value, out)
        if rc:
            _raise(rc)
        return int(out[0])

    def marker(self) -> int:
        """Enqueues a marker; its id completes when all earlier work on this queue has."""
        out = self._ffi.new("uint64_t *")
        rc = load()[1].nm_queue_marker(self.handle, out)
        if rc:
            _raise(rc)
        return int(out[0])

    def wait_for(self, other: "Queue", work_id: int) -> None:
        """Later work on this queue starts after other's work_id completes."""
        rc = load()[1].nm_queue_wait_for(self.handle, other.handle, work_id)
        if rc:
            _raise(rc)

    def flush(self) -> None:
        """Submits encoded work without waiting."""
        rc = load()[1].nm_queue_flush(self.handle)
        if rc:
            _raise(rc)

    def wait(self) -> None:
        """Waits for all work submitted so far; raises MetalRuntimeError naming the first failed kernel that this
        thread submitted (another thread's failure is raised by that thread's wait) and no wait reported yet.

        Interruptible: a KeyboardInterrupt is raised within ``WAIT_SLICE_NS``; on the CPU device the queue's
        unfinished work is cancelled first (see the module docstring)."""
        ffi, lib = load()
        work = ffi.new("uint64_t *")
        done = ffi.new("int32_t *")
        try:
            while True:
                rc = lib.nm_queue_wait_bounded(self.handle, work, WAIT_SLICE_NS, done)
                if rc:
                    _raise(rc)
                if done[0]:
                    return
        except KeyboardInterrupt as interrupt:
            if not self.cancel() and hasattr(interrupt, "add_note"):  # add_note: Python 3.11+
                interrupt.add_note("numba-metal: a Metal GPU cannot stop work it was given; this stream's next wait "
                                   "waits for it (the GPU's watchdog ends work that runs too long)")
            raise

    def cancel(self) -> bool:
        """Abandons the work that has not completed: the running kernel is stopped, the rest is skipped; other
        threads whose work this abandons get MetalRuntimeError at their next wait. True when done; False
        where the device cannot stop work it has started (a Metal GPU)."""
        rc = load()[1].nm_queue_cancel(self.handle)
        if rc == NM_ERR_UNAVAILABLE:
            return False
        if rc:
            _raise(rc)
        return True

    def query(self, work_id: int) -> bool:
        """True when work_id has completed (work_id 0: all work issued so far)."""
        out = self._ffi.new("int32_t *")
        rc = load()[1].nm_queue_query(self.handle, work_id, out)
        if rc:
            _raise(rc)
        return bool(out[0])

    def timestamps(self, work_id: int) -> tuple[int, int]:
        """(start_ns, end_ns) of completed work in now_ns()'s base."""
        s = self._ffi.new("uint64_t *")
        e = self._ffi.new("uint64_t *")
        rc = load()[1].nm_queue_timestamps(self.handle, work_id, s, e)
        if rc:
            _raise(rc)
        return int(s[0]), int(e[0])

    def release(self) -> None:
        """Drops the queue without waiting (idempotent): work already queued still runs."""
        h, self.handle = self.handle, None
        if h is not None:
            try:
                load()[1].nm_queue_release(h)
            except Exception:
                pass

    def __del__(self):
        self.release()

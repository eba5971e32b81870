"""Devices: the list of devices and their limits, opening one, and what an opened device makes (buffers,
pipelines, queues) or reports (statistics, memory, the time limit, the simulated device's controls)."""

from __future__ import annotations

import atexit
import os
import sys
import threading
import warnings
from typing import NamedTuple

from numba_metal.errors import MetalRuntimeError, NumbaMetalWarning

from . import _loader, buffers, queues
from ._loader import load
from .buffers import Buffer
from .constants import DEVICE_KINDS, MATH_SAFE, NM_ERR_FORKED
from .digests import sha256
from .pipelines import KernelParam, Pipeline
from .queues import Queue
from .status import raise_status


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
        raise_status(rc)
    return DeviceInfo(
        index=index,
        name=ffi.string(out.name).decode("utf-8", "replace"),
        kind=DEVICE_KINDS[int(out.kind)],
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
        raise_status(NM_ERR_FORKED)
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


def cache_root() -> str | None:
    """``<cache>``, the directory of numba-metal's caches (compiled kernels, CPU objects),
    by the runtime's one rule (ObjectCache.root(): NUMBA_METAL_CACHE_DIR, else ``$NUMBA_CACHE_DIR/numba-metal``,
    else ``$XDG_CACHE_HOME/numba-metal``, else ``$HOME/.cache/numba-metal``); None without a home. Read from
    the environment at each call."""
    ffi, lib = load()
    capacity = 4096
    while True:
        out = ffi.new("char[]", capacity)
        length = int(lib.nm_cache_root(out, capacity))
        if length == 0:
            return None
        if length < capacity:
            return os.fsdecode(ffi.string(out, length))
        capacity = length + 1


def cpu_compiler_info() -> str:
    """The clang the CPU device compiles MSL with: its path, version and where it was found, then a line
    ``skipped PATH (where): why`` per candidate refused before it (nm_cpu_compiler_info). Finds and probes
    it when no kernel has been compiled yet.

    Raises:
        UnsupportedPlatformError: no usable clang; the message names every candidate tried, why each was
            refused, and how to get one.
    """
    ffi, lib = load()
    out = ffi.new("char[]", 8192)
    rc = lib.nm_cpu_compiler_info(out, len(out))
    if rc:
        raise_status(rc)
    return ffi.string(out).decode("utf-8", "replace")


class Device:
    """An opened device (use open_device)."""

    def __init__(self, index: int):
        ffi, lib = load()
        self.info = _info(index)
        out = ffi.new("nm_device **")
        rc = lib.nm_device_open(index, out)
        if rc:
            raise_status(rc)
        self.handle = out[0]
        # Released wrapped buffers whose memory queued work still uses: (handle, owner) until it completes.
        self._deferred: list = []
        self._deferred_lock = threading.Lock()

    def defer_release(self, handle, owner) -> None:
        """Keeps a released wrapped buffer's handle and memory owner until no queued work uses it (reaped
        at every wait, and at every later deferral)."""
        with self._deferred_lock:
            self._deferred.append((handle, owner))
        self.reap()

    def reap(self) -> None:
        """Lets go of the deferred wrapped buffers that no queued work uses any more, and of their owners."""
        if not self._deferred:
            return
        _, lib = load()
        with self._deferred_lock:
            done, waiting = [], []
            for d in self._deferred:
                (waiting if buffers.handle_in_use(d[0]) else done).append(d)
            self._deferred = waiting
        for handle, _owner in done:
            lib.nm_buffer_release(handle)

    @property
    def deferred_releases(self) -> int:
        """How many released wrapped buffers wait for queued work before their owners are dropped."""
        return len(self._deferred)

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
            raise_status(rc)
        return Buffer(self, out[0], nbytes, None)

    def wrap_buffer(self, address: int, nbytes: int, owner: object) -> "Buffer":
        """A buffer over page-aligned host memory at address, without a copy; keeps owner alive."""
        ffi, lib = load()
        out = ffi.new("nm_buffer **")
        rc = lib.nm_buffer_wrap(self.handle, ffi.cast("void *", address), nbytes, out)
        if rc:
            raise_status(rc)
        return Buffer(self, out[0], nbytes, owner)

    def wrap_native_buffer(self, mtl_buffer: int, owner: object) -> "Buffer":
        """A buffer over another library's shared-storage MTLBuffer (an ``id<MTLBuffer>`` address) of this
        Metal device, without a copy; keeps owner alive. UnsupportedPlatformError on the CPU device."""
        ffi, lib = load()
        out = ffi.new("nm_buffer **")
        rc = lib.nm_buffer_wrap_native(self.handle, ffi.cast("void *", mtl_buffer), out)
        if rc:
            raise_status(rc)
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
            _dump_msl(dump, source, language_version)
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
            raise_status(rc)
        return Pipeline(self, out[0], kernel_name)

    def new_queue(self) -> "Queue":
        """A new in-order queue (one per stream)."""
        ffi, lib = load()
        out = ffi.new("nm_queue **")
        rc = lib.nm_queue_new(self.handle, out)
        if rc:
            raise_status(rc)
        return Queue(self, out[0])

    def stats(self) -> dict:
        """live_buffers, live_buffer_bytes, pipelines_compiled, pipelines_from_cache, dispatches."""
        ffi, lib = load()
        out = ffi.new("nm_device_stats *")
        rc = lib.nm_device_get_stats(self.handle, out)
        if rc:
            raise_status(rc)
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
            raise_status(rc)
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
            raise_status(rc)

    @property
    def time_limit(self) -> float | None:
        """The per-dispatch time limit in seconds, None when there is none."""
        ffi, lib = load()
        out = ffi.new("uint64_t *")
        rc = lib.nm_device_get_time_limit(self.handle, out)
        if rc:
            raise_status(rc)
        return out[0] / 1e9 if out[0] else None

    def sim_control(self, action: int, value: int = 0) -> None:
        """The simulated Metal device only: inject a fault (SIM_FAIL_NEXT_COMMAND_BUFFER,
        SIM_WATCHDOG_NEXT_COMMAND_BUFFER), hold its GPU (SIM_HOLD_GPU with value 1, release with 0),
        accept only file-backed mapped memory in makeBuffer(bytesNoCopy:) (SIM_STRICT_NO_COPY, 1 or 0), close
        the penalty box after N more failed command buffers (SIM_PENALTY_BOX_AFTER, N; accessRevoked from
        then on), fail the next command buffer with code 14 (SIM_INTERACTIVITY_NEXT_COMMAND_BUFFER), allocate the
        next buffer untracked (SIM_UNTRACKED_NEXT_BUFFER), make the next allocation answer nil as Metal does
        when out of memory (SIM_FAIL_NEXT_ALLOCATION), follow the buffers allocated from then on with
        read-only zero pages, so out-of-bounds reads answer 0 unreported (SIM_OUT_OF_BOUNDS_READS_RETURN_ZERO, 1
        or 0), fault the Nth dispatch of the next command buffer (SIM_FAIL_AT_DISPATCH_OF_NEXT_COMMAND_BUFFER, N),
        or give the queues made afterwards one shared completion thread (SIM_SHARED_COMPLETION_THREAD, 1 or 0)."""
        rc = load()[1].nm_sim_control(self.handle, action, value)
        if rc:
            raise_status(rc)

    def sim_stats(self) -> dict:
        """The simulated Metal device only: live_objects, autoreleased_without_pool,
        uncompleted_command_buffers, peak_uncompleted_command_buffers, failed_command_buffers, the
        last_math_mode, last_math_functions, last_language_version its Metal compiler received,
        uncommitted_work_command_buffers and longest_uncommitted_ns (encoded work the GPU was not given),
        and refused_no_copy_wraps."""
        ffi, lib = load()
        out = ffi.new("nm_sim_stats *")
        rc = lib.nm_sim_get_stats(self.handle, out)
        if rc:
            raise_status(rc)
        return {k: int(getattr(out, k)) for k in ("live_objects", "autoreleased_without_pool", "uncompleted_command_buffers",
                                                   "peak_uncompleted_command_buffers", "failed_command_buffers",
                                                   "last_math_mode", "last_math_functions", "last_language_version",
                                                   "uncommitted_work_command_buffers", "longest_uncommitted_ns",
                                                   "refused_no_copy_wraps")}


#: Time limits from this many seconds on (2**64 ns: the runtime's counter) are no limit.
_NO_LIMIT_SECONDS = 2**64 / 1e9

_dump_failures: set = set()   # directories already warned about


def _dump_msl(directory: str, source: str, language_version: int = 0) -> None:
    """Writes source to directory as <sha256>.metal (atomically: parallel processes may write the same file),
    and an empty <sha256>.metal.std<V> for each MSL version V (times 100) it was compiled at (0: 300, the
    version the Metal backend pins), so that .ci/macos.sh compiles it at the versions it must compile at.
    A directory that cannot be written warns, once, and the compile goes on: a debugging aid never fails a
    launch."""
    name = sha256(source.encode("utf-8")).hexdigest() + ".metal"
    path = os.path.join(directory, name)
    marker = f"{path}.std{int(language_version) or 300}"
    if os.path.exists(path) and os.path.exists(marker):
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, exist_ok=True)
        open(marker, "a").close()
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
    queues.cancel_all(_loader.loaded()[1])

"""Which device numba-metal uses, chosen explicitly and never by silent fallback.

The device is a Metal GPU by default. Without one, using a device raises
:class:`~numba_metal.errors.UnsupportedPlatformError` that says how to choose the CPU reference
device: ``NUMBA_METAL_DEVICE=cpu`` in the environment, or ``metal.select_device('cpu')``.
``'metal-sim'`` chooses the simulated Metal device (the Metal backend on a model of Apple's Metal API,
for testing that backend where there is no Mac); it is only ever used when asked for by name.
"""

from __future__ import annotations

import numbers
import os
import platform
import threading
import weakref
from collections import namedtuple

from numba_metal.errors import MetalTypeError, MetalValueError, UnsupportedPlatformError
from numba_metal.host import settings

_KINDS = ("metal", "cpu", "metal-sim")

#: numba.cuda's ``get_memory_info()`` result: bytes free and in total.
MemoryInfo = namedtuple("MemoryInfo", "free,total")
_lock = threading.RLock()
#: The device context in use, None until a device is first used (the launch path reads it directly).
selected: "DeviceContext | None" = None
_requested: str | None = None


class DeviceContext:
    """A runtime device plus numba-metal's per-device state: the default queue and the live streams."""

    def __init__(self, device):
        self.device = device
        self.info = device.info
        self.default_queue = device.new_queue()
        self.streams: "weakref.WeakSet" = weakref.WeakSet()
        #: queues of streams that were dropped with work perhaps still queued: ``synchronize`` waits for
        #: them too, then forgets them
        self.retired_queues: list = []
        # per launching thread: what its next wait reads (host/kernel_output.py)
        self.pending_checks: dict = {}
        #: the kernels' launch states on this device (host/launch.py), which hold their last arrays
        self.launch_states: "weakref.WeakSet" = weakref.WeakSet()
        self.lock = threading.Lock()
        #: a launch was submitted since the last wait for every stream, by any thread (``unwaited``) or by
        #: the calling thread (``launched.flag``): what a host access of device memory must wait for
        #: (host/streams.py). Launches set both just after submitting; a wait for every stream clears both.
        self.unwaited = False
        self.launched = _ThreadFlag()

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def id(self) -> int:
        """numba.cuda's device id: the device's index in the runtime's device list."""
        return self.info.index

    @property
    def name(self) -> str:
        return self.info.name

    def get_memory_info(self) -> MemoryInfo:
        """numba.cuda's ``get_memory_info()``: ``(free, total)`` in bytes. Host and GPU share memory, so
        ``total`` is a budget, Metal's ``recommendedMaxWorkingSetSize`` (the CPU reference device: the
        host's physical memory), and ``free`` is what this process's device has not yet allocated of it
        (Metal's ``currentAllocatedSize``). Unlike CUDA's, ``free`` does not subtract what other processes
        or host code use: it can exceed what the OS could actually give."""
        info = self.device.memory_info()
        return MemoryInfo(info["free"], info["total"])

    @property
    def deallocations(self) -> "_Deallocations":
        """numba.cuda's pending frees: ``current_context().deallocations.clear()`` frees the memory of arrays
        the program has dropped. A buffer is freed once no array, no queued work and no kernel's last
        launch uses it; ``clear()`` makes the kernels forget their last launch's arrays."""
        return _Deallocations(self)

    def reset(self) -> None:
        """numba.cuda's ``reset()``: here it waits for the device's work. numba.cuda frees every allocation
        of the context, leaving its arrays dangling; numba-metal frees a buffer when its arrays are gone, so
        arrays stay valid and the device stays usable."""
        deadline = settings.wait_deadline()
        for queue in self.all_queues():
            if queue.usable:
                queue.wait(deadline)

    def all_queues(self):
        """The default queue, the queue of every live stream and those of dropped streams with work
        perhaps left (what ``synchronize`` waits for)."""
        queues = [self.default_queue]
        queues.extend(s.queue for s in list(self.streams))
        queues.extend(self.retired_queues)
        return queues

    def retire_queue(self, queue) -> None:
        """A dropped stream's queue: kept, if it has work left, until a ``synchronize`` has waited for it;
        queues whose work has completed are let go. (Called by the garbage collector, maybe while this
        thread holds ``lock``, so it takes no lock: the list is replaced, never changed in place.)"""
        queue.flush()
        self.retired_queues = [q for q in self.retired_queues if not q.query(0)] + (
            [] if not queue.usable or queue.query(0) else [queue])

    def take_retired_queues(self) -> list:
        """The dropped streams' queues with work perhaps left, forgotten here (the caller waits for them)."""
        retired, self.retired_queues = self.retired_queues, []
        return retired

    def __repr__(self) -> str:
        return f"<numba_metal device {self.info.name!r} ({self.info.kind})>"


class _ThreadFlag(threading.local):
    """A flag of each thread's own, False until the thread sets it."""

    flag = False


class _Deallocations:
    """``DeviceContext.deallocations``: numba.cuda's queue of pending frees. Nothing is queued here (a
    buffer is freed as soon as nothing uses it), but each kernel keeps the arrays of its last launch bound,
    so that launching again with the same arrays rebinds nothing; ``clear()`` drops those bindings."""

    def __init__(self, ctx):
        self._ctx = ctx

    def clear(self) -> None:
        for state in list(self._ctx.launch_states):
            state.forget_arrays()

    def __len__(self) -> int:
        return 0


def _want_from_env() -> str | None:
    value = os.environ.get("NUMBA_METAL_DEVICE", "").strip().lower()
    return value or None


_contexts: dict = {}   # device index -> its DeviceContext (one per device, kept for the process)


def _context(info) -> DeviceContext:
    from numba_metal import runtime
    ctx = _contexts.get(info.index)
    if ctx is None:
        ctx = _contexts[info.index] = DeviceContext(runtime.open_device(info.index))
    return ctx


def _open(kind: str) -> DeviceContext:
    from numba_metal import runtime

    devices = runtime.list_devices(include_simulated=kind == "metal-sim")
    for info in devices:
        if info.kind == kind:
            return _context(info)
    if kind == "metal":
        raise UnsupportedPlatformError(_no_metal_message())
    raise UnsupportedPlatformError(f"no {kind!r} device is available; devices found: "
                                   f"{[d.name for d in devices] or 'none'}")


def _no_metal_message() -> str:
    where = f"{platform.system()} {platform.machine()}"
    return (f"no Metal GPU is available on this machine ({where}). To run kernels on numba-metal's CPU "
            "reference device instead, set the environment variable NUMBA_METAL_DEVICE=cpu or call "
            "metal.select_device('cpu') before using a device.")


def current() -> DeviceContext:
    """The device in use, opening the chosen one on first use."""
    global selected
    ctx = selected
    if ctx is not None:
        return ctx
    with _lock:
        if selected is None:
            want = _requested or _want_from_env() or "metal"
            if want not in _KINDS:
                raise UnsupportedPlatformError(
                    f"NUMBA_METAL_DEVICE={want!r} is not a device kind; use 'metal', 'cpu' or 'metal-sim'")
            selected = _open(want)
        return selected


def select_device(kind) -> DeviceContext:
    """Choose the device: ``'metal'`` (an Apple GPU), ``'cpu'`` (the CPU reference device),
    ``'metal-sim'`` (the simulated Metal device), or as numba.cuda an integer: the index of a Metal GPU
    in :func:`list_devices` (there is no integer for the CPU device, so that numba.cuda's
    ``select_device(0)`` never quietly picks it).

    Arrays and streams belong to the device they were made on.

    Raises:
        UnsupportedPlatformError: an unknown device kind, a GPU index this machine does not have, or a kind with
            no device here (``'metal'`` without a Metal GPU).
        MetalRuntimeError: as ``get_current_device``.
    """
    global selected, _requested
    if isinstance(kind, GPU):
        kind = kind.id
    if isinstance(kind, int) and not isinstance(kind, bool):
        gpus = list_devices()
        if not 0 <= kind < len(gpus):
            if not gpus:
                raise UnsupportedPlatformError(_no_metal_message())
            raise UnsupportedPlatformError(f"there is no Metal GPU {kind}; this machine has {len(gpus)}")
        with _lock:
            selected = _context(gpus[kind].info)
            _requested = "metal"
            return selected
    kind = str(kind).lower()
    if kind not in _KINDS:
        raise UnsupportedPlatformError(f"unknown device kind {kind!r}; use 'metal', 'cpu' or 'metal-sim'")
    with _lock:
        if selected is not None and selected.kind == kind:
            return selected
        ctx = _open(kind)
        _requested = kind
        selected = ctx
        return ctx


def get_current_device() -> DeviceContext:
    """The device in use (numba.cuda's ``get_current_device``): ``id``, ``name``, ``kind``, ``info``.

    Raises:
        UnsupportedPlatformError: the first use of a device finds none to use: no Metal GPU and the CPU
            reference device not chosen (``NUMBA_METAL_DEVICE=cpu`` or ``select_device('cpu')``), or
            ``NUMBA_METAL_DEVICE`` naming no device kind.
        MetalRuntimeError: the runtime library cannot be loaded, or this process is a fork of one that had used
            the device.
    """
    return current()


class GPU:
    """A Metal GPU in :data:`gpus` (numba.cuda's ``GPU`` proxy): ``id``, ``name``, ``info``; ``with gpu:``
    makes it the device in use for the block."""

    def __init__(self, info):
        self.info = info
        self.id = info.index
        self.name = info.name
        self._previous = []

    def select(self) -> DeviceContext:
        return select_device(self.id)

    def __enter__(self):
        self._previous.append(selected)
        return self.select()

    def __exit__(self, *exc):
        global selected
        previous = self._previous.pop()
        if previous is not None:
            with _lock:
                selected = previous

    def __repr__(self) -> str:
        return f"<numba_metal GPU {self.id} {self.name!r}>"


def list_devices() -> list:
    """The Metal GPUs numba-metal can use (numba.cuda's ``list_devices``); the CPU reference device is
    chosen by name, ``select_device('cpu')``.

    Raises:
        nothing: a runtime library that cannot be loaded gives an empty list.
    """
    try:
        from numba_metal import runtime
        infos = runtime.list_devices()
    except Exception:  # noqa: BLE001 - no runtime library: no GPU either
        return []
    return [GPU(info) for info in infos if info.kind == "metal"]


class _GPUList:
    """``metal.gpus``: the Metal GPUs, as numba.cuda's ``cuda.gpus`` (indexable, iterable, ``current``)."""

    def __len__(self) -> int:
        return len(list_devices())

    def __getitem__(self, i) -> GPU:
        return list_devices()[i]

    def __iter__(self):
        return iter(list_devices())

    @property
    def current(self) -> DeviceContext:
        return current()

    def __repr__(self) -> str:
        return f"<numba_metal GPU list {list_devices()}>"


gpus = _GPUList()


def detect() -> bool:
    """Print the devices numba-metal can use and return whether a Metal GPU is among them (numba.cuda's
    ``detect``).

    Raises:
        nothing: it prints why the runtime library cannot be loaded and returns False.
    """
    try:
        from numba_metal import runtime
        infos = runtime.list_devices()
    except Exception as e:  # noqa: BLE001 - report why nothing can be listed
        print(f"numba-metal cannot load its runtime: {e}")
        return False
    print(f"Found {len(infos)} device(s)")
    for info in infos:
        print(f"id {info.index:>3} {info.name!r:>40} ({info.kind}, SIMD width {info.simd_width}, "
              f"{info.max_threads_per_threadgroup} threads per threadgroup)")
    has_gpu = any(info.kind == "metal" for info in infos)
    print("Summary:", "a Metal GPU is available" if has_gpu else
          "no Metal GPU; NUMBA_METAL_DEVICE=cpu selects the CPU reference device")
    return has_gpu


def is_available() -> bool:
    """True if a Metal GPU is available (the CPU reference device does not count).

    Raises:
        nothing: any failure answers False.
    """
    try:
        from numba_metal import runtime
        return any(d.kind == "metal" for d in runtime.list_devices())
    except Exception:  # noqa: BLE001 - "available" must never raise
        return False


def set_kernel_time_limit(seconds: float | None) -> float | None:
    """Limit how long one kernel launch may run on the device in use: a launch still running after
    ``seconds`` is stopped and the next wait for it raises MetalRuntimeError naming the kernel (its
    results are incomplete); later work runs normally. ``None`` (or 0, or ``float('inf')``): no limit, the
    default. Returns the previous limit. numba-metal's own API (numba.cuda has none); the CPU reference device and the simulated
    Metal device only: on a Metal GPU macOS's watchdog already stops a command buffer that runs too long
    (UnsupportedPlatformError says so). ``NUMBA_METAL_CPU_TIME_LIMIT_MS`` sets the starting limit.

    Raises:
        UnsupportedPlatformError: the first use of a device finds none to use: no Metal GPU and the CPU
            reference device not chosen (``NUMBA_METAL_DEVICE=cpu`` or ``select_device('cpu')``), or
            ``NUMBA_METAL_DEVICE`` naming no device kind.
        UnsupportedPlatformError: the device is a Metal GPU (macOS's watchdog limits it instead).
        MetalTypeError: ``seconds`` is not a real number or None.
        MetalValueError: ``seconds`` is negative or NaN.
        MetalRuntimeError: the runtime library cannot be loaded.
    """
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
            raise MetalTypeError(f"set_kernel_time_limit: seconds must be a real number or None (no limit), "
                                 f"not {type(seconds).__name__}")
        if not seconds >= 0:
            raise MetalValueError(f"set_kernel_time_limit: seconds must be >= 0 (None or 0: no limit), not {seconds!r}")
    device = current().device
    previous = device.time_limit
    device.set_time_limit(seconds)
    return previous


def get_kernel_time_limit() -> float | None:
    """The device's limit on one kernel launch's run time in seconds (``set_kernel_time_limit``), or None.

    Raises:
        UnsupportedPlatformError, MetalRuntimeError: as ``get_current_device``.
    """
    return current().device.time_limit


def get_device_info():
    """Facts about the device in use (``DeviceInfo``: name, kind, limits, unified memory...).

    Raises:
        UnsupportedPlatformError, MetalRuntimeError: as ``get_current_device``.
    """
    return current().info


def current_context() -> DeviceContext:
    """numba.cuda's ``current_context``: the device in use.

    Raises:
        UnsupportedPlatformError, MetalRuntimeError: as ``get_current_device``.
    """
    return current()


def require_context(fn):
    """numba.cuda's decorator making sure a device is in use before ``fn`` runs.

    Raises:
        UnsupportedPlatformError: when the decorated function is called and no device can be used (as
            ``get_current_device``); decorating raises nothing.
        MetalRuntimeError: as ``get_current_device``.
    """
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        current()
        return fn(*args, **kwargs)
    return wrapper


def close() -> None:
    """numba.cuda's ``close``: here it waits for all the device's work. Buffers are freed when the arrays
    holding them are, and the device stays open for the process.

    Raises:
        MetalRuntimeError: work waited for failed (a device fault, a kernel stopped by the time limit).
    """
    ctx = selected
    if ctx is not None:
        ctx.reset()


def is_float16_supported() -> bool:
    """float16 arrays and arithmetic are supported (MSL's ``half``).

    Raises:
        nothing: it returns a constant.
    """
    return True


def is_bfloat16_supported() -> bool:
    """bfloat16 is not a numba-metal type.

    Raises:
        nothing: it returns a constant.
    """
    return False

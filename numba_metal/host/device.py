"""Which device numba-metal uses, chosen explicitly and never by silent fallback.

The device is a Metal GPU by default. Without one, using a device raises
:class:`~numba_metal.errors.UnsupportedPlatformError` that says how to choose the CPU reference
device: ``NUMBA_METAL_DEVICE=cpu`` in the environment, or ``metal.select_device('cpu')``.
``'metal-sim'`` chooses the simulated Metal device (the Metal backend on a model of Apple's Metal API,
for testing that backend where there is no Mac); it is only ever used when asked for by name.
"""

from __future__ import annotations

import os
import platform
import threading
import weakref

from numba_metal.errors import UnsupportedPlatformError

_KINDS = ("metal", "cpu", "metal-sim")
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
        # per launching thread: what its next wait reads (host/kernel_output.py)
        self.pending_checks: dict = {}
        self.lock = threading.Lock()

    @property
    def kind(self) -> str:
        return self.info.kind

    def all_queues(self):
        """The default queue and the queue of every live stream (what ``synchronize`` waits for)."""
        queues = [self.default_queue]
        queues.extend(s.queue for s in list(self.streams))
        return queues

    def __repr__(self) -> str:
        return f"<numba_metal device {self.info.name!r} ({self.info.kind})>"


def _want_from_env() -> str | None:
    value = os.environ.get("NUMBA_METAL_DEVICE", "").strip().lower()
    return value or None


def _open(kind: str) -> DeviceContext:
    from numba_metal import runtime

    devices = runtime.list_devices(include_simulated=kind == "metal-sim")
    for info in devices:
        if info.kind == kind:
            return DeviceContext(runtime.open_device(info.index))
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


def select_device(kind: str) -> DeviceContext:
    """Choose the device: ``'metal'`` (an Apple GPU), ``'cpu'`` (the CPU reference device) or
    ``'metal-sim'`` (the simulated Metal device).

    Arrays and streams belong to the device they were made on.
    """
    global selected, _requested
    if isinstance(kind, int):
        kind = {0: "metal", 1: "cpu"}.get(kind, str(kind))
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


def is_available() -> bool:
    """True if a Metal GPU is available (the CPU reference device does not count)."""
    try:
        from numba_metal import runtime
        return any(d.kind == "metal" for d in runtime.list_devices())
    except Exception:  # noqa: BLE001 - "available" must never raise
        return False


def set_kernel_time_limit(seconds: float | None) -> float | None:
    """Limit how long one kernel launch may run on the device in use: a launch still running after
    ``seconds`` is stopped and the next wait for it raises MetalRuntimeError naming the kernel (its
    results are incomplete); later work runs normally. ``None`` (or 0): no limit, the default. Returns the
    previous limit. numba-metal's own API (numba.cuda has none); the CPU reference device and the simulated
    Metal device only: on a Metal GPU macOS's watchdog already stops a command buffer that runs too long
    (UnsupportedPlatformError says so). ``NUMBA_METAL_CPU_TIME_LIMIT_MS`` sets the starting limit."""
    device = current().device
    previous = device.time_limit
    device.set_time_limit(seconds)
    return previous


def get_kernel_time_limit() -> float | None:
    """The device's limit on one kernel launch's run time in seconds (``set_kernel_time_limit``), or None."""
    return current().device.time_limit


def get_device_info():
    """Facts about the device in use (``DeviceInfo``: name, kind, limits, unified memory...)."""
    return current().info

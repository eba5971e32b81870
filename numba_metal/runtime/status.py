"""A failed call's status code and the runtime's thread-local message, as an exception of the
:mod:`numba_metal.errors` family (the module docstring of :mod:`numba_metal.runtime` says which)."""

from __future__ import annotations

from numba_metal.errors import (KernelBarrierError, KernelCompilationError, KernelLaunchError, MetalDeviceLostError,
                                MetalOutOfMemoryError, MetalRuntimeError, UnsupportedPlatformError)

from ._loader import load
from .constants import (NM_ERR_COMPILE, NM_ERR_DEVICE_LOST, NM_ERR_FORKED, NM_ERR_INVALID_ARGUMENT, NM_ERR_LIMIT,
                        NM_ERR_OUT_OF_MEMORY, NM_ERR_UNAVAILABLE)


#: The words the CPU device's failure of a dispatch whose work-items diverged at barriers holds
#: (Sources/CPUEngine/cpu_fibers.c): such a failure is a KernelBarrierError.
DIVERGENT_BARRIER = "divergent barrier"


def last_error_message(lib, ffi) -> str:
    return ffi.string(lib.nm_last_error()).decode("utf-8", "replace")


def raise_status(rc: int, *, launch: bool = False):
    """Raises the exception of a failed call's status ``rc`` with the runtime's message (``launch``: the call
    queued a dispatch, so a limit or a bad argument is a KernelLaunchError)."""
    ffi, lib = load()
    msg = last_error_message(lib, ffi)
    if rc == NM_ERR_COMPILE:
        raise KernelCompilationError(msg)
    if rc == NM_ERR_UNAVAILABLE:
        raise UnsupportedPlatformError(msg)
    if rc == NM_ERR_DEVICE_LOST:
        raise MetalDeviceLostError(msg)
    if rc == NM_ERR_OUT_OF_MEMORY:
        raise MetalOutOfMemoryError(msg)
    if rc == NM_ERR_FORKED:
        raise MetalRuntimeError(msg)
    if launch and rc in (NM_ERR_LIMIT, NM_ERR_INVALID_ARGUMENT):
        raise KernelLaunchError(msg)
    if DIVERGENT_BARRIER in msg:
        raise KernelBarrierError(msg)
    raise MetalRuntimeError(msg)

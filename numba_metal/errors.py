"""The numba-metal error family.

Every error numba-metal raises derives from :class:`NumbaMetalError`. Each message says what was
wrong, where (the Python ``file:line`` when there is one) and what to do about it. After any of
these errors the process stays usable: the next compile or launch works normally.
"""

from __future__ import annotations


class NumbaMetalError(Exception):
    """Base class of every numba-metal error.

    ``location`` is ``(filename, line)`` of the Python source the error is about, or None.
    """

    def __init__(self, message: str, location: tuple[str, int] | None = None):
        self.message = message
        self.location = location
        if location is not None and location[0]:
            message = f"{location[0]}:{location[1]}: {message}"
        super().__init__(message)


class UnsupportedFeatureError(NumbaMetalError):
    """A construct that numba-metal cannot compile for Metal (named, with its file:line)."""


class UnsupportedPlatformError(NumbaMetalError):
    """No usable device: no Metal GPU here and the CPU reference device was not chosen."""


class KernelCompilationError(NumbaMetalError):
    """Typing or MSL compilation failed; keeps Numba's or the Metal compiler's explanation."""


class KernelLaunchError(NumbaMetalError):
    """A launch was refused before any work was queued (configuration or arguments)."""


class MetalRuntimeError(NumbaMetalError):
    """The runtime or submitted work failed (allocation, a failed kernel, a device fault)."""


class KernelBoundsError(MetalRuntimeError, IndexError):
    """An out-of-bounds array access found by a ``debug=True`` kernel (raised at the next wait)."""


class DLPackError(NumbaMetalError, BufferError):
    """A DLPack exchange numba-metal cannot make as asked: a device, dtype or layout it cannot use, or a
    copy needed where ``copy=False`` forbids one (a ``BufferError``, as the array API specifies)."""


__all__ = [
    "NumbaMetalError",
    "UnsupportedFeatureError",
    "UnsupportedPlatformError",
    "KernelCompilationError",
    "KernelLaunchError",
    "MetalRuntimeError",
    "KernelBoundsError",
    "DLPackError",
]

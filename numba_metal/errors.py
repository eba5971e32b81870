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


class NumbaMetalWarning(UserWarning):
    """Something numba-metal could not do as asked but could do without (e.g. an unsafe cache directory)."""


class KernelRaisedError(MetalRuntimeError):
    """An exception a ``debug=True`` kernel raised (``raise``, a failed ``assert``), raised at the next
    wait. The exception is also an instance of the class the kernel raised, when that class allows it."""


# Where numba.cuda raises a built-in exception, numba-metal raises a member of its family that is also
# that built-in, so code written for numba.cuda catches it.

class LaunchArgumentError(KernelLaunchError, TypeError):
    """A launch with the wrong number or kinds of arguments, or a configuration of the wrong types."""


class LaunchConfigurationError(KernelLaunchError, ValueError):
    """A launch configuration whose values are wrong (numba.cuda raises ValueError)."""


class MetalValueError(NumbaMetalError, ValueError):
    """A value a host-API call cannot take, where numba.cuda raises ValueError (e.g. device-array shapes
    that do not fit an operation)."""


class MetalTypeError(NumbaMetalError, TypeError):
    """An argument of a type a host-API call cannot take, where numba.cuda raises TypeError (e.g. a
    dtype that does not fit, a signature that does not fit the function, a wrong number of arguments)."""


class CopyRequiredError(UnsupportedFeatureError, NotImplementedError):
    """A device-array view (reshape, ravel) that would need a copy (numba.cuda's NotImplementedError)."""


class DLPackError(NumbaMetalError, BufferError):
    """A DLPack exchange numba-metal cannot make as asked: a device, dtype or layout it cannot use, or a
    copy needed where ``copy=False`` forbids one (a ``BufferError``, as the array API specifies)."""


__all__ = [
    "NumbaMetalWarning",
    "NumbaMetalError",
    "UnsupportedFeatureError",
    "UnsupportedPlatformError",
    "KernelCompilationError",
    "KernelLaunchError",
    "MetalRuntimeError",
    "KernelBoundsError",
    "KernelRaisedError",
    "LaunchArgumentError",
    "LaunchConfigurationError",
    "MetalValueError",
    "MetalTypeError",
    "CopyRequiredError",
    "DLPackError",
]

"""The numba-metal error family.

Every error numba-metal raises derives from :class:`NumbaMetalError`. Each message says what was
wrong, where (the Python ``file:line`` when there is one) and what to do about it. After any of
these errors the process stays usable: the next compile or launch works normally.

Where numba.cuda raises a built-in or Numba exception for the same misuse, numba-metal's error is also
an instance of that class (multiple inheritance), so code written for numba.cuda catches it: a refused
launch is a ``ValueError`` (numba.cuda's class for a missing or malformed launch configuration), a
launch configuration of the wrong type a ``TypeError`` (:class:`LaunchTypeError`), and a kernel that
fails to type (a wrong shared-array dtype, a call with the wrong types) is also a Numba
``TypingError``: :func:`typing_error` gives that form of a compile error (Numba is imported only then,
so that importing numba-metal does not import it).
"""

from __future__ import annotations

import re

#: Terminal escape codes (SGR): Numba highlights its own messages with them when colorama is installed.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def plain_text(text: str) -> str:
    """``text`` without terminal escape codes: a numba-metal message that quotes a Numba error keeps
    Numba's words but not its highlighting, whatever the installation (with colorama or not)."""
    return _ANSI.sub("", text)


class NumbaMetalError(Exception):
    """Base class of every numba-metal error.

    ``location`` is ``(filename, line)`` of the Python source the error is about, or None.
    """

    def __init__(self, message: str, location: tuple[str, int] | None = None):
        message = plain_text(message)
        self.message = message
        self.location = location
        if location is not None and location[0]:
            message = f"{location[0]}:{location[1]}: {message}"
        super().__init__(message)


class UnsupportedFeatureError(NumbaMetalError):
    """A construct that numba-metal cannot compile for Metal (named, with its file:line)."""


class LiteralRequiredError(UnsupportedFeatureError):
    """A kernel-API argument that must be a compile-time constant was a run-time value (``metal.grid(n)``):
    as a typing failure, also Numba's ``RequireLiteralValue`` (a ``TypingError``), as numba.cuda raises."""

    numba_class = "RequireLiteralValue"


class UnsupportedPlatformError(NumbaMetalError):
    """No usable device: no Metal GPU here and the CPU reference device was not chosen."""


class KernelCompilationError(NumbaMetalError):
    """Typing or MSL compilation failed; keeps Numba's or the Metal compiler's explanation."""


class KernelLaunchError(NumbaMetalError, ValueError):
    """A launch was refused before any work was queued (configuration or arguments); a ``ValueError``
    as numba.cuda's."""


class MetalRuntimeError(NumbaMetalError):
    """The runtime or submitted work failed (allocation, a failed kernel, a device fault)."""


class MetalDeviceLostError(MetalRuntimeError):
    """The GPU refused further work from this process (Metal answered a command buffer with accessRevoked
    after too many GPU errors, timeouts or hangs, notPermitted, deviceRemoved, or code 14): every later
    launch, wait, copy or allocation on the device raises this one message. Restart the process."""


class MetalOutOfMemoryError(MetalRuntimeError, MemoryError):
    """The device could not allocate memory (Metal answered ``nil`` for a buffer, as it does when it is out of
    memory); also a ``MemoryError``. Free device arrays no longer needed, or allocate less."""


class KernelBoundsError(MetalRuntimeError, IndexError):
    """An out-of-bounds array access found by a ``debug=True`` kernel (raised by its launch, which waits)."""


class NumbaMetalWarning(UserWarning):
    """Something numba-metal could not do as asked but could do without (e.g. an unsafe cache directory)."""


class KernelBarrierError(MetalRuntimeError):
    """Work-items of a threadgroup did not all reach the same barrier the same number of times (undefined
    behaviour on a GPU: it may hang or give wrong results). The CPU device checks every barrier of every
    kernel and raises this at the next wait, naming the kernel, the barrier's file:line and the work-items
    that did not arrive."""


class KernelRaisedError(MetalRuntimeError):
    """An exception a ``debug=True`` kernel raised (``raise``, a failed ``assert``), raised at the next
    wait. The exception is also an instance of the class the kernel raised, when that class allows it."""


class KernelSanitizerError(NumbaMetalError):
    """A problem the kernel sanitizer found (``@metal.jit(sanitize=...)`` or ``NUMBA_METAL_SANITIZE``, CPU
    reference device only; docs/sanitizer.md), raised at the launching thread's next wait (a launch with NumPy
    arguments waits itself). Its message names the kernel, the check, the array, the element, both threads
    (threadgroup and thread positions) and the Python file:line of both accesses; ``check`` is the check's
    name and ``reports`` every problem found (dicts). A subclass per check."""

    check = ""

    def __init__(self, message: str, location=None, *, kernel: str = "", reports=()):
        super().__init__(message, location)
        self.kernel = kernel
        self.reports = tuple(reports)


class KernelRaceError(KernelSanitizerError):
    """``race``: two threads of a threadgroup accessed one element of a shared array, at least one a write,
    with no barrier between them (atomics do not race with atomics)."""

    check = "race"


class KernelSyncError(KernelSanitizerError, KernelBarrierError):
    """``sync``: a barrier not every thread of the threadgroup reached, reached at different call sites or a
    different number of times, or threads that exited while others waited (also a KernelBarrierError)."""

    check = "sync"


class KernelUninitializedError(KernelSanitizerError):
    """``init``: a read of a shared-array element no thread of the threadgroup wrote in this launch, of a
    local-array element this thread has not written, or of ``device_array`` memory nothing wrote since its
    allocation."""

    check = "init"


class KernelSanitizerBoundsError(KernelSanitizerError, KernelBoundsError):
    """``bounds``: an array index out of bounds (the index, the axis' size and the line); also a
    KernelBoundsError and an IndexError."""

    check = "bounds"


class DeviceRaceWarning(NumbaMetalWarning):
    """The kernel sanitizer's ``race`` check on device memory: threads of different threadgroups wrote one
    element of a device array in one launch without atomics. A warning, not an error: intentional
    idempotent writes (every thread storing the same flag) exist. ``reports`` as KernelSanitizerError's."""

    def __init__(self, message: str, location=None, *, kernel: str = "", reports=()):
        if location is not None and location[0]:
            message = f"{location[0]}:{location[1]}: {message}"
        super().__init__(message)
        self.location = location
        self.kernel = kernel
        self.reports = tuple(reports)


# Where numba.cuda raises a built-in exception, numba-metal raises a member of its family that is also
# that built-in, so code written for numba.cuda catches it.

class LaunchArgumentError(KernelLaunchError, TypeError):
    """A launch with the wrong number or kinds of arguments, or a configuration of the wrong types."""


class LaunchConfigurationError(KernelLaunchError, ValueError):
    """A launch configuration whose values are wrong (numba.cuda raises ValueError)."""


class DispatcherStateError(NumbaMetalError, RuntimeError):
    """A request a kernel's dispatcher refuses in its present state: ``specialize`` of a kernel that is already
    specialized ("Dispatcher already specialized"), the launch configuration asked for outside a launch's
    compilation ("No launch config set for this thread"); a ``RuntimeError`` as numba.cuda's."""


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


_TYPING_CLASSES: dict = {}


def typing_error(error: NumbaMetalError) -> NumbaMetalError:
    """``error`` (a compile error) as numba.cuda raises a typing failure: the same class, message and
    location, and also an instance of ``numba.core.errors.TypingError``. Imports Numba."""
    cls = _typing_class(type(error))
    if cls is type(error):
        return error
    typed = cls(error.message, error.location)
    typed.msg = error.args[0]  # without the terminal highlighting Numba's errors add
    typed.args = error.args
    return typed


def _typing_class(cls):
    from numba.core import errors as numba_errors
    numba_class = getattr(numba_errors, getattr(cls, "numba_class", "TypingError"))
    if issubclass(cls, numba_class):
        return cls
    typed = _TYPING_CLASSES.get(cls)
    if typed is None:
        typed = type(cls.__name__, (cls, numba_class), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__,
            "__reduce__": lambda self: (_rebuild_typing_error, (cls, self.message, self.location))})
        _TYPING_CLASSES[cls] = typed
    return typed


def _rebuild_typing_error(cls, message, location):
    return typing_error(cls(message, location))


__all__ = [
    "NumbaMetalWarning",
    "NumbaMetalError",
    "UnsupportedFeatureError",
    "LiteralRequiredError",
    "UnsupportedPlatformError",
    "KernelCompilationError",
    "KernelLaunchError",
    "MetalRuntimeError",
    "MetalDeviceLostError",
    "DispatcherStateError",
    "MetalOutOfMemoryError",
    "KernelBoundsError",
    "KernelSanitizerError",
    "KernelRaceError",
    "KernelSyncError",
    "KernelUninitializedError",
    "KernelSanitizerBoundsError",
    "DeviceRaceWarning",
    "KernelBarrierError",
    "KernelRaisedError",
    "LaunchArgumentError",
    "LaunchConfigurationError",
    "MetalValueError",
    "MetalTypeError",
    "CopyRequiredError",
    "DLPackError",
    "typing_error",
]

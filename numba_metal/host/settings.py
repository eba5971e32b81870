"""The environment variables the host layer reads, parsed in one place.

A value that is not valid is never ignored silently: it warns once (:class:`NumbaMetalWarning` naming the
variable, its value and the value used instead) and the variable's default applies, as if it were unset.
The runtime library reads its own (``NUMBA_METAL_CPU_THREADS``, ``NUMBA_METAL_CPU_STACK_KB``,
``NUMBA_METAL_CPU_SPIN_US``, ``NUMBA_METAL_CPU_TIME_LIMIT_MS``) by the same rule and reports the values it
refused when it is loaded (``nm_config_warnings``). Variables are read when used, not at import, so a
program may set them before its first launch.

``NUMBA_METAL_WRAP_ALIGNED_HOST_MEMORY`` (on/off, default off): whether a NumPy argument whose memory is
page-aligned but not known to be mapped (malloc'd memory: on macOS most arrays above 32 KiB) is used by
kernels in place through Metal's ``makeBuffer(bytesNoCopy:)`` instead of through a device copy that is
copied back. Off, only mapped memory (``np.memmap``, ``mmap.mmap``, ``mapped_array`` views) is used in
place (host/wrapping.py). The trade-off: on saves the two copies of the array per launch (time linear in
its size) but Metal may refuse malloc'd memory (then numba-metal copies anyway, after a failed wrap);
neither the copies saved nor the cost of a refused or accepted wrap has been measured on a Mac yet.

``NUMBA_METAL_WAIT_DEADLINE`` (seconds, a number from 0 to 10**9; default 0: none): how long a wait for a
stream's work (``synchronize()``, a copy to the host, a launch with NumPy arguments, ``reset()``) waits
before it gives up (``wait_deadline()``). On a Metal GPU, which cannot stop a running kernel, the wait
raises MetalRuntimeError "still running after N s; the GPU cannot stop it" and the stream is unusable from
then on (its later launches, copies and waits raise the same error); on the CPU device and the simulated
device's CPU engine the work is cancelled instead. ``set_kernel_time_limit`` bounds a kernel where the
device can stop one.

``NUMBA_METAL_SANITIZE`` (``race``, ``sync``, ``init``, ``bounds``, comma-separated, or ``all``; default none):
every kernel decorated from then on is a sanitizing kernel (``@metal.jit(sanitize=...)``, which takes
precedence; docs/sanitizer.md). The sanitizer runs on the CPU reference device only: a sanitizing kernel's
launch on a Metal device is refused.
"""


from __future__ import annotations

import os
import sys
import warnings

from numba_metal.errors import NumbaMetalWarning

_warned: set = set()


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by the caller of this function that attributes the
    warning to the first frame outside numba-metal (the user's line)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("numba_metal"):
        frame = frame.f_back
        level += 1
    return level


def warn_once(message: str, key) -> None:
    """A NumbaMetalWarning, once per ``key`` in the process, attributed to the user's line."""
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(NumbaMetalWarning(message), stacklevel=user_stacklevel())


def _refused(name: str, text: str, expected: str, used: str) -> None:
    warn_once(f"{name}={text!r} is not {expected}; using {used}", (name, text))


def flag(name: str, default: bool) -> bool:
    """An on/off variable: unset or empty is ``default``; an integer is on unless it is 0 (Numba's rule for its
    own switches)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text) != 0
    except ValueError:
        _refused(name, text, "0 or 1", f"{int(default)} (the default)")
        return default


def _bounded(name: str, default, lo, hi, convert, expected: str):
    """``convert`` of the variable if it is from ``lo`` to ``hi``: unset or empty is ``default``; anything else
    warns once (``expected`` says what was wanted) and is ``default``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:   # NaN fails the comparison too
        shown = f"{default:g}" if isinstance(default, float) else str(default)
        _refused(name, text, expected, f"{shown} (the default)")
        return default
    return value


def integer(name: str, default: int, lo: int, hi: int) -> int:
    """A whole number from ``lo`` to ``hi``: unset or empty is ``default``."""
    return _bounded(name, default, lo, hi, int, f"an integer from {lo} to {hi}")


def real(name: str, default: float, lo: float, hi: float) -> float:
    """A number from ``lo`` to ``hi`` (not NaN): unset or empty is ``default``."""
    return _bounded(name, default, lo, hi, float, f"a number from {lo:g} to {hi:g}")


def wait_deadline() -> float | None:
    """``NUMBA_METAL_WAIT_DEADLINE`` in seconds, None when unset or 0 (see the module docstring)."""
    return real("NUMBA_METAL_WAIT_DEADLINE", 0.0, 0.0, 1e9) or None


def sanitize_checks() -> frozenset:
    """``NUMBA_METAL_SANITIZE``'s checks (see the module docstring); an unknown check warns once and none
    apply."""
    text = os.environ.get("NUMBA_METAL_SANITIZE", "").strip()
    if not text:
        return frozenset()   # the common case: the sanitizer's compiler half (and MSL spelling) never imported
    from numba_metal.compiler import sanitize
    try:
        return sanitize.parse(text, "NUMBA_METAL_SANITIZE")
    except ValueError:
        _refused("NUMBA_METAL_SANITIZE", text, f"a list of {', '.join(sanitize.CHECKS)} or 'all'",
                 "no sanitizing (the default)")
        return frozenset()


__all__ = ["flag", "integer", "real", "wait_deadline", "warn_once", "user_stacklevel", "sanitize_checks"]

"""numba.cuda's performance warnings: ``NumbaPerformanceWarning`` for a grid too small to fill the GPU and
for NumPy arguments copied to the device and back at every launch.

They are Numba's own warning class, so code that filters numba.cuda's warnings filters these, and they
honour numba.cuda's switches under numba-metal's names: ``NUMBA_DISABLE_PERFORMANCE_WARNINGS=1``
silences all of them, ``NUMBA_METAL_LOW_OCCUPANCY_WARNINGS=0`` and ``NUMBA_METAL_WARN_ON_IMPLICIT_COPY=0``
one kind each. A process that has not imported Numba (one whose kernels all come from the disk cache)
gets :class:`PerformanceWarning` instead, so that a warning does not cost it Numba's import: nothing in
such a process can name Numba's class in a filter.
"""

from __future__ import annotations

import os
import sys
import warnings

LOW_OCCUPANCY = "NUMBA_METAL_LOW_OCCUPANCY_WARNINGS"
IMPLICIT_COPY = "NUMBA_METAL_WARN_ON_IMPLICIT_COPY"

#: Threadgroups a grid needs for the low-occupancy warning to stay quiet: numba.cuda's threshold (a
#: heuristic there too: beginners' grids are a few blocks, real ones hundreds).
MIN_GRID_THREADGROUPS = 128


def enabled(variable: str) -> bool:
    if os.environ.get("NUMBA_DISABLE_PERFORMANCE_WARNINGS", "0") not in ("", "0"):
        return False
    return os.environ.get(variable, "1") not in ("", "0")


class PerformanceWarning(UserWarning):
    """numba-metal's performance warning where Numba is not loaded (else Numba's ``NumbaPerformanceWarning``)."""


def warn(message: str) -> None:
    """Warn with Numba's ``NumbaPerformanceWarning``, attributed to the first caller outside numba-metal
    (the line that launched the kernel)."""
    numba_errors = sys.modules.get("numba.core.errors")
    category = numba_errors.NumbaPerformanceWarning if numba_errors is not None else PerformanceWarning
    frame = sys._getframe(1)
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("numba_metal"):
        frame = frame.f_back
        level += 1
    warnings.warn(category(message), stacklevel=level)


def check_grid(griddim) -> None:
    n = griddim[0] * griddim[1] * griddim[2]
    if n < MIN_GRID_THREADGROUPS and enabled(LOW_OCCUPANCY):
        warn(f"Grid size {n} will likely result in GPU under-utilization due to low occupancy.")


def implicit_copy() -> None:
    if enabled(IMPLICIT_COPY):
        warn("Host array used in a Metal kernel will incur copy overhead to/from device at every launch; "
             "pass device arrays (metal.to_device) or arrays in unified memory (metal.mapped_array)")

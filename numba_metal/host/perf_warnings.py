"""numba.cuda's performance warnings: Numba's ``NumbaPerformanceWarning`` for a grid too small to fill the GPU
and for NumPy arguments copied to the device and back at every launch.

They are Numba's own warning class, whatever the process has imported (a process whose kernels all come from
the disk cache imports Numba's error module when it first warns), so the filter numba.cuda's users write
silences them: ``warnings.simplefilter("ignore", NumbaPerformanceWarning)``. They honour numba.cuda's switches
under numba-metal's names: ``NUMBA_DISABLE_PERFORMANCE_WARNINGS=1`` silences all of them,
``NUMBA_METAL_LOW_OCCUPANCY_WARNINGS=0`` and ``NUMBA_METAL_WARN_ON_IMPLICIT_COPY=0`` one kind each.

They are about the user's launches only: a launch configuration numba-metal's own code chooses (the
reductions' passes, ``forall``'s grid, the ufuncs', the advisor's calibration kernels) never warns.
"""

from __future__ import annotations

import warnings

from . import settings

LOW_OCCUPANCY = "NUMBA_METAL_LOW_OCCUPANCY_WARNINGS"
IMPLICIT_COPY = "NUMBA_METAL_WARN_ON_IMPLICIT_COPY"

#: Threadgroups a grid needs for the low-occupancy warning to stay quiet: numba.cuda's threshold (a
#: heuristic there too: beginners' grids are a few blocks, real ones hundreds).
MIN_GRID_THREADGROUPS = 128


def enabled(variable: str) -> bool:
    if settings.flag("NUMBA_DISABLE_PERFORMANCE_WARNINGS", False):
        return False
    return settings.flag(variable, True)


def warn(message: str) -> None:
    """Warn with Numba's ``NumbaPerformanceWarning``, attributed to the first caller outside numba-metal
    (the line that launched the kernel)."""
    from numba.core.errors import NumbaPerformanceWarning   # imports Numba in a process without it
    warnings.warn(NumbaPerformanceWarning(message), stacklevel=settings.user_stacklevel())


def check_grid(griddim, requester) -> None:
    """The low-occupancy warning for a launch configuration of ``griddim`` asked for by the code of frame
    ``requester`` (none when that is numba-metal's own code)."""
    n = griddim[0] * griddim[1] * griddim[2]
    if (n < MIN_GRID_THREADGROUPS and not requester.f_globals.get("__name__", "").startswith("numba_metal")
            and enabled(LOW_OCCUPANCY)):
        warn(f"Grid size {n} will likely result in GPU under-utilization due to low occupancy.")


def implicit_copy() -> None:
    if enabled(IMPLICIT_COPY):
        warn("Host array used in a Metal kernel will incur copy overhead to/from device at every launch; "
             "pass device arrays (metal.to_device) or arrays in unified memory (metal.mapped_array)")

"""The Python binding of the numba-metal runtime (cffi over the C ABI in numba_metal_runtime.h).

Devices, buffers, pipelines and queues as thin objects over the library's handles. Importing this
module does not load the library; the first call that needs it does. Status codes become exceptions
from :mod:`numba_metal.errors`: a compile failure is a KernelCompilationError carrying the full
compiler log; a dispatch refused before queueing (a limit or a bad argument) is a KernelLaunchError;
a missing device or feature is an UnsupportedPlatformError; a Metal device whose GPU refused the process
(NM_ERR_DEVICE_LOST) is a MetalDeviceLostError; an allocation that failed (NM_ERR_OUT_OF_MEMORY) a
MetalOutOfMemoryError (also a MemoryError); everything else (failed work, other refused operations, internal errors,
use in a forked child) is a MetalRuntimeError.

Waits (``Queue.wait``) return to Python every ``WAIT_SLICE_NS`` so that a KeyboardInterrupt is raised at
once; on the CPU device the interrupted queue's unfinished work is cancelled first, so that the device is
usable again (other threads whose work was cancelled get an error at their next wait). A Metal GPU cannot
stop work it has been given: its queue stays as it was and later waits wait for that work. At interpreter
exit, work still queued is cancelled on the CPU device (nobody can read its results any more): exit never
waits for a kernel that does not end.

``NUMBA_METAL_MSL_DUMP_DIR``: when set, every source passed to :meth:`Device.compile` is also written
there as ``<sha256 of the source>.metal``, with an empty ``.metal.std<V>`` beside it for each MSL version
it was compiled at (how the test suite collects the MSL it generates, for Apple's compiler at the right
versions and the MSL lint).
"""

from __future__ import annotations

from ._loader import library_path, load
from .buffers import Buffer
from .constants import *  # noqa: F401,F403
from .devices import (Device, DeviceInfo, cache_root, cpu_compiler_info, dlpack_capsule_destructor, list_devices,
                      now_ns, open_device)
from .pipelines import KernelParam, Pipeline
from .queues import DispatchPlan, Queue

__all__ = [
    "DeviceInfo", "Device", "Buffer", "Pipeline", "Queue", "DispatchPlan", "KernelParam",
    "list_devices", "open_device", "now_ns", "cache_root", "cpu_compiler_info", "library_path", "load",
    "dlpack_capsule_destructor",
    "MATH_SAFE", "MATH_RELAXED", "MATH_FAST",
]

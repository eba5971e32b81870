"""``with metal.batch():`` — a submission point for a group of launches.

Outside a batch, work starts when it is launched: on Metal, a launch commits its stream's open command
buffer when the GPU has nothing committed and unfinished on that stream, and while the GPU is busy
launches gather in the open command buffer, which is committed as soon as the GPU finishes what it has
(or at a wait, or every 64 launches); on the CPU device launches go into the queue's work ring and start
as they are launched. Inside ``batch()`` a thread's launches on Metal stay in the open command buffer
(committed only every 64 launches): when the outermost ``batch`` block of the thread exits, every queue
(stream) of the current device is flushed, so the whole group is submitted to the device together,
without the host waiting for it. A host loop that polls memory for a kernel's result must not sit inside
a batch: the kernel would not start.

What it does not do (see docs/limitations.md): it never discards work (launches made before an
exception leaves the block have been encoded and still run), it does not defer launches whose
arguments are host NumPy arrays (those wait for their kernel, as always), and waits inside the block
(``synchronize``, ``copy_to_host``) still wait. Blocks nest; only the outermost one flushes. The
nesting depth is per thread, so threads batch independently.
"""

from __future__ import annotations

import threading

from numba_metal.runtime import Queue

from . import device as _device

_state = threading.local()


class batch:
    """Context manager: launches inside the block are submitted together when the outermost block exits.

    ::

        with metal.batch():
            for step in range(100):
                update[blocks, threads](state)
        metal.synchronize()

    Raises:
        UnsupportedPlatformError, MetalRuntimeError: as ``get_current_device``.
    """

    __slots__ = ("_ctx",)

    def __init__(self):
        self._ctx = None

    def __enter__(self) -> "batch":
        self._ctx = _device.current()
        _state.depth = depth() + 1
        if _state.depth == 1:
            Queue.set_batching(True)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        _state.depth = depth() - 1
        if _state.depth == 0:
            Queue.set_batching(False)
            for queue in self._ctx.all_queues():
                queue.flush()
        return False


def depth() -> int:
    """How many ``batch`` blocks the calling thread is inside (0: none)."""
    return getattr(_state, "depth", 0)


def in_batch() -> bool:
    """True inside a ``with metal.batch():`` block of the calling thread."""
    return depth() > 0


__all__ = ["batch", "in_batch"]

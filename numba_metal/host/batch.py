"""``with metal.batch():`` — a submission point for a group of launches.

numba-metal already batches: on Metal, launches are encoded into an open command buffer per stream,
committed at a wait or every 64 launches; on the CPU device they go into the queue's work ring as they
are launched. ``batch()`` adds what a group of launches still needs: when the outermost ``batch``
block of a thread exits, every queue (stream) of the current device is flushed, so the whole group is
submitted to the device together, without the host waiting for it.

What it does not do (see docs/limitations.md): it never discards work (launches made before an
exception leaves the block have been encoded and still run), it does not defer launches whose
arguments are host NumPy arrays (those wait for their kernel, as always), and waits inside the block
(``synchronize``, ``copy_to_host``) still wait. Blocks nest; only the outermost one flushes. The
nesting depth is per thread, so threads batch independently.
"""

from __future__ import annotations

import threading

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
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        _state.depth = depth() - 1
        if _state.depth == 0:
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

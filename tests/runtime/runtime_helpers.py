"""Helpers shared by the runtime tests (imported as a plain module: pytest puts this folder on sys.path)."""

from __future__ import annotations

import struct

import numpy as np

from numba_metal import runtime as rt


def to_buffer(device, array: np.ndarray) -> rt.Buffer:
    buf = device.new_buffer(array.nbytes)
    buf.write(0, array.ctypes.data, array.nbytes)
    return buf


def from_buffer(buf: rt.Buffer, dtype, count: int) -> np.ndarray:
    out = np.empty(count, dtype=dtype)
    buf.read(0, out.ctypes.data, out.nbytes)
    return out


def launch(queue, pipeline, buffers, groups, threads, args: bytes | None = None, arg_slot: int | None = None,
           threadgroup_memory=(), label=None) -> int:
    """Binds buffers to slots 0..n-1 and the argument block (if any) to arg_slot (default n)."""
    n = len(buffers)
    slot = n if arg_slot is None else arg_slot
    return queue.dispatch(pipeline, list(buffers), [0] * n, list(range(n)), args, slot, list(threadgroup_memory),
                          tuple(groups), tuple(threads), label)


def pack(fmt: str, *values) -> bytes:
    return struct.pack(fmt, *values)

"""Host memory used in place: which NumPy memory a kernel uses without a copy, and the wraps that do it.

On unified memory a page-aligned, writeable NumPy array can be bound to a kernel in place through Metal's
``makeBuffer(bytesNoCopy:)``. Apple documents that call for page-aligned memory; whether Metal accepts
memory that malloc owns is disputed (dotnet/macios#6147 and iree-org/iree#14703 say no, ggml-metal
allocates with vm_allocate for it, Metal.jl wraps Julia's arrays), and hosted macOS runners have answered
zero-length buffers (actions/runner-images#10663). On macOS, libmalloc serves allocations above 32 KiB from
page-aligned regions, so most arrays a user passes would take this path. Hence:

- by default only memory known to be mapped is wrapped (:func:`is_mapped_memory`: ``np.memmap``, arrays
  over an ``mmap.mmap``, views of ``mapped_array`` memory); any other array goes through a device copy;
- ``NUMBA_METAL_WRAP_ALIGNED_HOST_MEMORY=1`` wraps any page-aligned memory too (settings.py says what it
  costs and gains);
- a wrap the device refuses is answered with the copy path, never with a failed launch;
- a wrap is reused while it lives, per (device, address, length): the launch that bound it keeps it, and it
  keeps the array it wraps, so the memory at that address stays the same while the entry exists.
"""

from __future__ import annotations

import mmap
import weakref

import numpy as np

from numba_metal.errors import UnsupportedPlatformError

from . import settings
from .arrays import host_span
from .mapped import MappedNDArray

#: Opts in to wrapping page-aligned host memory that is not known to be mapped.
WRAP_ALIGNED_HOST_MEMORY = "NUMBA_METAL_WRAP_ALIGNED_HOST_MEMORY"

#: Live wraps by (device index, address, length).
_wraps: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def is_mapped_memory(ary) -> bool:
    """Whether ``ary``'s memory is known to come from mmap (what ``makeBuffer(bytesNoCopy:)`` is documented
    for, as vm_allocate): an ``np.memmap``, an array over an ``mmap.mmap``, or a view of numba-metal's own
    mapped memory, followed through ``ndarray.base`` and ``memoryview.obj``.

    Raises:
        nothing: memory of any other origin is not known to be mapped.
    """
    obj = ary
    for _ in range(64):   # base chains are short; a cycle is impossible but the walk is bounded anyway
        if isinstance(obj, (np.memmap, mmap.mmap, MappedNDArray)):
            return True
        if isinstance(obj, np.ndarray):
            obj = obj.base
        elif isinstance(obj, memoryview):
            obj = obj.obj
        else:
            return False
    return False


def wrap_host_memory(ctx, ary: np.ndarray):
    """(a buffer over ``ary``'s own memory, the byte offset of ``ary[0, ..., 0]`` in it), or None when the
    device is not to use that memory in place and the caller copies: the device has unified memory, the
    array is non-empty, page-aligned and writeable (a read-only array may be immutable memory, e.g. over a
    bytes object, which a kernel must not write), its memory is mapped or the opt-in setting is on, and
    the device accepts the wrap."""
    page = ctx.info.page_size
    lowest, extent = host_span(ary)
    if not (ctx.info.unified_memory and ary.size and lowest % page == 0 and ary.flags.writeable):
        return None
    if not (is_mapped_memory(ary) or settings.flag(WRAP_ALIGNED_HOST_MEMORY, False)):
        return None
    length = (extent + page - 1) // page * page
    key = (ctx.info.index, lowest, length)
    buf = _wraps.get(key)
    if buf is None or buf.handle is None:
        try:
            buf = ctx.device.wrap_buffer(lowest, length, ary)
        except UnsupportedPlatformError:
            return None   # the device refused this memory: a copy is always correct
        _wraps[key] = buf
    return buf, ary.ctypes.data - lowest


__all__ = ["is_mapped_memory", "wrap_host_memory", "WRAP_ALIGNED_HOST_MEMORY"]

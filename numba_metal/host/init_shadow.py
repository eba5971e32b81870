"""The kernel sanitizer's initialised-shadow of ``device_array`` memory (check ``init``, docs/sanitizer.md).

numba.cuda's ``device_array`` is uninitialised memory (numba-metal's happens to be zero-filled; a GPU's
is not), so a kernel reading an element nothing wrote since the allocation reads garbage on CUDA. Once a
sanitizing kernel with ``init`` has been decorated (:func:`arm`; ``NUMBA_METAL_SANITIZE`` arms at the first
kernel), every buffer ``device_array`` allocates (and so ``device_array_like``, ``empty``, ``empty_like``)
gets a *shadow*: one byte per byte of the buffer, 0 until something writes that byte. What marks it:

- a sanitizing launch: its hooks mark what the kernel writes, byte by byte, and report a read of an unmarked
  byte (``LaunchSanitizer`` copies the shadows of its device-array arguments in and out of its buffer);
- a plain (not sanitizing) launch: every element of every device-array argument the kernel may write (the
  ABI's ``written_at``), as it cannot tell which it writes (never a false report: coverage is what is lost);
- the host: ``copy_to_device`` (``to_device(to=...)``) and ``setitem`` mark the elements they write; anything
  that hands the memory to other code (``__array__``, DLPack, a mapped view) marks the whole buffer.

A shadow whose every byte is marked is dropped. Arrays made by ``to_device`` or from NumPy, and arrays
allocated before arming, have none: fully initialised. Without arming (no sanitizing kernel with ``init``),
allocation costs one test of :data:`ARMED` and a launch nothing.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

#: True once a sanitizing kernel with ``init`` exists (from then on device_array memory is tracked).
ARMED = False

_shadows: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # runtime Buffer -> Shadow


class Shadow:
    """The initialised bytes of one buffer (``written``: 0 never written) and where it was allocated."""

    __slots__ = ("written", "where")

    def __init__(self, nbytes: int, where: tuple):
        self.written = np.zeros(nbytes, np.uint8)
        self.where = where


def arm() -> None:
    """From now on, ``device_array`` memory is tracked (a sanitizing kernel with ``init`` exists)."""
    global ARMED
    ARMED = True


def _user_location() -> tuple:
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("numba_metal"):
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("?", 0)


def track(buffer, nbytes: int, what: str = "device_array") -> None:
    """``buffer`` (``nbytes`` of it used) was just allocated uninitialised by ``what``."""
    if nbytes > 0:
        shadow = Shadow(int(nbytes), _user_location())
        shadow.where = shadow.where + (what,)
        _shadows[buffer] = shadow


def of(buffer):
    """The buffer's :class:`Shadow`, or None (fully initialised, or not tracked)."""
    if not _shadows:
        return None
    try:
        return _shadows.get(buffer)
    except TypeError:   # not a runtime buffer (no weak reference to it): never tracked
        return None


def release(buffer) -> None:
    """The whole buffer counts as initialised from now on."""
    _shadows.pop(buffer, None)


def mark(array, index=None) -> None:
    """The elements of the device array ``array`` (``array[index]`` if given) are written."""
    shadow = of(array.buffer)
    if shadow is None:
        return
    try:
        view = np.ndarray(array.shape, dtype=np.dtype((np.void, array.itemsize)), buffer=shadow.written,
                          offset=array.offset, strides=array.strides)
        if index is not None:
            view = view[index]
        view[...] = np.void(b"\x01" * array.itemsize)
    except (ValueError, TypeError, IndexError):
        release(array.buffer)   # a geometry this cannot follow: conservatively all written
        return
    if shadow.written.all():
        release(array.buffer)


def mark_written_arguments(abi, args) -> None:
    """After a plain launch: the device arrays the kernel may write are written (conservatively, whole)."""
    for a in abi.arrays:
        if a.written_at:
            value = args[a.arg]
            buffer = getattr(value, "buffer", None)
            if buffer is not None and of(buffer) is not None:
                mark(value)


__all__ = ["ARMED", "Shadow", "arm", "track", "of", "release", "mark", "mark_written_arguments"]

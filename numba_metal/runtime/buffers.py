"""Buffers: shared storage, its host address, and immediate reads and writes."""

from __future__ import annotations

from numba_metal.errors import MetalRuntimeError

from ._loader import load
from .status import raise_status


class Buffer:
    """A shared-storage buffer. ``address`` is its host pointer, valid until release()."""

    __slots__ = ("handle", "nbytes", "address", "device", "_owner", "__weakref__")

    def __init__(self, device: "Device", handle, nbytes: int, owner: object):
        ffi, lib = load()
        self.device = device
        self.handle = handle
        self.nbytes = nbytes
        self.address = int(ffi.cast("uintptr_t", lib.nm_buffer_contents(handle)))
        self._owner = owner

    def write(self, offset: int, src_address: int, n: int) -> None:
        """Copies n bytes from host address src_address into the buffer at offset (immediately)."""
        ffi, lib = load()
        rc = lib.nm_buffer_write(self.checked_handle(), offset, ffi.cast("void *", src_address), n)
        if rc:
            raise_status(rc)

    def read(self, offset: int, dst_address: int, n: int) -> None:
        """Copies n bytes at offset into host memory at dst_address (immediately)."""
        ffi, lib = load()
        rc = lib.nm_buffer_read(self.checked_handle(), offset, ffi.cast("void *", dst_address), n)
        if rc:
            raise_status(rc)

    def memory(self) -> memoryview:
        """A writable memoryview of the buffer's nbytes bytes (shared memory; valid until release())."""
        ffi, _ = load()
        return memoryview(ffi.buffer(ffi.cast("char *", self.address), self.nbytes))

    def native_handle(self) -> int:
        """The address of the MTLBuffer under this buffer (a Metal device's; its contents start at byte 0 of
        this buffer); UnsupportedPlatformError on the CPU device."""
        ffi, lib = load()
        out = ffi.new("void **")
        rc = lib.nm_buffer_native(self.checked_handle(), out)
        if rc:
            raise_status(rc)
        return int(ffi.cast("uintptr_t", out[0]))

    def checked_handle(self):
        """The handle; MetalRuntimeError once the buffer was released."""
        if self.handle is None:
            raise MetalRuntimeError("this buffer was released; create a new one")
        return self.handle

    def in_use(self) -> bool:
        """True while queued work still uses this buffer's memory and that memory is its owner's (a wrapped
        buffer): the owner must outlive that work. Always False for memory the device allocated."""
        return handle_in_use(self.checked_handle())

    def release(self) -> None:
        """Drops the handle (idempotent). Work already queued keeps the memory valid until it completes: the
        device's own memory through the runtime, wrapped memory by keeping its owner (the NumPy array, the
        DLPack tensor) until the last queued work that uses it completes (``Device.reap``)."""
        h, self.handle = self.handle, None
        if h is not None:
            owner, self._owner = self._owner, None
            try:
                if owner is not None and handle_in_use(h):
                    self.device.defer_release(h, owner)
                    return
                load()[1].nm_buffer_release(h)
            except Exception:  # interpreter shutdown
                pass

    def __del__(self):
        self.release()


def handle_in_use(handle) -> bool:
    """nm_buffer_in_use of a buffer handle (``Buffer.in_use``; also for handles a device keeps after release)."""
    ffi, lib = load()
    out = ffi.new("int32_t *")
    rc = lib.nm_buffer_in_use(handle, out)
    if rc:
        raise_status(rc)
    return bool(out[0])

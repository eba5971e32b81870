"""Queues (one per stream): dispatches, through a reusable descriptor (``DispatchPlan``) on the launch path,
copies, fills, markers and waits; and what happens to queued work when the process forks or exits."""

from __future__ import annotations

import time
import weakref

from numba_metal.errors import KernelLaunchError, MetalRuntimeError

from ._loader import load
from .constants import NM_ERR_UNAVAILABLE, WAIT_SLICE_NS
from .status import raise_status


class DispatchPlan:
    """A preallocated nm_dispatch_desc reused across launches (the fast path of Queue.submit)."""

    def __init__(self, pipeline: Pipeline, buffer_slots: list[int], arg_slot: int, arg_capacity: int,
                 threadgroup_memory: list[int] = (), label: str | None = None):
        ffi, _ = load()
        n = len(buffer_slots)
        self.pipeline = pipeline
        self._desc = ffi.new("nm_dispatch_desc *")
        self._buffers = ffi.new("nm_buffer *[]", max(n, 1))
        self._offsets = ffi.new("uint64_t[]", max(n, 1))
        self._slots = ffi.new("uint32_t[]", list(buffer_slots) or [0])
        self._args = ffi.new("char[]", max(arg_capacity, 1))
        self._tg = ffi.new("uint32_t[]", 31)
        self._refs: list = [None] * n
        self._label = ffi.new("char[]", label.encode("utf-8")) if label else ffi.NULL
        self.arg_view = memoryview(ffi.buffer(self._args, arg_capacity)) if arg_capacity else memoryview(bytearray(0))
        d = self._desc
        d.pipeline = pipeline.handle
        d.buffer_count = n
        d.buffers = self._buffers
        d.buffer_offsets = self._offsets
        d.buffer_slots = self._slots
        d.arg_bytes = self._args
        d.arg_length = 0
        self._arg_length = 0
        d.arg_slot = arg_slot
        d.threadgroup_memory_lengths = self._tg
        d.label = self._label
        self.set_threadgroup_memory(list(threadgroup_memory))

    def set_pipeline(self, pipeline: Pipeline) -> None:
        """Later submits run ``pipeline`` (a variant of the same kernel: same buffers and arguments)."""
        self.pipeline = pipeline
        self._desc.pipeline = pipeline.handle

    def set_buffer(self, i: int, buffer: Buffer, offset: int) -> None:
        """Binds buffer at byte offset to the i-th slot of buffer_slots (keeps a reference while set)."""
        self._buffers[i] = buffer.handle
        self._offsets[i] = offset
        self._refs[i] = buffer

    def clear_buffer(self, i: int) -> None:
        """Unbinds the i-th slot, dropping its reference (a submit needs it bound again first)."""
        self._buffers[i] = load()[0].NULL
        self._offsets[i] = 0
        self._refs[i] = None

    def set_grid(self, groups: tuple[int, int, int], threads: tuple[int, int, int]) -> None:
        """Threadgroups per grid and threads per threadgroup."""
        d = self._desc
        d.groups = groups
        d.threads = threads

    def set_threadgroup_memory(self, lengths: list[int]) -> None:
        """Byte lengths of the [[threadgroup(i)]] arguments."""
        if len(lengths) > 31:
            raise KernelLaunchError(f"{len(lengths)} threadgroup memory arguments exceed Metal's 31")
        for i, n in enumerate(lengths):
            self._tg[i] = n
        self._desc.threadgroup_memory_count = len(lengths)


_live_queues: "weakref.WeakSet[Queue]" = weakref.WeakSet()


def cancel_all(lib) -> None:
    """Cancels the unfinished work of every queue still alive (``lib``: the loaded library)."""
    for q in list(_live_queues):
        if q.handle is not None:
            lib.nm_queue_cancel(q.handle)


class Queue:
    """An in-order work queue (a stream). Work ids increase per queue."""

    def __init__(self, device: "Device", handle):
        ffi, lib = load()
        self.device = device
        self.handle = handle
        self._ffi = ffi
        self._id = ffi.new("uint64_t *")
        self._dispatch_fn = lib.nm_queue_dispatch
        self._stuck: str | None = None  # set when a wait's deadline passed and the work could not be stopped
        _live_queues.add(self)

    @property
    def usable(self) -> bool:
        """False once a wait's deadline passed on work the device could not stop (see ``wait``)."""
        return self._stuck is None

    def stuck_error(self) -> MetalRuntimeError | None:
        """For a queue that is not ``usable``: the error every wait for all streams raises while its work still
        runs (memory that work may write cannot be read or trusted); None once it has finished, or for a usable
        queue."""
        if self._stuck is None or self.query(0):
            return None
        return MetalRuntimeError(self._stuck)

    def _check_usable(self) -> None:
        if self._stuck is not None:
            raise MetalRuntimeError(self._stuck)

    def _refuse_dispatch(self, *args) -> int:
        raise MetalRuntimeError(self._stuck)

    def _deadline_passed(self, deadline: float) -> None:
        """The work waited for still runs after ``deadline`` seconds: stop it where the device can (its
        results are incomplete; the queue goes on), else mark the queue unusable and say so."""
        if self.cancel():
            raise MetalRuntimeError(f"stream work still running after {deadline:g} s (the wait deadline, "
                                    f"NUMBA_METAL_WAIT_DEADLINE) was cancelled; its results are incomplete")
        self._stuck = (f"stream work still running after {deadline:g} s (the wait deadline, "
                       f"NUMBA_METAL_WAIT_DEADLINE); the GPU cannot stop it, so this stream is unusable: its later "
                       f"launches, copies and waits raise this error. Use another stream; restart the process to "
                       f"free the GPU (macOS's watchdog may end the work first)")
        self._dispatch_fn = self._refuse_dispatch  # the launch fast path pays nothing for the check
        raise MetalRuntimeError(self._stuck)

    def submit(self, plan: DispatchPlan, arg_length: int) -> int:
        """Enqueues plan with the first arg_length bytes of plan.arg_view: exactly one C call."""
        d = plan._desc
        if arg_length != plan._arg_length:  # a cffi field store costs about as much as the call's checks
            d.arg_length = arg_length
            plan._arg_length = arg_length
        rc = self._dispatch_fn(self.handle, d, self._id)
        if rc:
            raise_status(rc, launch=True)
        return self._id[0]

    def dispatch(self, pipeline: Pipeline, buffers: list[Buffer], offsets: list[int], slots: list[int],
                 arg_bytes: bytes | None, arg_slot: int, threadgroup_memory: list[int],
                 groups: tuple[int, int, int], threads: tuple[int, int, int], label: str | None = None) -> int:
        """Enqueues one dispatch (builds a descriptor per call; use DispatchPlan + submit when it repeats)."""
        ffi = self._ffi
        n = len(buffers)
        if len(offsets) != n or len(slots) != n:
            raise KernelLaunchError(f"dispatch: {n} buffers but {len(offsets)} offsets and {len(slots)} slots")
        d = ffi.new("nm_dispatch_desc *")
        bufs = ffi.new("nm_buffer *[]", [b.handle for b in buffers] or [ffi.NULL])
        offs = ffi.new("uint64_t[]", list(offsets) or [0])
        sl = ffi.new("uint32_t[]", list(slots) or [0])
        tg = ffi.new("uint32_t[]", list(threadgroup_memory) or [0])
        args = ffi.new("char[]", bytes(arg_bytes)) if arg_bytes else ffi.NULL
        lab = ffi.new("char[]", label.encode("utf-8")) if label else ffi.NULL
        d.pipeline = pipeline.handle
        d.buffer_count = n
        d.buffers = bufs
        d.buffer_offsets = offs
        d.buffer_slots = sl
        d.arg_bytes = args
        d.arg_length = len(arg_bytes) if arg_bytes else 0
        d.arg_slot = arg_slot
        d.threadgroup_memory_count = len(threadgroup_memory)
        d.threadgroup_memory_lengths = tg
        d.groups = groups
        d.threads = threads
        d.label = lab
        out = ffi.new("uint64_t *")
        rc = self._dispatch_fn(self.handle, d, out)
        if rc:
            raise_status(rc, launch=True)
        return int(out[0])

    def copy(self, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int, n: int) -> int:
        """Enqueues a copy of n bytes between buffers."""
        self._check_usable()
        out = self._ffi.new("uint64_t *")
        rc = load()[1].nm_queue_copy(self.handle, src.checked_handle(), src_offset, dst.checked_handle(), dst_offset, n, out)
        if rc:
            raise_status(rc)
        return int(out[0])

    def fill(self, buf: Buffer, offset: int, n: int, value: int) -> int:
        """Enqueues setting n bytes at offset to value (0..255)."""
        self._check_usable()
        out = self._ffi.new("uint64_t *")
        rc = load()[1].nm_queue_fill(self.handle, buf.checked_handle(), offset, n, value, out)
        if rc:
            raise_status(rc)
        return int(out[0])

    def marker(self) -> int:
        """Enqueues a marker; its id completes when all earlier work on this queue has."""
        self._check_usable()
        out = self._ffi.new("uint64_t *")
        rc = load()[1].nm_queue_marker(self.handle, out)
        if rc:
            raise_status(rc)
        return int(out[0])

    def wait_for(self, other: "Queue", work_id: int) -> None:
        """Later work on this queue starts after other's work_id completes."""
        self._check_usable()
        other._check_usable()
        rc = load()[1].nm_queue_wait_for(self.handle, other.handle, work_id)
        if rc:
            raise_status(rc)

    @staticmethod
    def set_batching(on: bool) -> None:
        """Whether the calling thread's work is batched (``metal.batch()``): on a Metal device it stays in
        the open command buffer until a flush or wait instead of starting when the GPU is idle."""
        load()[1].nm_set_batching(1 if on else 0)

    def flush(self) -> None:
        """Submits encoded work without waiting (nothing on a queue that is not ``usable``: nothing new was
        encoded)."""
        if self._stuck is not None:
            return
        rc = load()[1].nm_queue_flush(self.handle)
        if rc:
            raise_status(rc)

    def wait(self, deadline: float | None = None) -> None:
        """Waits for all work submitted so far; raises MetalRuntimeError naming the first failed kernel that this
        thread submitted (another thread's failure is raised by that thread's wait) and no wait reported yet.

        Interruptible: a KeyboardInterrupt is raised within ``WAIT_SLICE_NS``; on the CPU device the queue's
        unfinished work is cancelled first (see the module docstring).

        ``deadline`` (seconds; None or 0: none): work still running after it is cancelled where the device
        can stop it (MetalRuntimeError: its results are incomplete); on a Metal GPU, which cannot, the
        queue is marked unusable and this and every later launch, copy and wait on it raise
        MetalRuntimeError "still running after N s; the GPU cannot stop it"."""
        self._check_usable()
        ffi, lib = load()
        work = ffi.new("uint64_t *")
        done = ffi.new("int32_t *")
        start = time.monotonic() if deadline else 0.0
        try:
            while True:
                if deadline and time.monotonic() - start >= deadline:
                    self._deadline_passed(deadline)
                rc = lib.nm_queue_wait_bounded(self.handle, work, WAIT_SLICE_NS, done)
                if rc:
                    self.device.reap()
                    raise_status(rc)
                if done[0]:
                    self.device.reap()
                    return
        except KeyboardInterrupt as interrupt:
            if not self.cancel() and hasattr(interrupt, "add_note"):  # add_note: Python 3.11+
                interrupt.add_note("numba-metal: a Metal GPU cannot stop work it was given; this stream's next wait "
                                   "waits for it (the GPU's watchdog ends work that runs too long)")
            raise

    def cancel(self) -> bool:
        """Abandons the work that has not completed: the running kernel is stopped, the rest is skipped; other
        threads whose work this abandons get MetalRuntimeError at their next wait. True when done; False
        where the device cannot stop work it has started (a Metal GPU)."""
        rc = load()[1].nm_queue_cancel(self.handle)
        if rc == NM_ERR_UNAVAILABLE:
            return False
        if rc:
            raise_status(rc)
        return True

    def query(self, work_id: int) -> bool:
        """True when work_id has completed (work_id 0: all work issued so far)."""
        out = self._ffi.new("int32_t *")
        rc = load()[1].nm_queue_query(self.handle, work_id, out)
        if rc:
            raise_status(rc)
        return bool(out[0])

    def timestamps(self, work_id: int) -> tuple[int, int]:
        """(start_ns, end_ns) of completed work in now_ns()'s base."""
        s = self._ffi.new("uint64_t *")
        e = self._ffi.new("uint64_t *")
        rc = load()[1].nm_queue_timestamps(self.handle, work_id, s, e)
        if rc:
            raise_status(rc)
        return int(s[0]), int(e[0])

    def release(self) -> None:
        """Drops the queue without waiting (idempotent): work already queued still runs."""
        h, self.handle = self.handle, None
        if h is not None:
            try:
                load()[1].nm_queue_release(h)
            except Exception:
                pass

    def __del__(self):
        self.release()

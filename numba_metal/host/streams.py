"""Streams, events and synchronisation.

A stream is a device queue: work on one stream runs in order, streams run independently. The default
stream is the device's default queue; unlike CUDA's legacy default stream it does not implicitly wait
for other streams (use events or ``metal.synchronize()``). Waits are the only places where failed
kernels and ``debug=True`` bounds violations surface, as exceptions naming the kernel.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref

from numba_metal.host import profiling, settings
from numba_metal.errors import NumbaMetalError, UnsupportedFeatureError

from . import device as _device
from . import kernel_output


class Stream:
    """A queue of device work (numba.cuda's ``Stream``).

    Raises:
        MetalRuntimeError: ``synchronize()``: work on the stream failed (a device fault, a kernel stopped by the
            time limit), naming the kernel.
        KernelBoundsError: ``synchronize()``: a ``debug=True`` kernel indexed an array out of bounds.
        KernelRaisedError: ``synchronize()``: a ``debug=True`` kernel raised an exception.
        RuntimeError: ``async_done()`` outside a running ``asyncio`` event loop (asyncio's error).
    """

    def __init__(self, ctx, queue, *, default=False):
        self._ctx = ctx
        self._queue = queue
        self._default = default

    @property
    def queue(self):
        """The runtime queue this stream submits to."""
        return self._queue

    def synchronize(self) -> None:
        """Wait for all work submitted to this stream, then report any failure. ``NUMBA_METAL_WAIT_DEADLINE``
        (seconds) bounds the wait: past it a Metal GPU's stream raises MetalRuntimeError "still running after N
        s; the GPU cannot stop it" and stays unusable (every later use raises it)."""
        timed_wait(self._queue, "stream")
        check_faults(self._ctx)

    def query(self) -> bool:
        """True if all work submitted to this stream has completed."""
        self._queue.flush()
        return self._queue.query(0)   # work id 0: everything issued so far

    @contextlib.contextmanager
    def auto_synchronize(self):
        """A context manager that synchronizes the stream when the block ends."""
        try:
            yield self
        finally:
            self.synchronize()

    def add_callback(self, callback, arg=None) -> None:
        """Call ``callback(stream, status, arg)`` from another thread once the work submitted so far has
        completed (numba.cuda's ``add_callback``). ``status`` is 0: a failure of that work is raised by the
        next wait of the thread that submitted it, as every failure is."""
        queue = self._queue
        work = queue.marker()
        queue.flush()

        def waiter():
            delay = 2e-5
            while not queue.query(work):
                time.sleep(delay)
                delay = min(delay * 2, 1e-3)
            callback(self, 0, arg)

        threading.Thread(target=waiter, name="numba-metal stream callback", daemon=True).start()

    def async_done(self):
        """An ``asyncio`` future of the running event loop, done (with this stream as its result) once the
        work submitted so far has completed (numba.cuda's ``async_done``)."""
        import asyncio
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def resolve(future):
            if not future.done():
                future.set_result(self)

        self.add_callback(lambda stream, status, future: loop.call_soon_threadsafe(resolve, future), future)
        return future

    def __repr__(self) -> str:
        kind = "default stream" if self._default else "stream"
        return f"<numba_metal {kind} on {self._ctx.info.name!r}>"

    def __int__(self) -> int:
        return 0 if self._default else id(self)


def stream() -> Stream:
    """A new stream on the current device.

    Raises:
        UnsupportedPlatformError: as ``get_current_device``.
        MetalRuntimeError: the runtime library cannot be loaded or cannot make a queue.
    """
    ctx = _device.current()
    queue = ctx.device.new_queue()
    s = Stream(ctx, queue)
    ctx.streams.add(s)
    weakref.finalize(s, ctx.retire_queue, queue)
    return s


_default_streams: dict = {}


def default_stream() -> Stream:
    """The current device's default stream (what ``stream=0`` means).

    Raises:
        UnsupportedPlatformError, MetalRuntimeError: as ``get_current_device``.
    """
    ctx = _device.current()
    s = _default_streams.get(id(ctx))
    if s is None or s._ctx is not ctx:
        s = _default_streams[id(ctx)] = Stream(ctx, ctx.default_queue, default=True)
    return s


def legacy_default_stream() -> Stream:
    """numba.cuda's legacy default stream: the default stream. (Metal has no stream that implicitly
    waits for the others; use events or ``metal.synchronize()``.)

    Raises:
        UnsupportedPlatformError, MetalRuntimeError: as ``get_current_device``.
    """
    return default_stream()


_per_thread = threading.local()


def per_thread_default_stream() -> Stream:
    """A stream of the calling thread's own, the same on every call from that thread (numba.cuda's
    per-thread default stream; it does not stand in for ``stream=0``, which stays the device's default
    stream).

    Raises:
        UnsupportedPlatformError, MetalRuntimeError: as ``get_current_device``.
    """
    ctx = _device.current()
    streams = getattr(_per_thread, "streams", None)
    if streams is None:
        streams = _per_thread.streams = {}
    s = streams.get(id(ctx))
    if s is None or s._ctx is not ctx:
        s = streams[id(ctx)] = stream()
    return s


def external_stream(ptr) -> Stream:
    """numba.cuda's ``external_stream``: always raises :class:`UnsupportedFeatureError` (no queue made outside
    numba-metal can be adopted).

    Raises:
        UnsupportedFeatureError: always: Metal cannot adopt a queue made outside numba-metal.
    """
    raise UnsupportedFeatureError("external_stream(): numba-metal cannot adopt a queue made outside it (a CUDA stream "
                          "pointer has no Metal meaning); use metal.stream()")


def resolve(stream, ctx):
    """The runtime queue for a ``stream=`` argument (0/None means the default stream)."""
    if stream is None or (isinstance(stream, int) and stream == 0):
        return ctx.default_queue
    if isinstance(stream, Stream):
        if stream._ctx is not ctx:
            raise NumbaMetalError(f"{stream!r} belongs to another device than {ctx.info.name!r}")
        return stream._queue
    raise NumbaMetalError(f"stream must be a metal.stream(), metal.default_stream() or 0, not {stream!r}")


def timed_wait(queue, what: str) -> None:
    """``queue.wait()`` with the wait deadline (``NUMBA_METAL_WAIT_DEADLINE``), reported to profilers as a wait."""
    if not profiling.listeners:
        queue.wait(settings.wait_deadline())
        return
    start = profiling.now_ns()
    try:
        queue.wait(settings.wait_deadline())
    finally:
        profiling.emit("wait", what=what, start_ns=start, end_ns=profiling.now_ns())


def _wait_all(ctx, what: str) -> None:
    # Cleared before the waits, set again by any launch after them (see ``wait_for_host_access``).
    ctx.unwaited = False
    ctx.launched.flag = False
    first_error = None
    completed = False
    try:
        retired = ctx.take_retired_queues()
        for q in ctx.all_queues() + retired:
            if not q.usable:    # its wait deadline passed: its own waits and launches said so, and still do;
                # while its work still runs, no host access may read memory that work may write
                first_error = first_error or q.stuck_error()
                continue
            try:
                timed_wait(q, what)
            except NumbaMetalError as e:
                first_error = first_error or e
        completed = True
    finally:
        if not completed:   # interrupted (Ctrl-C): work may be left
            ctx.unwaited = True
            ctx.launched.flag = True
    check_faults(ctx)
    if first_error is not None:
        raise first_error


def synchronize() -> None:
    """Wait for all work on every stream of the current device; raise the first failure.

    Raises:
        UnsupportedPlatformError: the first use of a device finds none to use: no Metal GPU and the CPU
            reference device not chosen (``NUMBA_METAL_DEVICE=cpu`` or ``select_device('cpu')``), or
            ``NUMBA_METAL_DEVICE`` naming no device kind.
        MetalRuntimeError: work waited for failed (a device fault, a kernel stopped by the time limit),
            naming the kernel; or a stream's work still ran after ``NUMBA_METAL_WAIT_DEADLINE`` seconds (on a
            Metal GPU, which cannot stop it, that stream is unusable from then on; later waits for every stream raise
            its error while its work still runs, and skip it once the work has finished).
        KernelBoundsError: a ``debug=True`` kernel indexed an array out of bounds (its ``file:line``).
        KernelRaisedError: a ``debug=True`` kernel raised an exception or failed an ``assert``; the error is
            also an instance of the class the kernel raised.
    """
    _wait_all(_device.current(), "synchronize")


def wait_for_host_access(ctx, stream=0) -> None:
    """Before the host reads or writes device memory: wait for the work of every stream of the device
    (any kernel queued on any stream may use that memory; numba-metal does not track which buffers queued
    work uses), then report faults. ``stream`` (numba.cuda's argument of host copies) must be a stream of
    the device; the wait covers it with the others. Every host access of device memory goes through
    here: ``DeviceNDArray``'s item access, copies, NumPy and DLPack views, and mapped arrays' methods.

    The shortcut: when no launch was submitted since a wait for every stream (``ctx.unwaited``), and
    none by this thread since its own (``ctx.launched.flag``: a thread's failures are reported only by its
    own waits), there is nothing to wait for. Every launch sets both just after submitting its work."""
    if stream:
        resolve(stream, ctx)   # a stream of another device, or not a stream: refused as before
    if ctx.unwaited or ctx.launched.flag:
        _wait_all(ctx, "copy")
    elif ctx.pending_checks:
        check_faults(ctx)


def check_faults(ctx) -> None:
    """Print the output of the calling thread's finished kernels and raise the first failure one of
    them recorded (debug mode: an out-of-bounds index, a raised exception)."""
    if ctx.pending_checks:
        kernel_output.report(ctx)


class Event:
    """A point in a stream's work (numba.cuda's ``Event``), with device timestamps.

    Raises:
        NumbaMetalError: ``wait``, ``query``, ``synchronize`` or ``elapsed_time`` of an event never recorded;
            ``elapsed_time`` of an event made with ``timing=False`` or not completed yet; a ``stream`` that is
            not a stream of the event's device (``record``, ``wait``).
        UnsupportedPlatformError: the first use of a device finds none to use: no Metal GPU and the CPU
            reference device not chosen (``NUMBA_METAL_DEVICE=cpu`` or ``select_device('cpu')``), or
            ``NUMBA_METAL_DEVICE`` naming no device kind.
        KernelBoundsError: ``synchronize()``: a ``debug=True`` kernel before the event indexed out of bounds.
        KernelRaisedError: ``synchronize()``: a ``debug=True`` kernel before the event raised an exception.
    """

    def __init__(self, timing: bool = True):
        self.timing = timing
        self._queue = None
        self._work = None
        self._ctx = None

    def record(self, stream=0) -> None:
        """Mark the current end of ``stream``'s work."""
        ctx = _device.current()
        q = resolve(stream, ctx)
        self._ctx = ctx
        self._queue = q
        self._work = q.marker()
        q.flush()

    def _require_recorded(self):
        if self._queue is None:
            raise NumbaMetalError("this event has not been recorded; call event.record(stream) first")

    def wait(self, stream=0) -> None:
        """Make later work on ``stream`` wait until this event has completed."""
        self._require_recorded()
        target = resolve(stream, self._ctx)
        if target is not self._queue:
            target.wait_for(self._queue, self._work)

    def query(self) -> bool:
        """True if the work before this event has completed."""
        self._require_recorded()
        return self._queue.query(self._work)

    def synchronize(self) -> None:
        """Wait until the work before this event has completed."""
        self._require_recorded()
        self._queue.flush()
        delay = 2e-5
        while not self._queue.query(self._work):
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)
        check_faults(self._ctx)

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds of device time from this event to ``end`` (both must have completed)."""
        return event_elapsed_time(self, end)

    def _timestamp(self) -> int:
        self._require_recorded()
        if not self.timing:
            raise NumbaMetalError("this event was created with timing=False")
        if not self._queue.query(self._work):
            raise NumbaMetalError("the event has not completed yet; synchronize it first")
        return self._queue.timestamps(self._work)[1]


def event(timing: bool = True) -> Event:
    """A new event (numba.cuda's ``cuda.event``); ``record`` it on a stream.

    Raises:
        nothing: the event touches no device until it is recorded.
    """
    return Event(timing)


def event_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two completed events, from device timestamps.

    Raises:
        NumbaMetalError: either event was never recorded, was made with ``timing=False``, or has not completed
            yet.
    """
    return (end._timestamp() - start._timestamp()) / 1e6

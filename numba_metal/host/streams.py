"""Streams, events and synchronisation.

A stream is a device queue: work on one stream runs in order, streams run independently. The default
stream is the device's default queue; unlike CUDA's legacy default stream it does not implicitly wait
for other streams (use events or ``metal.synchronize()``). Waits are the only places where failed
kernels and ``debug=True`` bounds violations surface, as exceptions naming the kernel.
"""

from __future__ import annotations

import contextlib
import time

from numba_metal import profiling
from numba_metal.errors import NumbaMetalError

from . import device as _device
from . import kernel_output


class Stream:
    """A queue of device work (numba.cuda's ``Stream``)."""

    def __init__(self, ctx, queue, *, default=False):
        self._ctx = ctx
        self._queue = queue
        self._default = default

    @property
    def queue(self):
        """The runtime queue this stream submits to."""
        return self._queue

    def synchronize(self) -> None:
        """Wait for all work submitted to this stream, then report any failure."""
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

    def __repr__(self) -> str:
        kind = "default stream" if self._default else "stream"
        return f"<numba_metal {kind} on {self._ctx.info.name!r}>"

    def __int__(self) -> int:
        return 0 if self._default else id(self)


def stream() -> Stream:
    """A new stream on the current device."""
    ctx = _device.current()
    s = Stream(ctx, ctx.device.new_queue())
    ctx.streams.add(s)
    return s


_default_streams: dict = {}


def default_stream() -> Stream:
    """The current device's default stream (what ``stream=0`` means)."""
    ctx = _device.current()
    s = _default_streams.get(id(ctx))
    if s is None or s._ctx is not ctx:
        s = _default_streams[id(ctx)] = Stream(ctx, ctx.default_queue, default=True)
    return s


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
    """``queue.wait()``, reported to profilers as a wait."""
    if not profiling.listeners:
        queue.wait()
        return
    start = profiling.now_ns()
    try:
        queue.wait()
    finally:
        profiling.emit("wait", what=what, start_ns=start, end_ns=profiling.now_ns())


def _wait_all(ctx, what: str) -> None:
    first_error = None
    for q in ctx.all_queues():
        try:
            timed_wait(q, what)
        except NumbaMetalError as e:
            first_error = first_error or e
    check_faults(ctx)
    if first_error is not None:
        raise first_error


def synchronize() -> None:
    """Wait for all work on every stream of the current device; raise the first failure."""
    _wait_all(_device.current(), "synchronize")


def wait_for_host_access(ctx, stream) -> None:
    """Before the host touches device memory: wait for ``stream`` (0: all streams) and report faults."""
    if stream is None or (isinstance(stream, int) and stream == 0):
        _wait_all(ctx, "copy")
    else:
        timed_wait(resolve(stream, ctx), "copy")
        check_faults(ctx)


def check_faults(ctx) -> None:
    """Print the output of the calling thread's finished kernels and raise the first failure one of
    them recorded (debug mode: an out-of-bounds index, a raised exception)."""
    if ctx.pending_checks:
        kernel_output.report(ctx)


class Event:
    """A point in a stream's work (numba.cuda's ``Event``), with device timestamps."""

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
    """A new event (numba.cuda's ``cuda.event``); ``record`` it on a stream."""
    return Event(timing)


def event_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two completed events, from device timestamps."""
    return (end._timestamp() - start._timestamp()) / 1e6

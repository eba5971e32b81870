"""The host layer's event stream for profilers: the implementation of ``numba_metal.profiling`` (its public
name, whose docstring lists the events and their fields)."""

from __future__ import annotations

import contextlib
import threading

#: The registered listeners; host code tests it (``if profiling.listeners:``) before making an event.
listeners: list = []
_lock = threading.Lock()


class Event:
    """One runtime event: its ``kind`` and its fields, also readable as attributes (``event.nbytes``). A
    plain class: importing ``dataclasses`` would be a tenth of ``import numba_metal``.

    Raises:
        AttributeError: reading a field the event does not have.
    """

    __slots__ = ("kind", "fields")

    def __init__(self, kind: str, fields: dict | None = None):
        self.kind = kind
        self.fields = {} if fields is None else fields

    def __repr__(self) -> str:
        return f"Event(kind={self.kind!r}, fields={self.fields!r})"

    def __eq__(self, other):
        if type(other) is not Event:
            return NotImplemented
        return (self.kind, self.fields) == (other.kind, other.fields)

    __hash__ = None

    def __getattr__(self, name):
        try:
            return self.fields[name]
        except KeyError:
            raise AttributeError(name) from None


def add_listener(listener) -> None:
    """Start sending events to ``listener(event)``.

    Raises:
        nothing: it appends to a list.
    """
    with _lock:
        listeners.append(listener)


def remove_listener(listener) -> None:
    """Stop sending events to ``listener`` (nothing happens if it is not registered).

    Raises:
        nothing: an unknown listener is ignored.
    """
    with _lock:
        if listener in listeners:
            listeners.remove(listener)


def emit(kind: str, **fields) -> None:
    """Send an event to every listener (host code calls this only when ``listeners`` is non-empty).

    Raises:
        Exception: whatever a listener raises propagates to the code that emitted the event.
    """
    event = Event(kind, fields)
    for listener in list(listeners):
        listener(event)


def now_ns() -> int:
    """The clock of event times and device timestamps, in nanoseconds.

    Raises:
        MetalRuntimeError: the runtime library cannot be loaded.
    """
    from numba_metal import runtime
    return runtime.now_ns()


__all__ = ["Event", "listeners", "add_listener", "remove_listener", "emit", "now_ns"]


# numba.cuda's profiler controls. They start and stop the CUDA profiler's collection there; numba-metal's
# events go to listeners whenever there are some, and a Metal capture is started from Xcode or Instruments,
# so these have nothing to do.

def profile_start() -> None:
    """numba.cuda's ``profile_start``: nothing to start on Metal (see :func:`add_listener`).

    Raises:
        nothing: it does nothing.
    """


def profile_stop() -> None:
    """numba.cuda's ``profile_stop``: nothing to stop on Metal.

    Raises:
        nothing: it does nothing.
    """


@contextlib.contextmanager
def profiling():
    """numba.cuda's ``profiling()`` block: nothing to do on Metal.

    Raises:
        nothing: the block does nothing.
    """
    yield

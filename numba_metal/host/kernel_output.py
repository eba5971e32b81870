"""What kernels tell the host, read when their work has completed: the debug error record (an
out-of-bounds index, a raised exception) and ``print()`` output. The formats belong to
:mod:`numba_metal.compiler.kernel_io`; this module owns the buffers and the reading.

Both are kept per launching thread, as the runtime keeps failures: a thread's wait reports the
failures of the kernels it launched and prints their output, never another thread's; what a thread
that has exited left goes to the next wait of any thread, and its buffers are then released.

- A ``debug=True`` kernel gets one error-record buffer per launching thread; each launch registers a
  check with its device context (``pending_checks``, keyed by thread), which the thread's next wait
  runs (:func:`report`): the first recorded failure is raised, naming the kernel, the thread and the
  Python line.
- A kernel that prints gets one print buffer per (launching thread, stream), so launches on one stream
  write their records in launch order. A wait prints the records of every buffer whose stream has no
  more work (:func:`report`), to ``sys.stdout`` (looked up at that moment, so pytest's ``capsys`` and
  ``contextlib.redirect_stdout`` see it), and empties it. A full buffer drops further records and the
  host says how many were lost (a :class:`PrintOutputTruncated` warning). The buffer's size is
  ``NUMBA_METAL_PRINT_BUFFER_BYTES`` (default 1 MiB, as CUDA's printf FIFO).
"""

from __future__ import annotations

import importlib
import sys
import threading
import warnings
import weakref

import numpy as np

from numba_metal.compiler import kernel_io
from numba_metal.errors import KernelBoundsError, KernelRaisedError

from . import settings

#: Default bytes of a print buffer.
DEFAULT_PRINT_BUFFER_BYTES = 1 << 20


class PrintOutputTruncated(UserWarning):
    """Kernels printed more between two waits than their print buffer holds."""


def print_buffer_bytes() -> int:
    return settings.integer("NUMBA_METAL_PRINT_BUFFER_BYTES", DEFAULT_PRINT_BUFFER_BYTES, 64, 1 << 31)


_formats: dict = {}   # format key -> pieces, of every print() of every kernel launched
_channels: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # queue -> {thread: PrintChannel}
_channels_lock = threading.Lock()


class PrintChannel:
    """The print buffer of one (thread, stream)."""

    def __init__(self, ctx, queue):
        nbytes = print_buffer_bytes() // 4 * 4
        self.buffer = ctx.device.new_buffer(nbytes)
        self.words = np.frombuffer(self.buffer.memory(), dtype=np.uint32)
        self.words[:] = 0
        self.words[kernel_io.PRINT_CAPACITY] = nbytes // 4 - kernel_io.PRINT_HEADER_WORDS
        self.queue = weakref.ref(queue)
        self.nbytes = nbytes

    def empty(self) -> bool:
        return not self.words[kernel_io.PRINT_USED] and not self.words[kernel_io.PRINT_LOST]

    def drain(self) -> bool:
        """Print the records if the stream's work has completed; False if it has not (try again later)."""
        queue = self.queue()
        if queue is not None and not queue.query(0):
            return False
        words = self.words
        used = int(words[kernel_io.PRINT_USED])
        lost = int(words[kernel_io.PRINT_LOST])
        at = kernel_io.PRINT_HEADER_WORDS
        end = at + used
        out = []
        while at < end:
            key = int(words[at]) | (int(words[at + 1]) << 32)
            pieces = _formats.get(key)
            if pieces is None:   # cannot happen unless the buffer was overwritten: stop rather than guess
                out.append(f"<numba-metal: unreadable print record at word {at}>\n")
                break
            n = kernel_io.value_count(pieces)
            out.append(kernel_io.render(pieces, words[at + 2:at + 2 + 2 * n]))
            at += 2 + 2 * n
        words[kernel_io.PRINT_USED] = 0
        words[kernel_io.PRINT_LOST] = 0
        if out:
            stream = sys.stdout
            stream.write("".join(out))
            stream.flush()
        if lost:
            warnings.warn(PrintOutputTruncated(
                f"{lost} print() call(s) of kernels were lost: their print buffer ({self.nbytes} bytes) was "
                "full; wait (synchronize) more often or set NUMBA_METAL_PRINT_BUFFER_BYTES to a larger size"),
                stacklevel=4)
        return True


def _alive() -> set:
    return {t.ident for t in threading.enumerate()}


def _channel(ctx, queue) -> PrintChannel:
    ident = threading.get_ident()
    with _channels_lock:
        per_thread = _channels.get(queue)
        if per_thread is None:
            per_thread = _channels[queue] = {}
        channel = per_thread.get(ident)
        if channel is None:
            # A new thread: release the empty buffers of threads that have exited.
            alive = _alive()
            for other in [i for i, c in per_thread.items() if i not in alive and c.empty()]:
                del per_thread[other]
            channel = per_thread[ident] = PrintChannel(ctx, queue)
    return channel


class KernelOutput:
    """The error-record and print buffers of one launch state (one kernel specialisation on one device),
    bound per launching thread and stream."""

    def __init__(self, state, error_index, print_index):
        self.state = state
        abi = state.abi
        self.error_index = error_index   # the dispatch's buffer index of the error record, or None
        self.print_index = print_index   # and of the print buffer
        self._errors: dict = {}          # thread -> its error-record buffer
        self._bound_error = None
        self._bound_print = None
        for description in abi.print_formats:
            _formats[kernel_io.format_key(description)] = kernel_io.pieces_of(description)

    def bind(self, queue):
        """Before a submit, under the launch state's lock: bind the calling thread's buffers. Returns
        what the launch must register with :meth:`pending`."""
        dispatch = self.state.dispatch
        error = channel = None
        if self.error_index is not None:
            ident = threading.get_ident()
            error = self._errors.get(ident)
            if error is None:
                alive = _alive()
                for other in [i for i in self._errors if i not in alive]:
                    del self._errors[other]   # an exited thread's: its pending check still holds it
                error = self._errors[ident] = self.state.ctx.device.new_buffer(4 * kernel_io.ERROR_RECORD_WORDS)
                np.frombuffer(error.memory(), dtype=np.uint32)[:] = 0
            if error is not self._bound_error:
                dispatch.set_buffer(self.error_index, error, 0)
                self._bound_error = error
        if self.print_index is not None:
            channel = _channel(self.state.ctx, queue)
            if channel is not self._bound_print:
                dispatch.set_buffer(self.print_index, channel.buffer, 0)
                self._bound_print = channel
        return error, channel

    def pending(self, bound, blockdim=(1, 1, 1)) -> None:
        """After a submit: the calling thread's next wait reads what this launch wrote (``blockdim``: the
        launch's threadgroup size, which splits a grid position into numba.cuda's ``tid`` and ``ctaid``)."""
        error, channel = bound
        ctx = self.state.ctx
        with ctx.lock:
            checks = ctx.pending_checks.setdefault(threading.get_ident(), {})
            if channel is not None:
                checks[("print", id(channel))] = channel.drain
            if error is not None:
                checks[("error", id(error))] = lambda: self.failure(error, blockdim)

    def failure(self, buffer, blockdim=(1, 1, 1)):
        """The exception a thread's error record describes (None if nothing happened); clears it."""
        words = np.frombuffer(buffer.memory(), dtype=np.uint32)
        if words[kernel_io.RECORD["flag"]] == 0:
            return None
        record = [int(w) for w in words[:kernel_io.ERROR_RECORD_WORDS]]
        words[:] = 0
        kernel = self.state.kernel
        abi = self.state.abi
        r = kernel_io.RECORD
        gid = tuple(record[r["gid"]:r["gid"] + 3])
        thread = f"thread ({gid[0]}, {gid[1]}, {gid[2]})"
        if record[r["kind"]] == kernel_io.KIND_RAISE and record[r["what"]] < len(abi.raise_sites):
            # numba.cuda names the thread by its position in its block (tid) and the block's (ctaid), each
            # listed z, y, x as numba.cuda lists them
            tid = [g % b for g, b in zip(gid, blockdim)][::-1]
            ctaid = [g // b for g, b in zip(gid, blockdim)][::-1]
            return _raised(abi.raise_sites[record[r["what"]]], kernel.name, thread, f"tid={tid} ctaid={ctaid}")
        names = abi.array_names
        array = names[record[r["what"]]] if record[r["what"]] < len(names) else "?"
        index = record[r["index"]] | (record[r["index"] + 1] << 32)
        if index >= 1 << 63:
            index -= 1 << 64
        extent = record[r["extent"]] | (record[r["extent"] + 1] << 32)
        code = getattr(kernel.dispatcher.py_func, "__code__", None)
        filename = code.co_filename if code is not None else "?"
        return KernelBoundsError(
            f"index {index} is out of bounds for axis {record[r['axis']]} with size {extent} in array "
            f"'{array}' of kernel {kernel.name}(), {thread}", (filename, record[r["line"]]))


def _exception_class(site):
    module = sys.modules.get(site.module)
    if module is None:
        try:
            module = importlib.import_module(site.module)
        except ImportError:
            return None
    obj = module
    for part in site.qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) and issubclass(obj, BaseException) else None


_raised_classes: dict = {}


def _raised(site, kernel_name: str, thread: str, cuda_thread: str) -> BaseException:
    """The exception a kernel raised, as numba.cuda raises it on the host: its class and arguments,
    the first argument prefixed with where it happened: numba-metal's ``file:line: kernel k(), thread
    (x, y, z)`` (the position in the grid), then numba.cuda's own words (``In function 'f', file F, line
    L, tid=[z, y, x] ctaid=[z, y, x]``), so that code matching numba.cuda's messages keeps working. It is
    also a :class:`KernelRaisedError` when the class allows (a class with its own instance layout, such
    as OSError, does not mix)."""
    where = f"kernel {kernel_name}(), {thread}"
    cls = _exception_class(site)
    args = site.args
    if cls is None:
        return KernelRaisedError(f"{site.qualname}{args!r} was raised in {where}, in {site.function}() (the "
                                 f"class could not be imported from {site.module})", (site.filename, site.line))
    first = (f"{site.filename}:{site.line}: {where}: In function {site.function!r}, file {site.filename}, "
             f"line {site.line}, {cuda_thread}")
    message = f"{first}: {args[0]}" if args else first
    mixed = _raised_classes.get(cls)
    if mixed is None:
        try:
            mixed = type(cls.__name__, (cls, KernelRaisedError), {"__module__": cls.__module__,
                                                                  "__qualname__": cls.__qualname__})
        except TypeError:
            mixed = cls
        _raised_classes[cls] = mixed
    try:
        exc = mixed.__new__(mixed)
        if mixed is not cls:
            KernelRaisedError.__init__(exc, message, (site.filename, site.line))
        exc.args = (message,) + tuple(args[1:])
    except Exception:  # noqa: BLE001 - a class whose constructor wants other arguments
        return KernelRaisedError(f"{site.qualname}{args!r} was raised in {where}, in {site.function}()",
                                 (site.filename, site.line))
    return exc


def report(ctx) -> None:
    """At a wait of the calling thread: print its kernels' output and raise the first failure they
    recorded (the others are dropped: one exception per wait, as the runtime reports)."""
    ident = threading.get_ident()
    with ctx.lock:
        checks = ctx.pending_checks.pop(ident, None) or {}
        if len(ctx.pending_checks) > 0:
            alive = _alive()
            for other in [i for i in ctx.pending_checks if i not in alive]:
                checks.update(ctx.pending_checks.pop(other))
    if not checks:
        return
    later = {}
    failures = []
    for key, check in checks.items():
        if key[0] == "print":
            if not check():
                later[key] = check
        else:
            exc = check()
            if exc is not None:
                failures.append(exc)
    if later:
        with ctx.lock:
            ctx.pending_checks.setdefault(ident, {}).update(later)
    if failures:
        raise failures[0]

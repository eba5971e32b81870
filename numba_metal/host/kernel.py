"""The kernel object: one compiled specialisation of a ``@metal.jit`` kernel.

A :class:`Kernel` holds what the compiler produced for one tuple of argument types (the MSL and its
ABI) and, per device, the launch state that launches it (:mod:`.launch`). A specialisation
loaded from the disk cache by argument keys has no Numba types or typed IR until something asks for
them (``argtypes``, ``typed``): launching it never imports Numba.
"""

from __future__ import annotations

import threading

from numba_metal.errors import KernelCompilationError

from . import settings
from .arguments import numba_type_of_key
from .introspection import KernelFigures
from .launch import LaunchState


def _bounded(compiled, bound: int):
    """``compiled`` with ``launch_bounds``' maximum threads per threadgroup on its MSL entry point:
    ``[[max_total_threads_per_threadgroup(bound)]]`` (applied here, after the disk cache, whose entries do not
    depend on it)."""
    if not bound:
        return compiled
    from numba_metal.compiler.msl import with_max_threads
    source = with_max_threads(compiled.source, compiled.abi.entry_name, bound)
    if source is None:
        raise KernelCompilationError(f"cannot find the entry point {compiled.abi.entry_name}() in the kernel's MSL "
                                     f"to bound it to {bound} threads per threadgroup (launch_bounds)")
    return compiled._replace(source=source)


class Kernel(KernelFigures):
    """One compiled specialisation of a kernel: its MSL, its ABI and per-device launch states.

    ``from_cache`` says whether it was loaded from the disk cache rather than compiled in this process.
    """

    def __init__(self, dispatcher, compiled, *, argtypes=None, key=None, from_cache: bool = False):
        self.dispatcher = dispatcher
        self.name = dispatcher.__name__
        self.compiled = compiled = _bounded(compiled, dispatcher.options.launch_bound)
        self.from_cache = from_cache
        self._argtypes = None if argtypes is None else tuple(argtypes)
        self._key = key
        self._typed = compiled.typed
        #: device context -> LaunchState (made by :meth:`launch_state`; the launch path reads it directly)
        self.launch_states: dict = {}
        self._lock = threading.Lock()
        if settings.flag("NUMBA_METAL_DUMP_MSL", False):
            print(f"// ---- numba-metal generated MSL: {self.name}{tuple(map(str, self.argtypes))} ----")
            print(self.msl)

    @property
    def msl(self) -> str:
        return self.compiled.source

    @property
    def abi(self):
        return self.compiled.abi

    @property
    def emulated_float64(self) -> bool:
        """True if the kernel computes float64 in software (it holds float64 data, compiler/precision.py):
        each float64 operation is tens of integer instructions (docs/performance.md)."""
        from numba_metal.compiler import msl
        return msl.FLOAT64 in self.msl

    @property
    def argtypes(self) -> tuple:
        if self._argtypes is None:
            self._argtypes = tuple(numba_type_of_key(k) for k in self._key)
        return self._argtypes

    @property
    def stride_groups(self) -> tuple:
        """The stride groups this specialisation was compiled for (issue 28 item 4): tuples of the positions
        of array arguments whose element strides it takes to be equal (``arguments.stride_groups``), read
        from its argument keys (without importing Numba) or types; empty for most kernels."""
        if self._key is not None:
            labels = [getattr(k, "strides_of", None) for k in self._key]
        else:
            labels = [getattr(t, "strides_of", None) for t in self.argtypes]
        groups: dict = {}
        for i, label in enumerate(labels):
            if label is not None:
                groups.setdefault(label, []).append(i)
        return tuple(tuple(g) for g in groups.values() if len(g) > 1)

    @property
    def typed(self):
        """The typed IR (re-created on demand for a specialisation loaded from the disk cache)."""
        if self._typed is None:
            from numba_metal.compiler.devicefn import infer
            self._typed = infer(self.dispatcher.py_func, self.argtypes)
        return self._typed

    @property
    def _type_annotation(self):
        """numba.cuda's name for a specialisation's typing: ``typemap`` maps each variable of the kernel to
        its Numba type (and ``calltypes`` each call to its signature); it is :attr:`typed`."""
        return self.typed

    def inspect_types(self, file=None) -> None:
        """Print this specialisation's typed Numba IR, every variable with its type (numba.cuda's kernel
        method; the dispatcher's ``inspect_types`` prints every specialisation).

        Raises:
            KernelCompilationError: the types of a specialisation loaded from the disk cache no longer
                infer (its source changed).
        """
        self.dispatcher.inspect_types(self.argtypes, file=file)

    def __repr__(self) -> str:
        return f"<numba_metal kernel specialisation {self.name}({', '.join(map(str, self.argtypes))})>"

    def launch_state(self, ctx) -> LaunchState:
        """This kernel's launch state on device ``ctx`` (its pipeline and dispatch descriptor), made once."""
        state = self.launch_states.get(ctx)
        if state is not None:
            return state
        with self._lock:
            state = self.launch_states.get(ctx)
            if state is None and self.dispatcher.sanitize_from_env and ctx.info.kind != "cpu":
                # NUMBA_METAL_SANITIZE sanitizes what runs on the CPU reference device; elsewhere the kernel
                # runs as compiled without it, said once (an explicit sanitize= is refused there instead)
                settings.warn_once(
                    f"kernel {self.name}() runs unsanitized on {ctx.info.name!r} ({ctx.info.kind}): "
                    "NUMBA_METAL_SANITIZE sanitizes kernels on the CPU reference device only (docs/sanitizer.md)",
                    ("sanitize-elsewhere", id(self.dispatcher), ctx.info.kind))
                state = self.dispatcher.plain_variant().compile(self.argtypes).launch_state(ctx)
                self.launch_states[ctx] = state
            if state is None:
                try:
                    state = LaunchState(self, ctx)
                except KernelCompilationError:
                    if not self.from_cache:
                        raise
                    # A disk-cache entry that verified but does not compile is a miss: compile the kernel
                    # again from its Python source (which rewrites the entry).
                    self.compiled = _bounded(self.dispatcher.compile_uncached(self.argtypes),
                                             self.dispatcher.options.launch_bound)
                    self._typed = self.compiled.typed
                    self.from_cache = False
                    state = LaunchState(self, ctx)
                self.launch_states[ctx] = state
        return state


__all__ = ["Kernel"]

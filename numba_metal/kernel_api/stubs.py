"""Kernel-side stubs: Python objects that stand for functions only kernels may call."""

from __future__ import annotations

import sys

from numba_metal.errors import NumbaMetalError


class Stub:
    """A function that exists only inside @metal.jit kernels and device functions.

    Calling it from ordinary Python raises, saying where it may be used. ``path`` is its name under
    ``metal`` (``"atomic.add"``); the stub belongs to the kernel-API module that creates it, where
    ``path`` also finds it, so it pickles and copies as itself (the compiler knows stubs by identity).

    Raises:
        KernelCompilationError: when the kernel compiles (its first launch, an explicit signature,
            ``compile_msl``), at the call's ``file:line``: no form of the function takes arguments of these
            types or this number of them. It is also Numba's ``TypingError``, as numba.cuda raises.
        UnsupportedFeatureError: when the kernel compiles, at the call's ``file:line``: a use Metal cannot
            express (a 64-bit atomic, a shared-array shape that is not a constant, a value type a SIMD-group
            function lacks), with the reason and what to use instead; also Numba's ``TypingError``.
        NumbaMetalError: called from ordinary Python, outside a kernel or device function.
    """

    def __init__(self, path: str, doc: str = ""):
        self.path = path
        self.__name__ = path.rsplit(".", 1)[-1]
        self.__qualname__ = path
        self.__doc__ = doc
        # As collections.namedtuple: the module is the caller's.
        self.__module__ = sys._getframe(1).f_globals.get("__name__", __name__)

    def __call__(self, *args, **kwargs):
        raise NumbaMetalError(
            f"metal.{self.path}() can only be called inside a @metal.jit kernel or device function")

    def __repr__(self) -> str:
        return f"<numba_metal kernel function metal.{self.path}>"

    def __reduce__(self):
        return self.path

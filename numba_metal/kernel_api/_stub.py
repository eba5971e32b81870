"""Kernel-side stubs: Python objects that stand for functions only kernels may call."""

from __future__ import annotations

from numba_metal.errors import NumbaMetalError


class Stub:
    """A function that exists only inside @metal.jit kernels and device functions.

    Calling it from ordinary Python raises, saying where it may be used.
    """

    def __init__(self, path: str, doc: str = ""):
        self._path = path
        self.__name__ = path.rsplit(".", 1)[-1]
        self.__qualname__ = path
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        raise NumbaMetalError(
            f"metal.{self._path}() can only be called inside a @metal.jit kernel or device function")

    def __repr__(self) -> str:
        return f"<numba_metal kernel function metal.{self._path}>"

    def __reduce__(self):
        return (_lookup_stub, (self._path,))


def _lookup_stub(path: str):
    from numba_metal import metal
    obj = metal
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj

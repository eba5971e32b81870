"""``numba.cuda.errors``: numba.cuda's error classes as numba-metal has them. ``LoweringError`` is Numba's (numba.cuda
re-exports it), ``KernelRuntimeError`` is numba-metal's ``MetalRuntimeError`` (docs/supported-features.md)."""

from numba.core.errors import LoweringError  # noqa: F401

from numba_metal.errors import MetalRuntimeError as KernelRuntimeError  # noqa: F401

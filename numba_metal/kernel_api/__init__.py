"""The kernel-side API: one module per family of functions kernels may call.

Each module holds, for each function, its Python stub, its Numba typing and its MSL lowering.
Importing this package registers them all with the compiler (it is imported on the first compile,
not when numba_metal is imported).
"""

from . import atomics, indexing, memory, pymath, simd, sync  # noqa: F401

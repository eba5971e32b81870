"""The kernel-side API: one module per family of functions kernels may call.

Each family module holds, for each of its functions, the Python stub, the Numba typing and the MSL
lowering; its ``__all__`` lists the names it adds to the ``metal`` namespace. Importing a family
registers it with the compiler, and imports Numba: :func:`families` does that, on the first compile
(the compiler's typing context calls it) or on the first use of a kernel-side ``metal`` name.
:mod:`.functions` (the math table) imports nothing and can be read on its own.
"""

from __future__ import annotations

_index: dict | None = None


def families() -> tuple:
    """Every family module, imported (so registered with the compiler)."""
    from . import (atomics, cache_hints, external, fp16, indexing, intrinsics, libdevice, memory, numpy_ufuncs,
                   pybuiltins, pymath, scalartypes, simd, simdgroup, sync, vectors)
    return (scalartypes, indexing, memory, sync, atomics, simd, simdgroup, intrinsics, libdevice, fp16, cache_hints,
            vectors, external, pybuiltins, pymath, numpy_ufuncs)


def index() -> dict:
    """``metal.<name>`` -> the object, for every name a family lists in its ``__all__``."""
    global _index
    if _index is None:
        names: dict = {}
        for family in families():
            for name in family.__all__:
                if name in names:
                    raise AssertionError(f"metal.{name} is defined by two kernel-API families")
                names[name] = getattr(family, name)
        _index = names
    return _index

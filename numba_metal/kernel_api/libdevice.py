"""``metal.libdevice``: the integer functions of numba.cuda's ``cuda.libdevice`` (CUDA's libdevice
``__nv_<name>``), rows of :data:`.functions.LIBDEVICE` typed and lowered as the ``math`` rows are:
``popc``/``popcll``, ``clz``/``clzll``, ``ffs``/``ffsll``, ``brev``/``brevll``, ``mulhi``, ``umulhi``,
``mul64hi``, ``umul64hi``, ``mul24``, ``umul24``, ``sad``, ``usad``, with libdevice's signatures.
libdevice's floating-point functions are not here: kernels call Python's ``math`` (and ``metal.fma``,
``metal.cbrt``) for them.
"""

from __future__ import annotations

import types as pytypes

from . import functions as F
from .pymath import register
from .stubs import Stub

_STUBS = {f.name: Stub("libdevice." + f.name, "libdevice." + f.name + ": as numba.cuda's cuda.libdevice."
                       + f.name + "; " + f.signatures[0]) for f in F.LIBDEVICE}
# Numba registers a global by its module and name: each stub is also a module attribute.
globals().update(_STUBS)

libdevice = pytypes.ModuleType("numba_metal.metal.libdevice", "numba.cuda's cuda.libdevice: its integer functions.")
for _function in F.LIBDEVICE:
    setattr(libdevice, _function.name, _STUBS[_function.name])
    register(_function, _STUBS[_function.name])

__all__ = ["libdevice"]

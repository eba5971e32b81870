"""``metal.libdevice``: numba.cuda's ``cuda.libdevice`` (CUDA's libdevice ``__nv_<name>``), one row of
:data:`.functions.LIBDEVICE` per function, with numba.cuda's signature (tuple results included: ``sincosf``
gives ``(sin, cos)``, ``frexp`` ``(mantissa, exponent)``). Typed and lowered as the ``math`` rows
are (:mod:`.pymath`): a tuple result is the tuple of its parts' values, a routine may add constant
arguments (the rounding mode of the directed-rounding helpers) and convert its result through a type
(the unsigned conversions). Every one of numba.cuda's libdevice functions has a row.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "`metal.libdevice`"

import types as pytypes

from . import functions as F
from .pymath import register
from .stubs import Stub

_STUBS = {f.name: Stub("libdevice." + f.name, "libdevice." + f.name + ": as numba.cuda's cuda.libdevice."
                       + f.name + "; " + f.signatures[0]) for f in F.LIBDEVICE}
# Numba registers a global by its module and name: each stub is also a module attribute.
globals().update(_STUBS)

libdevice = pytypes.ModuleType("numba_metal.metal.libdevice", "numba.cuda's cuda.libdevice functions.")
for _function in F.LIBDEVICE:
    setattr(libdevice, _function.name, _STUBS[_function.name])
    register(_function, _STUBS[_function.name])

__all__ = ["libdevice"]

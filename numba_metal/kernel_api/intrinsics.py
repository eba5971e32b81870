"""numba.cuda's bit and arithmetic intrinsics: ``metal.popc``, ``brev``, ``clz``, ``ffs``, ``fma``,
``cbrt`` (rows of the table :data:`.functions.INTRINSICS`, typed and lowered as the ``math`` rows are)
and ``selp``.

As in numba.cuda, ``popc(x)`` and ``clz(x)`` count in the width of ``x``'s type and keep it
(``clz(int8(1)) == 7``), ``ffs(x)`` is a uint32, ``brev`` takes 32- and 64-bit unsigned integers, and
``selp(test, a, b)`` takes two values of the same type.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Bit and arithmetic intrinsics"

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, signature

from numba_metal.compiler import msl
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.declarations import registry as typing
from numba_metal.errors import UnsupportedFeatureError

from . import functions as F
from .pymath import register
from .stubs import Stub

for _function in F.INTRINSICS:
    globals()[_function.name] = Stub(_function.name, f"{_function.name}: as numba.cuda's cuda.{_function.name}; "
                                                     f"signatures {', '.join(_function.signatures)}")
    register(_function, globals()[_function.name])

selp = Stub("selp", "selp(test, a, b): a if test else b, for a and b of one type (CUDA's selp)")

#: numba.cuda's types for selp (PTX selp's).
_SELP_TYPES = (types.float64, types.float32, types.int16, types.uint16, types.int32, types.uint32,
               types.int64, types.uint64)


@typing.register_global(selp)
class Selp(AbstractTemplate):
    def generic(self, args, kws):
        if kws or len(args) != 3:
            raise UnsupportedFeatureError("metal.selp(test, a, b) takes three positional arguments")
        test, a, b = (types.unliteral(t) for t in args)
        if a != b or a not in _SELP_TYPES:
            raise UnsupportedFeatureError(
                f"metal.selp(test, a, b): a and b must have one type among "
                f"{', '.join(str(t) for t in _SELP_TYPES)} (as numba.cuda's); got {a} and {b}")
        return signature(a, test, a, a)


@lowering.call(selp)
def _lower_selp(lc, sig, args):
    rt = sig.return_type
    test, a, b = args
    return Value(msl.select(lc.truth(test), lc.cast(a, rt), lc.cast(b, rt)), rt)


__all__ = [f.name for f in F.INTRINSICS] + ["selp"]

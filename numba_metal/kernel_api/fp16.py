"""Half precision as numba.cuda has it: the ``metal.fp16`` functions (``hadd`` ... ``hexp10``, rows of
:data:`.functions.FP16`, and the CUDA-C spellings ``__hadd_sat`` ... ``__ull2half_rd``, rows of
:data:`.functions.FP16_CUDA_C`) and float16 arithmetic that stays float16.

Numba's core typing computes ``float16 + float16`` in float32; numba.cuda (and NumPy) give a float16,
rounded after every operation, so ``(h(2048) + h(1)) - h(2048)`` is 0. The templates here type ``+ - *
/`` (and their in-place forms), unary ``-``/``+``, ``abs`` and ``float()`` of float16 operands as float16, and
float16 with an int8, uint8 or bool operand as float16 (NumPy's ``result_type``); MSL's half arithmetic
rounds each operation (MSL Table 8.3).
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Half precision (`metal.fp16`)"

import builtins
import operator
import types as pytypes

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, signature

from numba_metal.compiler.declarations import registry as typing

from . import functions as F
from .pymath import register
from .stubs import Stub

_STUBS = {f.name: Stub(f"fp16.{f.name}", f"fp16.{f.name}: as numba.cuda's cuda.fp16.{f.name}; "
                                         f"{f.signatures[0]}") for f in F.FP16 + F.FP16_CUDA_C}
# Numba registers a global by its module and name: each stub is also a module attribute.
globals().update(_STUBS)
for _function in F.FP16 + F.FP16_CUDA_C:
    register(_function, _STUBS[_function.name])

fp16 = pytypes.ModuleType("numba_metal.metal.fp16", "numba.cuda's cuda.fp16 functions on MSL's half.")
for _name, _stub in _STUBS.items():
    setattr(fp16, _name, _stub)
# Typed and lowered with the other atomics (kernel_api/atomics.py).
atomicAdd = Stub("fp16.atomicAdd", "fp16.atomicAdd(ary, idx, val): atomically add the float16 val to ary[idx] "
                                   "(rounded to half); returns the old value")
fp16.atomicAdd = atomicAdd

#: Types NumPy combines with float16 into a float16.
_NARROW = (types.float16, types.int8, types.uint8, types.boolean)


class _Float16Template(AbstractTemplate):
    # Tried before Numba's own operator templates (which would compute in float32).
    metadata = {"target": "metal"}


def _binary(op):
    class Float16Binary(_Float16Template):
        key = op

        def generic(self, args, kws):
            if kws or len(args) != 2:
                return None
            a, b = (types.unliteral(t) for t in args)
            if types.float16 in (a, b) and a in _NARROW and b in _NARROW:
                return signature(types.float16, types.float16, types.float16)
            return None

    Float16Binary.__name__ = f"Float16_{op.__name__}"
    return Float16Binary


def _unary(op):
    class Float16Unary(_Float16Template):
        key = op

        def generic(self, args, kws):
            if not kws and len(args) == 1 and types.unliteral(args[0]) == types.float16:
                return signature(types.float16, types.float16)
            return None

    Float16Unary.__name__ = f"Float16_{getattr(op, '__name__', op)}"
    return Float16Unary


#: (function, template) of float16's typing: arithmetic operators, unary -/+, abs, and float() of a float16
#: (a float16, as numba.cuda's). The differential test's model of Numba's typing installs them too.
TEMPLATES = tuple([(op, _binary(op)) for op in (operator.add, operator.iadd, operator.sub, operator.isub,
                                                 operator.mul, operator.imul, operator.truediv,
                                                 operator.itruediv)]
                  + [(op, _unary(op)) for op in (operator.neg, operator.pos, builtins.abs, builtins.float)])
for _op, _template in TEMPLATES:
    typing.register_global(_op)(_template)

__all__ = ["fp16"]

"""``metal.libdevice``: numba.cuda's ``cuda.libdevice`` (CUDA's libdevice ``__nv_<name>``), one row of
:data:`.functions.LIBDEVICE` per function, with numba.cuda's signature (tuple results included: ``sincosf``
gives ``(sin, cos)``, ``frexp`` ``(mantissa, exponent)``). Typing is the row's signature (a Numba
ConcreteTemplate, as numba.cuda's); lowering calls the row's routine for the call's computation type
(see :mod:`.functions`): a tuple result is the tuple of its parts' values, a routine may add constant
arguments (the rounding mode of the directed-rounding helpers) and convert its result through a type
(the unsigned conversions). The functions of :data:`.functions.LIBDEVICE_NOT_YET` are not provided yet.
"""

from __future__ import annotations

import types as pytypes

from numba.core import types
from numba.core.typing.templates import ConcreteTemplate, signature

from numba_metal.compiler import msl
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.operators import lower_binop, lower_unary
from numba_metal.compiler.typing import registry as typing

from . import functions as F
from .pymath import numba_type as _scalar_type
from .stubs import Stub


def numba_type(name: str):
    """The Numba type a row names, numba.cuda's tuple results (``Tuple(a, b)``) included."""
    members = F.tuple_members(name)
    if members is None:
        return _scalar_type(name)
    return types.Tuple(tuple(_scalar_type(m) for m in members))


def _signature(text: str):
    return signature(numba_type(F.result_type(text)), *(_scalar_type(a) for a in F.argument_types(text)))


def _routine_value(lc, function, routine, ctype, sig, args, rt) -> Value:
    """The value of one routine on the call's arguments, converted to ``rt``."""
    if routine.source == F.REFUSED:
        lc.error(f"metal.libdevice.{function.name} {routine.name}")
    if routine.source == F.OPERATOR:
        op_sig = signature(_scalar_type(ctype), *(a.type for a in args))
        if len(args) == 1:
            value = lower_unary(lc, routine.name, op_sig, args[0])
        else:
            value = lower_binop(lc, routine.name, op_sig, args[0], args[1])
        return Value(lc.cast(value, rt), rt)
    params = [_scalar_type(p) for p in (routine.params or (ctype,) * len(args))]
    actual = [lc.cast(a, p) for a, p in zip(args, params)]
    if routine.source == F.SAME:
        return Value(lc.cast(Value(actual[0], params[0]), rt), rt)
    if routine.source == F.PRELUDE:
        lc.need(routine.snippet)
    elif routine.source == F.MATHLIB:
        lc.need_mathlib()
    actual += [msl.literal(v, "int") for v in routine.extra]
    call = lc.library_call if routine.source == F.EMULATED else msl.call
    expr = call(routine.name, *actual)
    if routine.member:
        expr = msl.member(expr, routine.member)
    value = Value(expr, _scalar_type(routine.result or ctype))
    if routine.via:
        via = _scalar_type(routine.via)
        value = Value(lc.cast(value, via), via)
    return Value(lc.cast(value, rt), rt)


def _lowering(function: F.Function):
    sig_text = function.signatures[0]
    ctype = F.computation_type(sig_text)
    declared = _signature(sig_text)

    def lower(lc, sig, args):
        # float64 computed in float32 (a kernel without float64 data) takes the float32 routine.
        kind = lc.op_kind(types.float64) if ctype == "float64" else ctype
        routine = function.routines.get(kind)
        if routine is None:
            lc.error(f"metal.libdevice.{function.name} computes in {ctype}, which this kernel computes as {kind}")
        args = [Value(lc.cast(a, t), t) for a, t in zip(args, declared.args)]
        rt = declared.return_type
        if routine.source != F.TUPLE:
            return _routine_value(lc, function, routine, ctype, sig, args, rt)
        # Each part sees the same arguments: evaluate them once.
        args = [Value(lc.tmp(a.type, a.expr), a.type) for a in args]
        parts = [_routine_value(lc, function, part, ctype, sig, args, t).expr
                 for part, t in zip(routine.parts, rt.types)]
        return Value(msl.aggregate(lc.msl_type(rt), parts), rt)

    lower.__name__ = f"lower_libdevice_{function.name}"
    return lower


_STUBS = {f.name: Stub("libdevice." + f.name, "libdevice." + f.name + ": as numba.cuda's cuda.libdevice."
                       + f.name + "; " + f.signatures[0]) for f in F.LIBDEVICE}
# Numba registers a global by its module and name: each stub is also a module attribute.
globals().update(_STUBS)

libdevice = pytypes.ModuleType("numba_metal.metal.libdevice", "numba.cuda's cuda.libdevice functions.")
for _function in F.LIBDEVICE:
    _stub = _STUBS[_function.name]
    setattr(libdevice, _function.name, _stub)
    typing.register_global(_stub)(type(f"Libdevice_{_function.name}", (ConcreteTemplate,),
                                       {"cases": [_signature(_function.signatures[0])]}))
    lowering.call(_stub)(_lowering(_function))

__all__ = ["libdevice"]

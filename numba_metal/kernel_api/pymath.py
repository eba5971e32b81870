"""Python's ``math`` module inside kernels: typing and lowering derived from the table of
:mod:`.functions` (one row per function).

:func:`register` makes a row callable in kernels: its signatures become a Numba typing template, and a
call computes in the signature's computation type with the row's routine for that type (see
:mod:`.functions`). Any table of rows of that type (a future family of ``metal.<name>`` functions) is
registered the same way, against its own Python objects. Every other function of ``math`` is refused
while typing, by name. Constants (``math.pi``, ``math.inf``...) are module attributes, lowered as
literals.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Python's `math` module"

import cmath
import math

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, ConcreteTemplate, signature

from numba_metal.compiler import msl
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.operators import lower_binop, lower_unary
from numba_metal.compiler.declarations import registry as typing
from numba_metal.errors import UnsupportedFeatureError

from . import functions as F

_TYPE_NAMES = {"bool": types.boolean, "intp": types.intp, "intc": types.intc}


def numba_type(name: str):
    """The Numba type a table names (``Tuple(a, b)``: numba.cuda's tuple results)."""
    members = F.tuple_members(name)
    if members is not None:
        return types.Tuple(tuple(numba_type(m) for m in members))
    return _TYPE_NAMES.get(name) or getattr(types, name)


def _signature(text: str):
    return signature(numba_type(F.result_type(text)), *(numba_type(a) for a in F.argument_types(text)))


def typing_template(function: F.Function):
    """The Numba typing template of a row: its signatures as a ConcreteTemplate; a row with keyword
    parameters takes its positional arguments and any of the keywords, and is typed with its signature
    (the lowering fills in the defaults)."""
    cases = [_signature(s) for s in function.signatures]
    if not function.keywords:
        return type(f"Math_{function.name}", (ConcreteTemplate,), {"cases": cases})
    names = [name for name, _ in function.keywords]
    positional = function.arity - len(names)

    def generic(self, args, kws):
        unknown = sorted(set(kws) - set(names))
        if unknown or len(args) != positional:
            raise UnsupportedFeatureError(
                f"math.{function.name} takes {positional} positional arguments and the keywords "
                f"{', '.join(names)} (not {len(args)} positional arguments{' and ' + ', '.join(unknown) if unknown else ''})")
        given = list(args) + [kws[name] for name in names if name in kws]
        for case in cases:
            if all(isinstance(types.unliteral(t), (types.Number, types.Boolean)) for t in given):
                return case
        return None

    return type(f"Math_{function.name}", (AbstractTemplate,), {"generic": generic})


def routine_value(lc, function, routine, ctype, sig, args, rt) -> Value:
    """The value of ``routine`` on the call's arguments (converted to its parameter types), as ``rt``."""
    if routine.source == F.REFUSED:
        lc.error(f"{function.name}: {routine.name}")
    if routine.source == F.OPERATOR:
        if len(args) == 1:
            return lower_unary(lc, routine.name, sig, args[0])
        return lower_binop(lc, routine.name, sig, args[0], args[1])
    if routine.source == F.CONSTANT:
        return Value(msl.literal(routine.value, lc.msl_type(rt)), rt)
    params = [numba_type(p) for p in (routine.params or (ctype,) * len(args))]
    actual = [lc.cast(a, p) for a, p in zip(args, params)]
    if routine.source == F.SAME:
        return Value(lc.cast(Value(actual[0], params[0]), rt), rt)
    if routine.source in (F.PRELUDE, F.MATHLIB):
        lc.need(routine.name)
    actual += [msl.literal(v, "int") for v in routine.extra]
    call = lc.library_call if routine.source == F.EMULATED else msl.call
    expr = call(routine.name, *actual)
    if routine.member:
        expr = msl.member(expr, routine.member)
    result = Value(expr, numba_type(routine.result or ctype))
    if routine.via:
        via = numba_type(routine.via)
        result = Value(lc.cast(result, via), via)
    return Value(lc.cast(result, rt), rt)


def lowering_of(function: F.Function):
    """The MSL lowering of a row's calls."""
    # (intp is int64 here: the names are normalised through the Numba types.)
    computation = {_signature(s): str(numba_type(F.computation_type(s))) for s in function.signatures}

    def lower(lc, sig, args, **kws):
        if function.keywords:  # the keywords in their order, defaults where not given
            args = list(args) + [kws[name] if name in kws else lc.lower_constant(default, types.float64)
                                 for name, default in function.keywords]
        ctype = computation[signature(sig.return_type, *(types.unliteral(t) for t in sig.args))]
        # float64 computed in float32 (a kernel without float64 data) takes the float32 routine.
        kind = lc.op_kind(types.float64) if ctype == "float64" else ctype
        routine = function.routines.get(kind)
        if routine is None:
            lc.error(f"{function.name} computes in {ctype}, which this kernel computes as {kind}")
        rt = types.unliteral(sig.return_type)
        if routine.source != F.TUPLE:
            return routine_value(lc, function, routine, ctype, sig, args, rt)
        # numba.cuda's tuple results: each member is a routine on the same arguments, evaluated once.
        args = [Value(lc.tmp(a.type, a.expr), a.type) for a in args]
        parts = [routine_value(lc, function, part, ctype, sig, args, t).expr
                 for part, t in zip(routine.parts, rt.types)]
        return Value(msl.aggregate(lc.msl_type(rt), parts), rt)

    lower.__name__ = f"lower_math_{function.name}"
    return lower


def register(function: F.Function, obj) -> None:
    """Make calls of ``obj`` in kernels typed and lowered as the row ``function`` says."""
    typing.register_global(obj)(typing_template(function))
    lowering.call(obj)(lowering_of(function))


for _function in F.MATH:
    register(_function, getattr(math, _function.name))


# ---------------------------------------------------------------------------------------------
# cmath: one function per row group of compiler/complex_ops.py (the complex128 and complex64 entry points
# whose Python function is ``cmath.<name>``); typing and lowering derived from the rows' MSL types.
# ---------------------------------------------------------------------------------------------

#: The Numba type of each MSL type the complex library's rows name.
_MSL_TYPES = {"nm_c128": types.complex128, "float2": types.complex64, "nm_f64": types.float64,
              "float": types.float32, "bool": types.boolean}


#: cmath.polar's (r, phi): the members of the struct its rows return, by the rows' MSL result type.
_POLAR_MEMBERS = {"nm_f64_pair": ("first", "second"), msl.COMPLEX64: msl.COMPLEX64_PARTS}


def _cmath_rows() -> dict:
    """cmath name -> its rows (those whose types all have a Numba type, and polar's, whose pair is a tuple)."""
    from numba_metal.compiler import complex_ops
    rows: dict = {}
    for row in complex_ops.FUNCTIONS:
        if row.python.startswith("cmath.") and all(t in _MSL_TYPES for t in row.params) and (
                row.result in _MSL_TYPES or row.python == "cmath.polar"):
            rows.setdefault(row.python[len("cmath."):], []).append(row)
    return rows


CMATH = _cmath_rows()


def _cmath_signature(row):
    args = [_MSL_TYPES[p] for p in row.params]
    if row.python == "cmath.polar":  # (abs(z), phase(z)) in z's part type, as Numba's
        return signature(types.UniTuple(args[0].underlying_float, 2), *args)
    return signature(_MSL_TYPES[row.result], *args)


def _register_cmath(name: str, rows) -> None:
    obj = getattr(cmath, name)
    cases = [_cmath_signature(row) for row in rows]
    typing.register_global(obj)(type(f"Cmath_{name}", (ConcreteTemplate,), {"cases": cases}))
    by_args = {tuple(_cmath_signature(row).args): row for row in rows}

    def lower(lc, sig, args):
        row = by_args[tuple(types.unliteral(t) for t in sig.args)]
        params = _cmath_signature(row).args
        call = lc.library_call(row.name, *(lc.cast(a, p) for a, p in zip(args, params)))
        rt = types.unliteral(sig.return_type)
        if row.python == "cmath.polar":
            pair = lc.fresh_name("nm_t")
            lc.declare(msl.declare(row.result, pair))
            lc.emit(msl.assign(pair, call))
            return Value(msl.aggregate(lc.msl_type(rt), [msl.member(pair, m) for m in _POLAR_MEMBERS[row.result]]), rt)
        result = Value(call, _MSL_TYPES[row.result])
        return Value(lc.cast(result, rt), rt)

    lower.__name__ = f"lower_cmath_{name}"
    lowering.call(obj)(lower)


for _name, _rows in CMATH.items():
    _register_cmath(_name, _rows)


def _refusal(name: str, module: str = "math"):
    class Refused(AbstractTemplate):
        def generic(self, args, kws):
            raise UnsupportedFeatureError(f"{module}.{name} is not supported in Metal kernels; the {module} "
                                          "functions kernels may call are listed in docs/supported-features.md")

    Refused.__name__ = f"Math_{name}_unsupported"
    return Refused


for _name in dir(math):
    if not _name.startswith("_") and _name not in F.MATH_BY_NAME and callable(getattr(math, _name)):
        typing.register_global(getattr(math, _name))(_refusal(_name))
for _name in dir(cmath):
    if not _name.startswith("_") and _name not in CMATH and callable(getattr(cmath, _name)):
        typing.register_global(getattr(cmath, _name))(_refusal(_name, "cmath"))


__all__: list[str] = []

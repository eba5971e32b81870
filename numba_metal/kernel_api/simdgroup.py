"""SIMD-group matrices (``metal.simdgroup``): 8x8 float32 or float16 matrices that the 32 threads of a SIMD group
hold and multiply together, MSL's ``simdgroup_float8x8`` and ``simdgroup_half8x8`` (MSL 2.3 and later,
Apple7 GPUs and later). numba.cuda has no counterpart (CUDA C++'s ``nvcuda::wmma`` is the nearest).

A matrix is a value of the kernel, like a scalar: ``load`` makes one from a device or shared (threadgroup)
array, ``fill`` and ``diagonal`` make constant ones, ``multiply`` and ``multiply_accumulate`` return
``a @ b`` and ``a @ b + c``, and ``store`` writes one to an array. Every thread of the SIMD group calls each
operation with the same arguments, under uniform control flow (MSL specification, section 2.4): the
threadgroup's size must be a multiple of 32, and no thread may have left or branched around the call. The
element ``(r, c)`` of a matrix loaded from a 2-D array at ``(row, col)`` is ``array[row + r, col + c]``
(``array[row + c, col + r]`` with ``transpose=True``); a 1-D array is read as rows of ``ld`` elements.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "SIMD-group matrices"

import types as pytypes
from typing import NamedTuple

from numba.core import types
from numba.core.typing.npydecl import parse_dtype
from numba.core.typing.templates import AbstractTemplate, signature

from numba_metal.compiler import msl
from numba_metal.compiler.arrays import debug_name
from numba_metal.compiler.arraytypes import MetalArray
from numba_metal.compiler.declarations import registry as typing
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.matrixtypes import ELEMENT_TYPES, MATRIX_OF, SIDE, SimdgroupMatrix
from numba_metal.errors import UnsupportedFeatureError

from .stubs import Stub


class _Op(NamedTuple):
    """One operation of ``metal.simdgroup``: everything the family knows of it."""

    name: str           # metal.simdgroup.<name>
    params: tuple       # its Python parameters, in order (those after the first `required` have defaults)
    required: int       # how many of them have no default
    msl: str            # the MSL function (Table 6.9 or 6.10 of the specification)
    doc: str


#: Every operation, one row each.
OPERATIONS = (
    _Op("load", ("array", "row", "col", "transpose", "ld"), 1, "simdgroup_load",
        "load(array, row=0, col=0, transpose=False, ld=None): the 8x8 matrix at (row, col) of a device or "
        "shared float32/float16 array (transposed if asked); a 1-D array is read as rows of ld elements "
        "(default 8)"),
    _Op("store", ("matrix", "array", "row", "col", "transpose", "ld"), 2, "simdgroup_store",
        "store(matrix, array, row=0, col=0, transpose=False, ld=None): write the matrix to the array at "
        "(row, col), as load reads it"),
    _Op("multiply_accumulate", ("a", "b", "c"), 3, "simdgroup_multiply_accumulate",
        "multiply_accumulate(a, b, c): the matrix a @ b + c"),
    _Op("multiply", ("a", "b"), 2, "simdgroup_multiply", "multiply(a, b): the matrix a @ b"),
    _Op("fill", ("value", "dtype"), 1, "make_filled_simdgroup_matrix",
        "fill(value, dtype=float32): an 8x8 matrix of dtype (float32 or float16) whose every element is value"),
    _Op("diagonal", ("value", "dtype"), 1, "",
        "diagonal(value, dtype=float32): an 8x8 matrix of dtype with value on its diagonal and 0 elsewhere"),
)

_ROWS = {row.name: row for row in OPERATIONS}
_STUBS = {row.name: Stub(f"simdgroup.{row.name}", row.doc) for row in OPERATIONS}
_ROW_OF = {_STUBS[row.name]: row for row in OPERATIONS}

simdgroup = pytypes.ModuleType("numba_metal.metal.simdgroup", "SIMD-group matrices (8x8, float32 or float16; "
                                                              "MSL's simdgroup_matrix, Apple7 GPUs and later).")
for _name, _stub in _STUBS.items():
    setattr(simdgroup, _name, _stub)


def _refusal(name: str, why: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(f"metal.simdgroup.{name}: {why}")


def _matrix(name: str, what: str, ty) -> SimdgroupMatrix:
    if not isinstance(ty, SimdgroupMatrix):
        raise _refusal(name, f"{what} must be a SIMD-group matrix (from metal.simdgroup.load, fill, diagonal, "
                             f"multiply or multiply_accumulate), not {ty}")
    return ty


def _integer(name: str, what: str, ty) -> None:
    if ty is not None and not isinstance(types.unliteral(ty), types.Integer):
        raise _refusal(name, f"{what} must be an integer, not {ty}")


def _array(name: str, ty, writes: bool) -> types.Array:
    """The array of a load or store: device or threadgroup memory, float32 or float16, 1-D or C-contiguous 2-D."""
    if not isinstance(ty, types.Array):
        raise _refusal(name, f"the array argument must be an array, not {ty}")
    space = ty.address_space if isinstance(ty, MetalArray) else "device"
    if space not in ("device", "threadgroup"):
        raise _refusal(name, "SIMD-group matrices load from and store to device and shared (threadgroup) arrays, "
                             f"not {space} arrays (MSL specification, Table 6.9)")
    if ty.dtype not in ELEMENT_TYPES:
        raise _refusal(name, f"SIMD-group matrices hold float32 or float16, not {ty.dtype}")
    if ty.ndim not in (1, 2):
        raise _refusal(name, f"the array must be 1-D or 2-D, not {ty.ndim}-D")
    if ty.ndim == 2 and ty.layout != "C":
        raise _refusal(name, "a 2-D array must be C-contiguous (its rows one after another, each element next to "
                             "the previous); pass a contiguous array, or a 1-D one with ld=")
    if writes and not ty.mutable:
        raise _refusal(name, "the array is read-only")
    return ty


def _dtype(name: str, ty):
    if ty is None:
        return types.float32
    dtype = parse_dtype(ty)
    if dtype not in ELEMENT_TYPES:
        raise _refusal(name, f"the dtype must be float32 or float16 (np.float32, np.float16), not {ty}")
    return dtype


def _memory_signature(name: str, matrix, array, row, col, transpose, ld):
    """Checks a load's or store's arguments; the matrix type."""
    _integer(name, "row", row)
    _integer(name, "col", col)
    if transpose is not None and not isinstance(types.unliteral(transpose), (types.Boolean, types.Integer)):
        raise _refusal(name, f"transpose must be a bool, not {transpose}")
    if ld is not None and not isinstance(ld, types.NoneType):
        if array.ndim == 2:
            raise _refusal(name, "ld (elements per row) is the 2-D array's own row length; pass ld= only with a "
                                 "1-D array")
        _integer(name, "ld", ld)
    if matrix is not None and matrix.dtype != array.dtype:
        raise _refusal(name, f"a {matrix.dtype} matrix and a {array.dtype} array: convert one of them")
    return MATRIX_OF[array.dtype]


def _typers():
    def load(array, row=None, col=None, transpose=None, ld=None):
        return _memory_signature("load", None, _array("load", array, False), row, col, transpose, ld)

    def store(matrix, array, row=None, col=None, transpose=None, ld=None):
        m = _matrix("store", "the first argument", matrix)
        _memory_signature("store", m, _array("store", array, True), row, col, transpose, ld)
        return types.none

    def multiply_accumulate(a, b, c):
        ms = [_matrix("multiply_accumulate", n, t) for n, t in (("a", a), ("b", b), ("c", c))]
        if len({m.dtype for m in ms}) != 1:
            kinds = ", ".join(str(m.dtype) for m in ms)
            raise _refusal("multiply_accumulate", f"a, b and c must hold one element type, not {kinds}")
        return ms[0]

    def multiply(a, b):
        ms = [_matrix("multiply", n, t) for n, t in (("a", a), ("b", b))]
        if ms[0].dtype != ms[1].dtype:
            raise _refusal("multiply", f"a and b must hold one element type, not {ms[0].dtype} and {ms[1].dtype}")
        return ms[0]

    def constant(name):
        def typer(value, dtype=None):
            if not isinstance(types.unliteral(value), (types.Integer, types.Float, types.Boolean)):
                raise _refusal(name, f"the value must be a number, not {value}")
            return MATRIX_OF[_dtype(name, dtype)]
        return typer

    return {"load": load, "store": store, "multiply_accumulate": multiply_accumulate, "multiply": multiply,
            "fill": constant("fill"), "diagonal": constant("diagonal")}


def _register():
    for name, typer in _typers().items():
        class Template(AbstractTemplate):
            key = _STUBS[name]

            def generic(self, args, kws, _typer=typer, _row=_ROWS[name]):
                # Keywords may skip parameters (load(a, transpose=True)), which Numba's CallableTemplate
                # cannot fold: the lowering folds them itself (_arguments), by name.
                unknown = set(kws) - set(_row.params) or set(kws) & set(_row.params[:len(args)])
                if unknown or len(args) > len(_row.params) or len(args) + len(kws) < _row.required:
                    params = ", ".join(_row.params)
                    raise _refusal(_row.name, f"takes ({params}), the first {_row.required} required; got "
                                              f"{len(args)} positional argument(s) and {sorted(kws) or 'no'} keywords")
                return signature(_typer(*args, **kws), *args)

        Template.__name__ = f"Metal_simdgroup_{name}"
        typing.register_global(_STUBS[name], types.Function(Template))


_register()


# -- lowering ----------------------------------------------------------------------------------------------------

def _arguments(lc, row: _Op, args, kws) -> dict:
    """The call's arguments by parameter name (keywords folded in); omitted ones are absent."""
    named = dict(zip(row.params, args))
    for key, value in kws.items():
        named[key] = value
    return named


def _operand(lc, value: Value) -> str:
    """A matrix as MSL's functions take it (a ``thread`` reference): a variable, copied to one if needed."""
    if value.expr.isidentifier():
        return value.expr
    return lc.tmp(value.type, value.expr)


def _is_given(value) -> bool:
    return value is not None and not isinstance(types.unliteral(value.type), (types.NoneType, types.Omitted))


def _memory_arguments(lc, named: dict, array: Value) -> list[str]:
    """Pointer, elements per row, origin and transposition of a load or store, as MSL takes them."""
    zero = msl.cast("ulong", msl.long_literal(0))
    row = lc.cast(named["row"], types.uint64) if _is_given(named.get("row")) else zero
    col = lc.cast(named["col"], types.uint64) if _is_given(named.get("col")) else zero
    if array.type.ndim == 2:
        ld = msl.member(array.expr, "strides")   # nm_arr's strides, in elements; the last is 1 (C layout)
        ld = msl.cast("ulong", msl.index(ld, 0))
    elif _is_given(named.get("ld")):
        ld = lc.cast(named["ld"], types.uint64)
    else:
        ld = msl.cast("ulong", msl.long_literal(SIDE))
    transpose = lc.cast(named["transpose"], types.boolean) if _is_given(named.get("transpose")) else msl.FALSE
    # matrix_origin is (x, y) = (element within a row, row) of the memory layout.
    origin = msl.call("ulong2", col, row)
    return [msl.member(array.expr, "data"), ld, origin, transpose]


def _in_bounds(lc, row: _Op, named: dict) -> str | None:
    """With ``debug=True``, the condition that the 8x8 tile lies inside the array (its first and last elements
    checked per axis, reported as any out-of-bounds index is); the operation is skipped otherwise. The arguments
    are the same on every lane, so the skip keeps the SIMD group's control flow uniform."""
    if not lc.debug:
        return None
    array = named["array"]
    position = row.params.index("array")
    var = lc.call.args[position] if position < len(lc.call.args) else dict(lc.call.kws)["array"]
    ident = msl.uint_literal(lc.array_id(debug_name(var)))
    line = msl.uint_literal(lc.line())
    lc.need("nm_in_bounds")

    def at(name):
        value = named.get(name)
        return lc.tmp(types.int64, lc.cast(value, types.int64) if _is_given(value) else msl.long_literal(0))

    def last(first):
        return msl.binary("+", first, msl.long_literal(SIDE - 1))

    def check(index, axis):
        extent = msl.index(msl.member(array.expr, "shape"), axis)
        return msl.call("nm_in_bounds", index, extent, msl.ENV_PARAM, ident, msl.uint_literal(axis), line)

    r, c = at("row"), at("col")
    if array.type.ndim == 2:
        checks = [check(r, 0), check(last(r), 0), check(c, 1), check(last(c), 1)]
    else:
        ld = lc.tmp(types.int64, lc.cast(named["ld"], types.int64) if _is_given(named.get("ld"))
                    else msl.long_literal(SIDE))
        first = msl.binary("+", msl.binary("*", r, ld), c)
        checks = [check(first, 0), check(last(msl.binary("+", msl.binary("*", last(r), ld), c)), 0)]
    return msl.all_of(checks)


def _guarded(lc, condition: str | None, statement: str) -> None:
    lc.emit(statement if condition is None else msl.if_statement(condition, statement))


lowering.reads_only(_STUBS["load"])


@lowering.call(_STUBS["load"])
def _lower_load(lc, sig, args, **kws):
    row = _ROWS["load"]
    named = _arguments(lc, row, args, kws)
    out = lc.tmp(sig.return_type)
    call = msl.call(row.msl, out, *_memory_arguments(lc, named, named["array"]))
    _guarded(lc, _in_bounds(lc, row, named), msl.statement(call))
    return Value(out, sig.return_type)


@lowering.call(_STUBS["store"])
def _lower_store(lc, sig, args, **kws):
    row = _ROWS["store"]
    named = _arguments(lc, row, args, kws)
    matrix = _operand(lc, named["matrix"])
    call = msl.call(row.msl, matrix, *_memory_arguments(lc, named, named["array"]))
    _guarded(lc, _in_bounds(lc, row, named), msl.statement(call))
    return Value("", types.none)


@lowering.call(_STUBS["multiply_accumulate"], _STUBS["multiply"])
def _lower_multiply(lc, sig, args, **kws):
    row = _ROW_OF[lc.callee]
    named = _arguments(lc, row, args, kws)
    operands = [_operand(lc, named[p]) for p in row.params]
    out = lc.tmp(sig.return_type)
    lc.emit(msl.statement(msl.call(row.msl, out, *operands)))
    return Value(out, sig.return_type)


@lowering.call(_STUBS["fill"], _STUBS["diagonal"])
def _lower_constant(lc, sig, args, **kws):
    row = _ROW_OF[lc.callee]
    named = _arguments(lc, row, args, kws)
    rt = sig.return_type
    element = lc.msl_type(rt.dtype)
    value = lc.cast(named["value"], rt.dtype)
    if row.name == "fill":
        made = msl.call(msl.template(row.msl, element, SIDE, SIDE), value)
    else:   # Table 6.9's constructor simdgroup_matrix<T, Cols, Rows>(T dval): a diagonal matrix
        made = msl.cast(lc.msl_type(rt), value)
    return Value(lc.tmp(rt, made), rt)


__all__ = ["simdgroup"]

"""Slices and views of arrays in MSL: Numba's basic indexing (``x[1:-1]``, ``x[::-1]``, ``m[i]``,
``m[1:3, ::2]``, ``m[:, j]``, ``m[..., 0]``, ``x[None, :]``) and iteration over arrays.

Numba types these (``numba.core.typing.arraydecl.get_array_index_type``): a result that keeps axes is an
array of the same address space (``arraytypes.MetalArray.copy``) with layout ``C`` or ``A``. Here the
view is built: an ``nm_arr`` value over the same memory (never a copy) whose data pointer is moved to the
first element and whose shape and strides (in elements) are those of the kept axes, a slice's stride
multiplied by its step. Slice bounds are wrapped and clamped as Python's are (prelude ``nm_slice_fix``,
Numba's ``fix_slice``), so a slice never goes out of bounds; the integer indices of a view are wrapped and,
with ``debug=True``, bounds-checked as element indexing is (``arrays.py`` computes them): an out-of-bounds
one is reported and the view is empty. A step of 0 raises ``ValueError`` as in Numba.

A slice value (``slice(a, b, c)``, or ``a:b:c`` in an index) is an ``nm_slice``: start, stop and step with
the bounds left out filled in from the step's sign, as Numba's slice constructor does.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import NamedTuple

from numba.core import ir, types

from numba_metal.errors import UnsupportedFeatureError

from . import kernel_io, msl
from .lowering import Value

_LONG_MAX = (1 << 63) - 1
_LONG_MIN = -(1 << 63)

#: The Numba type whose MSL spelling is ``nm_slice`` (every slice type is).
SLICE = types.slice3_type


class Part(NamedTuple):
    """One item of an index: ``kind`` is ``int``, ``slice``, ``newaxis`` or ``ellipsis``; ``value`` the
    item's value (int, slice), ``step`` a slice's step when known at compile time (else None), ``full``
    True for a slice taking the whole axis (``:``), ``position`` the item's place in the index tuple and
    ``axis`` the array axis it applies to (set by :func:`place`)."""

    kind: str
    value: Value | None = None
    step: int | None = None
    full: bool = False
    position: int = 0
    axis: int = -1


def is_compile_time_index(ty) -> bool:
    """A tuple type holding ``None`` (newaxis) or ``...`` among integers and slices: an index that exists
    only at compile time (its items are read from its ``build_tuple``)."""
    items = [types.unliteral(t) for t in ty.types]
    return (any(isinstance(t, (types.NoneType, types.EllipsisType)) for t in items)
            and all(isinstance(t, (types.NoneType, types.EllipsisType, types.SliceType, types.Integer))
                    for t in items))


def _is_index_item(ty) -> bool:
    return isinstance(types.unliteral(ty), (types.SliceType, types.NoneType, types.EllipsisType))


# -- slice values ------------------------------------------------------------------------------


def _defaults(step_negative) -> tuple[str, str]:
    """(start, stop) of a slice whose bounds are left out: Numba's slice constructor's defaults."""
    if isinstance(step_negative, bool):
        return ((msl.long_literal(_LONG_MAX), msl.long_literal(_LONG_MIN)) if step_negative else
                (msl.long_literal(0), msl.long_literal(_LONG_MAX)))
    return (msl.select(step_negative, msl.long_literal(_LONG_MAX), msl.long_literal(0)),
            msl.select(step_negative, msl.long_literal(_LONG_MIN), msl.long_literal(_LONG_MAX)))


def _make(lc, start: str | None, stop: str | None, step: str | None, step_negative) -> Value:
    default_start, default_stop = _defaults(step_negative)
    items = [default_start if start is None else start, default_stop if stop is None else stop,
             msl.long_literal(1) if step is None else step]
    lc.need("slice")
    return Value(msl.aggregate(lc.msl_type(SLICE), items), SLICE)


def constant_slice(lc, s: slice) -> Value:
    """The value of a Python slice constant (an index of a ``static_getitem``)."""
    for bound in (s.start, s.stop, s.step):
        if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool)):
            lc.error(f"slice bounds must be integers or None in Metal kernels, not {bound!r}")
    if s.step == 0:
        lc.error("slice step cannot be zero")
    lit = [None if b is None else msl.long_literal(b) for b in (s.start, s.stop, s.step)]
    return _make(lc, *lit, step_negative=s.step is not None and s.step < 0)


def lower_slice_call(lc, sig, args) -> Value:
    """``slice(stop)``, ``slice(start, stop)`` or ``slice(start, stop, step)``; ``None`` leaves a bound out."""
    if len(args) == 1:
        args = [None, args[0], None]
    present = [a if a is not None and not isinstance(types.unliteral(a.type), types.NoneType) else None
               for a in args] + [None] * (3 - len(args))
    for a in present:
        if a is not None and not isinstance(types.unliteral(a.type), types.Integer):
            lc.error(f"slice bounds must be integers or None in Metal kernels, not {a.type}")
    start, stop, step = (None if a is None else lc.cast(a, types.int64) for a in present)
    step_value = present[2]
    if step_value is None:
        negative = False
    elif isinstance(step_value.type, types.IntegerLiteral):
        negative = step_value.type.literal_value < 0
    else:
        step = lc.tmp(types.int64, step)
        negative = msl.binary("<", step, msl.long_literal(0))
    return _make(lc, start, stop, step, negative)


def _known_step(lc, var) -> int | None:
    """The step of the slice variable ``var`` when its ``slice(...)`` call has a constant one (or none)."""
    d = lc.definition(var) if isinstance(var, ir.Var) else None
    if not (isinstance(d, ir.Expr) and d.op == "call"):
        return None
    try:
        if lc.resolve(d.func) is not slice:
            return None
    except UnsupportedFeatureError:   # not a call of a function known at compile time: the step is unknown
        return None
    if len(d.args) < 3:
        return 1
    ty = lc.typemap.get(d.args[2].name)
    if isinstance(ty, types.NoneType):
        return 1
    return ty.literal_value if isinstance(ty, types.IntegerLiteral) else None


# -- index items -------------------------------------------------------------------------------


def _part_of_value(lc, value: Value, var, position: int) -> Part:
    ty = types.unliteral(value.type)
    if isinstance(ty, types.SliceType):
        return Part("slice", value, _known_step(lc, var), position=position)
    if isinstance(ty, types.NoneType):
        return Part("newaxis", position=position)
    if isinstance(ty, types.EllipsisType):
        return Part("ellipsis", position=position)
    if isinstance(ty, (types.Integer, types.Boolean)):
        return Part("int", Value(value.expr, value.type), position=position)
    lc.error(f"arrays cannot be indexed with {value.type} in Metal kernels (integers, slices, None and ... "
             "can)")


def parts_of_variable(lc, var) -> list[Part] | None:
    """The items of an index held by the variable ``var`` (a slice, or a tuple holding slices, None or
    ...), or None if it holds only integers (element or partial indexing)."""
    ty = types.unliteral(lc.typemap[var.name])
    if isinstance(ty, types.BaseTuple):
        if not any(_is_index_item(t) for t in ty.types):
            return None
        if is_compile_time_index(ty):
            d = lc.definition(var)
            if not (isinstance(d, ir.Expr) and d.op == "build_tuple"):
                lc.error("an index holding None or ... must be written in the subscript (x[i, None])")
            return [_part_of_value(lc, lc.value(v), v, k) for k, v in enumerate(d.items)]
        tup = lc.value(var)
        d = lc.definition(var)
        items = d.items if isinstance(d, ir.Expr) and d.op == "build_tuple" else [None] * len(ty)
        return [_part_of_value(lc, Value(msl.member(tup.expr, msl.tuple_field(k)), t), items[k], k)
                for k, t in enumerate(ty.types)]
    if not _is_index_item(ty):
        return None
    return [_part_of_value(lc, lc.value(var), var, 0)]


def parts_of_constant(lc, const) -> list[Part] | None:
    """The items of a constant index (a ``static_getitem``'s), or None if it has no slice, None or ...."""
    items = const if isinstance(const, tuple) else (const,)
    if not any(c is None or c is Ellipsis or isinstance(c, slice) for c in items):
        return None
    parts = []
    for k, c in enumerate(items):
        if isinstance(c, slice):
            full = c.start is None and c.stop is None and c.step in (None, 1)
            parts.append(Part("slice", constant_slice(lc, c), 1 if c.step is None else c.step, full, k))
        elif c is None:
            parts.append(Part("newaxis", position=k))
        elif c is Ellipsis:
            parts.append(Part("ellipsis", position=k))
        elif isinstance(c, int) and not isinstance(c, bool):
            parts.append(Part("int", Value(msl.long_literal(c), types.IntegerLiteral(c)), position=k))
        else:
            lc.error(f"arrays cannot be indexed with {c!r} in Metal kernels (integers, slices, None and ... can)")
    return parts


def place(lc, parts: list[Part], ndim: int) -> list[Part]:
    """The parts with ``...`` expanded into whole-axis slices and the axes left out appended as such, each
    part given the array axis it applies to."""
    consuming = sum(p.kind in ("int", "slice") for p in parts)
    if sum(p.kind == "ellipsis" for p in parts) > 1:
        lc.error("an index can only have a single ellipsis ('...')")
    if consuming > ndim:
        lc.error(f"too many indices ({consuming}) for a {ndim}-d array")
    whole = [Part("slice", None, 1, True) for _ in range(ndim - consuming)]
    expanded = []
    for p in parts:
        if p.kind == "ellipsis":
            expanded.extend(whole)
            whole = []
        else:
            expanded.append(p)
    expanded.extend(whole)
    placed, axis = [], 0
    for p in expanded:
        if p.kind == "newaxis":
            placed.append(p)
        else:
            placed.append(p._replace(axis=axis))
            axis += 1
    return placed


# -- views -------------------------------------------------------------------------------------


def _raise_if_zero_step(lc, step: str) -> None:
    """Numba's ``guard_invalid_slice``: ``ValueError('slice step cannot be zero')`` at run time."""
    lc.emit(msl.if_(msl.binary("==", step, msl.long_literal(0))))
    term = SimpleNamespace(exc_class=ValueError, exc_args=("slice step cannot be zero",), loc=lc.loc)
    kernel_io.lower_raise(lc, term)
    lc.emit(msl.END)


def view(lc, arr: Value, parts: list[Part], comps: list[str], cond: str | None, result_ty) -> Value:
    """The view ``arr[parts]`` (placed parts, see :func:`place`); ``comps``: the wrapped index expression of
    each ``int`` part in order, ``cond`` the debug-mode condition that they are all in bounds."""
    aty = arr.type
    n = aty.ndim
    data = msl.member(arr.expr, "data")
    terms, shape, strides = [], [], []
    ints = iter(comps)
    for p in parts:
        if p.kind == "newaxis":
            shape.append(msl.long_literal(1))
            strides.append(msl.long_literal(0))
            continue
        extent = msl.index(msl.member(arr.expr, "shape"), p.axis)
        stride = msl.index(msl.member(arr.expr, "strides"), p.axis)
        unit = (aty.layout == "F" and p.axis == 0) or (aty.layout == "C" and p.axis == n - 1)
        if p.kind == "int":
            i = next(ints)
            terms.append(i if unit else msl.binary("*", i, stride))
            continue
        if p.full:
            shape.append(extent)
            strides.append(stride)
            continue
        fixed = lc.tmp(SLICE, msl.call("nm_slice_fix", p.value.expr, extent))
        if p.step is None:
            _raise_if_zero_step(lc, msl.member(fixed, "step"))
        start = msl.member(fixed, "start")
        terms.append(start if unit else msl.binary("*", start, stride))
        shape.append(msl.member(fixed, "stop"))
        if p.step == 1:
            strides.append(stride)
        elif p.step is not None:
            strides.append(msl.binary("*", stride, msl.long_literal(p.step)))
        else:
            strides.append(msl.binary("*", stride, msl.member(fixed, "step")))
    if terms:
        offset = msl.sum_of(terms)
        if cond:
            offset = msl.select(cond, offset, msl.long_literal(0))
        data = msl.binary("+", data, offset)
    if cond:
        # An out-of-bounds index (reported already) gives an empty view, which nothing can write through.
        shape = [msl.select(cond, s, msl.long_literal(0)) for s in shape]
    return Value(msl.aggregate(lc.msl_type(result_ty), [data, msl.braces(shape), msl.braces(strides)]), result_ty)


# -- iteration over arrays ---------------------------------------------------------------------


def lower_getiter(lc, arr: Value, iter_ty) -> Value:
    """``iter(arr)``: the array and the position of the next item."""
    return Value(msl.aggregate(lc.msl_type(iter_ty), [arr.expr, msl.long_literal(0)]), iter_ty)


def lower_iternext(lc, it: Value, pair_ty) -> Value:
    """``next(it)`` of an array iterator: ``arr[i]`` (an element, or a view of the other axes) while
    ``i < len(arr)``, as Numba's array iterator yields."""
    aty = it.type.array_type
    arr = Value(msl.member(it.expr, "a"), aty)
    position = msl.member(it.expr, "i")
    pair = lc.tmp(pair_ty)
    valid = msl.member(pair, "second")
    lc.emit(msl.assign(valid, msl.binary("<", position, msl.index(msl.member(arr.expr, "shape"), 0))))
    yield_ty = pair_ty.first_type
    if aty.ndim == 1:
        stride = msl.index(msl.member(arr.expr, "strides"), 0)
        offset = position if aty.layout in ("C", "F") else msl.binary("*", position, stride)
        item = Value(lc.load(aty.dtype, msl.index(msl.member(arr.expr, "data"), offset)), aty.dtype)
    else:
        item = view(lc, arr, place(lc, [Part("int")], aty.ndim), [position], None, yield_ty)
    advance = (msl.assign(msl.member(pair, "first"), lc.cast(item, yield_ty)),
               msl.add_assign(position, msl.long_literal(1)))
    lc.emit(msl.if_statement(valid, " ".join(advance)))
    return Value(pair, pair_ty)

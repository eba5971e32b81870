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

from . import kernel_io, msl, sanitize
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
    lc.need("nm_slice")
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


def _raise_if(lc, condition: str, message: str) -> None:
    """``raise ValueError(message)`` at run time where ``condition`` holds (kernel_io: reported with
    ``debug=True``; the thread stops)."""
    lc.emit(msl.if_(condition))
    kernel_io.lower_raise(lc, SimpleNamespace(exc_class=ValueError, exc_args=(message,), loc=lc.loc))
    lc.emit(msl.END)


def _raise_if_zero_step(lc, step: str) -> None:
    """Numba's ``guard_invalid_slice``: ``ValueError('slice step cannot be zero')`` at run time."""
    _raise_if(lc, msl.binary("==", step, msl.long_literal(0)), "slice step cannot be zero")


def view_type(aty, parts: list[Part]):
    """The type of ``aty[parts]`` as Numba's typing gives it, in layout 'A' (an assignment's target, which
    has no variable): the element type when no axis is kept."""
    ndim = sum(p.kind in ("slice", "newaxis") for p in parts)
    return aty.copy(ndim=ndim, layout="A") if ndim else aty.dtype


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


# -- slice assignment --------------------------------------------------------------------------


def _extent(arr: Value, k: int) -> str:
    return msl.index(msl.member(arr.expr, "shape"), k)


def _step(arr: Value, k: int) -> str:
    return msl.index(msl.member(arr.expr, "strides"), k)


def _span(lc, arr: Value) -> tuple[str, str]:
    """Pointers to the lowest and the highest element of the non-empty array ``arr``."""
    low, high = [], []
    for k in range(arr.type.ndim):
        reach = msl.binary("*", msl.binary("-", _extent(arr, k), msl.long_literal(1)), _step(arr, k))
        low.append(msl.call("min", msl.long_literal(0), reach))
        high.append(msl.call("max", msl.long_literal(0), reach))
    data = msl.member(arr.expr, "data")
    return msl.binary("+", data, msl.sum_of(low)), msl.binary("+", data, msl.sum_of(high))


def _may_overlap(lc, dst: Value, src: Value) -> str | None:
    """The run-time condition that ``src`` and ``dst`` share memory without being the same elements, or
    None where they cannot (other address spaces or element types)."""
    if (getattr(dst.type, "address_space", None) != getattr(src.type, "address_space", None)
            or dst.type.dtype != src.type.dtype or not dst.type.ndim or not src.type.ndim):
        return None
    dlo, dhi = _span(lc, dst)
    slo, shi = _span(lc, src)
    touching = msl.all_of([msl.binary("<=", dlo, shi), msl.binary("<=", slo, dhi)])
    nonempty = msl.all_of([msl.binary(">", _extent(a, k), msl.long_literal(0))
                           for a in (dst, src) for k in range(a.type.ndim)])
    same = [msl.binary("==", msl.member(dst.expr, "data"), msl.member(src.expr, "data"))]
    if dst.type.ndim == src.type.ndim:
        same += [msl.binary("==", _step(dst, k), _step(src, k)) for k in range(dst.type.ndim)]
    return msl.all_of([nonempty, touching, msl.unary("!", msl.all_of(same))])


def assign(lc, dst: Value, value: Value, name: str = "?") -> None:
    """``dst[...] = value`` for a view ``dst``: a scalar stored in every element, or an array broadcast to
    ``dst``'s shape by NumPy's rules (else ``ValueError``, Numba's message), element by element in C order.
    A source sharing memory with ``dst`` (``x[1:] = x[:-1]``) raises ``ValueError``: Numba copies it
    first, which needs memory a kernel cannot allocate."""
    dty = dst.type
    dst = Value(lc.tmp(dty, dst.expr), dty)
    vty = types.unliteral(value.type)
    if not isinstance(vty, (types.Array, types.Number, types.Boolean)):
        lc.error(f"a slice can be assigned an array or a number in Metal kernels, not {vty}")
    loops = [lc.fresh_name("nm_i") for _ in range(dty.ndim)]
    if isinstance(vty, types.Array):
        if vty.ndim > dty.ndim:
            lc.error(f"cannot assign a {vty.ndim}-d array to a {dty.ndim}-d slice")
        src = Value(lc.tmp(vty, value.expr), vty)
        lead = dty.ndim - vty.ndim
        mismatch, terms = [], []
        for k in range(vty.ndim):
            extent = _extent(src, k)
            ones = msl.binary("==", extent, msl.long_literal(1))
            mismatch.append(msl.all_of([msl.binary("!=", extent, _extent(dst, lead + k)), msl.unary("!", ones)]))
            stride = lc.tmp(types.int64, msl.select(ones, msl.long_literal(0), _step(src, k)))
            terms.append(msl.binary("*", loops[lead + k], stride))
        if mismatch:
            _raise_if(lc, msl.unary("!", msl.all_of([msl.unary("!", m) for m in mismatch])),
                      "cannot assign slice from input of different size")
        overlap = _may_overlap(lc, dst, src)
        if overlap is not None:
            _raise_if(lc, overlap, "the source of a slice assignment shares memory with its destination; "
                                   "numba-metal kernels cannot copy it first (copy it to a local or shared array)")
        element = msl.index(msl.member(src.expr, "data"), msl.sum_of(terms) if terms else msl.long_literal(0))
        item = Value(lc.load(vty.dtype, element), vty.dtype)
    else:
        item = Value(lc.tmp(dty.dtype, lc.cast(value, dty.dtype)), dty.dtype)
    for k, i in enumerate(loops):
        lc.emit(msl.for_count(i, _extent(dst, k)))
    offset = msl.sum_of([msl.binary("*", i, _step(dst, k)) for k, i in enumerate(loops)])
    element = msl.index(msl.member(dst.expr, "data"), offset)
    # the kernel sanitizer sees each element written (its index in the view ``name[...]`` was sliced to)
    sanitize.access(lc, getattr(dty, "address_space", None), msl.address_of(element), loops, sanitize.WRITE, name)
    lc.emit(msl.assign(element, lc.store(dty.dtype, lc.cast(item, dty.dtype))))
    for _ in loops:
        lc.emit(msl.END)

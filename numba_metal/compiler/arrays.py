"""Array and tuple indexing, and array attributes, in MSL.

Arrays are ``nm_arr<P, N>`` values (element pointer, shape and strides in elements). Index arithmetic
is 64-bit (32-bit into threadgroup, thread and constant arrays), negative indices wrap around as in
Python (except indices the value-range analysis, ``ranges.py``, proves never negative), and with
``debug=True`` every access is bounds-checked: the first violation is recorded for the host and the
access is skipped.
"""

from __future__ import annotations

import operator

from numba.core import ir, types

from . import conversions, msl, ranges, sanitize, slicing
from .lowering import Value


def _shape(arr: Value, k: int) -> str:
    return msl.index(msl.member(arr.expr, "shape"), k)


def _stride(arr: Value, k: int) -> str:
    return msl.index(msl.member(arr.expr, "strides"), k)


def _data(arr: Value) -> str:
    return msl.member(arr.expr, "data")


def array_value(lc, rt, data: str, shape, strides=None) -> Value:
    """An array value of type ``rt`` over ``data`` (a pointer expression) with ``shape`` (ints or
    expressions) and ``strides`` (expressions; C order when omitted)."""
    static = None
    if strides is None:
        strides = [msl.long_literal(s) for s in _c_strides(shape)]
        if all(isinstance(s, int) for s in shape):
            static = tuple(_c_strides(shape))
    shape = [msl.long_literal(s) if isinstance(s, int) else s for s in shape]
    value = Value(msl.aggregate(lc.msl_type(rt), [data, msl.braces(shape), msl.braces(strides)]), rt)
    if static is not None:
        lc.note_static_strides(value.expr, static)
    return value


def _c_strides(shape) -> list[int]:
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return list(reversed(strides))


def _index_values(lc, index: Value) -> list[Value] | None:
    """The integer components of an index value, or None if it is not integer indexing."""
    ty = types.unliteral(index.type)
    if isinstance(ty, (types.Integer, types.Boolean)):
        return [Value(index.expr, ty)]
    if isinstance(ty, types.BaseTuple) and all(isinstance(types.unliteral(t), types.Integer) for t in ty.types):
        return [Value(msl.member(index.expr, msl.tuple_field(k)), types.unliteral(t)) for k, t in enumerate(ty.types)]
    return None


def _literal_index_values(lc, const) -> list[Value] | None:
    if isinstance(const, bool):
        return None
    if isinstance(const, int):
        return [Value(msl.long_literal(const), types.IntegerLiteral(const))]
    if isinstance(const, tuple) and all(isinstance(c, int) and not isinstance(c, bool) for c in const):
        return [Value(msl.long_literal(c), types.IntegerLiteral(c)) for c in const]
    return None


def _static_index_values(lc, index_var, const) -> list[Value] | None:
    """Index components of a static_getitem/static_setitem: the typed index variable if Numba kept
    one, else the constant itself."""
    if index_var is not None and index_var.name in lc.typemap:
        idx = _index_values(lc, lc.value(index_var))
        if idx is not None:
            return idx
    return _literal_index_values(lc, const)


def _array_name(var: ir.Var) -> str:
    name = var.name
    if name.startswith("$") or "." in name:
        name = name.lstrip("$").split(".")[0]
    return name


def _nonnegative(lc, var) -> list[bool]:
    """Per component of the index variable ``var`` (None: a constant index): proven never negative."""
    return [] if var is None else lc.nonnegative_index(var)


#: Address spaces whose arrays hold fewer than 2**31 elements (their sizes are compile-time limits: 32 KB
#: of threadgroup memory, 8 KB per thread, 64 KB of constants), so an in-bounds element offset fits in 32 bits.
_SMALL_SPACES = ("threadgroup", "thread", "constant")


def narrow_type(lc, ty) -> bool:
    """Index arrays of type ``ty`` in 32-bit arithmetic (issue 28 item 1): arrays whose size is bounded at
    compile time, and device arrays the launch knows are small (``arraytypes.Index32Array``): an in-bounds
    index component and the element offset fit in a signed 32-bit ``int``, and an out-of-bounds access is
    undefined with or without the truncation. Not with ``debug=True`` (or the sanitizer's bounds check),
    whose bounds checks report the index as the program computed it. Not for a view of layout 'A' either (``x[::-1]``, made in the kernel),
    whose strides may be negative: only C- and F-contiguous layouts are proven to have none."""
    return not lc.module.bounds_checked and ty.layout in ("C", "F") and (getattr(ty, "address_space", None) in _SMALL_SPACES
                                                          or getattr(ty, "index32", False))


def narrow_access(lc, aty, index_var) -> bool:
    """Index ``aty`` with ``index_var`` (None: constants or an index without a variable) in 32 bits. A device
    array's components must also be proven in ``[0, 2**32)`` (compiler/ranges.py), so that the 32-bit
    component is the program's value and an index far out of bounds (``a[i + 2**40]``) stays out of bounds
    instead of wrapping into them; a shared, local or constant array's are truncated (sizes bounded at
    compile time: an out-of-bounds access is undefined either way)."""
    if not narrow_type(lc, aty):
        return False
    if not getattr(aty, "index32", False):
        return True
    return index_var is not None and all(lc.uint32_index(index_var))


def _narrow(lc, arr: Value, index_var=None) -> bool:
    return narrow_access(lc, arr.type, index_var)


def _components(lc, arr: Value, idx: list[Value], arrname: str, nonneg=(), narrow: bool = False, axes=None):
    """Wrapped 64-bit index expressions per axis (not wrapped where ``nonneg[k]``: proven never negative),
    plus the debug-mode in-bounds condition; with ``narrow``, 32-bit ``uint`` expressions. ``axes``: the
    axis each index applies to (default: the first ones, in order)."""
    if narrow:
        return _narrow_components(lc, arr, idx, nonneg), None
    comps = []
    checks = []
    for j, v in enumerate(idx):
        k = j if axes is None else axes[j]
        extent = _shape(arr, k)
        ty = v.type
        if isinstance(ty, types.IntegerLiteral) and ty.literal_value >= 0:
            i = msl.long_literal(ty.literal_value)
        elif isinstance(ty, types.IntegerLiteral):
            i = msl.binary("-", extent, msl.long_literal(-ty.literal_value))
        elif isinstance(ty, types.Integer) and not ty.signed or j < len(nonneg) and nonneg[j]:
            i = msl.cast("long", v.expr)
        else:
            lc.need("nm_wrap")
            i = msl.call("nm_wrap", msl.cast("long", v.expr), extent)
        if lc.module.bounds_checked:
            i = lc.tmp(types.int64, i)
            lc.need("nm_in_bounds")
            checks.append(msl.call("nm_in_bounds", i, extent, msl.ENV_PARAM, msl.uint_literal(lc.array_id(arrname)),
                                   msl.uint_literal(k), msl.uint_literal(lc.line())))
        comps.append(i)
    return comps, (msl.all_of(checks) if checks else None)


def _narrow_components(lc, arr: Value, idx: list[Value], nonneg) -> list[str]:
    comps = []
    for k, v in enumerate(idx):
        extent = msl.cast("int", _shape(arr, k))
        ty = v.type
        if isinstance(ty, types.IntegerLiteral) and ty.literal_value >= 0:
            i = msl.uint_literal(ty.literal_value)
        elif isinstance(ty, types.Integer) and not ty.signed or k < len(nonneg) and nonneg[k]:
            i = v.expr if lc.is_index32(v.expr) else msl.cast("uint", v.expr)
        else:
            lc.need("nm_wrap")
            i = msl.cast("uint", msl.call("nm_wrap", msl.cast("int", v.expr), extent))
        comps.append(i)
    return comps


def _offset(lc, arr: Value, comps: list[str], full: bool = True, narrow: bool = False) -> str:
    """The element offset of ``arr[comps]``: unit stride on the contiguous axis of a C (full index) or F
    array is not multiplied; the strides of an array whose shape is fixed at compile time (a shared, local
    or constant array) are constants."""
    aty = arr.type
    n = aty.ndim
    static = lc.static_strides(arr.expr)
    terms = []
    for k, i in enumerate(comps):
        unit = (full and aty.layout == "C" and k == n - 1) or (aty.layout == "F" and k == 0)
        if static is not None:
            unit = unit or static[k] == 1
            stride = msl.uint_literal(static[k]) if narrow else msl.long_literal(static[k])
        else:
            stride = msl.cast("uint", _stride(arr, k)) if narrow else _stride(arr, k)
        terms.append(i if unit else msl.binary("*", i, stride))
    if not terms:
        return msl.uint_literal(0) if narrow else msl.long_literal(0)
    if narrow and aty.layout == "A":
        return msl.cast("int", msl.sum_of(terms))   # strides may be negative: the offset is a signed int
    return msl.sum_of(terms)


def _split(lc, var: ir.Var):
    """``(v, d, position)`` where ``var``'s only assignment, at ``position`` of the block being lowered, is
    ``v + d`` or ``v - (-d)`` for a variable ``v`` and an integer literal ``d``; else ``(var, 0, None)``."""
    found = lc.defined_here(var.name)
    if found is not None and isinstance(found[1], ir.Expr) and found[1].op in ("binop", "inplace_binop"):
        d = found[1]
        fn = d.fn if d.op == "binop" else d.immutable_fn
        rhs = lc.typemap.get(d.rhs.name)
        lhs = lc.typemap.get(d.lhs.name)
        if fn in (operator.add, operator.sub) and isinstance(rhs, types.IntegerLiteral) and \
                isinstance(lhs, types.Integer) and not isinstance(lhs, types.IntegerLiteral):
            return d.lhs, rhs.literal_value if fn is operator.add else -rhs.literal_value, found[0]
        if fn is operator.add and isinstance(lhs, types.IntegerLiteral) and isinstance(rhs, types.Integer) and \
                not isinstance(rhs, types.IntegerLiteral):
            return d.rhs, lhs.literal_value, found[0]
    return var, 0, None


def _shared_row_offset(lc, arr: Value, index_var, nonneg) -> str | None:
    """The element (an MSL lvalue) at the 32-bit element offset of a full index ``(v0 + d0, ..., vn + dn)`` (``dk`` integer literals, every
    component proven non-negative) into a C-contiguous array (issue 28 item 4): the row offset
    ``v0 * s0 + ... + vn`` is computed once per array and variables in a block of straight-line code and
    shared by the subscripts that differ only in their constants (a stencil's neighbours), each adding
    ``d0 * s0 + ... + dn``; the arrays of one stride group (``Index32Array.strides_of``: the launch knows
    their strides are equal) share it too. Exact: the offset is the same sum modulo 2**32, and an in-bounds
    one is below 2**31. None where it does not apply."""
    aty = arr.type
    if index_var is None or aty.layout != "C" or aty.ndim < 2 or len(nonneg) != aty.ndim or not all(nonneg):
        return None
    found = lc.defined_here(index_var.name)
    if found is None or not (isinstance(found[1], ir.Expr) and found[1].op == "build_tuple"
                             and len(found[1].items) == aty.ndim):
        return None
    split = [_split(lc, item) for item in found[1].items]
    # the tuple and the v + d items were computed in this block from the v's they still hold
    first = min([found[0]] + [p for _, _, p in split if p is not None])
    if lc.assigned_since(first, {v.name for v, _, _ in split}):
        return None
    parts = [(v, dk) for v, dk, _ in split]
    static = lc.static_strides(arr.expr)
    strides = [msl.uint_literal(static[k]) if static else (msl.uint_literal(1) if k == aty.ndim - 1 else
               msl.cast("uint", _stride(arr, k))) for k in range(aty.ndim)]
    bases = tuple(lc.var(v.name) for v, _ in parts)
    # the arrays of a launch's stride group (arraytypes.Index32Array.strides_of) have the same strides,
    # so the same row offset: the hand-written stencil's one row width for its input and output
    group = getattr(aty, "strides_of", None)
    key = (arr.expr if static or group is None else ("strides of arg", group, aty.ndim), bases)
    base = lc.shared_offset(key)
    if base is None:
        terms = [msl.cast("uint", b) if k == aty.ndim - 1 else msl.binary("*", msl.cast("uint", b), strides[k])
                 for k, b in enumerate(bases)]
        base = lc.shared_offset(key, msl.sum_of(terms))
    if not static and _row_pointer_exact(lc, aty, parts):
        return _row_pointer_element(lc, arr, base, bases, parts)
    offset = base
    for k, (_, dk) in enumerate(parts):
        if dk == 0:
            continue
        unit = k == aty.ndim - 1 or static
        step = msl.uint_literal(abs(dk) * (static[k] if static else 1)) if unit else \
            (strides[k] if abs(dk) == 1 else msl.binary("*", msl.uint_literal(abs(dk)), strides[k]))
        offset = msl.binary("+" if dk > 0 else "-", offset, step)
    return msl.index(_data(arr), offset)


def _row_pointer_exact(lc, aty, parts) -> bool:
    """A subscript ``(v0 + d0, ..., vn + dn)`` of a device array the launch knows is small may address its
    element as ``p[d]`` from a row pointer ``p = data + row offset`` (a signed element distance ``d``, as a
    hand-written stencil's ``p[-nx]``): exact when the row offset ``v0 * s0 + ... + vn`` is in ``[0, 2**32)``,
    so that the ``uint`` holding it is its value. It is when every ``vk`` is proven non-negative (ranges.py),
    the launch's strides are in ``[0, 2**31)`` (``host.array_flags.index32`` for a C-contiguous array), and
    the subscript moves along one axis by at most one (``|d0| + ... + |dn| <= 1``): an in-bounds element's
    offset is below ``2**31`` and the row offset differs from it by at most one stride. (An out-of-bounds
    access is undefined either way.)"""
    if not getattr(aty, "index32", False) or sum(abs(d) for _, d in parts) > 1:
        return False
    facts = ranges.bounds(lc.tf)
    return all(ranges.index_is_nonnegative(facts.get(v.name)) for v, _ in parts)


def _row_pointer_element(lc, arr: Value, base: str, bases, parts) -> str:
    """``p[d]`` for :func:`_row_pointer_exact`'s subscripts (``data[base]`` if ``d`` is 0): one row pointer
    per array and row offset in a block, whose neighbours' distances an Apple GPU's loads may take as an
    immediate or a register offset (a ``uint`` index ``base - 1u`` must be computed: it wraps at 0)."""
    n = len(parts)
    k, dk = next(((k, dk) for k, (_, dk) in enumerate(parts) if dk), (None, 0))
    if not dk:
        return msl.index(_data(arr), base)
    key = (arr.expr, bases, "row pointer")
    pointer = lc.shared_offset(key)
    if pointer is None:
        pointer = lc.shared_pointer(key, lc.module.data_pointer_type(arr.type),
                                    msl.binary("+", _data(arr), base))
    step = "1" if k == n - 1 else msl.cast("int", _stride(arr, k))
    return msl.index(pointer, step if dk > 0 else msl.unary("-", step))


def lower_getitem(lc, expr: ir.Expr, target) -> Value:
    base = lc.value(expr.value)
    bty = types.unliteral(base.type)
    tty = lc.typemap[target.name]
    if expr.op == "static_getitem":
        if isinstance(bty, types.BaseTuple):
            return _static_tuple_item(lc, base, expr.index, tty)
        typed = expr.index_var is not None and expr.index_var.name in lc.typemap
        parts = slicing.parts_of_constant(lc, expr.index)
        idx = None if parts is not None else _static_index_values(lc, expr.index_var, expr.index)
        nonneg = _nonnegative(lc, expr.index_var if typed else None)
    else:
        nonneg = _nonnegative(lc, expr.index)
        index = lc.value(expr.index)
        if isinstance(bty, types.BaseTuple):
            if isinstance(bty, types.UniTuple) and isinstance(types.unliteral(index.type), types.Integer):
                return Value(conversions.tuple_item(lc, base, index.expr), bty.dtype)
            lc.error(f"indexing {bty} with {index.type} is not supported; index heterogeneous tuples "
                     "with constants")
        idx = _index_values(lc, index)
        parts = slicing.parts_of_variable(lc, expr.index) if idx is None else None
    if not isinstance(bty, types.Array):
        lc.error(f"indexing {bty} is not supported in Metal kernels")
    if idx is None and parts is None:
        lc.error(f"arrays cannot be indexed with {lc.typemap[expr.index.name]} in Metal kernels (integers, "
                 "slices, None and ... can)")
    if idx is not None and len(idx) > bty.ndim:
        lc.error(f"too many indices ({len(idx)}) for a {bty.ndim}-d array")
    if idx is not None and len(idx) == bty.ndim:
        index_var = expr.index if expr.op == "getitem" else expr.index_var
        return _load(lc, base, idx, _array_name(expr.value), nonneg, index_var)
    return _view(lc, base, idx, parts, nonneg, _array_name(expr.value), tty)


def _view(lc, base: Value, idx, parts, nonneg, name: str, tty) -> Value:
    """``base[index]`` for an index that keeps axes: integer indexing of the first axes (``idx``: ``m[i]``)
    or slicing (``parts``, slicing.py); the view's type is ``tty`` (for an assignment's target, None: one
    of layout 'A'). A '...' standing for no axis with every axis indexed reads the element."""
    if parts is None:
        parts = [slicing.Part("int", v, position=k) for k, v in enumerate(idx)]
    parts = slicing.place(lc, parts, base.type.ndim)
    ints = [p for p in parts if p.kind == "int"]
    ints_nonneg = [p.position < len(nonneg) and nonneg[p.position] for p in ints]
    if tty is None:
        tty = slicing.view_type(base.type, parts)
    if not isinstance(tty, types.Array):
        return _load(lc, base, [p.value for p in ints], name, ints_nonneg)
    comps, cond = _components(lc, base, [p.value for p in ints], name, ints_nonneg, axes=[p.axis for p in ints])
    return slicing.view(lc, base, parts, comps, cond, tty)


def _load(lc, arr: Value, idx: list[Value], name: str, nonneg=(), index_var=None) -> Value:
    narrow = _narrow(lc, arr, index_var)
    comps, cond = _components(lc, arr, idx, name, nonneg, narrow)
    shared = _shared_row_offset(lc, arr, index_var, nonneg) if narrow else None
    element = shared or msl.index(_data(arr), _offset(lc, arr, comps, narrow=narrow))
    dtype = arr.type.dtype
    sanitize.access(lc, _space(arr), msl.address_of(element), comps, sanitize.READ, name, cond,
                    _record_bytes(dtype))
    if cond:
        element = msl.select(cond, element, msl.cast(lc.element_type(dtype), "0"))
    return Value(lc.load(dtype, element), dtype)


def _store(lc, arr: Value, idx: list[Value], value: Value, name: str, nonneg=(), index_var=None) -> None:
    narrow = _narrow(lc, arr, index_var)
    comps, cond = _components(lc, arr, idx, name, nonneg, narrow)
    dtype = arr.type.dtype
    shared = _shared_row_offset(lc, arr, index_var, nonneg) if narrow else None
    element = shared or msl.index(_data(arr), _offset(lc, arr, comps, narrow=narrow))
    sanitize.access(lc, _space(arr), msl.address_of(element), comps, sanitize.WRITE, name, cond,
                    _record_bytes(dtype))
    store = msl.assign(element, lc.store(dtype, lc.cast(value, dtype)))
    lc.emit(msl.if_statement(cond, store) if cond else store)


def _full_index(lc, arr: Value, index: Value, what: str) -> list[Value]:
    aty = types.unliteral(arr.type)
    if not isinstance(aty, types.Array):
        lc.error(f"{what} takes an array, not {aty}")
    idx = _index_values(lc, index)
    if idx is None or len(idx) != aty.ndim:
        lc.error(f"{what} on a {aty.ndim}-d array needs {aty.ndim} integer indices")
    return idx


def load_element(lc, arr: Value, index: Value, what: str) -> Value:
    """``arr[index]`` for an integer (or tuple of integers) index of every axis; ``what`` names the
    operation in errors. Bounds-checked as indexing is."""
    return _load(lc, arr, _full_index(lc, arr, index, what), arr.expr)


def store_element(lc, arr: Value, index: Value, value: Value, what: str) -> None:
    """``arr[index] = value``, as :func:`load_element` reads."""
    if not types.unliteral(arr.type).mutable:
        lc.error(f"{what}: this array is read-only (constant memory)")
    _store(lc, arr, _full_index(lc, arr, index, what), value, arr.expr)


def _static_tuple_item(lc, base: Value, index, tty) -> Value:
    bty = types.unliteral(base.type)
    n = len(bty)
    if isinstance(index, slice):
        picks = list(range(n))[index]
        items = [lc.cast(Value(msl.member(base.expr, msl.tuple_field(k)), bty.types[k]), t)
                 for k, t in zip(picks, tty.types)]
        return Value(msl.aggregate(lc.msl_type(tty), items), tty)
    if not isinstance(index, int) or not -n <= index < n:
        lc.error(f"tuple index {index!r} is out of range for a tuple of length {n}")
    k = index % n
    return Value(msl.member(base.expr, msl.tuple_field(k)), bty.types[k])


def lower_setitem(lc, stmt) -> None:
    target = lc.value(stmt.target)
    tty = types.unliteral(target.type)
    if not isinstance(tty, types.Array):
        lc.error(f"item assignment to {tty} is not supported in Metal kernels (tuples are immutable)")
    if not tty.mutable:
        lc.error("this array is read-only (constant memory) and cannot be assigned to")
    if isinstance(stmt, ir.StaticSetItem):
        parts = slicing.parts_of_constant(lc, stmt.index)
        idx = None if parts is not None else _static_index_values(lc, stmt.index_var, stmt.index)
        nonneg = _nonnegative(lc, stmt.index_var if stmt.index_var is not None and stmt.index_var.name in
                              lc.typemap else None)
    else:
        idx = _index_values(lc, lc.value(stmt.index))
        parts = slicing.parts_of_variable(lc, stmt.index) if idx is None else None
        nonneg = _nonnegative(lc, stmt.index)
    if idx is None and parts is None:
        lc.error(f"arrays cannot be indexed with {lc.typemap[stmt.index.name]} in Metal kernels (integers, "
                 "slices, None and ... can)")
    if idx is not None and len(idx) > tty.ndim:
        lc.error(f"assignment to a {tty.ndim}-d array needs {tty.ndim} indices, got {len(idx)}")
    name = _array_name(stmt.target)
    value = lc.value(stmt.value)
    if idx is not None and len(idx) == tty.ndim:
        index_var = stmt.index if isinstance(stmt, ir.SetItem) else stmt.index_var
        _store(lc, target, idx, value, name, nonneg, index_var if isinstance(index_var, ir.Var) else None)
        return
    if parts is not None:
        parts = slicing.place(lc, parts, tty.ndim)
    if parts is not None and not isinstance(slicing.view_type(tty, parts), types.Array):
        # every axis indexed, and a '...' standing for no axis
        ints = [p for p in parts if p.kind == "int"]
        _store(lc, target, [p.value for p in ints], value, name,
               [p.position < len(nonneg) and nonneg[p.position] for p in ints])
        return
    # Slice assignment (a[1:3] = v, m[i] = row): into the view, element by element (slicing.py).
    slicing.assign(lc, _view(lc, target, idx, parts, nonneg, name, None), value, name)


def lower_array_attribute(lc, arr: Value, attr: str, result_ty) -> Value | None:
    aty = arr.type
    n = aty.ndim
    itemsize = aty.dtype.bitwidth // 8 if hasattr(aty.dtype, "bitwidth") else 1
    if attr == "shape":
        return Value(msl.aggregate(lc.msl_type(result_ty), [_shape(arr, k) for k in range(n)]), result_ty)
    if attr == "strides":
        items = [msl.binary("*", _stride(arr, k), msl.long_literal(itemsize)) for k in range(n)]
        return Value(msl.aggregate(lc.msl_type(result_ty), items), result_ty)
    if attr == "size":
        return Value(_size(arr), types.intp)
    if attr == "ndim":
        return Value(msl.long_literal(n), types.intp)
    if attr == "itemsize":
        return Value(msl.long_literal(itemsize), types.intp)
    if attr == "nbytes":
        return Value(msl.binary("*", _size(arr), msl.long_literal(itemsize)), types.intp)
    if attr == "T":
        shape = [_shape(arr, k) for k in reversed(range(n))]
        strides = [_stride(arr, k) for k in reversed(range(n))]
        return Value(msl.aggregate(lc.msl_type(result_ty), [_data(arr), msl.braces(shape), msl.braces(strides)]),
                     result_ty)
    if lc.module.type_name(result_ty) is None:
        return None
    lc.error(f"array attribute '{attr}' is not supported in Metal kernels")


def _size(arr: Value) -> str:
    n = arr.type.ndim
    if n == 0:
        return msl.long_literal(1)   # a 0-d array holds one element
    if n == 1:
        return _shape(arr, 0)
    size = _shape(arr, 0)
    for k in range(1, n):
        size = msl.binary("*", size, _shape(arr, k))
    return size


def element_address(lc, arr: Value, index: Value, kind=sanitize.ATOMIC) -> str:
    """``&arr[index]`` as an MSL pointer in the array's address space (atomics take it; records are
    referenced by it). With ``debug=True`` an out-of-bounds index is reported and replaced by 0. The kernel
    sanitizer sees an access of ``kind`` (``sanitize.WRITE``: a whole record written; None: a reference
    taken, whose field writes its init check cannot see: the element counts as written; a threadgroup
    record's field accesses are their own)."""
    aty = types.unliteral(arr.type)
    idx = _index_values(lc, index)
    if idx is None or len(idx) != aty.ndim:
        lc.error(f"an atomic on a {aty.ndim}-d array needs {aty.ndim} integer indices")
    comps, cond = _components(lc, arr, idx, arr.expr)
    offset = _offset(lc, arr, comps)
    sanitize.access(lc, _space(arr), msl.address_of(msl.index(_data(arr), offset)), comps,
                    sanitize.WRITE if kind is None else kind,
                    sanitize.called_array(lc) if kind == sanitize.ATOMIC else debug_name_of(arr), cond,
                    0 if kind in (None, sanitize.ATOMIC) else _record_bytes(aty.dtype), init_only=kind is None)
    if cond:
        offset = msl.select(cond, offset, msl.long_literal(0))
    return msl.address_of(msl.index(_data(arr), offset))


def debug_name(var: ir.Var) -> str:
    """The name debug reports give the array a variable holds (for ``lc.array_id``); kernel-API families
    that check their own accesses use it too."""
    return _array_name(var)


def debug_name_of(arr: Value) -> str:
    """The Python name of an array value (its MSL variable ``v_<name>``)."""
    return arr.expr[2:] if arr.expr.startswith("v_") else arr.expr


def _record_bytes(dtype) -> int:
    """A record's bytes (the sanitizer sees a whole record's access byte by byte), else 0."""
    return dtype.size if isinstance(dtype, types.Record) else 0


def _space(arr: Value):
    return getattr(types.unliteral(arr.type), "address_space", None)

"""Array and tuple indexing, and array attributes, in MSL.

Arrays are ``nm_arr<P, N>`` values (element pointer, shape and strides in elements). Index arithmetic
is 64-bit (32-bit into threadgroup, thread and constant arrays), negative indices wrap around as in
Python (except indices the value-range analysis, ``ranges.py``, proves never negative), and with
``debug=True`` every access is bounds-checked: the first violation is recorded for the host and the
access is skipped.
"""

from __future__ import annotations

from numba.core import ir, types

from . import conversions, msl, sanitize
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
    if strides is None:
        strides = [msl.long_literal(s) for s in _c_strides(shape)]
    shape = [msl.long_literal(s) if isinstance(s, int) else s for s in shape]
    return Value(msl.aggregate(lc.msl_type(rt), [data, msl.braces(shape), msl.braces(strides)]), rt)


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


def _narrow(lc, arr: Value) -> bool:
    """Index ``arr`` in 32-bit arithmetic (issue 28 item 1, for arrays whose size is bounded at compile
    time): an in-bounds index component and the element offset fit in 32 bits, and an out-of-bounds
    access is undefined with or without the truncation. Not with ``debug=True``, whose bounds checks
    report the index as the program computed it."""
    return not lc.module.bounds_checked and getattr(arr.type, "address_space", None) in _SMALL_SPACES


def _components(lc, arr: Value, idx: list[Value], arrname: str, nonneg=(), narrow: bool = False):
    """Wrapped 64-bit index expressions per axis (not wrapped where ``nonneg[k]``: proven never negative),
    plus the debug-mode in-bounds condition; with ``narrow``, 32-bit ``uint`` expressions."""
    if narrow:
        return _narrow_components(lc, arr, idx, nonneg), None
    comps = []
    checks = []
    for k, v in enumerate(idx):
        extent = _shape(arr, k)
        ty = v.type
        if isinstance(ty, types.IntegerLiteral) and ty.literal_value >= 0:
            i = msl.long_literal(ty.literal_value)
        elif isinstance(ty, types.IntegerLiteral):
            i = msl.binary("-", extent, msl.long_literal(-ty.literal_value))
        elif isinstance(ty, types.Integer) and not ty.signed or k < len(nonneg) and nonneg[k]:
            i = msl.cast("long", v.expr)
        else:
            lc.need("array")
            i = msl.call("nm_wrap", msl.cast("long", v.expr), extent)
        if lc.module.bounds_checked:
            i = lc.tmp(types.int64, i)
            lc.need("boundscheck")
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
            i = msl.cast("uint", v.expr)
        else:
            lc.need("array")
            i = msl.cast("uint", msl.call("nm_wrap", msl.cast("int", v.expr), extent))
        comps.append(i)
    return comps


def _offset(arr: Value, comps: list[str], full: bool = True, narrow: bool = False) -> str:
    """The element offset of ``arr[comps]``: unit stride on the contiguous axis of a C (full index) or F
    array is not multiplied."""
    aty = arr.type
    n = aty.ndim
    terms = []
    for k, i in enumerate(comps):
        unit = (full and aty.layout == "C" and k == n - 1) or (aty.layout == "F" and k == 0)
        stride = msl.cast("uint", _stride(arr, k)) if narrow else _stride(arr, k)
        terms.append(i if unit else msl.binary("*", i, stride))
    if not terms:
        return msl.uint_literal(0) if narrow else msl.long_literal(0)
    return msl.sum_of(terms)


def _view(lc, arr: Value, comps: list[str], result_ty) -> str:
    """A view of ``arr`` with its first ``len(comps)`` axes fixed."""
    k0 = len(comps)
    n = arr.type.ndim
    data = msl.binary("+", _data(arr), _offset(arr, comps, full=False))
    shape = [_shape(arr, k) for k in range(k0, n)]
    strides = [_stride(arr, k) for k in range(k0, n)]
    return msl.aggregate(lc.msl_type(result_ty), [data, msl.braces(shape), msl.braces(strides)])


def lower_getitem(lc, expr: ir.Expr, target) -> Value:
    base = lc.value(expr.value)
    bty = types.unliteral(base.type)
    tty = lc.typemap[target.name]
    if expr.op == "static_getitem":
        if isinstance(bty, types.BaseTuple):
            return _static_tuple_item(lc, base, expr.index, tty)
        idx = _static_index_values(lc, expr.index_var, expr.index)
        nonneg = _nonnegative(lc, expr.index_var if expr.index_var is not None and expr.index_var.name in
                              lc.typemap else None)
    else:
        nonneg = _nonnegative(lc, expr.index)
        index = lc.value(expr.index)
        if isinstance(bty, types.BaseTuple):
            if isinstance(bty, types.UniTuple) and isinstance(types.unliteral(index.type), types.Integer):
                return Value(conversions.tuple_item(lc, base, index.expr), bty.dtype)
            lc.error(f"indexing {bty} with {index.type} is not supported; index heterogeneous tuples "
                     "with constants")
        idx = _index_values(lc, index)
    if not isinstance(bty, types.Array):
        lc.error(f"indexing {bty} is not supported in Metal kernels")
    if idx is None:
        lc.error("slicing is not supported inside Metal kernels (integer and tuple indexing are); slice "
                 "device arrays on the host, or index elements one at a time")
    if len(idx) > bty.ndim:
        lc.error(f"too many indices ({len(idx)}) for a {bty.ndim}-d array")
    if len(idx) < bty.ndim:
        comps, cond = _components(lc, base, idx, _array_name(expr.value), nonneg)
        if cond and lc.debug:
            lc.error("views of arrays (partial indexing) cannot be bounds-checked with debug=True; "
                     "index all axes")
        return Value(_view(lc, base, comps, tty), tty)
    return _load(lc, base, idx, _array_name(expr.value), nonneg)


def _load(lc, arr: Value, idx: list[Value], name: str, nonneg=()) -> Value:
    narrow = _narrow(lc, arr)
    comps, cond = _components(lc, arr, idx, name, nonneg, narrow)
    element = msl.index(_data(arr), _offset(arr, comps, narrow=narrow))
    dtype = arr.type.dtype
    sanitize.access(lc, _space(arr), msl.address_of(element), comps, sanitize.READ, name, cond)
    if cond:
        element = msl.select(cond, element, msl.cast(lc.element_type(dtype), "0"))
    return Value(lc.load(dtype, element), dtype)


def _store(lc, arr: Value, idx: list[Value], value: Value, name: str, nonneg=()) -> None:
    narrow = _narrow(lc, arr)
    comps, cond = _components(lc, arr, idx, name, nonneg, narrow)
    dtype = arr.type.dtype
    element = msl.index(_data(arr), _offset(arr, comps, narrow=narrow))
    sanitize.access(lc, _space(arr), msl.address_of(element), comps, sanitize.WRITE, name, cond)
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
        idx = _static_index_values(lc, stmt.index_var, stmt.index)
        nonneg = _nonnegative(lc, stmt.index_var if stmt.index_var is not None and stmt.index_var.name in
                              lc.typemap else None)
    else:
        idx = _index_values(lc, lc.value(stmt.index))
        nonneg = _nonnegative(lc, stmt.index)
    if idx is None:
        lc.error("slice assignment is not supported inside Metal kernels; assign elements one at a time")
    if len(idx) != tty.ndim:
        lc.error(f"assignment to a {tty.ndim}-d array needs {tty.ndim} indices, got {len(idx)}")
    _store(lc, target, idx, lc.value(stmt.value), _array_name(stmt.target), nonneg)


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


def element_address(lc, arr: Value, index: Value) -> str:
    """``&arr[index]`` as an MSL pointer in the array's address space (atomics take it). With
    ``debug=True`` an out-of-bounds index is reported and replaced by 0."""
    aty = types.unliteral(arr.type)
    idx = _index_values(lc, index)
    if idx is None or len(idx) != aty.ndim:
        lc.error(f"an atomic on a {aty.ndim}-d array needs {aty.ndim} integer indices")
    comps, cond = _components(lc, arr, idx, arr.expr)
    offset = _offset(arr, comps)
    sanitize.access(lc, _space(arr), msl.address_of(msl.index(_data(arr), offset)), comps, sanitize.ATOMIC,
                    sanitize.called_array(lc), cond)
    if cond:
        offset = msl.select(cond, offset, msl.long_literal(0))
    return msl.address_of(msl.index(_data(arr), offset))


def _space(arr: Value):
    return getattr(types.unliteral(arr.type), "address_space", None)

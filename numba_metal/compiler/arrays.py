"""Array and tuple indexing, and array attributes, in MSL.

Arrays are ``nm_arr<P, N>`` values (element pointer, shape and strides in elements). Index arithmetic
is 64-bit, negative indices wrap around as in Python, and with ``debug=True`` every access is
bounds-checked: the first violation is recorded for the host and the access is skipped.
"""

from __future__ import annotations

from numba.core import ir, types

from . import msl
from .lowering import Value


def _index_values(lc, index: Value) -> list[Value] | None:
    """The integer components of an index value, or None if it is not integer indexing."""
    ty = types.unliteral(index.type)
    if isinstance(ty, (types.Integer, types.Boolean)):
        return [Value(index.expr, ty)]
    if isinstance(ty, types.BaseTuple) and all(isinstance(types.unliteral(t), types.Integer) for t in ty.types):
        return [Value(f"{index.expr}.f{k}", types.unliteral(t)) for k, t in enumerate(ty.types)]
    return None


def _literal_index_values(lc, const) -> list[Value] | None:
    if isinstance(const, bool):
        return None
    if isinstance(const, int):
        return [Value(f"{const}l", types.IntegerLiteral(const))]
    if isinstance(const, tuple) and all(isinstance(c, int) and not isinstance(c, bool) for c in const):
        return [Value(f"{c}l", types.IntegerLiteral(c)) for c in const]
    return None


def _static_index_values(lc, index_var, const) -> list[Value] | None:
    """Index components of a static_getitem/static_setitem: the typed index variable if Numba kept
    one, else the constant itself."""
    if index_var is not None and index_var.name in lc.typemap:
        idx = _index_values(lc, lc.value(index_var))
        if idx is not None:
            return idx
    return _literal_index_values(lc, const)


def _array_name(lc, var: ir.Var) -> str:
    name = var.name
    if name.startswith("$") or "." in name:
        name = name.lstrip("$").split(".")[0]
    return name


def _components(lc, arr: Value, idx: list[Value], arrname: str):
    """Wrapped 64-bit index expressions per axis, plus the debug-mode in-bounds condition."""
    comps = []
    checks = []
    for k, v in enumerate(idx):
        extent = f"{arr.expr}.shape[{k}]"
        ty = v.type
        if isinstance(ty, types.IntegerLiteral) and ty.literal_value >= 0:
            i = f"{ty.literal_value}l"
        elif isinstance(ty, types.IntegerLiteral):
            i = f"({extent} - {-ty.literal_value}l)"
        elif isinstance(ty, types.Integer) and not ty.signed:
            i = f"long({v.expr})"
        else:
            lc.need("array")
            i = f"nm_wrap(long({v.expr}), {extent})"
        if lc.debug:
            i = lc.tmp(types.int64, i)
            lc.need("boundscheck")
            array_id = _array_id(lc, arrname)
            checks.append(f"nm_in_bounds({i}, {extent}, {msl.CTX_PARAM}, {array_id}u, {k}u, "
                          f"{lc.line()}u)")
        comps.append(i)
    cond = " & ".join(checks) if checks else None
    return comps, cond


def _array_id(lc, name: str) -> int:
    names = lc.module.array_names
    if name not in names:
        names.append(name)
    lc.module.lines[lc.line()] = (lc.loc.filename if lc.loc else "", lc.line())
    return names.index(name)


def _offset(arr: Value, comps: list[str]) -> str:
    aty = arr.type
    n = aty.ndim
    terms = []
    for k, i in enumerate(comps):
        unit = (aty.layout == "C" and k == n - 1) or (aty.layout == "F" and k == 0)
        terms.append(i if unit else f"{i} * {arr.expr}.strides[{k}]")
    return " + ".join(terms) if terms else "0l"


def _view(lc, arr: Value, comps: list[str], result_ty) -> str:
    """A view of ``arr`` with its first ``len(comps)`` axes fixed."""
    k0 = len(comps)
    n = arr.type.ndim
    offset = _offset_partial(arr, comps)
    shape = ", ".join(f"{arr.expr}.shape[{k}]" for k in range(k0, n))
    strides = ", ".join(f"{arr.expr}.strides[{k}]" for k in range(k0, n))
    return f"{lc.msl_type(result_ty)}{{{arr.expr}.data + ({offset}), {{{shape}}}, {{{strides}}}}}"


def _offset_partial(arr: Value, comps: list[str]) -> str:
    aty = arr.type
    terms = []
    for k, i in enumerate(comps):
        unit = aty.layout == "F" and k == 0
        terms.append(i if unit else f"{i} * {arr.expr}.strides[{k}]")
    return " + ".join(terms) if terms else "0l"


def lower_getitem(lc, expr: ir.Expr, target) -> Value:
    base = lc.value(expr.value)
    bty = types.unliteral(base.type)
    tty = lc.typemap[target.name]
    if expr.op == "static_getitem":
        if isinstance(bty, types.BaseTuple):
            return _static_tuple_item(lc, base, expr.index, tty)
        idx = _static_index_values(lc, expr.index_var, expr.index)
    else:
        index = lc.value(expr.index)
        if isinstance(bty, types.BaseTuple):
            if isinstance(bty, types.UniTuple) and isinstance(types.unliteral(index.type), types.Integer):
                from .conversions import tuple_item
                return Value(tuple_item(lc, base, index.expr), bty.dtype)
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
    comps, cond = _components(lc, base, idx, _array_name(lc, expr.value))
    if len(idx) < bty.ndim:
        if cond:
            lc.error("views of arrays (partial indexing) cannot be bounds-checked with debug=True; "
                     "index all axes")
        return Value(_view(lc, base, comps, tty), tty)
    element = f"{base.expr}.data[{_offset(base, comps)}]"
    dtype = bty.dtype
    if cond:
        zero = f"{lc.msl_type(dtype)}(0)"
        return Value(f"(({cond}) ? {element} : {zero})", dtype)
    return Value(element, dtype)


def _static_tuple_item(lc, base: Value, index, tty) -> Value:
    bty = types.unliteral(base.type)
    n = len(bty)
    if isinstance(index, slice):
        picks = list(range(n))[index]
        items = [lc.cast(Value(f"{base.expr}.f{k}", bty.types[k]), t) for k, t in zip(picks, tty.types)]
        return Value(f"{lc.msl_type(tty)}{{{', '.join(items)}}}", tty)
    if not isinstance(index, int) or not -n <= index < n:
        lc.error(f"tuple index {index!r} is out of range for a tuple of length {n}")
    k = index % n
    return Value(f"{base.expr}.f{k}", bty.types[k])


def lower_setitem(lc, stmt) -> None:
    target = lc.value(stmt.target)
    tty = types.unliteral(target.type)
    if not isinstance(tty, types.Array):
        lc.error(f"item assignment to {tty} is not supported in Metal kernels (tuples are immutable)")
    if not tty.mutable:
        lc.error("this array is read-only (constant memory) and cannot be assigned to")
    if isinstance(stmt, ir.StaticSetItem):
        idx = _static_index_values(lc, stmt.index_var, stmt.index)
    else:
        idx = _index_values(lc, lc.value(stmt.index))
    if idx is None:
        lc.error("slice assignment is not supported inside Metal kernels; assign elements one at a time")
    if len(idx) != tty.ndim:
        lc.error(f"assignment to a {tty.ndim}-d array needs {tty.ndim} indices, got {len(idx)}")
    value = lc.cast(lc.value(stmt.value), tty.dtype)
    comps, cond = _components(lc, target, idx, _array_name(lc, stmt.target))
    store = f"{target.expr}.data[{_offset(target, comps)}] = {value};"
    if cond:
        lc.emit(f"if ({cond}) {{ {store} }}")
    else:
        lc.emit(store)


def lower_array_attribute(lc, arr: Value, attr: str, result_ty) -> Value | None:
    aty = arr.type
    n = aty.ndim
    itemsize = aty.dtype.bitwidth // 8 if hasattr(aty.dtype, "bitwidth") else 1
    if attr == "shape":
        items = ", ".join(f"{arr.expr}.shape[{k}]" for k in range(n))
        return Value(f"{lc.msl_type(result_ty)}{{{items}}}", result_ty)
    if attr == "strides":
        items = ", ".join(f"({arr.expr}.strides[{k}] * {itemsize}l)" for k in range(n))
        return Value(f"{lc.msl_type(result_ty)}{{{items}}}", result_ty)
    if attr == "size":
        return Value(_size(arr), types.intp)
    if attr == "ndim":
        return Value(f"{n}l", types.intp)
    if attr == "itemsize":
        return Value(f"{itemsize}l", types.intp)
    if attr == "nbytes":
        return Value(f"({_size(arr)} * {itemsize}l)", types.intp)
    if attr == "T":
        shape = ", ".join(f"{arr.expr}.shape[{k}]" for k in reversed(range(n)))
        strides = ", ".join(f"{arr.expr}.strides[{k}]" for k in reversed(range(n)))
        return Value(f"{lc.msl_type(result_ty)}{{{arr.expr}.data, {{{shape}}}, {{{strides}}}}}", result_ty)
    if lc.module.type_name(result_ty) is None:
        return None
    lc.error(f"array attribute '{attr}' is not supported in Metal kernels")


def _size(arr: Value) -> str:
    n = arr.type.ndim
    if n == 1:
        return f"{arr.expr}.shape[0]"
    return "(" + " * ".join(f"{arr.expr}.shape[{k}]" for k in range(n)) + ")"


def element_address(lc, arr: Value, index: Value) -> str:
    """``&arr[index]`` as an MSL pointer in the array's address space (atomics take it). With
    ``debug=True`` an out-of-bounds index is reported and replaced by 0."""
    aty = types.unliteral(arr.type)
    idx = _index_values(lc, index)
    if idx is None or len(idx) != aty.ndim:
        lc.error(f"an atomic on a {aty.ndim}-d array needs {aty.ndim} integer indices")
    comps, cond = _components(lc, arr, idx, arr.expr)
    offset = _offset(arr, comps)
    if cond:
        offset = f"(({cond}) ? ({offset}) : 0l)"
    return f"(&{arr.expr}.data[{offset}])"


def _c_strides(shape) -> list[int]:
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return list(reversed(strides))


def array_value(lc, rt, data: str, shape, strides=None) -> Value:
    """An array value of type ``rt`` over ``data`` (a pointer expression) with constant or run-time ``shape``
    (ints or expressions) and ``strides`` (expressions; C order when omitted)."""
    strides = strides if strides is not None else [f"{s}l" for s in _c_strides(shape)]
    shape_s = ", ".join(f"{s}l" if isinstance(s, int) else s for s in shape)
    return Value(f"{lc.msl_type(rt)}{{{data}, {{{shape_s}}}, {{{', '.join(strides)}}}}}", rt)

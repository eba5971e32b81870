"""Records (NumPy structured dtypes) in kernels, as numba.cuda has them: arrays of records, record
arguments (by reference: the kernel's writes reach the host), fields read and written by attribute
(``r.a``) or by name (``r['a']``), nested arrays (``r.h[0, 1]``), whole records copied (``a[i] = a[j]``).

A record value is a pointer to its bytes in device memory (as Numba's records are references); its
layout (the MSL struct, each field's offset, which fields are packed) is the kernel ABI's
(:func:`~numba_metal.compiler.abi.record_layout`). A float64 field holds its IEEE bits (the emulated
float64's storage, as float64 arrays do: a record with float64 or complex128 fields is float64 data,
precision.py); complex fields are read and written one part at a time.
"""

from __future__ import annotations

from numba.core import types

from . import abi, arrays, msl
from .lowering import Value

#: Bytes of each MSL element type a field may have (their alignment too: Metal's rule for these types).
_SIZES = {"bool": 1, "char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "int": 4, "uint": 4,
          "float": 4, "long": 8, "ulong": 8, msl.COMPLEX64: 8, msl.COMPLEX128_STORAGE: 16}

#: Scalar fields of float64 and complex types: the MSL type of each part (a float64 is its IEEE bits;
#: a complex its real and imaginary parts), read and written one part at a time, so that a field needs
#: only NumPy's alignment of its parts (complex64: 4 bytes, where MSL's float2 needs 8).
_PARTS = {types.float64: msl.FLOAT64_STORAGE, types.complex64: "float", types.complex128: msl.FLOAT64_STORAGE}

#: Elements of nested arrays of these types: the MSL type arrays of them hold (as kernel arrays do).
_STORAGE = {types.float64: msl.FLOAT64_STORAGE, types.complex64: msl.COMPLEX64,
            types.complex128: msl.COMPLEX128_STORAGE}


def layout(rec: types.Record) -> abi.RecordLayout:
    """The layout of a Numba record type (raises TypeError naming a field Metal kernels cannot hold)."""
    fields = []
    for name, f in rec.fields.items():
        ty = f.type
        shape = ()
        if isinstance(ty, types.NestedArray):
            shape = tuple(ty.shape)
            ty = ty.dtype
            element = _STORAGE.get(ty) or msl.scalar_type(ty)
        else:
            element = _PARTS.get(ty) or msl.scalar_type(ty)
        if element is None:
            raise TypeError(f"record field '{name}' is {ty}; Metal kernels take records of integer, bool, "
                            "float16, float32, float64 and complex fields and nested arrays of them")
        fields.append((name, f.offset, element, _SIZES[element], shape))
    return abi.record_layout(rec.size, fields)


def _field(lc, rec: Value, name: str) -> abi.RecordField:
    fields = lc.module.record_layout(types.unliteral(rec.type)).fields
    if name not in fields:
        lc.error(f"record {rec.type} has no field '{name}'")
    return fields[name]


def _pointer(lc, rec: Value, field: abi.RecordField, element: str, offset: int = 0) -> str:
    return msl.field_pointer(lc.pointer("device", element), lc.pointer("device", "uchar"), rec.expr,
                             field.offset + offset)


def _load_part(lc, rec: Value, field: abi.RecordField, k: int) -> str:
    """Part ``k`` of a scalar field (the field itself unless it is complex), as its MSL element type."""
    if field.packed:
        lc.need(msl.numbered("nm_load_packed", field.size))
        load = msl.template(msl.numbered("nm_load_packed", field.size), field.element)
        return msl.call(load, _pointer(lc, rec, field, "uchar", k * field.size))
    return msl.index(_pointer(lc, rec, field, field.element, k * field.size), 0)


def _store_part(lc, rec: Value, field: abi.RecordField, k: int, value: str) -> None:
    if field.packed:
        lc.need(msl.numbered("nm_store_packed", field.size))
        store = msl.template(msl.numbered("nm_store_packed", field.size), field.element)
        lc.emit(msl.statement(msl.call(store, _pointer(lc, rec, field, "uchar", k * field.size), value)))
        return
    lc.emit(msl.assign(msl.index(_pointer(lc, rec, field, field.element, k * field.size), 0), value))


def _check_nested_aligned(lc, name: str, field: abi.RecordField) -> None:
    if field.packed:
        lc.error(f"nested array field '{name}' of a packed record is not aligned to its elements, which "
                 "Metal requires; use a dtype with align=True (complex128 elements need offsets that are "
                 "multiples of 16)")


def get_field(lc, rec: Value, name: str, result_type) -> Value:
    """``rec.name`` / ``rec['name']``: a scalar, or a view of a nested array."""
    field = _field(lc, rec, name)
    if field.shape:
        _check_nested_aligned(lc, name, field)
        return arrays.array_value(lc, result_type, _pointer(lc, rec, field, field.element), list(field.shape))
    ty = types.unliteral(result_type)
    if ty == types.complex64:
        return Value(msl.call(msl.COMPLEX64, _load_part(lc, rec, field, 0), _load_part(lc, rec, field, 1)), ty)
    if ty == types.complex128:
        parts = [lc.load(types.float64, _load_part(lc, rec, field, k)) for k in range(2)]
        return Value(lc.library_call("nm_c128_make", *parts), ty)
    return Value(lc.load(ty, _load_part(lc, rec, field, 0)), result_type)


def set_field(lc, rec: Value, name: str, value: Value) -> None:
    """``rec.name = value`` / ``rec['name'] = value`` for a scalar field."""
    field = _field(lc, rec, name)
    rty = types.unliteral(rec.type)
    if field.shape:
        _set_nested(lc, rec, name, field, value)
        return
    ty = rty.typeof(name)
    x = lc.cast(value, ty)
    if ty == types.complex64:
        z = lc.tmp(ty, x)
        parts = [msl.member(z, p) for p in msl.COMPLEX64_PARTS]
    elif ty == types.complex128:
        z = lc.tmp(ty, x)
        parts = [lc.store(types.float64, msl.member(z, p)) for p in msl.COMPLEX128_PARTS]
    else:
        parts = [lc.store(ty, x)]
    for k, part in enumerate(parts):
        _store_part(lc, rec, field, k, part)


def _set_nested(lc, rec: Value, name: str, field: abi.RecordField, value: Value) -> None:
    """``rec.name = src`` for a nested array field: the field's elements from ``src`` in C order (numba.cuda
    copies them without looking at ``src``'s shape; here at most ``src.size`` are copied, and debug=True
    reports a ``src`` smaller than the field as an out-of-bounds index)."""
    _check_nested_aligned(lc, name, field)
    if not isinstance(types.unliteral(value.type), types.Array):
        lc.error(f"nested array field '{name}' can be assigned an array, not {value.type}")
    lc.need("nm_copy_to_nested")
    n = 1
    for extent in field.shape:
        n *= extent
    src = lc.tmp(value.type, value.expr)
    if lc.debug:
        lc.need("nm_in_bounds")
        lc.emit(msl.statement(msl.call("nm_in_bounds", msl.long_literal(n - 1), msl.call("nm_arr_size", src),
                                       msl.ENV_PARAM, msl.uint_literal(lc.array_id(name)), msl.uint_literal(0),
                                       msl.uint_literal(lc.line()))))
    lc.emit(msl.statement(msl.call("nm_copy_to_nested", _pointer(lc, rec, field, field.element), src,
                                   msl.long_literal(n))))


def field_name(lc, rec: Value, key) -> str:
    """The field ``rec[key]`` names: ``key`` is a field name or a position (Numba's ``r[0]``)."""
    if isinstance(key, str):
        return key
    members = types.unliteral(rec.type).members
    if not -len(members) <= key < len(members):
        lc.error(f"record index {key} is out of range for a record of {len(members)} fields")
    return members[key][0]


def element(lc, arr: Value, index: Value) -> Value:
    """``arr[index]`` of an array of records, fully indexed: the record (a reference into the array)."""
    aty = types.unliteral(arr.type)
    _check_full_index(lc, aty, index)
    return Value(arrays.element_address(lc, arr, index), aty.dtype)


def set_element(lc, arr: Value, index: Value, value: Value) -> None:
    """``arr[index] = record``: the record's bytes copied."""
    aty = types.unliteral(arr.type)
    _check_full_index(lc, aty, index)
    if types.unliteral(value.type) != aty.dtype:
        lc.error(f"only a record of the same dtype can be assigned to an element of {aty}, not {value.type}")
    lc.need("nm_copy_record")
    byte = lc.pointer("device", "uchar")
    dst = msl.pointer_cast(byte, arrays.element_address(lc, arr, index))
    lc.emit(msl.statement(msl.call("nm_copy_record", dst, msl.pointer_cast(byte, value.expr),
                                   msl.int_literal(aty.dtype.size, "int"))))


def _check_full_index(lc, aty, index: Value) -> None:
    ity = types.unliteral(index.type)
    n = len(ity) if isinstance(ity, types.BaseTuple) else 1
    if n != aty.ndim:
        lc.error(f"an array of records is indexed with one integer per axis ({aty.ndim}); views of it are "
                 "not supported in Metal kernels")

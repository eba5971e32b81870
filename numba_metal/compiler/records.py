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

from . import abi, arrays, msl, sanitize
from .arraytypes import plain_record
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


def layout(rec: types.Record, module=None) -> abi.RecordLayout:
    """The layout of a Numba record type (raises TypeError naming a field Metal kernels cannot hold);
    ``module`` (a ModuleBuilder) defines the MSL structs of nested records."""
    fields = []
    for name, f in rec.fields.items():
        ty = f.type
        shape = ()
        if isinstance(ty, types.Record):
            # A nested record: a reference to its bytes inside this one's (byte-aligned, never packed).
            nested = module.record_layout(ty) if module is not None else layout(ty)
            fields.append((name, f.offset, nested.struct, 1, ()))
            continue
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


def _space(rec: Value) -> str:
    return getattr(types.unliteral(rec.type), "address_space", "device")


def _pointer(lc, rec: Value, field: abi.RecordField, element: str, offset: int = 0) -> str:
    space = _space(rec)
    return msl.field_pointer(lc.pointer(space, element), lc.pointer(space, "uchar"), rec.expr,
                             field.offset + offset)


def _check_writable(lc, rec: Value) -> None:
    if _space(rec) == "constant":
        lc.error(f"a record of a constant array ({rec.type}) is read-only")


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
    if isinstance(ty, types.Record):
        return Value(_pointer(lc, rec, field, field.element), result_type)
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
    _check_writable(lc, rec)
    if isinstance(rty.typeof(name), types.Record):
        _copy_record(lc, _pointer(lc, rec, field, field.element), rty.typeof(name), value)
        return
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
    return Value(arrays.element_address(lc, arr, index, kind=None), aty.dtype)


def set_element(lc, arr: Value, index: Value, value: Value) -> None:
    """``arr[index] = record``: the record's bytes copied."""
    aty = types.unliteral(arr.type)
    _check_full_index(lc, aty, index)
    _copy_record(lc, arrays.element_address(lc, arr, index, kind=sanitize.WRITE), aty.dtype, value)


def _copy_record(lc, dst: str, dst_type: types.Record, value: Value) -> None:
    """The bytes of the record ``value`` copied to ``dst`` (a pointer to a record of ``dst_type``), in
    whichever address spaces the two are."""
    vty = types.unliteral(value.type)
    if not isinstance(vty, types.Record) or plain_record(vty) != plain_record(dst_type):
        lc.error(f"only a record of the same dtype can be assigned to a record of {plain_record(dst_type)}, "
                 f"not {value.type}")
    if getattr(dst_type, "address_space", "device") == "constant":
        lc.error("a constant array's records are read-only")
    lc.need("nm_copy_record")
    lc.emit(msl.statement(msl.call(
        "nm_copy_record", msl.pointer_cast(lc.pointer(getattr(dst_type, "address_space", "device"), "uchar"), dst),
        msl.pointer_cast(lc.pointer(_space(value), "uchar"), value.expr), msl.int_literal(dst_type.size, "int"))))


def field_view(lc, arr: Value, name: str, result_type) -> Value:
    """``arr.name`` of an array of records (a NumPy recarray's field attribute, as Numba types it): a view
    of that field of every element, strided by the record's size (no copy)."""
    aty = types.unliteral(arr.type)
    rec = aty.dtype
    field = _field(lc, Value(arr.expr, rec), name)
    ftype = rec.typeof(name)
    element = lc.element_type(types.unliteral(result_type).dtype)
    size = _SIZES.get(element)
    if field.shape or isinstance(ftype, types.Record) or size is None or field.offset % size or rec.size % size:
        lc.error(f"the field view {name!r} of an array of {plain_record(rec)} needs a scalar field at an offset "
                 "and in a record whose sizes are multiples of the field's size (Metal reads aligned elements); "
                 "index the array and read the field of each element instead")
    space = _space(Value(arr.expr, aty))
    data = msl.field_pointer(lc.pointer(space, element), lc.pointer(space, "uchar"), msl.member(arr.expr, "data"),
                             field.offset)
    ratio = msl.long_literal(rec.size // size)
    shape = [msl.index(msl.member(arr.expr, "shape"), k) for k in range(aty.ndim)]
    strides = [msl.binary("*", msl.index(msl.member(arr.expr, "strides"), k), ratio) for k in range(aty.ndim)]
    return arrays.array_value(lc, result_type, data, shape, strides)


def _check_full_index(lc, aty, index: Value) -> None:
    ity = types.unliteral(index.type)
    n = len(ity) if isinstance(ity, types.BaseTuple) else 1
    if n != aty.ndim:
        lc.error(f"an array of records is indexed with one integer per axis ({aty.ndim}); views of it are "
                 "not supported in Metal kernels")

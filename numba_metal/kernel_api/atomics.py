"""Atomic operations on device and threadgroup arrays, returning the old value.

numba.cuda's ``metal.atomic.add/sub/max/min/nanmax/nanmin/and_/or_/xor/exch/inc/dec/cas`` and
``compare_and_swap``, plus the earlier numba-metal's ``metal.atomic_add/sub/min/max/exchange`` and
``atomic_compare_exchange`` (which returns ``(old, success)``). Element types: int32 and uint32
natively; float32 add/sub natively on device memory and through compare-and-swap loops elsewhere
(float max/min, float on threadgroup memory). Metal's only 64-bit atomics are max and min of uint64 in
device memory, returning nothing (MSL 3.1 §6.15.4 ``atomic_ulong``; Apple9 and M2-class GPUs, Metal's
feature set tables footnote 11): ``atomic.max``/``min``/``nanmax``/``nanmin`` of a uint64 device array
whose old value is unused compile to them (a GPU without them refuses the kernel by name); every other
64-bit atomic is refused, saying what exists. All operations use relaxed memory order, the only order MSL
atomics offer.

numba.cuda's ``fp16.atomicAdd`` (CUDA-C's ``atomicAdd(__half*, __half)``) is here too, as
``fp16.atomicAdd(ary, idx, val)`` on a float16 array: Metal has no 16-bit atomics, so it is a
compare-and-swap loop on the aligned 32-bit word holding the half, which changes only that half's 16 bits.
numba.cuda's ``atomic.*`` refuse float16 arrays; so do these, pointing at ``fp16.atomicAdd``.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Atomic operations"

import types as pytypes
from typing import NamedTuple

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, signature

from numba_metal.compiler import msl, sanitize
from numba_metal.compiler.arrays import element_address
from numba_metal.compiler.arraytypes import MetalArray
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.declarations import registry as typing
from numba_metal.errors import UnsupportedFeatureError

from .fp16 import atomicAdd as half_atomic_add
from .stubs import Stub

class _Op(NamedTuple):
    """One read-modify-write operation of ``metal.atomic``: everything the family knows of it."""

    name: str                  # metal.atomic.<name>, numba.cuda's spelling
    dtypes: tuple              # the element types it takes
    native_int: str | None     # MSL's atomic function on int32/uint32 (max/min of integers have no NaN)
    native_float: str | None   # MSL's atomic function on float32 in device memory (atomic_float, MSL 3.0)
    loop: str | None           # otherwise the prelude's compare-and-swap loop (section ``atomics``), named
                               # nm_atomic_<loop>_<memory>
    alias: str | None = None   # the earlier numba-metal's spelling (metal.atomic_<...>), kept for old code
    native_u64: str | None = None  # MSL's atomic function on uint64 in device memory (atomic_ulong, MSL 3.1),
                                   # which returns nothing: only where the old value is unused


_I32, _U32, _F32, _U64 = types.int32, types.uint32, types.float32, types.uint64
_FETCH = "atomic_fetch_{}_explicit".format

#: Every update operation, one row each.
OPERATIONS = (
    _Op("add", (_I32, _U32, _F32), _FETCH("add"), _FETCH("add"), "fadd", alias="atomic_add"),
    _Op("sub", (_I32, _U32, _F32), _FETCH("sub"), _FETCH("sub"), "fsub", alias="atomic_sub"),
    _Op("max", (_I32, _U32, _F32, _U64), _FETCH("max"), None, "fmax", alias="atomic_max",
        native_u64="atomic_max_explicit"),
    _Op("min", (_I32, _U32, _F32, _U64), _FETCH("min"), None, "fmin", alias="atomic_min",
        native_u64="atomic_min_explicit"),
    _Op("nanmax", (_I32, _U32, _F32, _U64), _FETCH("max"), None, "fnanmax", native_u64="atomic_max_explicit"),
    _Op("nanmin", (_I32, _U32, _F32, _U64), _FETCH("min"), None, "fnanmin", native_u64="atomic_min_explicit"),
    _Op("and_", (_I32, _U32), _FETCH("and"), None, None),
    _Op("or_", (_I32, _U32), _FETCH("or"), None, None),
    _Op("xor", (_I32, _U32), _FETCH("xor"), None, None),
    _Op("exch", (_I32, _U32, _F32), "atomic_exchange_explicit", None, None, alias="atomic_exchange"),
    _Op("inc", (_U32,), None, None, "inc"),
    _Op("dec", (_U32,), None, None, "dec"),
)

_STUBS = {row.name: Stub(f"atomic.{row.name}", f"atomic.{row.name}(ary, idx, val): atomically update ary[idx]; "
                                               "returns the old value") for row in OPERATIONS}
cas = Stub("atomic.cas", "atomic.cas(ary, idx, old, val): if ary[idx] == old, set it to val; returns the "
                         "old value")
compare_and_swap = Stub("atomic.compare_and_swap", "atomic.compare_and_swap(ary, old, val): cas on ary[0]")

atomic = pytypes.ModuleType("numba_metal.metal.atomic", "Atomic operations (numba.cuda's cuda.atomic).")
for _op, _stub in _STUBS.items():
    setattr(atomic, _op, _stub)
atomic.cas = cas
atomic.compare_and_swap = compare_and_swap

# The earlier numba-metal's spellings, from the rows' aliases.
_ALIASES = {row.alias: Stub(row.alias, f"{row.alias}(ary, idx, val): atomic.{row.name}")
            for row in OPERATIONS if row.alias}
atomic_add = _ALIASES["atomic_add"]
atomic_sub = _ALIASES["atomic_sub"]
atomic_min = _ALIASES["atomic_min"]
atomic_max = _ALIASES["atomic_max"]
atomic_exchange = _ALIASES["atomic_exchange"]
atomic_compare_exchange = Stub("atomic_compare_exchange",
                               "atomic_compare_exchange(ary, idx, expected, desired) -> (old, success)")

_ROW_OF = {_STUBS[row.name]: row for row in OPERATIONS}
_ROW_OF.update({_ALIASES[row.alias]: row for row in OPERATIONS if row.alias})
_STUB_OF_PATH = {stub.path: stub for stub in _ROW_OF}

#: What Metal has of 64-bit atomics, said by every refusal of one.
U64_ATOMICS = ("Metal's only 64-bit atomics are max and min of uint64 in device memory, which return no old value "
               "(MSL 3.1 atomic_ulong, on Apple9 GPUs and M2-class GPUs): metal.atomic.max/min/nanmax/nanmin "
               "of a uint64 device array, with the result unused, compile to them; there is no signed, float64, "
               "threadgroup or value-returning 64-bit atomic")


#: What an index component may be: numba.cuda converts each to intp (cudaimpl's _normalize_indices casts
#: every component with context.cast), so a float, such as the float64 Numba makes when it merges int64
#: and uint64, is truncated toward zero like int(x).
_INDEX_TYPES = (types.Integer, types.Float)


def _integer_index(lc, idx: Value) -> Value:
    """The index with every float component converted to intp, as numba.cuda does (integers unchanged)."""
    ty = types.unliteral(idx.type)
    if isinstance(ty, types.Float):
        return Value(lc.cast(idx, types.intp), types.intp)
    if not isinstance(ty, types.BaseTuple) or not any(isinstance(t, types.Float) for t in ty.types):
        return idx
    to = types.Tuple([types.intp if isinstance(t, types.Float) else types.unliteral(t) for t in ty.types])
    return Value(lc.cast(idx, to), to)


def _address(lc, ary: Value, idx: Value) -> str:
    return element_address(lc, ary, _integer_index(lc, idx))


def _space(ary) -> str:
    return ary.address_space if isinstance(ary, MetalArray) else "device"


def _check_array(name, ary, idx):
    if not isinstance(ary, types.Array):
        raise UnsupportedFeatureError(f"metal.{name}: the first argument must be an array, not {ary}")
    space = _space(ary)
    if space not in ("device", "threadgroup"):
        raise UnsupportedFeatureError(f"metal.{name}: atomics work on device and shared (threadgroup) "
                                      f"arrays, not {space} arrays")
    if ary.dtype == types.float16 and name != half_atomic_add.path:
        raise UnsupportedFeatureError(f"metal.{name} on float16: numba.cuda's atomics take no float16 "
                                      "arrays; use metal.fp16.atomicAdd(ary, idx, val) (numba.cuda's "
                                      "cuda.fp16.atomicAdd), or a float32 array")
    if ary.dtype in (types.int64, types.uint64, types.float64):
        # MSL specification 6.15.4 and Apple's feature set tables (footnote 11): atomic_ulong has only max and
        # min, returning nothing, in device memory, on Apple9 GPUs and Apple8 GPUs that are also Mac2.
        u64_row = _ROW_OF.get(_STUB_OF_PATH.get(name))
        if (ary.dtype == types.uint64 and u64_row is not None and u64_row.native_u64
                and _space(ary) == "device"):
            return
        raise UnsupportedFeatureError(f"metal.{name} on a {_space(ary)} {ary.dtype} array: {U64_ATOMICS}; use "
                                      "int32, uint32 or float32 otherwise")
    if ary.dtype not in (types.int32, types.uint32, types.float32, types.float16):
        raise UnsupportedFeatureError(f"metal.{name}: atomics support int32, uint32 and float32 "
                                      f"arrays, not {ary.dtype}")
    nidx = len(idx) if isinstance(idx, types.BaseTuple) else 1
    comps = idx.types if isinstance(idx, types.BaseTuple) else (idx,)
    ok = all(isinstance(types.unliteral(t), _INDEX_TYPES) for t in comps)
    if not ok or nidx != ary.ndim:
        raise UnsupportedFeatureError(f"metal.{name}: the index must be {ary.ndim} integer(s) for a "
                                      f"{ary.ndim}-d array (a float is converted to an integer, as numba.cuda "
                                      f"does), got {idx}")
    if not ary.mutable:
        raise UnsupportedFeatureError(f"metal.{name}: the array is read-only")


def _update_template(stub, row):
    class Template(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            name = stub.path
            if kws or len(args) != 3:
                raise UnsupportedFeatureError(f"metal.{name}(ary, idx, val) takes 3 arguments")
            ary, idx, val = (types.unliteral(a) for a in args)
            _check_array(name, ary, idx)
            if ary.dtype not in row.dtypes:
                spelt = " or ".join(str(t) for t in row.dtypes)
                article = "an" if spelt.startswith("int") else "a"
                raise UnsupportedFeatureError(f"metal.{name}: needs {article} {spelt} array (as numba.cuda), "
                                              f"not {ary.dtype}")
            return signature(ary.dtype, ary, idx, ary.dtype)

    Template.__name__ = f"Metal_atomic_{row.name}"
    return types.Function(Template)


for _stub, _row in _ROW_OF.items():
    typing.register_global(_stub, _update_template(_stub, _row))


class CasTemplate(AbstractTemplate):
    key = cas

    def generic(self, args, kws):
        if kws or len(args) != 4:
            raise UnsupportedFeatureError("metal.atomic.cas(ary, idx, old, val) takes 4 arguments")
        ary, idx, old, val = (types.unliteral(a) for a in args)
        _check_array("atomic.cas", ary, idx)
        if ary.dtype == types.float32:
            raise UnsupportedFeatureError("metal.atomic.cas: needs an int32 or uint32 array (as numba.cuda)")
        return signature(ary.dtype, ary, idx, ary.dtype, ary.dtype)


class CompareAndSwapTemplate(AbstractTemplate):
    key = compare_and_swap

    def generic(self, args, kws):
        if kws or len(args) != 3:
            raise UnsupportedFeatureError("metal.atomic.compare_and_swap(ary, old, val) takes 3 arguments")
        ary, old, val = (types.unliteral(a) for a in args)
        if not isinstance(ary, types.Array) or ary.ndim != 1:
            raise UnsupportedFeatureError("metal.atomic.compare_and_swap needs a 1-d array")
        _check_array("atomic.compare_and_swap", ary, types.intp)
        if ary.dtype == types.float32:
            raise UnsupportedFeatureError("metal.atomic.compare_and_swap: needs an int32 or uint32 array")
        return signature(ary.dtype, ary, ary.dtype, ary.dtype)


class CompareExchangeTemplate(AbstractTemplate):
    key = atomic_compare_exchange

    def generic(self, args, kws):
        if kws or len(args) != 4:
            raise UnsupportedFeatureError("metal.atomic_compare_exchange(ary, idx, expected, desired) takes "
                                          "4 arguments")
        ary, idx, old, val = (types.unliteral(a) for a in args)
        _check_array("atomic_compare_exchange", ary, idx)
        return signature(types.Tuple((ary.dtype, types.boolean)), ary, idx, ary.dtype, ary.dtype)


class HalfAtomicAddTemplate(AbstractTemplate):
    key = half_atomic_add

    def generic(self, args, kws):
        name = half_atomic_add.path
        if kws or len(args) != 3:
            raise UnsupportedFeatureError(f"metal.{name}(ary, idx, val) takes 3 arguments: numba-metal kernels "
                                          "have no pointers, so the address of numba.cuda's "
                                          "atomicAdd(address, val) is an array and an index")
        ary, idx, val = (types.unliteral(a) for a in args)
        _check_array(name, ary, idx)
        if ary.dtype != types.float16:
            raise UnsupportedFeatureError(f"metal.{name}: needs a float16 array, not {ary.dtype}; use "
                                          "metal.atomic.add for other element types")
        if _space(ary) == "threadgroup" and not ary.aligned:
            raise UnsupportedFeatureError(f"metal.{name} on a view of a shared float16 array (such as sm[i]): "
                                          "the half's 32-bit word is found from its index, so the array must "
                                          "start a word, which a view may not; index the shared array itself "
                                          f"with all its indices: metal.{name}(sm, (i, j), val)")
        return signature(types.float16, ary, idx, types.float16)


typing.register_global(half_atomic_add, types.Function(HalfAtomicAddTemplate))
typing.register_global(cas, types.Function(CasTemplate))
typing.register_global(compare_and_swap, types.Function(CompareAndSwapTemplate))
typing.register_global(atomic_compare_exchange, types.Function(CompareExchangeTemplate))

# ---------------------------------------------------------------------------------------------
# Lowering
# ---------------------------------------------------------------------------------------------

_MSL_TYPE = {types.int32: "int", types.uint32: "uint", types.float32: "float"}
_RELAXED = "memory_order_relaxed"

def _memory(lc, aty) -> str:
    """The prelude's name for the memory an array is in."""
    space = _space(aty)
    if space == "threadgroup":
        return "tg"
    return "cdev" if lc.module.coherent else "dev"


def _helper(lc, aty, operation: str) -> str:
    memory = _memory(lc, aty)
    helper = msl.join_names("nm_atomic", operation, memory)
    lc.need(helper)
    return helper


@lowering.call(*_ROW_OF)
def _lower_update(lc, sig, args):
    row = _ROW_OF[lc.callee]
    ary, idx, val = args
    aty = types.unliteral(sig.args[0])
    dtype = aty.dtype
    space = _space(aty)
    ptr = _address(lc, ary, idx)
    v = lc.cast(val, dtype)
    if dtype == types.uint64:
        if not _result_unused(lc):
            lc.error(f"metal.atomic.{row.name} on a uint64 array: its old value is used, but {U64_ATOMICS}; "
                     "call it as a statement")
        lc.require_language_version(msl.VERSION_3_1)
        atomic = msl.pointer_cast(lc.pointer(space, "atomic_ulong"), ptr)
        lc.emit(msl.statement(msl.call(row.native_u64, atomic, v, _RELAXED)))
        return Value(msl.cast("ulong", "0"), dtype)   # never read (checked above)
    if dtype in (types.int32, types.uint32):
        if row.native_int:
            atomic = msl.pointer_cast(lc.pointer(space, "atomic_" + _MSL_TYPE[dtype]), ptr)
            return Value(msl.call(row.native_int, atomic, v, _RELAXED), dtype)
        return Value(msl.call(_helper(lc, aty, row.loop), ptr, v), dtype)
    # float32
    if row.name == "exch":   # the same bits through atomic_uint
        atomic = msl.pointer_cast(lc.pointer(space, "atomic_uint"), ptr)
        old = msl.call(row.native_int, atomic, msl.reinterpret("uint", v), _RELAXED)
        return Value(msl.reinterpret("float", old), dtype)
    if row.native_float and space == "device":
        atomic = msl.pointer_cast(lc.pointer(space, "atomic_float"), ptr)
        return Value(msl.call(row.native_float, atomic, v, _RELAXED), dtype)
    return Value(msl.call(_helper(lc, aty, row.loop), ptr, v), dtype)


def _result_unused(lc) -> bool:
    """True if nothing reads the result of the call being lowered (an expression statement)."""
    from numba.core import ir
    target = None
    for block in lc.func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and stmt.value is lc.call:
                target = stmt.target.name
    if target is None:
        return False
    for block in lc.func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and stmt.value is lc.call:
                continue
            if any(v.name == target for v in stmt.list_vars()):
                return False
    return True


@lowering.call(half_atomic_add)
def _lower_half_atomic_add(lc, sig, args):
    ary, idx, val = args
    aty = types.unliteral(sig.args[0])
    ptr = _address(lc, ary, idx)
    value = lc.cast(val, types.float16)
    if _space(aty) == "threadgroup":
        # The half's place in its 32-bit word from its index, by pointer subtraction (legal MSL in every
        # address space; a threadgroup pointer is never cast to an integer): a shared array starts a word
        # (it is declared as 32-bit words, the pool and dynamic memory are 16-byte aligned), and typing
        # refuses views, which may not.
        return Value(msl.call(_helper(lc, aty, "hadd"), msl.member(ary.expr, "data"), ptr, value), types.float16)
    return Value(msl.call(_helper(lc, aty, "hadd"), ptr, value), types.float16)


@lowering.call(cas)
def _lower_cas(lc, sig, args):
    ary, idx, old, val = args
    aty = types.unliteral(sig.args[0])
    ptr = _address(lc, ary, idx)
    return Value(msl.call(_helper(lc, aty, "cas"), ptr, lc.cast(old, aty.dtype), lc.cast(val, aty.dtype)),
                 aty.dtype)


@lowering.call(compare_and_swap)
def _lower_compare_and_swap(lc, sig, args):
    ary, old, val = args
    aty = types.unliteral(sig.args[0])
    ptr = msl.address_of(msl.index(msl.member(ary.expr, "data"), 0))
    sanitize.access(lc, getattr(aty, "address_space", None), ptr, [msl.long_literal(0)], sanitize.ATOMIC,
                    sanitize.called_array(lc))
    return Value(msl.call(_helper(lc, aty, "cas"), ptr, lc.cast(old, aty.dtype), lc.cast(val, aty.dtype)),
                 aty.dtype)


@lowering.call(atomic_compare_exchange)
def _lower_compare_exchange(lc, sig, args):
    ary, idx, old, val = args
    aty = types.unliteral(sig.args[0])
    dtype = aty.dtype
    ptr = _address(lc, ary, idx)
    rt = sig.return_type
    expected = lc.cast(old, dtype)
    oldv = lc.tmp(dtype)
    is_float = dtype == types.float32
    lc.emit(msl.assign(oldv, msl.call(_helper(lc, aty, "casf" if is_float else "cas"), ptr, expected,
                                      lc.cast(val, dtype))))
    if is_float:  # the same bits, so that a NaN that was there counts as found
        success = msl.binary("==", msl.reinterpret("uint", oldv), msl.reinterpret("uint", expected))
    else:
        success = msl.binary("==", oldv, expected)
    return Value(msl.aggregate(lc.msl_type(rt), [oldv, success]), rt)


__all__ = ["atomic", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_exchange",
           "atomic_compare_exchange"]

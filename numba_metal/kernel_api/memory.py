"""Kernel memory: threadgroup (shared), per-thread (local) and constant arrays.

- ``metal.shared.array(shape, dtype)`` / ``metal.shared_array``: threadgroup memory shared by the
  threads of a threadgroup. Each call site is one array (also inside loops). ``shape`` 0 means
  dynamic shared memory sized by the launch's ``sharedmem`` bytes; all dynamic arrays alias it.
  Static arrays count against Metal's 32 KB of threadgroup memory at compile time.
- ``metal.local.array(shape, dtype)`` / ``metal.local_array``: an array private to each thread.
- ``metal.const.array_like(host_array)``: the array's data baked into the kernel as constant memory.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Kernel memory"

import math
import types as pytypes

import numpy as np
from numba.core import types
from numba.core.errors import TypingError
from numba.core.typing.npydecl import parse_dtype, parse_shape
from numba.core.typing.templates import AbstractTemplate, CallableTemplate, signature

from numba_metal.compiler import msl
from numba_metal.compiler.arrays import array_value
from numba_metal.compiler.arraytypes import MetalArray, in_space
from numba_metal.compiler.constants import lower_constant_array
from numba_metal.compiler.lowering import registry as lowering
from numba_metal.compiler.declarations import registry as typing
from numba_metal.errors import UnsupportedFeatureError

from .stubs import Stub


def _namespace(name: str, doc: str, **members) -> pytypes.ModuleType:
    module = pytypes.ModuleType(f"numba_metal.metal.{name}", doc)
    for key, value in members.items():
        setattr(module, key, value)
    return module


shared_array = Stub("shared.array", "shared.array(shape, dtype): an array in threadgroup memory")
local_array = Stub("local.array", "local.array(shape, dtype): an array private to each thread")
const_array_like = Stub("const.array_like", "const.array_like(ary): ary's data as constant memory")

shared = _namespace("shared", "Threadgroup (shared) memory.", array=shared_array)
local = _namespace("local", "Per-thread (local) memory.", array=local_array)
const = _namespace("const", "Constant memory.", array_like=const_array_like)


def _dtype(stub, dtype):
    try:
        nbdtype = parse_dtype(dtype)
    except TypingError as e:   # Numba's words, as numba.cuda gives them: "Invalid NumPy dtype specified: 'int33'"
        raise UnsupportedFeatureError(f"metal.{stub.path}(shape, dtype): {e}; use a Numba type such as "
                                      "metal.float32 or a NumPy dtype such as np.float32") from None
    if nbdtype is None:
        raise UnsupportedFeatureError(f"metal.{stub.path}(shape, dtype): {dtype} is not a dtype; use a "
                                      "Numba type such as metal.float32 or a NumPy dtype such as np.float32")
    return nbdtype


def _shape_and_dtype(stub, shape, dtype):
    ndims = parse_shape(shape)
    nbdtype = _dtype(stub, dtype)
    if ndims is None:
        raise UnsupportedFeatureError(
            f"metal.{stub.path}(shape, dtype) needs a constant shape (an int or a tuple of ints) and "
            f"a dtype such as np.float32; got shape {shape} and dtype {dtype}")
    if isinstance(nbdtype, types.Record):
        return ndims, nbdtype
    if msl.scalar_type(nbdtype) is None and nbdtype not in (types.complex64, types.complex128):
        raise UnsupportedFeatureError(f"metal.{stub.path}: dtype {nbdtype} is not supported")
    return ndims, nbdtype


def _array_template(stub, space):
    class ArrayTemplate(CallableTemplate):
        key = stub
        prefer_literal = True  # the shape must be a constant: keep its literal value

        def generic(self):
            def typer(shape, dtype, alignment=None):
                # The dtype first: Numba retries without literals, where the shape error would hide it.
                _dtype(stub, dtype)
                try:
                    _literal_shape(shape, stub)
                except UnsupportedFeatureError as e:
                    # numba.cuda's words too (Numba's report of a template that did not apply)
                    raise UnsupportedFeatureError(
                        f"{e.message}\nNo implementation of function Function(<function {stub.path}>) found for "
                        f"signature:\n \n >>> array(shape={shape}, dtype={dtype})") from None
                ndims, nbdtype = _shape_and_dtype(stub, shape, dtype)
                return MetalArray(in_space(nbdtype, space), ndims, "C", space)
            return typer

    ArrayTemplate.__name__ = f"Metal_{stub.path.replace('.', '_')}"
    return ArrayTemplate


typing.register_global(shared_array, types.Function(_array_template(shared_array, "threadgroup")))
typing.register_global(local_array, types.Function(_array_template(local_array, "thread")))


class ConstArrayLike(AbstractTemplate):
    key = const_array_like

    def generic(self, args, kws):
        if kws or len(args) != 1 or not isinstance(args[0], types.Array):
            raise UnsupportedFeatureError("metal.const.array_like(ary) takes one NumPy array (a global "
                                          "or closure variable)")
        (ary,) = args
        return signature(MetalArray(in_space(ary.dtype, "constant"), ary.ndim, "C", "constant", readonly=True), ary)


typing.register_global(const_array_like, types.Function(ConstArrayLike))


def _literal_shape(ty, stub=None) -> tuple[int, ...]:
    what = "metal." + stub.path if stub is not None else "the array"
    if isinstance(ty, types.IntegerLiteral):
        dims = (ty.literal_value,)
    elif isinstance(ty, types.BaseTuple) and all(isinstance(t, types.IntegerLiteral) for t in ty.types):
        dims = tuple(t.literal_value for t in ty.types)
    elif isinstance(ty, types.List):
        raise UnsupportedFeatureError(f"{what}: the shape must be a constant int or tuple of ints, not a list "
                                      f"({ty}); write it as a tuple, (a, b) rather than [a, b]")
    else:
        raise UnsupportedFeatureError(f"{what}: the shape must be a constant int or tuple of ints "
                                      f"(a literal, global or closure value), not a run-time {ty}")
    if any(d < 0 for d in dims):
        raise UnsupportedFeatureError(f"{what}: negative dimensions in shape {dims}")
    return dims


@lowering.call(shared_array)
def _lower_shared(lc, sig, args, **kws):
    rt = sig.return_type
    shape = _literal_shape(sig.args[0])
    elem = lc.element_type(rt.dtype)
    itemsize = rt.dtype.bitwidth // 8 if hasattr(rt.dtype, "bitwidth") else 1
    total = math.prod(shape) if shape else 0   # Python integers: a size never wraps to 0 (dynamic memory)
    if total == 0:
        # Dynamic shared memory: sized by the launch's sharedmem argument; every dynamic array aliases it.
        data, nbytes = lc.dynamic_shared_memory()
        n = msl.binary("/", msl.cast("long", nbytes), msl.long_literal(itemsize))
        return array_value(lc, rt, msl.pointer_cast(msl.pointer("threadgroup", elem), data),
                           [n] + [1] * (len(shape) - 1), [msl.long_literal(1)] * len(shape))
    words = isinstance(rt.dtype, types.Record)
    return array_value(lc, rt, lc.shared_array(elem, total, total * itemsize, words=words), list(shape))


@lowering.call(local_array)
def _lower_local(lc, sig, args, **kws):
    rt = sig.return_type
    shape = _literal_shape(sig.args[0])
    elem = lc.element_type(rt.dtype)
    itemsize = rt.dtype.bitwidth // 8 if hasattr(rt.dtype, "bitwidth") else 1
    total = math.prod(shape) if shape else 0
    if total <= 0:
        lc.error("metal.local.array needs a positive constant size")
    words = isinstance(rt.dtype, types.Record)
    return array_value(lc, rt, lc.local_array(elem, total, total * itemsize, words=words), list(shape))


@lowering.call(const_array_like)
def _lower_const(lc, sig, args, **kws):
    (var_value,) = args
    ary = lc.argument_value(0)
    if not isinstance(ary, np.ndarray):
        lc.error("metal.const.array_like(ary) needs a NumPy array known at compile time (a global or "
                 "closure variable)")
    return lower_constant_array(lc, ary, sig.return_type)


__all__ = ["shared", "local", "const", "shared_array", "local_array"]

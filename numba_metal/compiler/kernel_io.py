"""What a kernel tells the host: the debug error record (out-of-bounds indices and raised exceptions)
and ``print()`` output. This module owns both formats; the compiler writes them, the host reads them
(``numba_metal/host/kernel_output.py``), and neither spells the other's numbers.

**The error record** (``debug=True``) is one buffer of :data:`ERROR_RECORD_WORDS` uint words per
launching thread (``abi.KernelABI.error_slot``): the first failing thread of a launch claims it by a
compare-and-swap of the flag word and fills in what happened (:data:`RECORD`): a bounds violation
(prelude ``nm_in_bounds``) or a ``raise``/failed ``assert`` (prelude ``nm_raise``), whose site is an
index into the kernel ABI's :attr:`~numba_metal.compiler.abi.KernelABI.raise_sites`.

``raise`` follows numba.cuda: with ``debug=True`` the exception (its class and constant arguments)
reaches the host at the launch (which waits for a debug kernel), naming the kernel, the thread and the
Python line (numba.cuda's words included); as Numba's Python error model, a zero divisor
(``operators.py``) and a tuple index out of range (``raise_if``) raise too; the raising
thread stops (a device function that raised makes its callers return too). Without ``debug`` the
thread just stops and nothing is reported, and ``assert`` statements are compiled out.

**print()** appends one record per call to a print buffer bound at
:attr:`~numba_metal.compiler.abi.KernelABI.print_slot`: a header of :data:`PRINT_HEADER_WORDS` words
(the bytes used, the records lost because the buffer was full, the capacity in words), then records of
``2 + 2 * values`` words: the 64-bit key of the call's format (:func:`format_key`, a digest of its
description, so that the compiler stays pure and the host finds the format among those of every kernel
it launched) and each value as 64 bits. A format (:func:`print_format`) is the list of pieces numba.cuda
prints: literal text and values (``i`` int64, ``u`` uint64, ``f`` float32 and ``d`` float64, both printed
as C's ``%f`` as numba.cuda's ``printf`` prints them, ``b`` bool), items separated by spaces and ended by a
newline; tuples as Python writes them and ``threadIdx``-like values as ``(x, y, z)`` (numba.cuda's
printimpl). A float64 travels as its IEEE bit pattern and is formatted on the host, so it prints exactly
(a kernel that computes float64 in float32, ``precision.py``, prints the float32 it has). The order of
records is the order in which threads reserved them: launches on one stream in launch order, threads
within a launch in no fixed order.
"""

from __future__ import annotations

import json
import struct
from typing import NamedTuple

from numba_metal.runtime.digests import sha256

#: Words of the debug error record and what each holds.
ERROR_RECORD_WORDS = 16
RECORD = {
    "flag": 0,        # 0: nothing happened; 1: the rest is filled in
    "what": 1,        # bounds: the array's id (KernelABI.array_names); raise: the site's index
    "axis": 2,        # bounds: the axis
    "line": 3,        # the Python line
    "gid": 4,         # 4, 5, 6: the thread's position in the grid
    "kind": 7,        # KIND_BOUNDS or KIND_RAISE
    "index": 8,       # bounds: the index (8 low, 9 high word)
    "extent": 10,     # bounds: the axis' extent (10 low, 11 high word)
}
KIND_BOUNDS = 0
KIND_RAISE = 1

#: The print buffer's header: bytes used (atomic), records lost, capacity in words (written by the host).
PRINT_HEADER_WORDS = 4
PRINT_USED, PRINT_LOST, PRINT_CAPACITY = 0, 1, 2


class RaiseSite(NamedTuple):
    """One ``raise`` (or ``assert``) statement of a kernel or its device functions: the exception's
    class (its module and qualified name) and constant arguments, and where it is."""

    module: str
    qualname: str
    args: tuple
    filename: str
    line: int
    function: str


def raise_site(exc_class, exc_args, loc, function: str) -> RaiseSite:
    args = tuple(exc_args or ())
    if any(not isinstance(a, (str, int, float, bool, type(None))) for a in args):
        raise TypeError("exception arguments must be str, int, float, bool or None constants")
    return RaiseSite(exc_class.__module__, exc_class.__qualname__, args, loc.filename if loc else "?",
                     loc.line if loc else 0, function)


def is_assertion(exc_class) -> bool:
    return isinstance(exc_class, type) and issubclass(exc_class, AssertionError)


# -- print ---------------------------------------------------------------------------------------

#: Value kinds of a print format: how the host reads the 64 bits of a value.
PRINT_KINDS = ("i", "u", "f", "d", "b")


def format_key(description: str) -> int:
    """The 64-bit key a print record carries for the format ``description``."""
    return int.from_bytes(sha256(description.encode()).digest()[:8], "little")


def describe(pieces) -> str:
    """The canonical text of a format: pieces are ``("s", text)`` or ``(kind,)`` for a value."""
    return json.dumps([list(p) for p in pieces], separators=(",", ":"))


def pieces_of(description: str) -> list:
    return [tuple(p) for p in json.loads(description)]


def render(pieces, words) -> str:
    """The text of one record: ``words`` holds its values as (low, high) 32-bit words."""
    out = []
    k = 0
    for p in pieces:
        if p[0] == "s":
            out.append(p[1])
            continue
        bits = int(words[2 * k]) | (int(words[2 * k + 1]) << 32)
        k += 1
        if p[0] == "i":
            out.append(str(bits - (1 << 64) if bits >= 1 << 63 else bits))
        elif p[0] == "u":
            out.append(str(bits))
        elif p[0] == "b":
            out.append("True" if bits else "False")
        elif p[0] == "d":
            out.append("%f" % struct.unpack("<d", struct.pack("<Q", bits))[0])
        else:
            out.append("%f" % struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0])
    return "".join(out)


def value_count(pieces) -> int:
    return sum(1 for p in pieces if p[0] != "s")


# -- lowering (called by codegen; Numba is imported only here, so the host reads the formats without it)


def lower_print(lc, stmt) -> None:
    """A ``print(...)`` statement: one record of the print buffer."""
    from numba.core import types
    from . import msl
    from .lowering import Value, registry
    pieces, values = [], []

    def item(value, nested: bool):
        ty = value.type
        if isinstance(ty, types.StringLiteral):
            pieces.append(("s", repr(ty.literal_value) if nested else ty.literal_value))
            return
        ty = types.unliteral(ty)
        if isinstance(ty, types.BaseTuple):
            pieces.append(("s", "("))
            for k, t in enumerate(ty.types):
                if k:
                    pieces.append(("s", ", "))
                item(Value(msl.member(value.expr, msl.tuple_field(k)), t), True)
            pieces.append(("s", ",)" if len(ty) == 1 else ")"))
        elif isinstance(ty, types.Boolean):
            pieces.append(("b",))
            values.append(msl.cast("ulong", lc.truth(value)))
        elif isinstance(ty, types.Integer):
            pieces.append(("i",) if ty.signed else ("u",))
            values.append(msl.cast("ulong", lc.cast(value, types.int64 if ty.signed else types.uint64)))
        elif lc.is_float64(ty):
            pieces.append(("d",))
            values.append(msl.member(lc.cast(value, types.float64), msl.FLOAT64_BITS))
        elif isinstance(ty, types.Float):
            pieces.append(("f",))
            values.append(msl.cast("ulong", msl.reinterpret("uint", lc.cast(value, types.float32))))
        elif isinstance(ty, types.NoneType):
            pieces.append(("s", "None"))
        elif getattr(ty, "compile_time_only", False) and all(registry.find_attribute(ty, a) for a in "xyz"):
            # numba.cuda's Dim3 (threadIdx, blockIdx, blockDim, gridDim): "(x, y, z)".
            pieces.append(("s", "("))
            for k, a in enumerate("xyz"):
                if k:
                    pieces.append(("s", ", "))
                item(registry.find_attribute(ty, a)(lc, value, a, types.int32), True)
            pieces.append(("s", ")"))
        else:
            hint = (" (nor in numba.cuda); print its .real and .imag" if isinstance(ty, types.Complex) else
                    "; print numbers, booleans, string constants and tuples of them")
            lc.error(f"print() of {ty} is not supported in Metal kernels{hint}")

    if stmt.vararg is not None:
        lc.error("print(*args) is not supported in Metal kernels; pass the values one by one")
    for k, arg in enumerate(stmt.args):
        if k:
            pieces.append(("s", " "))
        item(lc.value(arg), False)
    pieces.append(("s", "\n"))
    merged = []
    for p in pieces:
        if p[0] == "s" and merged and merged[-1][0] == "s":
            merged[-1] = ("s", merged[-1][1] + p[1])
        else:
            merged.append(p)
    description = describe(merged)
    lc.module.print_formats.append(description)
    lc.need("nm_print_begin")
    key = format_key(description)
    record = lc.fresh_name("nm_rec")
    lc.declare(msl.declare(msl.pointer("device", "uint"), record))
    lc.emit(msl.assign(record, msl.call("nm_print_begin", msl.ENV_PARAM, msl.uint_literal(2 + 2 * len(values)),
                                        msl.uint_literal(key & 0xFFFFFFFF), msl.uint_literal(key >> 32))))
    for k, v in enumerate(values):
        lc.emit(msl.statement(msl.call("nm_print_put", record, msl.uint_literal(k), v)))


def lower_raise(lc, term) -> None:
    """A ``raise`` (an ``ir.StaticRaise``: the frontend refuses raises whose arguments are not constants)
    or the raise of an ``assert`` that debug=True keeps: record it, stop the thread."""
    from . import msl
    site = 0
    if lc.debug:
        try:
            entry = raise_site(term.exc_class, term.exc_args, term.loc, lc.tf.name)
        except TypeError as e:
            lc.error(str(e))
        sites = lc.module.raise_sites
        if entry not in sites:
            sites.append(entry)
        site = sites.index(entry)
    lc.need("nm_raise")
    lc.module.uses_raise = True
    lc.raises = True
    if lc.debug or not lc.module.error_record:
        lc.emit(msl.statement(msl.call("nm_raise", msl.ENV_PARAM, msl.uint_literal(site), msl.uint_literal(lc.line()))))
    else:   # a sanitizing kernel without debug=True: the thread stops, nothing is recorded (as without debug)
        lc.emit(msl.assign(msl.unary("*", lc.env("raised")), msl.uint_literal(1)))
    lc.emit(lc.return_after_raise())


def raise_if(lc, condition: str, exc_class, exc_args: tuple) -> None:
    """Under debug=True, raise ``exc_class(*exc_args)`` where ``condition`` holds, at the current line, as
    Numba's Python error model raises it for a checked operation (an out-of-range tuple index: numba.cuda's
    ``IndexError('tuple index out of range')``); without debug nothing is emitted."""
    from . import msl
    if not lc.debug:
        return
    entry = raise_site(exc_class, exc_args, lc.loc, lc.tf.name)
    sites = lc.module.raise_sites
    if entry not in sites:
        sites.append(entry)
    lc.need("nm_raise")
    lc.module.uses_raise = True
    lc.raises = True
    lc.emit(msl.if_statement(condition, " ".join((
        msl.statement(msl.call("nm_raise", msl.ENV_PARAM, msl.uint_literal(sites.index(entry)),
                               msl.uint_literal(lc.line()))),
        lc.return_after_raise()))))


def compiled_out_assertions(func_ir) -> set:
    """The blocks that only raise AssertionError: without debug=True, asserts are compiled out."""
    from numba.core import ir
    return {label for label, block in func_ir.blocks.items()
            if isinstance(block.terminator, ir.StaticRaise) and is_assertion(block.terminator.exc_class)}

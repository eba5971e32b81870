"""``enumerate``, ``zip`` and ``iter`` in kernels, as Numba types them (``types.EnumerateType``,
``types.ZipType``): an iterator is a value holding its sources' iterators (an enumerate's count too),
advanced in place by ``next``; these wrap the iterators of ranges, tuples and arrays (:mod:`.slicing`), and
each other (``enumerate(zip(x, y))``, ``zip(enumerate(x), y)``). ``lower_getiter``/``lower_iternext`` are
``iter``/``next`` of every iterable a kernel can loop over (codegen.py calls them).
"""

from __future__ import annotations

import functools

from numba.core import types

from . import conversions, msl, slicing
from .lowering import Value

#: Members of the MSL structs of the iterators (module_builder.py defines them).
SOURCE = "src"
COUNT = "count"


def source_member(k: int) -> str:
    """The member of a zip iterator holding its ``k``-th source's iterator."""
    return msl.numbered(SOURCE, k)


def getiter(lc, src: Value, iter_ty) -> Value:
    """``iter(it)`` of an iterator is the iterator itself (Numba's typing says so)."""
    return Value(src.expr, iter_ty)


def make_enumerate(lc, iterable: Value, start: Value | None, enum_ty) -> Value:
    """``enumerate(iterable[, start])``: the iterable's iterator and the count of the next item."""
    source = lc.getiter(iterable, enum_ty.source_type)
    count = lc.cast(start, types.intp) if start is not None else msl.long_literal(0)
    return Value(msl.aggregate(lc.msl_type(enum_ty), [source.expr, count]), enum_ty)


def make_zip(lc, iterables, zip_ty) -> Value:
    """``zip(a, b, ...)``: the iterators of its arguments."""
    sources = [lc.getiter(v, t).expr for v, t in zip(iterables, zip_ty.source_types)]
    return Value(msl.aggregate(lc.msl_type(zip_ty), sources), zip_ty)


def _next_of(lc, it_expr: str, it_ty) -> str:
    """A temporary holding ``next()`` of the iterator ``it_expr`` (a pair: item, valid)."""
    pair_ty = types.Pair(it_ty.yield_type, types.boolean)
    return lc.tmp(pair_ty, lc.iternext(Value(it_expr, it_ty), pair_ty).expr)


def iternext(lc, it: Value, pair_ty) -> Value:
    """``next(it)`` of an enumerate (``(count, item)``, the count advancing with the source) or a zip
    (a tuple of one item of each source, valid while every source has one)."""
    ty = it.type
    pair = lc.tmp(pair_ty)
    yield_ty = pair_ty.first_type
    if isinstance(ty, types.EnumerateType):
        inner = _next_of(lc, msl.member(it.expr, SOURCE), ty.source_type)
        count = msl.member(it.expr, COUNT)
        items = [count, msl.member(inner, "first")]
        valid = msl.member(inner, "second")
        advance = [msl.add_assign(count, msl.long_literal(1))]
    else:
        inners = [_next_of(lc, msl.member(it.expr, source_member(k)), t) for k, t in enumerate(ty.source_types)]
        items = [msl.member(p, "first") for p in inners]
        valid = functools.reduce(lambda a, b: msl.binary("&&", a, b), [msl.member(p, "second") for p in inners])
        advance = []
    lc.emit(msl.assign(msl.member(pair, "second"), valid))
    lc.emit(msl.if_statement(msl.member(pair, "second"), " ".join(
        [msl.assign(msl.member(pair, "first"), msl.aggregate(lc.msl_type(yield_ty), items))] + advance)))
    return Value(pair, pair_ty)


def lower_getiter(lc, src: Value, tty) -> Value:
    """``iter(src)`` in a kernel: an iterator of type ``tty`` over a range, a tuple, an array or an iterator."""
    if isinstance(src.type, types.IteratorType):
        return getiter(lc, src, tty)
    if isinstance(src.type, types.RangeType):
        return Value(msl.call("nm_getiter", src.expr), tty)
    if isinstance(src.type, types.UniTuple):
        return Value(msl.aggregate(lc.msl_type(tty), [src.expr, msl.long_literal(0)]), tty)
    if isinstance(src.type, types.Array):
        return slicing.lower_getiter(lc, src, tty)
    lc.error(f"iterating over {src.type} is not supported in Metal kernels; iterate over a "
             "range(), a tuple or an array")


def lower_iternext(lc, it: Value, tty) -> Value:
    """``next(it)``: a pair (item, valid) of type ``tty``; the iterator ``it`` (an lvalue) advances."""
    if isinstance(it.type, (types.EnumerateType, types.ZipType)):
        return iternext(lc, it, tty)
    if isinstance(it.type, types.RangeIteratorType):
        return Value(msl.call("nm_iternext", it.expr), tty)
    if isinstance(it.type, types.UniTupleIter):
        n = it.type.container.count
        pair = lc.tmp(tty)
        position = msl.member(it.expr, "i")
        lc.emit(msl.assign(msl.member(pair, "second"), msl.binary("<", position, msl.long_literal(n))))
        lc.open_block(msl.if_(msl.member(pair, "second")))
        item = conversions.tuple_item(lc, Value(msl.member(it.expr, "t"), it.type.container), position)
        lc.emit(msl.assign(msl.member(pair, "first"), item))
        lc.emit(msl.add_assign(position, msl.long_literal(1)))
        lc.close_block()
        return Value(pair, tty)
    if isinstance(it.type, types.ArrayIterator):
        return slicing.lower_iternext(lc, it, tty)
    lc.error(f"iterating over {it.type} is not supported in Metal kernels")

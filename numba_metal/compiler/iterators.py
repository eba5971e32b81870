"""``enumerate``, ``zip`` and ``iter`` in kernels, as Numba types them (``types.EnumerateType``,
``types.ZipType``): an iterator is a value holding its sources' iterators (an enumerate's count too),
advanced in place by ``next``. Ranges, tuples and arrays are iterated by :mod:`.codegen` and
:mod:`.slicing`; these wrap them, and each other (``enumerate(zip(x, y))``, ``zip(enumerate(x), y)``).
"""

from __future__ import annotations

import functools

from numba.core import types

from . import msl
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

"""Integer variables computed in 32 bits because they are exact there and only used as subscripts (issue 28
item 1).

Numba types Python integers as int64, so ``a[y - 1, x]`` computes ``y - 1`` in 64-bit arithmetic, which an
Apple GPU pays about four times for. Where an array is indexed in 32 bits (``arrays.narrow_access``: an
``Index32Array`` the launch knows is small, subscripted with components proven in ``[0, 2**32)``, or a
threadgroup, thread or constant array), this module finds the integer variables that

- the value ranges (ranges.py) prove in ``[0, 2**32)``, so that a ``uint`` holds them exactly, and
- are used only as an index component of a full-index ``getitem``/``setitem`` of such an array (the
  variable itself, or an item of a tuple whose only uses are such indices), as an operand of ``+``, ``-``
  or ``*`` (or unary ``-``) of integers whose result is such a variable, or as the source of a copy into
  one.

Any other use (a comparison, a store, a call, ``print``, a division, a return...) keeps the variable 64-bit,
so every value a program can observe keeps Numba's int64 semantics, and since every variable chosen is
exact, a 32-bit value never wraps (an index far out of bounds stays 64-bit and out of bounds). The code
generator declares the variables found ``uint`` and assigns each definition's value converted, or for
``+``, ``-``, ``*`` computed in ``uint`` (exact: the result is below ``2**32``, and the operands with it).
"""

from __future__ import annotations

import operator
from collections import Counter

from numba.core import ir, types

from . import msl, ranges
from .lowering import registry

_RING = (operator.add, operator.sub, operator.mul)


def _integer(ty) -> bool:
    return isinstance(ty, types.Integer) and ty.bitwidth <= 64


def narrowed(tf, narrow_access, facts) -> frozenset:
    """The names of ``tf``'s integer variables computed in 32 bits; ``narrow_access(ty, index_var)`` says
    whether an array of type ``ty`` indexed with ``index_var`` is indexed in 32 bits; ``facts``: the value
    ranges (ranges.py), which must prove a variable in ``[0, 2**32)``."""
    typemap = tf.typemap
    stmts = [s for b in tf.func_ir.blocks.values() for s in b.body if not isinstance(s, ir.Del)]

    def index_use(base, index_var) -> bool:
        """``base[index_var]`` indexes every axis of an array indexed in 32 bits with integers."""
        aty = typemap.get(base.name)
        ity = typemap.get(index_var.name) if index_var is not None else None
        if not isinstance(aty, types.Array) or isinstance(aty.dtype, types.Record) or \
                not narrow_access(aty, index_var):
            return False
        if _integer(ity):
            return aty.ndim == 1
        return isinstance(ity, types.BaseTuple) and len(ity) == aty.ndim and all(_integer(t) for t in ity.types)

    def index_of(stmt):
        """(array, index variable) of a getitem or setitem statement, else None."""
        if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
            index = stmt.index if isinstance(stmt, ir.SetItem) else stmt.index_var
            return (stmt.target, index) if isinstance(index, ir.Var) else None
        if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and \
                stmt.value.op in ("getitem", "static_getitem"):
            e = stmt.value
            index = e.index if e.op == "getitem" else e.index_var
            return (e.value, index) if isinstance(index, ir.Var) else None
        return None

    def uses(stmt) -> Counter:
        found = Counter(v.name for v in stmt.list_vars())
        if isinstance(stmt, ir.Assign):
            found[stmt.target.name] -= 1
        return found

    # Each statement's variable uses and the index variable of its 32-bit array access (None if it has
    # none), computed once: neither depends on the candidates the fixed point below narrows.
    table = []
    for s in stmts:
        site = index_of(s)
        table.append((s, uses(s), site[1].name if site is not None and index_use(*site) else None))

    # Tuples used only as the index of arrays indexed in 32 bits: their items are index components.
    tuples = {n for n, t in typemap.items() if isinstance(t, types.BaseTuple) and t.types
              and all(_integer(x) for x in t.types)}
    for s, used_here, index32_var in table:
        for name, n in used_here.items():
            if name in tuples and n > (1 if name == index32_var else 0):
                tuples.discard(name)

    candidates = {n for n, t in typemap.items() if _integer(t) and isinstance(facts.get(n), int)
                  and facts[n] < 2 ** 32}
    changed = True
    while changed and candidates:
        changed = False
        for s, used_here, index32_var in table:
            approved = Counter()
            if index32_var is not None:
                approved[index32_var] += 1
            if isinstance(s, ir.Assign):
                target, v = s.target.name, s.value
                if isinstance(v, ir.Var) and target in candidates:
                    approved[v.name] += 1
                elif isinstance(v, ir.Expr) and target in candidates:
                    if v.op in ("binop", "inplace_binop") and \
                            (v.fn if v.op == "binop" else v.immutable_fn) in _RING and \
                            _integer(typemap.get(v.lhs.name)) and _integer(typemap.get(v.rhs.name)):
                        approved[v.lhs.name] += 1
                        approved[v.rhs.name] += 1
                    elif v.op == "unary" and v.fn is operator.neg and _integer(typemap.get(v.value.name)):
                        approved[v.value.name] += 1
                elif isinstance(v, ir.Expr) and v.op == "build_tuple" and target in tuples:
                    for item in v.items:
                        approved[item.name] += 1
            for name, n in used_here.items():
                if name in candidates and n > approved[name]:
                    candidates.discard(name)
                    changed = True
    used = set()
    for _, used_here, _ in table:
        used.update(name for name, n in used_here.items() if n > 0)
    return frozenset(candidates & used)       # a variable nothing reads keeps its type


def lower_assigned(lc, value, target) -> str:
    """The low 32 bits of what ``target`` (a variable :func:`narrowed` chose) is assigned: ``+``, ``-``, ``*``
    of integers computed in ``uint`` (they commute with reduction modulo 2**32), anything else truncated."""
    ty = lc.typemap[target.name]
    if isinstance(ty, types.IntegerLiteral):
        return msl.uint_literal(ty.literal_value % 2 ** 32)
    op = ring_operation(value)
    if op is not None and not any(r(lc, value) for r in registry.find_rewrites(
            value.fn if value.op == "binop" else value.immutable_fn)):
        return msl.binary(op, low_bits(lc, value.lhs), low_bits(lc, value.rhs))
    if isinstance(value, ir.Var):
        return low_bits(lc, value)
    return msl.cast("uint", lc.lower_value(value, target).expr)


def low_bits(lc, var: ir.Var) -> str:
    """The low 32 bits of integer variable ``var``, as a ``uint`` expression."""
    ty = lc.typemap[var.name]
    if isinstance(ty, types.IntegerLiteral):
        return msl.uint_literal(ty.literal_value % 2 ** 32)
    if var.name in lc.index32:
        return lc.var(var.name)
    return msl.cast("uint", lc.var(var.name))


def ring_operation(expr) -> str | None:
    """The MSL operator of an integer ``+``, ``-`` or ``*`` expression, else None."""
    if isinstance(expr, ir.Expr) and expr.op in ("binop", "inplace_binop"):
        fn = expr.fn if expr.op == "binop" else expr.immutable_fn
        return {operator.add: "+", operator.sub: "-", operator.mul: "*"}.get(fn)
    return None


def narrow_ranges(tf, facts) -> dict:
    """{variable name: MSL type} of the ``range()`` objects, their iterators and iteration pairs that are
    computed in 32-bit ``int``: ranges whose start, stop and step the value ranges (``facts``, ranges.py)
    prove in ``[0, 2**31 - 1]`` (the step a constant ``>= 1``), so that every item, and the trip count, is
    exact in 32 bits; an iterator or pair used in any other way than its loop's keeps 64 bits."""
    typemap = tf.typemap
    limit = 2 ** 31 - 1
    defs: dict = {}
    for b in tf.func_ir.blocks.values():
        for s in b.body:
            if isinstance(s, ir.Assign):
                defs.setdefault(s.target.name, []).append(s.value)

    def fits(var) -> bool:
        b = facts.get(var.name)
        return isinstance(b, int) and b <= limit

    def small_range(name) -> bool:
        ds = defs.get(name, [])
        if len(ds) != 1 or not isinstance(ds[0], ir.Expr) or ds[0].op != "call" or ds[0].kws or ds[0].vararg:
            return False
        e = ds[0]
        if getattr(typemap.get(e.func.name), "typing_key", None) is not range or not 1 <= len(e.args) <= 3:
            return False
        if len(e.args) == 3:
            step = typemap.get(e.args[2].name)
            if not (isinstance(step, types.IntegerLiteral) and 1 <= step.literal_value <= limit):
                return False
        return all(fits(a) for a in e.args[:2]) and isinstance(typemap.get(name), types.RangeType)

    chosen = {n for n, t in typemap.items() if isinstance(t, types.RangeType) and small_range(n)}
    # iterators: every definition a getiter of a chosen range or a copy of a chosen iterator; pairs:
    # every definition an iternext of a chosen iterator (to a fixed point)
    kinds = {types.RangeIteratorType: ("getiter",), types.Pair: ("iternext",)}
    changed = True
    while changed:
        changed = False
        for n, t in typemap.items():
            if n in chosen or not isinstance(t, tuple(kinds)):
                continue
            ops = kinds[types.Pair] if isinstance(t, types.Pair) else kinds[types.RangeIteratorType]
            ds = defs.get(n, [])
            if ds and all(isinstance(d, ir.Var) and d.name in chosen and isinstance(t, types.RangeIteratorType)
                          or isinstance(d, ir.Expr) and d.op in ops and d.value.name in chosen for d in ds):
                chosen.add(n)
                changed = True
    # every use of a chosen variable must be its loop's: getiter, iternext, pair_first/second, or a copy
    # into another chosen variable; drop the others (and what depends on them) until nothing changes
    changed = True
    while changed:
        changed = False
        for b in tf.func_ir.blocks.values():
            for s in b.body:
                if isinstance(s, ir.Del):
                    continue
                ok = set()
                if isinstance(s, ir.Assign):
                    v = s.value
                    if isinstance(v, ir.Var) and s.target.name in chosen:
                        ok.add(v.name)
                    elif isinstance(v, ir.Expr) and v.op in ("getiter", "iternext") and s.target.name in chosen:
                        ok.add(v.value.name)
                    elif isinstance(v, ir.Expr) and v.op in ("pair_first", "pair_second"):
                        ok.add(v.value.name)
                for var in s.list_vars():
                    if var.name in chosen and var.name not in ok and not (
                            isinstance(s, ir.Assign) and var.name == s.target.name):
                        chosen.discard(var.name)
                        changed = True
        for n in list(chosen):       # a definition from a variable no longer chosen
            for d in defs.get(n, []):
                src = d if isinstance(d, ir.Var) else getattr(d, "value", None) if isinstance(d, ir.Expr) and \
                    d.op in ("getiter", "iternext") else None
                if src is not None and src.name not in chosen:
                    chosen.discard(n)
                    changed = True
    out = {}
    for n in chosen:
        t = typemap[n]
        out[n] = ("nm_range<int>" if isinstance(t, types.RangeType) else "nm_range_iter<int>"
                  if isinstance(t, types.RangeIteratorType) else "nm_pair<int, bool>")
    return out


class IndexFacts:
    """What the lowering of one function knows about its index arithmetic (mixed into codegen's
    ``FunctionLowering``, which holds the state: ``_strides``, ``_row_offsets``, ``_block``, ``_position``,
    ``_assignments``, ``_index32_idents``): compile-time strides, arrays.py's shared row offsets, the
    assignments of the block being lowered, and the value-range facts of ranges.py."""

    def note_static_strides(self, expr: str, strides: tuple) -> None:
        """The array value ``expr`` (shared, local, constant) has these compile-time strides."""
        self._strides[expr] = strides

    def static_strides(self, expr: str):
        """The compile-time strides of the array ``expr`` (a value noted, or a variable assigned only such a
        value, once), else None."""
        return self._strides.get(expr)

    def shared_offset(self, key, init: str | None = None):
        """A ``uint`` row offset shared by the subscripts of one block (arrays.py): the temporary holding
        ``key``'s, or with ``init`` a new one assigned it here. ``key`` is (array, variables...); an
        assignment to any of them forgets it."""
        if init is None:
            return self._row_offsets.get(key)
        name = self._row_offsets[key] = self.tmp(types.uint32, init)
        return name

    def shared_pointer(self, key, msl_type: str, init: str) -> str:
        """A row pointer (``msl_type``, assigned ``init`` here) shared like :meth:`shared_offset`'s offsets
        (arrays.py's neighbours of a stencil as ``p[-1]``, ``p[+stride]``)."""
        name = self._row_offsets[key] = self.fresh_name("nm_t")
        self.declare(msl.declare(msl_type, name))
        self.emit(msl.assign(name, init))
        return name

    def defined_here(self, name: str):
        """(position, value) of the only assignment of variable ``name`` if it is earlier in the block being
        lowered (arrays.py's shared row offsets), else None."""
        if self._assignments is None:
            self._assignments = Counter(s.target.name for b in self.func_ir.blocks.values() for s in b.body
                                        if isinstance(s, ir.Assign))
        if self._block is None or self._assignments[name] != 1:
            return None
        return next(((k, s.value) for k, s in enumerate(self._block[:self._position])
                     if isinstance(s, ir.Assign) and s.target.name == name), None)

    def assigned_since(self, position: int, names) -> bool:
        """A variable of ``names`` is assigned from ``position`` of the block being lowered to here."""
        return any(isinstance(s, ir.Assign) and s.target.name in names for s in self._block[position:self._position])

    def is_index32(self, expr: str) -> bool:
        """``expr`` is a variable computed in 32 bits (a ``uint`` holding an int64 value's low 32 bits)."""
        return expr in self._index32_idents

    def uint32_index(self, var: ir.Var) -> list[bool]:
        """Per component of the index variable ``var``: proven in ``[0, 2**32)`` (ranges.py)."""
        return ranges.uint32_components(self.tf, var)

    def nonnegative_index(self, var: ir.Var) -> list[bool]:
        """Per component of the index variable ``var``: proven never negative (ranges.py), so indexing
        with it needs no negative-index wrap."""
        return ranges.nonnegative_components(self.tf, var)

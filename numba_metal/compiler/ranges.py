"""Value ranges of integer variables: which can never be negative, so that indexing with them needs no
negative-index wrap (issue 28).

A flow-insensitive interval analysis over the typed IR. Each integer variable gets an upper bound ``H``
(a Python int) when every value it can hold is, mathematically, in ``[0, H]``; ``None`` when nothing is
known. The IR is not in SSA form, so a variable's bound covers all its assignments; the analysis starts
from "no value yet" and joins until nothing changes, and a bound that keeps growing (a counter in a
``while`` loop) is widened to unknown, so it terminates.

Where a bound comes from:

- non-negative integer constants; unsigned integers and booleans (their whole range);
- the kernel API's positions and sizes (``grid()``, ``threadIdx.x``...), whose bounds their families
  register (``lowering.registry.bound``) from the launch limits of :mod:`.limits`;
- array ``shape``/``size``/``len`` (``[0, 2**63 - 1]``; ``[0, 2**31 - 1]`` for the shape and size of an
  array the launch knows is small, ``arraytypes.Index32Array``);
- the variable of ``range(start, stop[, step])`` with ``start`` known non-negative and a constant
  ``step >= 1``: ``[0, H(stop) - 1]``, or ``[0, 2**63 - 2]`` when ``stop`` is unknown;
- ``a + b`` and ``a * b`` of bounded values (``H(a) + H(b)``, ``H(a) * H(b)``); ``a // b``, ``a >> b``,
  ``a << c``, ``a | b``, ``a ^ b`` of bounded values; ``a & b`` with either bounded; ``a % b`` for a
  bounded ``b`` (Python's ``%`` is in ``[0, b)`` whatever ``a``'s sign; numba-metal's ``x // 0`` and
  ``x % 0`` are 0); ``min``/``max``; integer conversions that keep the value.

A guard gives one more: ``a - c`` (``c`` a constant ``>= 0``) is non-negative where a branch on ``a >= c'``
(``c' <= a``, ``a > c' - 1``...; ``c' >= c``) was taken: in the blocks its true edge dominates, when the
variable compared is ``a`` itself, assigned in one place only, and that assignment cannot run again
after the branch. That covers ``if 1 <= y < n - 1: ... a[y - 1]``.

Only ``+`` and ``*`` accept operands whose bound exceeds ``2**63 - 1``: int64 arithmetic wraps modulo
``2**64``, which these two commute with, so their result is still the mathematical value modulo ``2**64``.
Everything else (division, comparisons, ``range`` bounds) needs an operand proven below ``2**63``.

An index needs no wrap when its bound is below :data:`INDEX_LIMIT`: either it is below ``2**63`` (it is its
mathematical value, non-negative), or int64 arithmetic wrapped it to a value below ``-2**62``, which is out
of bounds of every array with or without the wrap (an axis of ``2**62`` elements cannot exist in memory;
an empty array has no element to reach), so the access is undefined under both semantics.
"""

from __future__ import annotations

import operator

from numba.core import ir, types

from .lowering import registry

INT64_MAX = 2 ** 63 - 1
#: The largest size or axis of an array the launch knows is small (``arraytypes.Index32Array``).
INDEX32_MAX = 2 ** 31 - 1
#: An index whose bound is below this needs no negative-index wrap (see the module docstring).
INDEX_LIMIT = 2 ** 64 - 2 ** 62

_BOTTOM = object()          # no value seen yet (the start of the iteration)
_WIDEN_AFTER = 4            # changes of one variable's bound before it is widened to unknown


def bounds(tf) -> dict:
    """{variable name: bound} for the typed function ``tf``: an int, a tuple of bounds (tuples), a
    ``("range", bound of an item)`` (ranges and their iterators), or None. Cached in ``tf.extra``."""
    cached = tf.extra.get("value_ranges")
    if cached is not None:
        return cached
    assigns = [s for b in tf.func_ir.blocks.values() for s in b.body if isinstance(s, ir.Assign)]
    guards = _Guards(tf)
    facts: dict = {}
    changes: dict = {}
    changed = True
    while changed:
        changed = False
        for s in assigns:
            name = s.target.name
            new = _narrow(_eval(tf, facts, s.value, s.target), tf.typemap.get(name))
            if new is None and guards.nonnegative_difference(s):
                a = facts.get(s.value.lhs.name, _BOTTOM)
                new = _BOTTOM if a is _BOTTOM else _narrow(min(a, INT64_MAX) if isinstance(a, int) else INT64_MAX,
                                                          tf.typemap.get(name))
            if new is _BOTTOM:
                continue
            old = facts.get(name, _BOTTOM)
            joined = _join(old, new)
            if joined != old:
                changes[name] = changes.get(name, 0) + 1
                if changes[name] > _WIDEN_AFTER:
                    joined = _widen(joined)
                if joined != old:
                    facts[name] = joined
                    changed = True
    tf.extra["value_ranges"] = facts
    return facts


def index_is_nonnegative(bound) -> bool:
    """True if an index with this bound needs no negative-index wrap."""
    return isinstance(bound, int) and bound < INDEX_LIMIT


#: A value with a bound up to this is exact in a 32-bit ``uint`` (index32.py, arrays.py).
UINT32_MAX = 2 ** 32 - 1


def uint32_components(tf, var: ir.Var) -> list[bool]:
    """Per component of the index ``var``: proven in ``[0, 2**32)``, so exact in a ``uint``."""
    b = bounds(tf).get(var.name)
    items = b if isinstance(b, tuple) and (not b or b[0] != "range") else (b,)
    return [isinstance(x, int) and x <= UINT32_MAX for x in items]


def nonnegative_components(tf, var: ir.Var) -> list[bool]:
    """Per component of the index ``var`` (an integer or a tuple of integers): needs no wrap."""
    b = bounds(tf).get(var.name)
    if isinstance(b, tuple) and (not b or b[0] != "range"):
        return [index_is_nonnegative(x) for x in b]
    return [index_is_nonnegative(b)]


# ---------------------------------------------------------------------------------------------


def _join(a, b):
    if a is _BOTTOM:
        return b
    if b is _BOTTOM:
        return a
    if a is None or b is None:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if _tagged(a) or _tagged(b):
        return (a[0], _join(a[1], b[1])) if _tagged(a) and _tagged(b) and a[0] == b[0] else None
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(_join(x, y) for x, y in zip(a, b))
    return None


def _widen(a):
    if _tagged(a):
        return (a[0], None)
    if isinstance(a, tuple):
        return tuple(_widen(x) for x in a)
    return None


def _exact(b) -> bool:
    return isinstance(b, int) and b <= INT64_MAX


def _narrow(b, ty):
    """``b`` as a value of type ``ty`` holds it (narrower integers wrap, unsigned ones are never negative)."""
    if b is _BOTTOM or ty is None:
        return b
    ty = types.unliteral(ty)
    if isinstance(ty, types.Boolean):
        return 1
    if isinstance(ty, types.Integer):
        top = 2 ** ty.bitwidth - 1 if not ty.signed else 2 ** (ty.bitwidth - 1) - 1
        if not ty.signed:
            return b if isinstance(b, int) and b <= top else top
        if ty.bitwidth < 64:
            return b if isinstance(b, int) and b <= top else None
        return b if isinstance(b, int) and b < 2 ** 64 else None
    if isinstance(ty, (types.RangeType, types.RangeIteratorType)) and _tagged(b, "range"):
        return b
    if isinstance(ty, types.Pair) and _tagged(b, "pair"):
        return b
    if isinstance(ty, types.BaseTuple) and isinstance(b, tuple) and len(b) == len(ty) and not _tagged(b):
        return tuple(_narrow(x, t) for x, t in zip(b, ty.types))
    return None


def _tagged(b, *tags) -> bool:
    """``b`` is a range's or an iteration pair's bound (``tags``: one of these)."""
    return isinstance(b, tuple) and b[:1] in [(t,) for t in (tags or ("range", "pair"))]


def _const(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return tuple(_const(v) for v in value)
    return None


def _eval(tf, facts, value, target):
    if isinstance(value, ir.Var):
        return facts.get(value.name, _BOTTOM)
    if isinstance(value, ir.Arg):
        return None     # narrowed by its type: unsigned arguments get their range
    if isinstance(value, (ir.Const, ir.Global, ir.FreeVar)):
        fn = registry.find_bound(value.value)
        if fn is not None:
            return fn(tf.typemap.get(target.name))
        return _const(value.value)
    if not isinstance(value, ir.Expr):
        return None
    op = value.op
    if op in ("binop", "inplace_binop"):
        fn = value.fn if op == "binop" else value.immutable_fn
        return _binop(fn, facts.get(value.lhs.name, _BOTTOM), facts.get(value.rhs.name, _BOTTOM),
                      _literal(tf, value.rhs))
    if op == "call":
        return _call(tf, facts, value, target)
    if op == "getattr":
        return _getattr(tf, facts, value)
    if op in ("static_getitem", "getitem", "typed_getitem"):
        base = facts.get(value.value.name, _BOTTOM)
        if base is _BOTTOM:
            return _BOTTOM
        index = value.index if op == "static_getitem" else _literal(tf, value.index)
        if isinstance(base, tuple) and base[:1] not in (("range",), ("pair",)) and isinstance(index, int) \
                and -len(base) <= index < len(base):
            return base[index]
        return None
    if op == "build_tuple":
        items = [facts.get(v.name, _BOTTOM) for v in value.items]
        return _BOTTOM if any(i is _BOTTOM for i in items) else tuple(items)
    if op in ("exhaust_iter", "getiter", "cast"):
        return facts.get(value.value.name, _BOTTOM)
    if op == "iternext":
        it = facts.get(value.value.name, _BOTTOM)
        if it is _BOTTOM:
            return _BOTTOM
        return ("pair", it[1]) if isinstance(it, tuple) and it[:1] == ("range",) else ("pair", None)
    if op == "pair_first":
        pair = facts.get(value.value.name, _BOTTOM)
        return pair[1] if isinstance(pair, tuple) and pair[:1] == ("pair",) else pair
    if op == "pair_second":
        return 1
    return None


def _literal(tf, var):
    """The constant integer value of ``var``, if its type is an integer literal."""
    ty = tf.typemap.get(var.name) if isinstance(var, ir.Var) else None
    if isinstance(ty, types.IntegerLiteral):
        return ty.literal_value
    return None


def _binop(fn, a, b, b_const):
    if a is _BOTTOM or b is _BOTTOM:
        return _BOTTOM
    if fn is operator.mod and _exact(b):
        return max(b - 1, 0)        # Python's %: in [0, b) whatever a's sign (numba-metal: x % 0 == 0)
    if a is None or b is None or not isinstance(a, int) or not isinstance(b, int):
        if fn is operator.and_ and (_exact(a) or _exact(b)):
            return min(x for x in (a, b) if _exact(x))
        return None
    if fn is operator.add:
        return a + b
    if fn is operator.mul:
        return a * b
    if not (_exact(a) and _exact(b)):
        return None
    if fn is operator.floordiv:
        return a // b_const if isinstance(b_const, int) and b_const >= 1 else a
    if fn is operator.rshift:
        return a >> b_const if isinstance(b_const, int) and 0 <= b_const < 64 else a
    if fn is operator.and_:
        return min(a, b)
    if fn in (operator.or_, operator.xor):
        return 2 ** max(a.bit_length(), b.bit_length()) - 1
    if fn is operator.lshift and isinstance(b_const, int) and b_const < 64:
        return a << b_const
    return None


def _callee(tf, expr):
    fnty = tf.typemap.get(expr.func.name)
    key = getattr(fnty, "typing_key", None)
    if key is None and isinstance(fnty, types.NumberClass):
        return fnty
    return key


def _call(tf, facts, expr, target):
    key = _callee(tf, expr)
    args = [facts.get(v.name, _BOTTOM) for v in expr.args]
    if any(a is _BOTTOM for a in args):
        return _BOTTOM
    if expr.kws or expr.vararg:
        return None
    if key is range:
        return _range(tf, expr, args)
    if isinstance(key, types.NumberClass) or key is int:
        return args[0] if len(args) == 1 and _exact(args[0]) else None
    if key is len:
        return INT64_MAX
    if key is min and args and all(_exact(a) for a in args):
        return min(args)
    if key is max and args and any(_exact(a) for a in args):
        return max(a for a in args if _exact(a)) if all(_exact(a) for a in args) else INT64_MAX
    try:
        fn = registry.find_bound(key)
    except TypeError:
        fn = None
    if fn is not None:
        return fn(tf.typemap.get(target.name))
    return None


def _range(tf, expr, args):
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) in (2, 3):
        start, stop = args[0], args[1]
        step = _literal(tf, expr.args[2]) if len(args) == 3 else 1
    else:
        return None
    if not _exact(start) or not isinstance(step, int) or step < 1:
        return ("range", None)
    return ("range", max(stop - 1, 0) if _exact(stop) else INT64_MAX - 1)


def _getattr(tf, facts, expr):
    base_ty = tf.typemap.get(expr.value.name)
    if isinstance(base_ty, types.Module):       # metal.laneid
        fn = registry.find_bound(getattr(base_ty.pymod, expr.attr, None))
        return fn(tf.typemap.get(expr.value.name)) if fn is not None else None
    fn = registry.find_bound((type(base_ty), expr.attr))
    if fn is not None:
        return fn(base_ty)
    if isinstance(base_ty, types.Array):
        top = INDEX32_MAX if getattr(base_ty, "index32", False) else INT64_MAX
        if expr.attr == "shape":
            return (top,) * base_ty.ndim
        if expr.attr in ("size", "ndim"):
            return top
        if expr.attr in ("itemsize", "nbytes"):
            return INT64_MAX
    return None


class _Guards:
    """Lower bounds that branches establish (see the module docstring)."""

    _BOUNDS = {operator.ge: 0, operator.gt: 1}      # var OP c: var >= c + this
    _FLIPPED = {operator.le: operator.ge, operator.lt: operator.gt}

    def __init__(self, tf):
        self.tf = tf
        blocks = tf.func_ir.blocks
        self.defs: dict = {}
        self.block_of: dict = {}
        for label, block in blocks.items():
            for s in block.body:
                if isinstance(s, ir.Assign):
                    self.defs.setdefault(s.target.name, []).append((label, s))
                    self.block_of[id(s)] = label
        succs = {label: _successors(b) for label, b in blocks.items()}
        preds: dict = {label: [] for label in blocks}
        for label, ss in succs.items():
            for t in ss:
                preds[t].append(label)
        self.succs = succs
        self.dominators = _dominators(min(blocks), succs, preds)
        self.guards = []      # (true successor, root variable, lower bound)
        for label, block in blocks.items():
            term = block.terminator
            if not isinstance(term, ir.Branch) or preds[term.truebr] != [label] or term.truebr == label:
                continue
            found = self._compare(term.cond)
            if found is not None:
                self.guards.append((term.truebr,) + found)

    def _single(self, name):
        d = self.defs.get(name, [])
        return d[0] if len(d) == 1 else None

    def _compare(self, cond):
        """(root variable, lower bound) that ``cond`` being true establishes, or None."""
        name = cond.name
        for _ in range(16):
            d = self._single(name)
            if d is None:
                return None
            v = d[1].value
            if isinstance(v, ir.Var):
                name = v.name
            elif isinstance(v, ir.Expr) and v.op == "call" and len(v.args) == 1 and \
                    getattr(self.tf.typemap.get(v.func.name), "typing_key", None) is bool:
                name = v.args[0].name
            else:
                break
        if not (isinstance(v, ir.Expr) and v.op == "binop"):
            return None
        fn, lhs, rhs = v.fn, v.lhs, v.rhs
        if fn in self._FLIPPED:
            fn, lhs, rhs = self._FLIPPED[fn], rhs, lhs
        c = _literal(self.tf, rhs)
        if fn not in self._BOUNDS or not isinstance(c, int) or _literal(self.tf, lhs) is not None:
            return None
        if self._single(lhs.name) is None:
            return None
        return lhs.name, c + self._BOUNDS[fn]

    def nonnegative_difference(self, s) -> bool:
        """``s`` assigns ``a - c`` where a guard proves ``a >= c >= 0``."""
        v = s.value
        if not (isinstance(v, ir.Expr) and v.op == "binop" and v.fn is operator.sub):
            return False
        c = _literal(self.tf, v.rhs)
        if not isinstance(c, int) or c < 0:
            return False
        here = self.block_of.get(id(s))
        for target, var, low in self.guards:
            if var == v.lhs.name and low >= c and target in self.dominators.get(here, ()) \
                    and not self._reassigned_after(var, target):
                return True
        return False

    def _reassigned_after(self, var, start) -> bool:
        """``var``'s (single) definition is in block ``start`` or can run again after it is entered."""
        def_block = self._single(var)[0]
        seen, work = set(), list(self.succs[start])
        while work:
            label = work.pop()
            if label not in seen:
                seen.add(label)
                work.extend(self.succs[label])
        return def_block == start or def_block in seen


def _successors(block) -> list:
    term = block.terminator
    if isinstance(term, ir.Jump):
        return [term.target]
    if isinstance(term, ir.Branch):
        return [term.truebr, term.falsebr]
    return []


def _dominators(entry, succs, preds) -> dict:
    """{block: the set of blocks that dominate it} (the iterative algorithm; functions are small)."""
    labels = list(succs)
    dom = {label: set(labels) for label in labels}
    dom[entry] = {entry}
    changed = True
    while changed:
        changed = False
        for label in labels:
            if label == entry:
                continue
            ps = [dom[p] for p in preds[label]]
            new = (set.intersection(*ps) if ps else set()) | {label}
            if new != dom[label]:
                dom[label] = new
                changed = True
    return dom

"""Which array arguments a kernel may write, read from its typed IR.

A read-only NumPy array (``a.flags.writeable`` is False) can be passed to a kernel that only reads it;
one the kernel may write is refused at launch, since the writes could not reach it (``@njit`` refuses
such calls too). The analysis is conservative, so a "no" is a guarantee. Flow-insensitively, a variable
*may hold* argument ``i`` when it is assigned from it or from any expression that uses such a variable,
unless its type is a number, a boolean, None or a SIMD-group matrix (so views, tuple items, iterators,
``x = a if c else b``).
The argument *may be written* where such a variable is the target of an item or attribute assignment
(a record's field) or of an in-place operator, or is passed to a call: to a device function that may write that parameter (analysed the same
way), to ``len`` (which reads), or to anything else (atomics, and whatever the kernel language adds),
which counts as a write unless the kernel API registers the call as reading only (``metal.simdgroup.load``);
a NumPy ufunc writes only its output arguments (those after its inputs).
"""

from __future__ import annotations

import numpy as np
from numba.core import ir, types

from .devicefn import DeviceFunctionBase
from .lowering import registry as lowerings
from .matrixtypes import SimdgroupMatrix

#: Callables that receive arrays and never write them.
_READS_ONLY = (len,)


def written_arguments(tf) -> dict[int, tuple[str, int]]:
    """{argument index: (file, line) of a statement that may write it} for the array arguments of the
    typed function ``tf`` that it may write."""
    return _analyse(tf, ())


def _analyse(tf, active) -> dict[int, tuple[str, int]]:
    cached = tf.extra.get("written_arguments")
    if cached is not None:
        return cached
    blocks = tf.func_ir.blocks.values()
    assigns = [s for b in blocks for s in b.body if isinstance(s, ir.Assign)]
    holders: dict[str, set[int]] = {}   # variable -> the arguments it may hold
    for s in assigns:
        if isinstance(s.value, ir.Arg) and _holds_arrays(tf.argtypes[s.value.index]):
            holders.setdefault(s.target.name, set()).add(s.value.index)
    changed = True
    while changed:
        changed = False
        for s in assigns:
            if not _holds_arrays(tf.typemap.get(s.target.name)):
                continue
            used = [s.value] if isinstance(s.value, ir.Var) else \
                s.value.list_vars() if isinstance(s.value, ir.Expr) else []
            held = set().union(*(holders.get(v.name, ()) for v in used))
            mine = holders.setdefault(s.target.name, set())
            if not held <= mine:
                mine |= held
                changed = True
    written: dict[int, tuple[str, int]] = {}

    def mark(var, loc):
        for i in holders.get(var.name, ()):
            written.setdefault(i, (loc.filename, loc.line))

    for b in blocks:
        for s in b.body:
            if isinstance(s, (ir.SetItem, ir.StaticSetItem, ir.SetAttr)):
                mark(s.target, s.loc)
            elif isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr):
                e = s.value
                if e.op == "inplace_binop":
                    mark(e.lhs, s.loc)
                elif e.op == "call":
                    _call(tf, e, s.loc, holders, mark, active)
    tf.extra["written_arguments"] = written
    return written


def _call(tf, e, loc, holders, mark, active):
    passed = [(k, v) for k, v in enumerate(e.args) if holders.get(v.name)]
    extra = [v for v in ([e.vararg] if e.vararg else []) + [v for _, v in e.kws] if holders.get(v.name)]
    if not passed and not extra:
        return
    fnty = tf.typemap.get(e.func.name)
    callee = getattr(fnty, "typing_key", None)
    if callee in _READS_ONLY or lowerings.only_reads(callee):
        return
    if isinstance(callee, np.ufunc):   # np.sin(x, out) reads x, writes out
        passed = [(k, v) for k, v in passed if k >= callee.nin]
    sig = tf.calltypes.get(e)
    if isinstance(callee, DeviceFunctionBase) and sig is not None and e.vararg is None and callee not in active:
        # Each parameter's variables, as the call binds them (devicefn.fold: keywords, *args, captured arrays).
        inner = _analyse(callee.typed(tuple(sig.args)), active + (callee,))
        folded = callee.fold(tuple(e.args), dict(e.kws), lambda default: None, list)
        for k, bound in enumerate(folded):
            if k in inner:
                for v in bound if isinstance(bound, list) else () if bound is None else (bound,):
                    mark(v, loc)
        return
    for _, v in passed:
        mark(v, loc)
    for v in extra:
        mark(v, loc)


def _holds_arrays(ty) -> bool:
    """A value of type ``ty`` may hold an array (or a view, an iterator over one, a tuple with one...):
    anything but a number, a boolean, None or a SIMD-group matrix (a value loaded from an array)."""
    return not isinstance(ty, (types.Number, types.Boolean, types.NoneType, SimdgroupMatrix))

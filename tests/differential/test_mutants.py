"""The differential test finds bugs: seeded bugs (mutants) in numba-metal are caught.

Each mutant changes one piece of numba-metal's code generation in this process (the real tree
is untouched): a Python-semantics helper, a literal spelling, control-flow lowering, negative-index
wraparound, min/max's NaN rule, float truth. For each, generated batches from a fixed seed range
must report a mismatch within a few batches. A mutant that survives means the generator or the
oracle has a blind spot.
"""

from __future__ import annotations

import pytest

from numba_metal.compiler import codegen, conversions, msl, mslib

from . import gen as G
from . import harness as H
from .choosers import RandomChooser

SEED_BASE = 3_000_000
MAX_BATCHES = 12   # the vocabulary grows (libdevice, float64 math): an operator is drawn less often per batch


def _patch_snippet(monkeypatch, name, old, new):
    sections = mslib.sections()
    section = sections[name]
    assert old in section.text, f"mutant out of date: {old!r} not in prelude section {name}"
    monkeypatch.setattr(mslib, "_sections", {**sections, name: section._replace(text=section.text.replace(old, new))})


def m_int_floordiv_truncates(mp):
    _patch_snippet(mp, "intdiv", "if (r != T(0) && ((r < T(0)) != (b < T(0)))) q = T(q - T(1));", "")


def m_float_mod_ignores_sign(mp):
    _patch_snippet(mp, "floatdiv", "if ((b < 0.0f) != (mod < 0.0f)) mod += b;", "")


def m_negative_index_not_wrapped(mp):
    _patch_snippet(mp, "array", "return i < 0 ? i + n : i;", "return i < 0 ? 0 : i;")


def m_float_literal_off_by_one_ulp(mp):
    orig = msl._shortest_float32

    def lit(v):
        if v != 0.0 and 1e-30 < abs(v) < 1e30:
            import numpy as np
            v = float(np.nextafter(np.float32(v), np.float32(np.inf)))
        return orig(v)

    mp.setattr(msl, "_shortest_float32", lit)


def m_multilevel_exit_dropped(mp):
    orig = codegen.FunctionLowering._emit_tree
    from numba_metal.compiler.structurize import IfFlag

    def emit(self, node):
        if isinstance(node, IfFlag):
            return None
        return orig(self, node)

    mp.setattr(codegen.FunctionLowering, "_emit_tree", emit)


def m_nan_is_false(mp):
    orig = conversions.truth

    def truth(lc, value):
        r = orig(lc, value)
        return r.replace("!= 0.0f)", "> 0.0f || " + value.expr + " < 0.0f)") if "!= 0.0f" in r else r

    mp.setattr(conversions, "truth", truth)  # every truth value (`if x:`, bool(x), casts) comes from here


def m_min_max_keeps_last_on_nan(mp):
    import numba_metal.kernel_api.pybuiltins as pb
    from numba_metal.compiler.lowering import Value

    def minmax(lc, sig, args, op):
        from numba.core import types
        rt = types.unliteral(sig.return_type)
        items = list(args)
        if len(items) == 1 and isinstance(types.unliteral(items[0].type), types.BaseTuple):
            tup = items[0]
            items = [Value(f"{tup.expr}.f{k}", t) for k, t in enumerate(types.unliteral(tup.type).types)]
        acc = lc.tmp(rt, lc.cast(items[0], rt))
        for item in items[1:]:
            v = lc.tmp(rt, lc.cast(item, rt))
            lc.emit(f"{acc} = ({acc} {op} {v}) ? {acc} : {v};")  # C's fmin-like choice
        return Value(acc, rt)

    mp.setattr(pb, "_minmax", minmax)


MUTANTS = [m_int_floordiv_truncates, m_float_mod_ignores_sign, m_negative_index_not_wrapped,
           m_float_literal_off_by_one_ulp, m_multilevel_exit_dropped, m_nan_is_false,
           m_min_max_keeps_last_on_nan]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.__name__[2:])
def test_differential_testing_catches_a_seeded_bug(mutant, monkeypatch):
    mutant(monkeypatch)
    outcomes = []
    for seed in range(SEED_BASE, SEED_BASE + MAX_BATCHES):
        out = H.run_batch(G.generate_batch(RandomChooser(seed), 8), typecheck=False)
        outcomes.append(out.kind)
        if out.kind in ("mismatch", "compile_error", "internal_error"):
            return
    pytest.fail(f"mutant {mutant.__name__} survived {MAX_BATCHES} batches: {outcomes}")

"""The kernel language's tables agree with what implements them and with the docs.

The math table (numba_metal/kernel_api/functions.py), the operator table (numba_metal/compiler/operators.py)
and the kernel API's index (numba_metal/kernel_api/__init__.py) are each the one owner of their facts:
these tests fail when a routine a row names does not exist where the row says, or when a doc lists other
functions, operators or names than the tables.
"""

from __future__ import annotations

import math
import os
import re

import pytest

from numba_metal import kernel_api, metal
from numba_metal.compiler import msl, mslib, operators
from numba_metal.errors import UnsupportedFeatureError
from numba_metal.kernel_api import functions as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(*path) -> str:
    with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
        return f.read()


def _routines(source):
    return sorted({(r.name, "") for f in F.MATH for r in f.routines.values() if r.source == source})


# -- the math table and its implementations -------------------------------------------------------


def test_every_metal_routine_of_the_math_table_is_declared_for_float_and_half_by_the_cpu_shim():
    shim = _read("Sources", "MetalRuntime", "CPUDevice", "shim", "metal_stdlib")
    for name, _ in _routines(F.METAL):
        declared = (re.search(rf"__NM_F[123]\({name},", shim)
                    or (re.search(rf"inline \w+ {name}\(float ", shim) and re.search(rf"inline \w+ {name}\(half ", shim)))
        assert declared, f"the math table calls metal::{name}, which shim/metal_stdlib does not declare"


def test_every_prelude_routine_of_the_math_table_is_defined_in_the_prelude():
    for name, _ in _routines(F.PRELUDE):
        section = mslib.sections()[mslib.section_of(name)]   # the index derived from the files finds it
        assert section.file == "prelude.metal", (name, section.file)
        assert re.search(rf"\b{name}\(float ", section.text), (name, section.name)


def test_every_mathlib_routine_of_the_math_table_has_float_and_half_definitions():
    mathlib = mslib.text("mathlib")
    for name, _ in _routines(F.MATHLIB):
        assert re.search(rf"NM_INLINE float {name}\(float ", mathlib), name
        assert re.search(rf"NM_INLINE half {name}\(half ", mathlib), name


def test_every_row_has_a_routine_for_the_computation_type_of_each_signature():
    for f in F.MATH:
        assert f.signatures and len({F.argument_types(s).__len__() for s in f.signatures}) == 1, f.name
        for s in f.signatures:
            ctype = F.computation_type(s)
            ctype = "int64" if ctype == "intp" else ctype
            assert ctype in f.routines, (f.name, s, ctype)
        assert hasattr(math, f.name), f.name


def test_a_math_function_outside_the_table_is_refused_by_name():
    def k(a):
        a[0] = math.factorial(3)

    with pytest.raises(UnsupportedFeatureError, match="math.factorial is not supported"):
        metal.compile_msl(k, "void(int64[:])")


# -- the math table and the docs --------------------------------------------------------------------


def _feature_cell(start: str) -> str:
    """The feature cell of the one row of docs/supported-features.md that starts with ``start``."""
    rows = [line for line in _read("docs", "supported-features.md").splitlines() if line.startswith(start)]
    assert len(rows) == 1, rows
    cell = re.split(r"(?<!\\)\|", rows[0])[1].replace("\\|", "|")
    return re.sub(r"`[^`]*\.py`", "", cell)  # file names are not listed items


def test_supported_features_lists_exactly_the_functions_of_the_math_table():
    listed = re.findall(r"`(\w+)`", _feature_cell("| `math` functions, one row each"))
    assert sorted(set(listed) - {"math"}) == sorted(f.name for f in F.MATH) == sorted(metal.math_functions())


def test_math_accuracy_lists_exactly_the_math_library_functions_and_their_targets():
    text = _read("docs", "math-accuracy.md")
    intro = text.split("## Summary", 1)[0]
    mathlib = [f for f in F.MATH if f.routines["float32"].source == F.MATHLIB]
    assert sorted(re.findall(r"`(nm_\w+)`", intro)) == sorted(f.routines["float32"].name for f in mathlib)
    assert sorted(re.findall(r"`math\.(\w+)`", intro)) == sorted(f.name for f in mathlib)
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    targets = {}
    for line in summary.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[0] not in ("function", "") and not set(cells[0]) <= set("-"):
            targets[cells[0]] = cells[-1]
    for f in mathlib:
        name = f.routines["float32"].name.removeprefix("nm_")
        target = targets[name]
        if f.accuracy.ulps == 0:
            assert target == "exact", (name, target)
        else:
            assert re.match(rf"{f.accuracy.ulps:g}\b", target), (name, target, f.accuracy)
    assert sorted(targets) == sorted(f.routines["float32"].name.removeprefix("nm_") for f in mathlib)


# -- the operator table -----------------------------------------------------------------------------


def test_the_operator_table_has_every_operator_the_compiler_lowers():
    lowered = set(operators.BINARY_SYMBOLS.values())
    table = set(operators.BINARY) | {"**"} | set(operators.COMPARISONS)
    assert lowered == table
    assert set(operators.UNARY_SYMBOLS.values()) == set(operators.UNARY) | {"not"}
    for op, impls in operators.BINARY.items():
        assert set(impls) <= set(operators.KINDS), op
    for op in ("+", "-", "*"):
        assert set(operators.BINARY[op]) == set(operators.KINDS) - {"bool"}
    assert set(operators.MIXED_SIGN_COMPARISONS) == set(operators.COMPARISONS)


def test_supported_features_lists_exactly_the_operators_of_the_operator_table():
    listed = set(re.findall(r"`([^`]+)`", _feature_cell("| operators:")))
    table = set(operators.BINARY) | {"**"} | set(operators.COMPARISONS) | {f"unary {u}" for u in operators.UNARY}
    assert listed == table | {"not"}


# -- the kernel API's index ---------------------------------------------------------------------------


def test_the_metal_namespace_resolves_exactly_the_families_names():
    index = kernel_api.index()
    exported = [name for family in kernel_api.families() for name in family.__all__]
    assert sorted(exported) == sorted(index)
    for name, obj in index.items():
        assert getattr(metal, name) is obj
    assert set(index) <= set(dir(metal))
    with pytest.raises(AttributeError, match="no_such_name"):
        metal.no_such_name  # noqa: B018


def test_supported_features_documents_every_kernel_api_name():
    text = _read("docs", "supported-features.md")
    missing = [n for n in kernel_api.index() if not re.search(rf"\b{re.escape(n)}\b", text)]
    assert not missing, f"kernel-API names docs/supported-features.md does not mention: {missing}"

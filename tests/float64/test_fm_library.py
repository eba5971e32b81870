"""float64_math.metal and complex.metal as libraries: their entry-point tables (float64_math_ops.py,
complex_ops.py) match their definitions, each `//@@` section needs only what its `requires:` closure defines
(across float64.metal, float64_math.metal, complex.metal and mathlib.metal), functions only call functions
defined before them (MSL has no recursion), the text keeps to what Apple's Metal compiler accepts (program-scope
data only as `constant` arrays), every generated constant is what tools/fm_constants.py computes, and
docs/math-accuracy.md quotes the tables' measured bounds."""

from __future__ import annotations

import re
from pathlib import Path

import importlib.util

import pytest

from numba_metal.compiler import complex_ops, float64_math_ops
from test_f64_library import _strip_comments
from numba_metal.compiler import mslib

COMPILER = Path(mslib.path(""))
# The generator of the library's constants is a tool of the repository (tools/fm_constants.py), not a test.
_spec = importlib.util.spec_from_file_location("fm_constants", Path(__file__).resolve().parents[2] / "tools" / "fm_constants.py")
fm_constants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fm_constants)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "math-accuracy.md"
LIBRARIES = {
    "float64_math.metal": (float64_math_ops.FUNCTIONS, ("nm_f64_",)),
    "complex.metal": (complex_ops.FUNCTIONS, ("nm_c128_", "nm_c64_")),
}
_DEF = re.compile(r"^(?:static inline|NM_INLINE) ([\w ]+?) (nm_\w+)\(([^)]*)\) \{$", re.M)
_IDENT = re.compile(r"\b(nm_\w+|NM_\w+)\b")


def _text(name: str) -> str:
    return (COMPILER / name).read_text(encoding="utf-8")


def _param_types(params: str) -> tuple[str, ...]:
    """The types of a C parameter list (each parameter's words but its name)."""
    return tuple(" ".join(p.split()[:-1]) for p in params.split(",") if p.strip())


def _definitions(text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """function name -> (result type, parameter types), for every definition in text."""
    return {name: (result, _param_types(params)) for result, name, params in _DEF.findall(text)}


def _defined_names(text: str) -> set[str]:
    names = set(_definitions(text))
    names |= set(re.findall(r"#define (\w+)", text))
    names |= set(re.findall(r"struct (\w+) \{", text))
    names |= set(re.findall(r"^constant \w+ (\w+)\[", text, re.M))
    return names


def _with_requirements(names) -> list[tuple[str, str]]:
    """(section, MSL text) of the sections ``names`` need, dependencies first (compiler/mslib/)."""
    return [(s, mslib.text(s)) for s in mslib.closure(names)]


def _sections(library: str):
    return re.findall(r"^//@@ (\S+)", _text(library), re.M)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_table_rows_are_exactly_the_public_definitions(library):
    rows, prefixes = LIBRARIES[library]
    defs = _definitions(_text(library))
    public = {n: sig for n, sig in defs.items() if n.startswith(prefixes)}
    table = {row.name: (row.result, row.params) for row in rows}
    assert set(table) == set(public), set(table) ^ set(public)
    for name, sig in table.items():
        assert public[name] == sig, (name, public[name], sig)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_each_row_names_the_section_that_defines_it(library):
    rows, _ = LIBRARIES[library]
    for row in rows:
        text = dict(_with_requirements([row.section]))[row.section]
        assert row.name in _definitions(text), (row.name, row.section)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_every_section_uses_only_what_its_requirements_define(library):
    for section in _sections(library):
        closure = _with_requirements([section])
        available = "".join(text for _, text in closure)
        used = set(_IDENT.findall(_strip_comments(dict(closure)[section])))
        assert used <= _defined_names(available), (section, sorted(used - _defined_names(available)))


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_functions_only_call_functions_defined_before_them(library):
    """No recursion, direct or mutual: in every section's closure a body calls only earlier definitions."""
    for section in _sections(library):
        text = _strip_comments("".join(t for name, t in _with_requirements([section]) if name != "mathlib"))
        starts = [(m.start(), m.group(2)) for m in _DEF.finditer(text)]
        functions = {n for _, n in starts}
        seen: set[str] = set()
        for k, (pos, name) in enumerate(starts):
            end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
            calls = set(re.findall(r"\b(nm_\w+)\s*\(", text[text.index("{", pos):end])) & functions
            assert calls <= seen, (name, sorted(calls - seen))
            seen.add(name)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_only_what_apples_compiler_accepts(library):
    text = _strip_comments(_text(library))
    for word in ("double", "__int128", "goto", "template", "thread_local", "typedef", "std", "device",
                 "threadgroup", "operator", "auto", "virtual", "half"):
        assert not re.search(rf"\b{word}\b", text), word
    assert "long long" not in text and "(*" not in text and "#include" not in text
    for m in re.finditer(r"\bstatic\b", text):
        assert text.startswith("static inline ", m.start()), text[m.start():m.start() + 60]
    for m in re.finditer(r"\bconstant\b", text):
        # program-scope tables, and pointers to them as parameters
        line = text[text.rfind("\n", 0, m.start()) + 1:text.find("\n", m.start())]
        assert (re.match(r"^constant (uchar|ushort|ulong) \w+\[\d+\] = \{$", line)
                or re.match(r"constant (uchar|ulong)\* \w+[,)]", text[m.start():])), line
    literals = re.findall(r"(?<![\w.])\d+\.\d*(?:[eE][-+]?\d+)?[fF]?|(?<![\w.])\d+[eE][-+]?\d+[fF]?", text)
    if library == "float64_math.metal":
        assert not literals, literals[:5]        # integer arithmetic only: no float can be flushed or fused
    else:
        assert all(lit.endswith(("f", "F")) for lit in literals), [x for x in literals if not x.endswith("f")]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_generated_constants_are_fm_constants(library):
    blocks = fm_constants.generated_blocks(_text(library))
    if library == "float64_math.metal":
        assert set(blocks) == set(fm_constants.blocks()) | {"nm_fm_scalars"}
    for name, body in blocks.items():
        assert body == fm_constants.render_block(name), f"{name}: run python tools/fm_constants.py --write"


def _documented_bounds() -> dict[str, float]:
    """entry point -> the maximum ulp error docs/math-accuracy.md states for it."""
    out = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `(nm_\w+)` \|.*?\| ([0-9.]+|exact) \|", line)
        if m:
            out[m.group(1)] = 0.0 if m.group(2) == "exact" else float(m.group(2))
    return out


def test_docs_quote_the_measured_bounds():
    documented = _documented_bounds()
    for rows, _ in LIBRARIES.values():
        for row in rows:
            if row.ulp is not None:
                assert documented.get(row.name) == row.ulp, (row.name, documented.get(row.name), row.ulp)

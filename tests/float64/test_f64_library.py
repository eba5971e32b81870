"""float64.metal as a library: its entry-point table (float64_ops.py) matches its definitions, each
`//@@` section needs only what its `requires:` line names, it keeps to what Apple's Metal compiler
accepts (no double, no 128-bit integers, no recursion, no goto, no templates, no function pointers,
no static locals or program-scope tables), and a float64 array's storage is used in place."""

from __future__ import annotations

import re

import numpy as np

from f64_harness import HEADER, LIBRARY, library_text
from numba_metal.compiler.float64_ops import FUNCTIONS, STRUCTS
from numba_metal.compiler import mslib

_DEF = re.compile(r"^static inline ([\w ]+?) (nm_f64_\w+)\(([^)]*)\) \{$", re.M)
_IDENT = re.compile(r"\b(nm_f64_\w+|NM_F64_\w+)\b")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _definitions(text: str):
    """name -> (result type, parameter types) for every function defined in text."""
    out = {}
    for result, name, params in _DEF.findall(text):
        types = tuple(" ".join(p.split()[:-1]) for p in params.split(",")) if params.strip() else ()
        out[name] = (result, types)
    return out


def _section_names():
    text = LIBRARY.read_text(encoding="utf-8")
    return re.findall(r"^//@@ (\S+)", text, re.M)


def test_table_rows_are_exactly_the_public_definitions():
    defs = _definitions(library_text())
    public = {n: sig for n, sig in defs.items() if not n.startswith("nm_f64_i_")}
    table = {fn.name: (fn.result, fn.params) for fn in FUNCTIONS}
    assert set(table) == set(public), set(table) ^ set(public)
    for name, sig in table.items():
        assert public[name] == sig, (name, public[name], sig)


def test_each_row_names_the_section_that_defines_it():
    for fn in FUNCTIONS:
        assert fn.name in _definitions(mslib.text(fn.section)), (fn.name, fn.section)


def test_structs_in_the_table_are_defined_with_those_fields():
    base = _strip_comments(mslib.text("f64_base"))
    for name, fields in STRUCTS.items():
        body = re.search(rf"struct {name} \{{([^}}]*)\}};", base)
        assert body, name
        assert tuple(tuple(f.split()) for f in body.group(1).strip().rstrip(";").split(";")) == fields, name


def test_every_section_uses_only_what_its_requirements_define():
    names = _section_names()
    assert names[0] == "f64_base"
    for name in names:
        closure = mslib.closure([name])
        available = "".join(mslib.text(s) for s in closure)
        defined = set(_definitions(available)) | set(re.findall(r"#define (NM_F64_\w+)", available))
        defined |= set(re.findall(r"struct (nm_f64\w*) \{", available))
        used = set(_IDENT.findall(_strip_comments(mslib.text(name))))
        assert used <= defined, (name, sorted(used - defined))


def test_functions_only_call_functions_defined_before_them():
    """No recursion, direct or mutual (MSL has none): a body calls only earlier definitions."""
    text = _strip_comments(library_text())
    starts = [(m.start(), m.group(2)) for m in _DEF.finditer(text)]
    seen: set[str] = set()
    for k, (pos, name) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
        body = text[text.index("{", pos):end]
        calls = set(re.findall(r"\b(nm_f64_\w+)\s*\(", body))
        assert calls <= seen, (name, sorted(calls - seen))
        seen.add(name)


def test_only_what_apples_compiler_accepts():
    text = _strip_comments(library_text())
    for word in ("double", "__int128", "goto", "template", "thread_local", "typedef", "std", "constant",
                 "device", "threadgroup", "operator", "auto", "virtual"):
        assert not re.search(rf"\b{word}\b", text), word
    assert "long long" not in text
    assert "(*" not in text, "function pointer"
    assert "#include" not in text
    # static only as the storage class of function definitions: no static locals, no globals
    for m in re.finditer(r"\bstatic\b", text):
        assert text.startswith("static inline ", m.start()), text[m.start():m.start() + 60]
        assert text.rfind("\n", 0, m.start()) == m.start() - 1, "static must start a line"
    # no floating-point literal: the library does no float arithmetic (subnormal flushing could not touch it)
    assert not re.search(r"(?<![\w.])\d+\.\d*(?:[eE][-+]?\d+)?[fFhH]?\b|(?<![\w.])\d+[eE][-+]?\d+", text)


def test_a_kernel_with_one_section_uses_float64_arrays_in_place(f64lib):
    """Storage is IEEE binary64: a NumPy float64 buffer is read as 64-bit words and written back as the
    results' `.bits`. (Copying an nm_f64 struct straight out of device memory is valid MSL, but the CPU
    device's shim, built on clang address spaces, has no copy from device to thread for structs.)"""
    device = f64lib.device
    source = HEADER + "".join(mslib.text(s) for s in mslib.closure(["f64_add"])) + """
static_assert(sizeof(nm_f64) == 8 && alignof(nm_f64) == 8, "nm_f64 is a binary64 in memory");
kernel void axpy64(device const ulong* x [[buffer(0)]], device ulong* y [[buffer(1)]],
                   constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i < n) {
        nm_f64 xi = nm_f64_from_bits(x[i]);
        y[i] = nm_f64_add(nm_f64_add(xi, xi), nm_f64_from_bits(y[i])).bits;
    }
}
"""
    pipeline = device.compile(source, "axpy64")
    rng = np.random.default_rng(3)
    n = 4099
    x = rng.standard_normal(n) * 1e300
    y = rng.standard_normal(n) * 1e-310
    xb, yb = device.new_buffer(x.nbytes), device.new_buffer(y.nbytes)
    xb.write(0, x.ctypes.data, x.nbytes)
    yb.write(0, y.ctypes.data, y.nbytes)
    queue = device.new_queue()
    queue.dispatch(pipeline, [xb, yb], [0, 0], [0, 1], np.uint32(n).tobytes(), 2, [], ((n + 255) // 256, 1, 1),
                   (256, 1, 1), "axpy64")
    queue.wait()
    out = np.empty(n)
    yb.read(0, out.ctypes.data, out.nbytes)
    queue.release()
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.view(np.uint64), (x + x + y).view(np.uint64))

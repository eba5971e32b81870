"""Runs entry points of the float64 math and complex libraries (rows of float64_math_ops.py and complex_ops.py)
on arrays on the CPU reference device.

One MSL source holds the sections the rows need and one kernel that applies row number `op` to element `i`.
Every operand travels in 64-bit words: a float64 as its bit pattern, a complex128 as two words (real, then
imaginary), a complex64 (`float2`) as one word (real in the low half), other types as in f64_harness.py,
whose conversions this reuses. One kernel means one clang run for all the rows.
"""

from __future__ import annotations

import struct

import numpy as np

from f64_harness import _IN, _OUT, HEADER, THREADS
from numba_metal import runtime as rt
from numba_metal.compiler import mslib

INPUTS = 5
# MSL type -> (number of words, expression reading it from words {p0}, {p1}, numpy dtype passed by callers)
_IN_TYPES = {t: (1, expr.replace("{p}", "{p0}"), dtype) for t, (expr, dtype) in _IN.items()}
_IN_TYPES["bool"] = (1, "bool({p0})", np.bool_)
_IN_TYPES["nm_c128"] = (2, "nm_c128_make(nm_f64_from_bits({p0}), nm_f64_from_bits({p1}))", np.complex128)
_IN_TYPES["float2"] = (1, "float2(as_type<float>(uint({p0})), as_type<float>(uint({p0} >> 32)))", np.complex64)
# MSL type -> [(expression turning value {v} into a word, numpy dtype of the word's meaning)]
_OUT_TYPES = dict(_OUT)
_OUT_TYPES["nm_c128"] = [("{v}.re.bits", np.float64), ("{v}.im.bits", np.float64)]
_OUT_TYPES["float2"] = [("(ulong(as_type<uint>({v}.x)) | (ulong(as_type<uint>({v}.y)) << 32))", np.complex64)]


def _with_requirements(names) -> list[tuple[str, str]]:
    """(section, MSL text) of the sections ``names`` need, dependencies first (compiler/mslib/)."""
    return [(s, mslib.text(s)) for s in mslib.closure(names)]


def kernel_source(rows) -> str:
    sections = _with_requirements({row.section for row in rows})
    cases = []
    for code, row in enumerate(rows):
        args, word = [], 0
        for t in row.params:
            count, expr, _ = _IN_TYPES[t]
            args.append(expr.format(**{f"p{j}": f"a{word + j}[i]" for j in range(count)}))
            word += count
        assert word <= INPUTS, row.name
        stores = " ".join(f"o{k}[i] = {e.format(v='v')};" for k, (e, _) in enumerate(_OUT_TYPES[row.result]))
        cases.append(f"        case {code}: {{ {row.result} v = {row.name}({', '.join(args)}); {stores} break; }}")
    body = "\n".join(cases)
    inputs = "".join(f"device const ulong* a{k} [[buffer({k})]], " for k in range(INPUTS))
    kernel = f"""
struct nm_t_args {{
    uint n;
    uint op;
}};

kernel void fm_apply({inputs}device ulong* o0 [[buffer({INPUTS})]], device ulong* o1 [[buffer({INPUTS + 1})]],
                     constant nm_t_args& args [[buffer({INPUTS + 2})]], uint i [[thread_position_in_grid]]) {{
    if (i >= args.n) {{
        return;
    }}
    switch (args.op) {{
{body}
        default: break;
    }}
}}
"""
    return HEADER + "".join(text for _, text in sections) + kernel


def _words(a, t):
    """An operand array as its 64-bit words (a list: two for complex128)."""
    a = np.asarray(a)
    if t == "nm_f64":
        return [np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)]
    if t == "nm_c128":
        a = np.ascontiguousarray(a, dtype=np.complex128)
        return [np.ascontiguousarray(a.real).view(np.uint64), np.ascontiguousarray(a.imag).view(np.uint64)]
    if t == "float2":
        return [np.ascontiguousarray(a, dtype=np.complex64).view(np.uint64)]
    if t == "float":
        return [np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)]
    d = _IN_TYPES[t][2]
    w = a.astype(d, copy=False).astype(np.int64 if np.dtype(d).kind == "i" else np.uint64)
    return [np.ascontiguousarray(w).view(np.uint64)]


class MathLibrary:
    """The rows compiled once on a device; `call(name, *arrays)` runs one entry point elementwise. float64,
    complex128 and complex64 operands and results are NumPy arrays of those types (bit patterns kept);
    other types as in f64_harness; a two-part result (nm_f64_pair) comes back as a tuple."""

    def __init__(self, device: rt.Device, rows):
        self.device = device
        self.rows = {row.name: (code, row) for code, row in enumerate(rows)}
        self.queue = device.new_queue()
        self.source = kernel_source(rows)
        self.pipeline = device.compile(self.source, "fm_apply")

    def call(self, name: str, *arrays):
        code, row = self.rows[name]
        n = len(arrays[0])
        words = [w for a, t in zip(arrays, row.params) for w in _words(a, t)]
        bufs = []
        for k in range(INPUTS):
            b = self.device.new_buffer(max(8 * n, 8))
            if k < len(words) and n:
                b.write(0, words[k].ctypes.data, words[k].nbytes)
            bufs.append(b)
        outs = [self.device.new_buffer(max(8 * n, 8)) for _ in range(2)]
        groups = max((n + THREADS - 1) // THREADS, 1)
        slots = INPUTS + 2
        self.queue.dispatch(self.pipeline, bufs + outs, [0] * slots, list(range(slots)), struct.pack("II", n, code),
                            slots, [], (groups, 1, 1), (THREADS, 1, 1), name)
        self.queue.wait()
        results = []
        for b, (_, d) in zip(outs, _OUT_TYPES[row.result]):
            w = np.empty(n, dtype=np.uint64)
            if n:
                b.read(0, w.ctypes.data, w.nbytes)
            if d in (np.float64, np.complex64) or (row.result in ("nm_f64", "nm_f64_pair") and d == np.uint64):
                results.append(w.view(d if d != np.uint64 else np.float64))
            elif row.result == "float":
                results.append(w.astype(np.uint32).view(np.float32))
            elif np.dtype(d) == np.bool_:
                results.append(w.astype(np.bool_))
            else:
                results.append(w.astype(d, casting="unsafe"))
        for b in bufs + outs:
            b.release()
        if row.result == "nm_c128":
            return _complex(results[0], results[1])
        return results[0] if len(results) == 1 else tuple(results)

    def release(self):
        self.queue.release()


def _complex(re, im):
    out = np.empty(len(re), dtype=np.complex128)
    out.real = re
    out.imag = im
    return out

"""Runs the float64 math library's entry points (float64_math_ops.py) on arrays on the CPU reference device.

One MSL source holds the sections the rows need and one kernel that applies row number `op` to element `i`
of up to five input buffers (every operand and result travels as a 64-bit word, as in f64_harness.py, whose
type conversions this reuses). One kernel means one clang run for the whole library.
"""

from __future__ import annotations

import struct

import numpy as np

from f64_harness import _IN, _OUT, HEADER, THREADS
from numba_metal import runtime as rt
from numba_metal.compiler.float64_math_ops import msl_sections

IN = dict(_IN)
IN["bool"] = ("bool({p})", np.bool_)
OUT = _OUT
INPUTS = 5


def kernel_source(rows) -> str:
    sections = msl_sections({row.section for row in rows})
    cases = []
    for code, row in enumerate(rows):
        args = ", ".join(IN[t][0].format(p=f"a{k}[i]") for k, t in enumerate(row.params))
        stores = " ".join(f"o{k}[i] = {e.format(v='v')};" for k, (e, _) in enumerate(OUT[row.result]))
        cases.append(f"        case {code}: {{ {row.result} v = {row.name}({args}); {stores} break; }}")
    body = "\n".join(cases)
    kernel = f"""
struct nm_t_args {{
    uint n;
    uint op;
}};

kernel void fm_apply(device const ulong* a0 [[buffer(0)]], device const ulong* a1 [[buffer(1)]],
                     device const ulong* a2 [[buffer(2)]], device const ulong* a3 [[buffer(3)]],
                     device const ulong* a4 [[buffer(4)]], device ulong* o0 [[buffer(5)]],
                     device ulong* o1 [[buffer(6)]], constant nm_t_args& args [[buffer(7)]],
                     uint i [[thread_position_in_grid]]) {{
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


class MathLibrary:
    """The rows compiled once on a device; `call(name, *arrays)` runs one entry point elementwise. float64
    operands and results are float64 arrays (bit patterns preserved), other types as in f64_harness."""

    def __init__(self, device: rt.Device, rows):
        self.device = device
        self.rows = {row.name: (code, row) for code, row in enumerate(rows)}
        self.queue = device.new_queue()
        self.source = kernel_source(rows)
        self.pipeline = device.compile(self.source, "fm_apply")

    def call(self, name: str, *arrays):
        code, row = self.rows[name]
        n = len(arrays[0])
        words = []
        for a, t in zip(arrays, row.params):
            a = np.asarray(a)
            if t == "nm_f64":
                w = np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)
            else:
                d = IN[t][1]
                w = a.astype(d, copy=False).astype(np.int64 if np.dtype(d).kind == "i" else np.uint64)
                w = np.ascontiguousarray(w).view(np.uint64)
            words.append(w)
        bufs = []
        for k in range(INPUTS):
            b = self.device.new_buffer(max(8 * n, 8))
            if k < len(words) and n:
                b.write(0, words[k].ctypes.data, words[k].nbytes)
            bufs.append(b)
        outs = [self.device.new_buffer(max(8 * n, 8)) for _ in range(2)]
        groups = max((n + THREADS - 1) // THREADS, 1)
        slots = INPUTS + 2
        self.queue.dispatch(self.pipeline, bufs + outs, [0] * slots, list(range(slots)), struct.pack("II", n, code), slots, [],
                            (groups, 1, 1), (THREADS, 1, 1), name)
        self.queue.wait()
        results = []
        for b, (_, d) in zip(outs, OUT[row.result]):
            w = np.empty(n, dtype=np.uint64)
            if n:
                b.read(0, w.ctypes.data, w.nbytes)
            if row.result in ("nm_f64", "nm_f64_pair") and d == np.uint64:
                results.append(w.view(np.float64))
            elif np.dtype(d) == np.bool_:
                results.append(w.astype(np.bool_))
            else:
                results.append(w.astype(d, casting="unsafe"))
        for b in bufs + outs:
            b.release()
        return results[0] if len(results) == 1 else tuple(results)

    def release(self):
        self.queue.release()

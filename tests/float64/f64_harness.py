"""Runs float64.metal's entry points on arrays through the runtime binding (CPU reference device).

One MSL source holds the library and a single kernel that applies entry point number `op` to element
`i` of up to three input buffers: one `case` per row of numba_metal/compiler/float64_ops.py (so the
table's types are compiled against the library's definitions) and a few probes of the division and
square-root internals whose error budgets float64.metal states. Every operand and result travels as a
ulong: float64 as its bit pattern, float32/float16 as theirs, integers sign- or zero-extended, bool
as 0/1. One kernel means one clang run for the whole library.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from numba_metal import runtime as rt
from numba_metal.compiler.float64_ops import FUNCTIONS

LIBRARY = Path(__file__).resolve().parents[2] / "numba_metal" / "compiler" / "mslib" / "float64.metal"
HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
THREADS = 256

# MSL parameter type -> (expression reading operand {p} from a ulong, numpy dtype of the operand)
_IN = {
    "nm_f64": ("nm_f64_from_bits({p})", np.uint64),
    "float": ("as_type<float>(uint({p}))", np.uint32),
    "half": ("as_type<half>(ushort({p}))", np.uint16),
    "char": ("char({p})", np.int8),
    "uchar": ("uchar({p})", np.uint8),
    "short": ("short({p})", np.int16),
    "ushort": ("ushort({p})", np.uint16),
    "int": ("int({p})", np.int32),
    "uint": ("uint({p})", np.uint32),
    "long": ("long({p})", np.int64),
    "ulong": ("{p}", np.uint64),
}
# MSL result type -> [(expression turning value {v} into a ulong, numpy dtype of the result)]
_OUT = {
    "nm_f64": [("{v}.bits", np.uint64)],
    "float": [("ulong(as_type<uint>({v}))", np.uint32)],
    "half": [("ulong(as_type<ushort>({v}))", np.uint16)],
    "bool": [("ulong({v})", np.bool_)],
    "nm_f64_pair": [("{v}.first.bits", np.uint64), ("{v}.second.bits", np.uint64)],
    "nm_f64_frexp_result": [("{v}.mantissa.bits", np.uint64), ("ulong(long({v}.exponent))", np.int32)],
}
for _t in ("char", "short", "int", "long"):
    _OUT[_t] = [("ulong(long({v}))", _IN[_t][1])]
for _t in ("uchar", "ushort", "uint", "ulong"):
    _OUT[_t] = [("ulong({v})", _IN[_t][1])]

# Probes of internals: name -> (input dtypes, output dtypes, statements using a0..a2, o0/o1, start)
PROBES = {
    # nm_f64_i_recip32(bh) for bh = start + i (the exhaustive check of the reciprocal seed).
    "recip32": ((), (np.uint32,), "o0[i] = nm_f64_i_recip32(ulong(start) + ulong(i));"),
    # nm_f64_i_rsqrt_seed(mh) for mh = start + i: (r, s).
    "rsqrt_seed": ((), (np.uint32, np.uint32),
                   "nm_f64_i_rsqrt e = nm_f64_i_rsqrt_seed(ulong(start) + ulong(i)); o0[i] = e.r; o1[i] = e.s;"),
    "recip": ((np.uint64,), (np.uint64,), "o0[i] = nm_f64_i_recip(a0[i]);"),
    "div_estimate": ((np.uint64, np.uint64), (np.uint64,), "o0[i] = nm_f64_i_div_estimate(a0[i], a1[i]);"),
    "sqrt_estimate": ((np.uint64, np.uint64), (np.uint64,),
                      "o0[i] = nm_f64_i_sqrt_estimate(a0[i], uint(a1[i]));"),
}


def library_text() -> str:
    return LIBRARY.read_text(encoding="utf-8")


def _cases():
    """(op code, name, input dtypes, output dtypes, body) for every entry point and probe."""
    out = []
    for fn in FUNCTIONS:
        if fn.section == "f64_simd":
            # Cross-lane (tested in kernels); naming a SIMD-group function would also make the CPU device
            # run this kernel's threads as fibers.
            continue
        args = ", ".join(_IN[t][0].format(p=f"a{k}[i]") for k, t in enumerate(fn.params))
        stores = " ".join(f"o{k}[i] = {e.format(v='v')};" for k, (e, _) in enumerate(_OUT[fn.result]))
        out.append((fn.name, [_IN[t][1] for t in fn.params], [d for _, d in _OUT[fn.result]],
                    f"{fn.result} v = {fn.name}({args}); {stores}"))
    for name, (ins, outs, body) in PROBES.items():
        out.append(("probe_" + name, list(ins), list(outs), body))
    return [(code,) + c for code, c in enumerate(out)]


CASES = _cases()
OPS = {c[1]: c for c in CASES}


def kernel_source() -> str:
    cases = "\n".join(f"        case {code}: {{ {body} break; }}" for code, _, _, _, body in CASES)
    kernel = f"""
struct nm_t_args {{
    uint n;
    uint op;
    uint start;
}};

kernel void f64_apply(device const ulong* a0 [[buffer(0)]], device const ulong* a1 [[buffer(1)]],
                      device const ulong* a2 [[buffer(2)]], device ulong* o0 [[buffer(3)]],
                      device ulong* o1 [[buffer(4)]], constant nm_t_args& args [[buffer(5)]],
                      uint i [[thread_position_in_grid]]) {{
    if (i >= args.n) {{
        return;
    }}
    uint start = args.start;
    switch (args.op) {{
{cases}
        default: break;
    }}
}}
"""
    return HEADER + library_text() + kernel


class Float64Library:
    """The library compiled once on a device; `call(name, *arrays)` runs one entry point elementwise."""

    def __init__(self, device: rt.Device):
        self.device = device
        self.queue = device.new_queue()
        self.source = kernel_source()
        self.pipeline = device.compile(self.source, "f64_apply")

    def _run(self, op: str, inputs, n: int, start: int = 0):
        code, _, in_dtypes, out_dtypes, _ = OPS[op]
        assert len(inputs) == len(in_dtypes), op
        words = [np.ascontiguousarray(np.asarray(a).astype(d, copy=False).astype(np.int64 if np.dtype(d).kind == "i"
                                                                                  else np.uint64).view(np.uint64))
                 for a, d in zip(inputs, in_dtypes)]
        bufs = []
        for k in range(3):
            w = words[k] if k < len(words) else None
            b = self.device.new_buffer(max(8 * n, 8) if w is not None else 8)
            if w is not None and n:
                b.write(0, w.ctypes.data, w.nbytes)
            bufs.append(b)
        outs = [self.device.new_buffer(max(8 * n, 8)) for _ in range(2)]
        bufs += outs
        groups = max((n + THREADS - 1) // THREADS, 1)
        self.queue.dispatch(self.pipeline, bufs, [0] * 5, list(range(5)), struct.pack("III", n, code, start), 5, [],
                            (groups, 1, 1), (THREADS, 1, 1), op)
        self.queue.wait()
        results = []
        for b, d in zip(outs, out_dtypes):
            w = np.empty(n, dtype=np.uint64)
            if n:
                b.read(0, w.ctypes.data, w.nbytes)
            results.append(w.astype(d) if np.dtype(d) == np.bool_ else w.astype(d, casting="unsafe"))
        for b in bufs:
            b.release()
        return results[0] if len(results) == 1 else tuple(results)

    def call(self, name: str, *arrays):
        """Applies entry point `name` elementwise (float64 operands as uint64 bit patterns, float32/float16
        as uint32/uint16 patterns). Returns one array, or two for nm_f64_pair and nm_f64_frexp_result."""
        n = len(arrays[0])
        return self._run(name, arrays, n)

    def probe(self, name: str, *arrays, n: int | None = None, start: int = 0):
        count = len(arrays[0]) if arrays else n
        return self._run("probe_" + name, arrays, count, start)

    def release(self):
        self.queue.release()

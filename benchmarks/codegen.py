"""Generated MSL beside hand-written MSL: five kernels, timed on one device, and a static count of what an
Apple GPU pays for in each (issue 28).

    NUMBA_METAL_DEVICE=cpu python benchmarks/codegen.py [--quick] [--static] [--wide] [--out DIR] [--json FILE]

The kernels are a vector add, saxpy, a shared-memory tree reduction, a 16x16 tiled matmul and a 5-point
stencil, written as numba-metal kernels (numba.cuda style) and as hand-written MSL with the same
algorithm, the same launch shape and the same floating-point evaluation order, written as an expert would
for an Apple GPU (``const device`` inputs, 32-bit ``uint`` indices, ``mem_threadgroup`` barriers, one
row offset in the stencil).

**Run** (unless ``--static``): both versions run on the same device (the CPU reference device unless
``NUMBA_METAL_DEVICE`` says otherwise), on the same device arrays: the generated kernel through the public
launch path, the hand-written one through the runtime binding (``Device.compile``, ``Queue.dispatch``).
A sample is the mean wall-clock time of one dispatch and its wait over at least 20 ms of back-to-back
dispatches; the two versions alternate sample by sample, and each keeps its best of ``--repeats``
samples. The results must be bit-identical (the script fails otherwise).

**Static count** (``count_msl``): a small counter over the MSL text of the kernel function (prelude
helpers are counted by name at their call sites, not by their bodies). It is a model, not a measurement:

- *index path*: the subscripts of memory accesses (``x[...]``, except the ``shape``/``strides`` fields of
  numba-metal's array struct), plus every statement that assigns a variable a subscript uses or a pointer
  a subscript is applied to (``p = inp + row``), transitively; constant folding is not modelled (the
  constant strides of numba-metal's threadgroup arrays count as run-time multiplies);
- an operator ``*``, ``+`` or ``-`` (binary; ``++``/``+=``/``-=`` count as an add) on the index path is
  64-bit when its statement mentions a 64-bit integer (a ``long``/``ulong`` cast, a name declared
  ``long``/``ulong``, numba-metal's ``shape``/``strides`` fields, which are ``long``) outside a
  conversion to ``uint``/``int``, 32-bit otherwise; a statement's operators are all counted at its width;
- a multiply by a power-of-two integer literal is a shift and counted as an add (any compiler makes it
  one; in hand-written and generated code alike);
- ``nm_wrap`` calls (numba-metal's negative-index wrap: a 64-bit compare, a select and an add) and
  ``nm_iternext`` calls (a ``range()`` step: two 64-bit adds, the value and the down-counter; on an
  iterator declared ``nm_range_iter<int>``, a loop numba-metal proved 32-bit, two 32-bit adds, counted
  under ``add32``);
- ``threadgroup_barrier`` calls whose flags include ``mem_device`` (device-memory fences);
- *issue work*: the sum of those operations weighted by M1 (Apple7) integer throughputs in cycles per
  instruction per SIMD group, from philipturner/metal-benchmarks (README, "Integer performance"):
  IADD32 1, IMUL32 4, IADD64 4, IMUL64 16, ICMPSEL32 1 (a 64-bit compare or select is counted as 2).
  Each operation counts once where it appears in the source: loop trip counts are not applied, nor are
  loads, stores, floating-point work, fences or what Apple's compiler would remove. The ratio of two
  kernels' issue work says which source carries more index arithmetic, not how much slower it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")
import bench_common  # noqa: E402,F401 - this tree's numba_metal, no performance warnings

from numba_metal import metal  # noqa: E402

TPB = 16          # matmul tile and stencil threadgroup side
RBLOCK = 256      # reduction threadgroup size
SAMPLE_S = 0.02   # one timing sample: dispatches (each with its wait) for at least this long

#: cycles per instruction (throughput, per SIMD group) on M1, philipturner/metal-benchmarks README
CYCLES = {"add32": 1, "mul32": 4, "add64": 4, "mul64": 16, "cmpsel64": 2}
SOURCE = "philipturner/metal-benchmarks, README, 'Integer performance' (Apple7 / M1)"

# ---------------------------------------------------------------------------------------------
# The kernels: numba-metal (Python) and hand-written MSL
# ---------------------------------------------------------------------------------------------


def vadd(a, b, c):
    i = metal.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]


def saxpy(alpha, x, y):
    i = metal.grid(1)
    if i < y.size:
        y[i] = alpha * x[i] + y[i]


def reduce(a, partial):
    s = metal.shared.array(RBLOCK, metal.float32)
    tid = metal.threadIdx.x
    i = metal.blockIdx.x * metal.blockDim.x + tid
    s[tid] = a[i]
    metal.syncthreads()
    stride = metal.blockDim.x // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        metal.syncthreads()
        stride //= 2
    if tid == 0:
        partial[metal.blockIdx.x] = s[0]


def matmul(A, B, C):
    sA = metal.shared.array((TPB, TPB), metal.float32)
    sB = metal.shared.array((TPB, TPB), metal.float32)
    x, y = metal.grid(2)
    tx = metal.threadIdx.x
    ty = metal.threadIdx.y
    tmp = metal.float32(0.0)
    for t in range(A.shape[1] // TPB):
        sA[ty, tx] = A[y, t * TPB + tx]
        sB[ty, tx] = B[t * TPB + ty, x]
        metal.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        metal.syncthreads()
    C[y, x] = tmp


def stencil(inp, out):
    x, y = metal.grid(2)
    rows, cols = inp.shape
    if 1 <= y < rows - 1 and 1 <= x < cols - 1:
        out[y, x] = metal.float32(0.25) * (inp[y - 1, x] + inp[y + 1, x] + inp[y, x - 1] + inp[y, x + 1]) - inp[y, x]


HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

HAND = {
    "vadd": HEADER + """
kernel void vadd(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                 device float* c [[buffer(2)]], constant uint& n [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) {
    if (i < n) c[i] = a[i] + b[i];
}
""",
    "saxpy": HEADER + """
struct saxpy_args { float alpha; uint n; };
kernel void saxpy(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant saxpy_args& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i < p.n) y[i] = p.alpha * x[i] + y[i];
}
""",
    "reduce": HEADER + """
kernel void reduce(device const float* a [[buffer(0)]], device float* partial [[buffer(1)]],
                   uint tid [[thread_position_in_threadgroup]], uint group [[threadgroup_position_in_grid]],
                   uint size [[threads_per_threadgroup]]) {
    threadgroup float s[256];
    s[tid] = a[group * size + tid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint stride = size / 2; stride > 0; stride /= 2) {
        if (tid < stride) s[tid] += s[tid + stride];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (tid == 0) partial[group] = s[0];
}
""",
    "matmul": HEADER + """
kernel void matmul(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                   device float* C [[buffer(2)]], constant uint& n [[buffer(3)]],
                   uint2 gid [[thread_position_in_grid]], uint2 tid [[thread_position_in_threadgroup]]) {
    threadgroup float sA[16][16];
    threadgroup float sB[16][16];
    uint x = gid.x;
    uint y = gid.y;
    uint tx = tid.x;
    uint ty = tid.y;
    float tmp = 0.0f;
    device const float* a = A + y * n + tx;
    device const float* b = B + ty * n + x;
    for (uint t = 0; t < n / 16; ++t) {
        sA[ty][tx] = a[t * 16];
        sB[ty][tx] = b[t * 16 * n];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint j = 0; j < 16; ++j) tmp += sA[ty][j] * sB[j][tx];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    C[y * n + x] = tmp;
}
""",
    "stencil": HEADER + """
kernel void stencil(device const float* inp [[buffer(0)]], device float* out [[buffer(1)]],
                    constant uint2& n [[buffer(2)]], uint2 gid [[thread_position_in_grid]]) {
    uint x = gid.x;
    uint y = gid.y;
    if (y >= 1 && y < n.y - 1 && x >= 1 && x < n.x - 1) {
        uint row = y * n.x + x;
        int nx = int(n.x);
        device const float* p = inp + row;
        out[row] = 0.25f * (((p[-nx] + p[nx]) + p[-1]) + p[1]) - p[0];
    }
}
""",
}

SIGNATURES = {
    "vadd": "void(float32[::1], float32[::1], float32[::1])",
    "saxpy": "void(float32, float32[::1], float32[::1])",
    "reduce": "void(float32[::1], float32[::1])",
    "matmul": "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",
    "stencil": "void(float32[:, ::1], float32[:, ::1])",
}

KERNELS = {"vadd": vadd, "saxpy": saxpy, "reduce": reduce, "matmul": matmul, "stencil": stencil}

# ---------------------------------------------------------------------------------------------
# The static counter
# ---------------------------------------------------------------------------------------------

_WIDE_TYPES = ("long", "ulong", "int64_t", "uint64_t", "size_t")
_DECL = re.compile(r"\b(long|ulong|int|uint|short|ushort|int64_t|uint64_t|size_t)\s+(?:&\s*)?([A-Za-z_]\w*)")
_CALL_WIDE = re.compile(r"\b(long|ulong)\s*\(")
_SUBSCRIPT = re.compile(r"([A-Za-z_][\w.]*)\s*\[")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_NARROWED = re.compile(r"(?<![\w.])u?int\([^()]*\)")


def kernel_body(source: str) -> str:
    """The text of the (first) ``kernel void`` function's body."""
    start = source.index("kernel void")
    brace = source.index("{", source.index(")", start))
    depth = 0
    for k in range(brace, len(source)):
        depth += {"{": 1, "}": -1}.get(source[k], 0)
        if depth == 0:
            return source[brace + 1:k]
    raise ValueError("unbalanced kernel body")


def _subscripts(text: str) -> list[str]:
    """The index expressions of memory accesses in ``text`` (not numba-metal's shape/strides fields)."""
    out = []
    for m in _SUBSCRIPT.finditer(text):
        name = m.group(1)
        if name.endswith(".shape") or name.endswith(".strides"):
            continue
        depth, k = 0, m.end() - 1
        for k in range(m.end() - 1, len(text)):
            depth += {"[": 1, "]": -1}.get(text[k], 0)
            if depth == 0:
                break
        out.append(text[m.end():k])
    return out


_POW2 = "|".join(str(2 ** k) for k in range(62, 0, -1))
_SHIFT = re.compile(rf"\*\s*(?:{_POW2})[uUlL]*\b|\b(?:{_POW2})[uUlL]*\s*\*(?!\s*(?:{_POW2})[uUlL]*\b)")


def _operators(expr: str) -> tuple[int, int]:
    """(multiplies, adds) among ``expr``'s binary operators; a multiply by a power-of-two literal is a
    shift, counted as an add."""
    s = re.sub(r"\[\s*\d+\s*\]", "", expr)         # constant field subscripts
    s = re.sub(r"\w+\s*\(", "(", s)                  # call and cast names
    s, shifts = _SHIFT.subn(" ", s)
    adds = shifts + len(re.findall(r"\+\+|--|\+=|-=", s))
    s = re.sub(r"\+\+|--|\+=|-=|->", " ", s)
    muls = len(re.findall(r"(?<=[\w)\]\s])\*(?=\s*[\w(])", s))
    adds += len(re.findall(r"(?<=[\w)\]])\s*[+-]\s*(?=[\w(])", s))
    return muls, adds


def count_msl(source: str) -> dict:
    """The static counts of the module docstring for the kernel function of ``source``."""
    body = kernel_body(source)
    wide_names = set()
    for t, name in _DECL.findall(source):
        if t in _WIDE_TYPES:
            wide_names.add(name)
    body = re.sub(r"(\w)\{([^{}]*)\}", r"\1(\2)", body)       # aggregates T{a, b} are not blocks
    statements = [s.strip() for s in re.split(r"[;{}]", body) if s.strip()]

    def is_wide(stmt: str) -> bool:
        while True:                          # uint(x.f0), int(a.shape[0]): 64-bit values used as 32 bits
            narrowed = _NARROWED.sub("0", stmt)
            if narrowed == stmt:
                break
            stmt = narrowed
        if _CALL_WIDE.search(stmt) or ".shape[" in stmt or ".strides[" in stmt:
            return True
        return any(n in wide_names for n in _IDENT.findall(stmt))

    # variables on the index path: those the subscripts use, and what their assignments use, transitively
    assigns = []
    for s in statements:
        m = re.match(r"^(?:[\w:<>]+[\s*&]+)*([A-Za-z_]\w*)\s*(\+=|-=|\*=|=)(?!=)\s*(.*)$", s, re.S)
        if m:
            assigns.append((m.group(1), m.group(3), s))
    used = set()
    for s in statements:
        for sub in _subscripts(s):
            used.update(_IDENT.findall(sub))
        used.update(m.group(1) for m in _SUBSCRIPT.finditer(s) if "." not in m.group(1))   # pointer bases
    changed = True
    while changed:
        changed = False
        for target, rhs, _ in assigns:
            if target in used:
                new = set(_IDENT.findall(rhs)) - used
                if new:
                    used |= new
                    changed = True
    narrow_iters = set(re.findall(r"nm_range_iter<u?int>\s+([A-Za-z_]\w*)", source))
    counts = {"mul64": 0, "add64": 0, "mul32": 0, "add32": 0, "nm_wrap": 0, "nm_iternext": 0,
              "device_fences": 0}
    for s in statements:
        exprs = list(_subscripts(s))
        m = re.match(r"^(?:[\w:<>]+[\s*&]+)*([A-Za-z_]\w*)\s*(\+=|-=|\*=|=)(?!=)\s*(.*)$", s, re.S)
        if m and m.group(1) in used and "[" not in m.group(1):
            exprs.append(m.group(3) + (" + 1" if m.group(2) in ("+=", "-=") else ""))
        for var in re.findall(r"(?:\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(?:\+\+|--)", s):
            if (var[0] or var[1]) in used:
                exprs.append("i + 1")
        wide = is_wide(s)
        for e in exprs:
            muls, adds = _operators(e)
            counts["mul64" if wide else "mul32"] += muls
            counts["add64" if wide else "add32"] += adds
        counts["nm_wrap"] += s.count("nm_wrap(")
        for it in re.findall(r"nm_iternext\(\s*([A-Za-z_]\w*)", s):
            if it in narrow_iters:
                counts["add32"] += 2      # a 32-bit range loop's step: two 32-bit adds
            else:
                counts["nm_iternext"] += 1
        if "threadgroup_barrier(" in s and "mem_device" in s:
            counts["device_fences"] += 1
    counts["issue_cycles"] = (CYCLES["mul64"] * counts["mul64"] + CYCLES["add64"] * counts["add64"]
                              + CYCLES["mul32"] * counts["mul32"] + CYCLES["add32"] * counts["add32"]
                              + counts["nm_wrap"] * (2 * CYCLES["cmpsel64"] + CYCLES["add64"])
                              + counts["nm_iternext"] * 2 * CYCLES["add64"])
    return counts


def generated_msl(name: str, wide: bool = False) -> str:
    """The MSL of the specialisation a launch of the benchmark's (C-contiguous, under ``2**31``-element)
    arrays gets, whose device arrays are indexed in 32 bits; ``wide``: of the explicit signature
    (``SIGNATURES``), which says nothing of the arrays' sizes, so 64-bit (what a launch with an array of
    ``2**31`` or more elements gets)."""
    if wide:
        return metal.compile_msl(KERNELS[name], SIGNATURES[name])
    from numba_metal.host.arguments import arg_keys, numba_type_of_key
    args = {"vadd": (np.zeros(1, np.float32),) * 3, "saxpy": (np.float32(1),) + (np.zeros(1, np.float32),) * 2,
            "reduce": (np.zeros(1, np.float32),) * 2}.get(name, (np.zeros((4, 4), np.float32),) * 3)
    keys = arg_keys(args[:KERNELS[name].__code__.co_argcount])   # with the launch's stride groups
    return metal.compile_msl(KERNELS[name], tuple(numba_type_of_key(k) for k in keys))


# ---------------------------------------------------------------------------------------------
# Running both versions
# ---------------------------------------------------------------------------------------------


def _problem(name: str, quick: bool):
    """(generated launch, hand-written dispatch arguments, output array, what) of one kernel."""
    rng = np.random.default_rng(0)
    if name in ("vadd", "saxpy"):
        n = (1 << 18) if quick else (1 << 22)
        x, y = (rng.random(n, dtype=np.float32) for _ in range(2))
        d = [metal.to_device(x), metal.to_device(y), metal.device_array(n, np.float32)]
        groups = ((n + 255) // 256, 1, 1), (256, 1, 1)
        if name == "vadd":
            return dict(args=d, out=d[2], groups=groups, buffers=d, consts=np.uint32(n).tobytes(), slot=3,
                        reset=None, what=f"{n} elements")
        alpha = np.float32(1.5)
        d = d[:2]
        return dict(args=[alpha, d[0], d[1]], out=d[1], groups=groups, buffers=d,
                    consts=alpha.tobytes() + np.uint32(n).tobytes(), slot=2, reset=(d[1], y),
                    what=f"{n} elements")
    if name == "reduce":
        n = (1 << 16) if quick else (1 << 18)
        d = [metal.to_device(rng.random(n, dtype=np.float32)), metal.device_array(n // RBLOCK, np.float32)]
        return dict(args=d, out=d[1], groups=((n // RBLOCK, 1, 1), (RBLOCK, 1, 1)), buffers=d, consts=None,
                    slot=None, reset=None, what=f"{n} -> {n // RBLOCK}")
    if name == "matmul":
        n = 128 if quick else 256
        d = [metal.to_device(rng.random((n, n), dtype=np.float32)) for _ in range(2)]
        d.append(metal.device_array((n, n), np.float32))
        return dict(args=d, out=d[2], groups=((n // TPB, n // TPB, 1), (TPB, TPB, 1)), buffers=d,
                    consts=np.uint32(n).tobytes(), slot=3, reset=None, what=f"{n}x{n}x{n}")
    n = 256 if quick else 1024
    d = [metal.to_device(rng.random((n, n), dtype=np.float32)), metal.to_device(np.zeros((n, n), np.float32))]
    return dict(args=d, out=d[1], groups=((n // TPB, n // TPB, 1), (TPB, TPB, 1)), buffers=d,
                consts=np.array([n, n], np.uint32).tobytes(), slot=2, reset=None, what=f"{n}x{n}")


def run_pair(name: str, quick: bool, repeats: int) -> dict:
    p = _problem(name, quick)
    kernel = metal.jit(KERNELS[name])
    groups, threads = p["groups"]
    ctx = p["buffers"][0].context
    dev = ctx.device
    pipe = dev.compile(HAND[name], name)
    queue = dev.new_queue()
    bufs = [a.buffer for a in p["buffers"]]
    offsets = [a.offset for a in p["buffers"]]

    def generated():
        kernel[groups[:2] if groups[2] == 1 else groups, threads[:2] if threads[2] == 1 else threads](*p["args"])
        metal.synchronize()

    def hand():
        queue.dispatch(pipe, bufs, offsets, list(range(len(bufs))), p["consts"],
                       p["slot"] if p["slot"] is not None else 31, [], groups, threads)
        queue.wait()

    def result(fn):
        if p["reset"] is not None:
            p["reset"][0].copy_to_device(p["reset"][1])
        fn()
        return p["out"].copy_to_host()

    got_generated, got_hand = result(generated), result(hand)
    identical = bool(np.array_equal(got_generated.view(np.uint32), got_hand.view(np.uint32)))
    times = {"generated": [], "hand": []}
    for r in range(repeats):
        order = (("generated", generated), ("hand", hand)) if r % 2 == 0 else (("hand", hand), ("generated", generated))
        for label, fn in order:
            calls, t0 = 0, time.perf_counter()
            while True:           # a sample: back-to-back dispatches for at least SAMPLE_S, per dispatch
                fn()
                calls += 1
                elapsed = time.perf_counter() - t0
                if elapsed >= SAMPLE_S:
                    break
            times[label].append(elapsed / calls)
    queue.release()
    g, h = min(times["generated"]), min(times["hand"])
    return {"problem": p["what"], "generated_ms": g * 1e3, "hand_ms": h * 1e3, "ratio": g / h,
            "bit_identical": identical}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small problems (a smoke run)")
    ap.add_argument("--static", action="store_true", help="only the static counts (no device)")
    ap.add_argument("--repeats", type=int, default=7, help="timed runs of each version (best is kept)")
    ap.add_argument("--out", help="write each kernel's generated and hand-written MSL to this directory")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--wide", action="store_true", help="count the 64-bit specialisation (arrays of 2**31 or more "
                    "elements, or an explicit signature) instead of the one the benchmark's launches get")
    args = ap.parse_args(argv)
    result = {"cycles": CYCLES, "cycles_source": SOURCE, "kernels": {}}
    if not args.static:
        from _perfutil import machine
        result["machine"] = machine()
    keys = ("mul64", "add64", "mul32", "add32", "nm_wrap", "nm_iternext", "device_fences", "issue_cycles")
    print("static counts (a model, not a measurement; see the docstring), generated / hand-written:")
    print(f"{'kernel':8} " + " ".join(f"{k:>13}" for k in keys) + "   work ratio")
    failed = False
    for name in KERNELS:
        gen = generated_msl(name, args.wide)
        row = {"generated": count_msl(gen), "hand": count_msl(HAND[name])}
        g, h = row["generated"]["issue_cycles"], row["hand"]["issue_cycles"]
        row["work_ratio"] = g / h if h else (1.0 if g == 0 else float("inf"))
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            for label, text in (("generated", gen), ("hand", HAND[name])):
                with open(os.path.join(args.out, f"{name}.{label}.metal"), "w") as f:
                    f.write(text)
        print(f"{name:8} " + " ".join(f"{str(row['generated'][k]) + '/' + str(row['hand'][k]):>13}" for k in keys)
              + f"   {row['work_ratio']:.2f}")
        if not args.static:
            row["run"] = run_pair(name, args.quick, args.repeats)
            failed |= not row["run"]["bit_identical"]
        result["kernels"][name] = row
    if not args.static:
        print("\nrun on the device (best of %d samples, per dispatch + wait):" % args.repeats)
        for name, row in result["kernels"].items():
            r = row["run"]
            print(f"{name:8} {r['problem']:>16}  generated {r['generated_ms']:9.3f} ms  hand-written "
                  f"{r['hand_ms']:9.3f} ms  ratio {r['ratio']:.2f}  bit-identical {r['bit_identical']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

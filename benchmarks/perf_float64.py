"""Emulated float64 benchmark: nanoseconds per operation of numba_metal/compiler/mslib/float64.metal on a device,
for normal operands (the fast path) and for subnormal operands (the slow path), beside the same
operation in hardware float32; and nanoseconds per call of every function of the float64 math library
(float64_math.metal) and of the complex128 cmath functions (complex.metal), beside their float32 and complex64
versions.

    python benchmarks/perf_float64.py [--device N] [--json out.json] [--quick] [--no-math] [--no-kernels]

Last, two kernels written in Python and compiled by numba-metal (`@metal.jit`), once on float64 arrays
(emulated float64) and once on float32 arrays: axpy (streaming, 3 memory accesses per 2 operations) and
Horner evaluation of a degree-16 polynomial (compute-bound), wall time per element and the float64/float32
ratio on the default device (NUMBA_METAL_DEVICE).

Each figure times a kernel in which every thread runs a chain of dependent steps (each step needs the
previous result, so neither clang nor a GPU can overlap or vectorise them; the loop's own bookkeeping
runs alongside the chain). The figure is CPU time per operation (the process's CPU time across the device's
worker threads, divided by the operations): the cost on one core, which other load on the machine
inflates much less than wall time; wall time per operation (all cores together) is in the JSON. The chains
keep their operands in one class (normal, or subnormal for the slow path) and the float64 results of
add, sub, mul, div and sqrt are checked bit for bit against NumPy running the same chains. float32 has
no slow path to compare with: Apple GPUs (and the CPU device) flush float32 subnormals.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _perfutil import REPO, describe, machine, summary, write_json  # noqa: E402

from numba_metal import runtime as rt  # noqa: E402

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
LIBRARY = os.path.join(REPO, "numba_metal", "compiler", "mslib", "float64.metal")

# name -> (float64 step, float32 step, normal (acc, y, z), subnormal (acc, y, z) or None). The steps update
# `acc` from `y` and `z`; initial values are float64 numbers (rounded to float32 for the float32 kernel).
BENCHES = {
    "add": ("acc = nm_f64_add(acc, y);", "acc = acc + y;", (1.0, 2.0 ** -10, 0.0), (1e-310, 1e-320, 0.0)),
    "sub": ("acc = nm_f64_sub(acc, y);", "acc = acc - y;", (1.0, 2.0 ** -10, 0.0), (1e-310, 1e-320, 0.0)),
    "mul": ("acc = nm_f64_mul(acc, y);", "acc = acc * y;", (1.0, 1 + 2.0 ** -20, 0.0), (1e-310, 1 + 2.0 ** -20, 0.0)),
    "div": ("acc = nm_f64_div(acc, y);", "acc = acc / y;", (1.0, 1 + 2.0 ** -20, 0.0), (1e-310, 1 + 2.0 ** -20, 0.0)),
    # the root of a root converges to 1: flipping the last bit keeps the operand a general normal
    "sqrt": ("acc = nm_f64_sqrt(acc); acc.bits ^= 1UL;", "acc = sqrt(acc); acc = as_type<float>(as_type<uint>(acc) ^ 1u);",
             (2.0, 0.0, 0.0), None),
    "fma": ("acc = nm_f64_fma(acc, y, z);", "acc = fma(acc, y, z);", (1.0, 1 - 2.0 ** -20, 2.0 ** -20),
            (1e-310, 1 - 2.0 ** -20, 1e-320)),
    "compare (lt)": ("acc.bits += ulong(nm_f64_lt(acc, y));",
                     "acc = as_type<float>(as_type<uint>(acc) + uint(acc < y));", (1.0, 2.0, 0.0), None),
    "convert to float32": ("acc.bits += ulong(as_type<uint>(nm_f64_to_f32(acc)) & 15u);",
                           "acc = as_type<float>(as_type<uint>(acc) + (as_type<ushort>(half(acc)) & 15u));",
                           (1.0, 0.0, 0.0), (1e-40, 0.0, 0.0)),
    "convert to int64": ("acc.bits += ulong(nm_f64_to_i64(acc)) & 15UL;",
                         "acc = as_type<float>(as_type<uint>(acc) + (uint(int(acc)) & 15u));", (1e6, 0.0, 0.0), None),
    "convert from int64": ("acc = nm_f64_from_i64(long(acc.bits >> 12) + 1L);",
                           "acc = float(int(as_type<uint>(acc) >> 9) + 1);", (1.0, 0.0, 0.0), None),
}
# Math functions: name -> (float64 call on nm_f64 x (and y), float32 call on float x (and y), input range).
# Each thread calls the function on `steps` inputs spread over the range (read from a table, so the
# work is the function's) and folds the results' bits into one word so that nothing is optimised away.
# float32 versions are MSL's metal:: functions or the float32 math library (mathlib.metal) where MSL has none.
MATH = {
    "exp": ("nm_f64_exp(x)", "metal::exp(x)", (-700.0, 700.0)),
    "exp2": ("nm_f64_exp2(x)", "metal::exp2(x)", (-1000.0, 1000.0)),
    "expm1": ("nm_f64_expm1(x)", "nm_expm1(x)", (-2.0, 2.0)),
    "log": ("nm_f64_log(x)", "metal::log(x)", (1e-300, 1e300)),
    "log2": ("nm_f64_log2(x)", "metal::log2(x)", (1e-300, 1e300)),
    "log10": ("nm_f64_log10(x)", "metal::log10(x)", (1e-300, 1e300)),
    "log1p": ("nm_f64_log1p(x)", "nm_log1p(x)", (-0.5, 10.0)),
    "pow": ("nm_f64_pow(x, y)", "metal::pow(x, y)", (0.1, 10.0)),
    "sin": ("nm_f64_sin(x)", "metal::sin(x)", (-100.0, 100.0)),
    "cos": ("nm_f64_cos(x)", "metal::cos(x)", (-100.0, 100.0)),
    "tan": ("nm_f64_tan(x)", "metal::tan(x)", (-100.0, 100.0)),
    "sin (|x| ~ 1e300)": ("nm_f64_sin(x)", "metal::sin(x)", (1e299, 1e300)),
    "asin": ("nm_f64_asin(x)", "metal::asin(x)", (-1.0, 1.0)),
    "acos": ("nm_f64_acos(x)", "metal::acos(x)", (-1.0, 1.0)),
    "atan": ("nm_f64_atan(x)", "metal::atan(x)", (-10.0, 10.0)),
    "atan2": ("nm_f64_atan2(x, y)", "metal::atan2(x, y)", (-10.0, 10.0)),
    "sinh": ("nm_f64_sinh(x)", "metal::sinh(x)", (-10.0, 10.0)),
    "cosh": ("nm_f64_cosh(x)", "metal::cosh(x)", (-10.0, 10.0)),
    "tanh": ("nm_f64_tanh(x)", "metal::tanh(x)", (-10.0, 10.0)),
    "asinh": ("nm_f64_asinh(x)", "metal::asinh(x)", (-10.0, 10.0)),
    "acosh": ("nm_f64_acosh(x)", "metal::acosh(x)", (1.0, 10.0)),
    "atanh": ("nm_f64_atanh(x)", "metal::atanh(x)", (-0.99, 0.99)),
    "cbrt": ("nm_f64_cbrt(x)", "nm_cbrt(x)", (-1e10, 1e10)),
    "hypot": ("nm_f64_hypot(x, y)", "nm_hypot(x, y)", (-10.0, 10.0)),
    "erf": ("nm_f64_erf(x)", "nm_erf(x)", (-4.0, 4.0)),
    "erfc": ("nm_f64_erfc(x)", "nm_erfc(x)", (-4.0, 10.0)),
    "gamma": ("nm_f64_gamma(x)", "nm_tgamma(x)", (0.1, 30.0)),
    "lgamma": ("nm_f64_lgamma(x)", "nm_lgamma(x)", (0.1, 30.0)),
}
# complex128 against complex64 (float2): z = (x, y)
COMPLEX = {name: (f"nm_c128_{name}(nm_c128_make(x, y))", f"nm_c64_{name}(float2(x, y))", rng)
           for name, rng in (("exp", (-5.0, 5.0)), ("log", (-5.0, 5.0)), ("sqrt", (-5.0, 5.0)), ("sin", (-5.0, 5.0)),
                             ("tan", (-5.0, 5.0)), ("asin", (-2.0, 2.0)), ("atanh", (-2.0, 2.0)))}
COMPLEX["div"] = ("nm_c128_div(nm_c128_make(x, y), nm_c128_make(y, x))", "nm_c64_div(float2(x, y), float2(y, x))",
                  (-5.0, 5.0))
TABLE = 1024

# The float64 chains NumPy replays to check the benchmark's own results.
_REPLAY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


def source() -> str:
    with open(LIBRARY, encoding="utf-8") as f:
        parts = [HEADER, f.read(), "struct bench_args { uint n; uint steps; };\n"]
    for k, (step64, step32, _, _) in enumerate(BENCHES.values()):
        parts.append(f"""
kernel void f64_{k}(device const ulong* init [[buffer(0)]], device ulong* out [[buffer(1)]],
                   constant bench_args& args [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
    if (i >= args.n) {{
        return;
    }}
    nm_f64 acc = nm_f64_from_bits(init[0] + ulong(i & 7u));
    nm_f64 y = nm_f64_from_bits(init[1]);
    nm_f64 z = nm_f64_from_bits(init[2]);
    for (uint k = 0; k < args.steps; ++k) {{
        {step64}
    }}
    out[i] = acc.bits;
}}

kernel void f32_{k}(device const ulong* init [[buffer(0)]], device ulong* out [[buffer(1)]],
                   constant bench_args& args [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
    if (i >= args.n) {{
        return;
    }}
    float acc = as_type<float>(uint(init[0]) + (i & 7u));
    float y = as_type<float>(uint(init[1]));
    float z = as_type<float>(uint(init[2]));
    for (uint k = 0; k < args.steps; ++k) {{
        {step32}
    }}
    out[i] = ulong(as_type<uint>(acc));
}}
""")
    return "".join(parts)


def math_source() -> str:
    """One kernel per precision with a case per function, so that the library compiles once."""
    from numba_metal.compiler.complex_ops import FUNCTIONS as complex_rows
    from numba_metal.compiler.float64_math_ops import FUNCTIONS as math_rows, msl_sections
    rows = math_rows + complex_rows
    parts = [HEADER] + [text for _, text in msl_sections({row.section for row in rows})]
    parts.append("struct math_args { uint n; uint steps; uint op; };\n")

    def fold(expr64: str) -> str:
        if expr64.startswith("nm_c128"):
            return f"nm_c128 r = {expr64}; acc ^= r.re.bits ^ (r.im.bits << 1);"
        return f"acc ^= {expr64}.bits;"

    def fold32(expr32: str) -> str:
        if expr32.startswith("nm_c64"):
            return f"float2 r = {expr32}; acc ^= ulong(as_type<uint>(r.x)) ^ (ulong(as_type<uint>(r.y)) << 32);"
        return f"acc ^= ulong(as_type<uint>({expr32}));"

    cases64, cases32 = [], []
    for k, (f64, f32, _) in enumerate(list(MATH.values()) + list(COMPLEX.values())):
        cases64.append(f"""        case {k}: for (uint s = 0; s < args.steps; ++s) {{
            uint j = (i * 7u + s) & {TABLE - 1}u;
            nm_f64 x = nm_f64_from_bits(xs[j]);
            nm_f64 y = nm_f64_from_bits(ys[j]);
            {fold(f64)}
        }} break;""")
        cases32.append(f"""        case {k}: for (uint s = 0; s < args.steps; ++s) {{
            uint j = (i * 7u + s) & {TABLE - 1}u;
            float x = as_type<float>(uint(xs[j]));
            float y = as_type<float>(uint(ys[j]));
            {fold32(f32)}
        }} break;""")
    for prec, cases in (("f64", cases64), ("f32", cases32)):
        body = "\n".join(cases)
        parts.append(f"""
kernel void math_{prec}(device const ulong* xs [[buffer(0)]], device const ulong* ys [[buffer(1)]],
                       device ulong* out [[buffer(2)]], constant math_args& args [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {{
    if (i >= args.n) {{
        return;
    }}
    ulong acc = 0UL;
    switch (args.op) {{
{body}
        default: break;
    }}
    out[i] = acc;
}}
""")
    return "".join(parts)


def time_math(dev, queue, pipeline, op: int, lo: float, hi: float, f32: bool, threads: int, steps: int, repeats: int):
    rng = np.random.default_rng(op)
    if f32:
        # the same inputs where float32 has them: huge and tiny ranges are clamped into float32's
        lo, hi = (max(lo, 1e-30) if lo > 0 else max(lo, -3e38)), min(hi, 3e38)
        if hi <= lo:
            lo = hi / 10.0
    if lo > 0 and hi / lo > 1e3:
        values = np.exp(rng.uniform(np.log(lo), np.log(hi), (2, TABLE)))
    else:
        values = rng.uniform(lo, hi, (2, TABLE))
    words = [_init_words(v, f32) for v in values]
    bufs = [dev.new_buffer(w.nbytes) for w in words]
    for b, w in zip(bufs, words):
        b.write(0, w.ctypes.data, w.nbytes)
    ob = dev.new_buffer(8 * threads)
    args = struct.pack("III", threads, steps, op)
    groups = ((threads + 255) // 256, 1, 1)
    cpu = []
    for _ in range(repeats + 1):
        c0 = time.process_time()
        queue.dispatch(pipeline, bufs + [ob], [0, 0, 0], [0, 1, 2], args, 3, [], groups, (256, 1, 1))
        queue.wait()
        cpu.append(time.process_time() - c0)
    for b in bufs + [ob]:
        b.release()
    return cpu[1:]


def math_benchmarks(dev, queue, quick: bool) -> dict:
    threads, steps, repeats = (1 << 9, 16, 2) if quick else (1 << 13, 128, 5)
    src = math_source()
    pipelines = {prec: dev.compile(src, f"math_{prec}") for prec in ("f64", "f32")}
    rows = {}
    entries = [("math", name, spec) for name, spec in MATH.items()] + [("complex", name, spec)
                                                                       for name, spec in COMPLEX.items()]
    for op, (group, name, (_, _, (lo, hi))) in enumerate(entries):
        row = {"group": group}
        for prec in ("f64", "f32"):
            cpu = time_math(dev, queue, pipelines[prec], op, lo, hi, prec == "f32", threads, steps, repeats)
            row[prec] = summary([t / (threads * steps) * 1e9 for t in cpu])
        row["ratio_f64_to_f32"] = row["f64"]["median"] / max(row["f32"]["median"], 1e-3)
        rows[f"{group}:{name}"] = row
    print(f"\nmath functions: {threads} threads x {steps} calls; CPU ns per call (median of {repeats})")
    print(f"{'function':26s} {'float64':>10s} {'float32':>10s} {'ratio':>8s}   (complex: complex128, complex64)")
    for key, row in rows.items():
        print(f"{key:26s} {row['f64']['median']:10.1f} {row['f32']['median']:10.1f} {row['ratio_f64_to_f32']:7.1f}x")
    return {"threads": threads, "calls_per_thread": steps, "repeats": repeats, "ns_per_call": rows}


def _init_words(values, f32: bool) -> np.ndarray:
    if f32:
        return np.array(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return np.array(values, dtype=np.float64).view(np.uint64)


def time_kernel(dev, queue, pipeline, init, threads: int, steps: int, repeats: int):
    """CPU times and wall times of `repeats` dispatches, and the kernel's outputs."""
    ib = dev.new_buffer(init.nbytes)
    ib.write(0, init.ctypes.data, init.nbytes)
    ob = dev.new_buffer(8 * threads)
    args = struct.pack("II", threads, steps)
    groups = ((threads + 255) // 256, 1, 1)
    cpu, wall = [], []
    for _ in range(repeats + 1):   # the first dispatch warms the worker threads
        c0, t0 = time.process_time(), time.perf_counter()
        queue.dispatch(pipeline, [ib, ob], [0, 0], [0, 1], args, 2, [], groups, (256, 1, 1))
        queue.wait()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    out = np.empty(threads, dtype=np.uint64)
    ob.read(0, out.ctypes.data, out.nbytes)
    ib.release()
    ob.release()
    return cpu[1:], wall[1:], out


def replay(name: str, init, threads: int, steps: int) -> np.ndarray:
    acc = (np.full(threads, init[0], dtype=np.uint64) + (np.arange(threads, dtype=np.uint64) & np.uint64(7))).view(np.float64)
    y = init.view(np.float64)[1]
    with np.errstate(all="ignore"):
        for _ in range(steps):
            if name == "sqrt":
                acc = (np.sqrt(acc).view(np.uint64) ^ np.uint64(1)).view(np.float64)
            else:
                acc = _REPLAY[name](acc, y)
    return acc.view(np.uint64)


def compiled_kernel_benchmarks(quick: bool) -> dict:
    """ns per element of axpy and of a degree-16 Horner polynomial compiled by numba-metal, float64 (emulated)
    and float32, and their ratio; float64 results checked against NumPy bit for bit."""
    from numba_metal import metal

    @metal.jit
    def axpy(a, x, y, out):
        i = metal.grid(1)
        if i < x.size:
            out[i] = a * x[i] + y[i]

    @metal.jit
    def horner(coeffs, x, out):
        i = metal.grid(1)
        if i < x.size:
            v = x[i]
            acc = coeffs[0]
            for k in range(1, coeffs.size):
                acc = acc * v + coeffs[k]
            out[i] = acc

    n = 1 << (16 if quick else 20)
    repeats = 3 if quick else 7
    rng = np.random.default_rng(1)
    results = {}
    for dtype in (np.float64, np.float32):
        x = metal.to_device(rng.uniform(-1, 1, n).astype(dtype))
        y = metal.to_device(rng.uniform(-1, 1, n).astype(dtype))
        coeffs = metal.to_device(rng.uniform(-1, 1, 17).astype(dtype))
        out = metal.device_array(n, dtype)
        a = dtype(1.5)
        launches = {"axpy": lambda: axpy[(n + 255) // 256, 256](a, x, y, out),
                    "polynomial": lambda: horner[(n + 255) // 256, 256](coeffs, x, out)}
        for name, launch in launches.items():
            launch()
            metal.synchronize()
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                launch()
                metal.synchronize()
                times.append(time.perf_counter() - t0)
            results.setdefault(name, {})[np.dtype(dtype).name] = summary([t / n * 1e9 for t in times])
            if dtype == np.float64 and name == "axpy":
                want = a * x.copy_to_host() + y.copy_to_host()
                assert np.array_equal(out.copy_to_host().view(np.uint64), want.view(np.uint64))
    print(f"\nkernels compiled by numba-metal, {n} elements; wall ns per element (median of {repeats})")
    print(f"{'kernel':12s} {'float64':>10s} {'float32':>10s} {'ratio':>8s}")
    for name, row in results.items():
        row["ratio_f64_to_f32"] = row["float64"]["median"] / max(row["float32"]["median"], 1e-6)
        print(f"{name:12s} {row['float64']['median']:10.2f} {row['float32']['median']:10.2f} "
              f"{row['ratio_f64_to_f32']:7.1f}x")
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", type=int, default=None, help="device index (default: the CPU reference device)")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="fewer threads and repetitions (a smoke run)")
    ap.add_argument("--no-math", action="store_true", help="only the basic operations")
    ap.add_argument("--no-kernels", action="store_true", help="without the kernels compiled by numba-metal")
    args = ap.parse_args(argv)
    index = args.device if args.device is not None else [d.index for d in rt.list_devices() if d.kind == "cpu"][0]
    dev = rt.open_device(index)
    queue = dev.new_queue()
    threads, steps, repeats = (1 << 11, 128, 2) if args.quick else (1 << 13, 512, 5)
    info = machine()
    print(describe(info))
    src = source()
    names = list(BENCHES)
    rows = {}
    raw, raw_wall = {}, {}
    for k, name in enumerate(names):
        step64, step32, normal, sub = BENCHES[name]
        for label, kernel, init in (("f64", f"f64_{k}", _init_words(normal, False)),
                                    ("f64_slow", f"f64_{k}", _init_words(sub, False) if sub else None),
                                    ("f32", f"f32_{k}", _init_words(normal, True))):
            if init is None:
                continue
            pipeline = dev.compile(src, kernel)
            cpu, wall, out = time_kernel(dev, queue, pipeline, init, threads, steps, repeats)
            raw[(name, label)] = cpu
            raw_wall[(name, label)] = wall
            if label.startswith("f64") and name in ("add", "sub", "mul", "div", "sqrt"):
                want = replay(name, init, threads, steps)
                assert np.array_equal(out, want), f"{name} ({label}): the benchmark's results differ from NumPy"
    ops = threads * steps
    for name in names:
        row = {}
        for label in ("f64", "f64_slow", "f32"):
            if (name, label) not in raw:
                continue
            row[label] = summary([t / ops * 1e9 for t in raw[(name, label)]])
            row[label + "_wall"] = summary([t / ops * 1e9 for t in raw_wall[(name, label)]])
        row["ratio_f64_to_f32"] = row["f64"]["median"] / max(row["f32"]["median"], 1e-3)
        rows[name] = row
    print(f"\n{threads} threads x {steps} dependent steps per kernel; CPU ns per operation (median of {repeats})")
    print(f"{'operation':22s} {'float64':>10s} {'float64 slow path':>18s} {'float32':>10s} {'ratio':>8s}")
    for name, row in rows.items():
        slow = f"{row['f64_slow']['median']:.2f}" if "f64_slow" in row else "-"
        print(f"{name:22s} {row['f64']['median']:10.2f} {slow:>18s} {row['f32']['median']:10.2f} "
              f"{row['ratio_f64_to_f32']:7.1f}x")
    math = None if args.no_math else math_benchmarks(dev, queue, args.quick)
    queue.release()
    kernels = None if args.no_kernels else compiled_kernel_benchmarks(args.quick)
    write_json(args.json, {"machine": info, "threads": threads, "steps": steps, "repeats": repeats,
                           "ns_per_op": rows, "math": math, "kernels": kernels})
    return 0


if __name__ == "__main__":
    sys.exit(main())

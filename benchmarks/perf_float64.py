"""Emulated float64 benchmark: nanoseconds per operation of numba_metal/compiler/float64.metal on a device,
for normal operands (the fast path) and for subnormal operands (the slow path), beside the same
operation in hardware float32.

    python benchmarks/perf_float64.py [--device N] [--json out.json] [--quick]

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
LIBRARY = os.path.join(REPO, "numba_metal", "compiler", "float64.metal")

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", type=int, default=None, help="device index (default: the CPU reference device)")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="fewer threads and repetitions (a smoke run)")
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
    queue.release()
    write_json(args.json, {"machine": info, "threads": threads, "steps": steps, "repeats": repeats,
                           "ns_per_op": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

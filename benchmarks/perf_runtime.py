"""Runtime benchmark: launch overhead through the C ABI from Python, compile time (cold, cached in-process,
cached on disk), and CPU-device vector-add bandwidth beside NumPy.

    python benchmarks/perf_runtime.py [--device N] [--json out.json] [--quick]

Every figure is the best of a few repetitions; compiles are never inside a timed launch region.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from numba_metal import runtime as rt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _perfutil import machine  # noqa: E402

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def empty_kernel(nbuf: int) -> str:
    params = ", ".join(f"device float* b{i} [[buffer({i})]]" for i in range(nbuf))
    return HEADER + f"kernel void empty{nbuf}({params}, uint i [[thread_position_in_grid]]) {{}}\n"


def launch_overhead(dev, nbuf: int, launches: int, repeats: int) -> dict:
    pipe = dev.compile(empty_kernel(nbuf), f"empty{nbuf}")
    q = dev.new_queue()
    bufs = [dev.new_buffer(256) for _ in range(nbuf)]
    plan = rt.DispatchPlan(pipe, list(range(nbuf)), 30, 16)
    for i, b in enumerate(bufs):
        plan.set_buffer(i, b, 0)
    plan.set_grid((1, 1, 1), (1, 1, 1))
    for _ in range(1000):  # warm up threads, caches and the allocator
        q.submit(plan, 0)
    q.wait()
    submit, total = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(launches):
            q.submit(plan, 0)
        t1 = time.perf_counter()
        q.wait()
        t2 = time.perf_counter()
        submit.append((t1 - t0) / launches * 1e6)
        total.append((t2 - t0) / launches * 1e6)
    q.release()
    return {"buffers": nbuf, "launches": launches, "submit_us_best": min(submit), "submit_us_median": float(np.median(submit)),
            "end_to_end_us_best": min(total), "end_to_end_us_median": float(np.median(total))}


COMPILE_CHILD = """
import json, sys, time
from numba_metal import runtime as rt
dev = rt.open_device(int(sys.argv[1]))
src = sys.argv[2]
t0 = time.perf_counter()
p = dev.compile(src, "saxpy")
wall = time.perf_counter() - t0
t1 = time.perf_counter()
p2 = dev.compile(src, "saxpy")
again = time.perf_counter() - t1
print(json.dumps({"ms": wall * 1e3, "from_cache": p.from_cache, "in_process_ms": again * 1e3}))
"""


def compile_times(index: int) -> dict:
    src = HEADER + ("kernel void saxpy(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],\n"
                    "                  constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {\n"
                    f"    y[i] = a * x[i] + y[i] + {time.time_ns() % 1000}.0f * 0.0f;\n}}\n")
    with tempfile.TemporaryDirectory() as cache:
        os.chmod(cache, 0o700)
        env = dict(os.environ, NUMBA_METAL_CACHE_DIR=cache)
        runs = []
        for _ in range(2):  # cold (empty cache), then warm (disk)
            out = subprocess.run([sys.executable, "-c", COMPILE_CHILD, str(index), src], env=env, capture_output=True,
                                 text=True, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {"cold_ms": runs[0]["ms"], "cold_from_cache": runs[0]["from_cache"],
            "in_process_cached_ms": runs[0]["in_process_ms"],
            "disk_cached_ms": runs[1]["ms"], "disk_from_cache": runs[1]["from_cache"]}


VADD = HEADER + """
kernel void vadd(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]], device float* c [[buffer(2)]],
                 constant uint& n [[buffer(3)]], uint i [[thread_position_in_grid]]) {
    if (i < n) c[i] = a[i] + b[i];
}
"""


def bandwidth(dev, sizes: list[int], repeats: int) -> list[dict]:
    pipe = dev.compile(VADD, "vadd")
    q = dev.new_queue()
    rows = []
    for n in sizes:
        a = np.random.default_rng(0).random(n, dtype=np.float32)
        b = np.random.default_rng(1).random(n, dtype=np.float32)
        c = np.empty_like(a)
        ba, bb, bc = dev.new_buffer(4 * n), dev.new_buffer(4 * n), dev.new_buffer(4 * n)
        ba.write(0, a.ctypes.data, 4 * n)
        bb.write(0, b.ctypes.data, 4 * n)
        plan = rt.DispatchPlan(pipe, [0, 1, 2], 3, 4)
        for i, buf in enumerate((ba, bb, bc)):
            plan.set_buffer(i, buf, 0)
        plan.arg_view[:4] = np.uint32(n).tobytes()
        plan.set_grid(((n + 255) // 256, 1, 1), (256, 1, 1))
        q.submit(plan, 4)
        q.wait()
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            q.submit(plan, 4)
            q.wait()
            best = min(best, time.perf_counter() - t0)
        got = np.empty(n, dtype=np.float32)
        bc.read(0, got.ctypes.data, 4 * n)
        assert np.array_equal(got, a + b)
        np_best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.add(a, b, out=c)
            np_best = min(np_best, time.perf_counter() - t0)
        moved = 3 * 4 * n
        rows.append({"n": n, "bytes_moved": moved, "device_ms": best * 1e3, "device_gb_s": moved / best / 1e9,
                     "numpy_ms": np_best * 1e3, "numpy_gb_s": moved / np_best / 1e9})
        for buf in (ba, bb, bc):
            buf.release()
    q.release()
    return rows


VADD_BARRIER = VADD.replace("vadd(", "vadd_fibers(").replace(
    "uint i [[thread_position_in_grid]]) {", "uint i [[thread_position_in_grid]]) {\n    threadgroup_barrier(mem_flags::mem_none);")

REDUCE = HEADER + """
kernel void reduce(device const float* x [[buffer(0)]], device float* partial [[buffer(1)]],
                   uint tid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                   uint group [[threadgroup_position_in_grid]], uint size [[threads_per_threadgroup]]) {
    threadgroup float tile[1024];
    tile[tid] = x[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = size / 2; s > 0; s >>= 1) {
        if (tid < s) tile[tid] += tile[tid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (tid == 0) partial[group] = tile[0];
}
"""


def fiber_cost(dev, n: int, repeats: int) -> dict:
    """The same vector add on the fast path and on fibers (a no-op barrier), and a 1024-thread tree reduction."""
    q = dev.new_queue()
    a, b, c = (dev.new_buffer(4 * n) for _ in range(3))
    out = {}
    for name, src, fn in (("fast_path", VADD, "vadd"), ("fibers", VADD_BARRIER, "vadd_fibers")):
        pipe = dev.compile(src, fn)
        best = float("inf")
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            q.dispatch(pipe, [a, b, c], [0, 0, 0], [0, 1, 2], np.uint32(n).tobytes(), 3, [], ((n + 255) // 256, 1, 1),
                       (256, 1, 1))
            q.wait()
            best = min(best, time.perf_counter() - t0)
        out[name + "_ns_per_item"] = best / n * 1e9
    pipe = dev.compile(REDUCE, "reduce")
    partial = dev.new_buffer(4 * (n // 1024))
    best = float("inf")
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        q.dispatch(pipe, [a, partial], [0, 0], [0, 1], None, 31, [], (n // 1024, 1, 1), (1024, 1, 1))
        q.wait()
        best = min(best, time.perf_counter() - t0)
    out["reduce1024_ns_per_item"] = best / n * 1e9
    out["n"] = n
    q.release()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", type=int, default=None, help="device index (default: the CPU reference device)")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = ap.parse_args(argv)
    devices = rt.list_devices()
    index = args.device if args.device is not None else [d.index for d in devices if d.kind == "cpu"][0]
    dev = rt.open_device(index)
    reps = 2 if args.quick else 5
    result = {"machine": machine(), "device": dev.info._asdict()}
    print(f"machine: {result['machine']['cpu']}, {result['machine']['cores']} cores, {result['machine']['os']}"
          f" (load average {result['machine']['load_average']})")
    print(f"device:  [{index}] {dev.info.name} ({dev.info.kind})")
    load = result["machine"]["load_average"]
    if load and load[0] > (os.cpu_count() or 1) * 0.5:
        print(f"note: the machine is busy (1-minute load {load[0]:.1f} on {os.cpu_count()} cores); figures are upper bounds")

    result["launch"] = [launch_overhead(dev, n, 10_000, reps) for n in (1, 8)]
    for r in result["launch"]:
        print(f"launch, {r['buffers']} buffer(s), {r['launches']} async submits then one wait: submit "
              f"{r['submit_us_best']:.2f} us/launch (median {r['submit_us_median']:.2f}), end-to-end "
              f"{r['end_to_end_us_best']:.2f} us/launch (median {r['end_to_end_us_median']:.2f})")

    result["compile"] = compile_times(index)
    c = result["compile"]
    print(f"compile: cold {c['cold_ms']:.1f} ms, cached in-process {c['in_process_cached_ms']:.3f} ms, "
          f"cached on disk (new process) {c['disk_cached_ms']:.1f} ms (from_cache={c['disk_from_cache']})")

    sizes = [1 << 16, 1 << 20, 1 << 22] if args.quick else [1 << 16, 1 << 20, 1 << 22, 1 << 24]
    result["vector_add"] = bandwidth(dev, sizes, reps)
    for r in result["vector_add"]:
        print(f"vector add n={r['n']:>9}: device {r['device_gb_s']:6.2f} GB/s ({r['device_ms']:.3f} ms)   "
              f"numpy {r['numpy_gb_s']:6.2f} GB/s ({r['numpy_ms']:.3f} ms)")
    result["fibers"] = fiber_cost(dev, 1 << 20, reps)
    fc = result["fibers"]
    print(f"work-item cost, n={fc['n']}: vector add fast path {fc['fast_path_ns_per_item']:.2f} ns, same kernel on fibers "
          f"(a barrier) {fc['fibers_ns_per_item']:.2f} ns, 1024-thread tree reduction {fc['reduce1024_ns_per_item']:.2f} ns")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

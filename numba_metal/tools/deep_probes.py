"""The probes of ``numba-metal doctor --deep``: each runs in its own child process (``deep_check.py`` starts
them) on the device the doctor checks, and returns a :class:`Result` with the value it observed.

A probe raises nothing on purpose: an exception it does not catch is reported as ``fail`` with its text.
``skip`` always says why. What each probe answers, and why only a Mac can answer it, is in
docs/installation.md (*The deep check*) and docs/limitations.md.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time
import warnings
from typing import NamedTuple

import numpy as np

from numba_metal import metal

#: The MSL versions (x 100) the kernels run at on a Metal GPU: what numba-metal asks for (3.0, 3.2) and what
#: macOS 26 gives a kernel that asks for none (4.0).
METAL_VERSIONS = (300, 320, 400)


class Result(NamedTuple):
    status: str            # 'pass', 'fail' or 'skip'
    value: object = None   # what was observed (JSON-serialisable)
    reason: str = ""       # why it was skipped, or what failed


def passed(value=None) -> Result:
    return Result("pass", value)


def failed(reason: str, value=None) -> Result:
    return Result("fail", value, reason)


def skipped(reason: str, value=None) -> Result:
    return Result("skip", value, reason)


def _quiet():
    """Small launches are the point here: numba.cuda's occupancy and copy warnings are no finding."""
    warnings.filterwarnings("ignore", category=Warning, module=r"numba.*")
    warnings.filterwarnings("ignore", message=r".*(occupancy|threadgroups|copy overhead|under-utilization).*")


def context():
    """The device the doctor checks (the parent passes it in NUMBA_METAL_DEVICE)."""
    _quiet()
    return metal.select_device(os.environ.get("NUMBA_METAL_DEVICE", "metal"))


def force_language_version(ctx, version: int) -> None:
    """Every compile of this (child) process asks for at least MSL ``version``: the kernel checks run the
    same kernels at each version a Mac may compile them with. Only the doctor's children do this."""
    compile_at_least = ctx.device.compile

    def compile_at(source, kernel_name, fast_math=0, language_version=0, **kw):
        return compile_at_least(source, kernel_name, fast_math, max(int(language_version), version), **kw)
    ctx.device.compile = compile_at


# ---------------------------------------------------------------------------------------------
# Build and device facts
# ---------------------------------------------------------------------------------------------

def device_facts(ctx) -> Result:
    from numba_metal import __version__, runtime
    info = ctx.info
    facts = {
        "device": info.name, "kind": info.kind,
        "gpu_family": "not reported by numba-metal's runtime (the device name is)",
        "simd_width": info.simd_width, "max_threads_per_threadgroup": info.max_threads_per_threadgroup,
        "threadgroup_memory_bytes": info.max_threadgroup_memory, "page_size": info.page_size,
        "unified_memory": info.unified_memory, "recommended_working_set": info.recommended_working_set,
        "os": f"{platform.system()} {platform.release()} {platform.machine()}"
              + (f" macOS {platform.mac_ver()[0]}" if sys.platform == "darwin" else ""),
        "numba_metal": __version__, "python": platform.python_version(), "numpy": np.__version__,
        "runtime_library": str(runtime.library_path()),
    }
    if sys.platform == "darwin":
        import subprocess
        for key, cmd in (("xcode", ["xcode-select", "-p"]), ("metal_compiler", ["xcrun", "metal", "--version"])):
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
                facts[key] = (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr) \
                    else f"exit status {done.returncode}"
            except (OSError, subprocess.SubprocessError) as e:
                facts[key] = f"not available: {e}"
    return passed(facts)


_TRIVIAL = """#include <metal_stdlib>
using namespace metal;
kernel void nm_doctor_trivial(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = x[i] + 1.0f;
}
"""


def msl_versions(ctx) -> Result:
    compiled, refused = [], {}
    for version in (300, 310, 320, 400, 410):
        try:
            ctx.device.compile(_TRIVIAL, "nm_doctor_trivial", language_version=version)
            compiled.append(f"{version // 100}.{version % 100 // 10}")
        except Exception as e:  # noqa: BLE001 - a refusal is the finding
            refused[f"{version // 100}.{version % 100 // 10}"] = str(e).splitlines()[0][:200]
    value = {"compiled": compiled, "refused": refused}
    if ctx.info.kind != "metal":
        value["note"] = ("on this device the version selects only numba-metal's checks of MSL's version rules: "
                         "Apple's compiler is not involved")
    if "3.0" not in compiled:
        return failed("MSL 3.0, numba-metal's oldest, does not compile", value)
    return passed(value)


# ---------------------------------------------------------------------------------------------
# Representative kernels, compared to NumPy
# ---------------------------------------------------------------------------------------------

def k_vector_add(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def k_shared_reduction(a, out):
    tile = metal.shared.array(256, np.float32)
    t = metal.threadIdx.x
    i = metal.grid(1)
    tile[t] = a[i] if i < a.size else np.float32(0)
    metal.syncthreads()
    step = 128
    while step > 0:
        if t < step:
            tile[t] += tile[t + step]
        metal.syncthreads()
        step //= 2
    if t == 0:
        out[metal.blockIdx.x] = tile[0]


def k_float_atomics(a, out):
    i = metal.grid(1)
    if i < a.size:
        metal.atomic.add(out, 0, a[i])
        metal.atomic.max(out, 1, a[i])
        metal.atomic.min(out, 2, a[i])


def k_fp16_atomic_device(a, out):
    i = metal.grid(1)
    if i < a.size:
        metal.fp16.atomicAdd(out, i % out.size, a[i])


def k_fp16_atomic_shared(a, out):
    bins = metal.shared.array(5, np.float16)
    t = metal.threadIdx.x
    if t < 5:
        bins[t] = 0
    metal.syncthreads()
    i = metal.grid(1)
    if i < a.size:
        metal.fp16.atomicAdd(bins, t % 5, a[i])
    metal.syncthreads()
    if t < 5:
        metal.fp16.atomicAdd(out, t, bins[t])


def k_threadfence(a, partial, counter, out):
    # the last threadgroup to finish sums every group's partial sum (CUDA's threadFenceReduction sample)
    t = metal.threadIdx.x
    b = metal.blockIdx.x
    if t == 0:
        s = np.float32(0)
        for k in range(metal.blockDim.x):
            j = b * metal.blockDim.x + k
            if j < a.size:
                s += a[j]
        partial[b] = s
        metal.threadfence()
        done = metal.atomic.add(counter, 0, 1)
        if done == metal.gridDim.x - 1:
            total = np.float32(0)
            for g in range(metal.gridDim.x):
                total += partial[g]
            out[0] = total


def k_float64(a, b, c, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = math.sqrt(a[i] * b[i] + c[i]) / b[i] - a[i]


def k_complex(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] * b[i] + a[i] / b[i] - abs(b[i])


def _launch(kernel, n, *args, threads=256):
    kernel[(n + threads - 1) // threads, threads](*args)
    metal.synchronize()


def _max_ulps(got, want, scale=None) -> float:
    """The largest error in units of the last place of ``scale`` (default: the result's magnitude)."""
    got, want = np.asarray(got), np.asarray(want)
    if np.array_equal(got, want):
        return 0.0
    return float(np.max(np.abs(got - want) / np.spacing(np.abs(want) if scale is None else scale)))


def _run_kernel(name: str):
    """(got, want, tolerance in ulps) of one representative kernel; complex's ulps are of the sum of its
    terms' magnitudes (the sum cancels; its parts are each correctly rounded to within a few ulps)."""
    rng = np.random.default_rng(26)
    n = 4099
    if name == "vector-add":
        a, b = rng.random(n, np.float32), rng.random(n, np.float32)
        out = metal.device_array(n, np.float32)
        _launch(metal.jit(k_vector_add), n, metal.to_device(a), metal.to_device(b), out)
        return out.copy_to_host(), a + b, 0
    if name == "shared-reduction":
        a = (np.arange(n) % 7).astype(np.float32)  # integer sums: exact in any order
        groups = (n + 255) // 256
        out = metal.device_array(groups, np.float32)
        _launch(metal.jit(k_shared_reduction), n, metal.to_device(a), out)
        return out.copy_to_host(), np.add.reduceat(a, np.arange(0, n, 256)), 0
    if name == "float-atomics":
        a = (rng.integers(-1000, 1000, n)).astype(np.float32)
        out = metal.to_device(np.array([0, -np.inf, np.inf], np.float32))
        _launch(metal.jit(k_float_atomics), n, metal.to_device(a), out)
        return out.copy_to_host(), np.array([a.sum(), a.max(), a.min()], np.float32), 0
    if name == "fp16-atomic-device":
        a = np.ones(n, np.float16)
        out = metal.to_device(np.zeros(7, np.float16))  # an odd length: the last half is a word's low half
        _launch(metal.jit(k_fp16_atomic_device), n, metal.to_device(a), out)
        return out.copy_to_host(), np.bincount(np.arange(n) % 7).astype(np.float16), 0
    if name == "fp16-atomic-shared":
        a = np.ones(n, np.float16)
        out = metal.to_device(np.zeros(5, np.float16))
        _launch(metal.jit(k_fp16_atomic_shared), n, metal.to_device(a), out)
        return out.copy_to_host(), np.bincount(np.arange(n) % 256 % 5).astype(np.float16), 0
    if name == "threadfence":
        a = (np.arange(n) % 5).astype(np.float32)
        groups = (n + 127) // 128
        partial = metal.device_array(groups, np.float32)
        counter = metal.to_device(np.zeros(1, np.int32))
        out = metal.to_device(np.zeros(1, np.float32))
        _launch(metal.jit(k_threadfence), n, metal.to_device(a), partial, counter, out, threads=128)
        return out.copy_to_host(), np.array([a.sum()], np.float32), 0
    if name == "float64":
        a, b, c = rng.random(n) + 0.5, rng.random(n) + 0.5, rng.random(n)
        out = metal.device_array(n, np.float64)
        _launch(metal.jit(k_float64), n, *(metal.to_device(x) for x in (a, b, c)), out)
        return out.copy_to_host(), np.sqrt(a * b + c) / b - a, 0  # correctly rounded: bit-identical
    if name == "complex":
        a = rng.random(n) + 1j * rng.random(n) + 0.5
        b = rng.random(n) + 1j * rng.random(n) + 0.5
        out = metal.device_array(n, np.complex128)
        _launch(metal.jit(k_complex), n, metal.to_device(a), metal.to_device(b), out)
        return out.copy_to_host(), a * b + a / b - np.abs(b), (4, np.abs(a * b) + np.abs(a / b) + np.abs(b))
    raise KeyError(name)


#: The representative kernels: name -> the MSL version (x 100) the kernel itself needs.
KERNELS = {"vector-add": 300, "shared-reduction": 300, "float-atomics": 300, "fp16-atomic-device": 300,
           "fp16-atomic-shared": 300, "threadfence": 320, "float64": 300, "complex": 300}


def kernel(ctx, name: str, version: int) -> Result:
    """One representative kernel at MSL ``version`` (0: the version numba-metal asks for)."""
    if version and version < KERNELS[name]:
        return skipped(f"the kernel needs MSL {KERNELS[name] // 100}.{KERNELS[name] % 100 // 10}")
    if version:
        force_language_version(ctx, version)
    try:
        got, want, ulps = _run_kernel(name)
        ulps, scale = ulps if isinstance(ulps, tuple) else (ulps, None)
    except Exception as e:  # noqa: BLE001
        text = str(e)
        if "is not an MSL version" in text:
            return skipped(f"the device does not accept this MSL version: {text.splitlines()[0]}")
        return failed(f"{type(e).__name__}: {text}")
    error = _max_ulps(got, want, scale)
    value = {"max_error_ulps": error, "tolerance_ulps": ulps}
    if error > ulps or np.isnan(error):
        worst = int(np.argmax(np.abs(got - want)))
        value.update(index=worst, got=str(got.ravel()[worst]), want=str(want.ravel()[worst]))
        return failed("results differ from NumPy's", value)
    return passed(value)


# ---------------------------------------------------------------------------------------------
# Memory: bytesNoCopy on malloc'd NumPy memory and on mapped_array
# ---------------------------------------------------------------------------------------------

def k_scale(x):
    i = metal.grid(1)
    if i < x.size:
        x[i] = x[i] * 2 + 1


def no_copy(ctx) -> Result:
    page = ctx.info.page_size
    kernel = metal.jit(k_scale)
    value, wrong = {}, []
    for nbytes in (4096, 65536, 1 << 20, 64 << 20):
        n = nbytes // 4
        plain = np.arange(n, dtype=np.float32)
        row = {"numpy_address_mod_page": plain.ctypes.data % page}
        # malloc'd memory: a page-aligned region inside a NumPy allocation, the whole pages around it
        block = np.zeros(nbytes + 2 * page, np.uint8)
        start = (-block.ctypes.data) % page
        length = -(-nbytes // page) * page
        region = block[start:start + length]
        try:
            ctx.device.wrap_buffer(region.ctypes.data, length, region)
            row["wrap_malloc_memory"] = "accepted"
        except Exception as e:  # noqa: BLE001 - a refusal is the finding
            row["wrap_malloc_memory"] = f"refused: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        # the public path: a plain NumPy array, bound in place or through a copy
        try:
            kernel[(n + 255) // 256, 256](plain)
            ok = np.array_equal(plain, np.arange(n, dtype=np.float32) * 2 + 1)
            row["kernel_on_numpy_array"] = "results correct" if ok else "WRONG results"
        except Exception as e:  # noqa: BLE001
            ok = False
            row["kernel_on_numpy_array"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        if not ok:
            wrong.append(nbytes)
        value[f"{nbytes} bytes"] = row
    try:
        mapped = metal.mapped_array(1 << 18, np.float32)
        mapped[:] = np.arange(1 << 18, dtype=np.float32)
        kernel[(1 << 18) // 256, 256](mapped)
        metal.synchronize()
        ok = np.array_equal(np.asarray(mapped), np.arange(1 << 18, dtype=np.float32) * 2 + 1)
        value["mapped_array"] = "results correct" if ok else "WRONG results"
    except Exception as e:  # noqa: BLE001
        ok = False
        value["mapped_array"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    if wrong or not ok:
        return failed(f"kernels on NumPy memory of {wrong} bytes or on a mapped_array went wrong", value)
    return passed(value)


# ---------------------------------------------------------------------------------------------
# Pipelines: threads per threadgroup of the heaviest kernels
# ---------------------------------------------------------------------------------------------

def k_heavy_float64(a, out):
    i = metal.grid(1)
    if i < out.size:
        x = a[i]
        out[i] = math.exp(x) * math.sin(x) + math.log1p(x) / math.cosh(x) + math.atan2(x, 1.5) ** 3.5


def k_heavy_complex(a, out):
    i = metal.grid(1)
    if i < out.size:
        z = a[i]
        out[i] = (z * z + 1) / (z - 2) + z.conjugate() * abs(z)


def max_threads(ctx) -> Result:
    value, failures = {}, []
    for name, fn, dtype in (("float64 math", k_heavy_float64, np.float64),
                            ("complex128", k_heavy_complex, np.complex128)):
        a = metal.to_device((np.arange(4096) / 4096 + 0.25).astype(dtype))
        out = metal.device_array(4096, dtype)
        kernel = metal.jit(fn)
        entry = {}
        try:
            kernel[4, 1024](a, out)
            metal.synchronize()
            entry["launch_1024_threads"] = "ran"
        except Exception as e:  # noqa: BLE001
            entry["launch_1024_threads"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            failures.append(name)
        for specialization in kernel.overloads.values():
            state = specialization.launch_state(ctx)
            limit = getattr(state.pipeline, "max_total_threads_per_threadgroup", None)
            # The default pipeline's limit; a 1024-thread launch above it ran on a variant built for it.
            entry["max_total_threads_per_threadgroup"] = getattr(state, "default_max_threads", limit) \
                if limit is not None else "not exposed by this runtime"
            if limit is not None and limit != entry["max_total_threads_per_threadgroup"]:
                entry["variant_max_total_threads_per_threadgroup"] = limit
        value[name] = entry
    if failures:
        return failed(f"a 1024-thread launch of {', '.join(failures)} failed", value)
    return passed(value)


# ---------------------------------------------------------------------------------------------
# Faults, the watchdog, cross-queue waits, timestamps
# ---------------------------------------------------------------------------------------------

_FAULT = """#include <metal_stdlib>
using namespace metal;
kernel void nm_doctor_wild(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    device int* p = (device int*)(0x10 + 0 * i);
    x[i] = *p;
}
kernel void nm_doctor_fill(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = int(i) + 7;
}
"""


def fault(ctx) -> Result:
    """One wild read in this process, then a good launch in the same process."""
    dev = ctx.device
    queue = dev.new_queue()
    buf = dev.new_buffer(64 * 4)

    def run(name):
        queue.dispatch(dev.compile(_FAULT, name), [buf], [0], [0], None, 1, [], (1, 1, 1), (64, 1, 1),
                       f"{name} (doctor)")
        queue.wait()
    value = {}
    try:
        run("nm_doctor_wild")
        value["fault"] = "no error: the wild read did not fault"
    except Exception as e:  # noqa: BLE001 - the error is the finding
        value["fault"] = f"{type(e).__name__}: {str(e)[:400]}"
    try:
        run("nm_doctor_fill")
        out = np.empty(64, np.int32)
        buf.read(0, out.ctypes.data, out.nbytes)
        ok = np.array_equal(out, np.arange(64, dtype=np.int32) + 7)
        value["next_launch"] = "ran, results correct" if ok else "ran, WRONG results"
    except Exception as e:  # noqa: BLE001
        ok = False
        value["next_launch"] = f"{type(e).__name__}: {str(e)[:400]}"
    return passed(value) if ok else failed("the launch after the fault did not work", value)


def k_spin(n, out):
    i = metal.grid(1)
    x = i
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    if i < out.size:
        out[i] = x


def _spin_count(seconds: float) -> int:
    """A loop count for which k_spin[1, 64] runs about ``seconds`` on this device."""
    kernel = metal.jit(k_spin)
    out = metal.device_array(64, np.int64)
    kernel[1, 64](1, out)  # compiled before it is timed
    metal.synchronize()
    n = 1000
    while True:
        start = time.perf_counter()
        kernel[1, 64](n, out)
        metal.synchronize()
        took = time.perf_counter() - start
        if took > 0.05 or n > 1 << 40:
            return max(1, int(n * seconds / max(took, 1e-6)))
        n *= 10


def watchdog(ctx) -> Result:
    kernel = metal.jit(k_spin)
    out = metal.device_array(64, np.int64)
    value = {}
    if ctx.info.kind == "metal":
        # macOS's watchdog: launches of doubling length until one fails or runs 8 s
        n, runs = _spin_count(1.0), []
        while True:
            start = time.perf_counter()
            try:
                kernel[1, 64](n, out)
                metal.synchronize()
                runs.append(f"{time.perf_counter() - start:.1f} s: completed")
            except Exception as e:  # noqa: BLE001 - the watchdog's error is the finding
                runs.append(f"{time.perf_counter() - start:.1f} s: {type(e).__name__}: {str(e)[:300]}")
                break
            if time.perf_counter() - start >= 8:
                runs.append("no watchdog within 8 s")
                break
            n *= 2
        value["launches"] = runs
    else:
        metal.set_kernel_time_limit(0.5)
        start = time.perf_counter()
        try:
            kernel[1, 64](1 << 60, out)
            metal.synchronize()
            value["limited_launch"] = "completed: the time limit did not stop it"
        except Exception as e:  # noqa: BLE001
            value["limited_launch"] = f"{time.perf_counter() - start:.1f} s: {type(e).__name__}: {str(e)[:300]}"
        metal.set_kernel_time_limit(None)
        value["note"] = "the device's own time limit (set_kernel_time_limit) stands in for macOS's watchdog"
    try:
        kernel[1, 64](10, out)
        metal.synchronize()
        value["next_launch"] = "ran"
    except Exception as e:  # noqa: BLE001
        value["next_launch"] = f"{type(e).__name__}: {str(e)[:300]}"
        return failed("the launch after the long kernel did not work", value)
    if ctx.info.kind != "metal" and "completed" in value["limited_launch"]:
        return failed("a kernel over the time limit was not stopped", value)
    return passed(value)


def k_copy(src, dst):
    i = metal.grid(1)
    if i < dst.size:
        dst[i] = src[i]


def cross_queue(ctx) -> Result:
    n = _spin_count(1.0)
    producer, consumer = metal.stream(), metal.stream()
    made = metal.device_array(64, np.int64)
    seen = metal.to_device(np.full(64, -1, np.int64))
    start = time.perf_counter()
    metal.jit(k_spin)[1, 64, producer](n, made)
    done = metal.event()
    done.record(producer)
    done.wait(consumer)
    metal.jit(k_copy)[1, 64, consumer](made, seen)
    try:
        consumer.synchronize()
    except Exception as e:  # noqa: BLE001
        return failed(f"the consumer's wait failed: {type(e).__name__}: {str(e)[:300]}")
    waited = time.perf_counter() - start
    metal.synchronize()
    value = {"consumer_done_after_s": round(waited, 3), "producer_loop_count": n}
    if not np.array_equal(seen.copy_to_host(), made.copy_to_host()):
        return failed("the consumer ran before the producer finished", value)
    return passed(value)


def timestamps(ctx) -> Result:
    from numba_metal import profiling, runtime
    launches = []
    n = _spin_count(0.2)
    out = metal.device_array(64, np.int64)
    kernel = metal.jit(k_spin)
    profiling.add_listener(lambda event: launches.append(event) if event.kind == "launch" else None)
    before = runtime.now_ns()
    kernel[1, 64](n, out)
    metal.synchronize()
    after = runtime.now_ns()
    launch = launches[-1]
    start, end = launch.queue.timestamps(launch.work_id)
    value = {"host_window_ns": [0, after - before], "device_start_ns": start - before, "device_end_ns": end - before}
    if not before <= start <= end <= after:
        return failed("the device's timestamps are not inside the host's window: another clock base", value)
    return passed(value)


# ---------------------------------------------------------------------------------------------
# DLPack with MLX and PyTorch MPS
# ---------------------------------------------------------------------------------------------

def _dlpack_round_trip(ctx, make, back) -> Result:
    source = make()
    d = metal.from_dlpack(source)
    metal.jit(k_scale)[1, 64](d)
    metal.synchronize()
    result = np.asarray(back(d))
    ok = np.array_equal(result, np.arange(64, dtype=np.float32) * 2 + 1)
    return passed("a kernel doubled-and-incremented the tensor in place; read back correctly") if ok else \
        failed("the round trip gave wrong values", str(result[:4]))


def dlpack_mlx(ctx) -> Result:
    if ctx.info.kind != "metal":
        return skipped("needs a Metal GPU: MLX's GPU arrays live there")
    try:
        import mlx.core as mx
    except ImportError:
        return skipped("MLX is not installed")
    arr = mx.arange(64, dtype=mx.float32)
    return _dlpack_round_trip(ctx, lambda: arr, lambda d: np.array(arr))


def dlpack_torch_mps(ctx) -> Result:
    if ctx.info.kind != "metal":
        return skipped("needs a Metal GPU: PyTorch MPS tensors live there")
    try:
        import torch
    except ImportError:
        return skipped("PyTorch is not installed")
    if not torch.backends.mps.is_available():
        return skipped("PyTorch has no MPS device here")
    t = torch.arange(64, dtype=torch.float32, device="mps")
    return _dlpack_round_trip(ctx, lambda: t, lambda d: t.cpu().numpy())

"""Cold compile time of 30 kernels that share device functions.

Thirty distinct kernels each call the same three device functions (``smooth``, ``wave``, ``poly``)
with their own constants. Measured, each in a fresh Python process with an empty compile cache, after
a primer kernel has paid one-off process set-up:

* ``metal_shared``: first call (compile + one tiny launch) of all 30 kernels, device functions shared;
* ``metal_inlined``: the same 30 kernels with the device-function bodies written inline;
* ``metal_disk_cache``: the shared kernels with ``cache=True``, in a second fresh process after a first
  one filled the disk cache (what every later run of a script pays);
* ``numba_njit``: Numba's CPU compile of the same 30 functions calling shared ``@njit`` helpers.

Plain Python and NumPy compile nothing, so they have no figure here. Each measurement is the median of
several fresh processes; every kernel's output is checked against NumPy in every process. The split
of numba-metal's time into typing + MSL generation (``python``) and the device compile (``pipeline``,
clang on the CPU reference device) comes from numba-metal's profiling events.

    python benchmarks/device_function_compile_cache.py [--quick] [--json out.json]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import bench_common as bc  # noqa: E402

HELPERS = {
    "smooth": "{x} / (1.0 + abs({x}) * {a})",
    "wave": "math.sin({x} * {a}) + math.cos({x} - {a})",
    "poly": "(({a} * {x} + 1.0) * {x} + 0.5) * {x}",
}


def constants(i):
    return (0.5 + 0.01 * i, 1.0 + 0.02 * i, 0.1 * (i % 7))


def kernel_module(n: int, mode: str) -> str:
    """Python source of a module with ``n`` kernels (mode: shared, inlined, cached, numba)."""
    lines = ["import math", "import numpy as np"]
    if mode == "numba":
        lines.append("import numba")
        deco_dev, deco = "@numba.njit", "@numba.njit"
    else:
        lines.append("from numba_metal import metal")
        deco_dev = "@metal.jit(device=True)"
        deco = "@metal.jit(cache=True)" if mode == "cached" else "@metal.jit"
    if mode != "inlined":
        for name, body in HELPERS.items():
            lines += ["", "", deco_dev, f"def {name}(x, a):", f"    return {body.format(x='x', a='a')}"]
    for i in range(n):
        c = constants(i)
        if mode == "inlined":
            terms = [f"({HELPERS[h].format(x='v', a=repr(ci))})" for h, ci in zip(HELPERS, c)]
            expr = " + ".join(terms)
        else:
            expr = " + ".join(f"{h}(v, {ci!r})" for h, ci in zip(HELPERS, c))
        lines += ["", ""]
        if mode == "numba":
            lines += [deco, f"def kernel_{i}(x, out):", "    for t in range(out.size):", "        v = x[t]",
                      f"        out[t] = {expr}"]
        else:
            lines += [deco, f"def kernel_{i}(x, out):", "    t = metal.grid(1)", "    if t < out.size:",
                      "        v = x[t]", f"        out[t] = {expr}"]
    lines.append(f"\nKERNELS = [{', '.join(f'kernel_{i}' for i in range(n))}]\n")
    return "\n".join(lines)


def expected(i, x):
    a = constants(i)
    x = x.astype(np.float64)
    return (x / (1.0 + np.abs(x) * a[0]) + np.sin(x * a[1]) + np.cos(x - a[1])
            + ((a[2] * x + 1.0) * x + 0.5) * x)


CHILD = textwrap.dedent(r"""
    import json, sys, time
    import numpy as np
    mode, n, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    sys.path.insert(0, sys.argv[4])
    x = np.linspace(-2, 2, 64).astype(np.float32)
    res = {"per_kernel_ns": [], "outputs": []}
    if mode == "numba":
        import numba
        numba.njit(lambda a: a + 1)(1.0)                      # primer: Numba's one-off set-up
        import kmod
        t0 = time.perf_counter_ns()
        for k in kmod.KERNELS:
            t1 = time.perf_counter_ns()
            out = np.empty_like(x)
            k(x, out)
            res["per_kernel_ns"].append(time.perf_counter_ns() - t1)
            res["outputs"].append(out.tolist())
        res["total_ns"] = time.perf_counter_ns() - t0
    else:
        from numba_metal import metal, profiling
        metal.select_device(device)

        @metal.jit
        def primer(out):
            i = metal.grid(1)
            if i < out.size:
                out[i] = i
        buf = metal.device_array(32, np.float32)
        primer[1, 32](buf)
        metal.synchronize()
        import kmod
        events = []
        d_x = metal.to_device(x)
        outs = [metal.device_array(x.shape, np.float32) for _ in kmod.KERNELS]
        metal.synchronize()
        profiling.add_listener(events.append)
        t0 = time.perf_counter_ns()
        for k, o in zip(kmod.KERNELS, outs):
            t1 = time.perf_counter_ns()
            k[1, 64](d_x, o)
            metal.synchronize()
            res["per_kernel_ns"].append(time.perf_counter_ns() - t1)
        res["total_ns"] = time.perf_counter_ns() - t0
        profiling.remove_listener(events.append)
        comp = [e for e in events if e.kind == "compile"]
        res["python_ns"] = sum(e.end_ns - e.start_ns for e in comp if e.stage == "python")
        res["pipeline_ns"] = sum(e.end_ns - e.start_ns for e in comp if e.stage == "pipeline")
        res["from_cache"] = sum(1 for e in comp if e.from_cache)
        res["compile_events"] = len(comp)
        res["outputs"] = [o.copy_to_host().tolist() for o in outs]
    print("NM-COMPILE " + json.dumps(res))
""")


def run_child(mode: str, n: int, device: str, moddir: str, cache: str) -> dict:
    env = dict(os.environ)
    env["NUMBA_METAL_CACHE_DIR"] = cache
    env["PYTHONPATH"] = bc.REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("NUMBA_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, str(n), device, moddir], env=env,
                          capture_output=True, text=True, timeout=1800)
    for line in proc.stdout.splitlines():
        if line.startswith("NM-COMPILE "):
            return json.loads(line[len("NM-COMPILE "):])
    raise RuntimeError(f"compile child ({mode}) failed: {proc.stderr.strip()[-2000:]}")


def _check_outputs(res: dict, n: int) -> tuple[bool, str]:
    x = np.linspace(-2, 2, 64).astype(np.float32)
    worst = 0.0
    for i, out in enumerate(res["outputs"]):
        ref = expected(i, x)
        err = np.abs(np.asarray(out, np.float64) - ref) / (1.0 + np.abs(ref))
        worst = max(worst, float(err.max()))
    ok = len(res["outputs"]) == n and worst < 1e-5
    return ok, f"{len(res['outputs'])} kernels' outputs vs float64 NumPy: max error {worst:.2g} (tolerance 1e-5)"


def measure(opts: bc.RunOptions, n: int, repeats: int) -> dict:
    from numba_metal import metal
    device = metal.get_device_info().kind
    timings: dict = {}
    checks: dict = {}
    extra: dict = {"kernels": n, "processes_per_measurement": repeats}
    modes = (("metal_shared", "shared"), ("metal_inlined", "inlined"), ("metal_disk_cache", "cached"),
             ("numba_njit", "numba"))
    for name, mode in modes:
        samples, runs = [], []
        for rep in range(repeats):
            bc._say(opts, f"device_function_compile_cache: {name} process {rep + 1}/{repeats}")
            moddir = tempfile.mkdtemp(prefix="nm-bench-kmod-")
            cache = tempfile.mkdtemp(prefix="nm-bench-cache-")
            try:
                with open(os.path.join(moddir, "kmod.py"), "w") as f:
                    f.write(kernel_module(n, mode))
                if mode == "cached":
                    run_child(mode, n, device, moddir, cache)        # fills the disk cache
                res = run_child(mode, n, device, moddir, cache)
            finally:
                shutil.rmtree(moddir, ignore_errors=True)
                shutil.rmtree(cache, ignore_errors=True)
            ok, detail = _check_outputs(res, n)
            if mode == "cached" and res.get("from_cache", 0) < n:
                ok, detail = False, detail + f"; only {res.get('from_cache')} of {n} kernels came from the disk cache"
            if mode in ("shared", "inlined") and res.get("from_cache", 0):
                ok, detail = False, detail + f"; {res['from_cache']} compiles were cache hits in a cold run"
            checks.setdefault(name, {"ok": True, "detail": detail})
            if not ok:
                checks[name] = {"ok": False, "detail": detail}
            samples.append(res["total_ns"])
            runs.append(res)
        timings[name] = bc.stats(samples, 0)
        timings[name]["unit"] = f"first call of {n} kernels in a fresh process"
        med = sorted(runs, key=lambda r: r["total_ns"])[len(runs) // 2]
        extra[name] = {"per_kernel_ns": med["per_kernel_ns"],
                       "python_ns": med.get("python_ns"), "pipeline_ns": med.get("pipeline_ns"),
                       "from_cache": med.get("from_cache")}
    sh, inl = timings["metal_shared"]["median_ns"], timings["metal_inlined"]["median_ns"]
    extra["ratios"] = {"inlined_over_shared": inl / sh,
                       "shared_over_disk_cache": sh / timings["metal_disk_cache"]["median_ns"],
                       "shared_over_numba_njit": sh / timings["numba_njit"]["median_ns"]}
    return {"checks": checks, "timings": timings, "extra": extra, "skipped": {
        "python": "plain Python compiles nothing", "numpy": "NumPy compiles nothing"},
        "notes": ["every figure is the median over fresh processes; compile caches start empty except "
                  "for metal_disk_cache, which a previous process filled"], "speedups": {}}


def cases(quick: bool):
    n, repeats = (3, 3) if quick else (30, 3)
    return [bc.Case(variant="default", size=f"{n} kernels", x=n, params={"kernels": n, "repeats": repeats},
                    setup=lambda: None, reference=lambda _: None, check=lambda o, r: {"ok": True},
                    work=f"first call of {n} kernels sharing 3 device functions",
                    custom=lambda opts, n=n, r=repeats: measure(opts, n, r))]


PROGRAM = bc.Program(
    name="device_function_compile_cache",
    title="Compile time: kernels sharing device functions",
    summary=("Measures how long it takes, in a fresh process, before 30 different kernels (3 in a quick run) "
             "that all call the same three device functions have each run once: numba-metal's whole compile (Numba typing, "
             "MSL generation, the device compiler). Compared with the same kernels written without device "
             "functions, with the disk cache (cache=True) already filled by an earlier process, and with "
             "Numba compiling the same functions for the CPU."),
    x_axis="kernels",
    variants={"default": "30 kernels (3 with --quick), 3 shared device functions"},
    cases=cases, comparison="compile")

if __name__ == "__main__":
    sys.exit(bc.main(__file__))

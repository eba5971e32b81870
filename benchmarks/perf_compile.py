"""Compile time of a new kernel in a warm process: numba-metal's part (Numba's bytecode analysis and
type inference, then structuring and MSL generation) and the device's pipeline compile, separately.

    python benchmarks/perf_compile.py [--json out.json] [--kernels 15]

The process first compiles and launches one kernel (so Numba, the typing context and the device are
up), then compiles ``--kernels`` new vector-add kernels, each a new Python function with a different
constant (so nothing can come from any cache), and reports medians:

- typing: ``frontend.infer_types`` (bytecode to IR, rewrites, type inference);
- MSL generation: ``codegen.lower_kernel`` (structuring, lowering, the kernel's ABI);
- numba-metal compile: the two together through ``compiler.driver.compile_kernel`` (what ``@metal.jit``
  pays before the device is involved);
- device pipeline: ``Device.compile`` of the generated MSL (on the CPU reference device: clang on the
  MSL with the Metal shim, then loading the object; on Metal: ``makeLibrary`` + pipeline state);
- first launch: ``kernel[...](...)`` of a new kernel through the public API, until the launch returns.

On the CPU device it also times the floor of any clang compile, with the clang the runtime picks: clang
checking an empty file, and clang compiling and linking an empty shared object (no MSL, no shim).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _perfutil  # noqa: E402

sys.path.insert(0, _perfutil.REPO)
os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")
# A private, empty cache directory: compiled objects of earlier runs must not answer for new kernels.
_CACHE = __import__("tempfile").TemporaryDirectory(prefix="nm-perf-compile-")
os.environ["NUMBA_METAL_CACHE_DIR"] = _CACHE.name

import numpy as np  # noqa: E402

from numba_metal import metal  # noqa: E402
from numba_metal.compiler import codegen, driver, frontend  # noqa: E402
from numba_metal.host import device as _device  # noqa: E402
from numba_metal.host.arguments import typeof_arg  # noqa: E402

SOURCE = """
def vadd_{i}(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i] + {c}
"""


def new_kernel(i: int):
    ns = {"metal": metal}
    exec(compile(SOURCE.format(i=i, c=float(i)), f"<perf_compile {i}>", "exec"), ns)
    return ns[f"vadd_{i}"]


def runtime_clang() -> str | None:
    """The clang++ the CPU device uses (the runtime's search order: NUMBA_METAL_CLANG, PATH, beside swift)."""
    candidates = [os.environ.get("NUMBA_METAL_CLANG"), shutil.which("clang++")]
    swift = shutil.which("swift")
    if swift:
        candidates.append(os.path.join(os.path.dirname(swift), "clang++"))
    candidates.append("/opt/swift/usr/bin/clang++")
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def clang_floor(clang: str, repeats: int) -> dict:
    """Medians (ms) of clang on an empty file: -fsyntax-only, and compile + link of a shared object."""
    syntax, link = [], []
    with tempfile.TemporaryDirectory(prefix="nm-perf-clang-") as d:
        src = os.path.join(d, "empty.cpp")
        open(src, "w").close()
        for _ in range(repeats):
            for argv, into in (([clang, "-x", "c++", "-fsyntax-only", src], syntax),
                               ([clang, "-x", "c++", "-O2", "-fPIC", "-shared", "-o", os.path.join(d, "e.so"), src],
                                link)):
                t0 = time.perf_counter()
                subprocess.run(argv, check=True, capture_output=True)
                into.append(time.perf_counter() - t0)
    return {"clang": clang, "syntax_only_ms": _perfutil.summary(syntax, 1e3),
            "compile_and_link_ms": _perfutil.summary(link, 1e3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--kernels", type=int, default=15)
    args = ap.parse_args(argv)
    info = _perfutil.machine()
    print(_perfutil.describe(info))

    n = 1 << 12
    a = metal.to_device(np.arange(n, dtype=np.float32))
    b = metal.to_device(np.ones(n, dtype=np.float32))
    out = metal.device_array(n, np.float32)
    argtypes = tuple(typeof_arg(x, i) for i, x in enumerate((a, b, out)))
    warm = metal.jit(new_kernel(10_000))
    warm[n // 256, 256](a, b, out)       # Numba, the typing context, the device: all up
    metal.synchronize()
    device = _device.current().device

    typing, msl, compile_total, pipeline, first_launch = [], [], [], [], []
    base = 0
    for k in range(args.kernels):
        fn = new_kernel(base + k)
        t0 = time.perf_counter()
        tf = frontend.infer_types(fn, argtypes)
        t1 = time.perf_counter()
        source, plan = codegen.lower_kernel(tf)
        t2 = time.perf_counter()
        typing.append(t1 - t0)
        msl.append(t2 - t1)

        fn = new_kernel(base + 1000 + k)
        t0 = time.perf_counter()
        compiled = driver.compile_kernel(fn, argtypes)
        t1 = time.perf_counter()
        abi = compiled.abi
        pipe = device.compile(compiled.source, abi.entry_name, language_version=abi.language_version,
                              params=abi.params)
        t2 = time.perf_counter()
        assert not pipe.from_cache
        compile_total.append(t1 - t0)
        pipeline.append(t2 - t1)

        kernel = metal.jit(new_kernel(base + 2000 + k))
        t0 = time.perf_counter()
        kernel[n // 256, 256](a, b, out)
        t1 = time.perf_counter()
        first_launch.append(t1 - t0)
        metal.synchronize()
        assert out.copy_to_host()[5] == 5 + 1 + base + 2000 + k

    ms = 1e3
    result = {"benchmark": "compile", "machine": info, "kernels": args.kernels,
              "typing_ms": _perfutil.summary(typing, ms), "msl_generation_ms": _perfutil.summary(msl, ms),
              "numba_metal_compile_ms": _perfutil.summary(compile_total, ms),
              "device_pipeline_ms": _perfutil.summary(pipeline, ms),
              "first_launch_ms": _perfutil.summary(first_launch, ms)}
    print(f"new vector-add kernel in a warm process (medians of {args.kernels}, ms):")
    print(f"  typing (bytecode -> typed IR)      {result['typing_ms']['median']:8.2f}")
    print(f"  MSL generation + launch plan       {result['msl_generation_ms']['median']:8.2f}")
    print(f"  numba-metal compile (both)         {result['numba_metal_compile_ms']['median']:8.2f}")
    print(f"  device pipeline compile            {result['device_pipeline_ms']['median']:8.2f}   "
          f"({info['device'].get('kind')} device)")
    print(f"  first launch of a new kernel       {result['first_launch_ms']['median']:8.2f}   (all of the above)")
    if info["device"].get("kind") == "cpu" and runtime_clang():
        floor = result["clang_floor"] = clang_floor(runtime_clang(), args.kernels)
        print(f"  of which any clang run costs at least (empty file, {floor['clang']}):")
        print(f"    -fsyntax-only                    {floor['syntax_only_ms']['median']:8.2f}")
        print(f"    compile + link a shared object   {floor['compile_and_link_ms']['median']:8.2f}")
    _perfutil.write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

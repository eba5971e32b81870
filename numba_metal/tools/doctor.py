"""``numba-metal doctor``: checks that this machine can compile and run kernels, and says what to fix.

It reports the versions in use, the runtime library, every device with its limits, the device
numba-metal would use (``--device``, else ``NUMBA_METAL_DEVICE``, else the Metal GPU), a compile and
a run of a small kernel on it (checked against NumPy), the disk caches and the ``NUMBA_METAL_*``
settings. Each check prints ``ok``, ``FAIL`` or ``info``; the exit status is 1 if any check failed,
so scripts and CI can call it. docs/installation.md explains each failure.

``--deep`` then runs, each in its own child process, the checks whose answers only a Mac has
(:mod:`numba_metal.tools.deep_check`): each is ``ok``, ``FAIL`` or ``skip`` (with the reason), and a
``FAIL`` makes the exit status 1 too; a skip never does. ``--json FILE`` also writes the whole report
as JSON (every check with its status and observed value), the file to attach to a bug report.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import time
import warnings

from numba_metal import metal


def doctor_axpy(a, x, y, out):
    """The kernel the doctor compiles and runs."""
    i = metal.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


class _Report:
    def __init__(self, out):
        self.out = out
        self.failed = 0
        self.entries = []  # (status, what, detail) of every line, for --json

    def line(self, status: str, what: str, detail: str) -> None:
        self.entries.append({"status": status, "check": what, "detail": detail})
        if status == "FAIL":
            self.failed += 1
        first, *rest = detail.split("\n")
        self.out.write(f"{status:<5} {what:<18} {first}\n")
        for more in rest:
            self.out.write(f"{'':<24} {more}\n")


def _versions(report: _Report) -> None:
    import numpy

    from numba_metal import __version__
    try:
        from importlib.metadata import version
        numba_version = version("numba")
    except Exception:  # noqa: BLE001 - a missing distribution is reported, not raised
        numba_version = "not installed"
    report.line("info", "versions", f"numba-metal {__version__}, Python {platform.python_version()}, "
                                    f"Numba {numba_version}, NumPy {numpy.__version__}")
    _ranges(report, numba_version, numpy.__version__)
    report.line("info", "platform", f"{platform.system()} {platform.release()} {platform.machine()}"
                + (f" (macOS {platform.mac_ver()[0]})" if sys.platform == "darwin" else ""))


def _release(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def _within(have: str, spec: str) -> bool:
    """``have`` satisfies ``spec``, a comma-separated list of ``>=``, ``>``, ``<=``, ``<``, ``==`` bounds
    (the forms pyproject.toml uses)."""
    ops = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b,
           "<": lambda a, b: a < b, "==": lambda a, b: a == b}
    for op, bound in re.findall(r"(>=|<=|==|>|<)\s*([\d.]+)", spec):
        width = len(_release(bound))
        if not ops[op](_release(have)[:width], _release(bound)):
            return False
    return True


def _ranges(report: _Report, numba_version: str, numpy_version: str) -> None:
    """Python, Numba and NumPy against the ranges the installed numba-metal declares (pyproject.toml)."""
    from importlib import metadata
    try:
        meta = metadata.metadata("numba-metal")
        requires = metadata.requires("numba-metal") or []
    except metadata.PackageNotFoundError:
        report.line("info", "version ranges", "numba-metal is not installed (run from a source tree): "
                                              "the ranges of pyproject.toml were not checked")
        return
    wanted = {"python": meta.get("Requires-Python") or ""}
    for requirement in requires:
        m = re.match(r"\s*(numba|numpy)\s*([^;]*)", requirement)
        if m:
            wanted[m.group(1)] = m.group(2).strip().strip("()")
    have = {"python": platform.python_version(), "numba": numba_version, "numpy": numpy_version}
    bad = [f"{name} {have[name]} is outside {spec}" for name, spec in wanted.items()
           if spec and not _within(have[name], spec)]
    if bad:
        report.line("FAIL", "version ranges", "; ".join(bad) + ": install versions inside these ranges "
                                                             "(see docs/installation.md)")
    else:
        report.line("ok", "version ranges", ", ".join(f"{n} {s}" for n, s in wanted.items() if s))


def _devices(report: _Report):
    from numba_metal import runtime
    try:
        runtime.load()
    except Exception as e:  # noqa: BLE001 - every failure to load is the finding
        report.line("FAIL", "runtime library", f"{runtime.library_path()}\n{e}")
        return None
    report.line("ok", "runtime library", str(runtime.library_path()))
    devices = runtime.list_devices()
    for info in devices:
        report.line("info", f"device {info.index}", f"{info.name} (kind '{info.kind}')\n" + _limits(info))
    if not any(d.kind == "metal" for d in devices):
        report.line("info", "Metal GPU", "none on this machine: kernels run only on the CPU reference device "
                                         "(NUMBA_METAL_DEVICE=cpu or metal.select_device('cpu'))")
    return devices


def _cpu_compiler(report: _Report, kind: str | None) -> None:
    """The clang the CPU device compiles with, the candidates it skipped, or how to get one. Its absence
    fails only when the CPU device is the one being checked."""
    from numba_metal import runtime
    try:
        chosen, *skipped = runtime.cpu_compiler_info().split("\n")
    except Exception as e:  # noqa: BLE001 - the finding
        want = kind or os.environ.get("NUMBA_METAL_DEVICE", "").strip() or "metal"
        report.line("FAIL" if want == "cpu" else "info", "CPU-device clang", str(e))
        return
    report.line("ok", "CPU-device clang", "\n".join([chosen, *skipped]))


def _limits(info) -> str:
    return (f"threads per threadgroup <= {info.max_threads_per_threadgroup}, threadgroup memory "
            f"{info.max_threadgroup_memory // 1024} KiB, SIMD width {info.simd_width}, "
            f"{info.max_buffer_slots} buffer slots, {info.max_argument_bytes} argument bytes, "
            f"unified memory {'yes' if info.unified_memory else 'no'}")


def _kernel_run(report: _Report, kind: str | None) -> None:
    import numpy as np

    want = kind or os.environ.get("NUMBA_METAL_DEVICE", "").strip() or "metal"
    try:
        ctx = metal.select_device(want)
    except Exception as e:  # noqa: BLE001
        report.line("FAIL", f"device '{want}'", str(e))
        return
    report.line("ok", f"device '{want}'", f"{ctx.info.name}")

    start = time.perf_counter()
    try:
        metal.compile_msl(doctor_axpy, "void(float32, float32[:], float32[:], float32[:])")
    except Exception as e:  # noqa: BLE001
        report.line("FAIL", "compiler", f"Python -> MSL failed: {e}")
        return
    report.line("ok", "compiler", f"Python -> MSL in {1e3 * (time.perf_counter() - start):.0f} ms (no device; the "
                                  "process's first compile, Numba's set-up included)")
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, dtype=np.float32)
    stats = ctx.device.stats()
    start = time.perf_counter()
    try:
        kernel = metal.jit(doctor_axpy)
        d_out = metal.device_array_like(x)
        with warnings.catch_warnings():
            # a 4-threadgroup check cannot fill a GPU; numba.cuda's low-occupancy warning is no finding here
            warnings.filterwarnings("ignore", message=r".*(occupancy|threadgroups).*")
            kernel[4, 256](np.float32(2.0), metal.to_device(x), metal.to_device(y), d_out)
        out = d_out.copy_to_host()
    except Exception as e:  # noqa: BLE001
        report.line("FAIL", "kernel run", f"{type(e).__name__}: {e}")
        return
    seconds = time.perf_counter() - start
    after = ctx.device.stats()
    if not np.array_equal(out, 2.0 * x + y):
        report.line("FAIL", "kernel run", f"a kernel computing 2*x + y gave wrong values on {ctx.info.name}")
        return
    cached = after["pipelines_from_cache"] > stats["pipelines_from_cache"]
    report.line("ok", "kernel run", f"compiled {'(pipeline from the disk cache) ' if cached else ''}"
                                    f"and ran in {seconds:.2f} s; results equal NumPy's")


def _caches(report: _Report) -> None:
    from numba_metal.host import cache
    root = cache.cache_root()
    if root is None:
        report.line("FAIL", "disk cache", "no cache directory: HOME is not set; set NUMBA_METAL_CACHE_DIR")
        return
    kernels = cache.kernels_dir()
    if kernels is None:
        report.line("FAIL", "disk cache",
                    f"disabled: {root} (or its kernels/ directory) is not a directory owned by you and private "
                    f"to you; fix it with `chmod 700 {root}` or set NUMBA_METAL_CACHE_DIR")
        return
    for name in ("kernels", "cpu-objects"):
        path = os.path.join(root, name)
        files = [os.path.join(path, f) for f in os.listdir(path)] if os.path.isdir(path) else []
        size = sum(os.path.getsize(f) for f in files if os.path.isfile(f))
        report.line("ok" if name == "kernels" else "info", f"cache {name}",
                    f"{path}: {len(files)} entries, {size / 2**20:.1f} MiB")


def _settings(report: _Report) -> None:
    names = sorted(n for n in os.environ if n.startswith("NUMBA_METAL_"))
    report.line("info", "settings", ", ".join(f"{n}={os.environ[n]}" for n in names) or "no NUMBA_METAL_* set")


def main(argv: list[str] | None = None, out=None) -> int:
    parser = argparse.ArgumentParser(prog="numba-metal doctor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("metal", "cpu", "metal-sim"),
                        help="the device to check (default: NUMBA_METAL_DEVICE, else the Metal GPU)")
    parser.add_argument("--deep", action="store_true",
                        help="also run the checks only a Mac can answer, each in a child process (minutes)")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    parser.add_argument("--checks", metavar="NAME,...",
                        help="with --deep: run only these deep checks (names as the report prints them)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="seconds each deep check's child process may run (default 180)")
    args = parser.parse_args(argv)
    only = None
    if args.checks:
        from numba_metal.tools.deep_check import CHECKS
        only = [n.strip() for n in args.checks.split(",") if n.strip()]
        unknown = sorted(set(only) - {c.name for c in CHECKS})
        if unknown or not args.deep:
            parser.error(f"--checks needs --deep and names of its checks; unknown: {', '.join(unknown) or 'none'}; "
                         f"the checks: {', '.join(c.name for c in CHECKS)}")
    report = _Report(out or sys.stdout)
    _versions(report)
    _settings(report)
    if _devices(report) is not None:
        _cpu_compiler(report, args.device)
        _kernel_run(report, args.device)
    _caches(report)
    deep = None
    if args.deep:
        deep = _deep(report, args.device, args.timeout, only)
    report.out.write("numba-metal doctor: " + (f"{report.failed} problem(s) found, see FAIL above\n"
                                               if report.failed else "everything works\n"))
    status = 1 if report.failed else 0
    if args.json:
        from numba_metal.tools import deep_check
        deep_check.write_json(args.json, {"numba_metal_doctor": 1, "device": _kind(args.device),
                                          "checks": report.entries, "deep": deep, "exit_status": status})
        report.out.write(f"report written to {args.json}\n")
    return status


def _kind(kind: str | None) -> str:
    return kind or os.environ.get("NUMBA_METAL_DEVICE", "").strip() or "metal"


def _deep(report: _Report, kind: str | None, timeout: float | None, only: list[str] | None) -> list:
    """The deep checks, printed as they finish; each ``fail`` counts as a problem."""
    from numba_metal.tools import deep_check
    kind = _kind(kind)
    report.out.write(f"\ndeep checks on device '{kind}' (each in a child process):\n")
    report.out.flush()

    def progress(record):
        report.out.write(deep_check.format_record(record))
        report.out.flush()
    records = deep_check.run(kind, timeout or deep_check.DEFAULT_TIMEOUT, only=only, progress=progress)
    counts = {s: sum(r["status"] == s for r in records) for s in ("pass", "fail", "skip")}
    report.failed += counts["fail"]
    report.out.write(f"deep checks: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped\n")
    return records

"""The kernel sanitizer's cost on the benchmark programs: each program's own kernels (its quick cases, as
``run_all.py --quick`` runs them) timed on the CPU reference device plain and under
``NUMBA_METAL_SANITIZE=all`` (docs/sanitizer.md), printed as a Markdown table.

    NUMBA_METAL_DEVICE=cpu python benchmarks/sanitizer_slowdown.py [--repeat 3] [--only NAME ...]

Each program runs twice, in two fresh processes, one without and one with ``NUMBA_METAL_SANITIZE=all`` (the
variable applies to kernels as they are decorated, so a process is one mode). For each of the program's
quick cases the child uploads the inputs, launches once (compiling; the result is checked against the
case's reference), then times the best of ``--repeat`` launches (``case.metal.launch`` and a wait: resident
arrays, no copies). A program's figure is the sum over its cases of these best times. Any sanitizer report
(an error, or a warning of the sanitizer: a device-memory race or accesses left unchecked) is counted and
printed; a correct program has none.

``device_function_compile_cache`` measures compile times (no kernel to time): it is not in the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_common as bc  # noqa: E402
from run_all import PROGRAMS  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "NM-SANITIZER-SLOWDOWN "


def _child(name: str, repeat: int) -> dict:
    """One program in one mode (this process' ``NUMBA_METAL_SANITIZE``): its cases' best launch times."""
    from numba_metal import metal
    from numba_metal.errors import DeviceRaceWarning, KernelSanitizerError, NumbaMetalWarning
    bc.choose_device("cpu")
    prog = bc.load_program(os.path.join(HERE, name + ".py"))
    cases, reports = [], []
    for case in prog.cases(True):
        if case.metal is None:
            continue
        m = case.metal
        inputs = case.setup()
        ref = case.reference(inputs)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                state = m.upload(inputs)
                m.launch(state)
                metal.synchronize()
                correct = bool(case.check(m.download(state), ref)["ok"])
                times = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    m.launch(state)
                    metal.synchronize()
                    times.append(time.perf_counter() - t0)
            except KernelSanitizerError as e:
                reports.append(f"{case.id}: {type(e).__name__}: {e}")
                cases.append({"id": case.id, "correct": False, "best_s": None})
                continue
        for w in seen:
            if isinstance(w.message, (DeviceRaceWarning, NumbaMetalWarning)) and "sanitizer" in str(w.message):
                reports.append(f"{case.id}: {type(w.message).__name__}: {w.message}")
        cases.append({"id": case.id, "correct": correct, "best_s": min(times)})
    return {"program": name, "cases": cases, "reports": reports}


def _run(name: str, sanitize: bool, repeat: int, timeout: float) -> dict:
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu")
    env.pop("NUMBA_METAL_SANITIZE", None)
    if sanitize:
        env["NUMBA_METAL_SANITIZE"] = "all"
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--repeat", str(repeat)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"program": name, "error": f"did not finish in {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            return dict(json.loads(line[len(MARK):]), wall_s=wall)
    tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-4:])
    return {"program": name, "error": f"exited with {proc.returncode}: {tail}"}


def _total(res: dict):
    if "error" in res or not res["cases"] or any(c["best_s"] is None for c in res["cases"]):
        return None
    return sum(c["best_s"] for c in res["cases"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed launches per case (the best is kept)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="only this program (repeatable)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per program and mode")
    ap.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(MARK + json.dumps(_child(args.child, args.repeat)), flush=True)
        return 0
    names = [n for n in PROGRAMS if n != "device_function_compile_cache" and (not args.only or n in args.only)]
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {bc._cpu_model()}, {platform.system()} "
          f"{platform.release()}; CPU reference device; best of {args.repeat} launches per quick case\n")
    print("| program | quick cases | plain (ms) | `NUMBA_METAL_SANITIZE=all` (ms) | slowdown | reports |")
    print("|---|---:|---:|---:|---:|---:|")
    bad = 0
    for name in names:
        plain = _run(name, False, args.repeat, args.timeout)
        checked = _run(name, True, args.repeat, args.timeout)
        p, c = _total(plain), _total(checked)
        reports = checked.get("reports", [])
        wrong = [x["id"] for r in (plain, checked) for x in r.get("cases", []) if not x["correct"]]
        cell = lambda t: "—" if t is None else f"{t * 1e3:.1f}"  # noqa: E731
        slow = f"{c / p:.1f}x" if p and c else "—"
        print(f"| {name} | {len(checked.get('cases', plain.get('cases', [])))} | {cell(p)} | {cell(c)} | {slow} | "
              f"{len(reports)} |", flush=True)
        for r in (plain, checked):
            if "error" in r:
                print(f"    {name}: {r['error']}", file=sys.stderr)
        for r in reports:
            print(f"    {name}: {r}", file=sys.stderr)
        if wrong:
            print(f"    {name}: NOT CORRECT: {', '.join(wrong)}", file=sys.stderr)
        bad += bool(reports or wrong or "error" in plain or "error" in checked)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

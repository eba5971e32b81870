"""Launch overhead: ``kernel[1, 1](arrays..., x, y)`` with 0, 1, 3 and 8 device-array arguments plus two
scalars, each beside a ``@numba.njit`` call with the same arguments.

    python benchmarks/perf_launch.py [--json out.json] [--launches 10000] [--repeats 7]

For each arity: 10,000 asynchronous launches then one wait, repeated; the figure is the median time per
launch (end to end, wait included). It is split into the Python side of a launch (the same loop with
the queue's submit replaced by a no-op: argument keys, specialisation lookup, binding, packing) and the
runtime's submit (10,000 ``Queue.submit`` calls of the prepared descriptor, then one wait). The njit
figure is the median time of a call of an empty ``@numba.njit`` function taking the same arguments (NumPy
arrays), which is Numba's own dispatch overhead.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _perfutil  # noqa: E402

sys.path.insert(0, _perfutil.REPO)
os.environ.setdefault("NUMBA_METAL_DEVICE", "cpu")

import numpy as np  # noqa: E402

from numba_metal import metal  # noqa: E402
from numba_metal.host import device as _device  # noqa: E402

ARITIES = (0, 1, 3, 8)


def _kernel_source(narrays: int, name: str, use_grid: bool) -> str:
    params = ", ".join([f"a{i}" for i in range(narrays)] + ["x", "y"])
    lines = [f"def {name}({params}):"]
    if narrays:
        cond = "metal.grid(1) == 0" if use_grid else "x > y"
        lines.append(f"    if {cond}:")
        lines.extend(f"        a{i}[0] = x + y" for i in range(narrays))
    else:
        lines.append("    pass")
    return "\n".join(lines) + "\n"


def make_functions(narrays: int):
    """(the Metal kernel, the njit function) with ``narrays`` arrays and two scalars."""
    import numba
    ns = {"metal": metal}
    exec(_kernel_source(narrays, f"launch{narrays}", True), ns)
    kernel = metal.jit(ns[f"launch{narrays}"])
    ns = {}
    exec(_kernel_source(narrays, f"call{narrays}", False), ns)
    return kernel, numba.njit(ns[f"call{narrays}"])


def per_launch(fn, launches: int, repeats: int, wait=None) -> tuple[list[float], list[float], list[float]]:
    """Seconds per call of fn() over `launches` calls then wait(), for each repetition: (end to end,
    before the wait, CPU time of this thread before the wait)."""
    total, issue, cpu = [], [], []
    for _ in range(repeats):
        c0 = time.thread_time()
        t0 = time.perf_counter()
        for _ in range(launches):
            fn()
        t1 = time.perf_counter()
        c1 = time.thread_time()
        if wait is not None:
            wait()
        t2 = time.perf_counter()
        issue.append((t1 - t0) / launches)
        total.append((t2 - t0) / launches)
        cpu.append((c1 - c0) / launches)
    return total, issue, cpu


def measure(narrays: int, launches: int, repeats: int) -> dict:
    kernel, njitted = make_functions(narrays)
    dev_arrays = [metal.to_device(np.zeros(64, np.float32)) for _ in range(narrays)]
    host_arrays = [np.zeros(64, np.float32) for _ in range(narrays)]
    x, y = np.float32(1.0), np.float32(2.0)
    args = (*dev_arrays, x, y)
    launcher = kernel[1, 1]
    launcher(*args)               # compile, prepare, warm up
    njitted(*host_arrays, x, y)
    metal.synchronize()
    ctx = _device.current()
    queue = ctx.default_queue

    def launch():
        kernel[1, 1](*args)

    e2e, issue, launch_cpu = per_launch(launch, launches, repeats, queue.wait)

    # The Python side alone: the same launches with the runtime call replaced by a no-op.
    queue.submit = lambda plan, n: 0
    try:
        python_side, _, python_cpu = per_launch(launch, launches, repeats)
    finally:
        del queue.submit

    # The runtime's submit alone: the prepared descriptor submitted again and again.
    state = kernel.kernel_for_args(args).launch_state(ctx)
    dispatch, size = state.dispatch, state.arg_size
    submit_only, _, submit_cpu = per_launch(lambda: queue.submit(dispatch, size), launches, repeats, queue.wait)

    def call():
        njitted(*host_arrays, x, y)

    njit, _, njit_cpu = per_launch(call, launches, repeats)
    us = 1e6
    row = {"arrays": narrays, "scalars": 2, "launches": launches, "repeats": repeats,
           "launch_us": _perfutil.summary(e2e, us), "launch_issue_us": _perfutil.summary(issue, us),
           "python_side_us": _perfutil.summary(python_side, us),
           "runtime_submit_us": _perfutil.summary(submit_only, us),
           "njit_call_us": _perfutil.summary(njit, us),
           "cpu_time": {"launch_us": _perfutil.summary(launch_cpu, us),
                        "python_side_us": _perfutil.summary(python_cpu, us),
                        "runtime_submit_us": _perfutil.summary(submit_cpu, us),
                        "njit_call_us": _perfutil.summary(njit_cpu, us)}}
    row["launch_over_njit"] = row["launch_us"]["median"] / row["njit_call_us"]["median"]
    row["cpu_time"]["launch_over_njit"] = (row["cpu_time"]["launch_us"]["median"]
                                           / row["cpu_time"]["njit_call_us"]["median"])
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--launches", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    info = _perfutil.machine()
    print(_perfutil.describe(info))
    rows = []
    print(f"medians of {args.repeats} x {args.launches} async launches + 1 wait; us per launch; wall clock, "
          "then [CPU time of the launching thread]")
    print(f"{'arrays':>6} {'launch':>17} {'python side':>17} {'runtime submit':>17} {'njit call':>17} "
          f"{'ratio':>13}")
    for n in ARITIES:
        r = measure(n, args.launches, args.repeats)
        rows.append(r)
        c = r["cpu_time"]
        print(f"{n:>6} {r['launch_us']['median']:>7.2f} [{c['launch_us']['median']:>6.2f}] "
              f"{r['python_side_us']['median']:>7.2f} [{c['python_side_us']['median']:>6.2f}] "
              f"{r['runtime_submit_us']['median']:>7.2f} [{c['runtime_submit_us']['median']:>6.2f}] "
              f"{r['njit_call_us']['median']:>7.3f} [{c['njit_call_us']['median']:>6.3f}] "
              f"{r['launch_over_njit']:>5.1f}x [{c['launch_over_njit']:>4.1f}x]")
    _perfutil.write_json(args.json, {"benchmark": "launch", "machine": info, "results": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

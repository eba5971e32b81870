"""``numba-metal doctor --deep``: every check whose answer only a Mac has, each in its own child process.

A check runs as ``python -m numba_metal.tools.deep_check --child NAME`` with a timeout, so that a process
the GPU has poisoned (a fault, the watchdog, a hang) cannot hide the answers of the others: a child that
crashes or does not finish is that check's ``fail``, and the next check starts in a fresh process. Each
check reports ``pass``, ``fail`` or ``skip`` with the value it observed (and, for a skip, why). The
probes themselves are in :mod:`numba_metal.tools.deep_probes`.

On the CPU reference device and the simulated Metal device the same checks run where they apply; the
kernels run once, at the MSL version numba-metal asks for (on a Metal GPU: at MSL 3.0, 3.2 and 4.0, with
Metal's validation layer on), and the report says what was skipped.

``NUMBA_METAL_DOCTOR_CRASH`` (a test hook): a comma-separated list of check names whose child aborts
before it runs, to show that a crashed child is reported and the other checks still run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Callable, NamedTuple

#: The prefix of the line a child prints its result on.
RESULT_TAG = "numba-metal-deep-result "
#: Seconds a check's child may run (the watchdog check runs launches of up to 8 s).
DEFAULT_TIMEOUT = 180.0


class Check(NamedTuple):
    name: str
    title: str
    probe: str                # the function of deep_probes that runs it
    kernel: str | None = None  # for the representative kernels: deep_probes.KERNELS' name


CHECKS = (
    Check("device-facts", "build and device facts", "device_facts"),
    Check("msl-versions", "MSL versions that compile", "msl_versions"),
    *(Check(f"kernel-{k}", f"kernel: {k} vs NumPy", "kernel", k)
      for k in ("vector-add", "shared-reduction", "float-atomics", "fp16-atomic-device", "fp16-atomic-shared",
                "threadfence", "float64", "complex")),
    Check("no-copy", "bytesNoCopy on NumPy memory, mapped_array", "no_copy"),
    Check("max-threads", "threads per threadgroup, heavy kernels", "max_threads"),
    Check("fault", "a fault, then the next launch", "fault"),
    Check("watchdog", "a long kernel under the watchdog", "watchdog"),
    Check("cross-queue", "two streams: wait behind a producer", "cross_queue"),
    Check("timestamps", "device timestamps vs the host clock", "timestamps"),
    Check("dlpack-mlx", "DLPack round trip with MLX", "dlpack_mlx"),
    Check("dlpack-torch-mps", "DLPack round trip with PyTorch MPS", "dlpack_torch_mps"),
)

_BY_NAME = {c.name: c for c in CHECKS}


def _versions(kind: str) -> list[int]:
    """The MSL versions the kernels run at on this device kind (0: the version numba-metal asks for)."""
    from numba_metal.tools.deep_probes import METAL_VERSIONS
    return list(METAL_VERSIONS) if kind == "metal" else [0]


def _version_text(version: int) -> str:
    return f"MSL {version // 100}.{version % 100 // 10}" if version else "default"


# ---------------------------------------------------------------------------------------------
# The child
# ---------------------------------------------------------------------------------------------

def _child(name: str, version: int) -> int:
    if name in os.environ.get("NUMBA_METAL_DOCTOR_CRASH", "").split(","):
        os.abort()  # the test hook: this child dies as a GPU-poisoned process may
    from numba_metal.tools import deep_probes
    check = _BY_NAME[name]
    try:
        ctx = deep_probes.context()
        probe = getattr(deep_probes, check.probe)
        result = probe(ctx, check.kernel, version) if check.kernel else probe(ctx)
    except Exception as e:  # noqa: BLE001 - whatever a probe raises is its check's failure
        result = deep_probes.failed(f"{type(e).__name__}: {e}")
    sys.stdout.flush()
    sys.stdout.write("\n" + RESULT_TAG + json.dumps(result._asdict(), default=str) + "\n")
    sys.stdout.flush()
    return 0


# ---------------------------------------------------------------------------------------------
# The parent
# ---------------------------------------------------------------------------------------------

def _run_child(name: str, kind: str, version: int, timeout: float) -> dict:
    env = dict(os.environ, NUMBA_METAL_DEVICE=kind)
    if kind == "metal" and _BY_NAME[name].kernel:
        env.update(MTL_DEBUG_LAYER="1", MTL_SHADER_VALIDATION="1")  # Metal's validation layer
    cmd = [sys.executable, "-m", "numba_metal.tools.deep_check", "--child", name, "--msl-version", str(version)]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "fail", "value": None,
                "reason": f"its child process did not finish in {timeout:g} s (a hang, or the GPU stopped "
                          "answering); it was killed"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG):])
    how = (f"was killed by signal {-done.returncode}" if done.returncode < 0
           else f"exited with status {done.returncode}")
    tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
    return {"status": "fail", "value": None, "reason": f"its child process {how} without a result: {tail}"[:600]}


def _combine(per_version: dict) -> dict:
    """One record from a kernel's results at several MSL versions."""
    if len(per_version) == 1:
        return next(iter(per_version.values()))
    statuses = [r["status"] for r in per_version.values()]
    status = "fail" if "fail" in statuses else "pass" if "pass" in statuses else "skip"
    reasons = [f"{v}: {r['reason']}" for v, r in per_version.items() if r.get("reason")]
    return {"status": status, "value": {v: r["value"] if r["status"] == "pass" else r["status"]
                                        for v, r in per_version.items()},
            "reason": "; ".join(reasons)}


def run(kind: str, timeout: float = DEFAULT_TIMEOUT, only: list[str] | None = None,
        progress: Callable[[dict], None] | None = None) -> list[dict]:
    """Runs the checks (``only``: these names) on device ``kind``; returns one record per check."""
    records = []
    unusable = None
    for check in CHECKS:
        if only and check.name not in only:
            continue
        start = time.perf_counter()
        if unusable is not None:
            record = {"status": "skip", "value": None, "reason": unusable}
        elif check.kernel:
            versions = _versions(kind)
            record = _combine({_version_text(v): _run_child(check.name, kind, v, timeout) for v in versions})
            if versions == [0]:
                record["reason"] = ((record.get("reason") or "") + "; " if record.get("reason") else "") + \
                    ("ran once, at the MSL version numba-metal asks for; MSL 3.0, 3.2 and 4.0 and Metal's "
                     "validation layer are skipped: they matter only to Apple's compiler and GPU")
        else:
            record = _run_child(check.name, kind, 0, timeout)
        record = {"name": check.name, "title": check.title, **record,
                  "seconds": round(time.perf_counter() - start, 2)}
        if check.name == "device-facts" and record["status"] == "fail":
            unusable = "the device could not be used (see device-facts)"
        records.append(record)
        if progress is not None:
            progress(record)
    return records


def format_record(record: dict) -> str:
    """A record as the report prints it: status, title, then what was observed."""
    status = {"pass": "ok", "fail": "FAIL", "skip": "skip"}[record["status"]]
    lines = [f"{status:<5} {record['name']:<22} {record['title']}"]
    if record.get("reason"):
        lines.append(f"{'':<28} {record['reason']}")
    value = record.get("value")
    if isinstance(value, dict):
        lines += [f"{'':<28} {k}: {v}" for k, v in value.items()]
    elif value is not None:
        lines.append(f"{'':<28} {value}")
    return "\n".join(lines) + "\n"


def write_json(path: str, document: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=2, default=str)
        f.write("\n")


def main(argv: list[str] | None = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m numba_metal.tools.deep_check",
                                     description="one check of `numba-metal doctor --deep` (its child process)")
    parser.add_argument("--child", required=True, choices=sorted(_BY_NAME))
    parser.add_argument("--msl-version", type=int, default=0)
    args = parser.parse_args(argv)
    return _child(args.child, args.msl_version)


if __name__ == "__main__":
    sys.exit(main())

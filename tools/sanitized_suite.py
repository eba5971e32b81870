"""The test suite under the kernel sanitizer: every directory of tests/ run with ``NUMBA_METAL_DEVICE=cpu
NUMBA_METAL_SANITIZE=all``, one directory at a time (one pytest process each, with a time limit), and a
summary line per directory. Not part of ``python -m pytest`` (it takes long); docs/testing.md records its
last result.

    python tools/sanitized_suite.py                       # every directory of tests/
    python tools/sanitized_suite.py kernels language      # these directories only
    python tools/sanitized_suite.py --timeout 1800 --logs /tmp/sanitized

A test that must not run sanitized says why with ``@pytest.mark.unsanitized(reason)`` (tests/conftest.py), or
its deliberately buggy kernel says ``sanitize=False``: a clean run hides no failure. A ``DeviceRaceWarning`` is
an error here, unless the test ignores it on purpose (idempotent writes). The exit status is 1 when any
directory failed or ran out of time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")


def directories() -> list[str]:
    return sorted(d for d in os.listdir(TESTS)
                  if os.path.isdir(os.path.join(TESTS, d)) and not d.startswith(("_", ".")))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", help="directories of tests/ (default: all)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per directory")
    ap.add_argument("--logs", default=None, help="write each directory's pytest output to LOGS/<dir>.log")
    args = ap.parse_args(argv)
    names = args.dirs or directories()
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", NUMBA_METAL_SANITIZE="all")
    if args.logs:
        os.makedirs(args.logs, exist_ok=True)
    failed = 0
    total = time.perf_counter()
    for name in names:
        # a device-memory race across threadgroups is a warning (idempotent writes exist): here it fails the
        # test unless the test says it writes so on purpose
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "--tb=short",
               "-W", "error::numba_metal.errors.DeviceRaceWarning", os.path.join("tests", name)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout)
            out, rc = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc = None
        if args.logs:
            with open(os.path.join(args.logs, name + ".log"), "w", encoding="utf-8") as f:
                f.write(out)
        last = next((ln for ln in reversed(out.splitlines())
                     if " in " in ln and any(w in ln for w in ("passed", "failed", "error"))), "")
        status = "timed out" if rc is None else ("ok" if rc in (0, 5) else f"exit {rc}")
        print(f"tests/{name}: {status}, {time.perf_counter() - t0:.0f} s: {last.strip('= ')}", flush=True)
        failed += status != "ok"
        if rc not in (0, 5, None):
            for line in out.splitlines():
                if line.startswith(("FAILED ", "ERROR ")):
                    print(f"    {line}", flush=True)
    print(f"{len(names)} directories, {failed} not clean, {time.perf_counter() - total:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

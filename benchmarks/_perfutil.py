"""Shared pieces of the benchmarks/perf_*.py scripts: the machine's description, medians, fresh
processes, JSON output. Not a benchmark itself."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

import bench_common  # noqa: F401 - the benchmarks' set-up: this tree's numba_metal, no performance warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def machine() -> dict:
    """CPU model, cores, OS, Python/NumPy/Numba versions, the device, and the load while measuring."""
    import numpy as np
    from bench_common import _cpu_model
    model = _cpu_model()
    try:
        from importlib import metadata
        numba_version = metadata.version("numba")
    except Exception:  # noqa: BLE001 - informational only
        numba_version = "unknown"
    info = {"cpu": model, "cores": os.cpu_count(), "os": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__, "numba": numba_version,
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}
    try:
        sys.path.insert(0, REPO)
        from numba_metal import metal
        dev = metal.get_device_info()
        info["device"] = {"name": dev.name, "kind": dev.kind}
    except Exception as e:  # noqa: BLE001 - informational only
        info["device"] = {"error": str(e)}
    return info


def describe(info: dict) -> str:
    dev = info.get("device", {})
    return (f"machine: {info['cpu']}, {info['cores']} cores, {info['os']}, Python {info['python']}, "
            f"NumPy {info['numpy']}, Numba {info['numba']}\n"
            f"device:  {dev.get('name', dev.get('error'))} ({dev.get('kind', '?')}); load average "
            f"{', '.join(f'{x:.2f}' for x in info['load_average'] or [])}")


def median(values) -> float:
    return float(statistics.median(values))


def summary(values, scale=1.0) -> dict:
    """Median, min and max of a list of measurements (scaled), and how many there were."""
    values = [v * scale for v in values]
    return {"median": median(values), "min": min(values), "max": max(values), "n": len(values)}


class FreshProcesses:
    """Runs Python code in new interpreters as an installed numba-metal would run: the source tree on
    the path, the CPU device, bytecode caches warm (written to a private pycache prefix, so that a
    fresh process measures start-up rather than compiling .py files; PYTHONDONTWRITEBYTECODE is not
    what users have), and a kernel cache directory chosen per run."""

    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="nm-perf-")
        self.root = self._tmp.name
        self.pycache = os.path.join(self.root, "pycache")

    def env(self, cache_dir: str | None = None, **extra) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONDONTWRITEBYTECODE", "NUMBA_METAL_CACHE_DIR", "NUMBA_CACHE_DIR")}
        env.update(PYTHONPATH=REPO, NUMBA_METAL_DEVICE="cpu", PYTHONPYCACHEPREFIX=self.pycache,
                   NUMBA_METAL_CACHE_DIR=cache_dir or os.path.join(self.root, "unused-cache"))
        env.update(extra)
        return env

    def new_cache_dir(self) -> str:
        path = tempfile.mkdtemp(prefix="cache-", dir=self.root)
        os.chmod(path, 0o700)
        return path

    def run(self, code: str, cache_dir: str | None = None, args=(), **extra) -> dict:
        """Run code (which prints one JSON line last) in a new interpreter; its JSON."""
        res = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=self.env(cache_dir, **extra),
                             capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            raise RuntimeError(f"benchmark child failed:\n{res.stderr}")
        return json.loads(res.stdout.strip().splitlines()[-1])

    def close(self):
        self._tmp.cleanup()


def write_json(path: str | None, result: dict) -> None:
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {path}")

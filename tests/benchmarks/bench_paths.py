"""Paths and loaders shared by the benchmark tests (benchmarks/ is not a package)."""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "benchmarks")
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
FIXTURE = os.path.join(FIXTURES, "quick_cpu_device.json")


def load(name: str):
    """Import benchmarks/<name>.py as a module (with benchmarks/ on sys.path, as the scripts have)."""
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod

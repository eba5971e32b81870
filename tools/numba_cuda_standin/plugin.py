"""pytest plugin that runs numba-cuda's test modules on numba-metal (``-p numba_cuda_standin.plugin``).

When pytest starts it makes ``numba.cuda`` the stand-in package in ``cuda/`` (whose ``__path__`` also holds the unpacked
``numba/cuda/tests`` named by ``NUMBA_CUDA_TESTS_ROOT``), maps numba.cuda's submodules that are numba-cuda's
copies of Numba's (``numba.cuda.core``, ``numba.cuda.types``...) onto Numba's own (``ALIASES``), and, when
cuda-python is absent, provides the few ``cuda.core`` names numba-cuda's test modules import at module level
(``CUDA_PYTHON_NAMES``). During the run it skips the tests listed in ``impossible.IMPOSSIBLE`` with their reason,
and appends one JSON line per event to ``NUMBA_CUDA_TESTS_EVENTS`` (the runner reads it, so a module that hangs
still reports the tests it finished and the one it hung in).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import json
import os
import sys
import types

import pytest

from numba_cuda_standin import impossible

HERE = os.path.dirname(os.path.abspath(__file__))

#: numba.cuda's submodule (and everything under it) → the module that holds the same names here. numba-cuda
#: 0.30 carries copies of these Numba modules under numba.cuda; Numba's own are their originals.
ALIASES = {
    "numba.cuda.core": "numba.core",
    "numba.cuda.types": "numba.core.types",
    "numba.cuda.typing": "numba.core.typing",
    "numba.cuda.datamodel": "numba.core.datamodel",
    "numba.cuda.np": "numba.np",
    "numba.cuda.utils": "numba.core.utils",
    "numba.cuda.cgutils": "numba.core.cgutils",
    "numba.cuda.misc": "numba.misc",
    "numba.cuda.random": "numba_metal.random",
}


def alias_of(fullname: str) -> str | None:
    """The module ``fullname`` stands for under ``ALIASES``, or None."""
    for name, target in ALIASES.items():
        if fullname == name or fullname.startswith(name + "."):
            return target + fullname[len(name):]
    return None


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        target_name = alias_of(fullname)
        if target_name is None:
            return None
        module = importlib.import_module(target_name)
        return importlib.util.spec_from_loader(fullname, self, is_package=hasattr(module, "__path__"))

    def create_module(self, spec):
        return importlib.import_module(alias_of(spec.name))

    def exec_module(self, module):
        pass


class _CudaDriverObject:
    """A cuda-python (``cuda.core``) object, which has no Metal counterpart: any use raises saying so."""

    def __init__(self, *args, **kwargs):
        from numba_metal.errors import UnsupportedFeatureError
        raise UnsupportedFeatureError(f"{type(self).__name__}: a CUDA driver object (cuda-python's cuda.core); "
                                      "Metal has none (numba_cuda_standin)")


def _cuda_python_names() -> dict:
    from numba_metal.errors import MetalRuntimeError
    driver_object = {name: type(name, (_CudaDriverObject,), {"from_handle": classmethod(_CudaDriverObject),
                                                             "from_cuda_array_interface":
                                                                 classmethod(_CudaDriverObject)})
                     for name in ("Device", "Buffer", "StridedMemoryView")}
    return {
        "cuda": {}, "cuda.core": {"Device": driver_object["Device"], "Buffer": driver_object["Buffer"]},
        "cuda.core.utils": {"StridedMemoryView": driver_object["StridedMemoryView"]},
        "cuda.core._utils": {},
        # numba-metal's error for a failed device operation is the counterpart of CUDA's
        "cuda.core._utils.cuda_utils": {"CUDAError": MetalRuntimeError},
    }


def install(tests_root: str) -> types.ModuleType:
    """Make ``numba.cuda`` the stand-in, its submodules resolvable, and return it (once per process)."""
    import numba
    if getattr(sys.modules.get("numba.cuda"), "__file__", "").startswith(HERE):
        return sys.modules["numba.cuda"]
    sys.meta_path.insert(0, _AliasFinder())
    spec = importlib.util.spec_from_file_location(
        "numba.cuda", os.path.join(HERE, "cuda", "__init__.py"),
        submodule_search_locations=[os.path.join(HERE, "cuda"), os.path.join(tests_root, "numba", "cuda")])
    module = importlib.util.module_from_spec(spec)
    sys.modules["numba.cuda"] = module
    numba.cuda = module
    spec.loader.exec_module(module)
    try:
        import cuda.core  # noqa: F401  (cuda-python, if installed, is used as it is)
    except ImportError:
        for name, names in _cuda_python_names().items():
            sub = types.ModuleType(name, "numba_cuda_standin: cuda-python's names numba-cuda's tests import")
            sub.__dict__.update(names)
            sub.__path__ = []
            sys.modules[name] = sub
            parent, _, last = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], last, sub)
    return module


def _event(record: dict) -> None:
    path = os.environ.get("NUMBA_CUDA_TESTS_EVENTS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


def test_id(nodeid: str) -> str:
    """A pytest node id relative to ``numba/cuda/tests`` (the form ``impossible.IMPOSSIBLE`` uses)."""
    prefix = "numba/cuda/tests/"
    return nodeid[len(prefix):] if nodeid.startswith(prefix) else nodeid


def _message(report) -> str:
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    if isinstance(longrepr, tuple):       # a skip: (file, line, reason)
        return str(longrepr[2])
    return str(longrepr)


def pytest_configure(config):
    install(os.environ["NUMBA_CUDA_TESTS_ROOT"])


def pytest_collection_modifyitems(config, items):
    for item in items:
        key = impossible.reason_for(test_id(item.nodeid))
        if key is not None:
            item.add_marker(pytest.mark.skip(reason=impossible.skip_reason(key)))


def pytest_collectreport(report):
    if report.failed:
        _event({"collect_error": test_id(report.nodeid), "message": _message(report)})


def pytest_runtest_logstart(nodeid, location):
    _event({"start": test_id(nodeid)})


def pytest_runtest_logreport(report):
    record = {"test": test_id(report.nodeid), "when": report.when, "outcome": report.outcome}
    if hasattr(report, "wasxfail"):
        record["xfail"] = True
    if report.outcome != "passed":
        record["message"] = _message(report)
    _event(record)

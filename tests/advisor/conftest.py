"""Advisor tests: every command on the sample projects in tests/advisor/samples, on the CPU device."""
import json
import os

import pytest

from advisor_paths import REPO


@pytest.fixture(autouse=True)
def advisor_env(tmp_path_factory, monkeypatch):
    """A private cache directory (calibration files), no colour forcing, the CPU device, and the
    repository importable by the processes the advisor starts."""
    cache = tmp_path_factory.getbasetemp() / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("NUMBA_METAL_DEVICE", "cpu")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p]))
    # The profiled pytest run does not need Hypothesis' plugin (it costs seconds at start-up).
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")


@pytest.fixture
def run_cli(capsys):
    """Run `numba-metal advisor ARGS` in this process; returns (exit code, stdout, stderr)."""
    from numba_metal.tools.advisor.cli import main

    def run(*args):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err
    return run


@pytest.fixture
def run_json(run_cli):
    def run(*args):
        args = list(args)
        i = args.index("--") if "--" in args else len(args)
        code, out, err = run_cli(*args[:i], "--format", "json", *args[i:])
        return code, (json.loads(out) if out.strip() else None), err
    return run

"""Fixtures for the runtime tests: a device and a queue, and a helper that runs code in a child process.

``device`` is every device this machine has among the CPU reference device, the simulated Metal device
(the Metal backend's own code on the simulated Metal API; builds without Metal) and a Metal GPU. A test
module about some of them only says so with ``DEVICES = (...)``, a test with ``@pytest.mark.devices(...)``,
each with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from numba_metal import runtime as rt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def available_kinds() -> list[str]:
    kinds = {d.kind for d in rt.list_devices(include_simulated=True)}
    return [k for k in ("cpu", "metal-sim", "metal") if k in kinds]


def pytest_configure(config):
    config.addinivalue_line("markers", "devices(*kinds): the device kinds a runtime test is about")


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("devices")
        wanted = marker.args if marker else getattr(metafunc.module, "DEVICES", None)
        kinds = [k for k in available_kinds() if wanted is None or k in wanted]
        metafunc.parametrize("device", kinds, indirect=True, scope="session")


@pytest.fixture(scope="session")
def device(request) -> rt.Device:
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == request.param]
    assert info, f"no {request.param} device"
    return rt.open_device(info[0].index)


@pytest.fixture()
def queue(device):
    q = device.new_queue()
    yield q
    q.release()


def run_isolated(code: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs Python code in a child process of this tree (for what could hang or abort the process when
    the code under test is wrong); a child still running after timeout seconds is killed and reported."""
    full_env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {}))
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=full_env,
                              cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"the child process did not finish within {timeout} s (a hang)\nstdout:\n{out}\nstderr:\n{err}")

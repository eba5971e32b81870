"""The CI workflow and the script of its macOS job: the workflow runs the scripts, and .ci/macos.sh works
here, on Linux, up to its first macOS-only step (Apple's Metal compiler)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_workflow_runs_the_linux_and_macos_scripts():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    jobs = workflow["jobs"]
    runs = {name: [s.get("run", "") for s in job["steps"]] for name, job in jobs.items()}
    assert jobs["linux"]["runs-on"].startswith("ubuntu") and any(".ci/run" in r for r in runs["linux"])
    assert jobs["macos"]["runs-on"].startswith("macos") and any(".ci/macos.sh" in r for r in runs["macos"])
    assert "self-hosted" in jobs["gpu"]["runs-on"] and any(".ci/macos.sh" in r for r in runs["gpu"])
    for script in (".ci/run", ".ci/macos.sh"):
        assert os.access(ROOT / script, os.X_OK), script


@pytest.mark.skipif(sys.platform == "darwin", reason="on a Mac the script goes on to Apple's compiler and the GPU")
def test_macos_script_runs_here_up_to_the_first_macos_only_step(tmp_path):
    env = dict(os.environ, NUMBA_METAL_CI_MSL_DIR=str(tmp_path / "msl"), NUMBA_METAL_CI_INSTALL="0",
               NUMBA_METAL_CI_TESTS="tests/runtime/test_kernels.py -k vector_add_matches_numpy")
    res = subprocess.run(["bash", str(ROOT / ".ci" / "macos.sh")], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    out = res.stdout
    assert res.returncode == 0, out[-4000:] + res.stderr[-4000:]
    steps = [line[3:-3] for line in out.splitlines() if line.startswith("== ")]
    assert steps == ["toolchain", "test dependencies (the test and torch extras)",
                     "availability of Apple's API (Package.swift's deployment target)", "build (SwiftPM, release)",
                     "collect the MSL the test suite compiles (CPU reference device)"], steps
    assert "NUMBA_METAL_CI_INSTALL=0: using the packages already installed" in out
    assert "every use is within the deployment target or guarded" in out
    assert "stopping before the first macOS-only step (Apple's Metal compiler)" in out
    sources = list((tmp_path / "msl").glob("*.metal"))
    assert sources and any("kernel void vadd" in s.read_text() for s in sources)


def test_the_macos_script_installs_what_the_linux_script_installs():
    """The Mac run has the Linux run's coverage: the extras .ci/run installs (and PyTorch, which .ci/run takes
    from PyTorch's CPU index) are installed by .ci/macos.sh, which checks that they import."""
    linux, mac = (ROOT / ".ci" / "run").read_text(), (ROOT / ".ci" / "macos.sh").read_text()

    def extras(text):
        return set(re.search(r'pip install[^\n]*-e "\.\[([a-z,]+)\]"', text).group(1).split(","))
    assert extras(linux) | {"torch"} <= extras(mac)
    assert "torch" in linux
    assert "import dask.distributed, mlx.core, torch" in mac


FAILING_TEST = '''
from numba_metal import runtime as rt

def test_compiles_then_fails():
    dev = rt.open_device([d for d in rt.list_devices() if d.kind == "cpu"][0].index)
    dev.compile("#include <metal_stdlib>\\nkernel void k(device int* x [[buffer(0)]]) { x[0] = 1; }\\n", "k")
    assert False, "a CPU-device failure"
'''


@pytest.mark.skipif(sys.platform == "darwin", reason="on a Mac the script goes on to Apple's compiler and the GPU")
def test_a_cpu_device_failure_does_not_stop_the_script_before_the_msl_sweep(tmp_path):
    # Under `set -e` one failing CPU-device test used to end the script before Apple's compiler ran; now it
    # is counted, the later steps run, and the script fails at the end naming it.
    (tmp_path / "test_failing.py").write_text(FAILING_TEST)
    env = dict(os.environ, NUMBA_METAL_CI_MSL_DIR=str(tmp_path / "msl"), NUMBA_METAL_CI_INSTALL="0",
               NUMBA_METAL_CI_TESTS=str(tmp_path / "test_failing.py"))
    res = subprocess.run(["bash", str(ROOT / ".ci" / "macos.sh")], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 1, res.stdout[-4000:] + res.stderr[-4000:]
    assert "stopping before the first macOS-only step" in res.stdout   # it went on past the failure
    assert "failed: the test suite on the CPU device" in res.stderr
    markers = [p.name for p in (tmp_path / "msl").iterdir() if ".metal.std" in p.name]
    assert markers and all(m.endswith(".std300") for m in markers)  # the versions the sweep compiles each at


def test_the_macos_script_is_shellcheck_clean():
    shellcheck = subprocess.run(["sh", "-c", "command -v shellcheck"], capture_output=True, text=True).stdout.strip()
    if not shellcheck:
        pytest.skip("shellcheck is not installed here (apt-get install shellcheck)")
    res = subprocess.run([shellcheck, str(ROOT / ".ci" / "macos.sh")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout

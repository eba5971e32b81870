"""`numba-metal doctor` (python -m numba_metal doctor): reports the device, its limits, the compiler and
the caches, exits 0 when kernels compile and run, and 1 naming the problem otherwise."""

import os
import re
import stat
import subprocess
import sys

import pytest

import doc_pages

from numba_metal import metal


def _doctor(tmp_path, *args, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_METAL_")}
    full.update(PYTHONPATH=doc_pages.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"))
    full.update(env)
    done = subprocess.run([sys.executable, "-m", "numba_metal", "doctor", *args], env=full, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


def test_on_the_cpu_device_it_compiles_and_runs_a_kernel_and_reports_device_limits_and_caches(tmp_path):
    rc, out = _doctor(tmp_path, NUMBA_METAL_DEVICE="cpu")
    assert rc == 0, out
    assert "ok    device 'cpu'" in out and "CPU reference device" in out
    assert "threads per threadgroup <= 1024" in out and "SIMD width 32" in out
    assert "ok    compiler" in out and "ok    kernel run" in out and "results equal NumPy's" in out
    assert f"{tmp_path / 'cache' / 'kernels'}: 0 entries" in out
    assert "NUMBA_METAL_DEVICE=cpu" in out and out.rstrip().endswith("everything works")


def test_it_names_the_cpu_devices_clang_and_the_candidates_it_skipped(tmp_path):
    from numba_metal import runtime
    old, good = tmp_path / "old" / "clang++", tmp_path / "good" / "clang++"
    old.parent.mkdir()
    good.parent.mkdir()
    old.write_text('#!/bin/sh\necho "Debian clang version 14.0.6"\n')
    old.chmod(0o755)
    good.symlink_to(os.path.realpath(runtime.cpu_compiler_info().split(" (")[0]))
    rc, out = _doctor(tmp_path, "--device", "cpu", PATH=os.pathsep.join(map(str, [old.parent, good.parent, "/usr/bin", "/bin"])))
    assert rc == 0, out
    assert re.search(rf"^ok    CPU-device clang   {re.escape(str(good))} \(clang \d+\.\d+", out, re.M), out
    assert f"skipped {old} (clang++ on PATH): clang 14.0.6 is older than clang 16" in out, out


def test_without_a_usable_clang_the_cpu_device_fails_and_says_how_to_get_one(tmp_path):
    rc, out = _doctor(tmp_path, "--device", "cpu", NUMBA_METAL_CLANG=str(tmp_path / "none"))
    assert rc == 1, out
    assert "FAIL  CPU-device clang" in out and "(NUMBA_METAL_CLANG): it does not exist" in out, out
    assert "FAIL  kernel run" in out and "clang++ 16 or newer" in out, out


def test_the_device_option_overrides_the_environment(tmp_path):
    rc, out = _doctor(tmp_path, "--device", "cpu", NUMBA_METAL_DEVICE="metal")
    assert rc == 0 and "ok    device 'cpu'" in out, out


@pytest.mark.skipif(metal.is_available(), reason="this machine has a Metal GPU, so the default device works")
def test_without_a_metal_gpu_the_default_device_fails_and_says_how_to_choose_the_cpu_device(tmp_path):
    rc, out = _doctor(tmp_path)
    assert rc == 1, out
    assert "FAIL  device 'metal'" in out and "NUMBA_METAL_DEVICE=cpu" in out
    assert "1 problem(s) found" in out


def test_a_missing_runtime_library_fails_and_says_how_to_build_it(tmp_path):
    rc, out = _doctor(tmp_path, NUMBA_METAL_DEVICE="cpu", NUMBA_METAL_LIBRARY=str(tmp_path / "nothing.so"))
    assert rc == 1, out
    assert "FAIL  runtime library" in out and "python -m numba_metal.tools.build" in out


def test_a_cache_directory_others_can_write_fails_and_says_how_to_fix_it(tmp_path):
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO)
    rc, out = _doctor(tmp_path, NUMBA_METAL_DEVICE="cpu", NUMBA_METAL_CACHE_DIR=str(shared))
    assert rc == 1, out
    assert "FAIL  disk cache" in out and f"chmod 700 {shared}" in out
    assert "ok    kernel run" in out  # kernels still compile and run without the cache


def test_the_command_is_listed_by_the_usage_text():
    from numba_metal.tools.cli import USAGE
    assert "numba-metal doctor" in USAGE


def test_version_bounds_are_read_as_pyproject_writes_them():
    from numba_metal.tools.doctor import _within
    assert _within("3.13.5", ">=3.10,<3.14") and not _within("3.14.0", ">=3.10,<3.14")
    assert not _within("3.9.18", ">=3.10,<3.14")
    assert _within("0.68.1", ">=0.67,<0.69") and not _within("0.69.0", ">=0.67,<0.69")
    assert _within("2.4.6", ">=1.24,<3") and not _within("3.0.0", ">=1.24,<3")


def test_a_numba_outside_the_declared_range_fails(monkeypatch):
    import io
    from importlib import metadata

    from numba_metal.tools import doctor
    monkeypatch.setattr(metadata, "metadata", lambda name: {"Requires-Python": ">=3.10,<3.14"})
    monkeypatch.setattr(metadata, "requires", lambda name: ["numba<0.69,>=0.67", "numpy<3,>=1.24", "cffi>=1.15"])
    report = doctor._Report(io.StringIO())
    doctor._ranges(report, "0.70.0", "2.4.6")
    assert report.failed == 1
    assert "numba 0.70.0 is outside <0.69,>=0.67" in report.out.getvalue()

"""`numba-metal doctor --deep [--json FILE]` (issue 26 item 15): the checks only a Mac can answer, each in a
child process. On the CPU reference device and the simulated Metal device the command runs end to end and
says what it skipped; a child that crashes or hangs is its check's fail and the other checks still run;
the exit status is 1 exactly when a check failed (docs/installation.md, *The deep check*)."""

import json
import os
import subprocess
import sys

import pytest

import doc_pages

from numba_metal import runtime
from numba_metal.tools import deep_check

NAMES = [c.name for c in deep_check.CHECKS]
KERNEL_CHECKS = [c.name for c in deep_check.CHECKS if c.kernel]


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_METAL_")}
    env.update(PYTHONPATH=doc_pages.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"))
    env.update(extra)
    return env


def _doctor(tmp_path, *args, **env):
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "numba_metal", "doctor", "--deep", "--json", str(report), *args],
                          env=_env(tmp_path, **env), cwd=str(tmp_path), capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr, json.loads(report.read_text())


def _has_simulated_device() -> bool:
    return any(d.kind == "metal-sim" for d in runtime.list_devices(include_simulated=True))


def _check_end_to_end(rc, out, document, device):
    assert rc == 0, out
    assert document["device"] == device and document["exit_status"] == 0
    records = {r["name"]: r for r in document["deep"]}
    assert list(records) == NAMES, "every check is in the report, in order"
    for record in records.values():
        assert record["status"] in ("pass", "skip"), (record, out)
        if record["status"] == "skip":
            assert record["reason"], record
    facts = records["device-facts"]["value"]
    assert facts["kind"] == device and facts["simd_width"] == 32 and facts["page_size"] > 0
    assert "3.0" in records["msl-versions"]["value"]["compiled"]
    for name in KERNEL_CHECKS:  # each compared to NumPy, and the MSL versions it did not run at are named
        assert records[name]["status"] == "pass" and records[name]["value"]["max_error_ulps"] <= \
            records[name]["value"]["tolerance_ulps"], records[name]
        assert "MSL 3.0, 3.2 and 4.0 and Metal's validation layer are skipped" in records[name]["reason"]
    assert "MetalRuntimeError" in records["fault"]["value"]["fault"]
    assert records["fault"]["value"]["next_launch"] == "ran, results correct"
    assert "time limit" in records["watchdog"]["value"]["limited_launch"]
    for name in ("dlpack-mlx", "dlpack-torch-mps"):
        assert records[name]["status"] == "skip" and "needs a Metal GPU" in records[name]["reason"]
    summary = f"deep checks: {len(NAMES) - 2} passed, 0 failed, 2 skipped"
    assert summary in out and "skip  dlpack-mlx" in out, out
    assert any(c["check"] == "kernel run" and c["status"] == "ok" for c in document["checks"])


def test_on_the_cpu_device_every_check_runs_or_says_why_not(tmp_path):
    rc, out, document = _doctor(tmp_path, NUMBA_METAL_DEVICE="cpu")
    _check_end_to_end(rc, out, document, "cpu")


@pytest.mark.skipif(not _has_simulated_device(), reason="this build has no simulated Metal device (a macOS build)")
def test_on_the_simulated_metal_device_every_check_runs_or_says_why_not(tmp_path):
    rc, out, document = _doctor(tmp_path, "--device", "metal-sim", NUMBA_METAL_DEVICE="cpu")
    _check_end_to_end(rc, out, document, "metal-sim")
    assert "[simulated GPU]" in {r["name"]: r for r in document["deep"]}["fault"]["value"]["fault"]


def test_a_crashed_child_is_its_checks_fail_and_the_others_still_run(tmp_path, monkeypatch):
    for key, value in _env(tmp_path, NUMBA_METAL_DOCTOR_CRASH="fault").items():
        monkeypatch.setenv(key, value)
    records = deep_check.run("cpu", only=["fault", "cross-queue", "kernel-vector-add"])
    by_name = {r["name"]: r for r in records}
    assert by_name["fault"]["status"] == "fail"
    assert "was killed by signal 6 without a result" in by_name["fault"]["reason"]
    assert by_name["cross-queue"]["status"] == "pass" and by_name["kernel-vector-add"]["status"] == "pass"


@pytest.mark.skipif(not _has_simulated_device(), reason="this build has no simulated Metal device (a macOS build)")
def test_on_a_metal_gpu_each_kernel_runs_at_each_msl_version_it_can(tmp_path, monkeypatch):
    """A Mac's path, on the simulated device (which takes MSL 3.0 and 3.2 but not 4.0, as macOS 15)."""
    for key, value in _env(tmp_path).items():
        monkeypatch.setenv(key, value)
    from numba_metal.tools.deep_probes import METAL_VERSIONS
    monkeypatch.setattr(deep_check, "_versions", lambda kind: list(METAL_VERSIONS))
    add, fence = deep_check.run("metal-sim", only=["kernel-vector-add", "kernel-threadfence"])
    assert add["status"] == "pass" and fence["status"] == "pass", (add, fence)
    assert list(add["value"]) == ["MSL 3.0", "MSL 3.2", "MSL 4.0"]
    assert add["value"]["MSL 3.0"]["max_error_ulps"] == 0 and add["value"]["MSL 4.0"] == "skip"
    assert "MSL 4.0: the device does not accept this MSL version" in add["reason"]
    assert fence["value"]["MSL 3.0"] == "skip" and "MSL 3.0: the kernel needs MSL 3.2" in fence["reason"]
    assert fence["value"]["MSL 3.2"]["max_error_ulps"] == 0


def test_a_child_that_does_not_finish_in_time_is_killed_and_fails(tmp_path, monkeypatch):
    for key, value in _env(tmp_path).items():
        monkeypatch.setenv(key, value)
    [record] = deep_check.run("cpu", timeout=0.01, only=["timestamps"])
    assert record["status"] == "fail" and "did not finish in 0.01 s" in record["reason"]


def test_a_failed_check_makes_the_exit_status_1(tmp_path):
    rc, out, document = _doctor(tmp_path, "--checks", "fault,timestamps", NUMBA_METAL_DEVICE="cpu",
                                NUMBA_METAL_DOCTOR_CRASH="fault")
    assert rc == 1 and document["exit_status"] == 1, out
    assert [(r["name"], r["status"]) for r in document["deep"]] == [("fault", "fail"), ("timestamps", "pass")]
    assert "FAIL  fault" in out and "1 problem(s) found" in out


def test_a_device_that_cannot_be_used_fails_once_and_the_rest_are_skipped(tmp_path):
    if any(d.kind == "metal" for d in runtime.list_devices()):
        pytest.skip("this machine has a Metal GPU, so the device can be used")
    rc, out, document = _doctor(tmp_path, "--device", "metal")
    assert rc == 1, out
    first, *rest = document["deep"]
    assert first["name"] == "device-facts" and first["status"] == "fail"
    assert "UnsupportedPlatformError" in first["reason"] and "NUMBA_METAL_DEVICE=cpu" in first["reason"]
    assert rest and all(r["status"] == "skip" and "could not be used" in r["reason"] for r in rest)


def test_unknown_check_names_are_refused_naming_the_checks(tmp_path):
    done = subprocess.run([sys.executable, "-m", "numba_metal", "doctor", "--deep", "--checks", "nope"],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown: nope" in done.stderr and "device-facts" in done.stderr


@pytest.mark.parametrize("name, signature", [
    ("k_vector_add", "void(float32[:], float32[:], float32[:])"),
    ("k_shared_reduction", "void(float32[:], float32[:])"),
    ("k_float_atomics", "void(float32[:], float32[:])"),
    ("k_fp16_atomic_device", "void(float16[:], float16[:])"),
    ("k_fp16_atomic_shared", "void(float16[:], float16[:])"),
    ("k_threadfence", "void(float32[:], float32[:], int32[:], float32[:])"),
    ("k_float64", "void(float64[:], float64[:], float64[:], float64[:])"),
    ("k_complex", "void(complex128[:], complex128[:], complex128[:])"),
    ("k_heavy_float64", "void(float64[:], float64[:])"),
    ("k_heavy_complex", "void(complex128[:], complex128[:])"),
    ("k_spin", "void(int64, int64[:])"),
])
def test_the_kernels_the_children_run_are_legal_msl(name, signature):
    """The children's MSL is not seen by this session's MSL lint: compile it for the device here, where it is."""
    from numba_metal import metal
    from numba_metal.tools import deep_probes
    ctx = metal.select_device(os.environ.get("NUMBA_METAL_DEVICE", "cpu"))
    kernel = metal.jit(signature)(getattr(deep_probes, name))
    [specialization] = kernel.overloads.values()
    assert specialization.launch_state(ctx).pipeline.max_total_threads_per_threadgroup > 0

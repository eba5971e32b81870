"""What compiling leaves in TMPDIR (nothing, once the process has exited) and what a full TMPDIR gives (an
error that says so, then compiles work again once there is room)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

DEVICES = ("cpu",)  # the CPU device's compiler

COMPILE = textwrap.dedent('''
    import json, os, sys, uuid
    from numba_metal import runtime as rt
    from numba_metal.errors import NumbaMetalError
    dev = rt.open_device([d for d in rt.list_devices() if d.kind == "cpu"][0].index)
    SRC = ("#include <metal_stdlib>\\nusing namespace metal;\\n"
           "kernel void k(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {{ x[i] = %d; }}\\n")
    def compile_new():
        """Compiles a kernel no cache has seen; None, or the error."""
        try:
            dev.compile(SRC % (uuid.uuid4().int % 100000), "k")
        except NumbaMetalError as e:
            return type(e).__name__ + ": " + str(e)
        return None
''')


def python(code: str, env: dict, prefix=()) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env)
    return subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=180)


@pytest.mark.parametrize("cache", ["private", "none"])
def test_a_process_that_compiles_leaves_nothing_in_tmpdir(tmp_path, cache):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cache_dir = tmp_path / "cache"
    if cache == "none":  # a cache directory that may not be used: everything is built in TMPDIR
        cache_dir.mkdir(mode=0o777)
        os.chmod(cache_dir, 0o777)
    code = COMPILE + 'print(json.dumps([compile_new() for _ in range(3)]))'
    result = python(code, {"TMPDIR": str(tmp), "NUMBA_METAL_CACHE_DIR": str(cache_dir)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [None, None, None]
    assert os.listdir(tmp) == []


def test_a_full_tmpdir_is_named_in_the_error_and_compiles_work_once_there_is_room(tmp_path):
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare(1) and mount(1) to give the child a small file system of its own")
    full = tmp_path / "full"
    full.mkdir()
    code = COMPILE + textwrap.dedent(f'''
        import subprocess
        FULL = {str(full)!r}
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", FULL], check=True)
        fd = os.open(FULL + "/filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"x" * 4096):
                pass
        except OSError:  # ENOSPC: the file system is full
            pass
        os.close(fd)
        os.environ["TMPDIR"] = FULL
        when_full = compile_new()
        os.remove(FULL + "/filler")
        print(json.dumps({{"full": when_full, "room": compile_new(), "left": os.listdir(FULL)}}))
    ''')
    prefix = ("unshare", "--mount", "--propagation", "private") if os.geteuid() == 0 else \
        ("unshare", "--user", "--map-root-user", "--mount", "--propagation", "private")
    probe = subprocess.run([*prefix, "mount", "-t", "tmpfs", "tmpfs", str(full)], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a file system in a private mount namespace here: {probe.stderr.decode().strip()}")
    result = python(code, {"NUMBA_METAL_CACHE_DIR": str(tmp_path / "cache")}, prefix)
    assert result.returncode == 0, result.stderr
    r = json.loads(result.stdout.strip().splitlines()[-1])
    assert r["full"] is not None and r["full"].startswith("MetalRuntimeError: ")
    assert f"the temporary directory {full} is full" in r["full"] and "TMPDIR" in r["full"]
    assert r["room"] is None and r["left"] == []

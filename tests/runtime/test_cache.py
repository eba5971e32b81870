"""The compiled-object cache: in-process reuse, reuse from disk in a new process, corrupt entries rebuilt."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

DEVICES = ("cpu",)  # the CPU device's compiled-object cache

CHILD = textwrap.dedent("""
    import json, sys
    from numba_metal import runtime as rt
    cpu = [d for d in rt.list_devices() if d.kind == "cpu"][0]
    dev = rt.open_device(cpu.index)
    src = "#include <metal_stdlib>\\nusing namespace metal;\\n" \\
          "kernel void cached(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = %s; }\\n"
    p = dev.compile(src % sys.argv[1], "cached")
    q = dev.new_queue()
    b = dev.new_buffer(16)
    q.dispatch(p, [b], [0], [0], None, 31, [], (1, 1, 1), (4, 1, 1))
    q.wait()
    import ctypes
    vals = list((ctypes.c_int * 4).from_address(b.address))
    print(json.dumps({"from_cache": p.from_cache, "vals": vals, "stats": dev.stats()}))
""")


def run_child(cache_dir: Path, expr: str) -> dict:
    import json
    env = dict(os.environ, NUMBA_METAL_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", CHILD, expr], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_same_source_compiles_once_in_process(device):
    src = "#include <metal_stdlib>\nkernel void again(device int* x [[buffer(0)]]) { x[0] = 41; }\n"
    before = device.stats()
    p1 = device.compile(src, "again")
    p2 = device.compile(src, "again")
    after = device.stats()
    assert p2.from_cache
    assert after["pipelines_compiled"] - before["pipelines_compiled"] <= 1
    assert after["pipelines_from_cache"] - before["pipelines_from_cache"] >= 1
    assert p1.kernel_name == p2.kernel_name


def test_disk_cache_serves_a_new_process_and_rebuilds_corrupt_entries(tmp_path):
    first = run_child(tmp_path, "int(i) * 3")
    assert not first["from_cache"] and first["stats"]["pipelines_compiled"] == 1
    assert first["vals"] == [0, 3, 6, 9]
    objects = tmp_path / "cpu-objects"
    assert (os.stat(tmp_path).st_mode & 0o777) == 0o700
    entries = list(objects.glob("*.nmo"))
    assert len(entries) == 1
    assert len(list(objects.glob("*.pch"))) == 1  # the precompiled shim, cached like objects

    second = run_child(tmp_path, "int(i) * 3")
    assert second["from_cache"] and second["stats"]["pipelines_compiled"] == 0
    assert second["stats"]["pipelines_from_cache"] == 1 and second["vals"] == [0, 3, 6, 9]

    data = bytearray(entries[0].read_bytes())
    data[len(data) // 2] ^= 0xFF  # the recorded SHA-256 no longer matches: must not be loaded
    entries[0].write_bytes(bytes(data))
    third = run_child(tmp_path, "int(i) * 3")
    assert not third["from_cache"] and third["vals"] == [0, 3, 6, 9]
    fourth = run_child(tmp_path, "int(i) * 3")
    assert fourth["from_cache"]


def test_unsafe_cache_directory_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    result = run_child(shared, "5")
    assert result["vals"] == [5, 5, 5, 5]
    assert not (shared / "cpu-objects").exists() or not list((shared / "cpu-objects").glob("*.nmo"))
    again = run_child(shared, "5")
    assert not again["from_cache"]


def test_concurrent_processes_share_one_valid_entry(tmp_path):
    import json
    env = dict(os.environ, NUMBA_METAL_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, "int(i) + 100"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["vals"] == [100, 101, 102, 103]
    assert len(list((tmp_path / "cpu-objects").glob("*.nmo"))) == 1
    assert not list((tmp_path / "cpu-objects").glob(".*.tmp"))
    assert run_child(tmp_path, "int(i) + 100")["from_cache"]

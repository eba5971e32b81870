"""The compiled-object cache: in-process reuse, reuse from disk in a new process, corrupt entries rebuilt,
and the checks that keep it from loading native code anyone else could have planted (ObjectCache.swift)."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


def run_child(cache_dir: Path, expr: str, extra_env: dict | None = None) -> dict:
    import json
    env = dict(os.environ, NUMBA_METAL_CACHE_DIR=str(cache_dir), **(extra_env or {}))
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


def test_a_shim_header_rebuilt_at_the_same_path_gets_a_new_precompiled_header(tmp_path):
    """The precompiled shim's key includes the header file's identity and modification time: a header
    replaced by an identical copy at the same path (a reinstall, a re-clone) must not reuse the .pch built
    from the old file. clang (-fno-validate-pch) would then not match a source's own `#include
    <metal_stdlib>` to it, and hand-written MSL failed with "redefinition" errors."""
    shim = tmp_path / "shim"
    shutil.copytree(Path(__file__).resolve().parents[2] / "Sources" / "MetalRuntime" / "CPUDevice" / "shim", shim)
    cache = tmp_path / "cache"
    env = {"NUMBA_METAL_SHIM_DIR": str(shim)}
    assert run_child(cache, "int(i) * 5", env)["vals"] == [0, 5, 10, 15]
    assert len(list((cache / "cpu-objects").glob("*.pch"))) == 1
    header = shim / "metal_stdlib"
    fresh = shim / "metal_stdlib.new"
    fresh.write_bytes(header.read_bytes())       # same content; a new file, so a new inode and mtime
    os.replace(fresh, header)
    second = run_child(cache, "int(i) * 7", env)  # another source: compiled, not an object from the cache
    assert not second["from_cache"] and second["vals"] == [0, 7, 14, 21]
    assert len(list((cache / "cpu-objects").glob("*.pch"))) == 2


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


# -- what the cache loads: only entries nobody else can have written, each bound to its key -------------------

A, B = "int(i) * 3", "int(i) + 50"
A_VALS, B_VALS = [0, 3, 6, 9], [50, 51, 52, 53]


def entry_of(cache_dir: Path, expr: str) -> Path:
    """Compiles expr in a new process; the entry it added."""
    objects = cache_dir / "cpu-objects"
    before = set(objects.glob("*.nmo")) if objects.exists() else set()
    assert not run_child(cache_dir, expr)["from_cache"]
    (added,) = set(objects.glob("*.nmo")) - before
    return added


def assert_rebuilt_and_replaced(cache_dir: Path, expr: str, vals: list, entry: Path) -> None:
    """expr's entry was not used (the kernel was compiled and is right), and a sound one took its place."""
    result = run_child(cache_dir, expr)
    assert not result["from_cache"] and result["vals"] == vals
    st = os.lstat(entry)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
    assert entry.read_bytes().startswith(b"NMOBJ2 " + entry.stem.encode() + b" ")
    assert run_child(cache_dir, expr)["from_cache"]


def test_another_kernels_entry_under_this_key_is_not_loaded(tmp_path):
    a, b = entry_of(tmp_path, A), entry_of(tmp_path, B)
    shutil.copyfile(a, b)  # a whole valid entry, of another kernel
    assert_rebuilt_and_replaced(tmp_path, B, B_VALS, b)
    untouched = run_child(tmp_path, A)
    assert untouched["from_cache"] and untouched["vals"] == A_VALS


def test_a_foreign_object_with_a_self_consistent_header_is_not_loaded(tmp_path):
    b = entry_of(tmp_path, B)
    marker = tmp_path / "constructor_ran"
    source = tmp_path / "foreign.c"
    source.write_text(f'#include <fcntl.h>\n__attribute__((constructor)) static void planted(void) '
                      f'{{ creat("{marker}", 0600); }}\n')
    subprocess.run([os.environ.get("NUMBA_METAL_CLANG") or shutil.which("clang++") or "clang", "-x", "c", "-shared", "-fPIC", "-o", str(tmp_path / "foreign.so"), str(source)], check=True)
    foreign = (tmp_path / "foreign.so").read_bytes()
    for header in (b"NMOBJ1 " + hashlib.sha256(foreign).hexdigest().encode() + b"\n",  # the hash of its own bytes
                   b"NMOBJ2 " + b.stem.encode() + b" " + hashlib.sha256(foreign).hexdigest().encode() + b"\n"):
        b.write_bytes(header + foreign)
        assert_rebuilt_and_replaced(tmp_path, B, B_VALS, b)
        assert not marker.exists(), "the planted object was loaded: its constructor ran"


def test_a_symlinked_entry_is_not_followed(tmp_path):
    b = entry_of(tmp_path, B)
    elsewhere = tmp_path / "elsewhere.nmo"
    shutil.copyfile(b, elsewhere)  # a valid entry for this very key, reached through a symlink
    b.unlink()
    b.symlink_to(elsewhere)
    assert_rebuilt_and_replaced(tmp_path, B, B_VALS, b)


def test_an_entry_others_can_write_is_not_loaded(tmp_path):
    b = entry_of(tmp_path, B)
    os.chmod(b, 0o666)
    assert_rebuilt_and_replaced(tmp_path, B, B_VALS, b)
    os.chmod(b, 0o620)
    assert_rebuilt_and_replaced(tmp_path, B, B_VALS, b)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_an_entry_owned_by_another_user_is_not_loaded(tmp_path):
    b = entry_of(tmp_path, B)
    os.chown(b, 12345, 12345)
    assert_rebuilt_and_replaced(tmp_path, B, B_VALS, b)


def test_a_fifo_in_place_of_an_entry_does_not_block(tmp_path):
    b = entry_of(tmp_path, B)
    b.unlink()
    os.mkfifo(b, 0o600)
    assert_rebuilt_and_replaced(tmp_path, B, B_VALS, b)


def unused(cache_dir: Path, objects: Path) -> None:
    """Kernels are compiled and right, and nothing is read from or stored into objects."""
    before = sorted(p.name for p in objects.iterdir())
    for _ in range(2):
        result = run_child(cache_dir, B)
        assert not result["from_cache"] and result["vals"] == B_VALS
    assert sorted(p.name for p in objects.iterdir()) == before


def test_a_symlinked_object_directory_is_not_used(tmp_path):
    real = tmp_path / "real"
    entry_of(real, B)  # a valid entry of B in a private directory...
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / "cpu-objects").symlink_to(real / "cpu-objects")  # ...reached through a symlink
    unused(cache, real / "cpu-objects")


def test_a_symlinked_cache_directory_is_not_used(tmp_path):
    real = tmp_path / "real"
    entry_of(real, B)
    (tmp_path / "link").symlink_to(real)
    unused(tmp_path / "link", real / "cpu-objects")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_an_object_directory_owned_by_another_user_is_not_used(tmp_path):
    entry_of(tmp_path, B)
    os.chown(tmp_path / "cpu-objects", 12345, 12345)
    unused(tmp_path, tmp_path / "cpu-objects")

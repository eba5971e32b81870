"""Regression: a disk-cache entry whose digest verifies but whose contents cannot be used raised instead of
being a miss, as numba_metal/host/cache.py's docstring promises: a dependency record that is not one (a
``TypeError`` out of the launch), JSON nested too deeply (``RecursionError``), an absurd ``arg_size`` (the
launch tried to allocate it), MSL the device's compiler refuses (every launch failed). Each is now
ignored, the kernel is compiled again from its source and the entry rewritten.
"""

import hashlib
import json

import numpy as np
import pytest

from numba_metal import metal


def fill(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = i * 2.0 + 1.0


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_METAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "kernels"


def launch():
    """``fill`` through a new dispatcher, as a new process would launch it: (result, from the cache?)."""
    kernel = metal.jit(cache=True)(fill)
    out = metal.device_array(8, np.float32)
    kernel[1, 32](out)
    (specialization,) = kernel.specializations.values()
    return out.copy_to_host().tolist(), specialization.from_cache


EXPECTED = [i * 2.0 + 1.0 for i in range(8)]


def rewrite(path, change):
    """Rewrite entry ``path`` with its JSON payload changed by ``change`` (text -> text), signed again: the
    digest of the changed entry verifies (the entry format: ``NMKC1 <sha256 of payload>\\n`` + payload)."""
    data = path.read_bytes()
    header, payload = data.split(b"\n", 1)
    assert header.startswith(b"NMKC1 ")
    payload = change(payload.decode()).encode()
    path.write_bytes(b"NMKC1 " + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)


def edit(update):
    def change(text):
        entry = json.loads(text)
        update(entry)
        return json.dumps(entry)
    return change


def deeply_nested(text):
    entry = json.loads(text)
    entry["deps"] = "NESTED"
    return json.dumps(entry).replace('"NESTED"', "[" * 100_000 + "]" * 100_000)


DAMAGE = {
    "a dependency record that is not one": edit(lambda e: e.update(deps=[7])),
    "a dependency of an unknown kind": edit(lambda e: e.update(deps=[["?"]])),
    "JSON nested too deeply": deeply_nested,
    "an absurd arg_size": edit(lambda e: e["abi"].update(arg_size=2**62)),
    "an arg_size its fields do not make": edit(lambda e: e["abi"].update(arg_size=e["abi"]["arg_size"] + 64)),
    "a buffer slot Metal does not have": edit(lambda e: e["abi"]["params"][0].__setitem__(1, 99)),
    "MSL the compiler refuses": edit(lambda e: e.update(msl="this is not MSL")),
    "an ABI that is not an object": edit(lambda e: e.update(abi=["not", "an", "abi"])),
}


@pytest.mark.unsanitized("damages a disk-cache entry, which a sanitizing kernel never enters")
@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_an_entry_that_verifies_but_cannot_be_used_is_a_miss_and_is_rebuilt(cache_dir, damage):
    assert launch() == (EXPECTED, False)
    assert launch() == (EXPECTED, True)
    (path,) = cache_dir.glob("*.nmk")
    rewrite(path, DAMAGE[damage])
    assert launch()[0] == EXPECTED                   # compiled again (the MSL case: after the cached MSL failed)
    assert launch() == (EXPECTED, True)              # from the rewritten entry


# The CPU device's own cache (Sources/MetalRuntime/CPUDevice/ObjectCache.swift): `<cache>/cpu-objects`, an
# entry is `NMOBJ2 <key> <digest>\n<bytes>` with digest = SHA-256("numba-metal cache entry 2\0<kind>\0<key>\0"
# + bytes). A precompiled shim header that verifies but that clang refuses made every compile fail.

CPU_PROGRAM = """
import sys
import numpy as np
from numba_metal import metal

@metal.jit
def k(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = i * {scale}.0

out = np.zeros(4, np.float32)
k[1, 4](out)
print(out.tolist())
"""


def _run_cpu_program(env, tmp_path, scale):
    import subprocess
    import sys
    script = tmp_path / f"prog{scale}.py"
    script.write_text(CPU_PROGRAM.format(scale=scale))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)


def _cpu_env(tmp_path):
    import os
    return dict(os.environ, NUMBA_METAL_DEVICE="cpu", NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"),
                TMPDIR=str(tmp_path / "tmp"))


def test_a_precompiled_header_clang_refuses_is_a_miss_and_is_rebuilt(tmp_path):
    (tmp_path / "tmp").mkdir()
    env = _cpu_env(tmp_path)
    first = _run_cpu_program(env, tmp_path, 2)
    assert first.returncode == 0 and first.stdout.strip() == "[0.0, 2.0, 4.0, 6.0]", first.stderr[-3000:]
    entries = sorted((tmp_path / "cache" / "cpu-objects").glob("*.pch"))
    assert entries, "no precompiled header was cached"
    for entry in entries:                     # garbage with a valid digest
        key = entry.stem
        garbage = b"this is not a precompiled header" * 8
        digest = hashlib.sha256(b"numba-metal cache entry 2\0pch\0" + key.encode() + b"\0" + garbage).hexdigest()
        entry.write_bytes(f"NMOBJ2 {key} {digest}\n".encode() + garbage)
    second = _run_cpu_program(env, tmp_path, 3)   # a new kernel: it must be compiled, with the bad header
    assert second.returncode == 0 and second.stdout.strip() == "[0.0, 3.0, 6.0, 9.0]", second.stderr[-3000:]
    third = _run_cpu_program(env, tmp_path, 5)    # the header was rebuilt: a real one is cached again
    assert third.returncode == 0 and third.stdout.strip() == "[0.0, 5.0, 10.0, 15.0]", third.stderr[-3000:]
    rebuilt = [e.read_bytes() for e in sorted((tmp_path / "cache" / "cpu-objects").glob("*.pch"))]
    assert rebuilt and all(b"this is not a precompiled header" not in r for r in rebuilt)


def test_build_directories_of_dead_processes_are_removed(tmp_path):
    import subprocess
    (tmp_path / "tmp").mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()                                   # a process id that no longer exists
    left = tmp_path / "tmp" / f"numba-metal-build-{dead.pid}-abc123"
    left.mkdir()
    (left / "kernel.cpp").write_text("// the source a killed process left behind")
    alive = tmp_path / "tmp" / f"numba-metal-build-1-xyz789"   # process 1 exists: kept
    alive.mkdir()
    unrelated = tmp_path / "tmp" / "numba-metal-build-notapid"
    unrelated.mkdir()
    env = _cpu_env(tmp_path)
    r = _run_cpu_program(env, tmp_path, 7)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not left.exists()
    assert alive.exists() and unrelated.exists()
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == sorted([alive.name, unrelated.name])

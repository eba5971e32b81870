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


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_an_entry_that_verifies_but_cannot_be_used_is_a_miss_and_is_rebuilt(cache_dir, damage):
    assert launch() == (EXPECTED, False)
    assert launch() == (EXPECTED, True)
    (path,) = cache_dir.glob("*.nmk")
    rewrite(path, DAMAGE[damage])
    assert launch()[0] == EXPECTED                   # compiled again (the MSL case: after the cached MSL failed)
    assert launch() == (EXPECTED, True)              # from the rewritten entry

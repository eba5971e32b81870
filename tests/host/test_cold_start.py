"""Cold start: importing numba-metal does no device or compiler work, and the first compile in a
process builds only what it needs (numba-metal's typing context; not Numba's CPU target, not cffi's C
parser, not numba.typed). Each check runs in a fresh interpreter. Times are measured by
benchmarks/perf_startup.py, not asserted here."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _fresh(code: str) -> dict:
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", PYTHONPATH=REPO)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


REPORT = """
def loaded(*names):
    return sorted(m for m in sys.modules if m.split(".")[0] in names)
def runtime_loaded():
    loader = sys.modules.get("numba_metal.runtime._loader")
    return loader is not None and loader._loaded is not None
def cpu_target_built():
    registry = sys.modules.get("numba.core.registry")
    return registry is not None and any(k.startswith("_toplevel") for k in vars(registry.cpu_target))
print(json.dumps({"numba": loaded("numba", "llvmlite"), "cffi": loaded("cffi", "pycparser", "_cffi_backend"),
                  "runtime": runtime_loaded(), "cpu_target": cpu_target_built(),
                  "numba_typed": "numba.typed.typedlist" in sys.modules,
                  "numba_cffi_support": "numba.core.typing.cffi_utils" in sys.modules}))
"""


def test_import_loads_neither_numba_nor_the_runtime():
    got = _fresh("import json, sys\nimport numba_metal\nfrom numba_metal import metal\n" + REPORT)
    assert got["numba"] == [] and got["cffi"] == [] and not got["runtime"]


def test_defining_kernels_and_device_functions_compiles_nothing():
    got = _fresh("import json, sys\nfrom numba_metal import metal\n"
                 "@metal.jit\ndef k(a):\n    a[0] = 1\n"
                 "@metal.jit(device=True)\ndef f(x):\n    return x\n"
                 "@metal.jit(cache=True)\ndef c(a):\n    a[0] = 1\n" + REPORT)
    assert got["numba"] == [] and not got["runtime"]


def test_device_arrays_load_the_runtime_but_not_numba():
    got = _fresh("import json, sys\nimport numpy as np\nfrom numba_metal import metal\n"
                 "d = metal.to_device(np.arange(4, dtype=np.float32))\nassert d.copy_to_host()[3] == 3\n"
                 + REPORT)
    assert got["runtime"] and got["numba"] == []


def test_the_first_compile_builds_only_numba_metal_typing():
    got = _fresh("import json, sys\nfrom numba_metal import metal\n"
                 "def add(a, b, out):\n    i = metal.grid(1)\n    if i < out.size:\n        out[i] = a[i] + b[i]\n"
                 "src = metal.compile_msl(add, 'void(float32[:], float32[:], float32[:])')\n"
                 "assert 'kernel void' in src\n" + REPORT)
    assert got["numba"], "compiling uses Numba's front end"
    assert not got["cpu_target"], "Numba's CPU target (LLVM) must not be built"
    assert not got["numba_typed"] and not got["numba_cffi_support"]
    assert not got["runtime"] and got["cffi"] == [], "compiling needs no device"


WARM_KERNEL = """
import json, sys
import numpy as np
from numba_metal import metal

@metal.jit(cache=True)
def scale(a, out, x):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] * x

out = metal.device_array(4, np.float32)
scale[1, 32](metal.to_device(np.arange(4, dtype=np.float32)), out, np.float32(3))
assert out.copy_to_host().tolist() == [0.0, 3.0, 6.0, 9.0]
print(json.dumps({"from_cache": scale.kernel_for_args((out, out, np.float32(3))).from_cache,
                  "loaded": sorted(m for m in ("numba", "hashlib", "_hashlib", "numba_metal.compiler.msl",
                                               "numba_metal.compiler.codegen") if m in sys.modules)}))
"""


@pytest.mark.unsanitized("launches from the disk cache, which a sanitizing kernel never enters")
def test_a_launch_from_the_warm_disk_cache_loads_neither_numba_nor_openssl_nor_the_code_generator(tmp_path):
    """What a process whose kernel comes from the disk cache imports is what start-up pays for: not Numba,
    not hashlib (which loads OpenSSL: CPython's own SHA-256 and BLAKE2 serve, runtime/digests.py), not the
    MSL spelling module or the code generator."""
    (tmp_path / "warm.py").write_text(WARM_KERNEL)
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", PYTHONPATH=REPO, NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        res = subprocess.run([sys.executable, str(tmp_path / "warm.py")], env=env, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stderr
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert not runs[0]["from_cache"] and "numba" in runs[0]["loaded"]
    assert runs[1] == {"from_cache": True, "loaded": []}

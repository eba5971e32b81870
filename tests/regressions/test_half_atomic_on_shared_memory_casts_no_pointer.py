"""fp16.atomicAdd on shared memory (issue 26 item 6a): the CAS loop found the half's place in its 32-bit word
with ``reinterpret_cast<ulong>`` of a ``threadgroup half*``, a pointer-to-integer cast that Apple's compiler
may refuse for threadgroup pointers (the CPU device's clang accepts it, so only the MSL shows it). The place
now comes from the half's index, by pointer subtraction, legal in every address space; views of shared
half arrays, which may start inside a word, are refused with the fix to make."""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError


def shared_sum(a, out):
    sm = metal.shared.array((3, 5), np.float16)
    i = metal.threadIdx.x
    if i < 15:
        sm[i // 5, i % 5] = 0
    metal.syncthreads()
    metal.fp16.atomicAdd(sm, (i % 3, i % 5), a[i])
    metal.syncthreads()
    if i < 15:
        out[i] = sm[i // 5, i % 5]


def row_view(a, out):
    sm = metal.shared.array((3, 5), np.float16)
    row = sm[1]
    metal.fp16.atomicAdd(row, metal.threadIdx.x % 5, a[0])
    out[0] = row[0]


def _preprocessed(source: str) -> str:
    """The kernel source with its macros expanded (its #include lines dropped: only the prelude's macros
    matter here), by the C preprocessor the CPU device's clang or the system provides."""
    tools = [os.environ.get("NUMBA_METAL_CLANG"), shutil.which("clang++"), shutil.which("clang"),
             shutil.which("cpp")]
    tool = next((t for t in tools if t), None)
    assert tool, "no C preprocessor found: set NUMBA_METAL_CLANG to clang++ (the CPU device needs it too)"
    text = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#include"))
    args = [tool, "-E", "-P", "-x", "c++", "-"] if not tool.endswith("cpp") else [tool, "-P", "-x", "c++", "-"]
    return subprocess.run(args, input=text, capture_output=True, text=True, check=True).stdout


def _body(text: str, name: str) -> str:
    start = re.search(rf"\b{name}\s*\([^)]*\)\s*{{", text)
    assert start, f"{name} is not defined"
    depth, i = 0, start.end() - 1
    while True:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start.start():i + 1]
        i += 1


def test_the_shared_memory_helper_casts_no_pointer_to_an_integer():
    source = metal.compile_msl(shared_sum, "void(float16[:], float16[:])")
    assert "nm_atomic_hadd_tg(" in source
    helper = _body(_preprocessed(source), "nm_atomic_hadd_tg")
    assert "threadgroup half*" in helper
    assert "reinterpret_cast" not in helper and "ulong" not in helper, helper


def test_shared_memory_results_equal_numpy():
    a = np.arange(64, dtype=np.float16) / 8
    out = np.zeros(15, np.float16)
    metal.jit(shared_sum)[1, 64](metal.to_device(a), d_out := metal.to_device(out))
    want = np.zeros((3, 5), np.float32)
    for i in range(64):
        want[i % 3, i % 5] += np.float32(a[i])
    np.testing.assert_allclose(d_out.copy_to_host().reshape(3, 5), want, rtol=2e-3)


def test_a_view_of_a_shared_half_array_is_refused_with_the_fix():
    with pytest.raises(UnsupportedFeatureError, match=r"view of a shared float16 array.*sm, \(i, j\)"):
        metal.compile_msl(row_view, "void(float16[:], float16[:])")

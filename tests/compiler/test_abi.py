"""The kernel ABI (numba_metal/compiler/abi.py): one owner for the argument layout, from which come the MSL
signature, the parameters the runtime receives and the disk cache's form (the host's encoder generated from
it: tests/host/test_encoder.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from numba.core import types

import msl_lint

from numba_metal import metal, runtime
from numba_metal.compiler import abi
from numba_metal.compiler.driver import compile_kernel
from numba_metal.errors import UnsupportedFeatureError
from numba_metal.runtime import PARAM_ARGUMENT_BLOCK, PARAM_BUFFER, PARAM_BUILTIN, PARAM_THREADGROUP

f32 = types.float32


def _abi(fn, *argtypes, debug=False) -> abi.KernelABI:
    return compile_kernel(fn, argtypes, debug=debug).abi


def _signature_params(source: str, entry: str) -> list[str]:
    header = source[source.index(f"kernel void {entry}("):]
    return [p.strip() for p in header[header.index("(") + 1:header.index(") {")].split(", ")]


def test_the_msl_signature_declares_exactly_the_parameters_the_runtime_receives():
    def k(a, b, n, t):
        s = metal.shared.array(0, np.float32)
        i = metal.grid(1)
        if i < a.size:
            s[0] = n
            a[i] = b[i, 0] + t[1]

    compiled = compile_kernel(k, (f32[::1], types.Array(f32, 2, "A"), types.int16, types.UniTuple(types.int32, 2)),
                              debug=True)
    kabi = compiled.abi
    params = kabi.params
    declared = _signature_params(compiled.source, kabi.entry_name)
    assert len(declared) == len(params)
    attribute = {PARAM_BUFFER: "buffer", PARAM_ARGUMENT_BLOCK: "buffer", PARAM_THREADGROUP: "threadgroup"}
    for text, p in zip(declared, params):
        expected = f"[[{p.builtin}]]" if p.kind == PARAM_BUILTIN else f"[[{attribute[p.kind]}({p.index})]]"
        assert text == f"{p.type} {p.name} {expected}"
    kinds = [p.kind for p in params]
    assert kinds[:4] == [PARAM_BUFFER, PARAM_BUFFER, PARAM_ARGUMENT_BLOCK, PARAM_BUFFER]  # arrays, struct, errors
    assert kinds[4] == PARAM_THREADGROUP and set(kinds[5:]) == {PARAM_BUILTIN}
    assert params[2].size == kabi.arg_size
    # The 'A' array carries an origin; the C one does not; the struct holds the arrays' members first.
    names = [f.name for f in kabi.fields]
    assert names[:2] == ["a0_shape0", "a0_stride0"] and "a1_origin" in names and "a0_origin" not in names
    assert names.index("a1_origin") < names.index("s2")
    assert f"struct {abi.struct_name(kabi.entry_name)} {{" in compiled.source


@pytest.mark.parametrize("scalars, size", [
    ((types.int32, types.int16), 8),      # 6 bytes of members, aligned to 4: issue 11's missing padding
    ((types.int16, types.uint8), 4),
    ((types.float16, types.boolean, types.int8), 4),
    ((types.int64, types.float32), 16),
    ((types.boolean,), 1),
])
def test_the_argument_struct_is_padded_to_its_alignment_as_msl_lays_it_out(scalars, size):
    params = ", ".join(f"x{i}" for i in range(len(scalars)))
    namespace = {"metal": metal}
    exec(f"def k({params}):\n    y = {' + '.join(f'x{i}' for i in range(len(scalars)))}\n", namespace)
    kabi = _abi(namespace["k"], *scalars)
    members = sum(f.size for f in kabi.fields)
    assert kabi.arg_size == size and kabi.arg_size >= members
    assert kabi.arg_size % max(f.size for f in kabi.fields) == 0


def test_a_kernel_with_an_unaligned_struct_size_runs_on_the_device():
    # The CPU device asserts that the MSL struct's size equals what the host packs.
    @metal.jit
    def k(out, a, b):
        out[0] = a + b

    out = np.zeros(1, np.float32)
    k[1, 1](out, np.int32(40), np.int16(2))
    assert out[0] == 42


def test_the_abi_round_trips_through_the_disk_cache_form_and_refuses_anything_else():
    def k(a, n):
        a[0, 0, 0] = n

    kabi = _abi(k, types.Array(f32, 3, "A"), types.int64, debug=True)
    assert abi.KernelABI.from_json(json.loads(json.dumps(kabi.to_json()))) == kabi
    bad = kabi.to_json()
    bad["fields"][0][1] = "double"
    with pytest.raises(ValueError):
        abi.KernelABI.from_json(bad)
    bad = kabi.to_json()
    bad["arg_size"] = 1
    with pytest.raises(ValueError):
        abi.KernelABI.from_json(bad)


def test_arrays_the_kernel_never_writes_are_declared_const_device():
    # issue 28 item 4: read-only buffers are `device const T*` (Metal may cache their loads); anything that
    # may write an array (a store, an atomic, a device function that stores) keeps it writable
    @metal.jit(device=True)
    def store(arr, v):
        arr[0] = v

    def k(read, stored, atomic, through_call, n):
        v = read[0] + read.shape[0]
        stored[0] = v
        metal.atomic.add(atomic, 0, v)
        store(through_call, v)

    kabi = _abi(k, *(types.Array(f32, 1, "C"),) * 4, types.int64)
    assert [a.read_only for a in kabi.arrays] == [True, False, False, False]
    buffers = [p.type for p in kabi.params if p.kind == PARAM_BUFFER]
    assert buffers == ["device const float*", "device float*", "device float*", "device float*"]
    assert abi.KernelABI.from_json(json.loads(json.dumps(kabi.to_json()))) == kabi
    a, out = np.arange(4, dtype=np.float32), np.zeros(1, np.float32)
    metal.jit(k)[1, 1](a, out, np.zeros(1, np.float32), np.zeros(1, np.float32), 1)
    assert out[0] == 4


def test_metal_limits_are_checked_when_the_kernel_compiles():
    names = [f"x{i}" for i in range(520)]
    namespace = {}
    exec(f"def k(out, {', '.join(names)}):\n    out[0] = x0\n", namespace)
    with pytest.raises(UnsupportedFeatureError, match="4096"):
        compile_kernel(namespace["k"], (types.int64[:],) + (types.int64,) * len(names))
    exec(f"def k(out, {', '.join(names[:31])}):\n    out[0] = 1\n", namespace)
    with pytest.raises(UnsupportedFeatureError, match="buffer slots"):
        compile_kernel(namespace["k"], (types.int64[:],) * 32)


def test_every_kernel_is_compiled_with_its_abi_handed_to_the_runtime(monkeypatch):
    calls = []
    compile_pipeline = runtime.Device.compile

    def spy(device, source, name, **options):
        calls.append(options)
        return compile_pipeline(device, source, name, **options)

    # On the class: an instance attribute would outlive the test (monkeypatch restores it as one).
    monkeypatch.setattr(runtime.Device, "compile", spy)

    @metal.jit
    def k(out, x):
        out[metal.grid(1)] = x

    out = metal.device_array(4, np.float32)
    k[1, 4](out, np.float32(3))
    (spec,) = k.specializations.values()
    assert tuple(calls[-1]["params"]) == spec.abi.params
    assert calls[-1]["language_version"] == spec.abi.language_version == 0
    np.testing.assert_array_equal(out.copy_to_host(), 3)


# -- threadfence: memory shared through fences is coherent(device) (MSL 3.2) ------------------------------


@metal.jit(device=True)
def _publish(partials, i, value):
    partials[i] = value
    metal.threadfence()


@metal.jit
def last_block_sum(values, partials, counter, out):
    """numba.cuda's pattern: each block writes its partial sum, fences, counts itself; the last one sums."""
    s = metal.shared.array(1, np.float32)
    is_last = metal.shared.array(1, np.int32)
    t = metal.threadIdx.x
    if t == 0:
        s[0] = 0.0
    metal.syncthreads()
    metal.atomic.add(s, 0, values[metal.grid(1)])
    metal.syncthreads()
    if t == 0:
        _publish(partials, metal.blockIdx.x, s[0])
        is_last[0] = metal.atomic.add(counter, 0, 1) == metal.gridDim.x - 1
    metal.syncthreads()
    if is_last[0] and t == 0:
        total = 0.0
        for b in range(metal.gridDim.x):
            total += partials[b]
        out[0] = total


def test_a_kernel_that_fences_declares_its_device_memory_coherent_and_asks_for_msl_3_2():
    blocks, threads = 16, 64
    values = np.arange(blocks * threads, dtype=np.float32) % 7
    partials = np.zeros(blocks, np.float32)
    counter = np.zeros(1, np.int32)
    out = np.zeros(1, np.float32)
    last_block_sum[blocks, threads](values, partials, counter, out)
    assert out[0] == values.sum()
    (spec,) = last_block_sum.specializations.values()
    assert spec.abi.language_version == 320 and all(a.coherent for a in spec.abi.arrays)
    for a in spec.abi.arrays:
        assert f"coherent(device) device {a.element}* nm_p{a.arg} [[buffer({a.slot})]]" in spec.msl
    assert re.search(r"nm_arr<coherent\(device\) device float\*, 1>", spec.msl)   # device functions too
    # The MSL lint's coherent-device and language-version rules (every compile of the suite is linted too).
    assert [str(f) for f in msl_lint.lint(spec.msl, spec.abi.language_version, spec.abi.params)] == []


def test_atomics_on_coherent_memory_use_the_coherent_compare_and_swap_loops():
    @metal.jit
    def k(a, m, c):
        i = metal.grid(1)
        metal.atomic.max(m, 0, a[i])      # a compare-and-swap loop of the prelude
        metal.atomic.inc(c, 0, 1000)      # another
        metal.atomic.add(m, 1, a[i])      # MSL's atomic_fetch_add on a coherent pointer
        metal.threadfence()

    a = np.arange(128, dtype=np.float32)
    m, c = np.zeros(2, np.float32), np.zeros(1, np.uint32)
    k[2, 64](a, m, c)
    assert m.tolist() == [127.0, a.sum()] and c[0] == 128
    (spec,) = k.specializations.values()
    assert "nm_atomic_fmax_cdev(" in spec.msl and "nm_atomic_inc_cdev(" in spec.msl
    assert [str(f) for f in msl_lint.lint(spec.msl, spec.abi.language_version, spec.abi.params)] == []


def test_a_kernel_fencing_only_its_threadgroup_keeps_plain_device_memory_and_asks_for_msl_3_2():
    """Device memory is coherent within a threadgroup (MSL §4.8); atomic_thread_fence is MSL 3.2."""
    def k(a):
        metal.threadfence_block()
        a[0] = 1.0

    compiled = compile_kernel(k, (f32[:],))
    assert "coherent" not in compiled.source and compiled.abi.language_version == 320
    assert [str(f) for f in msl_lint.lint(compiled.source, 320, compiled.abi.params)] == []


def test_a_kernel_without_fences_asks_for_no_msl_version():
    def k(a):
        metal.syncthreads()
        a[0] = 1.0

    compiled = compile_kernel(k, (f32[:],))
    assert "coherent" not in compiled.source and compiled.abi.language_version == 0

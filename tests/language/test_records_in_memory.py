"""Records (NumPy structured dtypes) in shared, local and constant memory, and nested records, checked
against NumPy on the same data.

numba.cuda allows ``cuda.shared.array(n, dtype=rec)``, ``cuda.local.array(n, dtype=rec)`` and
``cuda.const.array_like(records)`` (its tests: cudapy/test_sm.py ``test_shared_recarray``,
cudapy/test_constmem.py ``test_const_record*``), and records whose fields are records. A record value is a
reference to its memory, so an element of a shared array is a threadgroup record, whose nested arrays and
records are threadgroup memory too.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelCompilationError, UnsupportedFeatureError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# numba.cuda's dtypes (test_record_dtype.py, test_constmem.py).
recordwith2darray = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])
const_record_align = np.dtype([("a", np.uint8), ("b", np.uint8), ("x", np.uint8), ("y", np.uint32),
                               ("z", np.uint8)], align=True)
# A nested record, with a float64 field (exact emulated float64) and a complex64 one.
inner = np.dtype([("a", np.int16), ("b", np.float32)], align=True)
outer = np.dtype([("x", np.int32), ("r", inner), ("z", np.float64), ("c", np.complex64)], align=True)


def recarray_sample(n=32):
    arr = np.zeros(n, dtype=recordwith2darray)
    for x in range(n):
        arr[x]["i"] = x
        arr[x]["j"] = np.arange(6, dtype=np.float32).reshape(3, 2) * x
    return arr


def outer_sample(n=8):
    arr = np.zeros(n, dtype=outer)
    arr["x"] = np.arange(n)
    arr["r"]["a"] = np.arange(n) * 3
    arr["r"]["b"] = np.arange(n) / 4
    arr["z"] = np.arange(n) / 3
    arr["c"] = np.arange(n) * (1 + 0.5j)
    return arr


NTHREADS = 16


@metal.jit
def use_sm_chunk_copy(x, y):
    # numba.cuda's test_shared_recarray kernel, renamed, plus writes to the records in shared memory.
    sm = metal.shared.array(NTHREADS, dtype=recordwith2darray)
    tx = metal.threadIdx.x
    bx = metal.blockIdx.x
    bd = metal.blockDim.x
    i = bx * bd + tx
    if i < len(x):
        sm[tx] = x[i]
        sm[tx].i += 100
        sm[tx]["j"][1, 1] = -sm[tx].j[2, 0]
    metal.syncthreads()
    if tx == 0:
        for j in range(NTHREADS):
            y[bd * bx + j] = sm[j]


def test_shared_array_of_records_with_a_nested_array():
    arr = recarray_sample()
    out = np.zeros_like(arr)
    use_sm_chunk_copy[2, NTHREADS](arr, out)
    expected = arr.copy()
    expected["i"] += 100
    expected["j"][:, 1, 1] = -arr["j"][:, 2, 0]
    np.testing.assert_array_equal(out, expected)


@metal.jit
def local_records(x, y):
    tmp = metal.local.array(2, dtype=recordwith2darray)
    i = metal.grid(1)
    if i < x.size:
        tmp[0] = x[i]
        tmp[1].i = tmp[0].i * 2
        for a in range(3):
            for b in range(2):
                tmp[1].j[a, b] = tmp[0].j[2 - a, 1 - b] + tmp[1].j[a, b]   # tmp[1] starts zeroed
        y[i] = tmp[1]


def test_local_array_of_records_zeroed_written_and_copied():
    arr = recarray_sample()
    out = np.ones_like(arr)
    local_records[1, 32](arr, out)
    expected = np.zeros_like(arr)
    expected["i"] = arr["i"] * 2
    expected["j"] = arr["j"][:, ::-1, ::-1]
    np.testing.assert_array_equal(out, expected)


@metal.jit
def nested_records(x, y):
    sm = metal.shared.array(8, dtype=outer)
    i = metal.threadIdx.x
    sm[i] = x[i]
    sm[i].r.a += 1
    sm[i].r["b"] = sm[i].r.b * 2
    sm[i].z = sm[i].z + sm[i].x
    sm[i].c = sm[i].c * 2
    metal.syncthreads()
    y[i] = sm[7 - i]
    y[i].r = x[i].r          # a nested record assigned from a device record


def test_nested_records_in_device_and_shared_memory():
    arr = outer_sample()
    out = np.zeros_like(arr)
    nested_records[1, 8](arr, out)
    expected = arr.copy()
    expected["r"]["a"] += 1
    expected["r"]["b"] *= 2
    expected["z"] += expected["x"]
    expected["c"] *= 2
    expected = expected[::-1].copy()
    expected["r"] = arr["r"]
    np.testing.assert_array_equal(out, expected)


@metal.jit(device=True)
def bump(r, k):
    # Specialised on the record's address space: called with a threadgroup and a device record.
    r.r.a += k
    return r.x


@metal.jit(device=True)
def pooled(x, i):
    # A shared array of records in a device function (the kernel's threadgroup pool).
    sm = metal.shared.array(4, dtype=outer)
    sm[i] = x[i]
    return bump(sm[i], 10)


@metal.jit
def records_through_device_functions(x, out):
    i = metal.threadIdx.x
    out[i] = pooled(x, i) + bump(x[i], 1)


def test_records_of_shared_memory_passed_to_device_functions():
    arr = outer_sample(4)
    out = np.zeros(4, np.int32)
    records_through_device_functions[1, 4](arr, out)
    np.testing.assert_array_equal(out, 2 * np.arange(4))
    np.testing.assert_array_equal(arr["r"]["a"], np.arange(4) * 3 + 1)


@metal.jit
def dynamic_records(x, y):
    dyn = metal.shared.array(0, dtype=recordwith2darray)
    i = metal.threadIdx.x
    dyn[i] = x[i]
    metal.syncthreads()
    y[i] = dyn[x.size - 1 - i]
    y[i].i = len(dyn)


def test_dynamic_shared_array_of_records():
    arr = recarray_sample(8)
    out = np.zeros_like(arr)
    dynamic_records[1, 8, 0, arr.nbytes](arr, out)
    expected = arr[::-1].copy()
    expected["i"] = 8
    np.testing.assert_array_equal(out, expected)


CONST_RECORD_ALIGN = np.array([(1, 2, 3, 0xDEADBEEF, 8), (4, 5, 6, 0xBEEFDEAD, 10)], dtype=const_record_align)
CONST_OUTER = outer_sample(3)
CONST_EMPTY = np.array([], dtype=[("x", float), ("y", int)])


@metal.jit
def constant_records(a, y, z, n):
    c = metal.const.array_like(CONST_RECORD_ALIGN)
    o = metal.const.array_like(CONST_OUTER)
    e = metal.const.array_like(CONST_EMPTY)
    i = metal.grid(1)
    a[i] = c[i]["a"] + c[i].x
    y[i] = c[i].y
    z[i] = o[i].z + o[i].r.b
    n[i] = len(e)


def test_const_array_like_of_records():
    a, y = np.zeros(2, np.int64), np.zeros(2, np.uint32)
    z, n = np.zeros(2), np.full(2, -1, np.int64)
    constant_records[1, 2](a, y, z, n)
    np.testing.assert_array_equal(a, CONST_RECORD_ALIGN["a"].astype(np.int64) + CONST_RECORD_ALIGN["x"])
    np.testing.assert_array_equal(y, CONST_RECORD_ALIGN["y"])
    np.testing.assert_array_equal(z, CONST_OUTER["z"][:2] + CONST_OUTER["r"]["b"][:2])
    np.testing.assert_array_equal(n, [0, 0])


def test_writing_a_constant_record_is_refused_clearly():
    def write(out):
        c = metal.const.array_like(CONST_OUTER)
        c[0].x = 1
        out[0] = c[0].x

    with pytest.raises(UnsupportedFeatureError, match="read-only"):
        metal.jit(write)[1, 1](np.zeros(1, np.int32))


def test_a_variable_holding_records_of_two_address_spaces_is_refused_clearly():
    def two_spaces(x, flag):
        sm = metal.shared.array(2, dtype=recordwith2darray)
        r = sm[0]
        if flag[0]:
            r = x[0]
        flag[0] = r.i

    # A record is a reference to its memory: one variable cannot hold a shared and a device one.
    with pytest.raises(KernelCompilationError, match="Cannot unify threadgroup Record.* and Record") as info:
        metal.jit(two_spaces)[1, 1](recarray_sample(1), np.zeros(1, np.int32))
    assert "test_records_in_memory.py" in str(info.value)


def test_shared_records_on_the_simulated_metal_device():
    # The simulated Metal device checks what Metal requires of the MSL (address spaces, alignment).
    code = """
        import numpy as np
        from numba_metal import metal

        inner = np.dtype([("a", np.int16), ("b", np.float32)], align=True)
        outer = np.dtype([("x", np.int32), ("r", inner), ("h", np.float32, 2)], align=True)
        C = np.zeros(2, outer)
        C["x"] = [5, 6]

        @metal.jit
        def k(a):
            sm = metal.shared.array(4, dtype=outer)
            loc = metal.local.array(1, dtype=outer)
            c = metal.const.array_like(C)
            i = metal.threadIdx.x
            sm[i] = a[i]
            loc[0] = sm[i]
            loc[0].r.a = loc[0].x + c[i % 2].x
            loc[0].h[1] = 0.5
            a[i] = loc[0]

        assert metal.get_device_info().kind == "metal-sim"
        a = np.zeros(4, outer)
        a["x"] = [1, 2, 3, 4]
        d = metal.to_device(a)
        k[1, 4](d)
        h = d.copy_to_host()
        print(h["r"]["a"].tolist(), h["h"][:, 1].tolist())
    """
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NUMBA_METAL_DEVICE="metal-sim")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[6, 8, 8, 10] [0.5, 0.5, 0.5, 0.5]"


def field_views(x, out1, out2):
    # numba.cuda's TestRecarray.test_recarray kernel, renamed: x.value1 is a view of that field of every
    # element (NumPy's recarray attribute, as Numba types it).
    i = metal.grid(1)
    if i < x.size:
        out1[i] = x.value1[i]
        out2[i] = x.value2[i]


def test_field_views_of_arrays_of_records():
    a = np.recarray((16,), dtype=[("value1", np.int64), ("value2", np.float64)])
    a.value1 = np.arange(a.size, dtype=np.int64)
    a.value2 = np.arange(a.size, dtype=np.float64) / 100
    got1, got2 = np.zeros_like(a.value1), np.zeros_like(a.value2)
    metal.jit(field_views)[1, a.size](a, got1, got2)
    np.testing.assert_array_equal(got1, a.value1)
    np.testing.assert_array_equal(got2, a.value2)

    def write(x):
        i = metal.grid(1)
        x.value1[i] = 3 * i       # written through the view: the NumPy argument is copied back
        v = x.value2
        v[i] = 0.5

    metal.jit(write)[1, a.size](a)
    np.testing.assert_array_equal(a.value1, 3 * np.arange(a.size))
    np.testing.assert_array_equal(a.value2, np.full(a.size, 0.5))


small = np.dtype([("i", np.int32), ("f", np.float32), ("h", np.int16)], align=True)


@metal.jit
def shared_field_views(x, out):
    sm = metal.shared.array(8, dtype=small)
    i = metal.threadIdx.x
    sm[i] = x[i]
    metal.syncthreads()
    f = sm.f                      # a threadgroup view
    out[i] = f[7 - i] + sm.h[i]
    metal.syncthreads()
    sm.i[i] = 2 * i               # written through the view
    metal.syncthreads()
    x[i] = sm[i]


def test_field_views_of_shared_arrays_of_records_are_read_and_written():
    x = np.zeros(8, small)
    x["i"], x["f"], x["h"] = np.arange(8), np.arange(8) * 0.5, -np.arange(8)
    original = x.copy()
    out = np.zeros(8, np.float32)
    shared_field_views[1, 8](x, out)
    np.testing.assert_array_equal(out, original["f"][::-1] + original["h"])
    np.testing.assert_array_equal(x["i"], 2 * np.arange(8))
    np.testing.assert_array_equal(x["f"], original["f"])


def test_a_field_view_of_a_packed_field_is_refused_clearly():
    packed = np.dtype([("a", np.int8), ("b", np.int32)])

    def view(x, out):
        out[0] = x.b[0]

    with pytest.raises(UnsupportedFeatureError, match="field view 'b'.*aligned"):
        metal.jit(view)[1, 1](np.zeros(2, packed), np.zeros(1, np.int32))


def test_the_disk_cache_tells_constant_arrays_of_records_apart_by_their_fields():
    # A module-level array of records is baked into the kernel: the cache key must see its dtype's fields,
    # not only its bytes and size.
    from numba_metal.host.cache import fingerprint
    a = np.zeros(2, [("x", np.float64), ("y", np.int64)])
    b = np.zeros(2, [("y", np.int64), ("x", np.float64)])
    assert a.tobytes() == b.tobytes() and a.dtype.str == b.dtype.str
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(np.zeros(3, np.float32)) == fingerprint(np.zeros(3, np.float32))

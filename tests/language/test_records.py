"""Records (NumPy structured dtypes) in kernels, checked against NumPy on the same data.

The kernels are numba.cuda's record tests (numba/cuda/tests/cudapy/test_record_dtype.py), renamed; most
use its dtypes with the float64 and complex64 fields made float32, and the float64/complex tests use its
own dtype. As in numba.cuda, a record argument is passed by reference: the kernel's writes reach
the host, and the element of the array it came from.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelBoundsError, UnsupportedFeatureError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

recordtype = np.dtype([("a", np.float32), ("b", np.int32), ("c", np.float16), ("d", (np.uint8, 5))], align=True)
recordwitharray = np.dtype([("g", np.int32), ("h", np.float32, 2)], align=True)
recordwith2darray = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])
# Packed (no align=True): b, e and f sit at offsets that are not multiples of their sizes.
packed = np.dtype([("a", np.int8), ("b", np.int32), ("c", np.float16), ("e", np.int64), ("f", np.uint16)])


def sample():
    ary = np.zeros(3, recordtype)
    for i in range(3):
        x = i + 1
        ary[i]["a"] = x / 2
        ary[i]["b"] = x
        ary[i]["c"] = x * 0.25
        ary[i]["d"] = [x, x + 1, x + 2, x + 3, x + 4]
    return ary


def set_a(ary, i, v):
    ary[i].a = v


def set_b(ary, i, v):
    ary[i].b = v


def set_c(ary, i, v):
    ary[i]["c"] = v


def set_record(ary, i, j):
    ary[i] = ary[j]


@pytest.mark.parametrize("pyfunc, value", [(set_a, np.float32(3.25)), (set_a, 3), (set_b, np.int32(123)),
                                           (set_b, 7.9), (set_c, np.float16(0.5))])
def test_numba_cuda_set_field_of_an_array_element(pyfunc, value):
    kernel = metal.jit(pyfunc)
    for i in range(3):
        got = sample()
        expect = sample().view(np.recarray)
        kernel[1, 1](got, i, value)
        pyfunc(expect, i, value)
        # the whole array: no other byte was touched
        assert got.tobytes() == np.asarray(expect).tobytes()


def test_numba_cuda_set_record():
    kernel = metal.jit(set_record)
    for i, j in [(0, 1), (1, 2), (0, 2)]:
        expect = sample()
        set_record(expect, i, j)
        got = sample()
        kernel[1, 1](got, i, j)
        assert got.tobytes() == expect.tobytes()
        assert got[i] == got[j]


@metal.jit
def record_set_a(r, v):
    r.a = v


@metal.jit
def record_read(r, out):
    out[0] = r.a
    out[1] = r["b"]
    out[2] = r.c
    out[3] = r.d[4]


def test_numba_cuda_record_arguments_are_references():
    ary = sample()
    record_set_a[1, 1](ary[1], np.float32(1.5))
    assert ary[1]["a"] == 1.5 and ary[0]["a"] == 0.5 and ary[2]["a"] == 1.5
    out = np.zeros(4, np.float32)
    record_read[1, 1](ary[2], out)
    np.testing.assert_array_equal(out, [1.5, 3, 0.75, 7])


@metal.jit
def record_write_array(r):
    r.g = 2
    r.h[0] = 3.0
    r.h[1] = 4.0


@metal.jit
def record_write_2d_array(r):
    r.i = 3
    r.j[0, 0] = 5.0
    r.j[0, 1] = 6.0
    r.j[1, 0] = 7.0
    r.j[1, 1] = 8.0
    r.j[2, 0] = 9.0
    r.j[2, 1] = 10.0


@metal.jit
def record_read_2d_array(r, a):
    for x in range(3):
        for y in range(2):
            a[x, y] = r.j[x, y]


def test_numba_cuda_nested_arrays_read_and_written():
    rec = np.zeros(2, recordwitharray)
    record_write_array[1, 1](rec[1])
    expected = np.zeros(2, recordwitharray)
    expected[1]["g"] = 2
    expected[1]["h"] = [3.0, 4.0]
    assert rec.tobytes() == expected.tobytes()

    rec2 = np.zeros(1, recordwith2darray)
    record_write_2d_array[1, 1](rec2[0])
    assert rec2[0]["i"] == 3
    np.testing.assert_array_equal(rec2[0]["j"], np.arange(5, 11, dtype=np.float32).reshape(3, 2))
    got = np.zeros((3, 2), np.float32)
    record_read_2d_array[1, 1](rec2[0], got)
    np.testing.assert_array_equal(got, rec2[0]["j"])


@metal.jit
def packed_fields(a, out):
    i = metal.grid(1)
    if i < a.size:
        r = a[i]
        out[i] = r.b + r.e + r.a + r.f
        r.e = r.b * -3
        r["c"] = r.c * 2
        r.f = 65535 - r.f


def test_packed_records_read_and_write_unaligned_fields():
    a = np.zeros(5, packed)
    a["a"] = np.arange(5) - 2
    a["b"] = [10, -20, 2**31 - 1, 4, 5]
    a["c"] = [0.5, 1.5, -2.0, 65504 / 2, 0.0]
    a["e"] = [2**40, -1, 3, -(2**62), 7]
    a["f"] = [0, 1, 65535, 300, 7]
    expect = a.copy()
    out = np.zeros(5, np.int64)
    packed_fields[1, 8](a, out)
    np.testing.assert_array_equal(out, expect["b"].astype(np.int64) + expect["e"] + expect["a"] + expect["f"])
    np.testing.assert_array_equal(a["e"], expect["b"].astype(np.int64) * -3)
    np.testing.assert_array_equal(a["c"], expect["c"] * 2)
    np.testing.assert_array_equal(a["f"], 65535 - expect["f"])
    np.testing.assert_array_equal(a["a"], expect["a"])   # neighbours untouched


@metal.jit(device=True)
def total(r):
    return r.b + r.d[0]


@metal.jit
def through_device_function(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = total(a[i])


def test_records_in_device_functions_and_device_arrays():
    host = sample()
    d = metal.to_device(host)
    out = metal.device_array(3, np.int64)
    through_device_function[1, 4](d, out)
    np.testing.assert_array_equal(out.copy_to_host(), host["b"] + host["d"][:, 0])


@metal.jit
def copy_2d(a, b):
    i, j = metal.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        b[i, j] = a[i, j]
        b[i, j].b += 100


def test_two_dimensional_arrays_of_records():
    a = np.zeros((2, 3), recordtype)
    a["b"] = np.arange(6).reshape(2, 3)
    a["d"][..., 2] = 9
    b = np.zeros_like(a)
    copy_2d[(1, 1), (2, 4)](a, b)
    np.testing.assert_array_equal(b["b"], a["b"] + 100)
    np.testing.assert_array_equal(b["d"], a["d"])


@metal.jit(debug=True)
def checked_record(a, i):
    a[i].b = 1


def test_debug_bounds_check_covers_arrays_of_records():
    a = metal.to_device(np.zeros(3, recordtype))
    with pytest.raises(KernelBoundsError, match="index 5 is out of bounds for axis 0 with size 3"):
        checked_record[1, 1](a, 5)


# numba.cuda's own record dtype, with its float64 and complex64 fields.
cuda_recordtype = np.dtype([("a", np.float64), ("b", np.int32), ("c", np.complex64), ("d", (np.uint8, 5))],
                           align=True)


def cuda_sample():
    ary = np.zeros(3, cuda_recordtype)
    for i in range(3):
        x = i + 1
        ary[i]["a"] = x / 2 + 2.0**-40   # not a float32: a float32 round trip would lose it
        ary[i]["b"] = x
        ary[i]["c"] = x * 1j + 1 / 3
        ary[i]["d"] = [x, x + 1, x + 2, x + 3, x + 4]
    return ary


def set_c_from(ary, i, v):
    ary[i].c = v[0]


@pytest.mark.parametrize("pyfunc, value", [(set_a, np.float64(3.1415)), (set_a, np.float32(3.0)),
                                           (set_c_from, np.array([43j + 0.1], np.complex64)),
                                           (set_c_from, np.array([43j + 0.1], np.complex128)),
                                           (set_record, 2)])
def test_numba_cuda_set_float64_and_complex64_fields(pyfunc, value):
    # numba.cuda's test_set_a, test_set_c (with coercion from float32 and complex128; the complex value
    # in an array, as kernels take no complex scalars) and test_set_record on its own dtype: the whole
    # array compared, so nothing else of it may change.
    kernel = metal.jit(pyfunc)
    for i in range(2):
        got = cuda_sample()
        expect = got.copy().view(np.recarray)
        kernel[1, 1](got, i, value)
        pyfunc(expect, i, value)
        assert np.all(expect == got)


def cuda_record_read_a(r, arr):
    arr[0] = r.a


def cuda_record_read_c(r, arr):
    arr[0] = r.c


def cuda_record_set_a(r, v):
    r.a = v


def cuda_record_set_c(r, v):
    r.c = v[0]


@pytest.mark.parametrize("field, reader, writer, value", [
    ("a", cuda_record_read_a, cuda_record_set_a, np.float64(1.5 + 2.0**-45)),
    ("c", cuda_record_read_c, cuda_record_set_c, np.complex64(4.0 + 5.0j))])
def test_numba_cuda_float64_and_complex64_fields_of_record_arguments(field, reader, writer, value):
    # numba.cuda's test_rec_read_a/c and test_rec_set_a/c: records as scalar arguments (by reference).
    rec = cuda_sample()[0]
    rec[field] = value
    arr = np.zeros(1, type(value))
    metal.jit(reader)[1, 1](rec, arr)
    assert arr[0] == value
    rec = cuda_sample()[0]
    metal.jit(writer)[1, 1](rec, arr if field == "c" else value)
    assert rec[field] == value


wide = np.dtype([("n", np.int8), ("x", np.float64), ("z", np.complex64), ("w", np.complex128),
                 ("v", np.float64, 3), ("zs", np.complex64, (2, 2)), ("ws", np.complex128, 2)])
wide_aligned = np.dtype({"names": wide.names, "formats": [wide.fields[n][0] for n in wide.names],
                         "offsets": [0, 8, 20, 32, 48, 72, 112], "itemsize": 144})


@metal.jit
def wide_fields(a, out):
    i = metal.grid(1)
    if i < a.size:
        r = a[i]
        out[i] = r.x * 3.0 + r.z.imag + r.w.real * r.w.imag + r.v[2] + r.zs[1, 0].real + r.ws[1].imag
        r.x = r.x / 7.0
        r.z = r.z * r.z
        r.w = r.w.conjugate() + r.ws[0]
        for k in range(3):
            r.v[k] = r.v[k] * r.x
        r.zs[0, 1] = r.zs[1, 1] * 2
        r.ws[1] = r.ws[1] - r.w


def wide_reference(a):
    out = a["x"] * 3.0 + a["z"].imag + a["w"].real * a["w"].imag + a["v"][:, 2] + a["zs"][:, 1, 0].real \
        + a["ws"][:, 1].imag
    a["x"] = a["x"] / 7.0
    a["z"] = a["z"] * a["z"]
    a["w"] = a["w"].conjugate() + a["ws"][:, 0]
    a["v"] = a["v"] * a["x"][:, None]
    a["zs"][:, 0, 1] = a["zs"][:, 1, 1] * 2
    a["ws"][:, 1] = a["ws"][:, 1] - a["w"]
    return out


def wide_sample(dtype):
    rng = np.random.default_rng(7)
    a = np.zeros(5, dtype)
    for name in dtype.names:
        shape = a[name].shape
        a[name] = rng.standard_normal(shape) if a[name].dtype.kind != "c" else \
            rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return a


@pytest.mark.parametrize("dtype", [wide, wide_aligned], ids=["packed", "aligned"])
def test_float64_and_complex_fields_and_nested_arrays_are_exact(dtype):
    # float64 is the exact emulated float64 and complex128 pairs of it: results bit for bit NumPy's.
    # In the packed dtype every scalar field is at an unaligned offset (read and written bytewise); in the
    # aligned one complex64 sits at an offset that is a multiple of 4 only (NumPy's alignment of it), which
    # is read as two floats (MSL's float2 needs 8).
    a = wide_sample(dtype)
    expect = a.copy()
    out = np.zeros(5)
    if dtype is wide:   # nested arrays of a packed dtype are unaligned: only the scalar fields are used
        @metal.jit
        def scalars(a, out):
            i = metal.grid(1)
            if i < a.size:
                r = a[i]
                out[i] = r.x * 3.0 + r.z.imag + r.w.real * r.w.imag
                r.x = r.x / 7.0
                r.z = r.z * r.z
                r.w = r.w.conjugate()
        scalars[1, 5](a, out)
        np.testing.assert_array_equal(out, expect["x"] * 3.0 + expect["z"].imag + expect["w"].real * expect["w"].imag)
        expect["x"] = expect["x"] / 7.0
        expect["z"] = expect["z"] * expect["z"]
        expect["w"] = expect["w"].conjugate()
    else:
        wide_fields[1, 5](a, out)
        np.testing.assert_array_equal(out, wide_reference(expect))
    for name in dtype.names:
        np.testing.assert_array_equal(a[name], expect[name], err_msg=name)


nested64 = np.dtype([("n", np.int32), ("v", np.float64, 3), ("zs", np.complex128, 2)], align=True)


@metal.jit(device=True)
def nested64_sum(r):
    return r.v[1] + r.zs[1].real


@metal.jit
def nested64_assign(a, src, zsrc, out):
    r = a[0]
    r.v = src
    r.zs = zsrc
    out[0] = nested64_sum(r)
    print(r.v[2], r.zs[1].imag)


def test_float64_and_complex128_nested_arrays_assigned_whole_passed_to_device_functions_and_printed(capsys):
    a = np.zeros(1, nested64)
    src = np.array([0.1, 0.2, 1 / 3])
    zsrc = np.array([1 + 2j, 1 / 3 + 0.25j])
    out = np.zeros(1)
    nested64_assign[1, 1](a, src, zsrc, out)
    np.testing.assert_array_equal(a[0]["v"], src)
    np.testing.assert_array_equal(a[0]["zs"], zsrc)
    assert out[0] == src[1] + zsrc[1].real
    assert capsys.readouterr().out == "%f %f\n" % (src[2], zsrc[1].imag)


def test_unaligned_nested_arrays_are_refused_clearly():
    unaligned_nested = np.dtype([("a", np.int8), ("h", np.float32, 2)])

    def nested(r, out):
        out[0] = r.h[0]

    with pytest.raises(UnsupportedFeatureError, match="align=True"):
        metal.jit(nested)[1, 1](np.zeros(1, unaligned_nested)[0], np.zeros(1, np.float32))
    # NumPy aligns complex128 to 8 bytes; an array of them needs 16 on Metal (MSL's ulong2).
    at8 = np.dtype([("n", np.int64), ("ws", np.complex128, 2)], align=True)

    def nested128(r, out):
        out[0] = r.ws[0]

    with pytest.raises(UnsupportedFeatureError, match="multiples of 16"):
        metal.jit(nested128)[1, 1](np.zeros(1, at8)[0], np.zeros(1, np.complex128))


nested_array1_dtype = np.dtype([("array1", np.int16, (3,))], align=True)
nested_array2_dtype = np.dtype([("array2", np.int16, (3, 2))], align=True)


def assign_array_to_nested(dest, src):
    dest["array1"] = src


def assign_array_to_nested_2d(dest, src):
    dest["array2"] = src


def record_setitem_array(rec_source, rec_dest):
    rec_dest["j"] = rec_source["j"]


def test_numba_cuda_assign_array_to_nested():
    src = (np.arange(3) + 1).astype(np.int16)
    got = np.zeros(2, dtype=nested_array1_dtype)
    expected = np.zeros(2, dtype=nested_array1_dtype)
    metal.jit(assign_array_to_nested)[1, 1](got[0], src)
    assign_array_to_nested(expected[0], src)
    np.testing.assert_array_equal(expected, got)

    src2 = (np.arange(6) + 1).astype(np.int16).reshape((3, 2))
    got2 = np.zeros(2, dtype=nested_array2_dtype)
    expected2 = np.zeros(2, dtype=nested_array2_dtype)
    metal.jit(assign_array_to_nested_2d)[1, 1](got2[0], src2)
    assign_array_to_nested_2d(expected2[0], src2)
    np.testing.assert_array_equal(expected2, got2)


def test_numba_cuda_setitem_nested_array_from_another_record():
    def gen():
        a = np.zeros(1, recordwith2darray)
        a[0] = np.array([(1, ((1, 2), (4, 5), (2, 3)))], dtype=recordwith2darray)[0]
        b = np.zeros(1, recordwith2darray)
        b[0] = np.array([(10, ((10, 20), (40, 50), (20, 30)))], dtype=recordwith2darray)[0]
        return a, b
    (pa, pb), (ga, gb) = gen(), gen()
    record_setitem_array(pa[0], pb[0])
    metal.jit(record_setitem_array)[1, 1](ga[0], gb[0])
    np.testing.assert_array_equal(pb, gb)
    np.testing.assert_array_equal(pa, ga)


def test_a_source_smaller_than_the_nested_array_is_reported_with_debug():
    kernel = metal.jit(debug=True)(assign_array_to_nested)
    got = np.zeros(1, dtype=nested_array1_dtype)
    with pytest.raises(KernelBoundsError, match="index 2 is out of bounds for axis 0 with size 2 in array 'array1'"):
        kernel[1, 1](got[0], np.array([7, 8], np.int16))
    np.testing.assert_array_equal(got[0]["array1"], [7, 8, 0])   # what there was was copied


@metal.jit(device=True)
def first_record(ary):
    return ary[0]


@metal.jit
def getitem_by_position(ary, out):
    r = first_record(ary)
    out[0] = r[0]
    out[1] = r[1][1]
    r[0] = 9


def test_numba_cuda_getitem_idx_records_from_device_functions_and_fields_by_position():
    a = np.zeros(2, recordwitharray)
    a[0] = np.array([(1, (2, 3))], dtype=recordwitharray)[0]
    out = np.zeros(2, np.float32)
    getitem_by_position[1, 1](a, out)
    np.testing.assert_array_equal(out, [1, 3])
    assert a[0]["g"] == 9


CONSTANT_RECORDS = np.zeros(2, recordwitharray)


CONSTANT_RECORDS["g"] = [3, 4]
CONSTANT_RECORDS["h"] = [[0.5, 1.5], [2.5, 3.5]]


def test_module_level_arrays_of_records_are_constants():
    # As other global arrays, baked in as constant memory (and so read-only); shared, local and
    # const.array_like arrays of records: tests/language/test_records_in_memory.py.
    def constant(out):
        out[0] = CONSTANT_RECORDS[1].g + CONSTANT_RECORDS[0].h[1]

    out = np.zeros(1, np.float32)
    metal.jit(constant)[1, 1](out)
    assert out[0] == 4 + 1.5

    def write(out):
        CONSTANT_RECORDS[1].g = 1

    with pytest.raises(UnsupportedFeatureError, match="read-only"):
        metal.jit(write)[1, 1](out)


def test_layout_is_numpys_for_aligned_and_packed_dtypes():
    from numba import from_dtype
    from numba_metal.compiler import records
    for dtype in (recordtype, recordwitharray, recordwith2darray, packed):
        lay = records.layout(from_dtype(dtype))
        assert lay.size == dtype.itemsize
        for name, field in lay.fields.items():
            assert field.offset == dtype.fields[name][1]
            assert field.packed == (field.offset % field.size != 0 or dtype.itemsize % field.size != 0)
    assert not any(f.packed for f in records.layout(from_dtype(recordtype)).fields.values())
    assert {n for n, f in records.layout(from_dtype(packed)).fields.items() if f.packed} == {"b", "c", "e", "f"}


def test_records_on_the_simulated_metal_device():
    code = """
        import numpy as np
        from numba_metal import metal

        packed = np.dtype([("a", np.int8), ("b", np.int32), ("h", np.int16, 2)])

        @metal.jit
        def k(a):
            i = metal.grid(1)
            if i < a.size:
                a[i].b = a[i].b * 2 + a[i].a

        assert metal.get_device_info().kind == "metal-sim"
        a = np.zeros(3, packed)
        a["a"] = [1, 2, 3]
        a["b"] = [10, 20, 30]
        d = metal.to_device(a)
        k[1, 3](d)
        print(d.copy_to_host()["b"].tolist())
    """
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NUMBA_METAL_DEVICE="metal-sim")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[21, 42, 63]"

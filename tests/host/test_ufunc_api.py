"""numba.vectorize / numba.guvectorize with target='metal' as numba.cuda's device ufuncs: Numba signature
objects and tuples, scalar arguments, device arrays in and out, out=, stream=, old-style scalar gufunc
outputs, numba.cuda's loop dimensions and input casting, and numba.cuda's error messages (numba-cuda's
deviceufunc.py and test_gufunc.py, test_gufunc_scalar.py, test_vectorize*.py)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import float32, guvectorize, int32, int64, vectorize, void

from numba_metal import metal
from numba_metal.errors import NumbaMetalError


def test_vectorize_takes_numba_signature_objects_and_metal_vectorize_is_its_shorthand():
    @vectorize([float32(float32, float32), int32(int32, int32)], target="metal")
    def add(a, b):
        return a + b

    @metal.vectorize([int64(int64)])
    def twice(a):
        return 2 * a
    x = np.arange(6, dtype=np.int32)
    np.testing.assert_array_equal(add(x, x), 2 * x)
    np.testing.assert_array_equal(twice(np.arange(4)), 2 * np.arange(4))
    assert add.types == ["ff->f", "ii->i"]


def test_scalar_arguments_and_device_results():
    @vectorize(["float32(float32, float32)"], target="metal")
    def axpy(a, b):
        return 2 * a + b
    d = metal.to_device(np.arange(10, dtype=np.float32))
    r = axpy(np.float32(1.0), d)                      # numba.cuda: a device input gives a device result
    assert isinstance(r, metal.DeviceNDArray)
    np.testing.assert_array_equal(r.copy_to_host(), 2 + np.arange(10, dtype=np.float32))
    assert axpy(1.0, 1.0) == 3.0                      # all scalars: a scalar


def test_out_and_stream_keywords():
    @vectorize(["int32(int32)"], target="metal")
    def neg(a):
        return -a
    s = metal.stream()
    x = np.arange(100, dtype=np.int32)
    out = metal.device_array(100, np.int32)
    assert neg(metal.to_device(x), out=out, stream=s) is out
    s.synchronize()
    np.testing.assert_array_equal(out.copy_to_host(), -x)
    host_out = np.zeros(100, np.int32)
    assert neg(x, out=host_out) is host_out
    np.testing.assert_array_equal(host_out, -x)


def test_vectorize_options_follow_numba_cuda():
    def f(a):
        return a
    with pytest.warns(RuntimeWarning, match="nopython kwarg for metal target is redundant"):
        vectorize(["int32(int32)"], target="metal", nopython=True)(f)
    with pytest.raises(KeyError, match="does not support option: 'what'"):
        vectorize(["int32(int32)"], target="metal", what=True)(f)
    with pytest.raises(TypeError, match="caching is not supported"):
        vectorize(["int32(int32)"], target="metal", cache=True)(f)


def test_gufunc_old_style_scalar_output_and_scalar_as_array():
    @guvectorize(["void(int32[:], int32[:])"], "(n)->()", target="metal")
    def sum_row(inp, out):
        tmp = 0
        for i in range(inp.shape[0]):
            tmp += inp[i]
        out[0] = tmp
    inp = np.arange(300, dtype=np.int32).reshape(100, 3)
    dev_out = metal.device_array(100, np.int32)
    sum_row(metal.to_device(inp), out=dev_out)
    np.testing.assert_array_equal(dev_out.copy_to_host(), inp.sum(axis=1))
    np.testing.assert_array_equal(sum_row(metal.to_device(inp)).copy_to_host(), inp.sum(axis=1))

    @guvectorize(["void(int32[:], int32[:], int32[:])"], "(n),()->(n)", target="metal")
    def add_first(x, y, res):
        for i in range(x.shape[0]):
            res[i] = x[i] + y[0]
    a = np.array([1, 2, 3, 4], dtype=np.int32)
    res = np.zeros(4, dtype=np.int32)
    add_first(a, np.array([2], dtype=np.int32), out=res)     # a (1,) operand is pinned: no loop axis
    np.testing.assert_array_equal(res, a + 2)
    a2 = np.array([1, 2, 3, 4] * 2, dtype=np.int32).reshape(2, 4)
    res2 = np.zeros((2, 4), dtype=np.int32)
    add_first(a2, np.array([2, 10], dtype=np.int32), out=res2)
    np.testing.assert_array_equal(res2, a2 + np.array([[2], [10]]))


def test_gufunc_scalar_inputs_and_casting_to_a_signature():
    @guvectorize([void(int32, int32[:], int32[:])], "(),(t)->(t)", target="metal")
    def scale(a, b, out):
        for i in range(b.size):
            out[i] = a * b[i]
    b = np.arange(10, dtype=np.int32)
    np.testing.assert_array_equal(scale(np.int64(2), b), 2 * b)   # int64 host input cast down to int32
    with pytest.raises(TypeError, match="does not support .astype()"):
        scale(metal.to_device(np.array(2, dtype=np.int64)), b)

    @guvectorize(["void(int32, int32[:])"], "()->()", target="metal")
    def twice(inp, out):
        out[0] = inp * 2
    assert twice(10) == 20
    np.testing.assert_array_equal(twice(b), 2 * b)


def test_gufunc_errors_are_numba_cudas():
    def f(x, y, z):
        pass
    with pytest.raises(TypeError, match="guvectorized functions cannot return values: signature .* specifies "
                                        "int32 return type"):
        guvectorize([int32(int32[:], int32[:], int32[:])], "(m),(m)->(m)", target="metal")(f)
    with pytest.raises(TypeError, match="nopython flag must be True"):
        guvectorize(["void(int32[:], int32[:], int32[:])"], "(m),(m)->(m)", target="metal", nopython=False)(f)
    with pytest.raises(TypeError, match="The following target options are not supported: 'what1', 'ever2'"):
        guvectorize(["void(int32[:], int32[:], int32[:])"], "(m),(m)->(m)", target="metal",
                    what1=True, ever2=False)(f)
    g = guvectorize([(int32[:], int32[:], int32[:])], "(m),(m)->(m)", target="metal")(f)
    arr = np.arange(5, dtype=np.int32)
    with pytest.raises(TypeError, match=r"This gufunc accepts 2 positional arguments \(when providing input only\) "
                                        r"or 3 positional arguments \(when providing input and output\)\. Got 1 "
                                        r"positional argument\."):
        g(arr)
    with pytest.raises(ValueError, match="cannot specify argument 'out' as both positional and keyword"):
        g(arr, arr, arr, out=arr)
    with pytest.raises(NumbaMetalError):
        g(arr, arr, arr, arr)


def test_gufunc_tuple_and_list_inputs():
    @guvectorize([(int32[:], int32[:], int32[:])], "(n),(n)->()", target="metal")
    def dot(x, y, r):
        s = 0
        for i in range(len(x)):
            s += x[i] * y[i]
        r[0] = s
    a = ((1, 2, 3), (4, 5, 6))
    b = [[1, 1, 1], [2, 2, 2]]
    np.testing.assert_array_equal(dot(np.asarray(a, np.int32), np.asarray(b, np.int32)), [6, 30])
    np.testing.assert_array_equal(dot(a, b), [6, 30])


def test_an_editable_install_registers_the_target_in_programs_that_never_import_numba_metal(tmp_path):
    """``pip install -e`` puts numba_metal_target.pth in site-packages as a wheel does (setup.py), because
    Numba runs its ``numba_extensions`` entry points only when it first compiles, after
    ``numba.vectorize(target=...)`` has looked the target up. Installed into a throwaway virtual environment
    that sees the test environment's packages through a .pth file (nothing is downloaded; not
    ``--system-site-packages``, which would show the base interpreter's packages instead of this virtual
    environment's, e.g. an old setuptools); the program has no PYTHONPATH."""
    import site
    root = Path(__file__).resolve().parents[2]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    inner = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    outer = [p for p in dict.fromkeys(site.getsitepackages()) if Path(p).is_dir()]
    (Path(inner) / "test_environment.pth").write_text("".join(p + "\n" for p in outer))
    install = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-index",
                              "--no-build-isolation", "--no-deps", "-e", str(root)],
                             capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    site_packages = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                   capture_output=True, text=True, check=True).stdout.strip()
    assert (Path(site_packages) / "numba_metal_target.pth").is_file()
    code = ("import sys, numba, numpy as np\n"
            "assert 'numba_metal' not in sys.modules\n"
            "@numba.vectorize(['int32(int32)'], target='metal')\n"
            "def inc(x):\n"
            "    return x + 1\n"
            "import numba_metal\n"
            "print(numba_metal.__file__)\n"
            "print(inc(np.arange(3, dtype=np.int32)).tolist())\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NUMBA_METAL_DEVICE"] = "cpu"
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    where, result = r.stdout.strip().splitlines()
    assert Path(where).resolve() == root / "numba_metal" / "__init__.py"
    assert result == "[1, 2, 3]"

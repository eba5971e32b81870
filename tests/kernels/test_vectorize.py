"""numba.vectorize / numba.guvectorize with target='metal': loop selection, broadcasting, out=,
stream=, host vs device results (numba.cuda's rules), reduce, and registration with Numba."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from numba import guvectorize, vectorize

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError


@vectorize(["float32(float32, float32)", "int32(int32, int32)"], target="metal")
def add(a, b):
    return a + b


@vectorize(target="metal")
def hypot_(a, b):
    return math.sqrt(a * a + b * b)


@vectorize(["float32(float32, float32, float32)"], target="metal", identity=0)
def lerp(a, b, t):
    return a + (b - a) * t


def test_signatures_select_the_loop_like_numpy():
    x = np.arange(10, dtype=np.int32)
    r = add(x, x)
    assert r.dtype == np.int32 and isinstance(r, np.ndarray)
    np.testing.assert_array_equal(r, 2 * x)
    f = np.linspace(0, 1, 10, dtype=np.float32)
    np.testing.assert_array_equal(add(f, f), f + f)
    assert add.types == ["ff->f", "ii->i"]
    with pytest.raises(TypeError, match="no signature matches"):
        add(np.arange(3, dtype=np.uint64), np.arange(3, dtype=np.uint64))


def test_broadcasting_and_scalars():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(4, dtype=np.float32)
    c = np.arange(3, dtype=np.float32).reshape(3, 1)
    np.testing.assert_array_equal(add(a, b), a + b)
    np.testing.assert_array_equal(lerp(a, c, np.float32(0.25)), a + (c - a) * np.float32(0.25))
    np.testing.assert_array_equal(add(a, 2.5), a + np.float32(2.5))
    assert add(np.float32(1.5), np.float32(2.0)) == 3.5
    # Non-contiguous operands use the N-d kernel.
    np.testing.assert_array_equal(add(a.transpose(2, 0, 1), 1.0), a.transpose(2, 0, 1) + 1)


def test_device_inputs_give_device_results_and_out():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = metal.to_device(a)
    r = add(d, a[0])
    assert isinstance(r, metal.DeviceNDArray)
    np.testing.assert_array_equal(r.copy_to_host(), a + a[0])
    out = metal.device_array((3, 4), np.float32)
    assert add(d, d, out=out) is out
    np.testing.assert_array_equal(out.copy_to_host(), 2 * a)
    host_out = np.zeros((3, 4), np.float32)
    assert add(a, a, out=host_out) is host_out
    np.testing.assert_array_equal(host_out, 2 * a)
    s = metal.stream()
    r = add(d, d, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(r.copy_to_host(), 2 * a)


def test_without_signatures_types_come_from_the_arguments():
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_allclose(hypot_(x, 2.0), np.hypot(x, 2), rtol=1e-6)
    assert hypot_(x, 2.0).dtype == np.float32
    i = np.arange(6, dtype=np.int32)
    assert hypot_(i, i).dtype == np.float32  # float64 results are float32 on Metal


def test_reduce_with_a_binary_ufunc():
    x = np.arange(1000, dtype=np.int32)
    assert add.reduce(x) == x.sum()
    assert add.reduce(metal.to_device(x.astype(np.float32))) == x.sum()


def test_float64_signatures_compute_exact_float64():
    @vectorize(["float64(float64)"], target="metal")
    def third(x):
        return x / 3

    x = np.linspace(-5, 5, 101)
    np.testing.assert_array_equal(third(x).view(np.uint64), (x / 3).view(np.uint64))


@guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),(n)->()", target="metal")
def dot(x, y, res):
    s = 0.0
    for k in range(x.shape[0]):
        s += x[k] * y[k]
    res[0] = s


@guvectorize(["void(float32[:, :], float32[:, :], float32[:, :])"], "(m,n),(n,p)->(m,p)", target="metal")
def matmul(a, b, c):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc


@guvectorize(["void(float32[:], float32, float32[:], float32[:])"], "(n),()->(n),()", target="metal")
def scale_and_sum(x, factor, scaled, total):
    s = 0.0
    for k in range(x.shape[0]):
        scaled[k] = x[k] * factor
        s += scaled[k]
    total[0] = s


def test_guvectorize_core_dims_and_loop_broadcasting():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3, 8)).astype(np.float32)
    y = rng.standard_normal(8).astype(np.float32)  # broadcast over the loop dimensions
    np.testing.assert_allclose(dot(x, y), x @ y, rtol=1e-5, atol=1e-6)
    a = rng.standard_normal((5, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    np.testing.assert_allclose(matmul(a, b), a @ b, rtol=1e-5, atol=1e-6)


def test_guvectorize_scalar_inputs_two_outputs_and_device_arrays():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    factor = np.array([1.0, 2.0, 3.0], np.float32)  # a () input, one per loop index
    scaled, total = scale_and_sum(metal.to_device(x), factor)
    assert isinstance(scaled, metal.DeviceNDArray) and isinstance(total, metal.DeviceNDArray)
    np.testing.assert_array_equal(scaled.copy_to_host(), x * factor[:, None])
    np.testing.assert_array_equal(total.copy_to_host(), (x * factor[:, None]).sum(axis=1))
    s_out, t_out = np.zeros((3, 4), np.float32), np.zeros(3, np.float32)
    scale_and_sum(x, np.float32(0.5), s_out, t_out)  # outputs passed positionally
    np.testing.assert_array_equal(s_out, x * 0.5)
    np.testing.assert_array_equal(t_out, x.sum(axis=1) * 0.5)


def test_dynamic_guvectorize_needs_its_outputs():
    @guvectorize("(n)->(n)", target="metal")
    def cumsum(x, out):
        acc = x[0] * 0
        for k in range(x.shape[0]):
            acc += x[k]
            out[k] = acc

    x = np.arange(10, dtype=np.int32).reshape(2, 5)
    out = np.zeros_like(x)
    cumsum(x, out)
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1))
    with pytest.raises(TypeError, match="outputs must be passed"):
        cumsum(x)

    @guvectorize("(n),()->(n)", target="metal")
    def axpy(x, a, out):  # a () input is a scalar, as in Numba's dynamic gufuncs
        for k in range(x.shape[0]):
            out[k] = a * x[k]

    xf = x.astype(np.float32)
    outf = np.zeros_like(xf)
    axpy(xf, np.array([2, 3], np.float32), outf)
    np.testing.assert_array_equal(outf, xf * np.array([[2], [3]], np.float32))


def test_target_is_registered_whatever_the_import_order():
    """numba_metal imported before numba: the registration waits for Numba's ufunc decorators."""
    code = ("from numba_metal import metal\n"
            "import numba\n"
            "@numba.vectorize(['int32(int32)'], target='metal')\n"
            "def inc(x):\n"
            "    return x + 1\n"
            "import numpy as np\n"
            "print(inc(np.arange(3, dtype=np.int32)).tolist())\n")
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(metal.__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1, 2, 3]"


def test_entry_point_registration_is_idempotent():
    import _numba_metal_target
    from numba.np.ufunc.decorators import GUVectorize, Vectorize

    from numba_metal.libraries.vectorize import MetalGUVectorize, MetalVectorize
    _numba_metal_target.register()
    _numba_metal_target.register()
    assert Vectorize.target_registry["metal"] is MetalVectorize
    assert GUVectorize.target_registry["metal"] is MetalGUVectorize


def test_the_pth_file_registers_the_target_in_a_program_that_never_imports_numba_metal(tmp_path):
    """numba_metal_target.pth (installed at the top of site-packages) makes numba.vectorize(target='metal')
    work without importing numba_metal; numba_metal is loaded when the target is first used."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(metal.__file__)))
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "numba_metal_target.pth").write_text(open(os.path.join(root, "numba_metal_target.pth")).read())
    code = ("import site, sys\n"
            f"site.addsitedir({str(site_dir)!r})\n"
            "import numba, numpy as np\n"
            "assert 'numba_metal' not in sys.modules\n"
            "@numba.vectorize(['int32(int32)'], target='metal')\n"
            "def inc(x):\n"
            "    return x + 1\n"
            "print(inc(np.arange(3, dtype=np.int32)).tolist())\n")
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu")
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1, 2, 3]"


def test_the_pth_file_is_silent_when_its_module_is_gone(tmp_path):
    """An environment whose numba-metal was removed by hand, or whose editable install's clone was deleted,
    keeps the .pth file: every Python start must stay silent (numba.vectorize(target='metal') then says the
    installation is out of date, numba_metal/libraries/vectorize.py)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(metal.__file__)))
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "numba_metal_target.pth").write_text(open(os.path.join(root, "numba_metal_target.pth")).read())
    code = f"import site; site.addsitedir({str(site_dir)!r}); print('started')"
    r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0 and r.stdout.strip() == "started" and r.stderr == "", r.stderr

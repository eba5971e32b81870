"""Device arrays captured from a kernel's scope (issue 27 item 3): a module-level or closure device array
(or mapped array) named in a kernel is used by reference, read and written, bound again at every launch from
the name's current value (host/captures.py); a deleted or rebound capture refuses the launch; the disk cache
never stores the address (a second process binds its own array)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelLaunchError, NumbaMetalError, UnsupportedFeatureError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

G = None        # a module-level device array, set by the tests
SHARED = None   # one captured array two kernels use


@metal.jit
def double_into(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = G[i] * 2
        G[i] = i + 100


@metal.jit
def add_one():
    i = metal.grid(1)
    if i < SHARED.size:
        SHARED[i] += 1


@metal.jit
def times_ten():
    i = metal.grid(1)
    if i < SHARED.size:
        SHARED[i] *= 10


def test_a_module_level_device_array_is_read_and_written_by_reference():
    global G
    G = metal.to_device(np.arange(8, dtype=np.float32))
    out = metal.device_array(8, np.float32)
    double_into[1, 8](out)
    assert G[3] == 103   # a host read after the launch waits for it, as for an argument
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(8) * 2)
    np.testing.assert_array_equal(G.copy_to_host(), np.arange(8) + 100)


def test_every_launch_binds_the_array_the_name_denotes_then():
    global G
    G = metal.to_device(np.full(8, 1, dtype=np.float32))
    out = metal.device_array(8, np.float32)
    double_into[1, 8](out)
    first = G
    G = metal.to_device(np.full(8, 5, dtype=np.float32))
    double_into[1, 8](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.full(8, 10))
    np.testing.assert_array_equal(first.copy_to_host(), np.arange(8) + 100)
    np.testing.assert_array_equal(G.copy_to_host(), np.arange(8) + 100)


def test_a_closure_device_array_is_captured():
    def make():
        c = metal.to_device(np.ones(4, dtype=np.int32))

        @metal.jit
        def kc(out):
            i = metal.grid(1)
            if i < c.size:
                out[i] = c[i]
                c[i] += i
        return kc, c
    kc, c = make()
    out = metal.device_array(4, np.int32)
    kc[1, 4](out)
    kc[1, 4](out)
    np.testing.assert_array_equal(out.copy_to_host(), [1, 2, 3, 4])
    np.testing.assert_array_equal(c.copy_to_host(), [1, 3, 5, 7])


def test_two_kernels_share_one_captured_array_in_launch_order():
    global SHARED
    SHARED = metal.to_device(np.arange(6, dtype=np.int64))
    add_one[1, 6]()
    times_ten[1, 6]()
    add_one[1, 6]()
    np.testing.assert_array_equal(SHARED.copy_to_host(), (np.arange(6) + 1) * 10 + 1)


def test_a_mapped_array_is_captured():
    m = metal.mapped_array(4, dtype=np.float32)
    m[:] = [1, 2, 3, 4]

    @metal.jit
    def scale():
        i = metal.grid(1)
        if i < m.size:
            m[i] *= 3
    scale[1, 4]()
    assert m.tolist() == [3, 6, 9, 12]   # a host access waits for the kernel, as for an argument


class Exporter:
    """Another library's array: only its DLPack export is visible."""

    def __init__(self, arr):
        self.arr = arr

    def __dlpack__(self, **kwargs):
        return self.arr.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


def test_an_array_exporting_dlpack_is_captured_and_written():
    d = metal.to_device(np.arange(4, dtype=np.float32))
    foreign = Exporter(d)

    @metal.jit(device=True)
    def twice(i):
        foreign[i] = foreign[i] * 2
        return foreign[i]

    @metal.jit
    def k(out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = twice(i)
    out = metal.device_array(4, np.float32)
    k[1, 4](out)
    np.testing.assert_array_equal(out.copy_to_host(), [0, 2, 4, 6])
    np.testing.assert_array_equal(d.copy_to_host(), [0, 2, 4, 6])


def test_a_numpy_global_stays_a_constant():
    host = np.arange(4, dtype=np.float32)

    @metal.jit
    def k(out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = host[i]
    out = metal.device_array(4, np.float32)
    k[1, 4](out)
    assert k.captures() == ()
    np.testing.assert_array_equal(out.copy_to_host(), [0, 1, 2, 3])


def test_a_deleted_capture_refuses_the_launch():
    global G
    G = metal.to_device(np.arange(8, dtype=np.float32))
    out = metal.device_array(8, np.float32)
    double_into[1, 8](out)
    del G
    with pytest.raises(KernelLaunchError, match=r"double_into\(\) captured the device array global 'G', "
                                                r"which no longer exists"):
        double_into[1, 8](out)
    globals()["G"] = np.zeros(8, np.float32)   # rebound to a host array: refused too (never a stale binding)
    with pytest.raises(NumbaMetalError, match="'G', which is now a ndarray"):
        double_into[1, 8](out)


@metal.jit(device=True)
def read_g(i):
    return G[i]


@metal.jit(device=True)
def write_g(i, v):
    G[i] = v


@metal.jit(device=True)
def read_g_plus_one(i):
    return read_g(i) + 1


@metal.jit
def through_device_functions(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = read_g_plus_one(i) * 2 + read_g(i)
        write_g(i, i + 100.0)


def test_device_functions_read_and_write_a_captured_array_at_any_depth():
    global G
    G = metal.to_device(np.arange(8, dtype=np.float32))
    out = metal.device_array(8, np.float32)
    through_device_functions[1, 8](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(8) * 3 + 2)
    np.testing.assert_array_equal(G.copy_to_host(), np.arange(8) + 100)
    del G
    with pytest.raises(KernelLaunchError, match=r"'G' \(through the device function read_g\(\)\), which no "
                                                r"longer exists"):
        through_device_functions[1, 8](out)


def test_a_closure_device_function_captures_its_closure_array():
    def make():
        d = metal.to_device(np.ones(4, dtype=np.float32))

        @metal.jit(device=True)
        def bump(i):
            d[i] += 1
            return d[i]
        return bump, d
    bump, d = make()

    @metal.jit
    def k(out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = bump(i)
    out = metal.device_array(4, np.float32)
    k[1, 4](out)
    np.testing.assert_array_equal(out.copy_to_host(), [2, 2, 2, 2])
    np.testing.assert_array_equal(d.copy_to_host(), [2, 2, 2, 2])


def test_a_kernel_with_explicit_signatures_cannot_capture_and_says_so():
    d = metal.to_device(np.ones(4, dtype=np.float32))

    def body(out):
        out[0] = d[0]
    with pytest.raises(UnsupportedFeatureError, match=r"body\(\) reads the device array\(s\) 'd' from its "
                                                      r"scope.*pass the array as an argument"):
        metal.jit("void(float32[:])")(body)
    with pytest.raises(UnsupportedFeatureError, match=r"or made by specialize\(\), cannot"):
        metal.jit(body).specialize(metal.device_array(4, np.float32))


def test_a_launch_on_a_stream_is_waited_for_by_a_host_read_of_the_capture():
    global G
    G = metal.to_device(np.zeros(8, dtype=np.float32))
    out = metal.device_array(8, np.float32)
    s = metal.stream()
    double_into[1, 8, s](out)
    assert G[7] == 107   # no synchronize: the host access waits for the stream's kernel that wrote it
    s.synchronize()


KMOD = """
import os
import numpy as np
from numba_metal import metal
DATA = metal.to_device(np.full(4, float(os.environ["CAPTURE_VALUE"]), dtype=np.float32))

@metal.jit(cache=True)
def kernel(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = DATA[i] + i
        DATA[i] = -1.0
"""

DRIVER = """
import json
import numpy as np
from numba_metal import metal
import kmod
out = metal.device_array(4, np.float32)
kmod.kernel[1, 4](out)
print(json.dumps({"out": out.copy_to_host().tolist(), "data": kmod.DATA.copy_to_host().tolist(),
                  "from_cache": [k.from_cache for k in kmod.kernel._by_key.values()]}))
"""


@pytest.mark.unsanitized("launches from the disk cache, which a sanitizing kernel never enters")
def test_the_disk_cache_binds_the_captured_array_of_each_process(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "kmod.py").write_text(textwrap.dedent(KMOD))
    (src / "driver.py").write_text(textwrap.dedent(DRIVER))

    def run(value):
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_METAL_CACHE_DIR", "NUMBA_CACHE_DIR")}
        env.update(NUMBA_METAL_DEVICE="cpu", PYTHONDONTWRITEBYTECODE="1", CAPTURE_VALUE=str(value),
                   PYTHONPATH=os.pathsep.join([str(src), REPO]), NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"))
        res = subprocess.run([sys.executable, str(src / "driver.py")], env=env, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout.strip().splitlines()[-1])

    first = run(1)
    assert first == {"out": [1, 2, 3, 4], "data": [-1] * 4, "from_cache": [False]}
    second = run(7)   # another process, another allocation and other contents: loaded, bound afresh
    assert second == {"out": [7, 8, 9, 10], "data": [-1] * 4, "from_cache": [True]}

"""numba.cuda's cache-hinted loads and stores (kernel_api/cache_hints.py): plain accesses on Metal, on
1-d and n-d device arrays, bounds-checked under debug=True like indexing. Oracle: NumPy indexing."""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.kernel_api import cache_hints


@metal.jit
def hinted(a, m, out, out2):
    i = metal.grid(1)
    if i < a.size:
        v = metal.ldca(a, i) + metal.ldcg(a, i) * 2 + metal.ldcs(a, i) * 3 + metal.ldlu(a, i) * 4
        v += metal.ldcv(m, (i, 1))
        metal.stcg(out, i, v)
        metal.stcs(out2, (i, 0), v)
        metal.stwb(out2, (i, 1), -v)
        metal.stwt(out2, (i, 2), metal.ldcg(out2, (i, 0)) + 1)


def test_hinted_loads_and_stores_are_plain_accesses():
    a = np.arange(8, dtype=np.int32)
    m = np.arange(16, dtype=np.int32).reshape(8, 2)
    out = np.zeros(8, np.int32)
    out2 = np.zeros((8, 3), np.int32)
    hinted[1, 8](a, m, out, out2)
    v = a * 10 + m[:, 1]
    np.testing.assert_array_equal(out, v)
    np.testing.assert_array_equal(out2, np.stack([v, -v, v + 1], axis=1))


def test_every_hint_is_in_the_metal_namespace():
    for name in cache_hints.LOADS + cache_hints.STORES:
        assert getattr(metal, name) is getattr(cache_hints, name)


def test_wrong_number_of_indices_is_a_clear_error():
    def k(m, out):
        out[0] = metal.ldcg(m, 0)
    with pytest.raises(Exception, match="ldcg: a 2-d array needs 2 indices"):
        metal.compile_msl(k, "void(float32[:, :], float32[:])")


def test_shared_arrays_are_refused_as_numba_cuda_loads_global_memory_only():
    def k(out):
        s = metal.shared.array(4, np.float32)
        out[0] = metal.ldcg(s, 0)
    with pytest.raises(Exception, match="device array"):
        metal.compile_msl(k, "void(float32[:])")


def test_out_of_bounds_hinted_load_is_reported_in_debug_mode():
    @metal.jit(debug=True)
    def k(a, out):
        out[0] = metal.ldcg(a, 5)

    a = np.zeros(3, np.float32)
    out = np.zeros(1, np.float32)
    with pytest.raises(Exception, match="out of bounds|bounds"):
        k[1, 1](a, out)
        metal.synchronize()

"""Issue 24, item 15: round(x, ndigits) of a signalling NaN returned it unquieted; NumPy's np.round (and every
IEEE 754 arithmetic operation) returns it quieted, payload and sign kept. float64 (exact, in software) and
float32, for ndigits 0, positive and negative."""
import numpy as np
import pytest

from numba_metal import metal

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")


@metal.jit
def rounded(x, out, ndigits):
    i = metal.grid(1)
    if i < x.size:
        out[i] = round(x[i], ndigits)


@pytest.mark.parametrize("dtype, bits", [
    (np.float64, np.array([0x7FF0000000000001, 0xFFF0000000000001, 0x7FF4000000000000, 0x7FF8000000000002], np.uint64)),
    (np.float32, np.array([0x7F800001, 0xFF800001, 0x7FA00000, 0x7FC00002], np.uint32)),
])
@pytest.mark.parametrize("ndigits", [0, 2, -1])
def test_round_of_a_nan_is_numpys_quiet_nan(dtype, bits, ndigits):
    x = bits.view(dtype)
    out = np.zeros_like(x)
    rounded[1, 4](x, out, ndigits)
    with np.errstate(invalid="ignore"):
        want = np.round(x, ndigits)
    assert out.view(bits.dtype).tolist() == want.view(bits.dtype).tolist()

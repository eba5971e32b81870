"""``numba.cuda.deviceufunc``: numba-cuda's internal machinery behind its ufuncs and gufuncs. numba-metal's
``vectorize``/``guvectorize`` (numba_metal/libraries/vectorize.py) broadcast with NumPy's rules in their own
code and have no scheduler object to compare, so ``GUFuncEngine`` refuses when used (its tests fail there)."""


class GUFuncEngine:
    """numba-cuda's gufunc scheduler: not in numba-metal."""

    @classmethod
    def from_signature(cls, signature):
        from numba_metal.errors import UnsupportedFeatureError
        raise UnsupportedFeatureError(
            "numba.cuda.deviceufunc.GUFuncEngine is numba-cuda's internal gufunc scheduler; numba-metal's "
            "guvectorize (metal.guvectorize, numba.guvectorize(target='metal')) schedules with NumPy's broadcasting "
            "rules and has no such object (numba_cuda_standin)")

    def __init__(self, *args, **kwargs):
        self.from_signature(None)

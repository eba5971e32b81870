"""``numba.cuda.testing`` for the stand-in: ``CUDATestCase`` and the skip decorators numba-cuda's tests use.

The decorators keep numba-cuda's conditions where they mean the same here (the simulator is not in use, so
``skip_on_cudasim`` runs the test and ``skip_unless_cudasim`` skips it). Those that skip for a missing CUDA tool
(nvdisasm, nvJitLink, the CUDA headers, cudadevrt, a conda CUDA toolkit) skip as impossible on Metal, with the
reason from ``numba_cuda_standin.impossible``. The stand-in claims every compute capability: tests gated on one
run, and pass or fail on what numba-metal does.
"""

import os
import pathlib
import platform
import unittest

import numpy as np
from numba.core import config
from numba.cuda.tests.support import TestCase

from numba_cuda_standin import impossible

#: numba-cuda's test data (CUDA C, PTX, cache use cases), in the unpacked tests (``NUMBA_CUDA_TESTS_ROOT``)
test_data_dir = pathlib.Path(os.environ.get("NUMBA_CUDA_TESTS_ROOT", ".")) / "numba" / "cuda" / "tests" / "data"


class CUDATestCase(TestCase):
    """numba-cuda's base class: its setUp/tearDown turn the low-occupancy and implicit-copy warnings off
    (numba.cuda's switches in Numba's config, and numba-metal's own, ``SWITCHES``)."""

    #: numba-metal's environment switches for the two warnings numba.cuda's config switches off here
    SWITCHES = ("NUMBA_METAL_LOW_OCCUPANCY_WARNINGS", "NUMBA_METAL_WARN_ON_IMPLICIT_COPY")

    FLOAT16_RTOL = np.finfo(np.float16).eps

    def setUp(self):
        self._low_occupancy_warnings = config.CUDA_LOW_OCCUPANCY_WARNINGS
        self._warn_on_implicit_copy = config.CUDA_WARN_ON_IMPLICIT_COPY
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
        config.CUDA_WARN_ON_IMPLICIT_COPY = 0
        self._switches = {name: os.environ.get(name) for name in CUDATestCase.SWITCHES}
        os.environ.update(dict.fromkeys(CUDATestCase.SWITCHES, "0"))

    def tearDown(self):
        config.CUDA_LOW_OCCUPANCY_WARNINGS = self._low_occupancy_warnings
        config.CUDA_WARN_ON_IMPLICIT_COPY = self._warn_on_implicit_copy
        for name, value in self._switches.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _nvidia_code(self, what):
        from numba_metal.errors import UnsupportedFeatureError
        raise UnsupportedFeatureError(f"{what}: FileCheck over NVIDIA assembly or NVVM IR; numba-metal "
                                      "generates MSL (numba_cuda_standin)")

    def assertFileCheckAsm(self, *args, **kwargs):
        self._nvidia_code("assertFileCheckAsm")

    def assertFileCheckLLVM(self, *args, **kwargs):
        self._nvidia_code("assertFileCheckLLVM")

    def assertFileCheckMatches(self, *args, **kwargs):
        self._nvidia_code("assertFileCheckMatches")


def _impossible(key):
    return unittest.skip(impossible.skip_reason(key))


def skip_on_cudasim(reason):
    return unittest.skipIf(config.ENABLE_CUDASIM, reason)


def skip_unless_cudasim(reason):
    return unittest.skipUnless(config.ENABLE_CUDASIM, reason)


skip_on_standalone_numba_cuda = unittest.skipUnless(True, "requires base numba install")


def skip_unless_conda_cudatoolkit(reason):
    return _impossible("driver")


def skip_if_external_memmgr(reason):
    return unittest.skipIf(False, reason)


def skip_under_cuda_memcheck(reason):
    return unittest.skipIf(os.environ.get("CUDA_MEMCHECK") is not None, reason)


def skip_without_nvdisasm(reason):
    return _impossible("ptx_link")


def skip_with_nvdisasm(reason):
    return unittest.skipIf(False, reason)


def skip_on_arm(reason):
    cpu = platform.processor()
    return unittest.skipIf(cpu.startswith("arm") or cpu.startswith("aarch"), reason)


def skip_on_wsl2(reason):
    return unittest.skipIf("wsl2" in platform.release().lower(), reason)


def skip_if_cuda_includes_missing(fn):
    return _impossible("ptx_link")(fn)


def skip_if_curand_kernel_missing(fn):
    return _impossible("ptx_link")(fn)


def cc_X_or_above(major, minor):
    return True


def skip_unless_cc_50(fn):
    return fn


skip_unless_cc_53 = skip_unless_cc_60 = skip_unless_cc_75 = skip_unless_cc_90 = skip_unless_cc_50


def xfail_unless_cudasim(fn):
    return fn if config.ENABLE_CUDASIM else unittest.expectedFailure(fn)


def cudadevrt_missing():
    return True


def skip_if_cudadevrt_missing(fn):
    return _impossible("grid_sync")(fn)


def skip_if_nvjitlink_missing(reason):
    return _impossible("ptx_link")


def skip_on_nvjitlink_13_1_sm_120(reason):
    return unittest.skipIf(False, reason)


class ForeignArray:
    """An array from "another library": only its DLPack export is visible. numba-cuda's exposes the CUDA
    Array Interface; on a Mac other libraries' arrays export DLPack, which numba-metal takes where numba.cuda
    takes that interface (docs/porting-from-numba-cuda.md)."""

    def __init__(self, arr):
        self._arr = arr

    def __dlpack__(self, **kwargs):
        return self._arr.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._arr.__dlpack_device__()

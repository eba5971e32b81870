"""The numba-cuda tests that are skipped because what they test cannot exist on Metal, each with its reason.

A pattern (``fnmatch``, on the test's id relative to ``numba/cuda/tests``, e.g.
``cudapy/test_atomics.py::TestCudaAtomics::test_atomic_add_int64``) names the tests; ``REASONS`` says why.
Only what Metal lacks belongs here. A test that needs something numba-metal could do but does not is *not* listed:
it runs and fails, and docs/testing.md lists it with its cause.
"""

from __future__ import annotations

import fnmatch

#: The prefix of the skip reason the stand-in gives; the runner counts a skip as impossible by it.
SKIP_PREFIX = "impossible on Metal"

#: Why a test is impossible on Metal, by key.
REASONS = {
    "atomics64": "Metal's only 64-bit atomics are max and min of uint64 in device memory, returning no old value "
                 "(MSL 3.1, Apple9 and M2-class GPUs; numba-metal uses them); numba.cuda's other int64, uint64 and "
                 "float64 atomics need read-modify-write operations Metal does not have",
    "grid_sync": "Metal has no grid-wide barrier (cooperative groups' grid.sync() / cooperative launches)",
    "ptx_link": "PTX, NVVM IR, LTO and CUDA C/C++: producing, inspecting or linking NVIDIA code (compile_ptx, "
                "inspect_asm/inspect_llvm checks, link=, lto=, nvrtc, the CUDA toolkit's headers and tools); "
                "Metal compiles MSL",
    "driver": "the CUDA driver's internals (contexts, IPC handles, the driver API's functions and objects, "
              "cuda-python's cuda.core objects) have no Metal counterpart",
}

#: (pattern, reason key), one row per test or group of tests.
IMPOSSIBLE: tuple[tuple[str, str], ...] = (
    # test_atomics: the float64, int64 and uint64 variants (numba-cuda's dtype for each is in the test's body)
    ("cudapy/test_atomics.py::TestCudaAtomics::test_atomic_*double*", "atomics64"),
    ("cudapy/test_atomics.py::TestCudaAtomics::test_atomic_*_int64", "atomics64"),     # int64 (uint64 max/min run)
    ("cudapy/test_atomics.py::TestCudaAtomics::test_atomic_*_64", "atomics64"),        # inc/dec on uint64
    ("cudapy/test_atomics.py::TestCudaAtomics::test_atomic_exch3", "atomics64"),       # uint64
    ("cudapy/test_atomics.py::TestCudaAtomics::test_atomic_compare_and_swap[24]", "atomics64"),  # int64, uint64
    ("cudapy/test_atomics.py::TestCudaAtomics::test_atomic_cas[24]_[12]dim", "atomics64"),       # int64, uint64
    ("cudapy/test_atomics.py::TestCudaAtomics::test_atomic_m??_nan_*", "atomics64"),   # float64 min/max
    # tests whose point is the PTX or NVVM IR numba.cuda generates (a regex over inspect_asm()/inspect_llvm(),
    # compile_ptx for an NVIDIA architecture) or NVIDIA's link-time optimiser
    ("cudapy/test_sync.py::TestCudaSync::test_threadfence*_codegen", "ptx_link"),
    ("cudapy/test_intrinsics.py::TestCudaIntrinsic::test_selp", "ptx_link"),            # counts PTX branches
    ("cudapy/test_warp_ops.py::TestCudaWarpOperations::test_*_sync_const_mode_val*", "ptx_link"),
    ("cudapy/test_localmem.py::TestCudaLocalMem::test_local_array", "ptx_link"),        # ".local" in the PTX
    ("cudapy/test_constmem.py::TestCudaConstantMemory::test_const_array*", "ptx_link"),  # ld.const in the PTX
    ("cudapy/test_errors.py::TestJitErrors::test_lto_without_nvjitlink_error", "ptx_link"),
    # tier 3: regexes over the PTX compile_ptx gives (casts' PTX instructions; every libdevice function compiled
    # to PTX, whose calls numba-metal's own tests run: tests/kernels/test_libdevice.py, tests/language/)
    ("cudapy/test_casting.py::TestCasting::test_*_ptx", "ptx_link"),
    ("cudapy/test_casting.py::TestCasting::test_native_cast", "ptx_link"),
    ("cudapy/test_libdevice.py::TestLibdeviceCompilation::*", "ptx_link"),
    # tier 3: kernels calling CUDA C functions linked from cuda.CUSource (numba-metal's counterpart, MSL linked
    # with declare_device(link=[".metal"]), is tests/kernels/test_external.py)
    ("cudapy/test_device_func.py::TestDeclareDevice::test_link_*", "ptx_link"),
    ("cudapy/test_device_func.py::TestDeclareDevice::test_*declared_function*", "ptx_link"),
    ("cudapy/test_device_func.py::TestDeclareDevice::test_declared_in_called_function*", "ptx_link"),
    ("cudapy/test_device_func.py::TestDeclareDeviceCABI::*", "ptx_link"),
    ("cudapy/test_extending.py::TestExtendingLinkage::test_linked_called_through_overload", "ptx_link"),
    # .maxntid/.minnctapersm/.maxclusterrank in inspect_asm()'s PTX (numba-metal's launch_bounds, Metal's
    # [[max_total_threads_per_threadgroup]], is tested in tests/host/test_signature_dispatch.py)
    ("cudapy/test_dispatcher.py::TestLaunchBounds::test_launch_bounds_*", "ptx_link"),
    # the CUDA driver's own objects and functions
    ("cudapy/test_vectorize.py::TestCUDAVectorize::test_no_transfer_for_device_data", "driver"),  # patches cuMemcpy*
    ("cudapy/test_stream_api.py::TestStreamAPI::test_external_stream_create", "driver"),  # a CUstream pointer
    ("cudadrv/test_events.py::TestCudaEvent::test_event_elapsed_cuda_core_stream", "driver"),  # cuda.core.Device
)


def reason_for(test_id: str) -> str | None:
    """The key in ``REASONS`` of the first row of ``IMPOSSIBLE`` whose pattern matches ``test_id``, else None."""
    for pattern, key in IMPOSSIBLE:
        if fnmatch.fnmatchcase(test_id, pattern):
            return key
    return None


def skip_reason(key: str) -> str:
    """The skip reason the stand-in gives a test impossible for ``key`` (the runner parses it back)."""
    return f"{SKIP_PREFIX} [{key}]: {REASONS[key]}"


def parse_skip_reason(reason: str) -> str | None:
    """The reason key of a skip reason made by ``skip_reason``, or None for any other skip."""
    marker = SKIP_PREFIX + " ["
    start = reason.find(marker)
    if start < 0:
        return None
    end = reason.find("]", start)
    key = reason[start + len(marker):end]
    return key if key in REASONS else None

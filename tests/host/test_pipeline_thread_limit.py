"""Issue 26 item 4: Metal's ``maxTotalThreadsPerThreadgroup`` depends on the pipeline (its register use) and
can be below 1024, while numba.cuda code launches 1024-thread blocks. A launch above the pipeline's maximum
builds a variant of the kernel with ``[[max_total_threads_per_threadgroup(N)]]`` for the launch's N threads
and uses it when its maximum covers N; otherwise the launch is refused naming both numbers.

Shown on the simulated Metal device, whose pipelines report what ``NUMBA_METAL_SIM_PIPELINE_MAX_THREADS``
(kernels without the attribute) and ``NUMBA_METAL_SIM_DECLARED_MAX_THREADS`` (kernels with it) say, read at
each compile, and 512 for a kernel with emulated float64 otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from numba_metal import metal, runtime
from numba_metal.errors import KernelLaunchError

pytestmark = pytest.mark.skipif("metal-sim" not in {d.kind for d in runtime.list_devices(include_simulated=True)},
                                reason="the simulated Metal device exists only in builds without Metal")


@pytest.fixture
def sim():
    previous = metal.get_current_device().kind
    metal.select_device("metal-sim")
    yield metal.current_context().device
    metal.synchronize()
    metal.select_device(previous)


def block_sum_kernel(tag: int):
    # A new source per test (tag): a pipeline is compiled once per source and device, and the simulated limit is
    # read when it is compiled. Every thread of the block adds into shared memory, so that the sum is right
    # only when one threadgroup really holds all 1024 threads.
    @metal.jit
    def block_sum(out):
        shared = metal.shared.array(1024, np.int32)
        t = metal.threadIdx.x
        shared[t] = t + 1
        metal.syncthreads()
        if t == 0:
            s = 0
            for i in range(metal.blockDim.x):
                s += shared[i]
            out[0] = s
            out[1] = metal.blockDim.x + tag
    return block_sum


def test_the_simulated_pipeline_reports_the_configured_limit(sim, monkeypatch):
    monkeypatch.setenv("NUMBA_METAL_SIM_PIPELINE_MAX_THREADS", "512")
    src = "#include <metal_stdlib>\nusing namespace metal;\nkernel void lim512(device int* o [[buffer(0)]]) { o[0] = 1; }\n"
    assert sim.compile(src, "lim512").max_total_threads_per_threadgroup == 512
    declared = src.replace("kernel void lim512", "[[max_total_threads_per_threadgroup(1024)]] kernel void lim1024")
    assert sim.compile(declared, "lim1024").max_total_threads_per_threadgroup == 1024


def test_a_1024_thread_launch_runs_when_the_default_pipeline_reports_512(sim, monkeypatch):
    monkeypatch.setenv("NUMBA_METAL_SIM_PIPELINE_MAX_THREADS", "512")
    k = block_sum_kernel(1)
    out = metal.device_array(2, np.int32)
    k[1, 1024](out)    # before: KernelLaunchError "1024 threads ... more than this kernel's maximum of 512"
    assert out.copy_to_host().tolist() == [1024 * 1025 // 2, 1025]
    k[1, 256](out)     # smaller launches keep working on the variant
    assert out.copy_to_host().tolist() == [256 * 257 // 2, 257]


def test_a_launch_the_variant_cannot_hold_either_is_refused_naming_both_numbers(sim, monkeypatch):
    monkeypatch.setenv("NUMBA_METAL_SIM_PIPELINE_MAX_THREADS", "512")
    monkeypatch.setenv("NUMBA_METAL_SIM_DECLARED_MAX_THREADS", "768")
    k = block_sum_kernel(2)
    out = metal.device_array(2, np.int32)
    with pytest.raises(KernelLaunchError, match=r"1024 threads per threadgroup .* maximum of 512 .* the pipeline "
                                                r"built for it reports 768; use threadgroups of at most 512"):
        k[1, 1024](out)
    k[1, 512](out)
    assert out.copy_to_host().tolist() == [512 * 513 // 2, 514]


def test_a_kernel_with_emulated_float64_gets_the_heavy_kernel_limit_and_still_launches_1024_threads(sim, monkeypatch):
    monkeypatch.delenv("NUMBA_METAL_SIM_PIPELINE_MAX_THREADS", raising=False)

    @metal.jit
    def scale(a, x):
        i = metal.grid(1)
        if i < a.size:
            a[i] = a[i] * x

    a = metal.to_device(np.arange(2048, dtype=np.float64))
    scale[2, 1024](a, 0.5)
    np.testing.assert_array_equal(a.copy_to_host(), np.arange(2048) * 0.5)

"""Issue 24, item 9: a barrier that not every thread of the threadgroup reaches the same number of times, at
the same call, is undefined behaviour on a GPU (MSL specification: every thread of the threadgroup must
encounter threadgroup_barrier). The CPU device reports it as KernelBarrierError naming the kernel, the
barrier's file:line and the threads that did not arrive, and never returns a result."""
import re

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelBarrierError, MetalRuntimeError, NumbaMetalError

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")

HERE = __file__.rsplit("/", 1)[-1]


def _line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


# Deliberately divergent, and these tests read the plain CPU device's message: never sanitized (the
# sanitizer's sync report of the same bugs is tested in tests/sanitizer/).
@metal.jit(sanitize=False)
def both_arms(a):
    i = metal.threadIdx.x
    if i < 16:
        metal.syncthreads()   # first arm
        a[i] = 1
    else:
        metal.syncthreads()   # second arm
        a[i] = 2


@metal.jit(sanitize=False)
def half_second(a):
    i = metal.threadIdx.x
    metal.syncthreads()
    if i < 32:
        metal.syncthreads()   # only half
    a[i] = 1


def _run(kernel):
    a = metal.to_device(np.full(64, -1, np.float32))
    with pytest.raises(KernelBarrierError) as info:
        kernel[1, 64](a)
        metal.synchronize()
    return str(info.value)


def test_a_barrier_in_both_arms_of_an_if_else_is_an_error():
    assert issubclass(KernelBarrierError, MetalRuntimeError) and issubclass(KernelBarrierError, NumbaMetalError)
    message = _run(both_arms)
    first, second = _line_of(both_arms.py_func, "# first arm"), _line_of(both_arms.py_func, "# second arm")
    assert "kernel 'both_arms" in message
    # 48 threads wait at the second arm's barrier; the 16 of the first arm are named as not arriving there.
    assert f"48 work-items wait at the barrier at {HERE}:{second}" in message, message
    assert f"16 wait at the barrier at {HERE}:{first} (threads (0,0,0), (1,0,0)" in message, message


def test_half_the_threadgroup_at_a_second_barrier_is_an_error():
    message = _run(half_second)
    line = _line_of(half_second.py_func, "# only half")
    assert f"32 work-items wait at the barrier at {HERE}:{line}" in message, message
    assert re.search(r"32 have exited without reaching it \(threads \(32,0,0\), \(33,0,0\)", message), message


def test_the_process_goes_on_after_a_divergent_barrier():
    _run(both_arms)

    @metal.jit
    def fine(a):
        i = metal.threadIdx.x
        metal.syncthreads()
        a[i] = i

    a = metal.to_device(np.zeros(64, np.float32))
    fine[1, 64](a)
    assert a.copy_to_host().tolist() == list(range(64))


def test_barriers_every_thread_reaches_run():
    """Barriers in loops every thread runs the same number of times, in a device function, and in a 2-D
    threadgroup: no report."""
    @metal.jit(device=True)
    def stage(s, i, v):
        s[i] = v
        metal.syncthreads()
        return s[(i + 1) % 64]

    @metal.jit
    def rotate(a, rounds):
        s = metal.shared.array(64, np.float32)
        i = metal.threadIdx.y * 8 + metal.threadIdx.x
        v = a[i]
        for _ in range(rounds):
            v = stage(s, i, v)
            metal.syncthreads()
        a[i] = v

    a = metal.to_device(np.arange(64, dtype=np.float32))
    rotate[1, (8, 8)](a, 3)
    assert a.copy_to_host().tolist() == [float((i + 3) % 64) for i in range(64)]

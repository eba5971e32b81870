"""Regression: a host read of device memory did not wait for the kernel writing it. numba.cuda's reduction
example (``array_sum[1, 1024](a); print(a[0])``) printed 0 instead of 523776: ``DeviceNDArray.__getitem__``
read the element before waiting; a mapped (pinned, managed) array's reads never waited; a copy given a stream
waited for that stream only, not for a kernel on another stream writing the array.

Every host path that reads or writes a device array's or a mapped array's elements is checked right after a
launch of a slow kernel (1,024 threads meeting at many barriers, then writing), on the CPU reference device
and the simulated Metal device: a read must see what the kernel wrote, a write must not reach a kernel that
read the old contents.
"""

import copy
import pickle

import numpy as np
import pytest

from numba_metal import metal, runtime

THREADS = 1024
BARRIERS = 100


@metal.jit
def slow_fill(out, value):
    """out[t] = value for each of the threadgroup's threads, after BARRIERS barriers."""
    t = metal.threadIdx.x
    for _ in range(BARRIERS):
        metal.syncthreads()
    if t < out.size:
        out[t] = value


@metal.jit
def slow_copy(src, dst):
    """dst[t] = src[t], read after BARRIERS barriers."""
    t = metal.threadIdx.x
    for _ in range(BARRIERS):
        metal.syncthreads()
    if t < src.size:
        dst[t] = src[t]


@pytest.fixture(params=["cpu", "metal-sim"])
def device_kind(request):
    """Each test on the CPU reference device and on the simulated Metal device (where this build has it)."""
    kind = request.param
    if kind not in {d.kind for d in runtime.list_devices(include_simulated=True)}:
        pytest.skip(f"this build has no {kind} device (the simulated Metal device exists where Metal does not)")
    previous = metal.get_current_device().kind
    metal.select_device(kind)
    yield kind
    metal.synchronize()
    metal.select_device(previous)


def filled(value=7.0, n=THREADS, make=metal.device_array):
    """An array of n float32 zeros that a slow kernel, launched now, is about to fill with ``value``."""
    a = make(n, np.float32)
    slow_fill[1, THREADS](a, np.float32(value))
    return a


def test_numba_cudas_reduction_example_prints_523776(device_kind, capsys):
    # numba.cuda's documentation (examples/sum.py), with ``cuda.`` renamed ``metal.``.
    a = metal.to_device(np.arange(1024))
    nelem = len(a)

    @metal.jit
    def array_sum(data):
        tid = metal.threadIdx.x
        size = len(data)
        if tid < size:
            i = metal.grid(1)

            # Perform partial reductions
            s = 1
            while s < metal.blockDim.x:
                if tid % (2 * s) == 0 and tid + s < size:
                    data[tid] += data[tid + s]
                s *= 2
                metal.syncthreads()

    array_sum[1, nelem](a)
    print(a[0])                  # 523776
    assert capsys.readouterr().out == "523776\n"


DEVICE_ARRAY_READS = {
    "d[i]": lambda d: d[5],
    "d[-1]": lambda d: d[-1],
    "d[i, j]": lambda d: d.reshape(32, 32)[3, 4],
    "d.getitem(i, stream)": lambda d: d.getitem(5, stream=metal.stream()),
    "d[:k] copied": lambda d: d[:8].copy_to_host()[5],
    "views of views": lambda d: d[2:][3:][5],
    "iteration": lambda d: list(d)[5],
    "x == d": lambda d: 7.0 * bool((np.full(THREADS, 7, np.float32) == d).all()),
    "np.asarray(d)": lambda d: np.asarray(d)[5],
    "__array__ with dtype": lambda d: d.__array__(np.float64)[5],
    "copy_to_host()": lambda d: d.copy_to_host()[5],
    "copy_to_host(ary)": lambda d: d.copy_to_host(np.empty(THREADS, np.float32))[5],
    "copy_to_host on another stream": lambda d: d.copy_to_host(stream=metal.stream())[5],
    "a bound array's copy": lambda d: d.bind(metal.stream()).copy_to_host()[5],
    "copy_to_device from it": lambda d: _copied_to_device(d)[5],
    "np.from_dlpack (host memory)": lambda d: np.from_dlpack(_HostExport(d))[5],
    "pickle": lambda d: pickle.loads(pickle.dumps(d)).copy_to_host()[5],
    "metal.reduce": lambda d: metal.reduce(lambda a, b: max(a, b))(d),
    "a ufunc's result": lambda d: np.asarray(_twice(d))[5] / 2,
}


class _HostExport:
    """``d`` exported as host memory (kDLCPU), as NumPy >= 2.1's ``np.from_dlpack(d, device="cpu")`` asks."""

    def __init__(self, d):
        self.d = d

    def __dlpack__(self, stream=None, max_version=None, **kw):
        return self.d.__dlpack__(stream=stream, max_version=max_version, dl_device=(1, 0))

    def __dlpack_device__(self):
        return (1, 0)


def _copied_to_device(d):
    out = metal.device_array_like(d)
    out.copy_to_device(d)
    return out.copy_to_host()


@metal.vectorize(["float32(float32)"], target="metal")
def _twice(x):
    return x * 2


@pytest.mark.parametrize("read", DEVICE_ARRAY_READS, ids=list(DEVICE_ARRAY_READS))
def test_device_array_reads_see_what_the_kernel_wrote(device_kind, read):
    assert DEVICE_ARRAY_READS[read](filled(7.0)) == 7.0


def test_a_dlpack_copy_for_a_consumer_that_synchronises_itself_is_made_after_the_kernel(device_kind):
    if device_kind != "metal-sim":
        pytest.skip("stream=-1 (the consumer synchronises) is for Metal devices; a kDLCPU export takes None")
    d = filled(7.0)

    class Exporter:      # only DLPack: a copy exported to a consumer that waits for nothing itself
        def __dlpack__(self, **kw):
            return d.__dlpack__(copy=True, stream=-1, max_version=kw.get("max_version"))

        def __dlpack_device__(self):
            return d.__dlpack_device__()

    assert metal.from_dlpack(Exporter()).copy_to_host()[5] == 7.0


MAPPED_READS = {
    "m[i]": lambda m: m[5],
    "m[i, j]": lambda m: m.reshape(32, 32)[0, 5],
    "m[:k][i]": lambda m: m[:8][5],
    "item": lambda m: m[5:6].item(),
    "tolist": lambda m: m.tolist()[5],
    "iteration": lambda m: list(m)[5],
    "repr": lambda m: float(repr(m).split("[")[1].split(",")[0]),
    "str": lambda m: float(str(m).strip("[]").split()[0]),
    "comparison": lambda m: 7.0 * bool((m == 7).all()),
    "arithmetic": lambda m: (m + 1)[5] - 1,
    "sum": lambda m: m.sum() / m.size,
    "np.max": lambda m: np.max(m),
    "np.array_equal": lambda m: 7.0 * np.array_equal(m, np.full(THREADS, 7, np.float32)),
    "copy": lambda m: m.copy()[5],
    "copy.deepcopy": lambda m: copy.deepcopy(m)[5],
    "astype": lambda m: m.astype(np.float64)[5],
    "pickle": lambda m: pickle.loads(pickle.dumps(m))[5],
    "float of a 0-d view": lambda m: float(m[5:6].reshape(())),
    "sort": lambda m: np.sort(m)[0],
    "tobytes": lambda m: np.frombuffer(m.tobytes(), np.float32)[5],
}


@pytest.mark.parametrize("make", ["mapped_array", "pinned_array", "managed_array"])
@pytest.mark.parametrize("read", MAPPED_READS, ids=list(MAPPED_READS))
def test_mapped_pinned_and_managed_array_reads_see_what_the_kernel_wrote(device_kind, read, make):
    assert MAPPED_READS[read](filled(7.0, make=getattr(metal, make))) == 7.0


def copy_of_what_a_slow_kernel_reads(src):
    """(src, dst): a slow kernel, launched now, copies src to dst after its barriers."""
    dst = metal.device_array(THREADS, np.float32)
    slow_copy[1, THREADS](src, dst)
    return dst


HOST_WRITES = {
    "d[...] = x": lambda d: d.__setitem__(Ellipsis, np.zeros(THREADS, np.float32)),
    "d[i] = x": lambda d: d.__setitem__(5, 0),
    "d[:k] = x": lambda d: d[:8].__setitem__(slice(None), 0),
    "d.setitem on another stream": lambda d: d.setitem(5, 0, stream=metal.stream()),
    "copy_to_device": lambda d: d.copy_to_device(np.zeros(THREADS, np.float32)),
    "copy_to_device on another stream": lambda d: d.copy_to_device(np.zeros(THREADS, np.float32), stream=metal.stream()),
    "to_device(to=d)": lambda d: metal.to_device(np.zeros(THREADS, np.float32), to=d),
}


@pytest.mark.parametrize("write", HOST_WRITES, ids=list(HOST_WRITES))
def test_host_writes_wait_for_the_kernels_that_read_the_old_contents(device_kind, write):
    src = metal.to_device(np.full(THREADS, 3, np.float32))
    dst = copy_of_what_a_slow_kernel_reads(src)
    HOST_WRITES[write](src)
    assert dst.copy_to_host()[5] == 3.0


def test_mapped_array_writes_wait_for_the_kernels_that_read_the_old_contents(device_kind):
    src = metal.mapped_array(THREADS, np.float32)
    src[:] = 3
    dst = copy_of_what_a_slow_kernel_reads(src)
    src[5] = 0
    src.fill(0)
    assert dst.copy_to_host()[5] == 3.0


def test_a_read_on_one_stream_waits_for_a_kernel_on_another_stream(device_kind):
    writer, reader = metal.stream(), metal.stream()
    d = metal.device_array(THREADS, np.float32)
    slow_fill[1, THREADS, writer](d, np.float32(7))
    assert d.copy_to_host(stream=reader)[5] == 7.0
    slow_fill[1, THREADS, writer](d, np.float32(8))
    assert d.getitem(5, stream=reader) == 8.0


def test_reads_after_the_work_completed_take_no_wait_and_a_debug_launch_reports_its_own_failure(device_kind):
    d = filled(7.0)
    assert d[5] == 7.0 and d[6] == 7.0                   # the second read finds nothing left to wait for
    d2 = metal.device_array(4, np.float32)

    @metal.jit(debug=True)
    def out_of_bounds(a):
        a[4] = 1.0

    with pytest.raises(metal.KernelBoundsError):
        out_of_bounds[1, 1](d2)                          # a debug=True launch waits, as numba.cuda's
    assert d2[0] == 0.0                                  # reported once; the device stays usable


def test_a_threads_failure_is_reported_by_its_next_read_after_another_thread_waited(device_kind):
    import threading

    @metal.jit
    def endless(a):
        x = a[0]
        while x >= 0:                   # float32 stops growing at 2**24: the loop never ends
            x += 1.0
            a[1] = x

    d = metal.device_array(4, np.float32)
    launched, waited, outcome = threading.Event(), threading.Event(), []

    def launcher():
        endless[1, 1](d)                # stopped by the time limit: a failure of this thread's
        launched.set()
        waited.wait()
        try:
            d[0]                        # nothing is in flight now, but this thread's failure is unreported
        except metal.MetalRuntimeError as e:
            outcome.append("time limit" in str(e))

    previous = metal.set_kernel_time_limit(0.2)
    try:
        t = threading.Thread(target=launcher)
        t.start()
        launched.wait()
        metal.synchronize()             # waits for the kernel; its failure belongs to the launching thread
        waited.set()
        t.join()
    finally:
        metal.set_kernel_time_limit(previous)
    assert outcome == [True]

"""numba.cuda's device and stream API: is_available, detect, list_devices / gpus, select_device and
get_current_device, current_context, require_context, close, the float16/bfloat16 queries, the profiler
no-ops, the stream flavours (legacy and per-thread default streams, external streams), stream callbacks,
async_done with asyncio, and events with elapsed_time (numba-cuda's api.py, cudadrv/driver.py and
test_stream_api.py / test_events.py)."""

import asyncio
import threading

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError, UnsupportedPlatformError
from numba_metal.runtime import list_devices as runtime_devices
import shared_kernels
from shared_kernels import spin_then_set


def _has_metal_gpu():
    return any(d.kind == "metal" for d in runtime_devices())


def test_availability_detect_and_device_lists_count_metal_gpus_only(capsys):
    gpus = _has_metal_gpu()
    assert metal.is_available() is gpus
    assert metal.detect() is gpus
    printed = capsys.readouterr().out
    assert "CPU reference device" in printed and "Found" in printed
    assert len(metal.list_devices()) == len(metal.gpus) == sum(d.kind == "metal" for d in runtime_devices())
    assert all(g.info.kind == "metal" for g in metal.gpus)


@pytest.mark.skipif(_has_metal_gpu(), reason="checks the machine without a Metal GPU")
def test_select_device_by_number_never_picks_the_cpu_device():
    with pytest.raises(UnsupportedPlatformError, match="NUMBA_METAL_DEVICE=cpu"):
        metal.select_device(0)
    assert metal.get_current_device().kind == "cpu"       # the selection is unchanged


def test_current_device_and_context_have_numba_cuda_attributes():
    dev = metal.get_current_device()
    assert dev is metal.current_context() is metal.gpus.current
    assert dev.kind == "cpu" and isinstance(dev.id, int) and dev.name == dev.info.name
    assert metal.select_device("cpu") is dev                # one context per device for the process

    @metal.require_context
    def body(x):
        return x + 1
    assert body(1) == 2
    assert metal.is_float16_supported() and not metal.is_bfloat16_supported()


def test_get_memory_info_is_free_and_total_bytes_of_the_devices_budget():
    import gc
    ctx = metal.current_context()
    gc.collect()
    info = ctx.get_memory_info()
    free, total = info                                    # numba.cuda's MemoryInfo named tuple
    assert (info.free, info.total) == (free, total) and type(info).__name__ == "MemoryInfo"
    assert 0 < free <= total
    assert total == ctx.device.memory_info()["total"]
    d = metal.device_array(32 << 20, np.uint8)
    gc.collect()
    during = ctx.get_memory_info()
    assert during.total == total and free - during.free >= 32 << 20
    del d
    gc.collect()
    assert ctx.get_memory_info().free - during.free >= 32 << 20


def test_deallocations_clear_frees_the_memory_of_dropped_arrays_a_kernel_last_used():
    import gc
    ctx = metal.current_context()
    # sanitize=False: free memory is measured, and a sanitizing kernel allocates its shadow buffer as it needs
    spin_then_set = metal.jit(sanitize=False)(shared_kernels.spin_then_set.py_func)
    kept = metal.device_array(64, np.int32)
    spin_then_set[1, 64](kept, 1, 1)
    gc.collect()
    before = ctx.get_memory_info().free
    d = metal.device_array(16 << 20, np.uint8)
    spin_then_set[1, 64](d, 1000, 1)             # the kernel keeps its last launch's arrays bound
    assert ctx.get_memory_info().free <= before - (16 << 20)
    del d
    metal.synchronize()
    ctx.deallocations.clear()                    # numba.cuda's idiom for "free what I dropped now"
    assert len(ctx.deallocations) == 0
    assert ctx.get_memory_info().free >= before
    for value in (7, 8):                         # the kernel binds its arguments again
        spin_then_set[1, 64](kept, 1, value)
        np.testing.assert_array_equal(kept.copy_to_host(), value)


def test_reset_waits_for_the_work_and_arrays_stay_valid():
    ctx = metal.current_context()
    d = metal.device_array(64, np.int32)
    spin_then_set[1, 64](d, 20000, 5)
    ctx.reset()
    assert all(queue.query(0) for queue in ctx.all_queues())   # nothing left running: reset waited
    np.testing.assert_array_equal(np.asarray(d), 5)
    spin_then_set[1, 64](d, 1, 6)
    np.testing.assert_array_equal(d.copy_to_host(), 6)


def test_close_waits_for_the_work_and_the_device_stays_usable():
    d = metal.device_array(64, np.int32)
    spin_then_set[1, 64](d, 10000, 3)
    metal.close()
    np.testing.assert_array_equal(d.copy_to_host(), 3)
    spin_then_set[1, 64](d, 1, 4)
    np.testing.assert_array_equal(d.copy_to_host(), 4)


def test_profiler_controls_are_harmless():
    metal.profile_start()
    with metal.profiling():
        d = metal.to_device(np.ones(4, np.float32))
    metal.profile_stop()
    np.testing.assert_array_equal(d.copy_to_host(), 1)


def test_legacy_and_per_thread_default_streams():
    assert metal.legacy_default_stream().queue is metal.default_stream().queue
    mine = metal.per_thread_default_stream()
    assert mine is metal.per_thread_default_stream() and mine.queue is not metal.default_stream().queue
    other = []
    t = threading.Thread(target=lambda: other.append(metal.per_thread_default_stream()))
    t.start()
    t.join()
    assert other[0] is not mine
    d = metal.device_array(64, np.int32)
    spin_then_set[1, 64, mine](d, 100, 9)
    mine.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(stream=mine), 9)
    with pytest.raises(UnsupportedFeatureError, match="external"):
        metal.external_stream(0x1234)


def test_add_callback_runs_after_the_preceding_work_with_numba_cudas_arguments():
    s = metal.stream()
    d = metal.device_array(256, np.int32)
    seen = []
    done = threading.Event()

    def callback(stream, status, arg):
        seen.append((stream, status, arg, int(d.copy_to_host(stream=stream)[0])))
        done.set()
    spin_then_set[4, 64, s](d, 20000, 11)
    s.add_callback(callback, "payload")
    assert done.wait(60)
    assert seen == [(s, 0, "payload", 11)]


def test_async_done_completes_an_asyncio_future():
    s = metal.stream()
    d = metal.device_array(256, np.int32)

    async def main():
        spin_then_set[4, 64, s](d, 20000, 12)
        result = await asyncio.wait_for(s.async_done(), 60)
        return result, s.query()
    result, finished = asyncio.run(main())
    assert result is s and finished
    np.testing.assert_array_equal(d.copy_to_host(stream=s), 12)


def test_events_time_work_in_milliseconds():
    s = metal.stream()
    start, end = metal.event(), metal.event()
    d = metal.device_array(256, np.int32)
    start.record(s)
    spin_then_set[4, 64, s](d, 20000, 1)
    end.record(s)
    end.synchronize()
    elapsed = start.elapsed_time(end)
    assert elapsed == metal.event_elapsed_time(start, end) and elapsed > 0


def test_dropped_streams_are_waited_for_by_synchronize_and_let_go_once_idle():
    import gc
    ctx = metal.get_current_device()
    d = metal.device_array(256, np.int32)
    spin_then_set[4, 64, metal.stream()](d, 200000, 5)  # the stream is dropped at once, its work queued
    metal.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), 5)
    for _ in range(200):                                 # idle dropped streams are not kept
        s = metal.stream()
        s.synchronize()
        del s
    gc.collect()
    assert len(ctx.retired_queues) <= 1

"""nm_device_get_memory_info: the device's memory budget (numba.cuda's get_memory_info) on every device.

Host and GPU share memory, so ``total`` is a budget (Metal's recommendedMaxWorkingSetSize; the CPU device:
physical memory), ``allocated`` what this process's device has allocated (Metal's currentAllocatedSize) and
``free`` what is left of the budget."""

from __future__ import annotations

import ctypes
import gc
import mmap
import os

import pytest

MB = 1 << 20


def _info(device):
    gc.collect()  # buffers of earlier tests still waiting for the collector would be freed mid-measurement
    info = device.memory_info()
    assert info["free"] == max(info["total"] - info["allocated"], 0)
    return info


def test_allocated_buffers_are_counted_until_released(device):
    before = _info(device)
    assert before["total"] > 0
    buf = device.new_buffer(64 * MB + 1)
    during = _info(device)
    assert during["total"] == before["total"]
    grown = during["allocated"] - before["allocated"]
    assert grown >= 64 * MB + 1, grown
    if device.info.kind != "metal":   # what else Metal itself allocates meanwhile is its business
        assert grown <= 64 * MB + device.info.page_size, grown
    buf.release()
    after = _info(device)
    assert during["allocated"] - after["allocated"] >= 64 * MB + 1


def test_the_budget_is_the_working_set_on_metal_and_physical_memory_on_the_cpu_device(device):
    info = _info(device)
    if device.info.kind == "cpu":
        assert info["total"] == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        assert device.info.recommended_working_set <= info["total"]
    else:
        assert info["total"] == device.info.recommended_working_set


@pytest.mark.devices("cpu", "metal-sim")  # Apple does not say whether currentAllocatedSize counts bytesNoCopy memory
def test_wrapped_memory_is_its_owners(device):
    m = mmap.mmap(-1, 16 * MB)
    before = _info(device)["allocated"]
    buf = device.wrap_buffer(ctypes.addressof(ctypes.c_char.from_buffer(m)), len(m), owner=m)
    assert _info(device)["allocated"] == before
    buf.release()

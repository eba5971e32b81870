"""Fixtures for the runtime tests: the CPU reference device, a queue, and a helper that runs MSL."""

from __future__ import annotations

import pytest

from numba_metal import runtime as rt


@pytest.fixture(scope="session")
def device() -> rt.Device:
    cpu = [d for d in rt.list_devices() if d.kind == "cpu"]
    assert cpu, "the CPU reference device must always be listed"
    return rt.open_device(cpu[0].index)


@pytest.fixture()
def queue(device):
    q = device.new_queue()
    yield q
    q.release()



"""numba-metal kernels inside Dask: ``dask.array.map_blocks`` on a real ``distributed.LocalCluster`` of
worker processes (started with spawn, each opening its own device), checked against NumPy."""

from __future__ import annotations

import os

import numpy as np
import pytest

from numba_metal import metal

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@metal.jit(cache=True)
def saxpy(a, x, y, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def block_result(x, y):
    """One chunk: the kernel on the worker's own device (x and y are NumPy arrays)."""
    out = np.empty_like(x)
    saxpy[(x.size + 127) // 128, 128](np.float32(2), x, y, out)
    return out


def test_map_blocks_with_the_threaded_scheduler():
    x = np.arange(10_000, dtype=np.float32)
    y = np.ones_like(x)
    dx, dy = da.from_array(x, chunks=2_500), da.from_array(y, chunks=2_500)
    got = da.map_blocks(block_result, dx, dy, dtype=np.float32).compute(scheduler="threads")
    np.testing.assert_array_equal(got, 2 * x + y)


def _worker_device():
    import os

    from numba_metal import metal
    return os.getpid(), metal.get_device_info().kind


def test_kernels_in_local_cluster_worker_processes(tmp_path):
    # Two spawned worker processes share one disk cache (a private directory for this test).
    env = {"NUMBA_METAL_DEVICE": "cpu", "PYTHONPATH": ROOT, "NUMBA_METAL_CACHE_DIR": str(tmp_path)}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
                                  env=env) as cluster, distributed.Client(cluster) as client:
        assert dask.config.get("distributed.worker.multiprocessing-method") == "spawn"
        x = np.random.default_rng(0).standard_normal(40_000).astype(np.float32)
        y = np.arange(40_000, dtype=np.float32)
        dx, dy = da.from_array(x, chunks=5_000), da.from_array(y, chunks=5_000)
        got = da.map_blocks(block_result, dx, dy, dtype=np.float32).compute()
        np.testing.assert_array_equal(got, np.float32(2) * x + y)
        # Each worker process runs the kernel on a device of its own.
        workers = sorted(client.scheduler_info()["workers"])
        assert len(workers) == 2
        for address in workers:
            out = client.submit(block_result, x[:1000], y[:1000], workers=[address], pure=False).result()
            np.testing.assert_array_equal(out, np.float32(2) * x[:1000] + y[:1000])
        devices = client.run(_worker_device)
        assert sorted(devices) == workers and all(kind == "cpu" for _, kind in devices.values())
        assert len({pid for pid, _ in devices.values()} | {os.getpid()}) == 3
        # A device array sent to a worker arrives as its data on the worker's device.
        d = metal.to_device(y[:100])
        back = client.submit(lambda a: (type(a).__name__, a.copy_to_host() * 2), d).result()
        assert back[0] == "DeviceNDArray"
        np.testing.assert_array_equal(back[1], y[:100] * 2)
    entries = list((tmp_path / "kernels").iterdir())
    assert len(entries) == 1, entries   # one cache entry, written by whichever worker compiled first

"""numba-metal kernels inside Dask: ``dask.array.map_blocks`` on a real ``distributed.LocalCluster`` of
worker processes (started with spawn, each opening its own device), checked against NumPy."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


CLUSTER_SCRIPT = """
import os, sys
import numpy as np
import dask, dask.array as da, distributed
from numba_metal import metal

@metal.jit(cache=True)
def saxpy(a, x, y, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]

def block_result(x, y):
    out = np.empty_like(x)
    saxpy[(x.size + 127) // 128, 128](np.float32(2), x, y, out)
    return out

def worker_device():
    import os
    from numba_metal import metal
    return os.getpid(), metal.get_device_info().kind

if __name__ == "__main__":
    env = {"NUMBA_METAL_DEVICE": "cpu", "PYTHONPATH": os.environ["PYTHONPATH"],
           "NUMBA_METAL_CACHE_DIR": os.environ["NUMBA_METAL_CACHE_DIR"]}
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
        assert len(workers) == 2, workers
        for address in workers:
            out = client.submit(block_result, x[:1000], y[:1000], workers=[address], pure=False).result()
            np.testing.assert_array_equal(out, np.float32(2) * x[:1000] + y[:1000])
        devices = client.run(worker_device)
        assert sorted(devices) == workers and all(kind == "cpu" for _, kind in devices.values()), devices
        assert len({pid for pid, _ in devices.values()} | {os.getpid()}) == 3, devices
        # A device array sent to a worker arrives as its data on the worker's device.
        d = metal.to_device(y[:100])
        kind, doubled = client.submit(lambda a: (type(a).__name__, a.copy_to_host() * 2), d).result()
        assert kind == "DeviceNDArray", kind
        np.testing.assert_array_equal(doubled, y[:100] * 2)
    print("ok")
"""


def test_map_blocks_with_the_threaded_scheduler():
    script = {"__name__": "dask_kernels"}   # the cluster script's kernel and block function, in this process
    exec(CLUSTER_SCRIPT, script)
    x = np.arange(10_000, dtype=np.float32)
    y = np.ones_like(x)
    dx, dy = da.from_array(x, chunks=2_500), da.from_array(y, chunks=2_500)
    got = da.map_blocks(script["block_result"], dx, dy, dtype=np.float32).compute(scheduler="threads")
    np.testing.assert_array_equal(got, 2 * x + y)


@pytest.mark.unsanitized("counts the workers' disk-cache entries: a sanitizing kernel is never cached")
def test_kernels_in_local_cluster_worker_processes(tmp_path):
    # The cluster runs from a script of its own, as a user's program would (its workers are spawned and
    # import the script as their main module), bounded in time; the two workers share one disk cache.
    script = tmp_path / "cluster.py"
    script.write_text(CLUSTER_SCRIPT)
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=ROOT, NUMBA_METAL_DEVICE="cpu", NUMBA_METAL_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout + out.stderr
    entries = list((cache / "kernels").iterdir())
    assert len(entries) == 1, entries   # one cache entry, written by whichever worker compiled first

"""``with metal.batch():`` — launches submitted together when the outermost block exits."""

import threading
import time

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.host.batch import in_batch


@metal.jit
def step(x, k):
    i = metal.grid(1)
    if i < x.size:
        x[i] = x[i] * 2 + k


def _wait_until(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def test_launches_in_a_batch_run_in_order_and_are_submitted_at_exit():
    x = metal.to_device(np.zeros(1000, np.int64))
    queue = metal.default_stream()._queue
    with metal.batch():
        for k in range(20):
            step[4, 256](x, k)
        marker = queue.marker()
    # Submitted without any wait: the work completes on its own.
    assert _wait_until(lambda: queue.query(marker))
    expected = 0
    for k in range(20):
        expected = expected * 2 + k
    assert (x.copy_to_host() == expected).all()


def test_batches_nest_and_flush_every_stream():
    s = metal.stream()
    a = metal.to_device(np.ones(64, np.int64))
    b = metal.to_device(np.ones(64, np.int64))
    assert not in_batch()
    with metal.batch():
        with metal.batch():
            step[1, 64, s](a, 1)
        assert in_batch()  # the inner block's exit does not end the outer one
        step[1, 64](b, 2)
        marker = s._queue.marker()
    assert not in_batch()
    assert _wait_until(lambda: s._queue.query(marker))
    metal.synchronize()
    assert (a.copy_to_host() == 3).all() and (b.copy_to_host() == 4).all()


def test_batches_are_per_thread():
    seen = []
    with metal.batch():
        t = threading.Thread(target=lambda: seen.append(in_batch()))
        t.start()
        t.join()
        assert in_batch()
    assert seen == [False]


def test_launches_before_an_exception_still_run():
    x = metal.to_device(np.zeros(10, np.int64))
    with pytest.raises(RuntimeError):
        with metal.batch():
            step[1, 32](x, 5)
            raise RuntimeError("boom")
    assert not in_batch()
    assert (x.copy_to_host() == 5).all()

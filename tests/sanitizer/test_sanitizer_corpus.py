"""The kernel sanitizer's corpus, further shapes of each bug class (docs/sanitizer.md): every buggy kernel is
reported by its check with its lines named (``# A``/``# B`` in buggy_kernels.py; for device_array memory, the
allocation's line), and its correct twin (correct_kernels.py) is not reported. Also the init check of
``device_array`` memory: what marks it written (kernels, host copies), and that nothing is tracked (nor
costs) without a sanitizing kernel."""

import inspect
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import (KernelRaceError, KernelSanitizerBoundsError, KernelSyncError,
                                KernelUninitializedError)

from . import buggy_kernels as bug
from . import correct_kernels as ok
from .support import ROOT, sanitized, where

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")


def here() -> str:
    """This test's calling line, as ``file:line``."""
    frame = inspect.currentframe().f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def no_report(kernel, config, *args):
    """Runs a correct kernel with every check: no error, no warning of the sanitizer."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", metal.DeviceRaceWarning)
        kernel[config](*args)
        metal.synchronize()


# -- race -------------------------------------------------------------------------------------------------

def test_a_transpose_through_shared_memory_without_its_barrier_is_a_read_after_write_race():
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    with pytest.raises(KernelRaceError) as e:
        sanitized(bug.transpose_missing_barrier)[1, (8, 8)](a, np.zeros((8, 8), np.float32))
    pair = {where(bug.transpose_missing_barrier, "A"), where(bug.transpose_missing_barrier, "B")}
    assert any(set(r["sites"]) == pair and r["array"] == "s" and len(r["element"]) == 2 for r in e.value.reports)
    out = np.zeros((8, 8), np.float32)
    no_report(sanitized(ok.transpose), (1, (8, 8)), a, out)
    np.testing.assert_array_equal(out, a.T)


# -- sync: every thread that did not arrive named, with the barrier sites ---------------------------------

def test_a_barrier_under_an_if_names_the_barrier_and_every_thread_that_skipped_it():
    with pytest.raises(KernelSyncError) as e:
        sanitized(bug.barrier_under_if)[1, 32](np.zeros(32, np.int32))
    r = e.value.reports[0]
    assert r["barrier"] == where(bug.barrier_under_if, "A") and r["arrivals"] == 1
    assert r["waiting"] == tuple((t, 0, 0) for t in range(16))
    assert [s["thread"] for s in r["strays"]] == [(t, 0, 0) for t in range(16, 32)]
    assert all(s["exited"] and s["arrivals"] == 0 for s in r["strays"])
    assert "threads (16..31, 0, 0) exited without reaching any barrier" in str(e.value)


def test_a_loop_trip_count_that_differs_per_thread_names_each_thread_and_its_count():
    with pytest.raises(KernelSyncError) as e:
        sanitized(bug.loop_trip_count_differs)[1, 32](np.zeros(32, np.int32))
    r = e.value.reports[0]
    assert r["barrier"] == where(bug.loop_trip_count_differs, "A")
    # the CPU device stops at the first barrier every live thread waits at: threads t % 3 == 0 never loop
    assert {s["thread"][0] for s in r["strays"]} == set(range(0, 32, 3))
    assert {w[0] for w in r["waiting"]} == {t for t in range(32) if t % 3}


def test_barriers_at_two_call_sites_name_both_sites_and_their_threads():
    with pytest.raises(KernelSyncError) as e:
        sanitized(bug.barrier_in_both_branches)[1, 32](np.zeros(32, np.int32))
    r = e.value.reports[0]
    a, b = where(bug.barrier_in_both_branches, "A"), where(bug.barrier_in_both_branches, "B")
    assert set(r["sites"]) == {a, b}
    assert {s["site"] for s in r["strays"]} | {r["barrier"]} == {a, b}
    assert not any(s["exited"] for s in r["strays"]) and len(r["strays"]) == 16
    out = np.zeros(32, np.int32)
    no_report(sanitized(ok.barrier_outside_the_branch), (1, 32), out)
    np.testing.assert_array_equal(out, 31 - np.arange(32))


def test_a_syncwarp_not_every_lane_reaches_names_the_site_and_the_lanes():
    with pytest.raises(KernelSyncError) as e:
        sanitized(bug.syncwarp_under_if, "sync")[1, 64](np.zeros(64, np.int32))
    r = e.value.reports[0]
    assert r["sites"] == (where(bug.syncwarp_under_if, "A"),) and r["location"][1] == bug.line_of(
        bug.syncwarp_under_if, "A")
    assert r["simdgroup"] == 0 and r["lanes"] == tuple(range(16)) and r["thread"] == (0, 0, 0)
    assert "not by threads (16, 0, 0) .. (31, 0, 0) (16)" in str(e.value)
    # SIMD group 1 (threads 32..63) never reaches it: no lane of it waited, nothing to report for it
    assert len(e.value.reports) == 1


def test_syncwarps_at_two_sites_are_each_reported_with_their_lanes():
    with pytest.raises(KernelSyncError) as e:
        sanitized(bug.syncwarp_in_both_branches, "sync")[1, 32](np.zeros(32, np.int32))
    sites = {r["sites"][0]: r["lanes"] for r in e.value.reports}
    assert sites == {where(bug.syncwarp_in_both_branches, "A"): tuple(range(0, 32, 2)),
                     where(bug.syncwarp_in_both_branches, "B"): tuple(range(1, 32, 2))}


def test_a_syncwarp_after_an_early_return_names_the_partial_simd_group():
    with pytest.raises(KernelSyncError) as e:
        sanitized(bug.syncwarp_after_early_return, "all")[1, 48](np.zeros(48, np.int32))
    r = e.value.reports[0]
    assert r["simdgroup"] == 1 and r["lanes"] == tuple(range(8))    # threads 32..39 of 32..47
    assert r["sites"] == (where(bug.syncwarp_after_early_return, "A"),)
    out = np.zeros(48, np.int32)
    no_report(sanitized(ok.syncwarp_every_lane), (1, 48), out)     # a partial SIMD group, every lane there
    t = np.arange(48)
    np.testing.assert_array_equal(out, np.where((t ^ 1) < 48, t ^ 1, t))


def test_an_early_return_before_a_barrier_names_the_threads_that_left():
    a = np.ones(40, np.float32)
    with pytest.raises(KernelSyncError) as e:
        sanitized(bug.early_return_before_barrier)[2, 32](a, np.zeros(40, np.float32))
    r = e.value.reports[0]
    assert r["threadgroup"] == (1, 0, 0) and r["barrier"] == where(bug.early_return_before_barrier, "A")
    assert [s["thread"] for s in r["strays"]] == [(t, 0, 0) for t in range(8, 32)]
    out = np.zeros(40, np.float32)
    no_report(sanitized(ok.guarded_work_around_the_barrier), (2, 32), a, out)
    assert (out == 2).all()


# -- init: shared, local and device_array memory ------------------------------------------------------------

def test_a_stencil_whose_halo_is_not_loaded_reads_uninitialised_shared_memory():
    a = np.arange(64, dtype=np.float32)
    with pytest.raises(KernelUninitializedError) as e:
        sanitized(bug.shared_halo_not_loaded)[2, 32](a, np.zeros(64, np.float32))
    r = e.value.reports[0]
    assert r["array"] == "s" and r["sites"] == (where(bug.shared_halo_not_loaded, "A"),)
    assert {x["element"] for x in e.value.reports} <= {(0,), (33,)}
    out = np.zeros(64, np.float32)
    no_report(sanitized(ok.shared_halo_loaded), (2, 32), a, out)
    padded = np.concatenate([[0], a, [0]])
    np.testing.assert_array_equal(out, padded[:-2] + padded[1:-1] + padded[2:])


def test_a_local_array_read_where_this_thread_did_not_write_is_an_init_error():
    with pytest.raises(KernelUninitializedError) as e:
        sanitized(bug.local_array_partial_init)[1, 8](np.zeros(8, np.float32))
    r = e.value.reports[0]
    assert r["space"] == "local" and r["array"] == "acc"
    assert r["sites"] == (where(bug.local_array_partial_init, "A"),)
    assert r["element"][0] >= r["thread"][0] % 4       # an element this thread's loop did not write
    assert "this thread had not written it" in str(e.value)
    out = np.zeros(8, np.float32)
    no_report(sanitized(ok.local_array_full_init), (1, 8), out)
    np.testing.assert_array_equal(out, [sum(range(t % 4)) for t in range(8)])


def test_a_device_array_never_written_names_the_read_and_the_allocation():
    k = sanitized(bug.device_array_never_written)
    a = metal.device_array(16, np.float32); allocated = here()  # noqa: E702
    out = metal.device_array(16, np.float32)
    k[1, 16](a, out)
    with pytest.raises(KernelUninitializedError) as e:
        metal.synchronize()
    r = e.value.reports[0]
    assert r["space"] == "device" and r["array"] == "a" and r["element"] == (0,)
    assert r["sites"] == (allocated, where(bug.device_array_never_written, "A"))
    assert f"device_array() allocated it at {allocated}" in str(e.value)
    assert r["count"] == 16    # every thread's read, one report per pair of sites
    # the kernel wrote out: it is initialised now, and a read of it is not reported
    no_report(sanitized(ok.device_array_read_all), (1, 16), out, metal.device_array_like(out))


def test_elements_a_kernel_did_not_write_are_reported_and_the_ones_it_wrote_are_not():
    a = metal.device_array(32, np.int32)
    sanitized(bug.device_array_half_written_by_a_kernel)[1, 32](a)
    with pytest.raises(KernelUninitializedError) as e:
        sanitized(bug.device_array_read_all)[1, 32](a, metal.device_array(32, np.int32))
        metal.synchronize()
    assert {r["element"] for r in e.value.reports} == {(16,)}   # the first unwritten element (one per site pair)
    assert e.value.reports[0]["count"] == 16


def test_an_atomic_on_a_counter_never_zeroed_is_an_init_error():
    counter = metal.device_array(1, np.int32)
    with pytest.raises(KernelUninitializedError) as e:
        sanitized(bug.device_counter_never_zeroed)[1, 4](counter)
        metal.synchronize()
    assert e.value.reports[0]["sites"][1] == where(bug.device_counter_never_zeroed, "A")
    counter = metal.device_array(1, np.int32)
    counter[0] = 0
    no_report(sanitized(ok.device_counter), (1, 4), counter)
    assert counter.copy_to_host()[0] == 4


def test_host_writes_mark_what_they_write():
    read = sanitized(ok.device_array_read_all)
    a = metal.device_array(8, np.float32)
    a[:4] = np.ones(4, np.float32)                     # setitem of a slice: those elements only
    with pytest.raises(KernelUninitializedError) as e:
        read[1, 8](a, metal.device_array(8, np.float32))
        metal.synchronize()
    assert {r["element"] for r in e.value.reports} == {(4,)}
    a[4:].copy_to_device(np.zeros(4, np.float32))     # copy_to_device of a view: the rest
    no_report(read, (1, 8), a, metal.device_array(8, np.float32))
    b = metal.device_array((4, 4), np.float32)
    metal.to_device(np.ones((4, 4), np.float32), to=b)  # to_device(to=...)
    no_report(read, (1, 16), b.ravel(), metal.device_array(16, np.float32))
    no_report(read, (1, 8), metal.to_device(np.ones(8, np.float32)), metal.device_array(8, np.float32))


def test_memory_handed_to_other_code_counts_as_written():
    read = sanitized(ok.device_array_read_all)
    a = metal.device_array(8, np.float32)
    np.asarray(a)[:] = 3                               # NumPy writes it: numba-metal cannot see what
    no_report(read, (1, 8), a, metal.device_array(8, np.float32))
    b = metal.device_array(8, np.float32)
    np.from_dlpack(b)[:] = 1
    no_report(read, (1, 8), b, metal.device_array(8, np.float32))
    m = metal.mapped_array(8, np.float32)              # mapped (pinned, managed) memory: the host writes it
    m[:] = 2
    no_report(read, (1, 8), m, metal.device_array(8, np.float32))


def test_writes_of_plain_kernels_records_slices_and_atomics_mark_the_memory():
    read = sanitized(ok.device_array_read_all)
    a = metal.device_array(16, np.float32)
    metal.jit(sanitize=False)(ok.device_array_fill)[1, 16](a)   # a plain kernel: what it may write is written
    no_report(read, (1, 16), a, metal.device_array(16, np.float32))
    a = metal.device_array(16, np.float32)
    sanitized(ok.device_array_fill, "race")[1, 16](a)           # sanitized without init: the same
    no_report(read, (1, 16), a, metal.device_array(16, np.float32))
    rec = np.dtype([("x", np.int32), ("y", np.int32)], align=True)
    r = metal.device_array(8, rec)
    no_report(sanitized(ok.record_fill), (1, 8), r)
    out = metal.device_array(8, np.int32)
    no_report(sanitized(ok.record_read), (1, 8), r, out)
    assert (out.copy_to_host() == 3 * np.arange(8)).all()
    s = metal.device_array(8, np.float32)
    no_report(sanitized(ok.slice_fill), (1, 1), s)
    no_report(read, (1, 8), s, metal.device_array(8, np.float32))
    f = metal.device_array(1, np.int32)
    no_report(sanitized(ok.compare_and_swap_after_fill), (1, 8), f)
    assert f.copy_to_host()[0] == 1


def test_without_a_sanitizing_kernel_nothing_is_tracked():
    code = ("import numpy as np\nfrom numba_metal import metal\nfrom numba_metal.host import init_shadow\n"
            "a = metal.device_array(8, np.float32)\n"
            "@metal.jit\ndef k(x):\n    x[metal.grid(1)] = 1\n"
            "k[1, 8](a)\nmetal.synchronize()\n"
            "assert not init_shadow.ARMED and init_shadow.of(a.buffer) is None\n"
            "@metal.jit(sanitize='init')\ndef s(x):\n    x[metal.grid(1)] += 1\n"
            "assert init_shadow.ARMED and init_shadow.of(a.buffer) is None\n"   # allocated before: untracked
            "b = metal.device_array(8, np.float32)\nassert init_shadow.of(b.buffer) is not None\n"
            "s[1, 8](a)\nmetal.synchronize()\nprint('ok')\n")
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", PYTHONPATH=ROOT)
    env.pop("NUMBA_METAL_SANITIZE", None)
    run = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


# -- bounds ---------------------------------------------------------------------------------------------------

def test_a_2d_stencil_reading_one_column_past_the_edge_is_a_bounds_error():
    a = np.ones((4, 8), np.float32)
    with pytest.raises(KernelSanitizerBoundsError) as e:
        sanitized(bug.stencil_2d_off_by_one)[(1, 1), (4, 8)](a, np.zeros((4, 8), np.float32))
    assert where(bug.stencil_2d_off_by_one, "A") in str(e.value) and "'a'" in str(e.value)
    out = np.zeros((4, 8), np.float32)
    no_report(sanitized(ok.stencil_2d), ((1, 1), (4, 8)), a, out)
    assert (out[:, :7] == 2).all()


def test_a_shared_array_indexed_one_past_its_end_is_a_bounds_error():
    with pytest.raises(KernelSanitizerBoundsError) as e:
        sanitized(bug.shared_index_past_the_end)[1, 32](np.zeros(32, np.int32))
    assert where(bug.shared_index_past_the_end, "A") in str(e.value) and "size 32" in str(e.value)
    out = np.zeros(32, np.int32)
    no_report(sanitized(ok.shared_index_in_bounds), (1, 32), out)
    np.testing.assert_array_equal(out, np.arange(32))

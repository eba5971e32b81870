"""The kernel sanitizer (docs/sanitizer.md): each buggy kernel of the corpus is reported by its check with
both lines named; the correct corpus is not reported; plumbing (option, environment, refusal elsewhere than on
the CPU device, the plain variant's MSL unchanged)."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from numba_metal import metal, runtime
from numba_metal.errors import (KernelRaceError, KernelSanitizerBoundsError, KernelSanitizerError, KernelSyncError,
                                KernelUninitializedError, NumbaMetalError, NumbaMetalWarning,
                                UnsupportedFeatureError)

from . import buggy_kernels as bug
from . import correct_kernels as ok
from .support import FILE_BUG, ROOT, sanitized, where

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")


# -- the buggy corpus --------------------------------------------------------------------------------------

def test_tree_reduction_without_its_loop_barrier_is_a_race_naming_both_lines():
    k = sanitized(bug.tree_reduction_missing_barrier)
    with pytest.raises(KernelRaceError) as e:
        k[2, 64](np.arange(128, dtype=np.float32), np.zeros(2, np.float32))
    err = e.value
    assert isinstance(err, KernelSanitizerError) and isinstance(err, NumbaMetalError)
    r = err.reports[0]
    assert r["check"] == "race" and r["array"] == "s" and r["kernel"] == "tree_reduction_missing_barrier"
    assert r["sites"] == (where(bug.tree_reduction_missing_barrier, "A"),) * 2
    assert r["thread"] != r["other_thread"] and r["threadgroup"] == (0, 0, 0)
    assert "thread (0, 0, 0)" in str(err) and "element [" in str(err)


def test_with_device_arrays_the_report_comes_at_the_next_wait():
    k = sanitized(bug.tree_reduction_missing_barrier)
    a = metal.to_device(np.arange(128, dtype=np.float32))
    out = metal.device_array(2, np.float32)
    k[2, 64](a, out)              # as every kernel failure: reported at the launching thread's next wait
    with pytest.raises(KernelRaceError):
        metal.synchronize()
    metal.synchronize()           # reported once


def test_reports_are_reproducible():
    k = sanitized(bug.tree_reduction_missing_barrier)
    messages = []
    for _ in range(3):
        with pytest.raises(KernelRaceError) as e:
            k[4, 64](np.arange(256, dtype=np.float32), np.zeros(4, np.float32))
        messages.append(str(e.value))
    assert messages[0] == messages[1] == messages[2]


def test_tiled_matmul_without_the_second_barrier_is_a_race():
    k = sanitized(bug.matmul_missing_second_barrier)
    n = 8
    a = np.ones((n, n), np.float32)
    with pytest.raises(KernelRaceError) as e:
        k[(2, 2), (4, 4)](a, a, np.zeros((n, n), np.float32))
    sites = {r["sites"] for r in e.value.reports}
    # the next tile's write of sa races with the previous tile's reads of sa (write-after-read)
    assert (where(bug.matmul_missing_second_barrier, "A"), where(bug.matmul_missing_second_barrier, "B")) in sites
    assert all(len(r["element"]) == 2 for r in e.value.reports)   # the element named by both indices


def test_barrier_under_if_is_a_sync_error_naming_the_barrier():
    k = sanitized(bug.barrier_under_if)
    with pytest.raises(KernelSyncError) as e:
        k[1, 32](np.zeros(32, np.int32))
    assert f"{os.path.basename(FILE_BUG)}:{bug.line_of(bug.barrier_under_if, 'A')}" in str(e.value)
    assert e.value.check == "sync"


def test_barrier_in_a_loop_whose_trip_count_differs_is_a_sync_error():
    k = sanitized(bug.loop_trip_count_differs)
    with pytest.raises(KernelSyncError) as e:
        k[1, 32](np.zeros(32, np.int32))
    assert f"{os.path.basename(FILE_BUG)}:{bug.line_of(bug.loop_trip_count_differs, 'A')}" in str(e.value)
    assert "exited" in str(e.value)


def test_partial_shared_initialisation_is_an_init_error():
    k = sanitized(bug.partial_shared_init)
    with pytest.raises(KernelUninitializedError) as e:
        k[1, 64](np.zeros(64, np.float32))
    r = e.value.reports[0]
    assert r["check"] == "init" and r["array"] == "s"
    assert r["sites"] == (where(bug.partial_shared_init, "A"),)
    assert 32 <= r["element"][0] < 64


def test_off_by_one_stencil_is_a_bounds_error_with_index_and_shape():
    k = sanitized(bug.stencil_off_by_one)
    with pytest.raises(KernelSanitizerBoundsError) as e:
        k[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32))
    assert isinstance(e.value, IndexError)
    text = str(e.value)
    assert f"{FILE_BUG}:{bug.line_of(bug.stencil_off_by_one, 'A')}" in text
    assert "size 32" in text and "'a'" in text


def test_write_write_race():
    k = sanitized(bug.write_write_same_element)
    with pytest.raises(KernelRaceError, match="write-after-write"):
        k[1, 8](np.zeros(1, np.int32))


def test_plain_read_racing_with_atomics():
    k = sanitized(bug.atomic_then_plain_read)
    with pytest.raises(KernelRaceError) as e:
        k[1, 8](np.zeros(8, np.int32))
    pair = {where(bug.atomic_then_plain_read, "B"), where(bug.atomic_then_plain_read, "A")}
    assert any(set(r["sites"]) == pair for r in e.value.reports)


def test_device_memory_written_by_two_threadgroups_is_a_warning_naming_both():
    k = sanitized(bug.cross_threadgroup_write)
    out = np.zeros(8, np.int32)
    with pytest.warns(metal.DeviceRaceWarning) as w:
        k[2, 8](out)
    r = w[0].message.reports[0]
    assert r["check"] == "device race" and r["array"] == "out"
    assert {r["threadgroup"], r["other_threadgroup"]} == {(0, 0, 0), (1, 0, 0)} and r["thread"] == r["other_thread"]
    assert r["sites"] == (where(bug.cross_threadgroup_write, "A"),) * 2
    assert set(out) <= {0, 1}   # the launch ran: a warning, not an error


def test_simd_group_barriers_order_one_simd_group_only():
    out = np.zeros(64, np.float32)
    sanitized(ok.simd_exchange)[1, 64](out)
    np.testing.assert_array_equal(out, np.arange(64) + 1)
    for fn in (bug.simd_exchange_without_barrier, bug.simd_exchange_across_simd_groups):
        with pytest.raises(KernelRaceError) as e:
            sanitized(fn)[1, 64](np.zeros(64, np.float32))
        assert any(r["check"] == "race" and set(r["sites"]) == {where(fn, "A"), where(fn, "B")}
                   for r in e.value.reports)


def test_writes_the_device_table_cannot_hold_are_a_warning_never_silent(monkeypatch):
    from numba_metal.compiler import sanitize
    monkeypatch.setattr(sanitize, "MIN_DEVICE_ENTRIES", 4)   # 2 threads x 1 site x 2 entries: 4 for 64 writes
    out = np.zeros(64, np.int32)
    with pytest.warns(NumbaMetalWarning, match="device-memory writes .* were not checked"):
        sanitized(ok.many_writes_per_thread)[2, 1](out)
    assert (out == np.tile(np.arange(32), 2)).all()


def test_only_the_checks_asked_for_run():
    # race only: the partial initialisation is not an init report
    sanitized(bug.partial_shared_init, "race")[1, 64](np.zeros(64, np.float32))
    # bounds off: the stencil's out-of-bounds read is not checked
    sanitized(bug.stencil_off_by_one, "race,init")[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32))


# -- the correct corpus ------------------------------------------------------------------------------------

def test_correct_kernels_are_not_reported_and_compute_the_same():
    a = np.arange(128, dtype=np.float32)
    out = np.zeros(2, np.float32)
    sanitized(ok.tree_reduction)[2, 64](a, out)
    np.testing.assert_allclose(out, [a[:64].sum(), a[64:].sum()])
    n = 8
    x = np.random.default_rng(0).random((n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    sanitized(ok.tiled_matmul)[(2, 2), (4, 4)](x, x, c)
    np.testing.assert_allclose(c, x @ x, rtol=1e-5)
    o = np.zeros(8, np.int32)
    sanitized(ok.shared_atomics)[1, 8](o)
    assert (o == 8).all()
    o = np.zeros(32, np.int32)
    sanitized(ok.syncthreads_count_kernel)[1, 32](o)
    np.testing.assert_array_equal(o, 31 - np.arange(32) + 16)
    s = np.zeros(32, np.float32)
    sanitized(ok.stencil)[1, 32](np.ones(32, np.float32), s)
    assert s[1] == 3
    f = np.zeros(32, np.float32)
    sanitized(ok.same_thread_rewrites)[1, 32](f)
    assert (f == 2).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", metal.DeviceRaceWarning)
        e = np.zeros(1000, np.int64)
        sanitized(ok.each_thread_its_element)[8, 128](e)
        assert (e == np.arange(1000)).all()
        c = np.zeros(8, np.int32)
        sanitized(ok.cross_threadgroup_atomics)[4, 8](c)
        assert (c == 4).all()


@pytest.mark.parametrize("options", [{"sanitize": "all"}, {"debug": True}])
def test_a_kernel_fencing_device_memory_gets_a_coherent_error_record(options):
    """A kernel whose device memory is coherent(device) (it fences) declares its error record (the
    sanitizer's shadow memory) coherent too, as the MSL lint requires, and runs."""
    k = metal.jit(**options)(ok.fencing_kernel)
    data, flag = np.zeros(64, np.int32), np.zeros(1, np.int32)
    k[2, 32](data, flag)
    assert (data == np.arange(64)).all() and flag[0] == 1
    (msl_text,) = k.inspect_msl().values()
    assert "coherent(device) device uint* nm_err" in msl_text


# -- plumbing ----------------------------------------------------------------------------------------------

def test_option_values():
    with pytest.raises(NumbaMetalError, match="not a sanitizer check"):
        metal.jit(sanitize="races")(ok.stencil)
    assert metal.jit(sanitize=True)(ok.stencil).options.sanitize == ("race", "sync", "init", "bounds")
    assert metal.jit(sanitize="bounds, race")(ok.stencil).options.sanitize == ("race", "bounds")
    assert metal.jit(ok.stencil).options.sanitize == () or os.environ.get("NUMBA_METAL_SANITIZE")
    with pytest.raises(NumbaMetalError, match="device functions"):
        metal.jit(device=True, sanitize="all")(lambda x: x)


def test_environment_variable_sanitizes_every_kernel(monkeypatch):
    monkeypatch.setenv("NUMBA_METAL_SANITIZE", "race,init")
    assert metal.jit(ok.stencil).options.sanitize == ("race", "init")
    assert metal.jit(sanitize=False)(ok.stencil).options.sanitize == ()   # the option takes precedence
    monkeypatch.setenv("NUMBA_METAL_SANITIZE", "all")
    with pytest.raises(KernelRaceError):
        metal.jit(bug.tree_reduction_missing_barrier)[1, 64](np.zeros(64, np.float32), np.zeros(1, np.float32))
    monkeypatch.setenv("NUMBA_METAL_SANITIZE", "bogus")
    with pytest.warns(Warning, match="NUMBA_METAL_SANITIZE"):
        assert metal.jit(ok.stencil).options.sanitize == ()


def test_plain_variant_msl_is_unchanged_and_sanitized_is_its_own_specialisation():
    from numba import types
    from numba_metal.compiler.driver import compile_kernel
    args = (types.float32[::1], types.float32[::1])
    plain = compile_kernel(ok.tree_reduction, args)
    assert "nm_san" not in plain.source and plain.abi.sanitizer_sites == () and plain.abi.error_slot is None
    san = compile_kernel(ok.tree_reduction, args, sanitize=frozenset({"race", "init", "bounds"}))
    assert "nm_san_tg" in san.source and san.abi.sanitizer_sites and san.abi.error_slot is not None
    assert metal.jit(sanitize=False)(ok.tree_reduction).options != metal.jit(sanitize="all")(ok.tree_reduction).options


def test_sanitize_abi_round_trips_through_the_cache_form():
    from numba import types
    from numba_metal.compiler.abi import KernelABI
    from numba_metal.compiler.driver import compile_kernel
    san = compile_kernel(ok.tree_reduction, (types.float32[::1], types.float32[::1]), sanitize=frozenset({"race"}))
    assert KernelABI.from_json(san.abi.to_json()) == san.abi


@pytest.mark.skipif("metal-sim" not in {d.kind for d in runtime.list_devices(include_simulated=True)},
                    reason="the simulated Metal device exists only in builds without Metal")
def test_refused_on_a_metal_device():
    previous = metal.get_current_device().kind
    metal.select_device("metal-sim")
    try:
        with pytest.raises(UnsupportedFeatureError, match="CPU reference device only"):
            sanitized(ok.stencil)[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32))
    finally:
        metal.select_device(previous)


@pytest.mark.skipif("metal-sim" not in {d.kind for d in runtime.list_devices(include_simulated=True)},
                    reason="the simulated Metal device exists only in builds without Metal")
def test_the_variable_sanitizes_on_the_cpu_device_and_elsewhere_the_kernel_runs_plain_said_once(monkeypatch):
    monkeypatch.setenv("NUMBA_METAL_SANITIZE", "all")
    k = metal.jit(bug.tree_reduction_missing_barrier)
    with pytest.raises(KernelRaceError):     # on the CPU device: sanitized
        k[1, 64](np.zeros(64, np.float32), np.zeros(1, np.float32))
    previous = metal.get_current_device().kind
    metal.select_device("metal-sim")
    try:
        out = np.zeros(2, np.float32)
        with pytest.warns(NumbaMetalWarning, match="runs unsanitized on .*CPU reference device only"):
            metal.jit(ok.tree_reduction)[2, 64](np.arange(128, dtype=np.float32), out)
        assert out.tolist() == [np.arange(64).sum(), np.arange(64, 128).sum()]
    finally:
        metal.select_device(previous)


def test_a_pytest_run_becomes_a_sanitizer_run_with_one_variable(tmp_path):
    test = tmp_path / "test_user.py"
    test.write_text(
        "import numpy as np\nfrom numba_metal import metal\n\n"
        "@metal.jit\ndef k(out):\n    s = metal.shared.array(32, np.int32)\n    s[0] = metal.threadIdx.x\n"
        "    metal.syncthreads()\n    out[metal.threadIdx.x] = s[0]\n\n"
        "def test_k():\n    out = np.zeros(32, np.int32)\n    k[1, 32](out)\n")
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", PYTHONPATH=ROOT)
    env.pop("NUMBA_METAL_SANITIZE", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)]
    assert subprocess.run(cmd, env=env, capture_output=True, cwd=tmp_path).returncode == 0
    env["NUMBA_METAL_SANITIZE"] = "all"
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode != 0 and "KernelRaceError" in run.stdout and "write-after-write" in run.stdout


# -- views (slicing in kernels): shared memory split into views is checked element by element ---------------

def _split_dynamic_shared(barrier: bool):
    from numba import float32

    def split(x, out):
        dyn = metal.shared.array(0, float32)   # numba.cuda's documented way to split dynamic shared memory
        n = metal.blockDim.x
        a = dyn[:n]
        b = dyn[n:]
        t = metal.threadIdx.x
        a[t] = x[t]                            # mark: write
        if barrier:
            metal.syncthreads()
        b[t] = a[(t + 1) % n]                  # mark: read
        metal.syncthreads()
        out[t] = b[t]
    return split


def test_a_race_through_views_of_dynamic_shared_memory_names_the_view_and_both_lines():
    import inspect
    fn = _split_dynamic_shared(False)
    src, first = inspect.getsourcelines(fn)
    write = first + next(k for k, line in enumerate(src) if "# mark: write" in line)
    read = first + next(k for k, line in enumerate(src) if "# mark: read" in line)
    x = np.arange(32, dtype=np.float32)
    with pytest.raises(KernelRaceError) as e:
        metal.jit(sanitize="race")(fn)[1, 32, 0, 2 * 32 * 4](x, np.zeros(32, np.float32))
    r = e.value.reports[0]
    assert r["array"] == "a" and set(r["sites"]) == {f"{__file__}:{write}", f"{__file__}:{read}"}


def test_the_same_views_with_their_barrier_are_not_reported():
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    metal.jit(sanitize="all")(_split_dynamic_shared(True))[1, 32, 0, 2 * 32 * 4](x, out)
    np.testing.assert_array_equal(out, np.roll(x, -1))


def test_slice_assignments_and_whole_records_in_shared_memory_count_as_written():
    # both were once reported as uninitialised reads: the slice's writes and the record's bytes went unseen
    out = np.zeros(64, np.float32)
    sanitized(ok.slice_filled_shared)[1, 64](out)
    assert out.tolist() == [1.0, 2.0] * 32
    src = np.zeros(32, ok.PAIR)
    src["v"][:, 0], src["v"][:, 1] = np.arange(32), 100
    res = np.zeros(32, np.float32)
    sanitized(ok.shared_records)[1, 32](src, res)
    assert res.tolist() == [100.0 + 31 - t for t in range(32)]


def test_launches_of_one_kernel_with_different_grids_reuse_its_shadow_buffer_cleanly():
    # A launch's shadow layout depends on its grid (the slot of each threadgroup comes first), and the
    # launching thread's buffer is reused. The words of a launch with another layout once stood where the
    # next launch keeps its device-write table: a thread number read as an entry's "being filled" state made
    # the kernel spin forever (benchmarks/asian_option_pricing: 40 threadgroups, then 8).
    reduction = sanitized(ok.tree_reduction)
    writes = sanitized(ok.each_thread_its_element)
    previous = metal.set_kernel_time_limit(20.0)   # a spin is an error naming the kernel, not a hung test
    try:
        for blocks in [40] * 40 + [8, 1, 5, 1, 8, 2] * 3:
            out = metal.device_array(256 * blocks, np.int32)
            writes[blocks, 256](out)
            assert (out.copy_to_host() == np.arange(256 * blocks)).all()
        for blocks in (8, 1, 5, 1, 8, 2):
            a = np.arange(64 * blocks, dtype=np.float32)
            out = np.zeros(blocks, np.float32)
            reduction[blocks, 64](a, out)
            np.testing.assert_allclose(out, a.reshape(blocks, 64).sum(axis=1))
    finally:
        metal.set_kernel_time_limit(previous)


@pytest.mark.unsanitized("the marker's own test: under the sanitized suite run it must unset the variable")
def test_a_test_marked_unsanitized_decorates_plain_kernels():
    assert "NUMBA_METAL_SANITIZE" not in os.environ
    assert metal.jit(ok.stencil).options.sanitize == ()

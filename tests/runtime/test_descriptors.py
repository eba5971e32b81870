"""File descriptors of the CPU device's compiler: a compiled kernel's object (its in-memory file and its
dlopen handle) is released when no kernel uses it any more, so a process that compiles and drops kernels
keeps a bounded number of descriptors; and running out of descriptors is reported as that (EMFILE), not
as a missing clang, with the process usable once descriptors are free again."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import run_isolated

DEVICES = ("cpu",)  # the CPU device's compiler and loader

pytestmark = pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/fd"),
                                reason="counts descriptors in /proc/self/fd (Linux)")

PRELUDE = textwrap.dedent('''
    import gc, json, os, resource
    import numpy as np
    from numba_metal import runtime as rt
    from numba_metal.errors import NumbaMetalError
    dev = rt.open_device([d for d in rt.list_devices() if d.kind == "cpu"][0].index)
    q = dev.new_queue()
    buf = dev.new_buffer(4 * 32)
    SRC = ("#include <metal_stdlib>\\nusing namespace metal;\\n"
           "kernel void k(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {{ x[i] = %d; }}\\n")

    def descriptors():
        return len(os.listdir("/proc/self/fd"))

    def compile_and_run(n):
        """Compiles the n-th kernel (the same sources in every run: the disk cache makes reruns fast), runs it
        and checks its result; the pipeline is dropped on return."""
        pipe = dev.compile(SRC % n, "k")
        q.dispatch(pipe, [buf], [0], [0], None, 1, [], (1, 1, 1), (32, 1, 1))
        q.wait()
        out = np.empty(32, np.int32)
        buf.read(0, out.ctypes.data, out.nbytes)
        assert (out == n).all(), out
''')

KERNELS = 40


def test_kernels_compiled_and_dropped_keep_the_descriptor_count_bounded():
    """Each kernel kept its in-memory file and dlopen handle for the life of the process: 40 kernels
    compiled, run and dropped left 40 more descriptors open. The runtime keeps at most the 8 most recently
    loaded objects beyond those in use."""
    code = PRELUDE + textwrap.dedent(f'''
        compile_and_run(10**6)   # the shim's precompiled header and the cache directory: opened once
        gc.collect()
        before = descriptors()
        for n in range({KERNELS}):
            compile_and_run(n)
        gc.collect()
        after = descriptors()
        held = [dev.compile(SRC % n, "k") for n in range(4)]   # in use: kept
        print(json.dumps([before, after]))
    ''')
    r = run_isolated(code, timeout=900)
    assert r.returncode == 0, r.stderr
    before, after = json.loads(r.stdout)
    assert after - before <= 8 + 2, (before, after)


def test_a_kernel_in_use_stays_loaded_while_newer_ones_come_and_go():
    """A pipeline outlives the 8 most recent loads it is no longer among: its object stays loaded and runs."""
    code = PRELUDE + textwrap.dedent(f'''
        kept = dev.compile(SRC % 7777, "k")
        for n in range(12):
            compile_and_run(n)
        gc.collect()
        q.dispatch(kept, [buf], [0], [0], None, 1, [], (1, 1, 1), (32, 1, 1))
        q.wait()
        out = np.empty(32, np.int32)
        buf.read(0, out.ctypes.data, out.nbytes)
        assert (out == 7777).all(), out
        print("ok")
    ''')
    r = run_isolated(code, timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_running_out_of_descriptors_is_reported_as_such_and_the_process_stays_usable(tmp_path):
    """At the descriptor limit the error said that clang cannot be run (errno 24 as UnsupportedPlatformError).
    It names EMFILE and the limit; once descriptors are free, compiling works again, and the disk cache,
    first opened at the limit, is used (it was given up for the rest of the process)."""
    code = PRELUDE + textwrap.dedent('''
        import uuid
        from numba_metal.errors import UnsupportedPlatformError
        objects = os.path.join(os.environ["NUMBA_METAL_CACHE_DIR"], "cpu-objects")
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors() + 16, hard))
        hogs = []
        try:
            while True:
                hogs.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        errors = []
        for n in range(2):
            try:
                dev.compile(SRC % (4 * 10**6 + n), "k")
            except NumbaMetalError as e:
                errors.append([type(e).__name__, isinstance(e, UnsupportedPlatformError), str(e)])
            else:
                errors.append(None)
        for fd in hogs:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        compile_and_run(4 * 10**6 + 2)
        stored = [f for f in os.listdir(objects) if f.endswith(".nmo")] if os.path.isdir(objects) else []
        print(json.dumps([errors, len(stored)]))
    ''')
    r = run_isolated(code, env={"NUMBA_METAL_CACHE_DIR": str(tmp_path / "cache")}, timeout=600)
    assert r.returncode == 0, r.stderr
    errors, stored = json.loads(r.stdout)
    for error in errors:
        assert error is not None, errors
        name, unsupported, message = error
        assert not unsupported, message
        assert "too many open files" in message and "EMFILE" in message and "RLIMIT_NOFILE" in message, message
    assert stored == 1, "the kernel compiled once descriptors were free was not stored in the disk cache"


def test_jit_kernels_dropped_by_the_program_release_their_objects():
    """The same through the public API: kernels made in a loop (closures over a constant), launched, dropped."""
    code = textwrap.dedent('''
        import gc, json, os, warnings
        import numpy as np
        from numba_metal import metal
        warnings.simplefilter("ignore")   # one threadgroup: occupancy warnings
        def make(c):
            @metal.jit
            def fill(a):
                i = metal.grid(1)
                if i < a.size:
                    a[i] = c
            return fill
        a = metal.to_device(np.zeros(32, np.float32))
        make(-1.0)[1, 32](a)
        metal.synchronize()
        gc.collect()
        before = len(os.listdir("/proc/self/fd"))
        for c in range(24):
            fill = make(float(c))
            fill[1, 32](a)
            assert a.copy_to_host()[0] == c
            del fill
        gc.collect()
        print(json.dumps([before, len(os.listdir("/proc/self/fd"))]))
    ''')
    r = run_isolated(code, env={"NUMBA_METAL_DEVICE": "cpu"}, timeout=900)
    assert r.returncode == 0, r.stderr
    before, after = json.loads(r.stdout)
    assert after - before <= 8 + 2, (before, after)

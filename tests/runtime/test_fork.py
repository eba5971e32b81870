"""fork(): the runtime's threads do not survive it, so a child forked after its parent opened a device refuses
every call with an error that says to use the 'spawn' start method, instead of hanging. A child forked
before any device was opened uses numba-metal normally."""

from __future__ import annotations

import json
import textwrap

from conftest import run_isolated

CHILD = textwrap.dedent('''
    import json, os, sys, warnings
    warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+ warns about fork() with threads
    import numpy as np
    from numba_metal import runtime as rt
    KIND = {kind!r}
    SRC = ("#include <metal_stdlib>\\nusing namespace metal;\\n"
           "kernel void ok(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {{ x[i] = int(i) * 5; }}\\n")

    def use():
        dev = rt.open_device([d for d in rt.list_devices(include_simulated=True) if d.kind == KIND][0].index)
        q, out = dev.new_queue(), dev.new_buffer(32)
        q.dispatch(dev.compile(SRC, "ok"), [out], [0], [0], None, 31, [], (1, 1, 1), (8, 1, 1))
        q.wait()
        return np.frombuffer(out.memory(), np.int32).tolist()

    def in_child():
        """Runs use() in a forked child; what it returned or raised."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                said = repr(use())
            except Exception as e:
                said = type(e).__name__ + ": " + str(e)
            os.write(w, said.encode())
            os._exit(0)
        os.close(w)
        said = os.read(r, 65536).decode()
        os.waitpid(pid, 0)
        return said
''')

EXPECTED = str([i * 5 for i in range(8)])


def run(kind: str, body: str) -> dict:
    result = run_isolated(CHILD.format(kind=kind) + textwrap.dedent(body), env={"NUMBA_METAL_DEVICE": kind}, timeout=90)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_child_forked_after_a_device_was_opened_refuses_with_a_clear_error(device):
    r = run(device.info.kind, '''
        before = use()
        child = in_child()
        print(json.dumps({"before": repr(before), "child": child, "after": repr(use())}))
    ''')
    assert r["before"] == EXPECTED and r["after"] == EXPECTED  # the parent is unaffected
    assert r["child"].startswith("MetalRuntimeError: ") and "'spawn'" in r["child"] and "fork" in r["child"]


def test_a_multiprocessing_pool_that_forks_raises_instead_of_hanging(device):
    r = run(device.info.kind, '''
        import multiprocessing as mp
        from numba_metal import metal

        @metal.jit
        def k(a):
            i = metal.grid(1)
            a[i] = i * 5

        def work(n):
            a = np.zeros(8, np.int32)
            k[1, 8](a)
            metal.synchronize()
            return a.tolist()

        before = work(0)
        with mp.get_context("fork").Pool(2) as pool:
            try:
                child = repr(pool.map(work, range(4)))
            except Exception as e:
                child = type(e).__name__ + ": " + str(e)
        print(json.dumps({"before": repr(before), "child": child, "after": repr(work(0))}))
    ''')
    assert r["before"] == EXPECTED and r["after"] == EXPECTED
    assert r["child"].startswith("MetalRuntimeError: ") and "'spawn'" in r["child"]


def test_a_child_forked_before_any_device_was_opened_works(device):
    r = run(device.info.kind, '''
        rt.load()  # the library is loaded, no device opened
        print(json.dumps({"child": in_child()}))
    ''')
    assert r["child"] == EXPECTED

"""Every entry of the bad-input corpus raises its documented error, naming the Python file:line where
there is one, without crashing or hanging, and the process then compiles and runs a new kernel."""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
import threading

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import NumbaMetalError

from .corpus import CORPUS

HEADER = "import math\nimport numpy as np\nfrom numba_metal import metal\n"
TIMEOUT_S = 120
_canary_ids = itertools.count(1)


def _load_and_launch(path, name, launch):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
        exec(launch, vars(mod))  # noqa: S102 - corpus code
    finally:
        sys.modules.pop(name, None)


def _run_with_timeout(fn, *args):
    box = {}

    def target():
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - reported to the test
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(TIMEOUT_S)
    assert not t.is_alive(), f"hung for more than {TIMEOUT_S} s"
    return box.get("error")


def canary():
    """A kernel never compiled before in this process compiles, launches and computes."""
    n = next(_canary_ids)
    ns = {"metal": metal}
    exec(f"def canary_{n}(a, v):\n    i = metal.grid(1)\n    if i < a.size:\n        a[i] = i * v + {n}\n", ns)
    kern = metal.jit(ns[f"canary_{n}"])
    a = metal.to_device(np.zeros(5, np.float32))
    kern[1, 8](a, np.float32(2.0))
    assert a.copy_to_host().tolist() == [i * 2.0 + n for i in range(5)]


@pytest.mark.parametrize("bad", CORPUS, ids=lambda b: b.id)
def test_bad_input_raises_its_documented_error_and_the_process_stays_usable(bad, tmp_path):
    path = tmp_path / f"corpus_{bad.id}.py"
    src = HEADER + bad.src
    path.write_text(src)
    err = _run_with_timeout(_load_and_launch, str(path), f"corpus_{bad.id}", bad.launch)
    assert err is not None, "no error was raised"
    expected = bad.error if isinstance(bad.error, tuple) else (bad.error,)
    assert isinstance(err, NumbaMetalError), f"{type(err).__name__} escaped: {err}"
    assert isinstance(err, expected), f"{type(err).__name__}, expected {expected}: {err}"
    assert re.search(bad.match, str(err)), f"message does not match {bad.match!r}: {err}"
    if bad.located:
        lines = src.splitlines()
        marked = [n for n, ln in enumerate(lines, 1) if "# <-" in ln]
        if not marked:  # the kernel itself: its `def` line or its decorator's (Python's first line)
            d = next(n for n, ln in enumerate(lines, 1) if ln.startswith("def k("))
            marked = [d, d - 1]
        assert err.location is not None and err.location[1] in marked, \
            f"location {err.location}, expected one of lines {marked}: {err}"
        line = err.location[1]
        assert err.location[0] == str(path) and f"{path}:{line}" in str(err), \
            f"message does not name {path.name}:{line}: {err}"
    canary()


def test_corpus_size():
    assert len(CORPUS) >= 60
    assert len({b.id for b in CORPUS}) == len(CORPUS)

"""Regression: bad settings were silence or a crash. ``set_kernel_time_limit(float('inf'))`` raised a bare
``OverflowError``; invalid ``NUMBA_METAL_*`` environment values (``abc``, ``-5``, ``1e30``) were ignored
without a word (``NUMBA_METAL_CPU_THREADS=1e30`` even meant 1 thread: C's ``strtol`` read its ``1``); a
``NUMBA_METAL_MSL_DUMP_DIR`` that cannot be written failed the launch.

Now infinity is no limit; an invalid value warns once, naming the variable, its value and the value used
(the default); an unwritable dump directory warns and the launch runs.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import NumbaMetalWarning

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("seconds", [float("inf"), 1e30])
def test_an_infinite_or_unrepresentable_kernel_time_limit_is_no_limit(seconds):
    previous = metal.set_kernel_time_limit(2.5)
    try:
        assert metal.set_kernel_time_limit(seconds) == 2.5
        assert metal.get_kernel_time_limit() is None
    finally:
        metal.set_kernel_time_limit(previous)


def run(code: str, **env) -> subprocess.CompletedProcess:
    """``code`` in a fresh process (the runtime reads its settings once per process), warnings shown."""
    full = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                NUMBA_METAL_DEVICE="cpu", **env)
    r = subprocess.run([sys.executable, "-W", "always", "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=full, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


DEVICE_NAME = "from numba_metal import metal\nprint(metal.get_device_info().name)\n"


@pytest.mark.parametrize("value", ["abc", "-5", "1e30", "0", "5000"])
def test_an_invalid_cpu_thread_count_warns_and_the_default_is_used(value):
    default = run(DEVICE_NAME).stdout
    r = run(DEVICE_NAME, NUMBA_METAL_CPU_THREADS=value)
    assert r.stdout == default                            # the online cores, not 1 for "1e30"
    assert (f"NumbaMetalWarning: NUMBA_METAL_CPU_THREADS='{value}' is not an integer from 1 to 1024; using "
            in r.stderr) and "(the online cores)" in r.stderr
    assert r.stderr.count("NUMBA_METAL_CPU_THREADS") == 1


def test_a_valid_cpu_thread_count_is_used_without_a_warning():
    r = run(DEVICE_NAME, NUMBA_METAL_CPU_THREADS="3")
    assert "3 threads" in r.stdout and "Warning" not in r.stderr


@pytest.mark.parametrize("variable,value,expected", [
    ("NUMBA_METAL_CPU_STACK_KB", "big", "an integer from 16 to 65536; using 128"),
    ("NUMBA_METAL_CPU_SPIN_US", "-5", "an integer from 0 to 100000; using 50"),
    ("NUMBA_METAL_CPU_TIME_LIMIT_MS", "1e30", "an integer from 0 to 1000000000; using 0 (no limit)"),
])
def test_the_runtimes_other_settings_warn_naming_the_value_used(variable, value, expected):
    r = run(DEVICE_NAME + "print(metal.get_kernel_time_limit())\n", **{variable: value})
    assert f"{variable}='{value}' is not {expected}" in r.stderr
    assert r.stdout.splitlines()[1] == "None"


KERNEL = """
    import numpy as np
    from numba_metal import metal

    @metal.jit
    def shout(a):
        print("x", a[0])

    for _ in range(2):
        shout[1, 1](metal.to_device(np.ones(1, np.float32)))
        metal.synchronize()
"""


@pytest.mark.parametrize("variable,value,expected", [
    ("NUMBA_METAL_PRINT_BUFFER_BYTES", "lots", "an integer from 64 to 2147483648; using 1048576 (the default)"),
    ("NUMBA_METAL_DUMP_MSL", "yes please", "0 or 1; using 0 (the default)"),
    ("NUMBA_METAL_LOW_OCCUPANCY_WARNINGS", "maybe", "0 or 1; using 1 (the default)"),
])
def test_the_host_layers_settings_warn_once_naming_the_value_used(variable, value, expected):
    r = run(KERNEL, **{variable: value})
    assert r.stdout.split("\n").count("x 1.000000") == 2   # the kernels ran as with the default
    assert f"NumbaMetalWarning: {variable}={value!r} is not {expected}" in r.stderr
    assert r.stderr.count(f"{variable}=") == 1               # once


def test_an_unwritable_msl_dump_directory_warns_and_the_launch_runs(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBA_METAL_MSL_DUMP_DIR", str(blocker / "msl"))   # under a file: cannot be made

    @metal.jit
    def add_two(a):
        a[0] += 2

    a = np.zeros(1, np.float32)
    with pytest.warns(NumbaMetalWarning, match="NUMBA_METAL_MSL_DUMP_DIR=.*cannot be written"):
        add_two[1, 1](a)
    assert a[0] == 2

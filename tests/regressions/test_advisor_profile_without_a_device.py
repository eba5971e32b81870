"""Regression: ``numba-metal advisor profile`` without a usable device ran the whole program, then exited 3
with a traceback and "the program crashed"; docs/advisor.md promises exit code 2 and the clean
``UnsupportedPlatformError`` message, as ``compare`` and ``calibrate`` give. The device is checked first,
and nothing of the program runs.
"""

import os
import subprocess
import sys

import pytest

from numba_metal import metal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.skipif(metal.is_available(), reason="this machine has a Metal GPU: there is no missing device to ask for")
@pytest.mark.parametrize("command", ["profile", "compare", "calibrate"])
def test_without_a_device_every_measuring_command_exits_2_with_the_clean_message_and_runs_nothing(command, tmp_path):
    marker = tmp_path / "ran"
    script = tmp_path / "program.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    args = {"profile": [str(script)], "compare": [str(script)], "calibrate": ["--quick"]}[command]
    env = dict(os.environ, NUMBA_METAL_DEVICE="metal", XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "numba_metal", "advisor", command, *args], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path), timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"numba-metal advisor {command}: error: no Metal GPU is available"), r.stderr
    assert "Traceback" not in r.stderr and "NUMBA_METAL_DEVICE=cpu" in r.stderr
    assert not marker.exists()

"""The simulated Metal API's own rules (tests/runtime/swift/MetalSimulatorTests, XCTest): the 64-command-
buffer limit, completed handlers on another thread in order, encoder ordering, argument validation, shared
events, injected faults, autorelease pools and live objects. The Metal backend's tests on the simulated
device are worth only as much as these rules."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from numba_metal.tools import build as _build

ROOT = Path(_build.ROOT)
TESTS = ROOT / "tests" / "runtime" / "swift" / "MetalSimulatorTests" / "SimulatorTests.swift"


@pytest.mark.skipif(sys.platform == "darwin", reason="the simulator is built only where Metal does not exist")
def test_the_simulated_metal_api_keeps_apples_rules():
    swift = _build.find_swift()
    res = subprocess.run([swift, "test", "--package-path", str(ROOT), "--scratch-path", str(ROOT / ".build" / "simulator-tests"),
                          "--filter", "MetalSimulatorTests"], capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    declared = len(re.findall(r"^\s*func test\w+\(", TESTS.read_text(), re.M))
    executed = re.search(r"Executed (\d+) tests?, with 0 failures", res.stdout)
    assert executed and int(executed.group(1)) == declared, res.stdout[-3000:]

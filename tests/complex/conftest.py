"""Fixtures for the complex library tests: complex.metal (with the float64 math library it builds on)
compiled once on the CPU reference device, through tests/float64's harness."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "float64"))

from fm_fixtures import mathlib  # noqa: E402,F401  (fixture)

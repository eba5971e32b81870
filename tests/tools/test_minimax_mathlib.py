"""tools/minimax_mathlib.py regenerates every polynomial coefficient of mathlib.metal: each of the seven fits,
run here in full (Remez exchange and float32 rounding with refits), equals the file's constants bit for bit,
so a constant edited by hand, or a change of the fitter that moves one, fails this test."""

import importlib.util
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("minimax_mathlib", ROOT / "tools" / "minimax_mathlib.py")
M = importlib.util.module_from_spec(spec)
sys.modules["minimax_mathlib"] = M   # dataclasses look their module up there
spec.loader.exec_module(M)

NAMES = [fit.function for fit in M.FITS]


def test_the_seven_polynomials_of_mathlib_are_the_ones_the_file_names():
    text = M.MATHLIB.read_text(encoding="utf-8")
    assert sorted(set(re.findall(r"NM_INLINE \w+ (nm_i_poly_\w+)\(", text))) == sorted(NAMES)
    assert len(NAMES) == 7


@pytest.mark.parametrize("fit", M.FITS, ids=NAMES)
def test_the_fitter_regenerates_the_committed_coefficients_bit_for_bit(fit):
    _, refit = M.fit_float32(fit)
    committed = M.committed(fit.function)
    assert len(committed) == fit.degree + 1
    assert [np.float32(c).view(np.uint32) for c in refit] == [np.float32(c).view(np.uint32) for c in committed]


@pytest.mark.parametrize("fit", M.FITS, ids=NAMES)
def test_the_committed_fits_have_the_errors_their_comments_state(fit):
    text = M.MATHLIB.read_text(encoding="utf-8")
    comment = text[:text.index(f" {fit.function}(")].rsplit("\n\n", 1)[-1]
    stated = float(re.search(r"2\^(-\d+\.\d)", comment).group(1))
    measured = math.log2(M.max_error(fit, M.committed(fit.function)))
    assert abs(measured - stated) <= 0.05, (fit.function, measured, stated)


def test_a_coefficient_edited_by_hand_is_found_and_write_puts_the_fit_back():
    text = M.MATHLIB.read_text(encoding="utf-8")
    fit = next(f for f in M.FITS if f.function == "nm_i_poly_rgamma")   # the one with an error-free last step
    right = M.committed(fit.function, text)
    edited = text.replace(M.literal(right[0]), M.literal(np.nextafter(np.float32(right[0]), np.float32(0))), 1)
    assert edited != text
    assert M.committed(fit.function, edited)[0] != right[0]
    assert M.main(["--only", fit.function, "--check"]) == 0
    assert M.write(fit.function, right, edited) == text


def test_check_fails_when_the_file_differs(monkeypatch, tmp_path):
    text = M.MATHLIB.read_text(encoding="utf-8")
    c = M.committed("nm_i_poly_cbrt", text)
    changed = M.write("nm_i_poly_cbrt", [c[0]] + [float(np.nextafter(np.float32(c[1]), np.float32(1)))] + c[2:], text)
    copy = tmp_path / "mathlib.metal"
    copy.write_text(changed, encoding="utf-8")
    monkeypatch.setattr(M, "MATHLIB", copy)
    assert M.main(["--only", "nm_i_poly_cbrt", "--check"]) == 1
    assert M.main(["--only", "nm_i_poly_cbrt", "--write"]) == 0
    assert copy.read_text(encoding="utf-8") == text

"""tools/minimax_mathlib.py refits mathlib.metal's polynomials: the two it reproduces exactly stay reproduced,
and it reads every polynomial's committed coefficients with the fit error its comment states."""

import importlib.util
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("minimax_mathlib", ROOT / "tools" / "minimax_mathlib.py")
M = importlib.util.module_from_spec(spec)
sys.modules["minimax_mathlib"] = M   # dataclasses look their module up there
spec.loader.exec_module(M)


def test_the_erf_and_sinpi_polynomials_are_reproduced_bit_for_bit():
    assert M.main(["--only", "nm_i_poly_erf,nm_i_poly_sinpi", "--check"]) == 0


def test_the_committed_fits_have_the_errors_their_comments_state():
    text = M.MATHLIB.read_text(encoding="utf-8")
    for fit in M.FITS:
        comment = text[:text.index(f" {fit.function}(")].rsplit("\n\n", 1)[-1]
        stated = float(re.search(r"2\^(-\d+\.\d)", comment).group(1))
        measured = math.log2(M.max_error(fit, M.committed(fit.function)))
        assert abs(measured - stated) <= 0.35, (fit.function, measured, stated)

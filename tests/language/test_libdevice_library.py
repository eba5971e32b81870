"""compiler/libdevice_ops.py and compiler/mslib/libdevice.metal agree: every row is a function of the section it
names, with the row's MSL parameter and result types, and every function of the file is a row or a helper
of one (named nm_ld_/nm_h_ and used by a row's function in the same file)."""

import re
from pathlib import Path

from numba_metal.compiler import libdevice_ops, mslib

SOURCE = Path(mslib.path("libdevice.metal")).read_text(encoding="utf-8")
_SECTION = re.compile(r"^//@@\s+(\S+)", re.M)
_FUNCTION = re.compile(r"^static inline (\w+) (nm_\w+)\(([^)]*)\)", re.M)


def _functions():
    """name -> (section, result type, parameter types)."""
    heads = list(_SECTION.finditer(SOURCE))
    out = {}
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(SOURCE)
        for m in _FUNCTION.finditer(SOURCE, head.end(), end):
            params = tuple(p.strip().rsplit(" ", 1)[0] for p in m.group(3).split(",") if p.strip())
            out[m.group(2)] = (head.group(1), m.group(1), params)
    return out


FUNCTIONS = _functions()


def test_every_row_is_a_function_of_its_section_with_its_types():
    for row in libdevice_ops.FUNCTIONS:
        assert row.name in FUNCTIONS, f"{row.name} is not defined in libdevice.metal"
        assert FUNCTIONS[row.name] == (row.section, row.result, row.params), row.name


def test_every_other_function_is_a_helper_used_in_the_file():
    rows = {row.name for row in libdevice_ops.FUNCTIONS}
    for name in set(FUNCTIONS) - rows:
        assert len(re.findall(rf"\b{name}\(", SOURCE)) > 1, f"{name} is neither a row nor used"


def test_the_rows_are_library_entry_points_and_their_sections_resolve():
    for row in libdevice_ops.FUNCTIONS:
        assert mslib.section_of(row.name) == row.section
    closure = mslib.closure({row.section for row in libdevice_ops.FUNCTIONS})
    assert {row.section for row in libdevice_ops.FUNCTIONS} <= set(closure)

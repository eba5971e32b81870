"""Where each entry point of the emulated float64 libraries is defined: function name -> its `//@@`
section, derived from the libraries' row tables (float64_ops.py, float64_math_ops.py, complex_ops.py,
libdevice_ops.py), so
that lowering a call includes exactly the sections it needs (msl.FLOAT64_LIBRARY resolves their
requirements)."""

from __future__ import annotations

from . import complex_ops, float64_math_ops, float64_ops, libdevice_ops

#: Every entry point of float64.metal, float64_math.metal, complex.metal and libdevice.metal -> its section.
SECTIONS: dict[str, str] = {row.name: row.section for table in (float64_ops.FUNCTIONS, float64_math_ops.FUNCTIONS,
                                                                 complex_ops.FUNCTIONS, libdevice_ops.FUNCTIONS) for row in table}


def section_of(function: str) -> str:
    """The section defining ``function`` (a KeyError names a function no library defines)."""
    return SECTIONS[function]

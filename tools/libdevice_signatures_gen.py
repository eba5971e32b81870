"""Writes numba_metal/kernel_api/libdevice_signatures.py, the checked-in list of numba.cuda's
cuda.libdevice functions, from numba.cuda's own table (numba.cuda.libdevicefuncs) as numba.cuda types them
(libdevicefuncs.create_signature: pointer arguments become extra members of a tuple result). numba.cuda is
needed only to regenerate the list: `python tools/libdevice_signatures_gen.py --update`;
test_libdevice_signatures.py checks that the checked-in list is what this writes."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, "numba_metal", "kernel_api", "libdevice_signatures.py")

HEADER = '''"""numba.cuda's cuda.libdevice functions with numba.cuda's signatures: (name, result types, argument
types), one row each. A result of several types is numba.cuda's tuple (libdevice's pointer arguments are
returned, after the function's own result). Generated from numba.cuda.libdevicefuncs by
tools/libdevice_signatures_gen.py; do not edit by hand.

This module imports nothing (the math table reads it without Numba).
"""

SIGNATURES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
'''


def rows():
    from numba.core import types
    from numba.cuda import libdevicefuncs
    out = []
    for func, (retty, args) in libdevicefuncs.functions.items():
        results = ([] if retty == types.void else [str(retty)]) + [str(a.ty) for a in args if a.is_ptr]
        out.append((func[len("__nv_"):], tuple(results), tuple(str(a.ty) for a in args if not a.is_ptr)))
    return out


def text():
    return HEADER + "".join(f"    {row!r},\n" for row in rows()) + ")\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        with open(TARGET, "w", encoding="utf-8") as f:
            f.write(text())
    else:
        sys.stdout.write(text())

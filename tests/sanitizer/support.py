"""What the sanitizer's test modules share: the repository root, and the buggy corpus's lines by mark."""

import os

from numba_metal import metal

from . import buggy_kernels as bug

FILE_BUG = bug.__file__
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sanitized(fn, checks="all"):
    """``fn`` as a kernel sanitizing ``checks``."""
    return metal.jit(sanitize=checks)(fn)


def where(fn, mark):
    """``file:line`` of the line of buggy kernel ``fn`` marked ``# <mark>``."""
    return f"{FILE_BUG}:{bug.line_of(fn, mark)}"

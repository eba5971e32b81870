"""``numba.cuda.compiler``: numba.cuda's PTX/LTO-IR compilers, which produce NVIDIA code. They are numba-metal's
refusals of the same names (``metal.compile_ptx``...), which raise ``UnsupportedFeatureError`` naming
``metal.compile_msl``."""

from numba_metal.metal import (compile, compile_all, compile_for_current_device, compile_ptx,  # noqa: F401
                               compile_ptx_for_current_device)

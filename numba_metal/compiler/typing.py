"""Numba typing for numba-metal: the ``metal`` hardware target and its typing context.

The context knows Numba's core typing (operators, builtins, arrays, ``range``, NumPy scalar
constructors), ``math``, and numba-metal's own declarations in :data:`registry`, which the kernel-API
modules fill (each family declares its stubs' types next to their MSL lowering). It is created on the
first compile, never at import time.
"""

from __future__ import annotations

import threading

from numba.core import types
from numba.core.target_extension import GPU, target_registry
from numba.core.typing import templates
from numba.core.typing.context import BaseContext


class MetalHardware(GPU):
    """Numba's view of numba-metal's hardware target (``target='metal'``)."""


if "metal" not in target_registry:
    target_registry["metal"] = MetalHardware

#: numba-metal's own typing declarations (kernel API stubs, device functions).
registry = templates.Registry()


class MetalTypingContext(BaseContext):
    """Typing context of numba-metal kernels and device functions."""

    def load_additional_registries(self):
        from numba.core.typing import mathdecl

        from numba_metal import kernel_api  # noqa: F401  (fills ``registry``)

        self.install_registry(mathdecl.registry)
        self.install_registry(registry)


class _TargetContextStub:
    """What Numba's type inference needs of a target context: the target, and no NRT.

    numba-metal never lowers to LLVM, so it never builds Numba's (costly) CPU target context.
    """

    target = MetalHardware
    enable_nrt = False


TARGET_CONTEXT = _TargetContextStub()

_context: MetalTypingContext | None = None
_context_lock = threading.Lock()


def typing_context() -> MetalTypingContext:
    """The process-wide typing context, created on first use."""
    global _context
    if _context is None:
        with _context_lock:
            if _context is None:
                ctx = MetalTypingContext()
                ctx.refresh()
                _context = ctx
    return _context


__all__ = ["MetalHardware", "MetalTypingContext", "TARGET_CONTEXT", "registry", "typing_context", "types"]

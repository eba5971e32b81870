"""Compile-time constants (literals, module globals, closure variables) as MSL expressions."""

from __future__ import annotations

import numpy as np
from numba.core import types

from . import msl
from .lowering import Value


def lower_constant(lc, pyvalue, ty) -> Value:
    ty_u = types.unliteral(ty)
    scalar = msl.scalar_type(ty_u)
    if scalar is not None:
        if isinstance(pyvalue, (np.generic,)):
            pyvalue = pyvalue.item()
        if isinstance(pyvalue, (bool, int, float)):
            return Value(msl.literal(pyvalue, scalar), ty_u)
    if isinstance(ty_u, types.BaseTuple) and isinstance(pyvalue, tuple):
        items = [lower_constant(lc, v, t) for v, t in zip(pyvalue, ty_u.types)]
        return Value(f"{lc.msl_type(ty_u)}{{{', '.join(lc.cast(i, t) for i, t in zip(items, ty_u.types))}}}",
                     ty_u)
    if isinstance(ty_u, types.Array):
        from numba_metal.kernel_api.memory import lower_constant_array
        return lower_constant_array(lc, pyvalue, ty_u)
    lc.error(f"the constant {pyvalue!r} (of type {ty}) cannot be used at run time in a Metal kernel")

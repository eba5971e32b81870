"""``numba.cuda.libdevicefuncs``: numba-cuda's table of libdevice's functions (``functions``: ``"__nv_<name>"`` ->
``(return type, [arg(name, ty, is_ptr)...])``) and ``create_signature``. Here it is built from numba-metal's
table of ``metal.libdevice`` (numba_metal/kernel_api/libdevice_signatures.py, generated from numba-cuda's), a
result beyond the first being a pointer argument as in libdevice. numba-cuda's tests use it to compile every
function to PTX (impossible on Metal) and to name them."""

from collections import namedtuple

from numba.core import types
from numba.core.typing.templates import signature

from numba_metal.kernel_api.libdevice_signatures import SIGNATURES

arg = namedtuple("arg", ("name", "ty", "is_ptr"))


def _functions():
    table = {}
    for name, results, args in SIGNATURES:
        inputs = [arg(f"x{i}", getattr(types, t), False) for i, t in enumerate(args)]
        outputs = [arg(f"p{i}", getattr(types, t), True) for i, t in enumerate(results[1:])]
        retty = getattr(types, results[0]) if results else types.void
        table["__nv_" + name] = (retty, inputs + outputs)
    return table


functions = _functions()


def create_signature(retty, args):
    """numba.cuda's: the Python-side signature, pointer arguments returned after the result (a tuple)."""
    returns = [] if retty == types.void else [retty]
    returns += [a.ty for a in args if a.is_ptr]
    params = [a.ty for a in args if not a.is_ptr]
    if len(returns) == 1:
        return signature(returns[0], *params)
    if len(returns) > 1:
        rettype = (types.UniTuple(returns[0], len(returns)) if len(set(returns)) == 1 else types.Tuple(returns))
        return signature(rettype, *params)
    return signature(types.void, *params)

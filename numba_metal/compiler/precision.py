"""Which float64 a kernel computes: the one place the float64 policy is decided.

Apple GPUs have no double precision. A kernel that *holds float64 data* computes every float64 value
exactly, as IEEE binary64 in software (the emulated library, float64.metal), bit-identical to NumPy for
the basic operations. float64 data is: a float64 (or complex128) argument, array argument or array
element type (shared, local and constant arrays included), a record type with such a field, an
``np.float64``/``numba.float64`` value or conversion written in the code, or any complex128 value, in the
kernel or in a device function it calls.

A kernel that holds none keeps float64 *intermediates* (true division of integers, ``math`` functions of
integers, Python float literals, which Numba types float64) in float32, as it always has: its MSL is
unchanged and it never pays for emulation silently. ``float64="exact"`` (a compile option) computes
them exactly too. docs/limitations.md states the rule.
"""

from __future__ import annotations

#: The values of the ``float64`` compile option (this module loads without Numba, so that ``@metal.jit``
#: checks the option without importing it; the functions below import it).
EXACT = "exact"
FLOAT32_INTERMEDIATES = "float32"   # the default: exact only for kernels that hold float64 data
OPTIONS = (FLOAT32_INTERMEDIATES, EXACT)


def check_option(float64) -> None:
    """Refuse a ``float64`` option that is not one of ``OPTIONS`` (None is the default)."""
    if float64 is not None and float64 not in OPTIONS:
        from numba_metal.errors import UnsupportedFeatureError
        raise UnsupportedFeatureError(f"float64={float64!r}: the float64 option is one of "
                                      f"{', '.join(map(repr, OPTIONS))}")


def _is_float64_data_type(ty) -> bool:
    from numba.core import types
    ty = types.unliteral(ty)
    if isinstance(ty, types.Array):
        ty = ty.dtype
    if isinstance(ty, types.NumberClass):
        ty = ty.instance_type
    if isinstance(ty, types.Record):   # a record holding float64 or complex128 fields (or arrays of them)
        return any(_is_float64_data_type(f.type) for f in ty.fields.values())
    return ty in (types.float64, types.complex128)


def leaves(ty):
    """The types of a (nested) tuple type's items; the type itself if it is no tuple."""
    from numba.core import types
    if isinstance(ty, types.BaseTuple):
        for t in ty.types:
            yield from leaves(t)
    else:
        yield ty


def holds_float64_data(tf) -> bool:
    """True if the typed function ``tf`` (a kernel's or a device function's), or a device function it
    calls, holds float64 data (see the module docstring)."""
    return _holds(tf, set(), own_arguments=True)


def _holds(tf, seen, own_arguments=False) -> bool:
    import numpy as np
    from numba.core import ir, types
    if id(tf) in seen:
        return False
    seen.add(id(tf))
    # A device function's float64 parameters hold what its callers pass: data only where the caller holds it.
    if own_arguments and any(_is_float64_data_type(t) for a in tf.argtypes for t in leaves(a)):
        return True
    for name, ty in tf.typemap.items():
        # Arrays of float64 (shared, local, constant), np.float64 / numba.float64 named in the code, and
        # any complex128 value (a pair of float64: `1j`, complex(x, y)).
        if isinstance(ty, (types.Array, types.NumberClass, types.Record)) and _is_float64_data_type(ty):
            return True
        if ty == types.complex128:
            return True
    for block in tf.func_ir.blocks.values():
        for stmt in block.body:
            if not isinstance(stmt, ir.Assign):
                continue
            value = stmt.value
            if isinstance(value, (ir.Const, ir.Global, ir.FreeVar)) and isinstance(value.value, (np.float64,
                                                                                                np.complex128)):
                return True
            if isinstance(value, ir.Expr) and value.op == "call":
                for callee_tf in _device_callees(tf, value):
                    if _holds(callee_tf, seen):
                        return True
    return False


def _device_callees(tf, call):
    """The typed IR of the device function ``call`` calls, if it calls one."""
    from numba.core import types

    from .devicefn import DeviceFunctionBase
    fnty = tf.typemap.get(call.func.name)
    sig = tf.calltypes.get(call)
    if not isinstance(fnty, types.Function) or sig is None:
        return ()
    devfn = getattr(fnty.templates[0], "key", None) if fnty.templates else None
    if not isinstance(devfn, DeviceFunctionBase):
        return ()
    return (devfn.typed(tuple(sig.args)),)


#: Operators whose Python-literal operand is weak (NumPy 2): with float32 data, the result is float32.
_WEAK_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")


def weak_literals(tf) -> frozenset:
    """The IR variables holding a Python int or float literal that is used only as an operand of an
    arithmetic operator whose other operand is float32: NumPy 2 keeps such an operation float32 (the
    literal is weak), where Numba's typing would compute it in float64. A kernel that computes float64
    exactly types these literals float32 (``frontend.infer_types(float32_constants=)``); elsewhere
    float64 is float32 anyway."""
    from numba.core import ir, types
    literals = {}
    for block in tf.func_ir.blocks.values():
        for stmt in block.body:
            if (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Const)
                    and type(stmt.value.value) in (int, float) and not isinstance(stmt.value.value, bool)):
                literals[stmt.target.name] = True
    if not literals:
        return frozenset()
    weak = dict.fromkeys(literals, False)
    for block in tf.func_ir.blocks.values():
        for stmt in block.body:
            for var in stmt.list_vars():
                if var.name not in literals:
                    continue
                value = stmt.value if isinstance(stmt, ir.Assign) else None
                if isinstance(stmt, ir.Assign) and stmt.target.name == var.name:
                    continue
                ok = (isinstance(value, ir.Expr) and value.op in ("binop", "inplace_binop")
                      and getattr(value.fn, "__name__", "").lstrip("i") in _WEAK_OPERATORS
                      and {value.lhs.name, value.rhs.name} != {var.name})
                if ok:
                    other = value.rhs if value.lhs.name == var.name else value.lhs
                    ok = types.unliteral(tf.typemap.get(other.name)) == types.float32
                if not ok:
                    literals[var.name] = False
                elif literals[var.name]:
                    weak[var.name] = True
    return frozenset(name for name, used in weak.items() if used and literals[name])


def exact_float64(tf, option: str | None) -> bool:
    """Whether the kernel ``tf`` computes float64 exactly under the ``float64`` option."""
    return option == EXACT or holds_float64_data(tf)

"""Lowering of calls: kernel-API stubs and Python builtins (through the lowering registry), NumPy
scalar constructors, and device functions."""

from __future__ import annotations

from numba.core import ir, types

from . import interface, msl
from .devicefn import DeviceFunctionBase
from .lowering import Value, registry as lowerings


def lower_call(lc, expr) -> Value | None:
    if getattr(expr, "varkwarg", None) is not None:
        lc.error("calls with **kwargs are not supported in Metal kernels")
    sig = lc.calltypes.get(expr)
    fnty = lc.typemap[expr.func.name]
    if isinstance(fnty, types.BoundFunction):
        return _lower_method(lc, expr, fnty, sig)
    # A device function is known by its type (also a kernel, or a Numba @jit function, called as one).
    devfn = interface.function_of_type(fnty)
    callee = devfn if isinstance(devfn, DeviceFunctionBase) else lc.resolve(expr.func)
    args = [lc.value(a) for a in expr.args]
    if expr.vararg is not None:
        # f(*t) with a tuple t, which is also how CPython compiles any call with more than 30
        # arguments: Numba types the call with the tuple's items appended to the arguments.
        star = lc.value(expr.vararg)
        sty = types.unliteral(star.type)
        if not isinstance(sty, types.BaseTuple):
            lc.error(f"*args in a call must be a tuple, not {sty}")
        args += [Value(msl.member(star.expr, msl.tuple_field(k)), t) for k, t in enumerate(sty.types)]
    kws = {name: lc.value(v) for name, v in expr.kws}

    fn = lowerings.find_call(callee)
    lc.callee = callee
    lc.call = expr
    if fn is not None:
        if kws:
            return fn(lc, sig, args, **kws)
        return fn(lc, sig, args)
    if isinstance(callee, DeviceFunctionBase):
        # The values in the order of the parameters, as the call was typed (devicefn.fold): a default is a
        # constant of the callee (nothing is passed), the extra positional arguments one tuple.
        argtypes = tuple(sig.args)
        folded = callee.fold(tuple(args), kws, lambda default: None, list)
        return lc.lower_device_call(callee, argtypes, [_packed(lc, v, t) for v, t in zip(folded, argtypes)])
    if isinstance(fnty, types.NumberClass):
        if len(args) != 1 or kws:
            lc.error(f"{fnty.instance_type}() takes exactly one argument in a Metal kernel")
        rt = sig.return_type
        return Value(lc.cast(args[0], rt), rt)
    name = getattr(callee, "__qualname__", None) or getattr(callee, "__name__", None) or repr(callee)
    module = getattr(callee, "__module__", None)
    if module and module not in ("builtins",):
        name = ".".join((module, name))
    hint = ""
    if callable(callee) and hasattr(callee, "py_func"):
        hint = ("; to call a Numba-compiled function from a kernel, decorate it with "
                "@metal.jit(device=True)")
    elif callable(callee):
        hint = "; to call your own function from a kernel, decorate it with @metal.jit(device=True)"
    lc.error(f"calling {name} is not supported in Metal kernels{hint}")


def _packed(lc, value, ty):
    """A folded argument's value: a default's is None; the extra positional arguments (a list of values)
    make one tuple of type ``ty``."""
    if not isinstance(value, list):
        return value
    if lc.module.type_name(ty) is None:
        return Value("", ty)
    items = [lc.cast(v, t) for v, t in zip(value, ty.types)]
    return Value(msl.aggregate(lc.msl_type(ty), items), ty)


def _lower_method(lc, expr, fnty, sig) -> Value | None:
    """``value.name(args)``: the lowering registered for the receiver's type and the method's name."""
    d = lc.func_ir.get_definition(expr.func)
    while isinstance(d, ir.Var):
        d = lc.func_ir.get_definition(d)
    if not (isinstance(d, ir.Expr) and d.op == "getattr"):
        lc.error("cannot tell at compile time which method is called")
    fn = lowerings.find_method(types.unliteral(fnty.this), d.attr)
    if fn is None:
        lc.error(f"the method {d.attr}() of {fnty.this} is not supported in Metal kernels")
    if expr.kws or expr.vararg is not None:
        lc.error(f"{d.attr}() takes positional arguments only in Metal kernels")
    return fn(lc, sig, lc.value(d.value), [lc.value(a) for a in expr.args])

"""Which device arrays a kernel captures from its scope, and in what order (issue 27 item 3). One owner for
the order the compiler gives the hidden arguments and the host passes them in (host/captures.py).

A function's captures are the globals and closure variables its code loads whose value is now a captured
array (a class marked ``_metal_captured_by_reference_``: the host's device and mapped arrays; or another
library's array exporting DLPack, which each launch imports as it imports such an argument), sorted by
(kind, name), followed by the captures of each device function it names (in the same order of their names),
each capture once. A capture is (owner function, kind, name): kind 'g' for a global, 'f' for a closure
variable, looked up in the owner's globals or closure. Reads only bytecode: importing it imports no Numba.
"""

from __future__ import annotations

import dis
import types as pytypes

import numpy as np

_GLOBAL_OPS = frozenset(["LOAD_GLOBAL", "LOAD_NAME"])
_DEREF_OPS = frozenset(["LOAD_DEREF", "LOAD_CLASSDEREF"])
MISSING = object()


def is_captured(value) -> bool:
    """Whether a value a kernel names is captured by reference (rather than compiled in as a constant)."""
    # Read from the class: an instance's getattr may run code (a lazy module's __getattr__ imports Numba).
    t = type(value)
    flag = getattr(t, "_metal_captured_by_reference_", None)
    if isinstance(flag, property):   # mapped arrays: only those still in unified memory
        return flag.fget(value) is True
    if flag is True:
        return True
    # Another library's array exporting DLPack (NumPy's own arrays and scalars stay constants).
    return (hasattr(t, "__dlpack__") and hasattr(t, "__dlpack_device__")
            and not issubclass(t, (np.ndarray, np.generic)))


def is_device_function(value) -> bool:
    """Whether ``value`` is a device function (devicefn.DeviceFunctionBase marks its class; this module
    imports no other, so the front end and the device functions can both use it)."""
    return getattr(type(value), "_metal_device_function_", False) is True


def lookup(fn, kind: str, name: str):
    """The value ``name`` denotes now for ``fn`` (its global, or its closure variable), or MISSING."""
    if kind == "g":
        return fn.__globals__.get(name, MISSING)
    try:
        return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents
    except (ValueError, IndexError, TypeError):
        return MISSING


def _names(code, out: set, freevars) -> None:
    for ins in dis.get_instructions(code):
        if ins.opname in _GLOBAL_OPS:
            out.add(("g", ins.argval))
        elif ins.opname in _DEREF_OPS and ins.argval in freevars:
            out.add(("f", ins.argval))
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            _names(const, out, freevars)


def captures(fn, _active=None) -> tuple:
    """The captures of ``fn`` (owner, kind, name) in hidden-argument order (see the module's text)."""
    active = _active if _active is not None else set()
    if id(fn) in active:   # recursion (refused when typed)
        return ()
    active.add(id(fn))
    names: set = set()
    _names(fn.__code__, names, fn.__code__.co_freevars)
    own, callees = [], []
    for kind, name in sorted(names):
        value = lookup(fn, kind, name)
        if is_captured(value):
            own.append((fn, kind, name))
        elif is_device_function(value):
            callees.append(value)
    out = list(own)
    for devfn in callees:
        for cap in captures(devfn.py_func, active):
            if not any(c[0] is cap[0] and c[1:] == cap[1:] for c in out):
                out.append(cap)
    active.discard(id(fn))
    return tuple(out)


#: A call passes a device function's captures as keywords with these names (not Python identifiers, so no
#: parameter has one), after its own arguments: devicefn.fold puts them after its parameters.
HIDDEN_KEYWORD = "nm.captured.{}"


def is_hidden_keyword(name: str) -> bool:
    return name.startswith("nm.captured.")


def index_of(caps, fn, kind: str, name: str) -> int:
    """The position of the capture (fn, kind, name) in ``caps``, or -1."""
    for i, c in enumerate(caps):
        if c[0] is fn and c[1] == kind and c[2] == name:
            return i
    return -1

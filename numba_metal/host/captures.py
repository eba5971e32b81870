"""Device arrays a kernel captures from its enclosing scope (issue 27 item 3).

A kernel that reads a module-level or closure ``DeviceNDArray`` (or a mapped array) uses it by
reference, as numba.cuda 0.30 does. numba.cuda bakes the array's device address into the code; on Metal a
buffer must be bound to a kernel parameter, so here each captured array becomes a hidden array argument
after the kernel's own: the compiler (frontend.build_ir) turns the name's load into that argument, and
every launch looks the name up again and passes the object it finds now. So:

- the reference is by *name*, not held by the kernel: rebinding the global to another array of the same
  type makes later launches use the new one; deleting it (or rebinding it to something else) makes the
  launch refuse with a clear error, never touch freed memory;
- the array is an argument like any other: the launch records it as used by its stream and a host read
  (``d[0]``) waits for the kernel that wrote it;
- the disk cache keys the kernel by the array's *type* (an argument key) and never stores its address.

Which objects are captured is marked on their class (``_metal_captured_by_reference_``), so the compiler
recognises them without importing the host. Device functions do not capture arrays (yet): one that reads
a device array from its scope is refused at compile time with that advice.
"""

from __future__ import annotations

import dis
import types as pytypes

from numba_metal.errors import KernelLaunchError

_GLOBAL_OPS = frozenset(["LOAD_GLOBAL", "LOAD_NAME"])
_DEREF_OPS = frozenset(["LOAD_DEREF", "LOAD_CLASSDEREF"])
_MISSING = object()


def is_captured(value) -> bool:
    """Whether a value a kernel names is captured by reference (rather than compiled in as a constant)."""
    return not isinstance(value, type) and getattr(value, "_metal_captured_by_reference_", False) is True


def _names(code, out: list, freevars) -> None:
    for ins in dis.get_instructions(code):
        if ins.opname in _GLOBAL_OPS:
            item = ("g", ins.argval)
        elif ins.opname in _DEREF_OPS and ins.argval in freevars:
            item = ("f", ins.argval)
        else:
            continue
        if item not in out:
            out.append(item)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            _names(const, out, freevars)


def _lookup(fn, kind: str, name: str):
    if kind == "g":
        return fn.__globals__.get(name, _MISSING)
    try:
        return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents
    except (ValueError, IndexError, TypeError):
        return _MISSING


def capture_names(fn) -> tuple:
    """(kind, name) of each name ``fn`` loads whose value is now a captured array, in the order the
    compiler gives them hidden arguments (sorted: kind 'f' for closure variables, 'g' for globals)."""
    names: list = []
    _names(fn.__code__, names, fn.__code__.co_freevars)
    return tuple(sorted(item for item in names if is_captured(_lookup(fn, *item))))


def captured_arrays(fn, names) -> tuple:
    """The objects the captured ``names`` denote now (for a launch); raises KernelLaunchError for one
    that no longer names a captured array (deleted, freed or rebound)."""
    out = []
    for kind, name in names:
        value = _lookup(fn, kind, name)
        if not is_captured(value):
            where = "global" if kind == "g" else "closure variable"
            now = "no longer exists" if value is _MISSING else f"is now a {type(value).__name__}"
            raise KernelLaunchError(
                f"kernel {fn.__name__}() captured the device array {where} '{name}', which {now}: a "
                "captured array is looked up at every launch and must still be a live device array "
                "(of the type the kernel was compiled for); keep it alive, or pass the array as an argument")
        out.append(value)
    return tuple(out)

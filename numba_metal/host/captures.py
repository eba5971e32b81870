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
- another library's array exporting DLPack is imported at every launch as such an argument is
  (``metal.from_dlpack``, no copy; host memory as a NumPy view);
- the disk cache keys the kernel by the array's *type* (an argument key) and never stores its address.

Which objects are captured is marked on their class (``_metal_captured_by_reference_``), so the compiler
recognises them without importing the host; which names a kernel captures, including those of the device
functions it calls, and their order, compiler/captures.py decides.
"""

from __future__ import annotations

from numba_metal.compiler.captures import MISSING, captures, is_captured, lookup
from numba_metal.errors import KernelLaunchError

from .interop import kernel_arguments

__all__ = ["captures", "captured_arrays", "is_captured"]


def captured_arrays(kernel_fn, caps) -> tuple:
    """The objects the captures ``caps`` (compiler.captures.captures) denote now, for a launch of
    ``kernel_fn``; raises KernelLaunchError for one that no longer names a captured array (deleted, freed
    or rebound)."""
    out = []
    for owner, kind, name in caps:
        value = lookup(owner, kind, name)
        if not is_captured(value):
            where = "global" if kind == "g" else "closure variable"
            now = "no longer exists" if value is MISSING else f"is now a {type(value).__name__}"
            by = "" if owner is kernel_fn else f" (through the device function {owner.__name__}())"
            raise KernelLaunchError(
                f"kernel {kernel_fn.__name__}() captured the device array {where} '{name}'{by}, which {now}: a "
                "captured array is looked up at every launch and must still be a live device array "
                "(of the type the kernel was compiled for); keep it alive, or pass the array as an argument")
        if not getattr(type(value), "_metal_captured_by_reference_", None):
            try:   # another library's array: imported through DLPack as such an argument is
                (value,) = kernel_arguments((value,))
            except KernelLaunchError as e:
                raise KernelLaunchError(f"kernel {kernel_fn.__name__}() captured '{name}', a "
                                        f"{type(value).__name__} exporting DLPack, which cannot be bound: "
                                        f"{e.message}") from None
        out.append(value)
    return tuple(out)

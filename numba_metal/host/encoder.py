"""The argument encoder of a launch state, generated from the kernel's ABI (as Metal.jl's
``encode_arguments!`` lives with its launch, in ``execution.jl``).

The ABI (:mod:`numba_metal.compiler.abi`) says where every value goes: each array argument's buffer slot,
and the argument struct's members in order with their sources (``Field.source``). From it, once per launch
state, :func:`encoder` writes straight-line Python for that one signature: no loop over the arguments, no
branch on their kinds, one ``struct.pack_into`` of the whole struct.
"""

from __future__ import annotations

import struct

from numba_metal.compiler.abi import SCALAR_ATTRIBUTES


class StridesDiffer(Exception):
    """Raised by an encoder (before anything is submitted) when arrays of a stride group its specialisation
    was compiled for have different strides: the launch takes the specialisation without stride groups
    (``LaunchConfig.__call__``). Never reaches the user."""


def encoder(abi, same_strides=()):
    """The argument encoder generated for ``abi`` (a :class:`~numba_metal.compiler.abi.KernelABI`): a pair
    of functions ``(encode, encode_bound)``. ``same_strides``: pairs ``(j, k)`` of array arguments (indices
    into ``abi.arrays``) whose element strides (but the last) the specialisation takes to be equal (its
    stride groups, issue 28 item 4); ``encode`` checks them when it binds arrays (not for the arrays of the previous
    launch, whose geometry never changes) and raises :class:`StridesDiffer` if they differ.

    ``encode(S, args, L)`` encodes a launch's arguments ``args`` with launch configuration ``L`` (its
    ``sharedmem`` and ``shared_length``) into the launch state ``S``, when every array argument is a device
    array of S's device; it returns False, having encoded nothing that matters, for any other argument.
    ``S`` provides:

    - ``S.bind(j, a)``: binds array ``a`` to the slot of the ``j``-th array argument if it is a device
      array of S's device and returns its field values (shape..., strides..., origin if 'A'), else
      returns None;
    - ``S.last`` / ``S.values``: the array arguments of the previous encode and their field values
      (arrays identical to the previous launch's are neither checked nor rebound: their type, device
      and geometry never change);
    - ``S.shared_length`` / ``S.set_shared_length(n)``: the dynamic threadgroup memory bound;
    - ``S.view``: the argument struct's bytes.

    ``encode_bound(S, values, args, L)`` does the same with the arrays already bound by the caller and
    ``values`` their field values (any other array argument: host arrays, mapped arrays).

    Packing raises struct.error, OverflowError or TypeError for a scalar that does not fit its type.
    """
    namespace = {"_pack": struct.Struct(abi.arg_format).pack_into, "_StridesDiffer": StridesDiffer}
    split = _array_prefix(abi)
    if split >= 0:   # the format is "<" and one code per member
        namespace["_pack_arrays"] = struct.Struct(abi.arg_format[:1 + split]).pack_into
        namespace["_pack_other"] = struct.Struct("<" + abi.arg_format[1 + split:]).pack_into
    exec(compile(python_source(abi, same_strides), f"<numba_metal encoder {abi.entry_name}>", "exec"), namespace)
    return namespace["encode"], namespace["encode_bound"]


def _array_prefix(abi) -> int:
    """The number of struct members that come from arrays, all before the others (``layout`` puts them
    first); -1 if some other member comes first (then every launch packs the whole struct)."""
    sources = [f.source[0] for f in abi.fields]
    n = sources.count("array")
    return n if sources[:n] == ["array"] * n else -1


def python_source(abi, same_strides=()) -> str:
    """The Python source of :func:`encoder`'s two functions for ``abi`` (and ``same_strides``).

    ``encode`` packs the arrays' members (shapes, strides, origins) only when it binds arrays: for the
    arrays of the previous launch they are already in ``S.view``, which nothing else writes between
    launches but ``encode_bound``, whose caller resets ``S.last`` first. The other members (scalars, the
    dynamic threadgroup memory's length) are packed at every launch, after the arrays' members.
    """
    other = []   # the struct values that do not come from arrays, in struct order
    for f in abi.fields:
        kind = f.source[0]
        if kind == "scalar":
            other.append(f"args[{f.source[1]}]" + "".join(f".{i}" if i in SCALAR_ATTRIBUTES else f"[{int(i)}]"
                                                          for i in f.source[2:]))
        elif kind == "sharedmem":
            other.append("L.sharedmem")
    shared = []
    if abi.dynamic_threadgroup_memory:
        shared = ["    if L.shared_length != S.shared_length:",
                  "        S.set_shared_length(L.shared_length)"]
    whole = []
    if abi.fields:
        values = (["*v"] if abi.arrays else []) + other
        whole = [f"    _pack(S.view, 0, {', '.join(values)})"]
    split = _array_prefix(abi)
    arrays = [f"args[{a.arg}]" for a in abi.arrays]
    lines = ["def encode(S, args, L):"]
    if abi.arrays:
        lines.append("    last = S.last")
        lines.append(f"    if not ({' and '.join(f'{x} is last[{j}]' for j, x in enumerate(arrays))}):")
        for j, x in enumerate(arrays):
            lines.append(f"        v{j} = S.bind({j}, {x})")
            lines.append(f"        if v{j} is None:")
            lines.append("            return False")
        for j, k in same_strides:
            n = abi.arrays[j].ndim
            if abi.arrays[k].ndim != n:
                raise ValueError(f"arrays {j} and {k} of a stride group have {n} and {abi.arrays[k].ndim} axes")
            # the strides a row offset uses: all but the last (a C-contiguous array's unit stride)
            lines.append(f"        if {' or '.join(f'v{j}[{m}] != v{k}[{m}]' for m in range(n, 2 * n - 1))}:")
            lines.append("            raise _StridesDiffer")
        lines.append(f"        v = S.values = {' + '.join(f'v{j}' for j in range(len(arrays)))}")
        if split > 0:
            lines.append("        _pack_arrays(S.view, 0, *v)")
        lines.append(f"        S.last = ({''.join(x + ', ' for x in arrays)})")
        if split < 0:
            lines.append("    else:")
            lines.append("        v = S.values")
    lines += shared
    if split < 0:
        lines += whole
    elif other:
        lines.append(f"    _pack_other(S.view, {struct.calcsize(abi.arg_format[:1 + split])}, {', '.join(other)})")
    lines.append("    return True")
    lines += ["", "", "def encode_bound(S, v, args, L):"] + shared + whole + ["    return True"]
    return "\n".join(lines) + "\n"


__all__ = ["encoder"]

"""A function's interface in MSL: how it receives its arguments and its kernel environment.

A device function takes the kernel environment (``nm_env``) and its run-time arguments as parameters.
A kernel's interface is its ABI (:mod:`.abi`: buffers, the packed argument struct, dynamic threadgroup
memory, the built-in inputs), decided here from its argument types and from what lowering its body
needed; its first statements gather the built-ins and kernel-wide resources into its ``nm_env``, and
its arguments are read back from the buffers and the struct. Each function takes the
:class:`~.codegen.FunctionLowering` of the function (``lc``).
"""

from __future__ import annotations

from numba.core import ir, types

from numba_metal.errors import UnsupportedFeatureError
from numba_metal.runtime import PARAM_ARGUMENT_BLOCK, PARAM_BUFFER, PARAM_BUILTIN, PARAM_THREADGROUP

from . import abi, arrays, effects, msl, sanitize
from .devicefn import DeviceFunctionBase
from .lowering import Value, registry as lowerings


def device_function_header(lc) -> str:
    """The MSL header of a device function: the environment, then its run-time arguments."""
    params = [msl.parameter(msl.reference("thread", msl.ENV_TYPE, const=True), msl.ENV_PARAM)]
    for i, ty in enumerate(lc.tf.argtypes):
        tname = lc.module.type_name(ty)
        if tname is not None:
            params.append(msl.parameter(tname, msl.numbered("p", i)))
    rty = lc.tf.return_type
    rname = "void" if isinstance(rty, types.NoneType) else lc.msl_type(rty)
    return msl.device_function_header(rname, lc.name, params)


def kernel_abi(lc) -> abi.KernelABI:
    """The kernel's ABI, from its argument types and what lowering its body needed."""
    tf, module = lc.tf, lc.module
    arguments = []
    written = effects.written_arguments(tf)
    for i, (argname, ty) in enumerate(zip(tf.arg_names, tf.argtypes)):
        at = ":".join(map(str, written[i])) if i in written else ""
        if isinstance(ty, types.Record):
            arguments.append(abi.ArrayArgument(i, 0, argname, module.record_layout(ty).struct, 0, "C",
                                               module.coherent, at))
            continue
        if function_of_type(ty) is not None:
            continue  # a device function argument is known at compile time: nothing is passed
        if isinstance(ty, types.Array):
            arguments.append(abi.ArrayArgument(i, 0, argname, module.element_type_name(ty.dtype), ty.ndim,
                                               ty.layout if ty.layout in ("C", "F") else "A", module.coherent, at,
                                               _read_only_buffer(lc, i, ty)))
            continue
        for path, sty in _flatten_scalars(ty):
            # An Enum or IntEnum member is passed as its value (an IntEnum member is an int already).
            attribute = ""
            if isinstance(sty, types.EnumMember):
                attribute = "" if isinstance(sty, types.IntEnumMember) else "value"
                sty = sty.dtype
            mtype = msl.FLOAT64 if lc.is_float64(sty) else msl.scalar_type(sty)
            if mtype is None:
                raise UnsupportedFeatureError(
                    f"argument '{argname}' of type {ty} is not supported by Metal kernels", tf.location)
            arguments.append(abi.ScalarArgument(i, path, mtype, attribute))
    return abi.layout(lc.name, tf.name, arguments, debug=module.error_record,
                      dynamic_threadgroup_memory=module.uses_dynamic_shared,
                      static_threadgroup_memory=module.shared_bytes + module.pool_bytes,
                      array_names=module.array_names,
                      language_version=module.language_version,
                      print_formats=module.print_formats, raise_sites=module.raise_sites,
                      where=tf.location, sanitizer_sites=module.sanitizer_sites)


def kernel_signature(kabi: abi.KernelABI) -> str:
    """The MSL kernel function's header: exactly the ABI's parameters (``KernelABI.params``)."""
    attributes = {PARAM_BUFFER: msl.buffer_attribute, PARAM_ARGUMENT_BLOCK: msl.buffer_attribute,
                  PARAM_THREADGROUP: msl.threadgroup_attribute}
    params = [msl.parameter(p.type, p.name, msl.builtin_attribute(p.builtin) if p.kind == PARAM_BUILTIN
                            else attributes[p.kind](p.index)) for p in kabi.params]
    return msl.kernel_header(kabi.entry_name, params)


def argument_struct(kabi: abi.KernelABI) -> str | None:
    """The MSL definition of the ABI's argument struct (None without fields)."""
    if not kabi.fields:
        return None
    return msl.struct_definition(abi.struct_name(kabi.entry_name), [(f.msl_type, f.name) for f in kabi.fields])


def kernel_environment(lc) -> list[str]:
    """The kernel's first statements: its ``nm_env`` value."""
    module, kernel = lc.module, lc.abi
    lines = [msl.declare(msl.ENV_TYPE, msl.ENV_PARAM)]
    for member, _, _ in abi.BUILTINS:
        lines.append(msl.assign(msl.env(member), abi.builtin_param(member)))
    err = abi.ERROR_RECORD_PARAM if module.error_record else msl.NULL
    if module.error_record and any(a.coherent for a in kernel.arrays):   # coherent(device): see abi.layout
        err = msl.pointer_cast(msl.pointer("device", "uint"), err)
    lines.append(msl.assign(msl.env("err"), err))
    if kernel.print_slot is not None:
        lines.append(msl.assign(msl.env("out"), abi.PRINT_BUFFER_PARAM))
    if module.uses_raise:
        lines.append(msl.declare("uint", "nm_raised"))
        lines.append(msl.assign(msl.env("raised"), msl.address_of("nm_raised")))
    if module.uses_threadgroup_counter:
        lines.append(msl.declare_uninitialized("threadgroup atomic_int", "nm_tgcount"))
        lines.append(msl.assign(msl.env("tgcount"), msl.address_of("nm_tgcount")))
    else:
        lines.append(msl.assign(msl.env("tgcount"), msl.NULL))
    if module.pool_bytes:
        lines.append(msl.declare_array("float4", "nm_tgpool", module.pool_bytes // 16, space="threadgroup"))
        lines.append(msl.assign(msl.env("tgpool"), msl.pointer_cast("threadgroup uchar*", "nm_tgpool")))
    else:
        lines.append(msl.assign(msl.env("tgpool"), msl.NULL))
    if kernel.dynamic_threadgroup_memory:
        lines.append(msl.assign(msl.env("dynshared"), abi.DYNAMIC_MEMORY_PARAM))
        lines.append(msl.assign(msl.env("dynshared_bytes"), msl.member(abi.ARGS_PARAM, abi.DYNAMIC_MEMORY_FIELD)))
    else:
        lines.append(msl.assign(msl.env("dynshared"), msl.NULL))
        lines.append(msl.assign(msl.env("dynshared_bytes"), msl.uint_literal(0)))
    return lines + sanitize.prologue(module)


def _read_only_buffer(lc, i: int, ty) -> bool:
    """Array argument ``i`` is declared ``device const T*``: a device array the kernel never writes
    (effects.py), in a kernel whose device memory is not ``coherent(device)``."""
    return (ty.mutable and ty.ndim > 0 and not lc.module.coherent
            and i not in effects.written_arguments(lc.tf))


def lower_argument(lc, arg: ir.Arg) -> Value:
    """The value of argument ``arg``: a device function's parameter, or a kernel's, read back from its
    buffer and the argument struct."""
    i = arg.index
    ty = lc.tf.argtypes[i]
    if not lc.is_kernel:
        return Value(msl.numbered("p", i), ty)
    args = abi.ARGS_PARAM
    if isinstance(ty, types.Record):
        return Value(abi.array_param(i), ty)
    if isinstance(ty, types.Array):
        data = abi.array_param(i)
        if _read_only_buffer(lc, i, ty):   # declared const: the array's value type is a plain device pointer
            data = msl.pointer_cast(lc.pointer("device", lc.element_type(ty.dtype)), data)
        if ty.layout not in ("C", "F"):
            data = msl.binary("+", data, msl.member(args, abi.origin_field(i)))
        shape = [msl.member(args, abi.shape_field(i, k)) for k in range(ty.ndim)]
        strides = [msl.member(args, abi.stride_field(i, k)) for k in range(ty.ndim)]
        return arrays.array_value(lc, ty, data, shape, strides)
    return Value(_rebuild_scalar_arg(lc, i, ty, ()), ty)


def _rebuild_scalar_arg(lc, i, ty, path) -> str:
    if isinstance(ty, types.BaseTuple):
        items = [_rebuild_scalar_arg(lc, i, t, path + (k,)) for k, t in enumerate(ty.types)]
        return msl.aggregate(lc.msl_type(ty), items)
    if isinstance(ty, types.Complex):
        re, im = (_rebuild_scalar_arg(lc, i, ty.underlying_float, path + (p,)) for p in abi.COMPLEX_PARTS)
        if ty == types.complex128:
            return lc.library_call("nm_c128_make", re, im)
        return msl.call(msl.COMPLEX64, re, im)
    field = msl.member(abi.ARGS_PARAM, abi.scalar_field(i, path))
    # A float64 is copied out of constant memory as its bits (the struct itself is not copied
    # across address spaces).
    value_type = ty.dtype if isinstance(ty, types.EnumMember) else ty   # a member is its value
    return lc.load(value_type, msl.member(field, msl.FLOAT64_BITS)) if lc.is_float64(value_type) else field


def function_of_type(ty):
    """The function a function type stands for (the key of its one template: a device function, or a
    kernel-API function such as ``metal.atomic.add``), or None."""
    templates = getattr(ty, "templates", None) if isinstance(ty, types.Function) else None
    if templates and len(templates) == 1:
        key = templates[0].key
        if isinstance(key, DeviceFunctionBase) or lowerings.find_call(key) is not None:
            return key
    return None


def _flatten_scalars(ty, path=()):
    """(path, type) of every scalar field a scalar argument is passed in: tuple items by index, a complex
    number as its parts (abi.COMPLEX_PARTS, read by attribute on the host)."""
    ty = types.unliteral(ty)
    if isinstance(ty, types.BaseTuple):
        for k, t in enumerate(ty.types):
            yield from _flatten_scalars(t, path + (k,))
    elif isinstance(ty, types.Complex):
        for part in abi.COMPLEX_PARTS:
            yield path + (part,), ty.underlying_float
    else:
        yield path, ty

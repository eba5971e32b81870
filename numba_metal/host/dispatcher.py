"""``@metal.jit``: kernels and device functions, specialisation, launching and inspection.

A ``Dispatcher`` (a kernel) compiles one specialisation per tuple of argument types, once. Each
specialisation keeps, per device, its pipeline and a prepared launch: a reusable dispatch descriptor
and an argument packer generated for its launch plan, so a launch with a known specialisation is
argument typing, one ``struct.pack_into`` and one C call.
"""

from __future__ import annotations

import os
import struct
import sys
import threading

import numpy as np

from numba_metal.errors import (KernelCompilationError, KernelLaunchError, MetalRuntimeError,
                                NumbaMetalError, UnsupportedFeatureError)

from . import device as _device
from . import streams as _streams
from numba_metal import profiling as _prof
from numba_metal.compiler.devicefn import DeviceFunctionBase

from .argtypes import typeof_arg

_KNOWN_OPTIONS = {"device", "fastmath", "debug", "cache", "inline", "forceinline", "opt", "lineinfo"}
_UNSUPPORTED_OPTIONS = {
    "link": "linking external code", "max_registers": "a register cap", "launch_bounds": "launch bounds",
    "lto": "link-time optimisation", "extensions": "compiler extensions", "boundscheck":
    "the boundscheck option (use debug=True for bounds-checked kernels)",
}


def jit(func_or_sig=None, device=False, **options):
    """Compile a Python function as a Metal kernel (or, with ``device=True``, a device function).

    Options: ``device``, ``fastmath`` (fast math and fast math functions), ``debug`` (bounds-checked
    array accesses, violations raised at the next wait), ``cache`` (a disk cache that is never stale).
    Signatures (a string, a Numba signature or a list of them) compile eagerly and then only those
    argument types are accepted.
    """
    for name in options:
        if name in _UNSUPPORTED_OPTIONS:
            raise UnsupportedFeatureError(f"@metal.jit({name}=...): Metal has no equivalent of "
                                          f"{_UNSUPPORTED_OPTIONS[name]}")
        if name not in _KNOWN_OPTIONS:
            raise NumbaMetalError(f"@metal.jit got an unknown option {name!r}; options are: "
                                  f"{', '.join(sorted(_KNOWN_OPTIONS))}")
    targetoptions = {"fastmath": bool(options.get("fastmath", False)),
                     "debug": bool(options.get("debug", False)),
                     "cache": bool(options.get("cache", False))}
    sigs = None
    if func_or_sig is not None and not callable(func_or_sig):
        sigs = func_or_sig if isinstance(func_or_sig, (list, tuple)) else [func_or_sig]
        func_or_sig = None

    def decorate(pyfunc):
        if device:
            return DeviceFunction(pyfunc, sigs, **targetoptions)
        return Dispatcher(pyfunc, sigs, **targetoptions)

    if func_or_sig is not None:
        if isinstance(func_or_sig, (Dispatcher, DeviceFunction)):
            raise NumbaMetalError("@metal.jit applied twice")
        return decorate(func_or_sig)
    return decorate


def device_func(pyfunc=None, **options):
    """Decorator for a device function (the earlier numba-metal's spelling of ``jit(device=True)``)."""
    if pyfunc is None:
        return lambda f: jit(f, device=True, **options)
    return jit(pyfunc, device=True, **options)


def _normalize_signature(sig):
    from numba.core import sigutils
    try:
        args, ret = sigutils.normalize_signature(sig)
    except Exception as e:  # noqa: BLE001 - Numba raises several kinds for bad signatures
        raise NumbaMetalError(f"invalid signature {sig!r}: {e}") from None
    return tuple(args), ret


# ---------------------------------------------------------------------------------------------
# Device functions
# ---------------------------------------------------------------------------------------------

class DeviceFunction(DeviceFunctionBase):
    """A function kernels (and other device functions) call; always inlined by the MSL compiler."""

    def __init__(self, pyfunc, sigs=None, fastmath=False, debug=False, cache=False):
        super().__init__(pyfunc)
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.__wrapped__ = pyfunc
        self.targetoptions = {"fastmath": fastmath, "debug": debug}
        for sig in sigs or ():
            args, _ = _normalize_signature(sig)
            self.typed(args)

    def __call__(self, *args, **kwargs):
        raise NumbaMetalError(f"{self.__name__}() is a Metal device function; call it from a @metal.jit "
                              "kernel, or call .py_func(...) to run the Python function")

    def __repr__(self) -> str:
        return f"<numba_metal device function {self.__name__}>"

    def inspect_msl(self, signature):
        from numba_metal.compiler.driver import compile_msl
        return compile_msl(self.py_func, signature, device=True,
                           fastmath=self.targetoptions["fastmath"])


# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------


class Dispatcher:
    """A Metal kernel: launch it with ``kernel[blocks, threads](*args)``."""

    def __init__(self, pyfunc, sigs=None, fastmath=False, debug=False, cache=False):
        self.py_func = pyfunc
        self.__name__ = getattr(pyfunc, "__name__", "kernel")
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.__wrapped__ = pyfunc
        self.targetoptions = {"fastmath": fastmath, "debug": debug, "cache": cache}
        self._specializations: dict = {}
        self._lock = threading.RLock()
        self._eager = sigs is not None
        for sig in sigs or ():
            args, ret = _normalize_signature(sig)
            from numba.core import types
            if ret is not None and not isinstance(ret, types.NoneType):
                raise NumbaMetalError(f"a kernel's signature must return void, not {ret} ({sig!r})")
            self.compile(args)

    def __repr__(self) -> str:
        return f"<numba_metal kernel {self.__name__}>"

    # -- launch configuration -------------------------------------------------------------

    def __getitem__(self, config):
        return _Launcher(self, config)

    def __call__(self, *args, **kwargs):
        raise KernelLaunchError(f"kernel {self.__name__}() was called without a launch configuration; "
                                f"launch it as {self.__name__}[blocks, threads](...)")

    def configure(self, griddim, blockdim, stream=0, sharedmem=0):
        return _Launcher(self, (griddim, blockdim, stream, sharedmem))

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        """A 1-D launch covering ``ntasks`` threads (numba.cuda's ``forall``)."""
        if not isinstance(ntasks, (int, np.integer)) or ntasks <= 0:
            raise KernelLaunchError(f"forall(ntasks): ntasks must be a positive integer, not {ntasks!r}")
        tpb = int(tpb) or 256
        return _Launcher(self, ((int(ntasks) + tpb - 1) // tpb, tpb, stream, sharedmem))

    # -- specialisation ---------------------------------------------------------------------

    @property
    def specializations(self) -> dict:
        return dict(self._specializations)

    overloads = specializations

    def compile(self, argtypes) -> "Kernel":
        """The specialisation for ``argtypes`` (a tuple of Numba types or a signature string)."""
        if isinstance(argtypes, str):
            argtypes, _ = _normalize_signature(argtypes)
        argtypes = tuple(argtypes)
        kernel = self._specializations.get(argtypes)
        if kernel is not None:
            return kernel
        with self._lock:
            kernel = self._specializations.get(argtypes)
            if kernel is None:
                kernel = Kernel(self, argtypes)
                self._specializations[argtypes] = kernel
        return kernel

    def _specialization_for(self, argtypes) -> "Kernel":
        kernel = self._specializations.get(argtypes)
        if kernel is not None:
            return kernel
        if self._eager:
            kernel = self._find_compatible(argtypes)
            if kernel is None:
                sigs = ", ".join("(" + ", ".join(map(str, k)) + ")" for k in self._specializations)
                raise KernelLaunchError(
                    f"kernel {self.__name__}() has no signature matching argument types "
                    f"({', '.join(map(str, argtypes))}); its signatures are: {sigs}")
            self._specializations[argtypes] = kernel  # remember the match
            return kernel
        return self.compile(argtypes)

    def _find_compatible(self, argtypes):
        from numba.core import types
        for sig, kernel in list(self._specializations.items()):
            if len(sig) != len(argtypes) or kernel.argtypes != sig:
                continue
            ok = True
            for want, got in zip(sig, argtypes):
                if want == got:
                    continue
                if isinstance(want, types.Array) and isinstance(got, types.Array):
                    if (want.dtype == got.dtype and want.ndim == got.ndim
                            and (want.layout == "A" or want.layout == got.layout)):
                        continue
                elif isinstance(want, types.Number) and isinstance(got, (types.Number, types.Boolean)):
                    continue
                ok = False
                break
            if ok:
                return kernel
        return None

    # -- inspection -------------------------------------------------------------------------

    def _kernels_for(self, signature):
        if signature is None:
            return dict(self._specializations)
        if isinstance(signature, str):
            signature, _ = _normalize_signature(signature)
        return {tuple(signature): self.compile(signature)}

    def inspect_msl(self, signature=None):
        """The generated MSL: a string for one signature, else a dict over specialisations."""
        kernels = self._kernels_for(signature)
        if signature is not None:
            return next(iter(kernels.values())).msl
        return {k: v.msl for k, v in kernels.items()}

    def inspect_types(self, signature=None, file=None):
        """Print the typed Numba IR of each specialisation (every variable with its type)."""
        file = file or sys.stdout
        for argtypes, kernel in self._kernels_for(signature).items():
            print(f"{self.__name__} ({', '.join(map(str, argtypes))})", file=file)
            print("-" * 80, file=file)
            print(annotate_types(kernel.typed), file=file)


def annotate_types(tf) -> str:
    """The IR of a typed function, each statement annotated with the types it defines."""
    from numba.core import ir
    lines = []
    for label in sorted(tf.func_ir.blocks):
        lines.append(f"label {label}:")
        for stmt in tf.func_ir.blocks[label].body:
            note = ""
            if isinstance(stmt, ir.Assign):
                note = f"  :: {tf.typemap.get(stmt.target.name)}"
            loc = getattr(stmt, "loc", None)
            where = f"  # line {loc.line}" if loc is not None else ""
            lines.append(f"    {stmt}{note}{where}")
    return "\n".join(lines)


def _dim3(value, what: str):
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        dims = (int(value),)
    elif isinstance(value, tuple) and 1 <= len(value) <= 3:
        dims = []
        for v in value:
            if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
                raise KernelLaunchError(f"{what} must be integers, got {value!r}")
            dims.append(int(v))
        dims = tuple(dims)
    else:
        raise KernelLaunchError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    if any(d <= 0 for d in dims):
        raise KernelLaunchError(f"{what} must be positive, got {value!r}")
    return dims + (1,) * (3 - len(dims))


class _Launcher:
    """``kernel[blocks, threads, stream, sharedmem]``: a launch configuration bound to a kernel."""

    __slots__ = ("dispatcher", "griddim", "blockdim", "stream", "sharedmem")

    def __init__(self, dispatcher, config):
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise KernelLaunchError("launch configuration must be [blocks, threads], [blocks, threads, "
                                    f"stream] or [blocks, threads, stream, sharedmem], got {config!r}")
        self.dispatcher = dispatcher
        self.griddim = _dim3(config[0], "blocks (threadgroups per grid)")
        self.blockdim = _dim3(config[1], "threads (threads per threadgroup)")
        self.stream = config[2] if len(config) > 2 else 0
        sharedmem = config[3] if len(config) > 3 else 0
        if not isinstance(sharedmem, (int, np.integer)) or sharedmem < 0:
            raise KernelLaunchError(f"sharedmem must be a non-negative number of bytes, got {sharedmem!r}")
        self.sharedmem = int(sharedmem)

    def __call__(self, *args):
        disp = self.dispatcher
        try:
            argtypes = tuple([typeof_arg(a, i) for i, a in enumerate(args)])
        except KernelLaunchError as e:
            raise KernelLaunchError(f"kernel {disp.__name__}(): {e.message}") from None
        kernel = disp._specialization_for(argtypes)
        kernel.launch(args, self.griddim, self.blockdim, self.stream, self.sharedmem)


class Kernel:
    """One compiled specialisation of a kernel: its MSL, launch plan and per-device launch state."""

    def __init__(self, dispatcher: Dispatcher, argtypes):
        from numba_metal.compiler.driver import compile_kernel
        self.dispatcher = dispatcher
        self.argtypes = argtypes
        self.name = dispatcher.__name__
        opts = dispatcher.targetoptions
        start = _prof.now_ns() if _prof._listeners else 0
        result = compile_kernel(dispatcher.py_func, argtypes, debug=opts["debug"],
                                fastmath=opts["fastmath"], cache=opts["cache"])
        if _prof._listeners:
            _prof.emit("compile", name=self.name, argtypes=argtypes, start_ns=start, end_ns=_prof.now_ns(),
                       stage="python", from_cache=bool(getattr(result, "from_cache", False)))
        self.typed = result.typed
        self.msl = result.source
        self.plan = result.plan
        self.entry = result.plan.entry_name
        self._prepared: dict = {}
        self._lock = threading.Lock()
        if os.environ.get("NUMBA_METAL_DUMP_MSL", "") not in ("", "0"):
            print(f"// ---- numba-metal generated MSL: {self.name}{tuple(map(str, argtypes))} ----")
            print(self.msl)

    def __repr__(self) -> str:
        return f"<numba_metal kernel specialisation {self.name}({', '.join(map(str, self.argtypes))})>"

    def _prepare(self, ctx):
        prepared = self._prepared.get(id(ctx))
        if prepared is not None and prepared.ctx is ctx:
            return prepared
        with self._lock:
            prepared = self._prepared.get(id(ctx))
            if prepared is None or prepared.ctx is not ctx:
                prepared = _PreparedLaunch(self, ctx)
                self._prepared[id(ctx)] = prepared
        return prepared

    def launch(self, args, griddim, blockdim, stream, sharedmem):
        ctx = _device.current()
        self._prepare(ctx).launch(args, griddim, blockdim, stream, sharedmem)

    @property
    def pipeline_info(self):
        return self._prepare(_device.current()).pipeline


def _round16(n: int) -> int:
    return (n + 15) // 16 * 16


class _PreparedLaunch:
    """Everything a launch of one specialisation on one device needs, made once."""

    def __init__(self, kernel: Kernel, ctx):
        from numba_metal import runtime
        self.kernel = kernel
        self.ctx = ctx
        plan = kernel.plan
        opts = kernel.dispatcher.targetoptions
        start = _prof.now_ns() if _prof._listeners else 0
        self.pipeline = ctx.device.compile(kernel.msl, plan.entry_name, fast_math=opts["fastmath"])
        if _prof._listeners:
            _prof.emit("compile", name=kernel.name, argtypes=kernel.argtypes, start_ns=start,
                       end_ns=_prof.now_ns(), stage="pipeline", from_cache=bool(self.pipeline.from_cache))
        self.max_threads = self.pipeline.max_total_threads_per_threadgroup
        slots = [a.slot for a in plan.arrays]
        if plan.error_slot is not None:
            slots.append(plan.error_slot)
        self.dplan = runtime.DispatchPlan(self.pipeline, slots,
                                          plan.arg_slot if plan.arg_slot is not None else 0,
                                          max(plan.arg_size, 1),
                                          [0] if plan.dynamic_threadgroup_memory else [],
                                          label=f"{kernel.name} ({kernel.entry})")
        self.error_buffer = None
        if plan.error_slot is not None:
            self.error_buffer = ctx.device.new_buffer(64)
            self.dplan.set_buffer(len(plan.arrays), self.error_buffer, 0)
        self.packer = _make_packer(plan)
        self.array_args = [(a.arg, i) for i, a in enumerate(plan.arrays)]
        # The pipeline's count already includes the kernel's shared arrays (and any threadgroup
        # variable the MSL declares): take the larger, never the sum.
        self.static_shared = max(plan.static_threadgroup_memory, self.pipeline.static_threadgroup_memory)
        self.max_shared = ctx.info.max_threadgroup_memory

    def launch(self, args, griddim, blockdim, stream, sharedmem):
        start = _prof.now_ns() if _prof._listeners else 0
        kernel = self.kernel
        nthreads = blockdim[0] * blockdim[1] * blockdim[2]
        if nthreads > self.max_threads:
            raise KernelLaunchError(
                f"kernel {kernel.name}(): {nthreads} threads per threadgroup {blockdim} is more than this "
                f"kernel's maximum of {self.max_threads} on {self.ctx.info.name!r}; use smaller threadgroups")
        for g, b in zip(griddim, blockdim):
            if g * b > 0xFFFFFFFF:
                raise KernelLaunchError(f"kernel {kernel.name}(): grid of {griddim} x {blockdim} threads "
                                        "exceeds 2**32 - 1 threads along an axis")
        plan = kernel.plan
        if plan.dynamic_threadgroup_memory:
            total = self.static_shared + _round16(sharedmem)
            if total > self.max_shared:
                raise KernelLaunchError(
                    f"kernel {kernel.name}(): {sharedmem} bytes of dynamic shared memory plus "
                    f"{self.static_shared} static exceed the device's {self.max_shared} bytes of "
                    "threadgroup memory")
            self.dplan.set_threadgroup_memory([_round16(sharedmem) or 16])
        ctx = self.ctx
        queue = _streams.resolve(stream, ctx)
        geoms = {}
        host_arrays = None
        dplan = self.dplan
        for argi, i in self.array_args:
            value = args[argi]
            geom = _geometry(ctx, value, argi, kernel)
            if geom.host_copy is not None or geom.sync:
                host_arrays = host_arrays or []
                host_arrays.append(geom)
            dplan.set_buffer(i, geom.buffer, geom.bind_offset)
            geoms[argi] = geom
        try:
            self.packer(args, geoms, dplan.arg_view, sharedmem)
        except (struct.error, OverflowError, TypeError) as e:
            raise KernelLaunchError(f"kernel {kernel.name}(): an argument does not fit its type "
                                    f"({', '.join(map(str, kernel.argtypes))}): {e}") from None
        dplan.set_grid(griddim, blockdim)
        work_id = queue.submit(dplan, plan.arg_size)
        if start:
            _prof.emit("launch", name=kernel.name, start_ns=start, end_ns=_prof.now_ns(), work_id=work_id,
                       queue=queue, grid=griddim, block=blockdim)
        if self.error_buffer is not None:
            with ctx.lock:
                ctx.pending_checks[id(self)] = self._check_error_record
        if host_arrays:
            # NumPy arguments: as numba.cuda, the launch is synchronous and results are copied back.
            _streams.timed_wait(queue, "launch")
            for geom in host_arrays:
                if geom.host_copy is not None:
                    geom.host_copy()
            _streams.check_faults(ctx)

    def _check_error_record(self):
        words = np.frombuffer(self.error_buffer.memory(), dtype=np.uint32, count=12)
        if words[0] == 0:
            return
        record = [int(w) for w in words]
        np.frombuffer(self.error_buffer.memory(), dtype=np.uint32)[:] = 0
        plan = self.kernel.plan
        names = plan.array_names
        array = names[record[1]] if record[1] < len(names) else "?"
        index = record[8] | (record[9] << 32)
        if index >= 1 << 63:
            index -= 1 << 64
        extent = record[10] | (record[11] << 32)
        line = record[3]
        filename = self.kernel.typed.func_ir.loc.filename if self.kernel.typed else "?"
        raise KernelBoundsError(
            f"index {index} is out of bounds for axis {record[2]} with size {extent} in array "
            f"'{array}' of kernel {self.kernel.name}(), thread ({record[4]}, {record[5]}, {record[6]})",
            (filename, line))


class KernelBoundsError(MetalRuntimeError, IndexError):
    """An out-of-bounds array access found by a ``debug=True`` kernel (raised at the next wait)."""


class _Geometry:
    __slots__ = ("buffer", "bind_offset", "shape", "estrides", "origin", "host_copy", "sync")

    def __init__(self, buffer, bind_offset, shape, estrides, origin, host_copy=None, sync=False):
        self.buffer = buffer
        self.bind_offset = bind_offset
        self.shape = shape
        self.estrides = estrides
        self.origin = origin
        self.host_copy = host_copy
        self.sync = sync


def _element_geometry(offset, shape, strides, itemsize):
    """(bind offset, element strides, origin) binding the lowest address the array touches."""
    estrides = []
    low = 0
    for n, s in zip(shape, strides):
        if s % itemsize:
            raise KernelLaunchError(f"array strides {strides} are not multiples of its item size {itemsize}")
        estrides.append(s // itemsize)
        if s < 0 and n > 0:
            low += (n - 1) * s
    return offset + low, tuple(estrides), (-low) // itemsize


def _geometry(ctx, value, argi, kernel) -> _Geometry:
    from .arrays import DeviceNDArray, check_same_device
    if isinstance(value, DeviceNDArray):
        check_same_device(ctx, value, f"argument {argi} of {kernel.name}()")
        bind, estrides, origin = _element_geometry(value._offset, value.shape, value.strides, value.itemsize)
        return _Geometry(value._buffer, bind, value.shape, estrides, origin)
    if isinstance(value, np.ndarray):
        return _host_array_geometry(ctx, value, argi, kernel)
    raise KernelLaunchError(f"argument {argi} of {kernel.name}() must be an array")


def _host_array_geometry(ctx, value: np.ndarray, argi, kernel) -> _Geometry:
    itemsize = value.itemsize
    buf = getattr(value, "_nm_buffer", None)
    if buf is not None:
        # A mapped array: already device memory; the launch stays asynchronous.
        if getattr(value, "_nm_ctx", None) is not ctx:
            raise KernelLaunchError(f"argument {argi} of {kernel.name}() is a mapped array of another device")
        offset = value.ctypes.data - buf.address
        bind, estrides, origin = _element_geometry(offset, value.shape, value.strides, itemsize)
        return _Geometry(buf, bind, value.shape, estrides, origin)
    # A plain NumPy array. Unified memory lets the kernel use it in place when it is page-aligned;
    # otherwise it goes through a device copy and back, as numba.cuda does. Either way the launch
    # waits for the kernel, so the results are in the array when the call returns.
    page = ctx.info.page_size
    lowest = value.ctypes.data + sum((n - 1) * s for n, s in zip(value.shape, value.strides) if s < 0 and n)
    extent = sum((n - 1) * abs(s) for n, s in zip(value.shape, value.strides) if n) + itemsize
    if ctx.info.unified_memory and value.size and lowest % page == 0:
        length = (extent + page - 1) // page * page
        buf = ctx.device.wrap_buffer(lowest, length, value)
        bind, estrides, origin = _element_geometry(value.ctypes.data - lowest, value.shape, value.strides,
                                                   itemsize)
        return _Geometry(buf, bind, value.shape, estrides, origin, sync=True)
    from .arrays import to_device
    dev = to_device(value)
    host_copy = None
    if value.flags.writeable:
        def host_copy(dev=dev, value=value):
            np.copyto(value, dev._host_view())
    bind, estrides, origin = _element_geometry(dev._offset, dev.shape, dev.strides, itemsize)
    return _Geometry(dev._buffer, bind, dev.shape, estrides, origin, host_copy=host_copy, sync=True)


def _make_packer(plan):
    """A function packing the arguments into the argument block with one ``struct.pack_into``."""
    if not plan.fields:
        return lambda args, geoms, view: None
    s = struct.Struct(plan.arg_format)
    exprs = []
    for f in plan.fields:
        kind = f.what[0]
        if kind == "shape":
            exprs.append(f"geoms[{f.arg}].shape[{f.what[1]}]")
        elif kind == "stride":
            exprs.append(f"geoms[{f.arg}].estrides[{f.what[1]}]")
        elif kind == "origin":
            exprs.append(f"geoms[{f.arg}].origin")
        elif kind == "dynshared":
            exprs.append("sharedmem")
        elif kind == "value":
            exprs.append(f"args[{f.arg}]")
        else:  # ("item", i, j, ...)
            exprs.append(f"args[{f.arg}]" + "".join(f"[{i}]" for i in f.what[1:]))
    src = f"def pack(args, geoms, view, sharedmem):\n    _pack(view, 0, {', '.join(exprs)})\n"
    namespace = {"_pack": s.pack_into}
    exec(compile(src, f"<numba_metal packer {plan.entry_name}>", "exec"), namespace)
    return namespace["pack"]

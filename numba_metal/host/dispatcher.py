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

from .argtypes import _raw_keyers, arg_keys, numba_type_of_key, raw_keyer
from .arrays import DeviceNDArray

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
        self._by_key: dict = {}      # argument keys (argtypes.arg_keys) -> Kernel: the launch path's lookup
        self._launchers: dict = {}   # launch configurations of exact ints -> their _Launcher
        self._last_launcher = (_NO_CONFIG, None)  # (configuration object, its _Launcher), replaced whole
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
        last = self._last_launcher
        if last[0] is config:   # ``kernel[4, 256]`` in a loop: the same constant tuple every time
            return last[1]
        if type(config) is tuple and len(config) == 2 and type(config[0]) is int and type(config[1]) is int:
            launcher = self._launchers.get(config)
            if launcher is not None:
                self._last_launcher = (config, launcher)
                return launcher
        if _exact_config(config):
            launcher = self._launchers.get(config)
            if launcher is None:
                launcher = _Launcher(self, config)
                if len(self._launchers) >= 256:
                    self._launchers.clear()
                self._launchers[config] = launcher
            self._last_launcher = (config, launcher)
            return launcher
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
        self._sync_specializations()
        return dict(self._specializations)

    def _sync_specializations(self) -> None:
        # Kernels loaded from the disk cache by argument key have no Numba types until asked for.
        for kernel in list(self._by_key.values()):
            if kernel not in self._specializations.values():
                self._specializations.setdefault(kernel.argtypes, kernel)

    def _kernel_for_args(self, args) -> "Kernel":
        """The specialisation for a launch's arguments, checking each (raises for one that cannot be passed)."""
        try:
            key = arg_keys(args)
        except KernelLaunchError as e:
            raise KernelLaunchError(f"kernel {self.__name__}(): {e.message}") from None
        kernel = self._by_key.get(key)
        return kernel if kernel is not None else self._kernel_for_key(key)

    def _kernel_for_key(self, key) -> "Kernel":
        """The specialisation for argument keys (the launch path's slow path: first launch of a type)."""
        with self._lock:
            kernel = self._by_key.get(key)
            if kernel is not None:
                return kernel
            if not self._eager and self.targetoptions["cache"]:
                kernel = Kernel._from_disk_cache(self, key)
            if kernel is None:
                try:
                    argtypes = tuple(numba_type_of_key(k) for k in key)
                except KernelLaunchError as e:
                    raise KernelLaunchError(f"kernel {self.__name__}(): {e.message}") from None
                kernel = self._specialization_for(argtypes)
            self._by_key[key] = kernel
            return kernel

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
            return self.specializations
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


_NO_CONFIG = object()


def _exact_config(config) -> bool:
    """True for a launch configuration of plain ints on the default stream: ``Dispatcher.__getitem__``
    validates such a configuration once and reuses its ``_Launcher`` (other values, e.g. floats or bools
    that compare equal to ints, are validated every time, so they still raise)."""
    if type(config) is not tuple or not 2 <= len(config) <= 4:
        return False
    for dims in (config[0], config[1]):
        if type(dims) is tuple:
            for d in dims:
                if type(d) is not int:
                    return False
        elif type(dims) is not int:
            return False
    if len(config) > 2 and (type(config[2]) is not int or config[2] != 0):
        return False
    return len(config) < 4 or type(config[3]) is int


class _Launcher:
    """``kernel[blocks, threads, stream, sharedmem]``: a launch configuration bound to a kernel.

    Everything about the configuration is validated here, once; the dispatcher reuses launchers of
    plain-int configurations, so ``kernel[blocks, threads](...)`` in a loop validates nothing twice.
    """

    __slots__ = ("dispatcher", "griddim", "blockdim", "stream", "sharedmem", "nthreads", "grid_error",
                 "default_stream", "shared_length", "checked")

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
        b = self.blockdim
        self.nthreads = b[0] * b[1] * b[2]
        self.grid_error = None
        for g, t in zip(self.griddim, self.blockdim):
            if g * t > 0xFFFFFFFF:
                self.grid_error = (f"grid of {self.griddim} x {self.blockdim} threads exceeds 2**32 - 1 "
                                   "threads along an axis")
                break
        s = self.stream
        self.default_stream = s is None or (isinstance(s, int) and s == 0)
        self.shared_length = _round16(self.sharedmem) or 16  # the dynamic threadgroup memory binding
        self.checked = None  # the _PreparedLaunch this configuration was last checked against

    def __call__(self, *args):
        disp = self.dispatcher
        kernel = disp._by_key.get((_raw_keyers.get(len(args)) or raw_keyer(len(args)))(args))
        if kernel is None:
            kernel = disp._kernel_for_args(args)
        ctx = _device._selected or _device.current()
        prepared = kernel._prepared.get(ctx)
        if prepared is None:
            prepared = kernel._prepare(ctx)
        prepared.launch(args, self)


class Kernel:
    """One compiled specialisation of a kernel: its MSL, launch plan and per-device launch state.

    A specialisation loaded from the disk cache by argument keys has no Numba types or typed IR until
    something asks for them (``argtypes``, ``typed``): launching it never imports Numba.
    """

    def __init__(self, dispatcher: Dispatcher, argtypes, compiled=None, key=None):
        self.dispatcher = dispatcher
        self._argtypes = None if argtypes is None else tuple(argtypes)
        self._key = key
        self.name = dispatcher.__name__
        if compiled is None:
            from numba_metal.compiler.driver import compile_kernel
            opts = dispatcher.targetoptions
            start = _prof.now_ns() if _prof._listeners else 0
            compiled = compile_kernel(dispatcher.py_func, self._argtypes, debug=opts["debug"],
                                      fastmath=opts["fastmath"], cache=opts["cache"])
            if _prof._listeners:
                _prof.emit("compile", name=self.name, argtypes=self._argtypes, start_ns=start,
                           end_ns=_prof.now_ns(), stage="python",
                           from_cache=bool(getattr(compiled, "from_cache", False)))
        self._typed = compiled.typed
        self.from_cache = bool(getattr(compiled, "from_cache", False))
        self.msl = compiled.source
        self.plan = compiled.plan
        self.entry = compiled.plan.entry_name
        self._prepared: dict = {}
        self._lock = threading.Lock()
        if os.environ.get("NUMBA_METAL_DUMP_MSL", "") not in ("", "0"):
            print(f"// ---- numba-metal generated MSL: {self.name}{tuple(map(str, self.argtypes))} ----")
            print(self.msl)

    @classmethod
    def _from_disk_cache(cls, dispatcher: Dispatcher, key):
        """The specialisation for argument keys from the disk cache, or None (no Numba needed)."""
        from . import cache
        from .argtypes import NotCanonical, canonical
        try:
            canon = [canonical(k) for k in key]
        except NotCanonical:
            return None
        opts = dispatcher.targetoptions
        start = _prof.now_ns() if _prof._listeners else 0
        hit = cache.load(dispatcher.py_func, canon, opts["debug"], opts["fastmath"])
        if hit is None:
            return None
        kernel = cls(dispatcher, None, compiled=hit, key=key)
        if _prof._listeners:
            _prof.emit("compile", name=kernel.name, argtypes=kernel.argtypes, start_ns=start,
                       end_ns=_prof.now_ns(), stage="python", from_cache=True)
        return kernel

    @property
    def argtypes(self) -> tuple:
        if self._argtypes is None:
            self._argtypes = tuple(numba_type_of_key(k) for k in self._key)
        return self._argtypes

    @property
    def typed(self):
        """The typed IR (re-created on demand for a specialisation loaded from the disk cache)."""
        if self._typed is None:
            from numba_metal.compiler.frontend import infer_types
            self._typed = infer_types(self.dispatcher.py_func, self.argtypes)
        return self._typed

    def __repr__(self) -> str:
        return f"<numba_metal kernel specialisation {self.name}({', '.join(map(str, self.argtypes))})>"

    def _prepare(self, ctx):
        prepared = self._prepared.get(ctx)
        if prepared is not None:
            return prepared
        with self._lock:
            prepared = self._prepared.get(ctx)
            if prepared is None:
                prepared = _PreparedLaunch(self, ctx)
                self._prepared[ctx] = prepared
        return prepared

    def launch(self, args, griddim, blockdim, stream, sharedmem):
        launcher = _Launcher(self.dispatcher, (griddim, blockdim, stream, sharedmem))
        self._prepare(_device.current()).launch(args, launcher)

    @property
    def pipeline_info(self):
        return self._prepare(_device.current()).pipeline


def _round16(n: int) -> int:
    return (n + 15) // 16 * 16


class _PreparedLaunch:
    """Everything a launch of one specialisation on one device needs, made once: the pipeline, a
    reusable dispatch descriptor, and a launch function generated for the launch plan.

    The generated function (``_make_fast_launch``) handles the common case, device arrays of this device:
    it binds only buffers that changed since the previous launch, packs the argument block with one
    ``struct.pack_into`` into the descriptor's preallocated bytes, and submits (one C call). Host NumPy
    arrays, arrays of another device and bad geometry take the general path, which raises the errors.
    """

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
        self.view = self.dplan.arg_view
        self.arg_size = plan.arg_size
        self.error_buffer = None
        if plan.error_slot is not None:
            self.error_buffer = ctx.device.new_buffer(64)
            self.dplan.set_buffer(len(plan.arrays), self.error_buffer, 0)
        self.packer = _make_packer(plan)
        self.launch = _make_launch(plan).__get__(self)
        self._queue = ctx.default_queue
        self.array_args = [(a.arg, i) for i, a in enumerate(plan.arrays)]
        self._bufs = [None] * len(plan.arrays)  # what each array slot is bound to (skip rebinding it)
        self._offs = [-1] * len(plan.arrays)
        self._last = (None,) * len(plan.arrays)  # the device arrays of the previous fast launch
        self._values = ()                        # and the argument-block values they gave
        self._griddim = self._blockdim = None   # the descriptor's current grid
        self._shared = None                     # its current dynamic threadgroup memory length
        self._lock = threading.Lock()           # launches from several threads share the descriptor
        self.dynamic = plan.dynamic_threadgroup_memory
        # The pipeline's count already includes the kernel's shared arrays (and any threadgroup
        # variable the MSL declares): take the larger, never the sum.
        self.static_shared = max(plan.static_threadgroup_memory, self.pipeline.static_threadgroup_memory)
        self.max_shared = ctx.info.max_threadgroup_memory

    # -- the launch ------------------------------------------------------------------------------

    # ``launch(args, launcher)`` is generated per plan (``_make_launch``) and bound in __init__.

    def _resolve(self, stream):
        return _streams.resolve(stream, self.ctx)

    def _finish(self, work_id, launcher, queue, start, host_arrays):
        """After a submit: the profiler's event, the debug error check, and for host NumPy arguments
        the wait and the copies back."""
        ctx = self.ctx
        if start:
            _prof.emit("launch", name=self.kernel.name, start_ns=start, end_ns=_prof.now_ns(), work_id=work_id,
                       queue=queue, grid=launcher.griddim, block=launcher.blockdim)
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

    def _check(self, launcher: _Launcher) -> None:
        """Check a launch configuration against this kernel and device (once per pair in a row)."""
        kernel = self.kernel
        if launcher.nthreads > self.max_threads:
            raise KernelLaunchError(
                f"kernel {kernel.name}(): {launcher.nthreads} threads per threadgroup {launcher.blockdim} is "
                f"more than this kernel's maximum of {self.max_threads} on {self.ctx.info.name!r}; use smaller "
                "threadgroups")
        if launcher.grid_error is not None:
            raise KernelLaunchError(f"kernel {kernel.name}(): {launcher.grid_error}")
        if self.dynamic:
            sharedmem = launcher.sharedmem
            total = self.static_shared + _round16(sharedmem)
            if total > self.max_shared:
                raise KernelLaunchError(
                    f"kernel {kernel.name}(): {sharedmem} bytes of dynamic shared memory plus "
                    f"{self.static_shared} static exceed the device's {self.max_shared} bytes of "
                    "threadgroup memory")
        launcher.checked = self

    def _launch_general(self, args, launcher, queue):
        """Any array arguments (host arrays are wrapped or copied); raises for bad ones."""
        griddim, blockdim, sharedmem = launcher.griddim, launcher.blockdim, launcher.sharedmem
        if self.dynamic and launcher.shared_length != self._shared:
            self._set_shared(launcher.shared_length)
        ctx = self.ctx
        kernel = self.kernel
        geoms = {}
        host_arrays = None
        self._last = (None,) * len(self._last)  # bindings change here: the next fast launch re-admits
        for argi, i in self.array_args:
            geom = _geometry(ctx, args[argi], argi, kernel)
            if geom.host_copy is not None or geom.sync:
                host_arrays = host_arrays or []
                host_arrays.append(geom)
            if self._bufs[i] is not geom.buffer or self._offs[i] != geom.bind_offset:
                self._bind(i, geom.buffer, geom.bind_offset)
            geoms[argi] = geom
        try:
            self.packer(args, geoms, self.view, sharedmem)
        except (struct.error, OverflowError, TypeError) as e:
            self._pack_error(e)
        if griddim != self._griddim or blockdim != self._blockdim:
            self._set_grid(griddim, blockdim)
        return queue.submit(self.dplan, self.arg_size), host_arrays

    def _bind(self, i, buffer, offset):
        self.dplan.set_buffer(i, buffer, offset)
        self._bufs[i] = buffer
        self._offs[i] = offset

    def _set_shared(self, length):
        self.dplan.set_threadgroup_memory([length])
        self._shared = length

    def _set_grid(self, griddim, blockdim):
        self.dplan.set_grid(griddim, blockdim)
        self._griddim = griddim
        self._blockdim = blockdim

    def _pack_error(self, e):
        kernel = self.kernel
        raise KernelLaunchError(f"kernel {kernel.name}(): an argument does not fit its type "
                                f"({', '.join(map(str, kernel.argtypes))}): {e}") from None

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
        code = getattr(self.kernel.dispatcher.py_func, "__code__", None)
        filename = code.co_filename if code is not None else "?"
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


def _device_geometry(value: DeviceNDArray):
    """A device array's (bind offset, element strides, origin), computed once (its geometry is fixed)."""
    geom = value._geom
    if geom is None:
        geom = value._geom = _element_geometry(value._offset, value.shape, value.strides, value.itemsize)
    return geom


def _geometry(ctx, value, argi, kernel) -> _Geometry:
    from .arrays import check_same_device
    if isinstance(value, DeviceNDArray):
        check_same_device(ctx, value, f"argument {argi} of {kernel.name}()")
        bind, estrides, origin = _device_geometry(value)
        return _Geometry(value._buffer, bind, value.shape, estrides, origin)
    if isinstance(value, np.ndarray):
        return _host_array_geometry(ctx, value, argi, kernel)
    raise KernelLaunchError(f"argument {argi} of {kernel.name}() must be an array")


def _host_array_geometry(ctx, value: np.ndarray, argi, kernel) -> _Geometry:
    itemsize = value.itemsize
    buf = getattr(value, "_nm_buffer", None)
    lowest = value.ctypes.data + sum((n - 1) * s for n, s in zip(value.shape, value.strides) if s < 0 and n)
    extent = sum((n - 1) * abs(s) for n, s in zip(value.shape, value.strides) if n) + itemsize
    if buf is not None and buf.address <= lowest and lowest + extent <= buf.address + buf.nbytes:
        # A mapped array (or a view of one): already device memory; the launch stays asynchronous.
        # (Arrays NumPy derives from a mapped array by computing, e.g. ``m + 1``, keep its class but not
        # its memory: those are plain arrays.)
        if getattr(value, "_nm_ctx", None) is not ctx:
            raise KernelLaunchError(f"argument {argi} of {kernel.name}() is a mapped array of another device")
        offset = value.ctypes.data - buf.address
        bind, estrides, origin = _element_geometry(offset, value.shape, value.strides, itemsize)
        return _Geometry(buf, bind, value.shape, estrides, origin)
    # A plain NumPy array. Unified memory lets the kernel use it in place when it is page-aligned and
    # writeable (a read-only array may be immutable memory, e.g. over a bytes object, which the kernel
    # must not write); otherwise it goes through a device copy and back, as numba.cuda does. Either way
    # the launch waits for the kernel, so the results are in the array when the call returns.
    page = ctx.info.page_size
    if ctx.info.unified_memory and value.size and lowest % page == 0 and value.flags.writeable:
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
    bind, estrides, origin = _device_geometry(dev)
    return _Geometry(dev._buffer, bind, dev.shape, estrides, origin, host_copy=host_copy, sync=True)


def _field_exprs(plan, shape, stride, origin) -> list[str]:
    """Python expressions of the argument block's fields, in order (``shape``, ``stride`` and ``origin``
    format an array argument's parts from its argument index and axis)."""
    exprs = []
    for f in plan.fields:
        kind = f.what[0]
        if kind == "shape":
            exprs.append(shape.format(arg=f.arg, k=f.what[1]))
        elif kind == "stride":
            exprs.append(stride.format(arg=f.arg, k=f.what[1]))
        elif kind == "origin":
            exprs.append(origin.format(arg=f.arg))
        elif kind == "dynshared":
            exprs.append("sharedmem")
        elif kind == "value":
            exprs.append(f"args[{f.arg}]")
        else:  # ("item", i, j, ...)
            exprs.append(f"args[{f.arg}]" + "".join(f"[{i}]" for i in f.what[1:]))
    return exprs


def _make_packer(plan):
    """A function packing the arguments into the argument block with one ``struct.pack_into``
    (array parts from ``geoms``: argument index -> _Geometry)."""
    if not plan.fields:
        return lambda args, geoms, view, sharedmem: None
    s = struct.Struct(plan.arg_format)
    exprs = _field_exprs(plan, "geoms[{arg}].shape[{k}]", "geoms[{arg}].estrides[{k}]", "geoms[{arg}].origin")
    src = f"def pack(args, geoms, view, sharedmem):\n    _pack(view, 0, {', '.join(exprs)})\n"
    namespace = {"_pack": s.pack_into}
    exec(compile(src, f"<numba_metal packer {plan.entry_name}>", "exec"), namespace)
    return namespace["pack"]


def _make_launch(plan):
    """The launch function of a plan: ``launch(P, args, L)`` for its _PreparedLaunch ``P`` and a
    _Launcher ``L``, generated so that the common case (every array argument a device array of this
    device) runs as straight-line code: the configuration check (once per launcher), binding only
    buffers that changed, one ``struct.pack_into`` into the descriptor's preallocated bytes, and one
    submit (one C call). Host NumPy arrays, arrays of another device and bad geometry go through
    ``_PreparedLaunch._launch_general``, which handles or raises.

    Arrays identical to the previous launch's (the usual loop) are neither checked nor rebound again:
    a device array's type, device and geometry never change, and their buffers are still bound. New
    arrays go through ``admit``, which checks them, binds what changed and keeps the argument-block
    values they give (shapes, strides, origins).
    """
    arrays = [(a.arg, i) for i, a in enumerate(plan.arrays)]
    namespace = {"_DeviceNDArray": DeviceNDArray, "_device_geometry": _device_geometry,
                 "_StructError": struct.error, "_listeners": _prof._listeners, "_now": _prof.now_ns}
    array_fields = [f for f in plan.fields if f.what[0] in ("shape", "stride", "origin")]
    body = []   # the fast path, inside the lock
    if arrays:
        admit = ["def admit(P, args):", "    ctx = P.ctx"]
        for arg, _ in arrays:
            admit.append(f"    a{arg} = args[{arg}]")
            admit.append(f"    if type(a{arg}) is not _DeviceNDArray or a{arg}._ctx is not ctx:")
            admit.append("        return False")
        for arg, _ in arrays:
            admit.append(f"    g{arg} = a{arg}._geom or _device_geometry(a{arg})")
        admit.append("    bufs = P._bufs")
        admit.append("    offs = P._offs")
        for arg, i in arrays:
            admit.append(f"    if bufs[{i}] is not a{arg}._buffer or offs[{i}] != g{arg}[0]:")
            admit.append(f"        P._bind({i}, a{arg}._buffer, g{arg}[0])")
        values = _field_exprs(plan, "a{arg}.shape[{k}]", "g{arg}[1][{k}]", "g{arg}[2]")
        values = [v for f, v in zip(plan.fields, values) if f in array_fields]
        admit.append(f"    P._values = ({''.join(v + ', ' for v in values)})")
        admit.append(f"    P._last = ({''.join(f'a{arg}, ' for arg, _ in arrays)})")
        admit.append("    return True")
        exec(compile("\n".join(admit) + "\n", f"<numba_metal launch {plan.entry_name}>", "exec"), namespace)
        namespace["_admit"] = namespace["admit"]
        if array_fields:
            body.append("v = P._values")
    if plan.dynamic_threadgroup_memory:
        body.append("if L.shared_length != P._shared:")
        body.append("    P._set_shared(L.shared_length)")
    if plan.fields:
        exprs, j = [], 0
        for f, e in zip(plan.fields, _field_exprs(plan, "", "", "")):
            if f in array_fields:
                exprs.append(f"v[{j}]")
                j += 1
            else:
                exprs.append("L.sharedmem" if e == "sharedmem" else e)
        if j and exprs[:j] == [f"v[{k}]" for k in range(j)]:
            exprs[:j] = ["*v"]   # the arrays' fields first (the usual layout): unpack them in C
        namespace["_pack"] = struct.Struct(plan.arg_format).pack_into
        body.append("try:")
        body.append(f"    _pack(P.view, 0, {', '.join(exprs)})")
        body.append("except (_StructError, OverflowError, TypeError) as e:")
        body.append("    P._pack_error(e)")
    body.append("griddim = L.griddim")
    body.append("blockdim = L.blockdim")
    body.append("if griddim is not P._griddim or blockdim is not P._blockdim:")
    body.append("    if griddim != P._griddim or blockdim != P._blockdim:")
    body.append("        P._set_grid(griddim, blockdim)")
    body.append("work_id = queue.submit(P.dplan, P.arg_size)")
    body.append("host_arrays = None")

    lines = ["def launch(P, args, L):",
             "    start = _now() if _listeners else 0",
             "    if L.checked is not P:",
             "        P._check(L)",
             "    queue = P._queue if L.default_stream else P._resolve(L.stream)",
             "    with P._lock:"]
    if arrays:
        same = " and ".join(f"args[{arg}] is last[{j}]" for j, (arg, _) in enumerate(arrays))
        lines.append("        last = P._last")
        lines.append(f"        if ({same}) or _admit(P, args):")
        lines.extend("            " + b for b in body)
        lines.append("        else:")
        lines.append("            work_id, host_arrays = P._launch_general(args, L, queue)")
    else:
        lines.extend("        " + b for b in body)
    lines.append("    if start or host_arrays or P.error_buffer is not None:")
    lines.append("        P._finish(work_id, L, queue, start, host_arrays)")
    exec(compile("\n".join(lines) + "\n", f"<numba_metal launch {plan.entry_name}>", "exec"), namespace)
    return namespace["launch"]

"""Dispatch: what ``@metal.jit`` returns, and how a launch finds its specialisation.

A :class:`Dispatcher` (a kernel) makes one :class:`~numba_metal.host.kernel.Kernel` per tuple of
argument types, once: from its disk cache when ``cache=True`` and the cache holds a valid entry, else
by compiling (the compiler is a pure function of the Python function, the argument types and the
options; the disk cache belongs to the dispatcher). ``kernel[blocks, threads](*args)`` makes a
:class:`LaunchConfig`, validated once; calling it looks the specialisation up by the arguments' keys
(:mod:`.arguments`) and launches it on the current device (:mod:`.launch`).

A :class:`DeviceFunction` is what ``@metal.jit(device=True)`` returns: kernels call it, and it is
typed (and lowered into each calling kernel) per tuple of argument types.
"""

from __future__ import annotations

import inspect
import pickle
import sys
import threading
from typing import NamedTuple

import numpy as np

from numba_metal.host import profiling
from numba_metal.compiler.devicefn import DeviceFunctionBase
from numba_metal.compiler.limits import MAX_GRID_THREADS_PER_AXIS, MAX_THREADGROUPS_PER_AXIS
from numba_metal.errors import (DispatcherStateError, KernelLaunchError, LaunchArgumentError, LaunchConfigurationError,
                                NumbaMetalError, UnsupportedFeatureError)

from . import device as _device
from . import perf_warnings
from .arguments import (NotCanonical, arg_keys, canonical, canonical_numba, numba_type_of_key, raw_keyer,
                        without_stride_groups)
from .encoder import StridesDiffer
from .interop import kernel_arguments
from .introspection import KernelIntrospection
from .launchconfig import compile_for_launch, current_launch_args


class JitOptions(NamedTuple):
    """The options of one ``@metal.jit`` function (see :func:`~numba_metal.host.decorators.jit`)."""

    fastmath: bool = False
    debug: bool = False
    cache: bool = False
    float64: str | None = None   # "exact": float64 intermediates computed exactly (compiler/precision.py)
    link: tuple = ()             # hand-written MSL files linked into the kernel (compiler/linking.py)
    launch_bound: int = 0        # launch_bounds' maximum threads per threadgroup (0: none), decorators.py
    sanitize: tuple = ()         # the kernel sanitizer's checks, in sanitize.CHECKS order (CPU device only)


def normalize_signature(sig):
    """(argument types, return type) of a signature in any of numba.cuda's forms: a string, a Numba
    signature (``void(float32[:], int32)``), or a tuple of argument types (``(float32[:], int32)``). In a
    tuple, NumPy scalar types and dtypes (``metal.float32`` where it is NumPy's) stand for Numba's."""
    from numba.core import sigutils
    if isinstance(sig, (tuple, list)):
        sig = tuple(_as_numba_type(t) for t in sig)
    try:
        args, ret = sigutils.normalize_signature(sig)
    except Exception as e:  # noqa: BLE001 - Numba raises several kinds for bad signatures
        raise NumbaMetalError(f"invalid signature {sig!r}: {e}") from None
    return tuple(args), ret


def _as_numba_type(t):
    from numba.core import types
    if isinstance(t, types.Type) or isinstance(t, str):
        return t
    try:
        dtype = np.dtype(t)
    except TypeError:
        return t    # Numba's error names it
    from numba.np.numpy_support import from_dtype
    return from_dtype(dtype)


# ---------------------------------------------------------------------------------------------
# Device functions
# ---------------------------------------------------------------------------------------------

class DeviceFunction(DeviceFunctionBase):
    """A function kernels (and other device functions) call; always inlined by the MSL compiler.

    Raises:
        NumbaMetalError: called from ordinary Python (call it from a kernel, or call ``.py_func``).
        KernelCompilationError: when a kernel calling it compiles and the call's argument types do not type
            (also Numba's ``TypingError``).
        UnsupportedFeatureError: when a kernel calling it compiles and its body uses a construct Metal cannot
            express; ``inspect_llvm()``/``inspect_asm()`` (Metal has neither: ``inspect_msl(signature)``).
        DispatcherStateError: launched like a kernel (``f[1, 1]()``) or asked for SASS, numba.cuda's
            ``RuntimeError`` ("Cannot compile a device function as a kernel", "Cannot inspect SASS of a device
            function").
    """

    def __init__(self, pyfunc, sigs=None, options: JitOptions = JitOptions()):
        super().__init__(pyfunc)
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.__wrapped__ = pyfunc
        self.options = options
        self._signatures = []   # explicit signatures' argument types: calls are typed for one of them
        for sig in sigs or ():
            args, _ = normalize_signature(sig)
            self.typed(args)
            self._signatures.append(args)

    def call_argtypes(self, argtypes: tuple) -> tuple:
        """With explicit signatures, the one Numba's dispatcher picks for a call with ``argtypes`` (the best
        rated by its conversions, unsafe ones allowed; a tie goes to the first, as Numba's does for device
        functions): the call's arguments are cast to it, as numba.cuda casts them."""
        if not self._signatures or argtypes in self._signatures:
            return argtypes
        from numba.core import types, typing
        argtypes = tuple(types.unliteral(a) for a in argtypes)   # constants are typed literally first

        from numba_metal.compiler.typing import typing_context
        from numba_metal.errors import KernelCompilationError, typing_error
        cases = [typing.signature(types.none, *sig) for sig in self._signatures]
        best = typing_context().resolve_overload(self.py_func, cases, argtypes, {}, allow_ambiguous=True,
                                                 unsafe_casting=True)
        if best is None:
            sigs = ", ".join("(" + ", ".join(map(str, s)) + ")" for s in self._signatures)
            error = typing_error(KernelCompilationError(
                f"Invalid use of type(device function {self.__name__}) with parameters "
                f"({', '.join(map(str, argtypes))}): its explicit signatures are {sigs}, and no conversion reaches "
                "one; call it with arguments of those types", _definition(self.py_func)))
            raise error   # a KernelCompilationError that is also Numba's TypingError
        return tuple(best.args)

    def __call__(self, *args, **kwargs):
        raise NumbaMetalError(f"{self.__name__}() is a Metal device function; call it from a @metal.jit "
                              "kernel, or call .py_func(...) to run the Python function")

    def __repr__(self) -> str:
        return f"<numba_metal device function {self.__name__}>"

    def __getitem__(self, config):
        raise DispatcherStateError(f"Cannot compile a device function as a kernel: {self.__name__} is a device "
                                   "function (device=True); launch a @metal.jit kernel that calls it")

    def inspect_llvm(self, signature=None):
        raise UnsupportedFeatureError(f"{self.__name__}.inspect_llvm(): there is no LLVM for Metal device functions; "
                                      "inspect_msl(signature) gives the Metal Shading Language source")

    def inspect_asm(self, signature=None):
        raise UnsupportedFeatureError(f"{self.__name__}.inspect_asm(): there is no ASM for Metal device functions; "
                                      "inspect_msl(signature) gives the Metal Shading Language source")

    def inspect_sass(self, signature=None):
        raise DispatcherStateError(f"Cannot inspect SASS of a device function ({self.__name__}), as in numba.cuda; "
                                   "Metal has no SASS at all: inspect_msl(signature) gives the MSL")

    def __reduce__(self):
        return (_unpickle, (DeviceFunction, _pickled_function(self.py_func), self.options, None))

    def inspect_msl(self, signature):
        """The MSL of this device function for ``signature`` (on its own, with the helpers it needs)."""
        from numba_metal.compiler.driver import compile_device_function
        return compile_device_function(self.py_func, signature, float64=self.options.float64)


# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------


class Dispatcher(KernelIntrospection):
    """A Metal kernel: launch it with ``kernel[blocks, threads](*args)``.

    Raises:
        LaunchConfigurationError: a launch configuration whose values are wrong (missing, not 1 to 3 positive
            sizes, a negative ``sharedmem``), or the kernel called without one.
        LaunchArgumentError: the wrong number of arguments, or a configuration of the wrong types.
        KernelLaunchError: a launch the device refuses before queuing it: an argument of a type a kernel cannot
            take, too many threads per threadgroup, too much threadgroup memory or argument data, an array of
            another device, a keyword argument.
        UnsupportedFeatureError: the kernel uses a construct Metal cannot express, named with its ``file:line``.
        KernelCompilationError: Numba's typing fails (its explanation kept; also Numba's ``TypingError``) or the
            device compiler rejects the MSL.
        UnsupportedPlatformError: the first use of a device finds none to use: no Metal GPU and the CPU
            reference device not chosen (``NUMBA_METAL_DEVICE=cpu`` or ``select_device('cpu')``), or
            ``NUMBA_METAL_DEVICE`` naming no device kind.
        MetalRuntimeError: at the next wait, not at the launch: the kernel failed (a device fault, the time
            limit), naming it.
        KernelBoundsError: at the launch, which waits for a ``debug=True`` kernel (as numba.cuda's): the kernel
            indexed out of bounds.
        KernelRaisedError: at the launch of a ``debug=True`` kernel: the kernel raised an exception (a ``raise``,
            a failed ``assert``, a zero divisor, a tuple index out of range).
        DispatcherStateError: ``specialize`` of a kernel that is already specialized.
        NumbaMetalError: an explicit signature that is not a signature, or a kernel's that does not return void.
        LaunchArgumentError: a kernel with explicit signatures launched with argument types
            none of them accepts ("No matching definition"), or two accept equally well ("Ambiguous
            overloading"): host/overloads.py.
    """

    def __init__(self, pyfunc, sigs=None, options: JitOptions = JitOptions(), specialized: bool = False):
        self.py_func = pyfunc
        self.__name__ = getattr(pyfunc, "__name__", "kernel")
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.__wrapped__ = pyfunc
        self.options = options
        self._specializations: dict = {}   # argument types -> Kernel
        self._by_key: dict = {}            # argument keys (arguments.arg_keys) -> Kernel: the launch path's lookup
        self._configs: dict = {}           # launch configurations of exact ints -> their LaunchConfig
        self._last_config = (_NO_CONFIG, None)  # (configuration object, its LaunchConfig), replaced whole
        self._lock = threading.RLock()
        self._eager = sigs is not None
        self._specialized = specialized
        self._signatures: list = []        # the explicit signatures' argument types, in their order
        self._conversions: dict = {}       # argument keys -> converter of the values (host/overloads.py)
        self._specialized_dispatchers: dict = {}   # argument types -> Dispatcher (``specialize``)
        # The raw keyer of the kernel's number of parameters (another number of arguments makes it raise
        # ValueError, and the launch takes the checked path, which says what is wrong).
        self.raw_key = raw_keyer(_parameter_count(pyfunc))
        self._captures = None   # the device arrays it captures (compiler/captures.py), found at first launch
        for sig in sigs or ():
            args, ret = normalize_signature(sig)
            from numba.core import types
            if ret is not None and not isinstance(ret, types.NoneType):
                raise NumbaMetalError(f"a kernel's signature must return void, not {ret} ({sig!r})")
            self.compile(args)
            if args not in self._signatures:
                self._signatures.append(args)

    def __repr__(self) -> str:
        return f"<numba_metal kernel {self.__name__}>"

    def __reduce__(self):
        # The Python function travels by value (Numba's cloudpickle), so the kernel unpickles in a process
        # that cannot import where it was defined (a Dask worker, a notebook's kernel); it is compiled there
        # again, or loaded from the disk cache.
        sigs = list(self._signatures) if self._eager else None
        return (_unpickle, (Dispatcher, _pickled_function(self.py_func), self.options, sigs, self._specialized))

    # -- launch configuration -------------------------------------------------------------

    def __getitem__(self, config):
        last = self._last_config
        if last[0] is config:   # ``kernel[4, 256]`` in a loop: the same constant tuple every time
            return last[1]
        if type(config) is tuple and len(config) == 2 and type(config[0]) is int and type(config[1]) is int:
            launch_config = self._configs.get(config)
            if launch_config is not None:
                self._last_config = (config, launch_config)
                return launch_config
        if _exact_config(config):
            launch_config = self._configs.get(config)
            if launch_config is None:
                launch_config = LaunchConfig(self, config)
                if len(self._configs) >= 256:
                    self._configs.clear()
                self._configs[config] = launch_config
            self._last_config = (config, launch_config)
            return launch_config
        return LaunchConfig(self, config)

    def __call__(self, *args, **kwargs):
        raise LaunchConfigurationError(f"kernel {self.__name__}() was called without a launch configuration "
                                       f"(launch configuration was not specified); launch it as "
                                       f"{self.__name__}[blocks, threads](...)")

    @property
    def _numba_type_(self):
        # Called from a kernel or a device function, a kernel is a device function of its Python function
        # (as numba-cuda's dispatchers are: CUDADispatcher.get_call_template compiles a device function).
        devfn = self.__dict__.get("_device_function")
        if devfn is None:
            devfn = self.__dict__.setdefault("_device_function", DeviceFunction(self.py_func, options=self.options))
        return devfn._numba_type_

    def configure(self, griddim, blockdim, stream=0, sharedmem=0):
        return LaunchConfig(self, (griddim, blockdim, stream, sharedmem))

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        """A 1-D launch covering ``ntasks`` threads (numba.cuda's ``forall``; ``ntasks == 0`` launches
        nothing). ``tpb`` defaults to 256 threads per threadgroup."""
        return ForAll(self, ntasks, tpb, stream, sharedmem)

    # -- numba.cuda's specialisation API -------------------------------------------------------

    def specialize(self, *args):
        """A kernel compiled for the types of ``args`` only (numba.cuda's ``specialize``), made once per
        argument types. Each of ``args`` is an argument (its type is taken) or a Numba type
        (``float32[::1]``), which stands for itself."""
        if self._specialized:
            raise DispatcherStateError(f"Dispatcher already specialized: kernel {self.__name__}() was made by "
                                      "specialize() or given one explicit signature; specialize the kernel it "
                                      "came from, or give @metal.jit a list of signatures")
        from numba.core import types

        from numba_metal.compiler.arraytypes import plain

        from .arguments import typeof_arg
        # numba.cuda's types (no size fact): the kernel serves arrays of any size, 64-bit indexed
        argtypes = tuple(a if isinstance(a, types.Type) else plain(typeof_arg(a, i)) for i, a in enumerate(args))
        with self._lock:
            specialization = self._specialized_dispatchers.get(argtypes)
            if specialization is None:
                specialization = Dispatcher(self.py_func, [argtypes], self.options, specialized=True)
                specialization.sanitize_from_env = self.sanitize_from_env
                self._specialized_dispatchers[argtypes] = specialization
        return specialization

    @property
    def specialized(self) -> bool:
        """True for a kernel made by :meth:`specialize`."""
        return self._specialized

    @property
    def extensions(self) -> list:
        """numba.cuda's argument-preparation extensions: numba-metal has none (``extensions=`` is refused),
        so the list is empty and adding to it raises ``UnsupportedFeatureError`` rather than being ignored."""
        return _NoExtensions()

    # -- specialisation ---------------------------------------------------------------------

    @property
    def specializations(self) -> dict:
        from numba_metal.compiler.arraytypes import Signatures
        self._sync_specializations()
        return Signatures(self._specializations)

    #: numba.cuda's names for the compiled specialisations (argument types -> kernel)
    overloads = specializations
    definitions = specializations

    def _sync_specializations(self) -> None:
        # Kernels loaded from the disk cache by argument key have no Numba types until asked for.
        for kernel in list(self._by_key.values()):
            if kernel not in self._specializations.values():
                self._specializations.setdefault(kernel.argtypes, kernel)

    def kernel_for_args(self, args):
        """The specialisation for a launch's arguments, checking each (raises for one that cannot be passed)."""
        self._check_argument_count(len(args))
        try:
            key = arg_keys(args)
        except KernelLaunchError as e:
            raise KernelLaunchError(f"kernel {self.__name__}(): {e.message}") from None
        kernel = self._by_key.get(key)
        return kernel if kernel is not None else self._kernel_for_key(key)

    def captures(self) -> tuple:
        """(owner function, kind, name) of the device arrays the kernel (and the device functions it calls)
        captures from its scope, found at its first launch (each launch appends the arrays those names denote
        then: host/captures.py)."""
        caps = self._captures
        if caps is None:
            from .captures import captures
            caps = self._captures = captures(self.py_func)
            if caps:
                self.raw_key = raw_keyer(_parameter_count(self.py_func) + len(caps))
        return caps

    def _check_argument_count(self, n: int) -> None:
        n -= len(self._captures or ())
        low, high = _parameter_range(self.py_func)
        if not low <= n <= high:
            expected = str(high) if low == high else f"{low} to {high}"
            raise LaunchArgumentError(f"kernel {self.__name__}() takes {expected} argument(s) but {n} were given",
                                      _definition(self.py_func))

    def _kernel_for_key(self, key):
        """The specialisation for argument keys (the launch path's slow path: first launch of a type)."""
        with self._lock:
            kernel = self._by_key.get(key)
            if kernel is None:
                kernel = self._from_disk_cache(key=key) if not self._eager else None
                if kernel is None:
                    try:
                        argtypes = tuple(numba_type_of_key(k) for k in key)
                    except KernelLaunchError as e:
                        raise KernelLaunchError(f"kernel {self.__name__}(): {e.message}") from None
                    kernel = self._specialization_for(argtypes)
                    if kernel.argtypes != argtypes:
                        from .overloads import converter
                        convert = converter(kernel.argtypes, argtypes)
                        if convert is not None:
                            self._conversions[key] = convert
                self._by_key[key] = kernel
                raw = without_stride_groups(key)
                if raw is not key:
                    # The launch path's raw key of these arrays has no stride groups: it finds this
                    # specialisation, whose launches check the groups' strides (StridesDiffer)
                    self._by_key.setdefault(raw, kernel)
            return kernel

    def _kernel_without_stride_groups(self, args):
        """The specialisation for ``args`` compiled without stride groups, which the launch path's raw key
        finds from now on: a launch found a specialisation whose stride groups its arrays do not have
        (``encoder.StridesDiffer``). Valid whatever the arrays' strides, so the launch path never
        switches back and forth."""
        key = without_stride_groups(arg_keys(args))
        with self._lock:
            kernel = self._by_key.get(key)
            if kernel is not None and kernel.stride_groups:
                del self._by_key[key]
        return self._kernel_for_key(key)

    #: Sanitizing because of NUMBA_METAL_SANITIZE (not an explicit ``sanitize=``): launches on another device
    #: than the CPU reference device run :meth:`plain_variant`'s specialisations (host/kernel.py).
    sanitize_from_env = False

    def plain_variant(self):
        """This kernel without the sanitizer (a dispatcher of its own, made once): what a kernel sanitizing
        because of ``NUMBA_METAL_SANITIZE`` runs on another device than the CPU reference device."""
        with self._lock:
            plain = self.__dict__.get("_plain_variant")
            if plain is None:
                plain = self._plain_variant = Dispatcher(self.py_func, None, self.options._replace(sanitize=()))
        return plain

    def compile(self, argtypes):
        """The specialisation for ``argtypes`` (a tuple of Numba types or a signature string)."""
        if isinstance(argtypes, str):
            argtypes, _ = normalize_signature(argtypes)
        argtypes = tuple(argtypes)
        kernel = self._specializations.get(argtypes)
        if kernel is not None:
            return kernel
        with self._lock:
            kernel = self._specializations.get(argtypes)
            if kernel is None:
                kernel = self._from_disk_cache(argtypes=argtypes) or self._compile(argtypes)
                self._specializations[argtypes] = kernel
        return kernel

    def _from_disk_cache(self, argtypes=None, key=None):
        """The specialisation from the disk cache (by Numba types or, without importing Numba, by argument
        keys), or None: caching is off, the types have no canonical spelling, or no valid entry exists."""
        if not self.options.cache or self.options.sanitize:
            return None
        # Deferred: importing numba-metal loads neither the cache nor the compiled kernels' machinery.
        from . import cache
        from .kernel import Kernel
        try:
            canon = [canonical(k) for k in key] if key is not None else [canonical_numba(t) for t in argtypes]
        except NotCanonical:
            return None
        start = profiling.now_ns() if profiling.listeners else 0
        options = self.options
        compiled = cache.load(self.py_func, canon, options.debug, options.fastmath, options.float64, options.link)
        if compiled is None:
            return None
        kernel = Kernel(self, compiled, argtypes=argtypes, key=key, from_cache=True)
        if start:
            profiling.emit("compile", name=kernel.name, argtypes=kernel.argtypes, start_ns=start,
                           end_ns=profiling.now_ns(), stage="python", from_cache=True)
        return kernel

    def _compile(self, argtypes):
        """Compile the specialisation for ``argtypes`` (and store it in the disk cache when caching)."""
        from .kernel import Kernel
        start = profiling.now_ns() if profiling.listeners else 0
        compiled = self.compile_uncached(argtypes)
        kernel = Kernel(self, compiled, argtypes=argtypes)
        if start:
            profiling.emit("compile", name=kernel.name, argtypes=kernel.argtypes, start_ns=start,
                           end_ns=profiling.now_ns(), stage="python", from_cache=False)
        return kernel

    def compile_uncached(self, argtypes):
        """The CompiledKernel for ``argtypes`` compiled from the Python source, never read from the disk cache
        (but stored there when caching)."""
        from numba_metal.compiler.driver import compile_kernel

        from . import cache
        options = self.options
        compiled = compile_kernel(self.py_func, argtypes, debug=options.debug, float64=options.float64,
                                  link=options.link, sanitize=options.sanitize)
        if options.cache and not options.sanitize:
            try:
                canon = [canonical_numba(t) for t in argtypes]
            except NotCanonical:
                pass
            else:
                cache.store(self.py_func, canon, options.debug, options.fastmath, compiled, options.float64,
                            options.link)
        return compiled

    def _specialization_for(self, argtypes):
        kernel = self._specializations.get(argtypes)
        if kernel is not None:
            return kernel
        if self._eager:
            # Numba's choice among the explicit signatures (host/overloads.py); the launch converts the values.
            from .overloads import choose
            return self._specializations[choose(self, self._signatures, argtypes)]
        return self.compile(argtypes)

    def _compile_for_args(self, *args):
        """The specialisation for a launch's arguments, compiled if needed (numba.cuda's name for the
        dispatcher's compile-on-first-launch step; a launch calls it only for argument types it has not seen)."""
        return self.kernel_for_args(args)

    # -- inspection -------------------------------------------------------------------------

    def _kernels_for(self, signature):
        if signature is None:
            return self.specializations
        if isinstance(signature, str):
            signature, _ = normalize_signature(signature)
        return {tuple(signature): self.compile(signature)}

    def inspect_msl(self, signature=None):
        """The generated MSL: a string for one signature, else a dict over specialisations."""
        kernels = self._kernels_for(signature)
        if signature is not None:
            return next(iter(kernels.values())).msl
        return {k: v.msl for k, v in kernels.items()}

    def inspect_types(self, signature=None, file=None, pretty=False):
        """Print the typed Numba IR of each specialisation (every variable with its type)."""
        if pretty:
            raise UnsupportedFeatureError("inspect_types(pretty=True): numba-metal prints plain text only; "
                                          "call inspect_types() or inspect_types(file=...)")
        file = file or sys.stdout
        for argtypes, kernel in self._kernels_for(signature).items():
            print(f"{self.__name__} ({', '.join(map(str, argtypes))})", file=file)
            print("-" * 80, file=file)
            print(annotate_types(kernel.typed), file=file)


# Kernels and device functions unpickled in this process, by what was pickled: a Dask worker that receives
# the same kernel with every task makes it once, and so compiles it once.
_unpickled: dict = {}


def _pickled_function(pyfunc) -> bytes:
    from numba import cloudpickle
    return cloudpickle.dumps(pyfunc, protocol=-1)


def _unpickle(cls, pickled: bytes, options, sigs, specialized: bool = False):
    key = (cls, pickled, options, None if sigs is None else tuple(sigs), specialized)
    made = _unpickled.get(key)
    if made is None:
        extra = {"specialized": True} if specialized else {}
        made = _unpickled.setdefault(key, cls(pickle.loads(pickled), sigs, JitOptions(*options), **extra))
    return made


def _parameter_count(pyfunc) -> int:
    code = getattr(pyfunc, "__code__", None)
    return code.co_argcount if code is not None else 0


def _parameter_range(pyfunc) -> tuple:
    """(fewest, most) positional arguments ``pyfunc`` accepts."""
    try:
        params = inspect.signature(pyfunc).parameters.values()
    except (TypeError, ValueError):
        n = _parameter_count(pyfunc)
        return n, n
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 0, sys.maxsize
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return sum(p.default is p.empty for p in positional), len(positional)


def _definition(pyfunc):
    code = getattr(pyfunc, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else None


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


# ---------------------------------------------------------------------------------------------
# Launch configurations
# ---------------------------------------------------------------------------------------------


def _dim3(value, cuda_name: str, what: str):
    """A launch dimension as numba.cuda takes it: an integer, or a sequence of 1 to 3 integers (a tuple,
    a list, a ``Dim3``-like named tuple) or an object with integer ``x``, ``y``, ``z`` (``metal.gridDim``
    style), with NumPy integers anywhere; padded with 1s to three axes. Errors begin with numba.cuda's
    wording (``cuda_name``: griddim or blockdim), so code matching numba.cuda's messages keeps working."""
    if value is None:
        raise LaunchConfigurationError("Must specify both griddim and blockdim")
    if isinstance(value, (tuple, list)):
        dims = list(value)
    elif all(hasattr(value, a) for a in ("x", "y", "z")) and not isinstance(value, (int, np.integer)):
        dims = [value.x, value.y, value.z]
    else:
        dims = [value]
    if not 1 <= len(dims) <= 3:
        raise LaunchConfigurationError(f"{cuda_name} must be a sequence of 1, 2 or 3 integers, got {dims!r}: the "
                                       f"{what}")
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, (bool, np.bool_)):
            raise LaunchArgumentError(f"{cuda_name} must be a sequence of integers, got {dims!r}: the {what}")
    dims = tuple(int(d) for d in dims)
    if any(d <= 0 for d in dims):
        raise LaunchConfigurationError(f"{cuda_name} must be positive, got {value!r}: the {what}")
    return dims + (1,) * (3 - len(dims))


class ForAll:
    """``kernel.forall(ntasks, tpb, stream, sharedmem)``: a 1-D launch over ``ntasks`` threads."""

    def __init__(self, dispatcher, ntasks, tpb=0, stream=0, sharedmem=0):
        if not isinstance(ntasks, (int, np.integer)) or isinstance(ntasks, (bool, np.bool_)):
            raise LaunchArgumentError(f"forall(ntasks): ntasks must be an integer, not {ntasks!r}")
        if ntasks < 0:
            raise LaunchConfigurationError(f"Can't create ForAll with negative task count: {ntasks}")
        self.dispatcher = dispatcher
        self.ntasks = int(ntasks)
        self.tpb = int(tpb) or 256
        self.stream = stream
        self.sharedmem = sharedmem

    def __call__(self, *args):
        if self.ntasks == 0:
            return
        blocks = (self.ntasks + self.tpb - 1) // self.tpb
        self.dispatcher[blocks, self.tpb, self.stream, self.sharedmem](*args)


_NO_CONFIG = object()


def _exact_config(config) -> bool:
    """True for a launch configuration of plain ints on the default stream: ``Dispatcher.__getitem__``
    validates such a configuration once and reuses its ``LaunchConfig`` (other values, e.g. floats or bools
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


class LaunchConfig:
    """``kernel[blocks, threads, stream, sharedmem]``: a launch configuration bound to a kernel.

    Everything about the configuration itself is validated here, once; the dispatcher reuses
    configurations of plain ints, so ``kernel[blocks, threads](...)`` in a loop validates nothing twice.
    What depends on the specialisation and the device is checked by its launch state, once per pair
    (``checked`` is the launch state this configuration was last checked against).
    """

    __slots__ = ("dispatcher", "griddim", "blockdim", "stream", "sharedmem", "nthreads", "grid_error",
                 "default_stream", "shared_length", "checked")

    def __init__(self, dispatcher, config):
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchConfigurationError("must specify at least the griddim and blockdim: launch configuration "
                                           "must be [blocks, threads], [blocks, threads, stream] or [blocks, "
                                           f"threads, stream, sharedmem], got {config!r}")
        self.dispatcher = dispatcher
        self.griddim = _dim3(config[0], "griddim", "blocks (threadgroups per grid)")
        self.blockdim = _dim3(config[1], "blockdim", "threads (threads per threadgroup)")
        self.stream = config[2] if len(config) > 2 else 0
        sharedmem = config[3] if len(config) > 3 else 0
        if not isinstance(sharedmem, (int, np.integer)) or isinstance(sharedmem, (bool, np.bool_)):
            raise LaunchArgumentError(f"sharedmem must be a number of bytes, got {sharedmem!r}")
        if sharedmem < 0:
            raise LaunchConfigurationError(f"sharedmem must be a non-negative number of bytes, got {sharedmem!r}")
        self.sharedmem = int(sharedmem)
        b = self.blockdim
        self.nthreads = b[0] * b[1] * b[2]
        self.grid_error = None
        for g, t in zip(self.griddim, self.blockdim):
            if g * t > MAX_GRID_THREADS_PER_AXIS:
                self.grid_error = (f"grid of {self.griddim} x {self.blockdim} threads exceeds 2**32 - 1 "
                                   "threads along an axis")
                break
            if g > MAX_THREADGROUPS_PER_AXIS:
                self.grid_error = (f"griddim {self.griddim} exceeds 2**31 - 1 blocks (threadgroups) along an "
                                   "axis, numba.cuda's limit (blockIdx and gridDim are int32); launch fewer, "
                                   "larger blocks")
                break
        s = self.stream
        self.default_stream = s is None or (isinstance(s, int) and s == 0)
        # What dynamic threadgroup memory is bound with: Metal takes multiples of 16, and a kernel that
        # declares dynamic threadgroup memory is always given some.
        self.shared_length = (self.sharedmem + 15) // 16 * 16 or 16
        self.checked = None
        # The frame that asked for this configuration: Dispatcher.__getitem__'s or configure()'s caller.
        perf_warnings.check_grid(self.griddim, sys._getframe(2))

    @property
    def args(self):
        """The arguments of the launch compiling its kernel on this thread (numba.cuda's), else None."""
        return current_launch_args()

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise KernelLaunchError(f"kernel {self.dispatcher.__name__}() was launched with keyword arguments "
                                    f"({', '.join(kwargs)}); Metal kernels take their arguments by position")
        disp = self.dispatcher
        caps = disp._captures
        if caps is None:
            caps = disp.captures()
        if caps:
            from .captures import captured_arrays
            args = args + captured_arrays(disp.py_func, caps)
        try:
            key = disp.raw_key(args)
        except ValueError:
            key = None
        kernel = disp._by_key.get(key)
        if kernel is None:
            args = kernel_arguments(args)   # objects exporting DLPack (PyTorch, MLX...) become arrays
            # numba.cuda's launchconfig.current_launch_config() is this configuration while it compiles
            kernel = compile_for_launch(disp, self, args)
        if disp._conversions:   # an explicit signature chosen for other argument types: convert the scalars
            convert = disp._conversions.get(arg_keys(args))
            if convert is not None:
                args = convert(args)
        ctx = _device.selected or _device.current()
        state = kernel.launch_states.get(ctx)
        if state is None:
            state = kernel.launch_state(ctx)
        try:
            state.launch(args, self)
        except StridesDiffer:   # raised before anything is submitted
            kernel = disp._kernel_without_stride_groups(args)
            kernel.launch_state(ctx).launch(args, self)


__all__ = ["Dispatcher", "DeviceFunction", "JitOptions", "LaunchConfig", "normalize_signature",
           "annotate_types"]


class _NoExtensions(list):
    """``Dispatcher.extensions``: an empty list that refuses additions (numba.cuda's ``prepare_args``
    extensions, e.g. ``kernel.extensions.append(obj)``, would be silently ignored otherwise)."""

    def _refuse(self, *args, **kwargs):
        raise UnsupportedFeatureError(
            "kernel.extensions: numba-metal has no argument-preparation extensions (numba.cuda's prepare_args "
            "objects); wrap the argument instead: metal.In(arr) (copied to the device, never back), "
            "metal.Out(arr), metal.InOut(arr)")

    append = extend = insert = __iadd__ = __setitem__ = _refuse

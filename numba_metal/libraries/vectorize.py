"""``numba.vectorize(..., target='metal')`` and ``numba.guvectorize(..., target='metal')``.

The ``'metal'`` target is registered with Numba's ``Vectorize`` and ``GUVectorize`` target registries by
``_numba_metal_target`` (lazily: this module is imported when the target is first used): at interpreter
start-up through its ``.pth`` file, so ``numba.vectorize(..., target='metal')`` works in programs that
never import numba_metal; when numba_metal is imported; and by the ``numba_extensions`` entry point.

The objects follow numba.cuda's device ufuncs: they take NumPy arrays, device arrays and scalars,
broadcast them by NumPy's rules, accept ``out=`` and ``stream=``, and return a device array when any
input is a device array, else a NumPy array. The element function is compiled as a device function
(so it is inlined) and called from a kernel generated for the number of inputs and dimensions: one
thread per output element (vectorize) or per loop index (guvectorize, whose core dimensions are passed
to the function as array views; a ``()`` output is a 1-element view, as in Numba's CPU gufuncs).

Signatures select the loop as NumPy does (the first whose input types every argument casts to
safely); without signatures the types of the arguments are used, compiling on first use.
"""

from __future__ import annotations

import inspect
import math
import threading
import warnings

import numpy as np

from numba_metal.errors import MetalTypeError, MetalValueError, NumbaMetalError, UnsupportedFeatureError
from numba_metal.host import allocation as _allocation
from numba_metal.host import arrays as _arrays
from numba_metal.host.decorators import jit
from numba_metal.host.dispatcher import DeviceFunction, normalize_signature
from numba_metal.libraries.reduction import Reduce

#: Threads per threadgroup of the generated kernels.
THREADS = 256


# ---------------------------------------------------------------------------------------------
# Registration with Numba
# ---------------------------------------------------------------------------------------------


def install() -> None:
    """Register ``target='metal'`` with Numba's ufunc decorators, now if they are loaded, else as soon as
    they are (``_numba_metal_target``, a top-level module installed with numba-metal, owns this: its
    ``.pth`` file registers the target in programs that never import numba_metal)."""
    try:
        import _numba_metal_target
    except ModuleNotFoundError:
        raise ImportError("numba-metal's installation is out of date (its module _numba_metal_target is "
                          "missing): reinstall numba-metal, e.g. `pip install -e .` in its source tree") from None
    _numba_metal_target.install()


# ---------------------------------------------------------------------------------------------
# Signatures and argument types
# ---------------------------------------------------------------------------------------------


def _parse_signature(sig):
    """(argument Numba types, return Numba type or None) of a signature in any of numba.cuda's forms."""
    return normalize_signature(sig)


def _np_dtype(nbtype) -> np.dtype:
    """The NumPy dtype of a Numba scalar or array type."""
    from numba.core import types
    from numba.np.numpy_support import as_dtype
    scalar = nbtype.dtype if isinstance(nbtype, types.Array) else nbtype
    return as_dtype(scalar)


def _operand_dtype(value) -> np.dtype:
    """The dtype a call argument brings (Python scalars: int64, float32, bool)."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return np.dtype(np.int64)
    if isinstance(value, float):
        return np.dtype(np.float32)  # Python floats are float32 in Metal kernels
    return np.asarray(value).dtype if not _arrays.is_device_array(value) else value.dtype


def _lazy_dtypes(values) -> tuple:
    """Loop types for a call without a matching signature: each array's dtype, and for Python scalars
    the type NumPy gives them next to those arrays (NEP 50: int32 array + 1 stays int32)."""
    arrays = [_operand_dtype(v) for v in values if not isinstance(v, (bool, int, float))]
    dtypes = []
    for v in values:
        if isinstance(v, (bool, int, float)) and arrays and not isinstance(v, np.generic):
            dtypes.append(_without_float64_data(np.result_type(*arrays, v), arrays))
        else:
            dtypes.append(_operand_dtype(v))
    return tuple(dtypes)


def _without_float64_data(dtype: np.dtype, operands) -> np.dtype:
    """``dtype``, except that float64 made from operands that hold no float64 (a Python float next to
    float32 or integer arrays, ``x / 2`` of an integer) is float32, as in a kernel (precision.py)."""
    if dtype == np.float64 and not any(np.dtype(d) == np.float64 for d in operands):
        return np.dtype(np.float32)
    return dtype


def _casts_safely(value, to: np.dtype) -> bool:
    if isinstance(value, bool):
        return to.kind in "biuf"
    if isinstance(value, int):  # a weak Python scalar (NEP 50): any integer type that holds it, or float
        if to.kind == "f":
            return True
        if to.kind in "iu":
            info = np.iinfo(to)
            return info.min <= value <= info.max
        return False
    if isinstance(value, float):
        return to.kind == "f"
    dtype = value.dtype if _arrays.is_device_array(value) else np.asarray(value).dtype
    return np.can_cast(dtype, to, "safe")


def _numba_scalar(dtype: np.dtype):
    from numba.np.numpy_support import from_dtype
    return from_dtype(dtype)


def _as_operand(value):
    """A call argument as a device array, a NumPy array or a scalar (sequences become NumPy arrays)."""
    if _arrays.is_device_array(value) or isinstance(value, (np.ndarray, np.generic, bool, int, float)):
        return value
    return np.asarray(value)


def _is_scalar(value) -> bool:
    return not _arrays.is_device_array(value) and np.ndim(value) == 0


# ---------------------------------------------------------------------------------------------
# Operands on the device
# ---------------------------------------------------------------------------------------------


class _Launch:
    """What one call needs on the device: its operands as device arrays or typed scalars."""

    def __init__(self, stream):
        self.stream = stream
        self.any_device = False

    def device_operand(self, value, dtype: np.dtype):
        """``value`` as a device array (same dtype if already on the device: kernels convert)."""
        if _arrays.is_device_array(value):
            self.any_device = True
            return value
        host = np.asarray(value)
        if host.dtype != dtype:
            host = host.astype(dtype)
        return _allocation.to_device(np.ascontiguousarray(host), stream=self.stream)


def _flat_views(arrays, shape):
    """1-d views of same-shaped C-contiguous arrays, or None if one of them is not contiguous."""
    if len(shape) == 1:
        return arrays
    if all(a.is_c_contiguous() for a in arrays):
        return [a.reshape(a.size) for a in arrays]
    return None


def _finish(launch, out_dev, out_host, shape):
    """The call's result: a device array if any input was one (or ``out`` is), else a host array."""
    if out_host is not None:
        np.copyto(out_host, out_dev.copy_to_host(stream=launch.stream).reshape(out_host.shape),
                  casting="same_kind")
        return out_host
    if launch.any_device:
        return out_dev
    host = out_dev.copy_to_host(stream=launch.stream)
    return host.reshape(shape)[()] if shape == () else host


def _check_out(out, shape, dtype, what):
    """(device array to write, host array to copy into or None) for an ``out=`` argument."""
    if tuple(out.shape) != tuple(shape):
        raise NumbaMetalError(f"{what}: out has shape {tuple(out.shape)}, but the result has shape "
                              f"{tuple(shape)}")
    if _arrays.is_device_array(out):
        if out.dtype != dtype:
            raise NumbaMetalError(f"{what}: out has dtype {out.dtype}, but the result is {dtype}")
        return out, None
    if not isinstance(out, np.ndarray):
        raise NumbaMetalError(f"{what}: out must be a NumPy or device array, not {type(out).__name__}")
    if not np.can_cast(dtype, out.dtype, "same_kind"):
        raise NumbaMetalError(f"{what}: cannot write {dtype} results into out of dtype {out.dtype}")
    return _allocation.device_array(shape, dtype), out


# ---------------------------------------------------------------------------------------------
# Generated kernels
# ---------------------------------------------------------------------------------------------


def _generate(name: str, source: str, namespace: dict):
    code = compile(source, f"<numba_metal {name}>", "exec")
    exec(code, namespace)
    return jit(namespace[name])


def _ufunc_kernel(fn, scalars: tuple, ndim: int, casts: tuple):
    """Kernel: ``out[idx] = fn(a0[idx], ...)`` over every element ``idx`` of the ``ndim``-d ``out``.

    ``scalars[k]`` says that input ``k`` is a scalar argument; ``casts[k]`` is the NumPy scalar type the
    input is converted to before the call (the selected loop's type).
    """
    from numba_metal.kernel_api.indexing import grid
    params = [f"a{k}" for k in range(len(scalars))]
    idx = ", ".join(f"i{d}" for d in range(ndim))
    lines = [f"def vectorized({', '.join(params)}, out):",
             "    i = grid(1)",
             "    if i < out.size:"]
    lines += _unravel("i", "out", ndim, "        ")
    call_args = [f"cast{k}({p})" if scalars[k] else f"cast{k}({p}[{idx}])" for k, p in enumerate(params)]
    lines.append(f"        out[{idx}] = fn({', '.join(call_args)})")
    namespace = {"grid": grid, "fn": fn}
    namespace.update({f"cast{k}": c for k, c in enumerate(casts)})
    return _generate("vectorized", "\n".join(lines) + "\n", namespace)


def _unravel(flat: str, arr: str, ndim: int, indent: str) -> list[str]:
    """Statements giving i0..i{ndim-1}, the C-order multi-index of flat index ``flat`` in ``arr``."""
    if ndim == 0:
        return []
    if ndim == 1:
        return [f"{indent}i0 = {flat}"]
    lines = [f"{indent}r = {flat}"]
    for d in range(ndim - 1, 0, -1):
        lines.append(f"{indent}i{d} = r % {arr}.shape[{d}]")
        lines.append(f"{indent}r = r // {arr}.shape[{d}]")
    lines.append(f"{indent}i0 = r")
    return lines


def _gufunc_kernel(fn, nin: int, nout: int, loop_ndim: int, whole: tuple, casts: tuple):
    """Kernel: one thread per loop index ``l``: ``fn(a0[l], ..., out0[l], ...)``.

    ``whole[k]`` says operand ``k`` is indexed all the way down to a scalar (a ``()`` input passed as a
    scalar); otherwise ``a[l]`` is a view of the core dimensions. ``casts[k]`` converts scalar inputs.
    """
    from numba_metal.kernel_api.indexing import grid
    params = [f"a{k}" for k in range(nin)] + [f"o{k}" for k in range(nout)]
    lines = [f"def guvectorized({', '.join(params)}, nloop):",
             "    i = grid(1)",
             "    if i < nloop:"]
    if loop_ndim == 0:
        lines.append("        pass")
    # The loop shape is that of the first output's leading axes.
    lines += _unravel("i", "o0", loop_ndim, "        ")
    idx = ", ".join(f"i{d}" for d in range(loop_ndim))
    args = []
    for k, p in enumerate(params):
        if k < nin and whole[k]:
            args.append(f"cast{k}({p}[{idx}, 0])" if loop_ndim else f"cast{k}({p}[0])")
        elif loop_ndim:
            args.append(f"{p}[{idx}]")
        else:
            args.append(p)
    lines.append(f"        fn({', '.join(args)})")
    namespace = {"grid": grid, "fn": fn}
    namespace.update({f"cast{k}": c for k, c in enumerate(casts)})
    return _generate("guvectorized", "\n".join(lines) + "\n", namespace)


def _as_device_function(func, targetoptions):
    if isinstance(func, DeviceFunction):
        return func
    return jit(device=True, fastmath=bool(targetoptions.get("fastmath", False)))(getattr(func, "py_func", func))


#: Target options numba-metal's ufuncs take (numba.cuda takes none but ``nopython``).
_OPTIONS = {"fastmath", "debug"}


def _check_vectorize_options(targetoptions, cache):
    """numba.cuda's rules and messages: ``nopython`` is redundant, anything else unknown a KeyError."""
    if cache:
        raise MetalTypeError("caching is not supported")
    for name in list(targetoptions):
        if name == "nopython":
            warnings.warn("nopython kwarg for metal target is redundant", RuntimeWarning, stacklevel=4)
            del targetoptions[name]
        elif name not in _OPTIONS:
            raise KeyError(f"Unrecognized options. metal vectorize target does not support option: '{name}'")


def _check_guvectorize_options(targetoptions, cache, writable_args):
    """numba.cuda's rules and messages: ``nopython`` must be True, anything else unknown a TypeError."""
    if cache:
        raise MetalTypeError("caching is not supported")
    if writable_args:
        raise MetalTypeError("writable_args are not supported")
    if not targetoptions.pop("nopython", True):
        raise MetalTypeError("nopython flag must be True")
    targetoptions.pop("is_dynamic", None)
    unknown = [name for name in targetoptions if name not in _OPTIONS]
    if unknown:
        raise MetalTypeError("The following target options are not supported: "
                             + ", ".join(repr(name) for name in unknown))


# ---------------------------------------------------------------------------------------------
# vectorize
# ---------------------------------------------------------------------------------------------


class MetalVectorize:
    """The builder Numba's ``vectorize`` uses for ``target='metal'``: ``add(sig)``, ``build_ufunc()``."""

    def __init__(self, func, identity=None, cache=False, targetoptions=None):
        targetoptions = dict(targetoptions or {})
        _check_vectorize_options(targetoptions, cache)
        self.pyfunc = func
        self.identity = identity
        self.targetoptions = targetoptions
        self.signatures: list = []  # (input dtypes, output dtype)
        self.compile_disabled = False

    def add(self, sig) -> None:
        args, ret = _parse_signature(sig)
        nparams = len(inspect.signature(self.pyfunc).parameters)
        if len(args) != nparams:
            raise NumbaMetalError(f"signature {sig!r} has {len(args)} inputs, but "
                                  f"{self.pyfunc.__name__}() takes {nparams}")
        ins = tuple(_np_dtype(a) for a in args)
        out = _np_dtype(ret) if ret is not None else None
        self.signatures.append((ins, out))

    def disable_compile(self) -> None:
        self.compile_disabled = True

    def build_ufunc(self) -> "MetalUFunc":
        return MetalUFunc(self)


class MetalUFunc:
    """A ufunc running on the Metal device (numba.cuda's device ufunc).

    ``f(*inputs, out=None, stream=0)``; ``f.reduce(a, stream=0)`` for binary functions.
    """

    def __init__(self, builder: MetalVectorize):
        self._builder = builder
        self.pyfunc = builder.pyfunc
        self.__name__ = getattr(self.pyfunc, "__name__", "ufunc")
        self.__doc__ = getattr(self.pyfunc, "__doc__", None)
        self.identity = builder.identity
        self.nin = len(inspect.signature(self.pyfunc).parameters)
        self.nout = 1
        self._devfn = _as_device_function(self.pyfunc, builder.targetoptions)
        self._kernels: dict = {}
        self._lock = threading.Lock()
        self._reducer = None

    def __repr__(self) -> str:
        return f"<numba_metal ufunc {self.__name__}>"

    @property
    def types(self) -> list[str]:
        return ["".join(d.char for d in ins) + "->" + (out.char if out is not None else "?")
                for ins, out in self._builder.signatures]

    def _select(self, inputs):
        """(input dtypes, output dtype) of the loop for these inputs."""
        sigs = self._builder.signatures
        for ins, out in sigs:
            if all(_casts_safely(v, d) for v, d in zip(inputs, ins)):
                return ins, out if out is not None else self._result_dtype(ins)
        if self._builder.compile_disabled:
            got = ", ".join(str(_operand_dtype(v)) for v in inputs)
            raise MetalTypeError(f"ufunc {self.__name__!r}: no signature matches the inputs ({got}); "
                            f"its signatures are {self.types}")
        ins = _lazy_dtypes(inputs)
        return ins, self._result_dtype(ins)

    def _result_dtype(self, ins) -> np.dtype:
        argtypes = tuple(_numba_scalar(d) for d in ins)
        from numba.np.numpy_support import as_dtype
        return _without_float64_data(as_dtype(self._devfn.typed(argtypes).return_type), ins)

    def _kernel(self, scalars, ndim, ins):
        key = (scalars, ndim, ins)
        kernel = self._kernels.get(key)
        if kernel is None:
            with self._lock:
                kernel = self._kernels.get(key)
                if kernel is None:
                    kernel = _ufunc_kernel(self._devfn, scalars, ndim, tuple(d.type for d in ins))
                    self._kernels[key] = kernel
        return kernel

    def __call__(self, *args, out=None, stream=0):
        if len(args) == self.nin + 1 and out is None:
            *args, out = args
        if len(args) != self.nin:
            raise MetalTypeError(f"ufunc {self.__name__!r} takes {self.nin} inputs, got {len(args)}")
        args = [_as_operand(a) for a in args]
        ins, out_dtype = self._select(args)
        launch = _Launch(stream)
        scalars = tuple(_is_scalar(a) for a in args)
        shape = np.broadcast_shapes(*[() if s else tuple(a.shape) for a, s in zip(args, scalars)])
        kshape = shape or (1,)  # all-scalar calls compute one element
        if out is not None:
            out_dev, out_host = _check_out(out, shape, out_dtype, f"ufunc {self.__name__!r}")
            launch.any_device = launch.any_device or out_host is None
            out_dev = out_dev.reshape(kshape)
        else:
            out_dev, out_host = _allocation.device_array(kshape, out_dtype, stream=stream), None
        operands = []
        for a, s, d in zip(args, scalars, ins):
            if s:
                if _arrays.is_device_array(a):  # a 0-d device array
                    launch.any_device = True
                    a = a.copy_to_host()
                operands.append(d.type(a))
            else:
                operands.append(_arrays.broadcast_to(launch.device_operand(a, d), kshape))
        n = out_dev.size
        if n:
            arrays = [o for o, s in zip(operands, scalars) if not s] + [out_dev]
            flat = _flat_views(arrays, kshape)
            ndim = 1 if flat is not None else len(kshape)
            if flat is not None:
                it = iter(flat)
                operands = [o if s else next(it) for o, s in zip(operands, scalars)]
                out_arg = next(it)
            else:
                out_arg = out_dev
            kernel = self._kernel(scalars, ndim, ins)
            kernel[(n + THREADS - 1) // THREADS, THREADS, stream](*operands, out_arg)
        if out is not None and out_host is None:
            return out
        return _finish(launch, out_dev, out_host, shape)

    def reduce(self, arr, stream=0):
        """Reduce a 1-d array with this binary ufunc (numba.cuda's ``ufunc.reduce``)."""
        if self.nin != 2:
            raise NumbaMetalError(f"reduce() needs a binary ufunc; {self.__name__!r} takes {self.nin} inputs")
        if self._reducer is None:
            self._reducer = Reduce(self._devfn)
        if np.ndim(arr) == 1 and arr.shape[0] == 0:
            if self.identity is None or self.identity == "reorderable":
                raise MetalValueError(f"zero-size array to reduction operation {self.__name__} which has no "
                                 "identity")
            return arr.dtype.type(self.identity)
        return self._reducer.reduce_elements(arr, stream=stream)


# ---------------------------------------------------------------------------------------------
# guvectorize
# ---------------------------------------------------------------------------------------------


class MetalGUVectorize:
    """The builder Numba's ``guvectorize`` uses for ``target='metal'``."""

    def __init__(self, func, signature, identity=None, cache=False, targetoptions=None, writable_args=()):
        from numba.np.ufunc.sigparse import parse_signature
        targetoptions = dict(targetoptions or {})
        _check_guvectorize_options(targetoptions, cache, writable_args)
        self.pyfunc = func
        self.layout = signature
        self.identity = identity
        self.targetoptions = targetoptions
        self.inputs, self.outputs = parse_signature(signature)
        self.signatures: list = []  # per operand: (dtype, is an array in the type signature)
        self.compile_disabled = False
        nparams = len(inspect.signature(func).parameters)
        if nparams != len(self.inputs) + len(self.outputs):
            raise NumbaMetalError(f"guvectorize layout {signature!r} has {len(self.inputs)} inputs and "
                                  f"{len(self.outputs)} outputs, but {func.__name__}() takes {nparams} "
                                  "arguments")

    def add(self, sig) -> None:
        from numba.core import types
        args, ret = _parse_signature(sig)
        if ret is not None and not isinstance(ret, types.NoneType):
            raise MetalTypeError(f"guvectorized functions cannot return values: signature {sig} specifies {ret} "
                                 "return type")
        if len(args) != len(self.inputs) + len(self.outputs):
            raise NumbaMetalError(f"signature {sig!r} has {len(args)} arguments, but the layout "
                                  f"{self.layout!r} has {len(self.inputs) + len(self.outputs)}")
        self.signatures.append(tuple((_np_dtype(a), isinstance(a, types.Array)) for a in args))

    def disable_compile(self) -> None:
        self.compile_disabled = True

    def build_ufunc(self) -> "MetalGUFunc":
        return MetalGUFunc(self)


class MetalGUFunc:
    """A generalized ufunc running on the Metal device: ``f(*inputs[, *outputs], out=None, stream=0)``."""

    def __init__(self, builder: MetalGUVectorize):
        self._builder = builder
        self.pyfunc = builder.pyfunc
        self.__name__ = getattr(self.pyfunc, "__name__", "gufunc")
        self.__doc__ = getattr(self.pyfunc, "__doc__", None)
        self.signature = builder.layout
        self.nin = len(builder.inputs)
        self.nout = len(builder.outputs)
        self._devfn = _as_device_function(self.pyfunc, builder.targetoptions)
        self._kernels: dict = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<numba_metal gufunc {self.__name__} {self.signature}>"

    def _select(self, inputs, outputs):
        for sig in self._builder.signatures:
            if all(_casts_safely(v, d) for v, (d, _) in zip(inputs, sig[:self.nin])):
                return sig
        # numba.cuda's second chance: a signature whose input types cast safely to the inputs' (so host
        # inputs are converted down to it; device arrays cannot be).
        for sig in self._builder.signatures:
            if all(np.can_cast(d, _operand_dtype(v)) for v, (d, _) in zip(inputs, sig[:self.nin])):
                for v, (d, _) in zip(inputs, sig[:self.nin]):
                    if _arrays.is_device_array(v) and v.dtype != d:
                        raise MetalTypeError(f"compatible signature is possible by casting but {type(v)} does "
                                             "not support .astype()")
                return sig
        if self._builder.compile_disabled or outputs is None:
            if outputs is None and not self._builder.compile_disabled:
                raise MetalTypeError(f"gufunc {self.__name__!r} has no signatures, so its outputs must be passed "
                                f"as arguments: {self.__name__}(inputs..., outputs...)")
            got = ", ".join(str(_operand_dtype(v)) for v in inputs)
            raise MetalTypeError(f"gufunc {self.__name__!r}: no signature matches the inputs ({got})")
        # As Numba's dynamic gufuncs: a () input is passed as a scalar, outputs as arrays.
        ins = tuple((_operand_dtype(v), bool(core)) for v, core in zip(inputs, self._builder.inputs))
        return ins + tuple((_operand_dtype(v), True) for v in outputs)

    def __call__(self, *args, out=None, stream=0):
        b = self._builder
        if out is None and len(args) not in (self.nin, self.nin + self.nout):
            raise MetalTypeError(f"This gufunc accepts {_positional(self.nin)} (when providing input only) or "
                                 f"{_positional(self.nin + self.nout)} (when providing input and output). Got "
                                 f"{_positional(len(args))}.")
        if out is not None:
            if len(args) > self.nin:
                raise MetalValueError("cannot specify argument 'out' as both positional and keyword")
            args = args + (tuple(out) if isinstance(out, (tuple, list)) else (out,))
        args = tuple(_as_operand(a) for a in args)
        if len(args) == self.nin + self.nout:
            inputs, outputs = args[:self.nin], args[self.nin:]
        else:
            inputs, outputs = args, None
        sig = self._select(inputs, outputs)
        launch = _Launch(stream)
        # Bind core dimension sizes and find the loop shape.
        sizes: dict = {}
        loop_shapes = []
        for k, (v, core) in enumerate(zip(inputs, b.inputs)):
            shape = () if _is_scalar(v) else tuple(v.shape)
            if len(shape) < len(core):
                raise MetalValueError(f"gufunc {self.__name__!r}: input {k} has {len(shape)} dimensions, fewer "
                                 f"than its core dimensions {core}")
            _bind(sizes, core, shape[len(shape) - len(core):], self.__name__, f"input {k}")
            loop_shapes.append(shape[:len(shape) - len(core)])
        if outputs is not None:
            for k, (v, core) in enumerate(zip(outputs, b.outputs)):
                shape = tuple(v.shape)
                _bind(sizes, core, shape[len(shape) - len(core):] if core else (), self.__name__,
                      f"output {k}")
                loop_shapes.append(shape[:len(shape) - len(core)])
        loop = _loop_shape(loop_shapes[:self.nin], loop_shapes[self.nin:])
        # Outputs: given ones (host or device), else new device arrays.
        out_devs, out_hosts = [], []
        for k, core in enumerate(b.outputs):
            if any(d not in sizes for d in core):
                raise MetalValueError(f"gufunc {self.__name__!r}: the size of output {k}'s core dimensions "
                                 f"{core} is not set by any input; pass the output array")
            shape = loop + tuple(sizes[d] for d in core)
            dtype = sig[self.nin + k][0]
            if outputs is not None:
                dev, host = _check_out(outputs[k], shape, outputs[k].dtype, f"gufunc {self.__name__!r}")
                launch.any_device = launch.any_device or host is None
            else:
                dev, host = _allocation.device_array(shape, dtype, stream=stream), None
            out_devs.append(dev)
            out_hosts.append(host)
        # Inputs on the device, broadcast over the loop dimensions.
        operands, whole = [], []
        for k, (v, core) in enumerate(zip(inputs, b.inputs)):
            dtype, is_array = sig[k]
            if _is_scalar(v) and not core and not _arrays.is_device_array(v):
                v = np.asarray(v, dtype=dtype)
            dev = launch.device_operand(v, dtype)
            core_shape = tuple(sizes[d] for d in core)
            if dev.ndim > len(loop) + len(core):   # numba.cuda's pinned operand: outer shape (1,), no loop
                dev = dev.reshape(core_shape)
            dev = _arrays.broadcast_to(dev, loop + core_shape)
            if not core:
                dev = _arrays.with_unit_axis(dev)  # a () operand: a view of one element
            operands.append(dev)
            whole.append(not core and not is_array)
        outs = [_arrays.with_unit_axis(o) if not core else o for o, core in zip(out_devs, b.outputs)]
        nloop = math.prod(loop)
        if nloop and all(o.size for o in outs):
            casts = tuple(d.type for d, _ in sig[:self.nin])
            kernel = self._kernel(len(loop), tuple(whole), casts)
            kernel[(nloop + THREADS - 1) // THREADS, THREADS, stream](*operands, *outs, nloop)
        results = [_finish(launch, d, h, d.shape) for d, h in zip(out_devs, out_hosts)]
        return results[0] if self.nout == 1 else tuple(results)

    def _kernel(self, loop_ndim, whole, casts):
        key = (loop_ndim, whole, casts)
        kernel = self._kernels.get(key)
        if kernel is None:
            with self._lock:
                kernel = self._kernels.get(key)
                if kernel is None:
                    kernel = _gufunc_kernel(self._devfn, self.nin, self.nout, loop_ndim, whole, casts)
                    self._kernels[key] = kernel
        return kernel


def _loop_shape(input_outer, output_outer) -> tuple:
    """The loop dimensions of a gufunc call. numba.cuda's rule first: the largest outer shape of the
    inputs, the others equal to it or "pinned" (``()`` or ``(1,)``: the same operand for every iteration);
    where that rule fails, NumPy's broadcasting of every operand's outer shape."""
    if input_outer:
        largest = max(input_outer, key=math.prod)
        if (all(shape == largest or shape in ((), (1,)) for shape in input_outer)
                and all(shape == largest for shape in output_outer)):
            return largest
    return np.broadcast_shapes(*input_outer, *output_outer)


def _positional(n: int) -> str:
    return f"{n} positional argument{'s' * (n != 1)}"


def _bind(sizes, core, shape, name, what):
    for d, n in zip(core, shape):
        if sizes.setdefault(d, n) != n:
            raise MetalValueError(f"gufunc {name!r}: {what} has size {n} for core dimension {d!r}, which is "
                             f"{sizes[d]} elsewhere")


__all__ = ["MetalVectorize", "MetalUFunc", "MetalGUVectorize", "MetalGUFunc", "vectorize", "guvectorize"]


def vectorize(*args, **kwargs):
    """``numba.vectorize`` with ``target='metal'`` (numba.cuda's ``cuda.vectorize``).

    Raises:
        MetalTypeError: ``cache=True``.
        KeyError: a target option other than ``nopython``, ``fastmath`` and ``debug`` (numba.cuda's error).
        NumbaMetalError: a signature with another number of inputs than the function; when the ufunc is called:
            an ``out`` of another shape or dtype, or not an array.
        MetalTypeError: when the ufunc is called: another number of inputs, or no signature matching them
            (numba.cuda raises a ``TypeError``).
        MetalValueError: ``.reduce`` of an empty array for a ufunc without an identity.
        UnsupportedFeatureError, KernelCompilationError: as ``Dispatcher``.
        UnsupportedPlatformError, MetalRuntimeError: as ``device_array``.
    """
    import numba
    kwargs.setdefault("target", "metal")
    return numba.vectorize(*args, **kwargs)


def guvectorize(*args, **kwargs):
    """``numba.guvectorize`` with ``target='metal'`` (numba.cuda's ``cuda.guvectorize``).

    Raises:
        MetalTypeError: ``cache=True``, ``writable_args``, ``nopython=False`` or an unsupported target option; a
            signature returning a value; when called, an input that only a cast would fit, no signature
            matching the inputs, or the outputs of a gufunc without signatures not passed (numba.cuda raises a
            ``TypeError``).
        NumbaMetalError: a layout or signature whose number of operands differs from the function's.
        MetalValueError: when called: ``out`` given both positionally and as a keyword, inputs with fewer
            dimensions than their core dimensions, or core dimensions of different sizes.
        UnsupportedFeatureError, KernelCompilationError: as ``Dispatcher``.
        UnsupportedPlatformError, MetalRuntimeError: as ``device_array``.
    """
    import numba
    kwargs.setdefault("target", "metal")
    return numba.guvectorize(*args, **kwargs)

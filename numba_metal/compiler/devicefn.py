"""Device functions as the compiler sees them: typed per tuple of argument types, callable from
kernels through a Numba typing template, never recursive.

A device function is specialised on its arguments' types as the caller's type inference gives them,
literals included, as Numba's dispatcher types do for a jitted callee (``types.Dispatcher`` asks its
dispatcher to compile for the argument types it is given, and numba-cuda's ``CUDADispatcher
.get_call_template`` compiles the device function for them): a constant shape or a flag passed by a
kernel reaches the device function as a compile-time constant (``Literal[int](32)``), and a function
passed to it (another device function, ``metal.atomic.add``, a dtype such as ``metal.uint32``) is its
type, known at compile time, never a run-time value.
"""

from __future__ import annotations

import inspect
import threading

from numba_metal.errors import KernelCompilationError, UnsupportedFeatureError

from . import captures

_in_progress = threading.local()


class DeviceFunctionBase:
    """What the compiler needs of a device function: ``py_func`` and typing per argument types.

    The host API's ``@metal.jit(device=True)`` objects derive from this.
    """

    _metal_device_function_ = True   # how captures.py recognises one without importing this module

    def __init__(self, pyfunc):
        self.py_func = pyfunc
        self.__name__ = getattr(pyfunc, "__name__", "device_function")
        self._typed: dict = {}
        self._typing_lock = threading.RLock()
        self._numba_type = None
        self._pysig = None

    def __repr__(self) -> str:
        return f"<numba_metal device function {self.__name__}>"

    def typed(self, argtypes):
        """The typed IR of this function for ``argtypes`` (typed once per tuple of types)."""
        from .frontend import source_location
        argtypes = tuple(argtypes)
        tf = self._typed.get(argtypes)
        if tf is not None:
            return tf
        stack = getattr(_in_progress, "stack", None)
        if stack is None:
            stack = _in_progress.stack = []
        if any(f is self for f in stack):
            chain = " -> ".join([f.__name__ for f in stack] + [self.__name__])
            raise UnsupportedFeatureError(f"recursion is not supported in Metal kernels ({chain}); "
                                          "rewrite it as a loop", source_location(self.py_func))
        stack.append(self)
        try:
            with self._typing_lock:
                tf = self._typed.get(argtypes)
                if tf is None:
                    tf = infer(self.py_func, argtypes)
                    self._typed[argtypes] = tf
        finally:
            stack.pop()
        return tf

    def call_argtypes(self, argtypes: tuple) -> tuple:
        """The argument types a call with ``argtypes`` is typed (and its arguments cast) for: the call's own,
        unless the device function restricts itself to explicit signatures (host/dispatcher.py)."""
        return argtypes

    def fold(self, args, kws, omitted, packed) -> tuple:
        """The arguments of a call (types or values) in the order of the function's parameters, bound as
        Python binds them (keywords by name): an omitted parameter with a default as ``omitted(default)``,
        and the extra positional arguments of a ``*args`` parameter as ``packed(tuple of them)`` (Numba's
        fold_arguments, as its dispatchers fold the arguments of a call of a jitted function); the captured
        arrays a call passes as hidden keywords (captures.HIDDEN_KEYWORD) come last, in their order."""
        from numba.core.typing.templates import fold_arguments
        if self._pysig is None:
            self._pysig = inspect.signature(self.py_func)
        hidden = tuple(v for k, v in kws.items() if captures.is_hidden_keyword(k))   # captured arrays, last
        kws = {k: v for k, v in kws.items() if not captures.is_hidden_keyword(k)}
        try:
            self._pysig.bind(*args, **kws)
        except TypeError as e:
            raise KernelCompilationError(f"{self.__name__}{self._pysig} cannot be called with "
                                         f"{len(args)} positional argument(s)"
                                         f"{' and the keyword(s) ' + ', '.join(kws) if kws else ''}: {e}") from None
        return tuple(fold_arguments(self._pysig, args, kws, lambda i, p, v: v, lambda i, p, d: omitted(d),
                                    lambda i, p, vs: packed(tuple(vs)))) + hidden

    def typed_functions(self) -> list:
        """The typed IR of every tuple of argument types this function has been typed for so far."""
        return list(self._typed.values())

    @property
    def _numba_type_(self):
        # Numba's typeof asks objects it has no rule for for this attribute.
        if self._numba_type is None:
            self._numba_type = _device_function_type(self)
        return self._numba_type


_of_jitted: dict = {}   # Python function of a Numba @jit function -> its device function


def device_function_of(fn) -> DeviceFunctionBase:
    """The device function a kernel calls for ``fn``: a function defined inside a kernel or device function
    (a closure, made into a Python function by the front end), or a function another decorator jitted
    (``numba.jit``, ``numba.njit``), compiled from its Python function for Metal, as numba.cuda's kernels
    call ``@jit`` functions. A jitted function has one device function (typed once per argument types)."""
    pyfunc = getattr(fn, "py_func", None)
    if pyfunc is None:
        return DeviceFunctionBase(fn)
    devfn = _of_jitted.get(pyfunc)
    if devfn is None:
        devfn = _of_jitted.setdefault(pyfunc, DeviceFunctionBase(pyfunc))
    return devfn


def infer(pyfunc, argtypes, **options):
    """``frontend.infer_types`` of a kernel or device function, whose closures and calls of Numba @jit
    functions become device functions (:func:`device_function_of`)."""
    from .frontend import infer_types
    return infer_types(pyfunc, argtypes, device_function=device_function_of, **options)


def _device_function_type(devfn):
    from numba.core import types
    from numba.core.typing.templates import AbstractTemplate, signature

    class DeviceFunctionTemplate(AbstractTemplate):
        key = devfn
        prefer_literal = True   # typed for the literal argument types first (see the module's text)

        def generic(self, args, kws):
            # Strings are not compile-time constants of numba-metal (kernels have no strings): typed as before.
            args = tuple(types.unliteral(a) if isinstance(a, types.StringLiteral) else a for a in args)
            kws = {k: types.unliteral(a) if isinstance(a, types.StringLiteral) else a for k, a in kws.items()}
            argtypes = devfn.call_argtypes(devfn.fold(args, kws, types.Omitted, types.StarArgTuple))
            tf = devfn.typed(argtypes)
            return signature(tf.return_type, *argtypes)

    DeviceFunctionTemplate.__name__ = f"DeviceFunction_{devfn.__name__}"
    return types.Function(DeviceFunctionTemplate)

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

import threading

from numba_metal.errors import UnsupportedFeatureError

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

    def typed(self, argtypes):
        """The typed IR of this function for ``argtypes`` (typed once per tuple of types)."""
        from .frontend import infer_types, source_location
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
                    tf = infer_types(self.py_func, argtypes)
                    self._typed[argtypes] = tf
        finally:
            stack.pop()
        return tf

    def typed_functions(self) -> list:
        """The typed IR of every tuple of argument types this function has been typed for so far."""
        return list(self._typed.values())

    @property
    def _numba_type_(self):
        # Numba's typeof asks objects it has no rule for for this attribute.
        if self._numba_type is None:
            self._numba_type = _device_function_type(self)
        return self._numba_type


def _device_function_type(devfn):
    from numba.core import types
    from numba.core.typing.templates import AbstractTemplate, signature

    class DeviceFunctionTemplate(AbstractTemplate):
        key = devfn
        prefer_literal = True   # typed for the literal argument types first (see the module's text)

        def generic(self, args, kws):
            if kws:
                raise UnsupportedFeatureError(f"keyword arguments to device function {devfn.__name__}() "
                                              "are not supported; pass them positionally")
            argtypes = tuple(args)
            tf = devfn.typed(argtypes)
            return signature(tf.return_type, *argtypes)

    DeviceFunctionTemplate.__name__ = f"DeviceFunction_{devfn.__name__}"
    return types.Function(DeviceFunctionTemplate)

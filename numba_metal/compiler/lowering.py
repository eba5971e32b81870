"""The registry of MSL lowerings for calls, attributes and values, filled by the kernel-API families.

A call lowering receives the :class:`~numba_metal.compiler.codegen.FunctionLowering` of the function
being lowered (``lc``), the Numba signature of the call and the already-lowered argument values, and
returns a ``Value``: an MSL expression and its Numba type.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from numba.core import types


class Value(NamedTuple):
    """An MSL expression and the Numba type it has."""

    expr: str
    type: types.Type


class LoweringRegistry:
    def __init__(self):
        self.calls: dict[object, Callable] = {}
        self.attributes: dict[tuple[type, str], Callable] = {}
        self.values: dict[int, tuple[object, Callable]] = {}
        self.methods: dict[tuple[type, str], Callable] = {}
        self.bounds: dict[object, Callable] = {}
        self.barriers: dict[object, bool] = {}
        self.rewrites: dict[object, list] = {}
        self.readers: set = set()

    def call(self, *keys):
        """Register a lowering for calls of the given Python objects (stubs, builtins, functions)."""
        def decorate(fn):
            for key in keys:
                self.calls[key] = fn
            return fn
        return decorate

    def attribute(self, type_class: type, *attrs: str):
        """Register a lowering for ``value.attr`` where the value's Numba type is a ``type_class``."""
        def decorate(fn):
            for attr in attrs:
                self.attributes[(type_class, attr)] = fn
            return fn
        return decorate

    def method(self, type_class: type, *names: str):
        """Register a lowering for calls ``value.name(...)`` where the value's Numba type is a ``type_class``
        (it receives ``lc, sig, receiver, args``)."""
        def decorate(fn):
            for name in names:
                self.methods[(type_class, name)] = fn
            return fn
        return decorate

    def bound(self, *keys):
        """Register the range of what the kernel API gives: a call of a stub (key: the stub), an attribute
        (key: ``(type class, name)``) or a value (key: the object). ``fn(ty)`` (``ty``: the result's type, or
        for an attribute its base's) returns the largest value it can be (it is never negative), a tuple of
        them for a tuple, or None. The value-range analysis (ranges.py) reads them."""
        def decorate(fn):
            for key in keys:
                self.bounds[key] = fn
            return fn
        return decorate

    def find_bound(self, key):
        try:
            return self.bounds.get(key)
        except TypeError:  # an unhashable object has no registered bound
            return None

    def barrier(self, *keys, narrowable: bool):
        """Register calls of these stubs as threadgroup barriers: ``narrowable`` if the barrier may fence
        threadgroup memory only where no device-memory access needs it (barriers.py decides), else one
        that always fences device memory too."""
        for key in keys:
            self.barriers[key] = narrowable

    def barrier_kind(self, key):
        """True (a narrowable barrier), False (a barrier that always fences device memory) or None."""
        try:
            return self.barriers.get(key)
        except TypeError:
            return None

    def rewrite(self, *operators_):
        """Register a rewrite of binary operations ``operators_`` (``operator.add``...): ``fn(lc, expr)``
        returns the ``Value`` of the whole expression when it recognises it (it must mean the same), else
        None and the operator's own lowering runs."""
        def decorate(fn):
            for op in operators_:
                self.rewrites.setdefault(op, []).append(fn)
            return fn
        return decorate

    def reads_only(self, *keys):
        """Register calls of these stubs as reading, never writing, the arrays they receive (the write analysis,
        effects.py, counts any other call receiving an array as a write)."""
        self.readers.update(keys)

    def only_reads(self, key) -> bool:
        try:
            return key in self.readers
        except TypeError:
            return False

    def find_rewrites(self, op) -> list:
        return self.rewrites.get(op, [])

    def find_method(self, ty, name):
        for cls in type(ty).__mro__:
            fn = self.methods.get((cls, name))
            if fn is not None:
                return fn
        return None

    def value(self, *objs):
        """Register a lowering for reading a kernel-API value (e.g. ``metal.laneid``)."""
        def decorate(fn):
            for obj in objs:
                self.values[id(obj)] = (obj, fn)
            return fn
        return decorate

    def find_value(self, obj):
        entry = self.values.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        return None

    def find_call(self, obj):
        try:
            return self.calls.get(obj)
        except TypeError:  # an unhashable object is no registered function
            return None

    def find_attribute(self, ty, attr):
        for cls in type(ty).__mro__:
            fn = self.attributes.get((cls, attr))
            if fn is not None:
                return fn
        return None


registry = LoweringRegistry()

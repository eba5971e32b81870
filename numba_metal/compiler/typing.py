"""Numba typing for numba-metal: the ``metal`` hardware target and its typing context.

The context knows Numba's core typing (operators, builtins, arrays, ``range``, NumPy scalar
constructors) and numba-metal's own declarations in :data:`.declarations.registry`, which the
kernel-API families fill (each family declares its functions' types next to their MSL lowering; the
``math`` module's come from its table). It is created on the first compile, never at import time:
building it imports the kernel API, the one place the compiler reaches up to the kernel language
(docs/architecture.md). The families import only the leaf registries, never this module, so that
edge closes no cycle.
"""

from __future__ import annotations

import threading
import types as pytypes

from numba.core import types
from numba.core import errors as numba_errors
from numba.core.target_extension import GPU, dispatcher_registry, jit_registry, target_override, target_registry
from numba.core.typing.context import BaseContext

from .arraytypes import MetalArray, MetalRecord, in_space
from .declarations import registry


class MetalHardware(GPU):
    """Numba's view of numba-metal's hardware target (``target='metal'``)."""


def _overload_jit(*args, **kwargs):
    # Numba implements some functions with @overload, compiling their Python implementation with
    # the target's jit. numba-metal has no such jit: refuse as a typing failure (a NumbaError), so
    # that Numba tries the function's other typing templates and otherwise reports this message.
    raise numba_errors.UnsupportedError(
        "this function is implemented in Numba with @overload, which numba-metal kernels do not support")


if "metal" not in target_registry:
    target_registry["metal"] = MetalHardware
class _NoDispatcher:
    """Numba's @intrinsic implementations ask the target's dispatcher for a lowering registry;
    numba-metal lowers to MSL itself, so they are refused the same way as @overload ones.

    @overload_method and @overload_attribute templates ask for that registry too, when a typing
    context installs them (which happens when Numba's CPU target was set up first, e.g. by an
    earlier @numba.njit call); they get a registry nobody reads, and are refused later, at typing,
    by ``_overload_jit``."""

    @property
    def targetdescr(self):
        import sys
        if sys._getframe(1).f_locals.get("reason") != "intrinsic":
            return _UNUSED_LOWERING
        raise numba_errors.UnsupportedError(
            "this function is implemented in Numba as an @intrinsic, which numba-metal kernels do not support")


class _UnusedLowering:
    """A target description whose lowering registry is never read (see ``_NoDispatcher``)."""

    def __init__(self):
        from types import SimpleNamespace

        from numba.core.imputils import Registry
        self.target_context = SimpleNamespace(refresh=lambda: None,
                                              _registries={Registry("numba-metal (unused)"): None})


_UNUSED_LOWERING = _UnusedLowering()


if MetalHardware not in jit_registry:
    jit_registry[MetalHardware] = _overload_jit
if MetalHardware not in dispatcher_registry:
    dispatcher_registry[MetalHardware] = _NoDispatcher()

class MetalTypingContext(BaseContext):
    """Typing context of numba-metal kernels and device functions."""

    def load_additional_registries(self):
        from numba.core.typing import enumdecl

        from numba_metal import kernel_api
        kernel_api.families()  # each family fills the typing and lowering registries when imported
        self.install_registry(registry)
        self.install_registry(enumdecl.registry)  # Enum and IntEnum classes and members

    def can_convert(self, fromty, toty):
        # A record copied between address spaces (arraytypes.MetalRecord): asked of the MetalRecord
        # only, since Numba's Record would take it for a wider record ("width subtyping", with a warning).
        if isinstance(toty, MetalRecord) and fromty != toty and toty.same_record(fromty):
            return toty.can_convert_from(self, fromty)
        return super().can_convert(fromty, toty)

    def resolve_value_type(self, val):
        # Numba's typeof has no rule for modules, builtin functions, kernel-API stubs or builtin classes
        # such as ``bool`` (which every ``if`` calls), and its fallbacks for them import cffi's C parser
        # and compile numba.typed: a third of a second of the first compile in a process, for checks
        # that cannot succeed on these values. Answer those values as Numba would without the checks.
        ty = self._registered_value_type(val)
        return _constant_array(ty if ty is not None else super().resolve_value_type(val))

    def resolve_module_constants(self, typ, attr):
        # An array reached as a module's attribute (``module.ARR``) is a constant baked into the kernel, as
        # a global array is.
        return _constant_array(super().resolve_module_constants(typ, attr))

    def _registered_value_type(self, val):
        """The type Numba's resolve_value_type gives ``val`` when its typeof rules cannot apply (then
        Numba uses the registered globals, and modules are Module types), else None (ask Numba)."""
        cls = type(val)
        if cls is type:
            # _typeof_type answers only for exceptions, named tuples, NumPy scalar classes, Numba types
            # and numba.typed containers; a builtin class is none of them.
            if val.__module__ != "builtins" or issubclass(val, BaseException):
                return None
        else:
            ruleless = _ruleless_classes.get(cls)
            if ruleless is None:
                ruleless = _ruleless_classes[cls] = _has_no_typeof_rule(cls)
            if not ruleless or getattr(val, "_numba_type_", None) is not None:
                return None
        ty = self._lookup_global(val)
        if ty is None and isinstance(val, pytypes.ModuleType):
            ty = types.Module(val)
        return ty


_ruleless_classes: dict = {}


def _has_no_typeof_rule(cls) -> bool:
    """True if Numba's typeof of an instance of ``cls`` can only come from ``_numba_type_``: no typeof rule
    is registered for the class and it is one known to have no buffer protocol and not to be a cffi
    object (modules, functions, builtin functions, numba-metal's kernel-API objects)."""
    from numba.core.typing.typeof import typeof_impl
    if typeof_impl.dispatch(cls) is not typeof_impl.dispatch(object):
        return False
    return (cls in (pytypes.ModuleType, pytypes.BuiltinFunctionType, pytypes.FunctionType)
            or cls.__module__.split(".", 1)[0] == "numba_metal")


class _TargetContextStub:
    """What Numba's type inference needs of a target context: the target, and no NRT.

    numba-metal never lowers to LLVM, so it never builds Numba's (costly) CPU target context.
    """

    target = MetalHardware
    enable_nrt = False


TARGET_CONTEXT = _TargetContextStub()

_context: MetalTypingContext | None = None
_context_lock = threading.Lock()


def typing_context() -> MetalTypingContext:
    """The process-wide typing context, created on first use."""
    global _context
    if _context is None:
        with _context_lock:
            if _context is None:
                typingctx = MetalTypingContext()
                with target_override("metal"):
                    typingctx.refresh()
                _context = typingctx
    return _context


__all__ = ["MetalHardware", "MetalTypingContext", "TARGET_CONTEXT", "typing_context", "types"]


def _constant_array(ty):
    """A global array (or a module's) is baked into the kernel as a C-contiguous ``constant`` array
    (constants.py): its type says so, so that it is never taken for a read-only ``device`` argument."""
    if type(ty) is types.Array:
        return MetalArray(in_space(ty.dtype, "constant"), ty.ndim, "C", "constant", readonly=True)
    return ty

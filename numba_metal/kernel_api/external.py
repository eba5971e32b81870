"""Hand-written MSL called from kernels: ``metal.declare_device(name, sig, link=[...])``, in the place of
numba.cuda's ``cuda.declare_device`` with PTX or CUDA C linking.

``declare_device("mul_add", "float32(float32, float32, float32)", link=["ops.metal"])`` returns a function
kernels and device functions call like any other; the call is the MSL function ``name`` with the
signature's types, and each ``.metal`` file of ``link`` is placed once, verbatim, before the generated
functions of every kernel that calls it (the file is read when the kernel compiles). The file must
define ``name`` as a plain MSL function of those types (``float mul_add(float a, float b, float c)``);
MSL's standard library is already included. Mistakes are named early: a missing file, a name that is
not an MSL identifier or that no linked file defines, a signature that is not a Numba one. Kernels that
call such a function are not kept in the disk cache (it cannot see an edit of the linked file).
"""

from __future__ import annotations

import os
import re

from numba.core import sigutils, types
from numba.core.typing.templates import ConcreteTemplate

from numba_metal.compiler import msl
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.errors import NumbaMetalError, UnsupportedFeatureError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ExternalFunction:
    """A function defined in hand-written MSL, declared with :func:`declare_device`."""

    # The MSL name is ``msl_name``, not ``name``: the disk cache fingerprints kernel-API objects by their
    # name, which would miss an edit of a linked file; without one, kernels calling this are not cached.
    def __init__(self, name: str, sig, link: tuple):
        self.msl_name = name
        self.sig = sig
        self.link = link
        self._type = None

    def __call__(self, *args, **kwargs):
        raise NumbaMetalError(f"{self.msl_name}() is an MSL function declared with metal.declare_device: it can "
                              "only be called inside a @metal.jit kernel or device function")

    def __repr__(self):
        return f"<numba_metal external MSL function {self.msl_name}{self.sig.args} -> {self.sig.return_type}>"

    def sources(self) -> list[tuple[str, str]]:
        """(path, text) of each linked file, read now."""
        found = []
        for path in self.link:
            try:
                with open(path, encoding="utf-8") as f:
                    found.append((path, f.read()))
            except OSError as e:
                raise NumbaMetalError(f"metal.declare_device({self.msl_name!r}): cannot read the linked file "
                                      f"{path!r} ({e.strerror})") from None
        return found

    @property
    def _numba_type_(self):
        # Numba's typeof asks objects it has no rule for for this attribute.
        if self._type is None:
            template = type(f"External_{self.msl_name}", (ConcreteTemplate,), {"key": self, "cases": [self.sig]})
            self._type = types.Function(template)
        return self._type


def declare_device(name, sig, link=None, use_cooperative=False):
    """A function defined in hand-written MSL (the ``.metal`` files of ``link``) that kernels may call,
    with the Numba signature ``sig`` (a string such as ``"float32(float32, float32)"`` or a signature).
    ``use_cooperative`` (numba.cuda's cooperative-groups launch) has no Metal counterpart.

    Raises:
        UnsupportedFeatureError: ``use_cooperative=True`` (Metal has no cooperative launch).
        NumbaMetalError: ``name`` is not an identifier; ``sig`` is not a signature or has no return type; no
            ``link`` files, a file that cannot be read, or none that defines ``name``.
    """
    if use_cooperative:
        raise UnsupportedFeatureError(f"metal.declare_device({name!r}, use_cooperative=True): Metal has no "
                                      "cooperative (grid-synchronising) launch")
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise NumbaMetalError(f"metal.declare_device: the name must be the MSL function's name (an identifier), "
                              f"not {name!r}")
    try:
        argtypes, restype = sigutils.normalize_signature(sig)
    except Exception as e:  # noqa: BLE001 - Numba raises several kinds for a bad signature
        raise NumbaMetalError(f"metal.declare_device({name!r}): {sig!r} is not a signature such as "
                              f"'float32(float32, float32)' ({e})") from None
    if restype is None:
        raise NumbaMetalError(f"metal.declare_device({name!r}): the signature needs a return type "
                              "(void for none), e.g. 'float32(float32, float32)'")
    if isinstance(link, (str, os.PathLike)):
        link = [link]
    link = tuple(os.fspath(p) for p in (link or ()))
    function = ExternalFunction(name, restype(*argtypes), link)
    call = re.compile(r"\b" + name + r"\s*\(")
    defined = [path for path, text in function.sources() if call.search(text)]
    if not link:
        raise NumbaMetalError(f"metal.declare_device({name!r}): pass link=[...], the .metal files defining "
                              f"{name} (@metal.jit(link=...) is not supported)")
    if not defined:
        raise NumbaMetalError(f"metal.declare_device({name!r}): none of the linked files {list(link)} defines "
                              f"an MSL function named {name}")
    lowering.call(function)(_lower_external)
    return function


def _lower_external(lc, sig, args):
    function = lc.callee
    for path, text in function.sources():
        lc.module.link(path, text)
    actual = [lc.cast(a, t) for a, t in zip(args, function.sig.args)]
    call = msl.call(function.msl_name, *actual)
    rt = function.sig.return_type
    if isinstance(rt, types.NoneType):
        lc.emit(msl.statement(call))
        return None
    return Value(call, rt)


__all__ = ["declare_device"]

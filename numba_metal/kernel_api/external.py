"""Hand-written MSL called from kernels: ``metal.declare_device(name, sig, link=[...])`` and
``@metal.jit(link=[...])``, in the place of numba.cuda's ``cuda.declare_device`` with PTX or CUDA C linking.

``declare_device("mul_add", "float32(float32, float32, float32)", link=["ops.metal"])`` returns a function
kernels and device functions call like any other; the call is the MSL function ``name`` with the
signature's types, and each ``.metal`` file of ``link`` is placed once, verbatim, before the generated
functions of every kernel that calls it (the file is read when the kernel compiles). As in numba.cuda, the
files may instead be linked by the kernel: ``declare_device("mul_add", sig)`` without ``link`` and
``@metal.jit(link=["ops.metal"])`` on each kernel that calls it (compiler/linking.py). The file must
define ``name`` as a plain MSL function of those types (``float mul_add(float a, float b, float c)``);
MSL's standard library is already included. Mistakes are named early: a missing file, CUDA code in
``link``, a name that is not an MSL identifier or that no linked file defines, a signature that is not a
Numba one. The disk cache keeps kernels that call such functions: it records the digest of each linked
file's contents and recompiles when one changes (host/cache.py).
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Hand-written MSL called from kernels"

import re

from numba.core import sigutils, types
from numba.core.typing.templates import ConcreteTemplate

from numba_metal.compiler import linking, msl
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.errors import MetalTypeError, NumbaMetalError, UnsupportedFeatureError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ExternalFunction:
    """A function defined in hand-written MSL, declared with :func:`declare_device`."""

    # The MSL name is ``msl_name``, not ``name``: the disk cache fingerprints kernel-API objects by their
    # name, which says nothing of the signature or the files; it fingerprints this one by all three
    # (``cache_fingerprint``) and checks the linked files' contents through the compiled kernel's record.
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

    def sources(self) -> list[tuple[str, str, str]]:
        """(path, text, digest) of each linked file, read now."""
        return [(path,) + linking.read(path, "metal.declare_device", self.msl_name) for path in self.link]

    def cache_fingerprint(self) -> str:
        """What the disk cache records of this function where a kernel names it (host/cache.py)."""
        return ":".join(["external", self.msl_name, str(self.sig), repr(list(self.link))])

    @property
    def _numba_type_(self):
        # Numba's typeof asks objects it has no rule for for this attribute.
        if self._type is None:
            template = type(f"External_{self.msl_name}", (ConcreteTemplate,), {"key": self, "cases": [self.sig]})
            self._type = types.Function(template)
        return self._type


def declare_device(name, sig, link=None, use_cooperative=False, abi="numba"):
    """A function defined in hand-written MSL (the ``.metal`` files of ``link``, or of the calling kernel's
    ``@metal.jit(link=...)``) that kernels may call, with the Numba signature ``sig`` (a string such as
    ``"float32(float32, float32)"`` or a signature). ``use_cooperative`` (numba.cuda's cooperative-groups
    launch) has no Metal counterpart. ``abi``: numba.cuda's ``"numba"`` or ``"c"``; MSL has one calling
    convention, so either way the MSL function takes the arguments and returns the result.

    Raises:
        UnsupportedFeatureError: ``use_cooperative=True`` (Metal has no cooperative launch); an ``abi`` other
            than ``"numba"`` or ``"c"``; CUDA code (``.cu``, ``.ptx``...) in ``link``.
        MetalTypeError: ``sig`` has no return type.
        NumbaMetalError: ``name`` is not an identifier; ``sig`` is not a signature; a ``link`` file that
            cannot be read, or none that defines ``name``.
    """
    if abi not in ("numba", "c"):
        raise UnsupportedFeatureError(f"metal.declare_device({name!r}, abi={abi!r}): the ABI is 'numba' or 'c' "
                                      "(numba.cuda's); both are a plain MSL function call")
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
        raise MetalTypeError(f"metal.declare_device({name!r}): Return type must be provided for device "
                             "declarations (numba.cuda's words): the signature needs a return type (void for none), "
                             "e.g. 'float32(float32, float32)'")
    link = linking.paths(link, "metal.declare_device", name)
    function = ExternalFunction(name, restype(*argtypes), link)
    if link and not any(_defines(text, name) for _, text, _ in function.sources()):
        raise NumbaMetalError(f"metal.declare_device({name!r}): none of the linked files {list(link)} defines "
                              f"an MSL function named {name}")
    lowering.call(function)(_lower_external)
    return function


def _defines(text: str, name: str) -> bool:
    return re.search(r"\b" + name + r"\s*\(", text) is not None


def _lower_external(lc, sig, args):
    function = lc.callee
    for path, text, digest in function.sources():
        lc.module.link(path, text, digest)
    if not function.link and not any(_defines(t, function.msl_name) for t in lc.module.linked_sources().values()):
        linked = list(lc.module.linked_sources())
        lc.error(f"{function.msl_name}() was declared with metal.declare_device without link=, and no file "
                 f"the kernel links ({linked or 'none'}) defines it: pass the .metal file defining it to "
                 "@metal.jit(link=[...]) of the kernel, or to declare_device(..., link=[...])")
    actual = [lc.cast(a, t) for a, t in zip(args, function.sig.args)]
    call = msl.call(function.msl_name, *actual)
    rt = function.sig.return_type
    if isinstance(rt, types.NoneType):
        lc.emit(msl.statement(call))
        return None
    return Value(call, rt)


__all__ = ["declare_device"]

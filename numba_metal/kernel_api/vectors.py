"""numba.cuda's vector types in kernels: ``metal.float32x4(x, y, z, w)``, ``metal.int32x2(...)``... and
CUDA's aliases (``metal.float4``, ``metal.int2``, ``metal.uchar4``, ``metal.double2``...), with
members ``.x .y .z .w``.

As numba.cuda's, a constructor takes any mix of scalars and smaller vectors of the same element type
whose sizes add up to its own (``float32x4(float32x2(a, b), c, d)``); scalars are converted to the
element type. The members are read-only. MSL spells them as its own vectors (``float4``) where it has
them (compiler/vectortypes.py).
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Vector types"

from numba.core import types
from numba.core.typing.templates import AttributeTemplate, ConcreteTemplate, signature

from numba_metal.compiler import msl
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.declarations import registry as typing
from numba_metal.compiler.vectortypes import ALIASES, VECTOR_TYPES, VectorType

from .stubs import Stub


def _compositions(n: int):
    """The ordered ways to write n as a sum of 1..n (a constructor's argument sizes)."""
    if n == 0:
        yield ()
        return
    for first in range(1, n + 1):
        for rest in _compositions(n - first):
            yield (first,) + rest


def _overloads(vty: VectorType):
    """numba.cuda's constructor signatures: each part of a composition is a vector of that size, or
    for size 1 also a scalar."""
    name = str(vty.element)
    cases = []
    for sizes in _compositions(vty.count):
        choices = [[]]
        for size in sizes:
            options = [VECTOR_TYPES[name + "x" + str(size)]] + ([vty.element] if size == 1 else [])
            choices = [c + [o] for c in choices for o in options]
        cases += [signature(vty, *c) for c in choices]
    return cases


_STUBS = {}
for _name, _vty in VECTOR_TYPES.items():
    _STUBS[_name] = Stub(_name, f"{_name}(...): a vector of {_vty.count} {_vty.element} (numba.cuda's vector type)")
    _STUBS[_name].vector_type = _vty
    _STUBS[_name].aliases = []      # numba.cuda's: the CUDA names of this constructor (``float4``...)
for _alias, _element in ALIASES.items():
    for _n in range(1, 5):
        _STUBS[_alias + str(_n)] = _STUBS[_element + "x" + str(_n)]
        _STUBS[_alias + str(_n)].aliases.append(_alias + str(_n))

# Numba registers a global by its module and name: each constructor is a module attribute.
globals().update(_STUBS)

for _name, _vty in VECTOR_TYPES.items():
    _template = type(f"Metal_{_name}", (ConcreteTemplate,), {"key": _STUBS[_name], "cases": _overloads(_vty)})
    typing.register_global(_STUBS[_name], types.Function(_template))


@typing.register_attr
class VectorAttributes(AttributeTemplate):
    key = VectorType

    def generic_resolve(self, ty, attr):
        if attr in ty.attributes:
            return ty.element
        return None


@lowering.call(*{id(s): s for s in _STUBS.values()}.values())
def _lower_constructor(lc, sig, args):
    vty = sig.return_type
    items = []
    for value, ty in zip(args, sig.args):
        ty = types.unliteral(ty)
        if isinstance(ty, VectorType):
            vector = lc.tmp(ty, lc.cast(value, ty)) if ty.count > 1 else value.expr
            items += [msl.member(vector, a) for a in ty.attributes]
        else:
            items.append(lc.cast(value, vty.element))
    if vty.native:
        return Value(msl.call(lc.msl_type(vty), *items), vty)
    return Value(msl.aggregate(lc.msl_type(vty), items), vty)


@lowering.attribute(VectorType, "x", "y", "z", "w")
def _lower_member(lc, base, attr, result_ty):
    return Value(msl.member(base.expr, attr), result_ty)


__all__ = list(_STUBS)

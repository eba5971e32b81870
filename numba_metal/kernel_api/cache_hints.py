"""numba.cuda's cache-hinted loads and stores (``ldca``, ``ldcg``, ``ldcs``, ``ldlu``, ``ldcv``,
``stcg``, ``stcs``, ``stwb``, ``stwt``), accepted so that tuned CUDA code ports.

The hints choose PTX cache operators (``ld.global.cg``...); MSL has no per-access cache control, so
on Metal each is the plain access it hints about: ``ldcg(a, i)`` is ``a[i]`` and ``stcg(a, i, v)`` is
``a[i] = v``, for an integer index or a tuple of them (one per axis), with the same bounds checks
under ``debug=True``. As in numba.cuda, the array must be a global (device) array.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Cache-hinted loads and stores"

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, signature

from numba_metal.compiler.arrays import load_element, store_element
from numba_metal.compiler.arraytypes import MetalArray
from numba_metal.compiler.lowering import registry as lowering
from numba_metal.compiler.declarations import registry as typing
from numba_metal.errors import UnsupportedFeatureError

from .stubs import Stub

LOADS = ("ldca", "ldcg", "ldcs", "ldlu", "ldcv")
STORES = ("stcg", "stcs", "stwb", "stwt")

for _name in LOADS:
    globals()[_name] = Stub(_name, f"{_name}(array, i): array[i] (numba.cuda's cache-hinted load; a plain load "
                                   "on Metal)")
for _name in STORES:
    globals()[_name] = Stub(_name, f"{_name}(array, i, value): array[i] = value (numba.cuda's cache-hinted "
                                   "store; a plain store on Metal)")


def _index_type(name, array, index):
    if isinstance(index, types.Integer):
        n = 1
    elif isinstance(index, types.BaseTuple) and all(isinstance(t, types.Integer) for t in index.types):
        n = len(index)
    else:
        raise UnsupportedFeatureError(f"metal.{name}: the index must be an integer or a tuple of integers, "
                                      f"not {index}")
    if n != array.ndim:
        raise UnsupportedFeatureError(f"metal.{name}: a {array.ndim}-d array needs {array.ndim} indices, got {n}")
    return index


def _template(name, store):
    class Template(AbstractTemplate):
        def generic(self, args, kws):
            want = 3 if store else 2
            if kws or len(args) != want:
                raise UnsupportedFeatureError(
                    f"metal.{name}({'array, i, value' if store else 'array, i'}) takes {want} positional arguments")
            array, index = types.unliteral(args[0]), types.unliteral(args[1])
            if not isinstance(array, types.Array) or isinstance(array, MetalArray):
                raise UnsupportedFeatureError(f"metal.{name} takes a device array (a kernel argument), not {array}")
            index = _index_type(name, array, index)
            if store:
                return signature(types.none, array, index, array.dtype)
            return signature(array.dtype, array, index)

    Template.__name__ = f"Metal_{name}"
    return Template


for _name in LOADS + STORES:
    typing.register_global(globals()[_name])(_template(_name, _name in STORES))


@lowering.call(*(globals()[n] for n in LOADS))
def _lower_load(lc, sig, args):
    return load_element(lc, args[0], args[1], "metal." + lc.callee.__name__)


@lowering.call(*(globals()[n] for n in STORES))
def _lower_store(lc, sig, args):
    store_element(lc, args[0], args[1], args[2], "metal." + lc.callee.__name__)
    return None


__all__ = list(LOADS + STORES)

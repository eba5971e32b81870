"""Thread indexing: where a thread is in the grid, its threadgroup and its SIMD group.

Metal names (``grid``, ``threadgroup_position``, ``thread_in_threadgroup``, ...) and numba.cuda's
(``threadIdx``, ``blockIdx``, ``blockDim``, ``gridDim``, ``laneid``, ``warpsize``) side by side. Each
stub's typing and MSL lowering is next to it. ``grid(n)``-style functions take a constant 1, 2 or 3
and return an int64 or a tuple of int64; the ``.x/.y/.z`` attributes are int32, as in numba.cuda.
"""

from __future__ import annotations

import operator

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Thread indexing"

from numba.core import ir, types
from numba.core.typing.templates import AbstractTemplate, AttributeTemplate, signature

from numba_metal.compiler import msl
from numba_metal.compiler.limits import MAX_GRID_THREADS_PER_AXIS, MAX_THREADGROUPS_PER_AXIS
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.declarations import registry as typing
from numba_metal.errors import LiteralRequiredError, UnsupportedFeatureError

from .stubs import Stub

WARP_SIZE = 32

# ---------------------------------------------------------------------------------------------
# grid(n)-style functions: (stub name, kernel-environment member, what it means)
# ---------------------------------------------------------------------------------------------

_POSITION_FUNCTIONS = (
    ("grid", "gid", "the thread's absolute position in the grid (blockIdx * blockDim + threadIdx)"),
    ("gridsize", "gsize", "the number of threads in the grid along each axis"),
    ("threadgroup_position", "tgid", "the threadgroup's position in the grid (numba.cuda: blockIdx)"),
    ("thread_in_threadgroup", "tid", "the thread's position in its threadgroup (numba.cuda: threadIdx)"),
    ("threads_per_threadgroup", "tsize", "the threadgroup's size (numba.cuda: blockDim)"),
    ("threadgroups_per_grid", "ngroups", "the grid's size in threadgroups (numba.cuda: gridDim)"),
)

grid = Stub("grid", "grid(ndim): " + _POSITION_FUNCTIONS[0][2])
gridsize = Stub("gridsize", "gridsize(ndim): " + _POSITION_FUNCTIONS[1][2])
threadgroup_position = Stub("threadgroup_position", "threadgroup_position(ndim): " + _POSITION_FUNCTIONS[2][2])
thread_in_threadgroup = Stub("thread_in_threadgroup", "thread_in_threadgroup(ndim): " + _POSITION_FUNCTIONS[3][2])
threads_per_threadgroup = Stub("threads_per_threadgroup",
                               "threads_per_threadgroup(ndim): " + _POSITION_FUNCTIONS[4][2])
threadgroups_per_grid = Stub("threadgroups_per_grid", "threadgroups_per_grid(ndim): " + _POSITION_FUNCTIONS[5][2])

_FIELD_OF = {grid: "gid", gridsize: "gsize", threadgroup_position: "tgid", thread_in_threadgroup: "tid",
             threads_per_threadgroup: "tsize", threadgroups_per_grid: "ngroups"}


def _ndim(stub, args, kws):
    if kws or len(args) != 1:
        raise UnsupportedFeatureError(f"metal.{stub.__name__}() takes one argument, the number of "
                                      "dimensions (a constant 1, 2 or 3)")
    (n,) = args
    if isinstance(n, types.IntegerLiteral):
        if n.literal_value in (1, 2, 3):
            return n.literal_value
        raise UnsupportedFeatureError(f"metal.{stub.__name__}({n.literal_value}): the number of "
                                      "dimensions must be 1, 2 or 3")
    raise LiteralRequiredError(f"metal.{stub.__name__}() needs a constant 1, 2 or 3 as its argument, not a "
                               f"run-time {n} (numba.cuda: RequireLiteralValue)")


def _position_template(stub):
    class PositionTemplate(AbstractTemplate):
        key = stub
        prefer_literal = True

        def generic(self, args, kws):
            n = _ndim(stub, args, kws)
            result = types.int64 if n == 1 else types.UniTuple(types.int64, n)
            return signature(result, *args)

    PositionTemplate.__name__ = f"Metal_{stub.__name__}"
    return PositionTemplate


for _stub in _FIELD_OF:
    typing.register_global(_stub, types.Function(_position_template(_stub)))


@lowering.call(*_FIELD_OF)
def _lower_position(lc, sig, args):
    n = sig.args[0].literal_value
    field = lc.env(_FIELD_OF[lc.callee])
    comps = [msl.cast("long", msl.member(field, c)) for c in "xyz"[:n]]
    if n == 1:
        return Value(comps[0], types.int64)
    rt = sig.return_type
    return Value(msl.aggregate(lc.msl_type(rt), comps), rt)


#: The largest value of each position function (the launch checks both limits; a threadgroup has far
#: fewer than 2**31 threads).
_BOUND_OF = {"gid": MAX_GRID_THREADS_PER_AXIS - 1, "gsize": MAX_GRID_THREADS_PER_AXIS,
             "tgid": MAX_THREADGROUPS_PER_AXIS - 1, "ngroups": MAX_THREADGROUPS_PER_AXIS,
             "tid": 2 ** 31 - 1, "tsize": 2 ** 31 - 1}


def _position_bound(stub):
    def bound(ty):
        top = _BOUND_OF[_FIELD_OF[stub]]
        return (top,) * len(ty) if isinstance(ty, types.BaseTuple) else top
    return bound


for _stub in _FIELD_OF:
    lowering.bound(_stub)(_position_bound(_stub))


# ---------------------------------------------------------------------------------------------
# numba.cuda's threadIdx / blockIdx / blockDim / gridDim with .x .y .z (int32)
# ---------------------------------------------------------------------------------------------


class Dim3Type(types.Type):
    """The type of ``metal.threadIdx`` and its kin: only their ``.x/.y/.z`` exist at run time."""

    compile_time_only = True

    def __init__(self, name: str, field: str):
        self.field = field
        super().__init__(name=f"metal.{name}")


class _Dim3:

    def __init__(self, name, doc):
        self._name = name
        self.__doc__ = doc

    def __repr__(self):
        return f"<numba_metal kernel value metal.{self._name}>"

    def __getattr__(self, attr):
        raise AttributeError(f"metal.{self._name}.{attr} is only available inside @metal.jit kernels")


threadIdx = _Dim3("threadIdx", "The thread's position in its threadgroup (.x, .y, .z; int32).")
blockIdx = _Dim3("blockIdx", "The threadgroup's position in the grid (.x, .y, .z; int32).")
blockDim = _Dim3("blockDim", "The threadgroup's size (.x, .y, .z; int32).")
gridDim = _Dim3("gridDim", "The grid's size in threadgroups (.x, .y, .z; int32).")

for _obj, _field in ((threadIdx, "tid"), (blockIdx, "tgid"), (blockDim, "tsize"), (gridDim, "ngroups")):
    typing.register_global(_obj, Dim3Type(_obj._name, _field))


@typing.register_attr
class Dim3Attributes(AttributeTemplate):
    key = Dim3Type

    def resolve_x(self, ty):
        return types.int32

    def resolve_y(self, ty):
        return types.int32

    def resolve_z(self, ty):
        return types.int32


@lowering.bound((Dim3Type, "x"), (Dim3Type, "y"), (Dim3Type, "z"))
def _dim3_bound(base_ty):
    return _BOUND_OF[base_ty.field]


def _dim3_field(lc, var):
    """(environment member, axis) of ``var`` if it is ``threadIdx.x`` and kin (through copies), else None."""
    d = lc.definition(var)
    if isinstance(d, ir.Expr) and d.op == "getattr" and d.attr in ("x", "y", "z"):
        base = lc.typemap.get(d.value.name)
        if isinstance(base, Dim3Type):
            return base.field, d.attr
    return None


@lowering.rewrite(operator.add)
def _grid_position(lc, expr):
    """``blockIdx.d * blockDim.d + threadIdx.d`` (numba.cuda's definition of ``grid(1)``, in any order) is
    the thread's position in the grid, which Metal gives: one zero-extended ``uint`` instead of a 64-bit
    multiply and add (the value is the same: threadgroups are uniform)."""
    if types.unliteral(lc.typemap.get(expr.lhs.name)) != types.int32 and \
            types.unliteral(lc.typemap.get(expr.rhs.name)) != types.int32:
        return None
    for product, thread in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
        t = _dim3_field(lc, thread)
        p = lc.definition(product)
        if t is None or t[0] != "tid" or not (isinstance(p, ir.Expr) and p.op == "binop" and p.fn is operator.mul):
            continue
        factors = {_dim3_field(lc, p.lhs), _dim3_field(lc, p.rhs)}
        if factors == {("tgid", t[1]), ("tsize", t[1])}:
            return Value(msl.cast("long", msl.member(lc.env("gid"), t[1])), types.int64)
    return None


@lowering.attribute(Dim3Type, "x", "y", "z")
def _lower_dim3(lc, base, attr, result_ty):
    return Value(msl.cast("int", msl.member(lc.env(base.type.field), attr)), types.int32)


# ---------------------------------------------------------------------------------------------
# SIMD-group position: laneid / warpsize (numba.cuda) and simd_lane_id() / simd_group_id()
# ---------------------------------------------------------------------------------------------


class _LaneValue:

    def __init__(self, name, doc):
        self._name = name
        self.__doc__ = doc

    def __repr__(self):
        return f"<numba_metal kernel value metal.{self._name}>"


laneid = _LaneValue("laneid", "The thread's lane in its SIMD group, 0..31 (numba.cuda's laneid; int32).")
typing.register_global(laneid, types.int32)

#: Threads per SIMD group on Apple GPUs (numba.cuda's warpsize).
warpsize = WARP_SIZE


@lowering.bound(laneid)
def _laneid_bound(ty):
    return 2 ** 31 - 1   # an int32 lane number, never negative


@lowering.value(laneid)
def _lower_laneid(lc, ty):
    return Value(msl.cast("int", lc.env("lane")), types.int32)


simd_lane_id = Stub("simd_lane_id", "simd_lane_id(): the thread's lane in its SIMD group (uint32).")
simd_group_id = Stub("simd_group_id",
                     "simd_group_id(): the index of the thread's SIMD group in its threadgroup (uint32).")


class _SimdIdTemplate(AbstractTemplate):
    def generic(self, args, kws):
        if args or kws:
            raise UnsupportedFeatureError(f"metal.{self.key.__name__}() takes no arguments")
        return signature(types.uint32)


for _stub in (simd_lane_id, simd_group_id):
    typing.register_global(_stub, types.Function(type(f"Metal_{_stub.__name__}", (_SimdIdTemplate,),
                                                      {"key": _stub})))


@lowering.call(simd_lane_id)
def _lower_simd_lane_id(lc, sig, args):
    return Value(msl.cast("uint", lc.env("lane")), types.uint32)


@lowering.call(simd_group_id)
def _lower_simd_group_id(lc, sig, args):
    return Value(msl.cast("uint", lc.env("sgid")), types.uint32)


__all__ = ["grid", "gridsize", "threadgroup_position", "thread_in_threadgroup", "threads_per_threadgroup",
           "threadgroups_per_grid", "threadIdx", "blockIdx", "blockDim", "gridDim", "laneid", "warpsize",
           "simd_lane_id", "simd_group_id"]

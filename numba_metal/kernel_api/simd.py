"""SIMD-group (warp) functions: Metal's ``simd_*`` and numba.cuda's ``*_sync`` warp intrinsics.

A SIMD group is 32 threads on Apple GPUs. numba.cuda's functions take a ``mask`` of participating
lanes; Metal's SIMD functions always involve all active lanes, so only the full mask (0xffffffff) is
accepted, as a constant. Shuffles follow numba.cuda's (CUDA hardware's) rules for out-of-range lanes:
the lane, delta or xor mask is taken modulo 32 (its low 5 bits), and ``shfl_up/down_sync`` leave lanes
whose source is outside the SIMD group unchanged.
Reductions and scans take int32, uint32, float32, float16 and float64 (exact float64 through the
emulated library, in a fixed order; float32 in a kernel that computes float64 in float32, precision.py);
shuffles also take 64-bit integers and float64 (split into two 32-bit
shuffles) and booleans. ``match_any_sync``/``match_all_sync`` compare values as
bit patterns (PTX ``match.sync``) of any integer or float, with numba.cuda's int32 results;
``eq_sync`` and ``lanemask_lt`` are numba.cuda's.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "SIMD-group (warp) functions"

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, signature

from numba_metal.compiler import msl
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.declarations import registry as typing
from numba_metal.errors import UnsupportedFeatureError

from .stubs import Stub

FULL_MASK = 0xFFFFFFFF

_REDUCE = ("simd_sum", "simd_product", "simd_max", "simd_min", "simd_prefix_exclusive_sum",
           "simd_prefix_inclusive_sum")
_SHUFFLE = ("simd_shuffle", "simd_shuffle_up", "simd_shuffle_down", "simd_shuffle_xor", "simd_broadcast")
_VOTE = ("simd_all", "simd_any", "simd_ballot")

simd_sum = Stub("simd_sum", "simd_sum(x): sum of x over the active lanes of the SIMD group")
simd_product = Stub("simd_product", "simd_product(x): product of x over the SIMD group")
simd_max = Stub("simd_max", "simd_max(x): maximum of x over the SIMD group")
simd_min = Stub("simd_min", "simd_min(x): minimum of x over the SIMD group")
simd_prefix_exclusive_sum = Stub("simd_prefix_exclusive_sum", "sum of x over the lower lanes")
simd_prefix_inclusive_sum = Stub("simd_prefix_inclusive_sum", "sum of x over the lower lanes and this one")
simd_shuffle = Stub("simd_shuffle", "simd_shuffle(x, lane): x of the given lane")
simd_shuffle_up = Stub("simd_shuffle_up", "simd_shuffle_up(x, delta): x of lane - delta (unchanged below)")
simd_shuffle_down = Stub("simd_shuffle_down", "simd_shuffle_down(x, delta): x of lane + delta (unchanged above)")
simd_shuffle_xor = Stub("simd_shuffle_xor", "simd_shuffle_xor(x, mask): x of lane ^ mask")
simd_broadcast = Stub("simd_broadcast", "simd_broadcast(x, lane): x of the given lane, for every lane")
simd_all = Stub("simd_all", "simd_all(pred): pred is true on every active lane")
simd_any = Stub("simd_any", "simd_any(pred): pred is true on some active lane")
simd_ballot = Stub("simd_ballot", "simd_ballot(pred): uint64 bit mask of the lanes where pred is true")

shfl_sync = Stub("shfl_sync", "shfl_sync(mask, value, src_lane)")
shfl_up_sync = Stub("shfl_up_sync", "shfl_up_sync(mask, value, delta)")
shfl_down_sync = Stub("shfl_down_sync", "shfl_down_sync(mask, value, delta)")
shfl_xor_sync = Stub("shfl_xor_sync", "shfl_xor_sync(mask, value, lane_mask)")
all_sync = Stub("all_sync", "all_sync(mask, pred)")
any_sync = Stub("any_sync", "any_sync(mask, pred)")
ballot_sync = Stub("ballot_sync", "ballot_sync(mask, pred): uint32 bit mask")
activemask = Stub("activemask", "activemask(): uint32 mask of the active lanes")
eq_sync = Stub("eq_sync", "eq_sync(mask, pred): pred is the same on every active lane")
lanemask_lt = Stub("lanemask_lt", "lanemask_lt(): uint32 mask of the lanes below this one")
match_any_sync = Stub("match_any_sync", "match_any_sync(mask, value): int32 mask of the active lanes whose "
                                        "value has the same bits as this lane's")
match_all_sync = Stub("match_all_sync", "match_all_sync(mask, value): (int32 mask of the active lanes, True) "
                                        "if every active lane has the same value bits, else (0, False)")

_REDUCE_TYPES = (types.int32, types.uint32, types.float32, types.float16)
_CUDA_TO_METAL = {shfl_sync: "simd_shuffle", shfl_up_sync: "simd_shuffle_up",
                  shfl_down_sync: "simd_shuffle_down", shfl_xor_sync: "simd_shuffle_xor"}


def _value_type(name, ty, allowed):
    ty = types.unliteral(ty)
    if isinstance(ty, types.Integer) and ty.bitwidth < 32:
        return types.int32 if ty.signed else types.uint32
    if ty == types.float64:
        return types.float64   # lowered per kernel: exact (two 32-bit halves) or float32 (precision.py)
    if ty in allowed:
        return ty
    raise UnsupportedFeatureError(f"metal.{name}: values of type {ty} are not supported (use int32, uint32, "
                                  "float32 or float16)")


def _make_template(stub, kind):
    name = stub.__name__

    class Template(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            if kws:
                raise UnsupportedFeatureError(f"metal.{name}() takes positional arguments only")
            if kind == "reduce":
                if len(args) != 1:
                    raise UnsupportedFeatureError(f"metal.{name}(x) takes one argument")
                t = _value_type(name, args[0], _REDUCE_TYPES)
                return signature(t, t)
            if kind == "shuffle":
                if len(args) != 2:
                    raise UnsupportedFeatureError(f"metal.{name}(x, lane) takes two arguments")
                t = _value_type(name, args[0], _REDUCE_TYPES + (types.int64, types.uint64, types.boolean))
                return signature(t, t, types.uint32)
            if kind == "vote":
                if len(args) != 1:
                    raise UnsupportedFeatureError(f"metal.{name}(pred) takes one argument")
                return signature(types.uint64 if name == "simd_ballot" else types.boolean, types.boolean)
            if kind == "cuda_shuffle":
                if len(args) != 3:
                    raise UnsupportedFeatureError(f"metal.{name}(mask, value, lane) takes three arguments")
                t = _value_type(name, args[1], _REDUCE_TYPES + (types.int64, types.uint64, types.boolean))
                return signature(t, types.unliteral(args[0]), t, types.uint32)
            if kind == "cuda_vote":
                if len(args) != 2:
                    raise UnsupportedFeatureError(f"metal.{name}(mask, pred) takes two arguments")
                rt = types.uint32 if name == "ballot_sync" else types.boolean
                return signature(rt, types.unliteral(args[0]), types.boolean)
            if kind == "match":
                if len(args) != 2:
                    raise UnsupportedFeatureError(f"metal.{name}(mask, value) takes two arguments")
                t = types.unliteral(args[1])
                if not isinstance(t, (types.Integer, types.Float, types.Boolean)):
                    raise UnsupportedFeatureError(f"metal.{name}: values of type {t} are not supported (use an "
                                                  "integer or a float)")
                # numba.cuda's: an int32 mask, and for match_all_sync whether all values matched.
                rt = types.int32 if name == "match_any_sync" else types.Tuple((types.int32, types.boolean))
                return signature(rt, types.unliteral(args[0]), t)
            if kind == "activemask":
                if args:
                    raise UnsupportedFeatureError(f"metal.{name}() takes no arguments")
                return signature(types.uint32)
            raise AssertionError(kind)

    Template.__name__ = f"Metal_{name}"
    return types.Function(Template)


_KINDS = {}
for _n in _REDUCE:
    _KINDS[globals()[_n]] = "reduce"
for _n in _SHUFFLE:
    _KINDS[globals()[_n]] = "shuffle"
for _n in _VOTE:
    _KINDS[globals()[_n]] = "vote"
for _s in _CUDA_TO_METAL:
    _KINDS[_s] = "cuda_shuffle"
for _s in (all_sync, any_sync, ballot_sync, eq_sync):
    _KINDS[_s] = "cuda_vote"
for _s in (match_any_sync, match_all_sync):
    _KINDS[_s] = "match"
_KINDS[activemask] = "activemask"
_KINDS[lanemask_lt] = "activemask"

for _stub, _kind in _KINDS.items():
    typing.register_global(_stub, _make_template(_stub, _kind))


def require_full_mask(lc, name: str, index: int = 0) -> None:
    """numba.cuda masks: Metal's SIMD functions involve exactly the active lanes, so they honour the
    constant full mask and ``activemask()`` (the active lanes, by definition); nothing else."""
    if lc.argument_is_call_of(index, activemask):
        return
    try:
        value = lc.argument_value(index)
    except (UnsupportedFeatureError, AttributeError):  # a run-time mask cannot be checked
        lc.error(f"metal.{name}: the lane mask must be the constant 0xffffffff or metal.activemask(); "
                 "Metal's SIMD-group functions always involve every active lane")
    if value != FULL_MASK:
        lc.error(f"metal.{name}: mask {value!r} is not supported; Metal's SIMD-group functions always "
                 "involve every active lane, so only the full mask 0xffffffff (or metal.activemask()) is "
                 "accepted")


#: Prelude shuffles of 64-bit values (two 32-bit shuffles; MSL's SIMD functions exclude long).
_SHUFFLE_64 = {"simd_shuffle": "nm_simd_shuffle_64", "simd_shuffle_up": "nm_simd_shuffle_up_64",
               "simd_shuffle_down": "nm_simd_shuffle_down_64", "simd_shuffle_xor": "nm_simd_shuffle_xor_64",
               "simd_broadcast": "nm_simd_broadcast_64"}


def _shuffle(lc, fn: str, x: Value, lane_expr: str, t) -> Value:
    mt = lc.msl_type(t)
    if lc.is_float64(t):
        lc.need(_SHUFFLE_64[fn])
        bits = msl.member(lc.cast(x, t), msl.FLOAT64_BITS)
        return Value(lc.library_call("nm_f64_from_bits", msl.call(_SHUFFLE_64[fn], bits, lane_expr)), t)
    if t in (types.int64, types.uint64):
        lc.need(_SHUFFLE_64[fn])
        return Value(msl.cast(mt, msl.call(_SHUFFLE_64[fn], msl.reinterpret("ulong", x.expr), lane_expr)), t)
    if t == types.boolean:  # MSL shuffles no bool
        return Value(msl.cast("bool", msl.call(fn, msl.cast("uint", x.expr), lane_expr)), t)
    return Value(msl.call(fn, lc.cast(x, t), lane_expr), t)


def _lane(lc, value: Value) -> str:
    """A lane or xor mask as CUDA's shuffles take it: its low 5 bits."""
    return msl.cast("ushort", msl.binary("&", lc.cast(value, types.uint32), msl.uint_literal(31)))


def _ballot(predicate: str) -> str:
    """The SIMD group's ballot of ``predicate`` as a ulong bit mask."""
    return msl.cast("ulong", msl.static_cast("simd_vote::vote_t", msl.call("simd_ballot", predicate)))


_LOW_32_BITS = "0xffffffffu"


@lowering.call(*[globals()[n] for n in _REDUCE])
def _lower_reduce(lc, sig, args):
    t = sig.return_type
    if lc.is_float64(t):
        # The emulated library's: the halves shuffled, combined in a fixed order (float64.metal, f64_simd).
        lane = msl.cast("uint", lc.env("lane"))
        return Value(lc.library_call(f"nm_f64_{lc.callee.__name__}", lc.cast(args[0], t), lane), t)
    return Value(msl.call(lc.callee.__name__, lc.cast(args[0], t)), t)


@lowering.call(*[globals()[n] for n in _SHUFFLE])
def _lower_shuffle(lc, sig, args):
    stub = lc.callee
    if stub in (simd_shuffle_up, simd_shuffle_down):
        # A delta of 32 or more leaves every lane its own value, as CUDA's.
        lane = msl.cast("ushort", msl.call("min", lc.cast(args[1], types.uint32), msl.uint_literal(32)))
    else:
        lane = _lane(lc, args[1])
    return _shuffle(lc, stub.__name__, args[0], lane, sig.return_type)


@lowering.call(simd_all, simd_any)
def _lower_vote(lc, sig, args):
    return Value(msl.call(lc.callee.__name__, lc.cast(args[0], types.boolean)), types.boolean)


@lowering.call(simd_ballot)
def _lower_ballot(lc, sig, args):
    return Value(_ballot(lc.cast(args[0], types.boolean)), types.uint64)


@lowering.call(*_CUDA_TO_METAL)
def _lower_cuda_shuffle(lc, sig, args):
    stub = lc.callee
    require_full_mask(lc, stub.__name__)
    # As CUDA's shfl.sync: only the low 5 bits of the lane or delta count; a lane whose source is
    # outside the warp (shfl_up/down) keeps its own value.
    return _shuffle(lc, _CUDA_TO_METAL[stub], args[1], _lane(lc, args[2]), sig.return_type)


@lowering.call(all_sync, any_sync, ballot_sync, eq_sync)
def _lower_cuda_vote(lc, sig, args):
    stub = lc.callee
    require_full_mask(lc, stub.__name__)
    pred = lc.cast(args[1], types.boolean)
    if stub is ballot_sync:
        return Value(msl.cast("uint", msl.binary("&", _ballot(pred), _LOW_32_BITS)), types.uint32)
    if stub is eq_sync:
        pred = lc.tmp(types.boolean, pred)
        same = msl.binary("||", msl.call("simd_all", pred), msl.unary("!", msl.call("simd_any", pred)))
        return Value(same, types.boolean)
    return Value(msl.call("simd_all" if stub is all_sync else "simd_any", pred), types.boolean)


def _value_bits(lc, value: Value) -> str:
    """The bits of a match_*_sync value: a uint for 32 bits or fewer (narrow integers widened, which keeps
    equality), else a ulong."""
    t = types.unliteral(value.type)
    if isinstance(t, types.Boolean) or (isinstance(t, types.Integer) and t.bitwidth < 32):
        return msl.cast("uint", lc.cast(value, types.int32))
    return msl.reinterpret("uint" if lc.msl_type(t) in ("float", "int", "uint") else "ulong", value.expr)


@lowering.call(match_any_sync, match_all_sync)
def _lower_match(lc, sig, args):
    stub = lc.callee
    require_full_mask(lc, stub.__name__)
    lc.need("nm_match_any" if stub is match_any_sync else "nm_match_all")
    bits = _value_bits(lc, args[1])
    if stub is match_any_sync:
        return Value(msl.cast("int", msl.call("nm_match_any", bits, lc.env("lane"))), types.int32)
    mask = lc.tmp(types.uint32, msl.call("nm_match_all", bits))
    rt = sig.return_type
    return Value(msl.aggregate(lc.msl_type(rt), [msl.cast("int", mask), msl.binary("!=", mask, "0u")]), rt)


@lowering.call(lanemask_lt)
def _lower_lanemask_lt(lc, sig, args):
    below = msl.binary("-", msl.binary("<<", msl.uint_literal(1), lc.env("lane")), msl.uint_literal(1))
    return Value(below, types.uint32)


@lowering.call(activemask)
def _lower_activemask(lc, sig, args):
    active = msl.cast("ulong", msl.static_cast("simd_vote::vote_t", msl.call("simd_active_threads_mask")))
    return Value(msl.cast("uint", msl.binary("&", active, _LOW_32_BITS)), types.uint32)


__all__ = list(_REDUCE + _SHUFFLE + _VOTE) + ["shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync",
                                               "all_sync", "any_sync", "ballot_sync", "eq_sync", "activemask",
                                               "lanemask_lt", "match_any_sync", "match_all_sync"]

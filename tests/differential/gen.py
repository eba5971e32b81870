"""The random kernel generator.

One *batch* is one generated module: a few helper device functions, K generated *cases* and one
kernel that runs them all, so that one compile tests K generated functions. Cases 1..K-1 are
device functions the kernel calls; the last case is written inline at the end of the kernel body
(so kernel-level lowering is exercised too); case 0 is the kernel's own section (thread indexing,
threadgroup memory, barriers, atomics). Every case writes its results to its own slots of the
output arrays, so a mismatch names the case and the thread.

What it generates (see docs/testing.md for the complete list and what it leaves out, and why):
statements (assignments, augmented assignments, tuple swaps, if/elif/else, for over ranges and
tuples, while with a fuel counter or ``while True``, break/continue/loop-else at any depth,
early returns, also from inside loops), expressions over every scalar dtype (every operator,
comparisons and chains, and/or/not, conditional expressions, builtins, NumPy scalar casts, math
functions with domain-guarded arguments), arrays of every dtype in 1-D to 3-D with runtime sizes
(C, F and strided layouts), device functions returning scalars or tuples and calling each other,
per-thread local arrays, atomics with order-independent results, threadgroup memory with
barriers, and 1-D to 3-D launches whose threadgroups do not divide the data.

Soundness rules the generator keeps (the reference relies on them):
- a variable keeps one Numba type for its whole life (a reassignment converts explicitly), so
  Numba's type unification never changes what a value means;
- a variable is read only where it is definitely assigned;
- every float→int conversion is clamped into the target's range (NaN still reaches it);
- indices are reduced modulo the extent (sometimes negative, within one wrap);
- integer exponents are small; shift counts are usually masked (sometimes not: the MSL rule);
- loops are bounded (small ranges, fuel counters); barriers are reached by all threads;
  threads write only their own output slots and shared-memory cells, so there are no races;
- no operation has two literal operands (CPython would fold it in double precision).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from numba.core import types as T

from numba_metal.kernel_api.functions import INTEGERS, INTRINSICS as INTRINSICS_TABLE, LIBDEVICE as LIBDEVICE_TABLE
from numba_metal.kernel_api.functions import MATH as MATH_TABLE
from numba_metal.kernel_api.functions import argument_types as F_argument_types, result_type as F_result_type

from . import semantics as S

INTS = [T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint16, T.uint32, T.uint64]
FLOATS = [T.float16, T.float32, T.float64]
#: How the generated code converts to each type (``cast_src``). float64 is Python's float() (or a
#: product with 1.0): Numba types it float64 but it is no float64 *data* (np.float64 would be,
#: compiler/precision.py), so the kernels this generator writes compute float64 in float32, which the
#: oracle models; exact float64 has its own bit-exact differential test (test_float64_differential.py).
NP_NAME = {T.int8: "np.int8", T.int16: "np.int16", T.int32: "np.int32", T.int64: "np.int64",
           T.uint8: "np.uint8", T.uint16: "np.uint16", T.uint32: "np.uint32", T.uint64: "np.uint64",
           T.float16: "np.float16", T.float32: "np.float32", T.float64: "float",
           T.boolean: "np.bool_"}

def cast_src(t, src: str, src_ty) -> str:
    """Source converting ``src`` (of type ``src_ty``) to ``t``. float64 is reached without np.float64
    (see NP_NAME): Numba's float() gives float64 for integers, keeps float32 and refuses float16 and
    bool, so a float or bool is multiplied by the float64 literal 1.0 (exact, signed zeros kept)."""
    if t == T.float64 and not is_int(T.unliteral(src_ty)):
        return f"({src} * 1.0)"
    return f"{NP_NAME[t]}({src})"


#: float32 values bounding each integer type, exactly representable (clamp before converting).
CLAMP = {}
for _t in INTS:
    _lo, _hi = S.int_range(_t)
    _f = float(np.float32(_hi))
    while _f > _hi:
        _f = float(np.nextafter(np.float32(_f), np.float32(0)))
    CLAMP[_t] = (float(_lo), _f)


def is_int(t) -> bool:
    return isinstance(t, T.Integer)


def is_float(t) -> bool:
    return isinstance(t, T.Float)


def is_bool(t) -> bool:
    return isinstance(t, T.Boolean)


def is_num(t) -> bool:
    return isinstance(t, (T.Integer, T.Float, T.Boolean))


def kind_of(t) -> str:
    if is_bool(t):
        return "bool"
    if is_int(t):
        return "int"
    if is_float(t):
        return "float"
    return "other"


def fmt_float(v: float) -> str:
    if v != v:
        return "math.nan"
    if v in (float("inf"), float("-inf")):
        return "math.inf" if v > 0 else "(-math.inf)"
    s = repr(float(v))
    return f"({s})" if s.startswith("-") else s


@dataclass
class E:
    """A generated expression: Python source, its Numba type, whether it depends on a
    transcendental result (taint) and whether it is a literal constant."""

    src: str
    ty: object
    taint: bool = False
    const: bool = False


@dataclass
class Var:
    name: str
    ty: object
    mutable: bool = True


@dataclass
class Arr:
    name: str
    dtype: object
    ndim: int
    role: str  # "in", "out", "inout", "counter", "local", "shared"
    shape: tuple | None = None  # constant shape (local/shared arrays)


@dataclass
class Fn:
    name: str
    kind: str  # "helper", "case", "kernel"
    case: int = 0
    ret: object = None
    arrays: dict = field(default_factory=dict)
    scalars: list = field(default_factory=list)  # E leaves
    vars: list = field(default_factory=list)
    tainted: set = field(default_factory=set)
    loops: list = field(default_factory=list)
    budget: int = 20
    count: int = 0
    predicted: dict = field(default_factory=dict)
    helpers: list = field(default_factory=list)  # callable helpers (Helper)
    uses_atomics: bool = False

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"


@dataclass
class Helper:
    name: str
    params: list  # [(name, type or Arr)]
    ret: object


# -- the batch's fixed arguments -----------------------------------------------------------

INPUTS = [("A_f32", T.float32), ("A_i32", T.int32), ("A_i64", T.int64), ("A_u8", T.uint8),
          ("A_i8", T.int8), ("A_i16", T.int16), ("A_u16", T.uint16), ("A_u32", T.uint32),
          ("A_u64", T.uint64), ("A_f16", T.float16), ("A_b", T.boolean)]
MATRICES = [("M2", T.float32, 2), ("M3", T.int32, 3)]
INOUTS = [("W_i32", T.int32), ("W_f32", T.float32), ("W_u8", T.uint8), ("W_f16", T.float16),
          ("W_i64", T.int64)]
COUNTERS = [("ACNT", T.int32, 16), ("ACNTU", T.uint32, 4), ("ACNTF", T.float32, 2)]
SCALARS = [("nx", T.int64), ("ny", T.int64), ("nz", T.int64), ("s_i", T.int64), ("s_i32", T.int32),
           ("s_u16", T.uint16), ("s_f", T.float32), ("s_f32", T.float32), ("s_b", T.boolean),
           ("s_h", T.float16), ("s_t", T.UniTuple(T.int64, 2))]
INT_SLOTS = 6
CK_SLOT = INT_SLOTS - 1  # each case's control-flow checksum ``ck`` is written here
FLOAT_SLOTS = 6

#: ACNT slot -> atomic operation (one operation per slot keeps the final value order-independent).
ACNT_OPS = {0: "add", 1: "add", 2: "sub", 3: "add", 4: "max", 5: "max", 6: "min", 7: "min",
            8: "and_", 9: "or_", 10: "xor", 11: "xor", 12: "add", 13: "max", 14: "min", 15: "or_"}
ACNTU_OPS = {0: ("add", None), 1: ("max", None), 2: ("inc", 7), 3: ("dec", 5)}


def arg_names() -> list[str]:
    names = [n for n, _ in INPUTS] + [n for n, _, _ in MATRICES] + ["OI", "OF"]
    names += [n for n, _ in INOUTS] + [n for n, _, _ in COUNTERS] + [n for n, _ in SCALARS]
    return names


@dataclass
class Batch:
    """One generated module with everything needed to run it and its reference."""

    source: str
    kernel_name: str
    case_index: dict  # device-function case name -> case index
    inline_case: int | None
    inline_start: int
    ncases: int  # case slots, including slot 0 (the kernel section)
    griddim: tuple
    blockdim: tuple
    extent: tuple  # (nx, ny, nz)
    data_seed: int
    passing: dict  # array name -> "numpy" | "device" | "F" | "strided"
    lengths: dict  # input array name -> shape
    features: Counter
    atomic_cases: set
    predicted: dict  # function name -> {variable: type}
    generated_functions: int  # cases generated (the "kernels" this batch counts for)
    barrier_functions: list = field(default_factory=list)  # device functions with barriers

    @property
    def threads(self) -> int:
        return self.extent[0] * self.extent[1] * self.extent[2]


def _math_vocabulary(guards) -> dict:
    """name -> (arity, guard) of every function of numba-metal's math table with a floating-point result
    (or a tuple of them, read by item: math.frexp(x)[0], math.modf(x)[k])."""
    return {f.name: (f.arity, guards[f.name]) for f in MATH_TABLE
            if (f.result_for("float32") or "").startswith(("float", "Tuple(float"))}


class Generator:
    """Generates batches from a :class:`~.choosers.Chooser`."""

    MAX_DEPTH = 4
    MAX_LOOPS = 3

    def __init__(self, ch):
        self.ch = ch
        self.features: Counter = Counter()
        self.exact_only = False  # no transcendental values (sections every thread must agree on)
        self._reads = 0  # nesting of array reads inside index expressions
        self._helper_taint: dict = {}

    def feat(self, name: str) -> None:
        self.features[name] += 1

    def depth(self, lo: int = 1) -> int:
        """Expression depth for a statement: mostly 1 or 2 (compile time grows with size)."""
        return self.ch.weighted([(4, lo), (4, max(lo, 2)), (1, 3)])

    # =========================================================================================
    # expressions
    # =========================================================================================

    def lit(self, kind: str) -> E:
        ch = self.ch
        if kind == "bool":
            return E(ch.choice(["False", "True"]), T.boolean, const=True)
        if kind == "int":
            r = ch.int(0, 99)
            if r < 60:
                v = ch.int(-5, 12)
            elif r < 80:
                v = ch.choice([100, -100, 255, 256, 1000, -129, 65535, 31, 63, 64, 33])
            else:
                v = ch.choice([2 ** 31 - 1, -2 ** 31, 2 ** 32 - 1, 2 ** 63 - 1, -2 ** 63, 2 ** 40,
                               -2 ** 31 - 1, 2 ** 53 + 1])
            if ch.bool(0.2):
                t = ch.choice(INTS)
                lo, hi = S.int_range(t)
                v = min(max(v, lo), hi)
                return E(f"{NP_NAME[t]}({v})", t, const=True)
            return E(f"({v})" if v < 0 else str(v), T.int64, const=True)
        v = ch.choice([0.5, 1.0, 2.0, 1.5, -2.5, 0.1, 0.3, 3.0, 10.0, 0.25, -0.0, 0.0, 1e-3, 1e5,
                       -7.25, 100.0, 1e20, 3.4e38, 1e-30, -1.0, 0.7, 65504.0])
        if ch.bool(0.03):
            self.feat("float_special_literal")
            return E(ch.choice(["math.inf", "(-math.inf)", "math.nan"]), T.float64, const=True)
        if ch.bool(0.25):
            t = ch.choice([T.float32, T.float16, T.float64])
            return E(f"{NP_NAME[t]}({fmt_float(v)})", t, const=True)
        return E(fmt_float(v), T.float64, const=True)

    def leaves(self, fn: Fn, kind: str) -> list:
        """Candidate leaf expressions of ``kind`` ("int", "float", "bool" or "num")."""
        out = []

        def ok(t):
            return kind == "num" and is_num(t) or kind_of(t) == kind

        for v in fn.vars:
            if ok(v.ty):
                out.append(E(v.name, v.ty, v.name in fn.tainted))
        for s in fn.scalars:
            if ok(s.ty):
                out.append(s)
        return out

    def array_read(self, fn: Fn, kind: str) -> E | None:
        if self._reads >= 2:
            return None  # indices of indices of indices: enough
        self._reads += 1
        try:
            return self._array_read(fn, kind)
        finally:
            self._reads -= 1

    def _array_read(self, fn: Fn, kind: str) -> E | None:
        cands = [a for a in fn.arrays.values()
                 if a.role in ("in", "inout", "local") and (kind == "num" and is_num(a.dtype)
                                                            or kind_of(a.dtype) == kind)]
        if not cands:
            return None
        a = self.ch.choice(cands)
        self.feat(f"read_{a.role}_{a.dtype}")
        taint = a.role in ("inout", "local") and is_float(a.dtype)
        if a.role == "inout":
            return E(f"{a.name}[{fn.case}, tid]", a.dtype, taint)
        idx = ", ".join(self.index_expr(fn, a, k) for k in range(a.ndim))
        return E(f"{a.name}[{idx}]", a.dtype, taint)

    def extent_expr(self, fn: Fn, a: Arr, axis: int) -> str:
        if a.shape is not None:
            return str(a.shape[axis])
        if a.ndim == 1:
            return self.ch.choice([f"len({a.name})", f"{a.name}.size", f"{a.name}.shape[0]"])
        return f"{a.name}.shape[{axis}]"

    def index_expr(self, fn: Fn, a: Arr, axis: int) -> str:
        """An in-bounds index for axis ``axis`` of ``a`` (sometimes negative, within one wrap)."""
        ch = self.ch
        r = ch.int(0, 9)
        if r == 0:
            return "0"
        if r == 1:
            self.feat("neg_index_literal")
            return "(-1)"
        n = self.extent_expr(fn, a, axis)
        if r < 6 and fn.kind != "helper":
            # Per-thread element: threads read different data.
            self.feat("index_by_tid")
            return f"((tid + {ch.int(0, 7)}) % {n})" if ch.bool(0.6) else f"((tid * {ch.int(2, 5)} + {self.gen(fn, 0, 'int').src}) % {n})"
        e = self.gen(fn, 1, "int")
        if r == 2:
            self.feat("neg_index")
            return f"(-1 - ({e.src} % {n}))"
        return f"({e.src} % {n})"

    def small_int(self, fn: Fn, m: int, d: int = 1) -> E:
        """An int64 expression in [0, m)."""
        if self.ch.bool(0.3):
            return E(str(self.ch.int(0, m - 1)), T.int64, const=True)
        e = self.gen(fn, d, "int")
        return self.g_mod(e, m)

    def leaf(self, fn: Fn, kind: str) -> E:
        """A leaf: mostly variables and per-thread data (so that threads take different paths),
        sometimes uniform scalars, thread indices and literals."""
        ch = self.ch
        r = ch.int(0, 99)
        if r < 45:
            cands = [E(v.name, v.ty, v.name in fn.tainted) for v in fn.vars
                     if (kind == "num" and is_num(v.ty)) or kind_of(v.ty) == kind]
            if cands:
                return ch.choice(cands)
        if r < 68:
            e = self.array_read(fn, kind)
            if e is not None:
                return e
        if r < 76:
            cands = [s for s in fn.scalars if (kind == "num" and is_num(s.ty)) or kind_of(s.ty) == kind]
            if cands:
                return ch.choice(cands)
        if r < 84 and kind in ("int", "num"):
            return self.index_leaf(fn)
        if kind == "num":
            kind = ch.choice(["int", "float", "bool"])
        if kind == "float" and ch.bool(0.1):
            return E(ch.choice(["math.pi", "math.e"]), T.float64, const=True)
        return self.lit(kind)

    def index_leaf(self, fn: Fn) -> E:
        ch = self.ch
        opts = []
        if fn.kind != "helper":
            opts += [E("tid", T.int64)]
            arrs = [a for a in fn.arrays.values() if a.role == "in"]
            a = ch.choice(arrs)
            opts.append(E(self.extent_expr(fn, a, ch.int(0, a.ndim - 1)), T.int64))
        opts.append(E(ch.choice(["metal.threadIdx.x", "metal.blockIdx.x", "metal.blockDim.x",
                                 "metal.gridDim.x", "metal.threadIdx.y", "metal.blockDim.y"]), T.int32))
        opts.append(E("metal.grid(1)", T.int64))
        e = ch.choice(opts)
        self.feat("index_leaf")
        return e

    def gen(self, fn: Fn, d: int, kind: str) -> E:
        """An expression of ``kind``: "int" (an Integer type), "float", "bool" or "num"."""
        ch = self.ch
        if d <= 0 or ch.bool(0.3):
            return self.leaf(fn, kind)
        for _ in range(6):
            prod = self.pick_production(kind)
            e = prod(fn, d - 1, kind)
            if e is not None and (kind == "num" and is_num(e.ty) or kind_of(e.ty) == kind):
                return e
        return self.leaf(fn, kind)

    def pick_production(self, kind):
        ch = self.ch
        if kind == "bool":
            return ch.weighted([(8, self.p_compare), (4, self.p_boolop), (2, self.p_not),
                                (1, self.p_bool_call), (2, self.p_bitwise), (1, self.p_ternary),
                                (1, self.p_predicate), (1, self.p_helper)])
        if kind == "int":
            return ch.weighted([(10, self.p_arith), (4, self.p_divmod), (2, self.p_power),
                                (3, self.p_shift), (3, self.p_bitwise), (2, self.p_unary),
                                (2, self.p_minmax), (1, self.p_abs), (3, self.p_cast),
                                (3, self.p_float_to_int), (1, self.p_ternary), (2, self.p_helper),
                                (1, self.p_tuple_item), (1, self.p_bits), (1, self.p_selp)])
        if kind == "float":
            return ch.weighted([(10, self.p_arith), (3, self.p_truediv), (6, self.p_divmod),
                                (2, self.p_power), (2, self.p_unary), (2, self.p_minmax),
                                (1, self.p_abs), (3, self.p_cast), (5, self.p_math),
                                (1, self.p_ternary), (2, self.p_helper), (1, self.p_round_nd)])
        return ch.weighted([(10, self.p_arith), (2, self.p_divmod), (2, self.p_truediv),
                            (3, self.p_cast), (3, self.p_math), (2, self.p_compare),
                            (1, self.p_minmax), (1, self.p_helper), (1, self.p_shift)])

    # -- productions ----------------------------------------------------------------------

    def two(self, fn, d, ka, kb):
        """Two operands, not both literal constants (CPython would fold them in double)."""
        a = self.gen(fn, d, ka)
        b = self.gen(fn, d, kb)
        if a.const and b.const:
            b = self.leaf(fn, kb)
            if b.const:
                cands = self.leaves(fn, kb if kb != "num" else "num")
                if not cands:
                    return None
                b = self.ch.choice(cands)
        return a, b

    def binop(self, op, a: E, b: E) -> E | None:
        sig = S.binop_sig(op, T.unliteral(a.ty), T.unliteral(b.ty))
        if sig is None:
            return None
        rt = T.unliteral(sig.return_type)
        self.feat(f"op_{op}_{kind_of(rt)}")
        # Literal op literal is folded by CPython (const), with Python's semantics, not Numba's.
        return E(f"({a.src} {op} {b.src})", rt, a.taint or b.taint, a.const and b.const)

    def p_arith(self, fn, d, kind):
        op = self.ch.choice(["+", "-", "*"])
        if kind == "float":
            ops = self.two(fn, d, "float", self.ch.choice(["float", "int", "num"]))
        elif kind == "int":
            ops = self.two(fn, d, "int", self.ch.choice(["int", "int", "bool"]))
        else:
            ops = self.two(fn, d, "num", "num")
        if ops is None:
            return None
        a, b = ops
        if self.ch.bool(0.5):
            a, b = b, a
        return self.binop(op, a, b)

    def p_truediv(self, fn, d, kind):
        ops = self.two(fn, d, "num", "num")
        if ops is None:
            return None
        return self.binop("/", *ops)

    def p_divmod(self, fn, d, kind):
        op = self.ch.choice(["//", "%"])
        if kind == "float":
            ops = self.two(fn, d, "float", "num")
        else:
            ops = self.two(fn, d, "int", self.ch.choice(["int", "int", "bool"]))
        if ops is None:
            return None
        a, b = ops
        if (a.taint or b.taint) and not self.ch.bool(0.1):
            return None
        if self.ch.bool(0.2):
            a, b = b, a
        return self.binop(op, a, b)

    def p_power(self, fn, d, kind):
        ch = self.ch
        base = self.gen(fn, d, "int" if kind == "int" else ch.choice(["float", "int"]))
        r = ch.int(0, 9)
        if kind == "int" or r < 6:
            if r < 3:
                v = ch.int(-3, 8)
                exp = E(f"({v})" if v < 0 else str(v), T.int64, const=True)
                if base.const:
                    return None
            elif r < 5 or kind == "int":
                m = self.small_int(fn, 7, d)
                exp = E(f"({m.src} - 2)", T.int64, const=m.const) if ch.bool(0.3) else m
            else:
                m = self.small_int(fn, 9, d)
                exp = E(f"({m.src} - 4)", T.int64, const=m.const)
            if base.const and exp.const:
                return None
            self.feat("pow_int_exp")
            return self.binop("**", base, exp)
        # float ** float: a positive base, a bounded exponent.
        if self.exact_only:
            return None
        y = self.gen(fn, d, "num")
        self.feat("pow_float")
        b = self.g_add(self.g_min(self.g_abs(base), 100.0), 0.25)
        r = self.binop("**", b, self.g_clamp(y, -8.0, 8.0))
        if r is not None:
            r.taint = True
        return r

    def p_shift(self, fn, d, kind):
        ch = self.ch
        a = self.gen(fn, d, "int")
        r = ch.int(0, 9)
        if r < 4:
            cnt = self.gen(fn, d, "int")
            # A constant shift of a constant is folded by CPython into an int Numba may not type.
            cnt = E(f"({cnt.src} & {ch.choice([7, 15, 31, 63])})", T.int64, const=cnt.const)
            if a.const and cnt.const:
                return None
        elif r < 8:
            if a.const:
                return None
            cnt = E(str(ch.int(0, 31)), T.int64, const=True)
        else:
            self.feat("shift_unmasked")
            cnt = self.gen(fn, d, "int")
            if a.const and cnt.const:
                return None
        return self.binop(ch.choice(["<<", ">>"]), a, cnt)

    def p_bitwise(self, fn, d, kind):
        k = "bool" if kind == "bool" else "int"
        ops = self.two(fn, d, k, k if self.ch.bool(0.8) else "bool")
        if ops is None:
            return None
        if kind == "int" and self.ch.bool(0.15):
            a = ops[0]
            sig = S.resolve(S.UNARY["~"], (T.unliteral(a.ty),))
            if sig is not None and not a.const:
                self.feat("op_invert")
                return E(f"(~{a.src})", T.unliteral(sig.return_type), a.taint)
        return self.binop(self.ch.choice(["&", "|", "^"]), *ops)

    def p_unary(self, fn, d, kind):
        a = self.gen(fn, d, kind if kind != "num" else "num")
        if a.const:
            return None
        op = self.ch.choice(["-", "+", "-"])
        sig = S.resolve(S.UNARY[op], (T.unliteral(a.ty),))
        if sig is None:
            return None
        self.feat(f"unary_{op}")
        return E(f"({op}{a.src})", T.unliteral(sig.return_type), a.taint)

    def p_not(self, fn, d, kind):
        a = self.gen(fn, d, self.ch.choice(["bool", "bool", "int"]))
        self.feat("op_not")
        return E(f"(not {a.src})", T.boolean, a.taint)

    def p_abs(self, fn, d, kind):
        a = self.gen(fn, d, kind)
        sig = S.resolve(abs, (T.unliteral(a.ty),))
        if sig is None:
            return None
        self.feat("abs")
        return E(f"abs({a.src})", T.unliteral(sig.return_type), a.taint)

    def _minmax_type(self, tys):
        return S.unify(*[T.unliteral(t) for t in tys])

    def p_minmax(self, fn, d, kind):
        n = self.ch.choice([2, 2, 3])
        args = [self.gen(fn, d, kind) for _ in range(n)]
        if all(a.const for a in args):
            return None
        rt = self._minmax_type([a.ty for a in args])
        if rt is None:
            return None
        f = self.ch.choice(["min", "max"])
        self.feat(f"{f}{n}")
        src = ", ".join(a.src for a in args)
        if self.ch.bool(0.2):
            self.feat("minmax_tuple")
            src = f"({src})"
        return E(f"{f}({src})", rt, any(a.taint for a in args))

    def p_cast(self, fn, d, kind):
        ch = self.ch
        if kind == "int":
            t = ch.choice(INTS)
            a = self.gen(fn, d, ch.choice(["int", "int", "bool"]))
            if ch.bool(0.2):
                sig = S.resolve(int, (T.unliteral(a.ty),))
                if sig is not None:
                    self.feat("int_call")
                    return E(f"int({a.src})", T.unliteral(sig.return_type), a.taint)
            return E(f"{NP_NAME[t]}({a.src})", t, a.taint)
        if kind == "float":
            t = ch.choice(FLOATS)
            a = self.gen(fn, d, "num")
            if ch.bool(0.3):
                sig = S.resolve(float, (T.unliteral(a.ty),))
                if sig is not None:
                    self.feat("float_call")
                    return E(f"float({a.src})", T.unliteral(sig.return_type), a.taint)
            self.feat(f"cast_{t}")
            return E(cast_src(t, a.src, a.ty), t, a.taint)
        return self.convert(self.gen(fn, d, "num"), ch.choice(INTS + FLOATS + [T.boolean]))

    def clamp(self, e: E, t) -> E:
        """``e`` (a float) clamped into the range of integer type ``t``."""
        lo, hi = CLAMP[t]
        rt = self._minmax_type([e.ty, T.float64])
        return E(f"min(max({e.src}, {fmt_float(lo)}), {fmt_float(hi)})", rt, e.taint)

    def p_float_to_int(self, fn, d, kind):
        ch = self.ch
        a = self.gen(fn, d, "float")
        if a.taint and not ch.bool(0.15):
            return None
        r = ch.int(0, 5)
        self.feat("float_to_int")
        if r == 0:
            return E(f"int({self.clamp(a, T.int64).src})", T.int64, a.taint)
        if r == 1:
            self.feat("round1")
            return E(f"round({self.clamp(a, T.int64).src})", T.int64, a.taint)
        if r == 2:
            f = ch.choice(self.ROUNDING)
            self.feat(f"math_{f}")
            return E(f"math.{f}({self.clamp(self.no_float16(a), T.int64).src})", T.int64, a.taint)
        t = ch.choice(INTS)
        return E(f"{NP_NAME[t]}({self.clamp(a, t).src})", t, a.taint)

    def convert(self, e: E, t) -> E:
        """``e`` converted to exactly type ``t`` (clamping float→int)."""
        et = T.unliteral(e.ty)
        if et == t:
            return e
        if isinstance(t, T.BaseTuple):
            raise AssertionError("convert a tuple")
        if is_bool(t):
            return E(f"bool({e.src})", T.boolean, e.taint)
        if is_int(t) and is_float(et):
            return E(f"{NP_NAME[t]}({self.clamp(e, t).src})", t, e.taint)
        if t == T.float64 and is_int(et) and self.ch.bool(0.5):
            return E(f"float({e.src})", T.float64, e.taint)
        return E(cast_src(t, e.src, e.ty), t, e.taint)

    def p_compare(self, fn, d, kind):
        ch = self.ch
        ka = ch.choice(["int", "float", "num", "int"])
        kb = ch.choice([ka, ka, "num"])
        ops = self.two(fn, d, ka, kb)
        if ops is None:
            return None
        a, b = ops
        if (a.taint or b.taint) and not ch.bool(0.15):
            return None
        if ch.bool(0.12):
            c = self.gen(fn, d, kb)
            op1, op2 = ch.choice(["<", "<=", "=="]), ch.choice(["<", "<=", "!="])
            if (S.binop_sig(op1, T.unliteral(a.ty), T.unliteral(b.ty)) is None
                    or S.binop_sig(op2, T.unliteral(b.ty), T.unliteral(c.ty)) is None):
                return None
            self.feat("compare_chain")
            return E(f"({a.src} {op1} {b.src} {op2} {c.src})", T.boolean, a.taint or b.taint or c.taint)
        op = ch.choice(["<", "<=", ">", ">=", "==", "!="])
        return self.binop(op, a, b)

    def p_boolop(self, fn, d, kind):
        ch = self.ch
        n = ch.choice([2, 2, 3])
        parts = [self.gen(fn, d, "bool") for _ in range(n)]
        op = ch.choice([" and ", " or "])
        self.feat("boolop_" + op.strip())
        return E("(" + op.join(p.src for p in parts) + ")", T.boolean, any(p.taint for p in parts))

    def p_bool_call(self, fn, d, kind):
        a = self.gen(fn, d, "num")
        self.feat("bool_call")
        return E(f"bool({a.src})", T.boolean, a.taint)

    def p_predicate(self, fn, d, kind):
        a = self.gen(fn, d, "float")
        f = self.ch.choice(self.PREDICATES + self.CLOSENESS)
        if f in self.CLOSENESS:
            b = self.gen(fn, d, "float")
            keywords = self.ch.choice(["", ", rel_tol=0.125", ", abs_tol=0.5", ", rel_tol=0.0, abs_tol=2.0"])
            self.feat(f"math_{f}")
            return E(f"math.{f}({a.src}, {b.src}{keywords})", T.boolean, a.taint or b.taint)
        self.feat(f"math_{f}")
        return E(f"math.{f}({a.src})", T.boolean, a.taint)

    def p_ternary(self, fn, d, kind):
        c = self.cond(fn, d)
        a = self.gen(fn, d, kind)
        b = self.convert(self.gen(fn, d, kind), T.unliteral(a.ty))
        self.feat("ternary")
        return E(f"({a.src} if {c.src} else {b.src})", T.unliteral(a.ty), a.taint or b.taint or c.taint)

    def p_tuple_item(self, fn, d, kind):
        ch = self.ch
        if fn.kind != "helper" and ch.bool(0.5):
            self.feat("tuple_arg")
            i = ch.choice(["0", "1", "(-1)", f"({self.gen(fn, d, 'int').src} % 2)"])
            return E(f"s_t[{i}]", T.int64)
        n = ch.choice([2, 3])
        t = ch.choice([T.int64, T.int32, T.uint8])
        items = [self.g_cast(self.gen(fn, d, "int"), t).src for _ in range(n)]
        i = self.gen(fn, d, "int")
        self.feat("tuple_index")
        return E(f"({', '.join(items)})[{i.src} % {n}]", t, i.taint)

    def p_round_nd(self, fn, d, kind):
        a = self.gen(fn, d, "float")
        if a.taint and not self.ch.bool(0.2):
            return None
        sig = S.resolve(round, (T.unliteral(a.ty), T.int64))
        if sig is None:
            return None
        self.feat("round2")
        nd = self.ch.int(-2, 4)
        return E(f"round({a.src}, {nd})", T.unliteral(sig.return_type), a.taint)

    # -- typed builders for domain guards ----------------------------------------------------

    def g_abs(self, e: E) -> E:
        sig = S.resolve(abs, (T.unliteral(e.ty),))
        return E(f"abs({e.src})", T.unliteral(sig.return_type), e.taint)

    def g_clamp(self, e: E, lo: float, hi: float) -> E:
        rt = self._minmax_type([e.ty, T.float64])
        return E(f"min(max({e.src}, {fmt_float(lo)}), {fmt_float(hi)})", rt, e.taint)

    def g_min(self, e: E, hi: float) -> E:
        rt = self._minmax_type([e.ty, T.float64])
        return E(f"min({e.src}, {fmt_float(hi)})", rt, e.taint)

    def g_add(self, e: E, c: float) -> E:
        rt = T.unliteral(S.binop_sig("+", T.unliteral(e.ty), T.float64).return_type)
        return E(f"({e.src} + {fmt_float(c)})", rt, e.taint)

    def g_cast(self, e: E, t) -> E:
        return E(cast_src(t, e.src, e.ty), t, e.taint)

    def no_float16(self, e: E) -> E:
        """``e``, made float32 if it is a float16: math functions of float16 give float16 (numba.cuda's
        typing; language/test_math_float16.py tests them), which the model's float32 error bounds do not
        cover."""
        return self.g_cast(e, T.float32) if T.unliteral(e.ty) == T.float16 else e

    def g_mod(self, e: E, m: int) -> E:
        sig = S.binop_sig("%", T.unliteral(e.ty), T.int64)
        return E(f"({e.src} % {m})", T.unliteral(sig.return_type), e.taint, e.const)

    #: math function -> argument guard. Guards keep arguments in the function's domain and away from
    #: overflow; NaN still passes through every guard. Every function of numba-metal's math table with a
    #: floating-point result needs one (test_generator checks).
    MATH_GUARDS = {
        "sqrt": lambda g, a: [g.g_abs(a[0])],
        "exp": lambda g, a: [g.g_clamp(a[0], -30.0, 30.0)],
        "exp2": lambda g, a: [g.g_clamp(a[0], -60.0, 60.0)],
        "expm1": lambda g, a: [g.g_clamp(a[0], -30.0, 30.0)],
        "log": lambda g, a: [g.g_add(g.g_abs(a[0]), 0.5)],
        "log2": lambda g, a: [g.g_add(g.g_abs(a[0]), 0.5)],
        "log10": lambda g, a: [g.g_add(g.g_abs(a[0]), 0.5)],
        "log1p": lambda g, a: [g.g_abs(a[0])],
        "sin": lambda g, a: [g.g_clamp(a[0], -100.0, 100.0)],
        "cos": lambda g, a: [g.g_clamp(a[0], -100.0, 100.0)],
        "tan": lambda g, a: [g.g_clamp(a[0], -100.0, 100.0)],
        "asin": lambda g, a: [g.g_clamp(a[0], -1.0, 1.0)],
        "acos": lambda g, a: [g.g_clamp(a[0], -1.0, 1.0)],
        "atan": lambda g, a: [a[0]],
        "sinh": lambda g, a: [g.g_clamp(a[0], -20.0, 20.0)],
        "cosh": lambda g, a: [g.g_clamp(a[0], -20.0, 20.0)],
        "tanh": lambda g, a: [a[0]],
        "asinh": lambda g, a: [g.g_clamp(a[0], -1e6, 1e6)],
        "acosh": lambda g, a: [g.g_add(g.g_min(g.g_abs(a[0]), 1e6), 1.0)],
        "atanh": lambda g, a: [g.g_clamp(a[0], -0.9, 0.9)],
        "erf": lambda g, a: [g.g_clamp(a[0], -10.0, 10.0)],
        "erfc": lambda g, a: [g.g_clamp(a[0], -10.0, 10.0)],
        "gamma": lambda g, a: [g.g_add(g.g_min(g.g_abs(a[0]), 20.0), 0.25)],
        "lgamma": lambda g, a: [g.g_add(g.g_min(g.g_abs(a[0]), 1000.0), 0.25)],
        "degrees": lambda g, a: [g.g_clamp(a[0], -1e30, 1e30)],
        "radians": lambda g, a: [g.g_clamp(a[0], -1e30, 1e30)],
        "fabs": lambda g, a: [a[0]],
        "atan2": lambda g, a: [a[0], a[1]],
        "hypot": lambda g, a: [g.g_clamp(a[0], -1e18, 1e18), g.g_clamp(a[1], -1e18, 1e18)],
        "pow": lambda g, a: [g.g_add(g.g_min(g.g_abs(a[0]), 100.0), 0.25),
                             g.g_clamp(a[1], -8.0, 8.0)],
        "cbrt": lambda g, a: [a[0]],
        "copysign": lambda g, a: [a[0], a[1]],
        "fmod": lambda g, a: [g.g_cast(a[0], T.float32), g.g_cast(a[1], T.float32)],
        "remainder": lambda g, a: [g.g_cast(a[0], T.float32), g.g_cast(a[1], T.float32)],
        "ldexp": lambda g, a: [g.g_clamp(a[0], -1e6, 1e6), g.g_cast(g.g_mod(a[1], 21), T.int32)],
        # Away from zero, so that no neighbour is a float32 subnormal (Apple GPUs flush those).
        "nextafter": lambda g, a: [g.g_add(g.g_abs(a[0]), 1.0), a[1]],
        "frexp": lambda g, a: [a[0]],
        "modf": lambda g, a: [g.g_clamp(a[0], -1e6, 1e6)],
    }
    #: The vocabulary, from numba-metal's math table: functions with floating-point results (p_math),
    #: those rounding to integers (p_float_to_int) and predicates (p_predicate).
    MATH = _math_vocabulary(MATH_GUARDS)
    MATH_NAMES = list(MATH)
    ROUNDING = [f.name for f in MATH_TABLE if (f.result_for("float32") or "").startswith("int")]
    PREDICATES = [f.name for f in MATH_TABLE if f.result_for("float32") == "bool"]
    #: Boolean functions of two floats with keyword parameters (math.isclose), drawn with the predicates.
    CLOSENESS = [f.name for f in MATH_TABLE if f.keywords and f.result_for("float64") == "bool"]
    #: Functions whose results the reference computes exactly (accurate to half an ulp).
    EXACT_MATH = {f.name for f in MATH_TABLE if f.accuracy.ulps <= 0.5}

    def math_call(self, name: str, args: list) -> E | None:
        import math as pymath
        arity, guard = self.MATH[name]
        gargs = [self.no_float16(a) for a in guard(self, args)]
        if name in ("fmod", "remainder"):
            rt = T.float32
        else:
            sig = S.resolve(getattr(pymath, name), tuple(T.unliteral(a.ty) for a in gargs))
            if sig is None:
                return None
            rt = T.unliteral(sig.return_type)
        self.feat(f"math_{name}")
        taint = any(a.taint for a in gargs) or name not in self.EXACT_MATH
        call = f"math.{name}({', '.join(a.src for a in gargs)})"
        if isinstance(rt, T.BaseTuple):  # frexp's mantissa, either part of modf
            k = self.ch.choice([k for k, t in enumerate(rt.types) if isinstance(t, T.Float)])
            return E(f"{call}[{k}]", rt.types[k], taint)
        return E(call, rt, taint)

    def p_math(self, fn, d, kind):
        if self.exact_only:
            return None
        ch = self.ch
        name = ch.choice(self.MATH_NAMES)
        arity = self.MATH[name][0]
        args = []
        for i in range(arity):
            k = "int" if (name == "ldexp" and i == 1) else ch.choice(["float", "float", "num"])
            args.append(self.gen(fn, d, k))
        if name in ("fmod", "remainder") and any(a.taint for a in args):
            return None
        if all(a.const for a in args):
            return None
        return self.math_call(name, args)

    #: numba.cuda's integer intrinsics (metal.popc, clz, ffs, brev): rows of numba-metal's table of them,
    #: argument type name -> result type name.
    BITS = {f.name: {F_argument_types(sig)[0]: F_result_type(sig) for sig in f.signatures}
            for f in INTRINSICS_TABLE if all(F_argument_types(sig)[0] in INTEGERS for sig in f.signatures)}

    #: numba.cuda's libdevice integer functions (metal.libdevice.<name>, the rows whose types are all
    #: integers: exactly specified, so compared bit for bit), one signature each.
    LIBDEVICE = {f.name: f.signatures[0] for f in LIBDEVICE_TABLE
                 if all(t in INTEGERS for t in (F_result_type(f.signatures[0]), *F_argument_types(f.signatures[0])))}
    #: numba.cuda's types for metal.selp.
    SELP_TYPES = (T.int16, T.uint16, T.int32, T.uint32, T.int64, T.uint64, T.float32)

    def p_bits(self, fn, d, kind):
        ch = self.ch
        if ch.bool(0.4):
            return self.p_libdevice(fn, d, kind)
        a = self.gen(fn, d, "int")
        at = T.unliteral(a.ty)
        name = ch.choice(sorted(self.BITS))
        result = self.BITS[name].get(str(at))
        if a.const or result is None:
            return None
        self.feat(f"bits_{name}")
        return E(f"metal.{name}({a.src})", getattr(T, result), a.taint)

    def p_libdevice(self, fn, d, kind):
        """A libdevice function, its arguments converted to its signature's types."""
        name = self.ch.choice(sorted(self.LIBDEVICE))
        sig = self.LIBDEVICE[name]
        args = [self.g_cast(self.gen(fn, d, "int"), getattr(T, t)) for t in F_argument_types(sig)]
        self.feat(f"libdevice_{name}")
        return E(f"metal.libdevice.{name}({', '.join(a.src for a in args)})", getattr(T, F_result_type(sig)),
                 any(a.taint for a in args))

    def p_selp(self, fn, d, kind):
        c = self.cond(fn, d)
        t = self.ch.choice(self.SELP_TYPES if kind != "int" else self.SELP_TYPES[:-1])
        a = self.g_cast(self.gen(fn, d, kind), t)
        b = self.g_cast(self.gen(fn, d, kind), t)
        self.feat("selp")
        return E(f"metal.selp({c.src}, {a.src}, {b.src})", t, a.taint or b.taint or c.taint)

    def callable_helpers(self, fn):
        """Helpers whose array parameters this function can pass (an input array of the dtype)."""
        out = []
        for h in fn.helpers:
            ok = True
            for _, pty in h.params:
                if isinstance(pty, Arr) and not self.array_args(fn, pty):
                    ok = False
            if ok:
                out.append(h)
        return out

    def array_args(self, fn, pty):
        return [a for a in fn.arrays.values() if a.role == "in" and a.ndim == 1 and a.dtype == pty.dtype]

    def p_helper(self, fn, d, kind):
        if self.exact_only:
            return None
        helpers = self.callable_helpers(fn)
        hs = [h for h in helpers if not isinstance(h.ret, T.BaseTuple) and
              (kind == "num" and is_num(h.ret) or kind_of(h.ret) == kind)]
        tuple_hs = [h for h in helpers if isinstance(h.ret, T.BaseTuple)]
        if not hs and not tuple_hs:
            return None
        if hs and (not tuple_hs or self.ch.bool(0.7)):
            h = self.ch.choice(hs)
            return E(self.call(fn, h, d), h.ret, True if self._helper_taints(h) else False)
        h = self.ch.choice(tuple_hs)
        k = self.ch.int(0, len(h.ret) - 1)
        self.feat("helper_tuple_index")
        return E(f"{self.call(fn, h, d)}[{k}]", h.ret.types[k], self._helper_taints(h))

    def _helper_taints(self, h) -> bool:
        return self._helper_taint.get(h.name, True)

    def call(self, fn, h: Helper, d) -> str:
        args = []
        for pname, pty in h.params:
            if isinstance(pty, Arr):
                args.append(self.ch.choice(self.array_args(fn, pty)).name)
            else:
                e = self.gen(fn, d, kind_of(pty))
                args.append(self.convert(e, pty).src)
        self.feat("helper_call")
        if fn.kind == "helper":
            self.feat("helper_calls_helper")
        return f"{h.name}({', '.join(args)})"

    def cond(self, fn, d) -> E:
        """A condition for if/while/ternary: a bool, or an int or float tested for truth, often
        combined with and/or/not (so that one target is reached from several branches)."""
        ch = self.ch
        r = ch.int(0, 9)
        if r < 4:
            e = self.gen(fn, d, "bool")
        elif r < 7:
            n = ch.choice([2, 2, 3])
            parts = []
            for _ in range(n):
                p = self.gen(fn, d, ch.choice(["bool", "bool", "bool", "int"]))
                if ch.bool(0.2):
                    p = E(f"(not {p.src})", T.boolean, p.taint)
                parts.append(p)
            op = ch.choice([" and ", " or "])
            if n == 3 and ch.bool(0.5):
                other = " or " if op == " and " else " and "
                src = f"({parts[0].src}{op}({parts[1].src}{other}{parts[2].src}))"
            else:
                src = "(" + op.join(p.src for p in parts) + ")"
            self.feat("cond_boolop")
            e = E(src, T.boolean, any(p.taint for p in parts))
        else:
            e = self.gen(fn, d, ch.choice(["int", "float"]))
            self.feat("cond_truthiness")
        if e.taint and not ch.bool(0.1):
            return E(f"({self.gen(fn, 1, 'int').src} > 0)", T.boolean)
        return e

    # =========================================================================================
    # statements
    # =========================================================================================

    def block(self, fn: Fn, depth: int, nmin: int = 1, nmax: int = 4):
        """A block of statements; returns (lines, falls_through)."""
        lines: list = []
        n = self.ch.int(nmin, nmax)
        for _ in range(n):
            if fn.budget <= 0 and lines:
                break
            fn.budget -= 1
            sl, falls = self.stmt(fn, depth)
            lines.extend(sl)
            if not falls:
                return lines, False
        if not lines:
            lines.append("pass")
        return lines, True

    def stmt(self, fn: Fn, depth: int):
        ch = self.ch
        can_nest = depth < self.MAX_DEPTH and fn.budget > 2
        in_loop = bool(fn.loops)
        loops_ok = can_nest and len(fn.loops) < self.MAX_LOOPS
        kind = ch.weighted([
            (30, "assign"), (12, "reassign"), (8, "aug"), (12, "write"),
            (12 if can_nest else 0, "if"), (7 if loops_ok else 0, "for"),
            (5 if loops_ok else 0, "while"), (12 if in_loop else 0, "jump"),
            (4, "return"), (4, "swap"), (3, "local"),
            (2 if fn.kind != "helper" else 0, "atomic"), (2, "unpack"), (6, "mix"),
        ])
        return getattr(self, f"s_{kind}")(fn, depth)

    def define(self, fn: Fn, name: str, ty, taint: bool, mutable=True):
        fn.vars.append(Var(name, ty, mutable))
        fn.predicted[name] = ty
        if taint:
            fn.tainted.add(name)

    def s_assign(self, fn, depth):
        ch = self.ch
        e = self.gen(fn, self.depth(), ch.choice(["int", "int", "float", "float", "bool", "num"]))
        if ch.bool(0.15):
            e = self.convert(e, ch.choice(INTS + FLOATS))
        name = fn.fresh("v")
        self.define(fn, name, T.unliteral(e.ty), e.taint)
        return [f"{name} = {e.src}"], True

    def mutable_vars(self, fn):
        return [v for v in fn.vars if v.mutable and is_num(v.ty)]

    def s_reassign(self, fn, depth):
        vs = self.mutable_vars(fn)
        if not vs:
            return self.s_assign(fn, depth)
        v = self.ch.choice(vs)
        e = self.convert(self.gen(fn, self.depth(), kind_of(v.ty)), v.ty)
        if e.taint:
            fn.tainted.add(v.name)
        self.feat("reassign")
        return [f"{v.name} = {e.src}"], True

    def s_aug(self, fn, depth):
        ch = self.ch
        vs = self.mutable_vars(fn)
        if not vs:
            return self.s_assign(fn, depth)
        v = ch.choice(vs)
        op = ch.choice(["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "**"])
        if op == "**":
            e = E(str(ch.int(0, 3)), T.int64, const=True)
        elif op in ("<<", ">>"):
            e = E(str(ch.int(0, 7)), T.int64, const=True)
        else:
            e = self.gen(fn, self.depth(), kind_of(v.ty) if ch.bool(0.7) else "num")
        sig = S.binop_sig(op, v.ty, T.unliteral(e.ty))
        if sig is None or ((op in ("//", "%")) and (e.taint or v.name in fn.tainted)):
            return self.s_reassign(fn, depth)
        rt = T.unliteral(sig.return_type)
        if e.taint:
            fn.tainted.add(v.name)
        if rt == v.ty:
            self.feat("augassign")
            return [f"{v.name} {op}= {e.src}"], True
        self.feat("augassign_cast")
        conv = self.convert(E(f"({v.name} {op} {e.src})", rt, e.taint), v.ty)
        return [f"{v.name} = {conv.src}"], True

    def s_write(self, fn, depth):
        ch = self.ch
        if fn.kind == "helper":
            return self.s_local(fn, depth) if self.locals_of(fn) else self.s_assign(fn, depth)
        r = ch.int(0, 9)
        k = fn.case
        if r < 4:
            e = self.gen(fn, self.depth(0), ch.choice(["int", "bool", "int"]))
            return [f"OI[{k}, tid, {ch.int(0, CK_SLOT - 1)}] = {e.src}"], True
        if r < 7:
            e = self.gen(fn, self.depth(0), ch.choice(["float", "num"]))
            return [f"OF[{k}, tid, {ch.int(0, FLOAT_SLOTS - 1)}] = {e.src}"], True
        name, dt = ch.choice(INOUTS)
        e = self.gen(fn, self.depth(0), kind_of(dt) if ch.bool(0.6) else "num")
        if is_int(dt) and is_float(e.ty):
            e = self.clamp(e, dt)
            e = E(f"{NP_NAME[dt]}({e.src})", dt, e.taint)
        self.feat(f"write_{name}")
        if ch.bool(0.2) and not is_float(e.ty) and is_int(dt):
            op = ch.choice(["+", "^", "|"])
            self.feat("augassign_array")
            return [f"{name}[{k}, tid] {op}= {e.src}"], True
        return [f"{name}[{k}, tid] = {e.src}"], True

    def indent(self, lines):
        return ["    " + ln for ln in lines]

    def s_if(self, fn, depth):
        ch = self.ch
        before = list(fn.vars)
        c = self.cond(fn, self.ch.int(1, 2))
        out = [f"if {c.src}:"]
        then_lines, then_falls = self.block(fn, depth + 1, 1, 4)
        out += self.indent(then_lines)
        arms = [(then_falls, list(fn.vars))]
        self.feat("if")
        for _ in range(ch.choice([0, 0, 0, 1, 2])):
            fn.vars = list(before)
            c2 = self.cond(fn, self.ch.int(1, 2))
            body, falls = self.block(fn, depth + 1, 1, 3)
            out += [f"elif {c2.src}:"] + self.indent(body)
            arms.append((falls, list(fn.vars)))
            self.feat("elif")
        if ch.bool(0.5):
            fn.vars = list(before)
            body, falls = self.block(fn, depth + 1, 1, 3)
            out += ["else:"] + self.indent(body)
            arms.append((falls, list(fn.vars)))
            self.feat("else")
        else:
            arms.append((True, list(before)))
        falling = [vs for falls, vs in arms if falls]
        if not falling:
            fn.vars = before
            return out, False
        names = set.intersection(*[{v.name for v in vs} for vs in falling])
        merged = [v for v in falling[0] if v.name in names]
        fn.vars = merged
        return out, True

    def loop_body(self, fn, depth, info, prefix_lines=(), mix=None):
        fn.loops.append(info)
        before = list(fn.vars)
        body, _ = self.block(fn, depth + 1, 1, 4)
        fn.loops.pop()
        fn.vars = before
        first = []
        if mix is not None and self.ch.bool(0.7):
            first = [self.mix_line(E(mix[0], mix[1]))]
            self.feat("mix_loop")
        return list(prefix_lines) + first + body

    # -- the checksum: every case folds values and loop iterations into ``ck`` (int64), which it
    # writes to its CK_SLOT before every return, so a different path through the control flow
    # shows in the output even when no other output depends on it.

    def mix_line(self, e: E) -> str:
        sig = S.binop_sig("+", T.int64, T.unliteral(e.ty))
        src = e.src
        if sig is None or T.unliteral(sig.return_type) != T.int64:
            src = f"np.int64({src})"
        return f"ck = ck * 31 + {src}"

    def ck_flush(self, fn) -> list:
        if fn.kind in ("case", "case_inline"):
            return [f"OI[{fn.case}, tid, {CK_SLOT}] = ck"]
        return []

    def s_mix(self, fn, depth):
        ch = self.ch
        if ch.bool(0.4):
            # A float's value to 1/4096, clamped (NaN mixes in as 0); exact floats only, so
            # that the conversion is decidable.
            e = self.gen(fn, self.depth(), "float")
            if not e.taint:
                self.feat("mix_float")
                scaled = self.g_clamp(E(f"({e.src} * 4096.0)", T.float64), -9e18, 9e18)
                return [self.mix_line(E(f"np.int64({scaled.src})", T.int64))], True
        e = self.gen(fn, self.depth(0), ch.choice(["int", "int", "bool"]))
        self.feat("mix")
        return [self.mix_line(e)], True

    def loop_else(self, fn, depth):
        """An optional loop ``else`` clause (its break/continue belong to the enclosing loop)."""
        if not self.ch.bool(0.25):
            return []
        self.feat("loop_else")
        before = list(fn.vars)
        body, _ = self.block(fn, depth + 1, 1, 2)
        fn.vars = before
        return ["else:"] + self.indent(body)

    def range_header(self, fn):
        """A range() with a small trip count, as (source, loop variable type)."""
        import builtins
        ch = self.ch
        r = ch.int(0, 9)
        if r < 3:
            stop = self.small_int(fn, 6, 1)
            args = [stop]
            self.feat("for_range1")
        elif r < 5:
            start = self.small_int(fn, 5, 1)
            args = [self.binop("-", start, E("2", T.int64, const=True)) or start,
                    self.binop("+", start, E(str(ch.int(0, 5)), T.int64, const=True)) or start]
            self.feat("for_range2")
        elif r < 7:
            step = ch.choice([-3, -2, -1, 1, 2, 3])
            a, b = ch.int(-4, 6), ch.int(-4, 6)
            if (b - a) * step < 0:
                a, b = b, a
            stop = self.small_int(fn, 3, 1)
            stop = self.binop("+", stop, E(f"({b})", T.int64, const=True)) or stop
            args = [E(f"({a})", T.int64, const=True), stop, E(f"({step})", T.int64, const=True)]
            self.feat("for_range3")
        elif r < 8:
            step = self.small_int(fn, 3, 1)
            if ch.bool(0.4):
                args = [E("5", T.int64, const=True), E("(-2)", T.int64, const=True),
                        E(f"(-({step.src} + 1))", T.int64)]
            else:
                args = [E("(-1)", T.int64, const=True), E("6", T.int64, const=True),
                        E(f"({step.src} + 1)", T.int64)]
            self.feat("for_range_runtime_step")
        elif r < 9:
            arrs = [a for a in fn.arrays.values() if a.role == "in" and a.ndim >= 2]
            if arrs:
                a = ch.choice(arrs)
                args = [E(f"{a.name}.shape[{ch.int(0, a.ndim - 1)}]", T.int64)]
                self.feat("for_shape")
            else:
                args = [E(str(ch.int(0, 4)), T.int64, const=True)]
        else:
            t = ch.choice([T.int32, T.uint64, T.int16, T.uint8])
            stop = self.small_int(fn, 6, 1)
            args = [self.g_cast(stop, t)]
            if ch.bool(0.4):
                args = [self.g_cast(E("1", T.int64), t), args[0]]
            self.feat(f"for_range_{t}")
        sig = S.resolve(builtins.range, tuple(T.unliteral(a.ty) for a in args))
        if sig is None:
            return f"range({ch.int(0, 3)})", T.int64
        return f"range({', '.join(a.src for a in args)})", sig.return_type.dtype

    def s_for(self, fn, depth):
        ch = self.ch
        var = fn.fresh("j")
        taint = False
        if ch.bool(0.12):
            t = ch.choice([T.int64, T.int32, T.float32, T.uint8, T.boolean])
            # Explicit casts: a literal item would make the tuple heterogeneous (Literal[int]).
            items = [self.g_cast(self.gen(fn, 1, kind_of(t)), t) for _ in range(ch.choice([2, 3]))]
            hdr = "(" + ", ".join(i.src for i in items) + ")"
            self.feat("for_tuple")
            loop_ty = t
            taint = any(i.taint for i in items)
        else:
            hdr, loop_ty = self.range_header(fn)
        fn.vars.append(Var(var, loop_ty, False))
        fn.predicted[var] = loop_ty
        if taint:
            fn.tainted.add(var)
        mix = (var, loop_ty) if not is_float(loop_ty) else (f"np.int64({var} > 0)", T.int64)
        body = self.loop_body(fn, depth, "for", mix=mix)
        fn.vars = [v for v in fn.vars if v.name != var]
        return [f"for {var} in {hdr}:"] + self.indent(body) + self.loop_else(fn, depth), True

    def s_while(self, fn, depth):
        ch = self.ch
        w = fn.fresh("w")
        fuel = ch.int(1, 5)
        self.define(fn, w, T.int64, False, mutable=False)
        r = ch.int(0, 2)
        c = self.cond(fn, self.ch.int(1, 2))
        if r == 0:
            self.feat("while_fuel")
            head = [f"{w} = 0", f"while {w} < {fuel} and {c.src}:"]
            prefix = [f"{w} += 1"]
            body = self.loop_body(fn, depth, "while", prefix, mix=(w, T.int64))
            return head + self.indent(body) + self.loop_else(fn, depth), True
        if r == 1:
            self.feat("while_true")
            head = [f"{w} = 0", "while True:"]
            prefix = [f"{w} += 1", f"if {w} > {fuel} or {c.src}:", "    break"]
            self.feat("break_in_or")
            body = self.loop_body(fn, depth, "while", prefix, mix=(w, T.int64))
            return head + self.indent(body), True
        self.feat("while_cond")
        head = [f"{w} = 0", f"while {c.src}:"]
        prefix = [f"{w} += 1", f"if {w} > {fuel}:", "    break"]
        body = self.loop_body(fn, depth, "while", prefix, mix=(w, T.int64))
        return head + self.indent(body) + self.loop_else(fn, depth), True

    def s_jump(self, fn, depth):
        ch = self.ch
        what = ch.choice(["break", "continue", "break"])
        if ch.bool(0.75):
            c = self.cond(fn, self.ch.int(1, 2))
            if " or " in c.src:
                self.feat(f"{what}_in_or")
            if " and " in c.src:
                self.feat(f"{what}_in_and")
            self.feat(f"{what}_guarded")
            return [f"if {c.src}:", f"    {what}"], True
        self.feat(f"{what}_bare")
        return [what], False

    def ret_expr(self, fn) -> str:
        r = fn.ret
        if isinstance(r, T.BaseTuple):
            items = [self.ret_item(fn, t, k == 0) for k, t in enumerate(r.types)]
            return "(" + ", ".join(items) + ")"
        return self.ret_item(fn, r, True)

    def ret_item(self, fn, t, with_ck: bool) -> str:
        e = self.gen(fn, self.depth(), kind_of(t))
        if with_ck and is_int(t):
            e = E(f"(np.int64({e.src}) + ck)", T.int64, e.taint)  # the helper's path shows
        return self.convert(e, t).src

    def s_return(self, fn, depth):
        ch = self.ch
        if fn.kind == "kernel":
            return self.s_assign(fn, depth)
        val = f" {self.ret_expr(fn)}" if fn.kind == "helper" else ""
        flush = self.ck_flush(fn)
        if fn.loops:
            self.feat("return_in_loop")
        if ch.bool(0.8):
            c = self.cond(fn, self.ch.int(1, 2))
            self.feat("return_guarded")
            if " or " in c.src:
                self.feat("return_in_or")
            return [f"if {c.src}:"] + self.indent(flush + [f"return{val}"]), True
        self.feat("return_bare")
        return flush + [f"return{val}"], False

    def s_swap(self, fn, depth):
        ch = self.ch
        vs = self.mutable_vars(fn)
        by_type: dict = {}
        for v in vs:
            by_type.setdefault(v.ty, []).append(v)
        groups = [g for g in by_type.values() if len(g) >= 2]
        if not groups:
            return self.s_reassign(fn, depth)
        g = ch.choice(groups)
        if len(g) >= 3 and ch.bool(0.8):
            a, b, c = g[-3:]
            self.feat("swap3")
            return [f"{a.name}, {b.name}, {c.name} = {b.name}, {c.name}, {a.name}"], True
        a, b = g[-2:]
        if ch.bool(0.5):
            self.feat("swap2")
            return [f"{a.name}, {b.name} = {b.name}, {a.name}"], True
        e = self.convert(self.binop(ch.choice(["+", "-", "*"]), E(a.name, a.ty), E(b.name, b.ty))
                         or E(a.name, a.ty), b.ty)
        if a.name in fn.tainted or b.name in fn.tainted:
            fn.tainted.update({a.name, b.name})
        self.feat("swap_fib")
        return [f"{a.name}, {b.name} = {b.name}, {e.src}"], True

    def locals_of(self, fn):
        return [a for a in fn.arrays.values() if a.role == "local"]

    def s_local(self, fn, depth):
        ls = self.locals_of(fn)
        if not ls:
            return self.s_assign(fn, depth)
        a = self.ch.choice(ls)
        idx = ", ".join(self.index_expr(fn, a, k) for k in range(a.ndim))
        e = self.gen(fn, self.depth(), kind_of(a.dtype) if self.ch.bool(0.7) else "num")
        if is_int(a.dtype) and is_float(e.ty):
            e = E(f"{NP_NAME[a.dtype]}({self.clamp(e, a.dtype).src})", a.dtype, e.taint)
        self.feat("local_write")
        return [f"{a.name}[{idx}] = {e.src}"], True

    def s_atomic(self, fn, depth):
        ch = self.ch
        fn.uses_atomics = True
        r = ch.int(0, 9)
        if r < 6:
            slot = ch.int(0, 15)
            op = ACNT_OPS[slot]
            e = self.gen(fn, self.depth(), "int")
            self.feat(f"atomic_{op}")
            return [f"metal.atomic.{op}(ACNT, {slot}, {self.convert(e, T.int32).src})"], True
        if r < 8:
            slot = ch.int(0, 3)
            op, const = ACNTU_OPS[slot]
            if const is not None:
                val = f"np.uint32({const})"
            else:
                val = self.convert(self.gen(fn, self.depth(), "int"), T.uint32).src
            self.feat(f"atomic_u_{op}")
            return [f"metal.atomic.{op}(ACNTU, {slot}, {val})"], True
        e = self.gen(fn, self.depth(), "int")
        self.feat("atomic_f_add")
        return [f"metal.atomic.add(ACNTF, {ch.int(0, 1)}, np.float32({e.src} % 101))"], True

    def s_unpack(self, fn, depth):
        ch = self.ch
        ths = [h for h in self.callable_helpers(fn) if isinstance(h.ret, T.BaseTuple)]
        if ths and ch.bool(0.7):
            h = ch.choice(ths)
            names = [fn.fresh("v") for _ in h.ret.types]
            src = self.call(fn, h, 2)
            for n, t in zip(names, h.ret.types):
                self.define(fn, n, t, self._helper_taints(h))
            self.feat("unpack_helper_tuple")
            return [f"{', '.join(names)} = {src}"], True
        if fn.kind != "helper" and ch.bool(0.5):
            a, b = fn.fresh("v"), fn.fresh("v")
            self.define(fn, a, T.int64, False)
            self.define(fn, b, T.int64, False)
            self.feat("unpack_tuple_arg")
            return [f"{a}, {b} = s_t"], True
        es = [self.gen(fn, self.depth(), ch.choice(["int", "float", "bool"])) for _ in range(2)]
        names = [fn.fresh("v") for _ in es]
        for n, e in zip(names, es):
            self.define(fn, n, T.unliteral(e.ty), e.taint)
        self.feat("unpack_tuple")
        return [f"{names[0]}, {names[1]} = {es[0].src}, {es[1].src}"], True

    # =========================================================================================
    # functions
    # =========================================================================================

    def case_fn(self, name, case, helpers, kind="case") -> Fn:
        fn = Fn(name=name, kind=kind, case=case, helpers=helpers)
        for n, t in INPUTS:
            fn.arrays[n] = Arr(n, t, 1, "in")
        for n, t, nd in MATRICES:
            fn.arrays[n] = Arr(n, t, nd, "in")
        for n, t in INOUTS:
            fn.arrays[n] = Arr(n, t, 2, "inout")
        for n, t in SCALARS:
            if n != "s_t":
                fn.scalars.append(E(n, t))
        fn.scalars.append(E("tid", T.int64))
        fn.budget = self.ch.int(3, 16)
        return fn

    def local_decls(self, fn: Fn) -> list:
        ch = self.ch
        lines = []
        for _ in range(ch.choice([0, 0, 1, 1, 2])):
            name = fn.fresh("la")
            dt = ch.choice([T.int32, T.float32, T.int64, T.uint8, T.float16])
            if ch.bool(0.3):
                shape = (ch.int(1, 3), ch.int(1, 3))
                shp = f"({shape[0]}, {shape[1]})"
            else:
                shape = (ch.int(1, 6),)
                shp = str(shape[0])
            lines.append(f"{name} = metal.local.array({shp}, {NP_NAME[dt]})")
            a = Arr(name, dt, len(shape), "local", shape)
            # Initialise every element (reading uninitialised local memory is undefined on Metal).
            q = fn.fresh("q")
            fn.vars.append(Var(q, T.int64, False))
            fn.predicted[q] = T.int64
            init = self.convert(self.gen(fn, 1, kind_of(dt)), dt)
            fn.vars.pop()
            if len(shape) == 1:
                lines += [f"for {q} in range({shape[0]}):", f"    {name}[{q}] = {init.src}"]
            else:
                lines += [f"for {q} in range({shape[0] * shape[1]}):",
                          f"    {name}[{q} // {shape[1]}, {q} % {shape[1]}] = {init.src}"]
            fn.arrays[name] = a
            self.feat("local_array")
        return lines

    def final_writes(self, fn: Fn) -> list:
        """Make the case's results observable: every live integer folds into the checksum, the
        last float variables go to their own float slots, a few integers to int slots too."""
        ch = self.ch
        lines = []
        vs = [v for v in fn.vars if is_num(v.ty)]
        for v in vs:
            if not is_float(v.ty):
                lines.append(self.mix_line(E(v.name, v.ty)))
        lines += self.ck_flush(fn)
        floats = [v for v in vs if is_float(v.ty)][-FLOAT_SLOTS:]
        for slot, v in enumerate(floats):
            lines.append(f"OF[{fn.case}, tid, {slot}] = {v.name}")
        ints = [v for v in vs if not is_float(v.ty)]
        for v in ints[len(ints) - ch.int(0, min(2, len(ints))):]:
            lines.append(f"OI[{fn.case}, tid, {ch.int(0, CK_SLOT - 1)}] = {v.name}")
        for a in self.locals_of(fn):
            if ch.bool(0.6):
                idx = ", ".join("0" for _ in range(a.ndim))
                slot = ch.int(0, FLOAT_SLOTS - 1) if is_float(a.dtype) else ch.int(0, CK_SLOT - 1)
                arr = "OF" if is_float(a.dtype) else "OI"
                lines.append(f"{arr}[{fn.case}, tid, {slot}] = {a.name}[{idx}]")
        return lines

    def gen_helper(self, idx: int, helpers: list) -> tuple:
        ch = self.ch
        name = f"h{idx}"
        nparams = ch.int(1, 3)
        params = []
        fn = Fn(name=name, kind="helper", helpers=list(helpers))
        for i in range(nparams):
            t = ch.choice([T.int32, T.int64, T.float32, T.float64, T.uint8, T.boolean, T.uint64,
                           T.float16, T.int16])
            params.append((f"p{i}", t))
            fn.vars.append(Var(f"p{i}", t))
            fn.predicted[f"p{i}"] = t
        if ch.bool(0.3):
            dt = ch.choice([T.float32, T.int32, T.uint8])
            arr = Arr("arr", dt, 1, "in")
            params.append(("arr", arr))
            fn.arrays["arr"] = arr
        if ch.bool(0.25):
            ret = T.UniTuple(ch.choice([T.int64, T.float32]), 2) if ch.bool(0.5) else \
                T.Tuple((ch.choice([T.int32, T.int64]), ch.choice([T.float32, T.float64, T.boolean])))
        else:
            ret = ch.choice([T.int32, T.int64, T.float32, T.float64, T.boolean, T.uint32, T.int8])
        fn.ret = ret
        fn.budget = ch.int(2, 8)
        old_max = self.MAX_LOOPS
        self.MAX_LOOPS = 1
        fn.predicted["ck"] = T.int64
        lines = ["ck = 0"] + self.local_decls(fn)
        body, falls = self.block(fn, 1, 1, 5)
        self.MAX_LOOPS = old_max
        lines += body
        if falls:
            lines.append(f"return {self.ret_expr(fn)}")
        h = Helper(name, params, ret)
        # Conservatively: any float result of a helper may carry transcendental error.
        self._helper_taint[name] = bool(fn.tainted) or "math." in "\n".join(lines)
        src = ["@metal.jit(device=True)", f"def {name}({', '.join(p for p, _ in params)}):"]
        src += self.indent(lines)
        return h, src, fn

    def generate(self, ncases: int, data_seed: int | None = None) -> Batch:
        ch = self.ch
        predicted: dict = {}
        dims = ch.weighted([(6, 1), (2, 2), (2, 3)])
        self.feat(f"grid{dims}d")
        barrier = ch.bool(0.35)
        # Launch geometry: threadgroups that do not divide the data, odd sizes.
        if dims == 1:
            bd = (ch.choice([1, 2, 3, 5, 7, 8, 16, 31, 32, 33, 48, 64]), 1, 1)
            ext = (ch.int(1, 64), 1, 1)
        elif dims == 2:
            bd = (ch.choice([1, 2, 3, 4, 5, 8]), ch.choice([1, 2, 3, 4, 7]), 1)
            ext = (ch.int(1, 9), ch.int(1, 8), 1)
        else:
            bd = (ch.choice([1, 2, 3, 4]), ch.choice([1, 2, 3]), ch.choice([1, 2, 3]))
            ext = (ch.int(1, 5), ch.int(1, 4), ch.int(1, 4))
        # Sometimes a spare threadgroup beyond the data, but only along an axis the kernel's guard
        # checks: a spare group along an axis a 1-D kernel ignores (y, z) would run every thread id
        # twice, racing on its outputs (the decision is drawn for every axis all the same, so the
        # programs of other seeds do not change).
        spare = [ch.bool(0.2) for _ in range(3)]
        gd = tuple((e + b - 1) // b + (1 if spare[axis] and axis < dims else 0)
                   for axis, (e, b) in enumerate(zip(ext, bd)))
        if any(e % b for e, b in zip(ext, bd)):
            self.feat("block_nondivisible")
        if data_seed is None:
            data_seed = ch.int(0, 2 ** 31 - 1)

        lines = ["import math", "import numpy as np", "from numba_metal import metal", "", ""]
        helpers: list = []
        for i in range(ch.choice([0, 1, 1, 2, 3])):
            h, src, fn = self.gen_helper(i, helpers)
            helpers.append(h)
            predicted[h.name] = fn.predicted
            lines += src + ["", ""]
            self.feat("helper")
        self._barrier_helper = None
        barrier_functions = []
        if barrier and ch.bool(0.4):
            # A device function with its own shared array and barriers (called by every thread).
            nthreads = bd[0] * bd[1] * bd[2]
            dt = ch.choice(["np.int32", "np.int64"])
            d = ch.int(1, max(1, nthreads))
            lines += ["@metal.jit(device=True)", "def bh(lt, x):",
                      f"    s = metal.shared.array({nthreads}, {dt})",
                      "    s[lt] = x", "    metal.syncthreads()",
                      f"    y = s[(lt + {d}) % {nthreads}]", "    metal.syncthreads()",
                      f"    s[lt] = y * 2 + x", "    metal.syncthreads()",
                      f"    return s[(lt + {ch.int(0, nthreads)}) % {nthreads}]", "", ""]
            self._barrier_helper = "bh"
            self._barrier_helper_type = T.int32 if dt == "np.int32" else T.int64
            barrier_functions.append("bh")
        args = arg_names()
        case_index = {}
        atomic_cases = set()
        ndevice = ncases - 1 if ch.bool(0.85) else ncases
        inline = ncases if ndevice < ncases else None
        for k in range(1, ndevice + 1):
            name = f"c{k}"
            fn = self.case_fn(name, k, helpers)
            fn.predicted["ck"] = T.int64
            body = ["ck = 0"] + self.local_decls(fn)
            b, falls = self.block(fn, 1, 2, 6)
            body += b
            if falls:
                body += self.final_writes(fn)
            lines += ["@metal.jit(device=True)", f"def {name}(tid, {', '.join(args)}):"]
            lines += self.indent(body) + ["", ""]
            case_index[name] = k
            predicted[name] = fn.predicted
            if fn.uses_atomics:
                atomic_cases.add(k)
        # The kernel.
        kfn = self.case_fn("kern", 0, helpers, kind="kernel")
        kbody = self.kernel_prologue(kfn, dims, bd, barrier)
        for k in range(1, ndevice + 1):
            kbody.append(f"c{k}(tid, {', '.join(args)})")
        inline_start = len(_top_level(kbody))
        if inline is not None:
            self.feat("inline_case")
            kfn.case = inline
            kfn.kind = "case_inline"
            kfn.budget = ch.int(3, 12)
            kfn.predicted["ck"] = T.int64
            b, falls = self.block(kfn, 1, 2, 5)
            kbody += ["ck = 0"] + b
            if falls:
                kbody += self.final_writes(kfn)
            if kfn.uses_atomics:
                atomic_cases.add(inline)
        if kfn.uses_atomics and 0 not in atomic_cases:
            atomic_cases.add(0)
        lines += ["@metal.jit", f"def kern({', '.join(args)}):"] + self.indent(kbody)
        predicted["kern"] = kfn.predicted
        source = "\n".join(lines) + "\n"

        passing = {}
        for n, _ in INPUTS:
            passing[n] = ch.choice(["device", "device", "numpy", "strided"])
        for n, _, nd in MATRICES:
            passing[n] = ch.choice(["device", "F", "strided", "numpy"])
        for n in ["OI", "OF"] + [n for n, _ in INOUTS]:
            passing[n] = ch.choice(["device", "device", "device", "numpy", "strided", "F"])
        for n in [n for n, _, _ in COUNTERS]:
            passing[n] = ch.choice(["device", "device", "device", "numpy"])
        lengths = {n: (ch.int(1, 20),) for n, _ in INPUTS}
        lengths["M2"] = (ch.int(1, 5), ch.int(1, 5))
        lengths["M3"] = (ch.int(1, 3), ch.int(1, 3), ch.int(1, 3))
        for mode in passing.values():
            self.feat(f"pass_{mode}")
        return Batch(source=source, kernel_name="kern", case_index=case_index, inline_case=inline,
                     barrier_functions=barrier_functions,
                     inline_start=inline_start, ncases=ncases + 1, griddim=gd, blockdim=bd,
                     extent=ext, data_seed=data_seed, passing=passing, lengths=lengths,
                     features=Counter(self.features), atomic_cases=atomic_cases, predicted=predicted,
                     generated_functions=ncases)

    def kernel_prologue(self, fn: Fn, dims: int, bd: tuple, barrier: bool) -> list:
        """Thread indexing, the guard, and (sometimes) a threadgroup-memory section with barriers."""
        ch = self.ch
        lines = []
        if dims == 1:
            if ch.bool(0.3):
                lines.append("gx = metal.blockIdx.x * metal.blockDim.x + metal.threadIdx.x")
                gx_ty = T.int64
                self.feat("cuda_style_index")
            else:
                lines.append("gx = metal.grid(1)")
                gx_ty = T.int64
            valid = "gx < nx"
            tid = "gx"
            fn.predicted["gx"] = gx_ty
        elif dims == 2:
            lines.append("gx, gy = metal.grid(2)")
            valid = "gx < nx and gy < ny"
            tid = "gy * nx + gx"
        else:
            lines.append("gx, gy, gz = metal.grid(3)")
            valid = "gx < nx and gy < ny and gz < nz"
            tid = "(gz * ny + gy) * nx + gx"
        nthreads = bd[0] * bd[1] * bd[2]
        if barrier:
            lines += self.barrier_section(fn, valid, tid, bd, nthreads)
        else:
            r = ch.int(0, 2)
            if r == 0:
                lines += [f"if not ({valid}):", "    return"]
            elif r == 1:
                cond = " or ".join(f"g{c} >= n{c}" for c in "xyz"[:dims])
                lines += [f"if {cond}:", "    return"]
                self.feat("kernel_return_or")
            else:
                lines += [f"if {valid}:", "    pass", "else:", "    return"]
            lines.append(f"tid = {tid}")
        fn.predicted["tid"] = T.int64
        return lines

    def barrier_section(self, fn: Fn, valid: str, tid: str, bd: tuple, nthreads: int) -> list:
        """Threadgroup memory: each thread writes its cell, a barrier, then it reads a neighbour's
        (rounds in a uniform loop), and threadgroup atomics. Reached by every thread; only integer
        expressions (no float rounding can make threads disagree)."""
        ch = self.ch
        self.feat("shared_barrier")
        lt = "lt"
        lines = ["lt = (metal.threadIdx.z * metal.blockDim.y + metal.threadIdx.y) * metal.blockDim.x"
                 " + metal.threadIdx.x",
                 f"valid = {valid}", f"tid = {tid}"]
        fn.predicted["lt"] = T.int64
        fn.predicted["valid"] = T.boolean
        fn.predicted["tid"] = T.int64
        fn.vars.append(Var("lt", T.int64, False))
        dt = ch.choice([T.int32, T.int64, T.uint16])
        lines.append(f"sh = metal.shared.array({nthreads}, {NP_NAME[dt]})")
        saved_case = fn.case
        fn.case = 0
        self.exact_only = True
        inouts = {n: a for n, a in fn.arrays.items() if a.role == "inout"}
        for n in inouts:
            del fn.arrays[n]
        e = self.convert(self.gen(fn, self.depth(), "int"), dt)
        lines.append(f"sh[{lt}] = {e.src}")
        lines.append("metal.syncthreads()")
        rounds = ch.int(0, 3)
        if rounds:
            self.feat("barrier_loop")
            r = fn.fresh("r")
            d = ch.int(1, max(1, nthreads))
            lines += [f"for {r} in range({rounds}):",
                      f"    nb = sh[({lt} + {d}) % {nthreads}]",
                      "    metal.syncthreads()",
                      f"    sh[{lt}] = {NP_NAME[dt]}(nb * 3 + {lt})",
                      "    metal.syncthreads()"]
            fn.predicted["nb"] = dt
        d = ch.int(0, nthreads)
        lines += [f"got = sh[({lt} + {d}) % {nthreads}]"]
        fn.predicted["got"] = dt
        slot = ch.int(0, CK_SLOT - 2)
        lines += ["if valid:", f"    OI[0, tid, {slot}] = got"]
        if ch.bool(0.6):
            self.feat("shared_atomic")
            op = ch.choice(["add", "max", "min", "or_", "xor"])
            ne = min(4, nthreads)
            e2 = self.convert(self.gen(fn, self.depth(), "int"), T.int32)
            lines += ["sa = metal.shared.array(4, np.int32)",
                      f"if {lt} < 4:", f"    sa[{lt}] = {lt} * 7",
                      "metal.syncthreads()",
                      f"metal.atomic.{op}(sa, {lt} % {ne}, {e2.src})",
                      "metal.syncthreads()",
                      f"if valid and {lt} < {ne}:", f"    OI[0, tid, {slot + 1}] = sa[{lt}]"]
        if self._barrier_helper is not None:
            self.feat("barrier_in_device_function")
            e4 = self.convert(self.gen(fn, self.depth(), "int"), T.int32)
            lines += [f"nb2 = {self._barrier_helper}(lt, {e4.src})",
                      "if valid:", f"    OI[0, tid, {CK_SLOT}] = nb2"]
            fn.predicted["nb2"] = self._barrier_helper_type
        if ch.bool(0.4):
            self.feat("global_atomic_in_kernel")
            fn.uses_atomics = True
            e3 = self.convert(self.gen(fn, self.depth(), "int"), T.int32)
            lines += [f"if valid:", f"    metal.atomic.add(ACNT, 0, {e3.src})"]
        fn.case = saved_case
        fn.arrays.update(inouts)
        self.exact_only = False
        fn.vars = [v for v in fn.vars if v.name != "lt"]
        lines += ["if not valid:", "    return"]
        return lines


def _top_level(lines):
    return [ln for ln in lines if not ln.startswith(" ") and not ln.startswith("else:")
            and not ln.startswith("elif ")]


def generate_batch(ch, ncases: int) -> Batch:
    return Generator(ch).generate(ncases)

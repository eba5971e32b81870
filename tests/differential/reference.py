"""The reference: the generated module's own source, run as plain Python on the host.

The source is rewritten (``ast``) so that every operator, subscript and builtin goes through
:mod:`.semantics` (Numba's typing, float32 arithmetic, error bounds), and ``math``, ``np`` and
``metal`` are reference namespaces. The kernel runs thread by thread; its function becomes a
generator in which ``metal.syncthreads()`` is a ``yield``, and the threads of a threadgroup are
advanced in lock-step from barrier to barrier, which is exactly the guarantee a barrier gives.
Between barriers the generator only produces race-free code, so any interleaving is equivalent.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator

import numpy as np
from numba.core import types as T

from . import semantics as S
from .semantics import U, Unstable, GeneratorError, nbt, cast, make, fval, ferr

# ---------------------------------------------------------------------------------------------
# Run state (one reference run at a time)
# ---------------------------------------------------------------------------------------------


class Thread:
    __slots__ = ("gid", "gsize", "tgid", "ngroups", "tid", "tsize")

    def __init__(self, gid, gsize, tgid, ngroups, tid, tsize):
        self.gid, self.gsize, self.tgid, self.ngroups, self.tid, self.tsize = (
            gid, gsize, tgid, ngroups, tid, tsize)


class _State:
    def __init__(self):
        self.cur: Thread | None = None
        self.shadow: dict = {}       # id(float array) -> (array, error array)
        self.shared: dict = {}       # call site -> threadgroup array (current threadgroup)
        self.unstable: set = set()   # (case index, tid)
        self.unstable_groups = 0
        self.unstable_reasons: list = []
        # Data races: id(kernel argument array) -> {element index: grid position of the thread that
        # wrote it}. Generated threads own their rows of the output arrays; a second thread touching
        # an element another one wrote is a race, whose result on a parallel device depends on timing.
        self.written: dict = {}


STATE = _State()


def reset():
    global STATE
    STATE = _State()
    return STATE


def mark(case: int, tid, reason: str = "") -> None:
    STATE.unstable.add((case, int(tid)))
    if len(STATE.unstable_reasons) < 20:
        STATE.unstable_reasons.append((case, int(tid), reason))


def run_case(case: int, fn, tid, *args):
    try:
        fn(tid, *args)
    except Unstable as e:
        mark(case, tid, str(e))


# ---------------------------------------------------------------------------------------------
# Operators (called by rewritten code)
# ---------------------------------------------------------------------------------------------

bin = S.binop  # noqa: A001 - the rewritten code calls _R.bin
un = S.unop
chain = S.cmp_chain


def _index(i, n: int) -> int:
    if type(i) is U or isinstance(i, (float, np.floating)):
        raise GeneratorError(f"float index {i!r}")
    i = int(i)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise GeneratorError(f"index {i} out of bounds for extent {n}")
    return i


def _indices(arr: np.ndarray, idx):
    if type(idx) is tuple:
        if len(idx) > arr.ndim:
            raise GeneratorError("too many indices")
        return tuple(_index(i, n) for i, n in zip(idx, arr.shape))
    return (_index(idx, arr.shape[0]),)


def _check_race(arr: np.ndarray, ii: tuple, access: str) -> None:
    """A generated program whose threads share an element of a kernel argument (one writes it,
    another reads or writes it) has no single answer: refused as a generator bug."""
    written = STATE.written.get(id(arr))
    if written is None or STATE.cur is None:
        return
    writer = written.get(ii)
    if writer is not None and writer != STATE.cur.gid:
        raise GeneratorError(f"data race: thread {STATE.cur.gid} {access} element {list(ii)} of a "
                             f"kernel argument that thread {writer} wrote")


def getitem(obj, idx):
    if type(obj) is tuple:
        if type(idx) is U or isinstance(idx, (float, np.floating)):
            raise GeneratorError("float tuple index")
        return obj[_index(idx, len(obj))]
    if not isinstance(obj, np.ndarray):
        raise GeneratorError(f"subscript of {type(obj).__name__}")
    ii = _indices(obj, idx)
    if len(ii) < obj.ndim:
        return obj[ii]  # a view (numba: partial indexing gives a view)
    _check_race(obj, ii, "reads")
    v = obj[ii]
    sh = STATE.shadow.get(id(obj))
    if sh is not None and sh[0] is obj:
        e = float(sh[1][ii])
        if e:
            return U(float(v), e, S.NB_OF_NP[obj.dtype.type])
    return v


def setitem(obj, idx, value):
    if not isinstance(obj, np.ndarray):
        raise GeneratorError(f"item assignment to {type(obj).__name__}")
    if not obj.flags.writeable:
        raise GeneratorError("assignment to a read-only array")
    ii = _indices(obj, idx)
    if len(ii) != obj.ndim:
        raise GeneratorError("partial index in an assignment")
    _check_race(obj, ii, "writes")
    written = STATE.written.get(id(obj))
    if written is not None and STATE.cur is not None:
        written[ii] = STATE.cur.gid
    nb = S.NB_OF_NP[obj.dtype.type]
    cv = cast(value, nb)
    sh = STATE.shadow.get(id(obj))
    if sh is not None and sh[0] is not obj:
        sh = None
    if type(cv) is U:
        obj[ii] = cv.v
        if sh is None:
            sh = (obj, np.zeros(obj.shape, dtype=np.float64))
            STATE.shadow[id(obj)] = sh
        sh[1][ii] = cv.e
    else:
        obj[ii] = cv
        if sh is not None:
            sh[1][ii] = 0.0


def error_of(arr: np.ndarray) -> np.ndarray:
    """The error bound of every element of a float array after a run (zeros if exact)."""
    sh = STATE.shadow.get(id(arr))
    if sh is not None and sh[0] is arr:
        return sh[1]
    return np.zeros(arr.shape, dtype=np.float64)


def attr(obj, name):
    if isinstance(obj, np.ndarray):
        if name == "shape":
            return tuple(np.int64(s) for s in obj.shape)
        if name == "size":
            return np.int64(obj.size)
        if name == "ndim":
            return np.int64(obj.ndim)
    return getattr(obj, name)


# ---------------------------------------------------------------------------------------------
# Builtins
# ---------------------------------------------------------------------------------------------


def _abs(x):
    t = nbt(x)
    sig = S.resolve(builtins.abs, (t,))
    if sig is None:
        raise GeneratorError(f"abs({t})")
    at, rt = T.unliteral(sig.args[0]), T.unliteral(sig.return_type)
    if type(x) is U:
        return U(abs(x.v), x.e, rt)
    if isinstance(rt, T.Float):
        return make(abs(float(cast(x, rt))), rt)
    n = int(cast(cast(x, at), rt))
    return S.NP_OF_NB[rt](S.wrap(abs(n), rt))


def _minmax(args, is_max: bool):
    items = args[0] if len(args) == 1 and type(args[0]) is tuple else args
    if not items:
        raise GeneratorError("min/max of nothing")
    rt = S.unify(*[T.unliteral(nbt(v)) for v in items])
    if rt is None:
        raise GeneratorError("min/max of types with no common type")
    vals = [cast(v, rt) for v in items]
    acc = vals[0]
    for v in vals[1:]:
        if type(v) is U or type(acc) is U:
            # Continuous: the result is within max(errors) of the reference's choice.
            a, b = fval(acc), fval(v)
            better = (b > a) if is_max else (b < a)
            e = max(ferr(acc), ferr(v))
            val = b if better else a
            acc = U(val, e, rt) if e else make(val, rt)
            continue
        if isinstance(rt, T.Float):
            better = float(v) > float(acc) if is_max else float(v) < float(acc)
        else:
            better = int(v) > int(acc) if is_max else int(v) < int(acc)
        if better:
            acc = v
    return acc


def _min(*args):
    return _minmax(args, False)


def _max(*args):
    return _minmax(args, True)


def _round(x, nd=None):
    t = nbt(x)
    if nd is None:
        sig = S.resolve(builtins.round, (t,))
        at, rt = T.unliteral(sig.args[0]), T.unliteral(sig.return_type)
        if isinstance(at, T.Integer):
            return cast(x, rt)
        xv = cast(x, at)
        return S.NP_OF_NB[rt](S.float_to_int(fval(xv), ferr(xv), rt, how=builtins.round))
    sig = S.resolve(builtins.round, (t, nbt(nd)))
    if sig is None:
        raise GeneratorError(f"round({t}, {nbt(nd)})")
    at, rt = T.unliteral(sig.args[0]), T.unliteral(sig.return_type)
    xv = cast(x, at)
    n = int(nd)
    if not -30 <= n <= 30:
        raise S.Unspecified("round() with a large ndigits")

    def rint(y):  # round half to even, keeping the sign of zero (rint(-0.3) is -0.0)
        r = float(builtins.round(y))
        return math.copysign(r, y) if r == 0.0 else r

    def rnd(v):
        if math.isinf(v) or v != v:
            return v
        if n >= 0:
            p = float(10 ** n) if n <= 10 else S.f32r(float(10 ** n))
            y = S.f32r(v * p)
            if math.isinf(y):
                return v
            return S.fdiv(rint(y), p)
        p = float(10 ** -n) if -n <= 10 else S.f32r(float(10 ** -n))
        y = S.fdiv(v, p)
        return S.f32r(rint(y) * p)

    v = rnd(fval(xv))
    e = ferr(xv)
    if e:
        if rnd(S.f32r(fval(xv) - e)) != v or rnd(S.f32r(fval(xv) + e)) != v:
            raise Unstable("round() of an uncertain value")
    return make(v, rt)


def _int(x):
    sig = S.resolve(builtins.int, (T.unliteral(nbt(x)),))
    if sig is None:
        raise GeneratorError(f"int({nbt(x)})")
    return cast(x, T.unliteral(sig.return_type))


def _float(x=None):
    if x is None:
        return 0.0
    sig = S.resolve(builtins.float, (T.unliteral(nbt(x)),))
    if sig is None:
        raise GeneratorError(f"float({nbt(x)})")
    return cast(x, T.unliteral(sig.return_type))


def _bool(x=None):
    if x is None:
        return np.bool_(False)
    return np.bool_(S.truth(x))


def _len(x):
    if isinstance(x, np.ndarray):
        return np.int64(x.shape[0])
    if type(x) is tuple:
        return np.int64(len(x))
    raise GeneratorError(f"len() of {type(x).__name__}")


def _range(*args):
    tys = tuple(T.unliteral(nbt(a)) for a in args)
    sig = S.resolve(builtins.range, tys)
    if sig is None:
        raise GeneratorError(f"range{tys}")
    dt = sig.return_type.dtype
    vals = [int(cast(a, dt)) for a in args]
    if len(vals) == 1:
        r = builtins.range(vals[0])
    elif len(vals) == 2:
        r = builtins.range(vals[0], vals[1])
    else:
        if vals[2] == 0:
            raise GeneratorError("range() step 0")
        r = builtins.range(*vals)
    if len(r) > 10_000:
        raise GeneratorError(f"range of {len(r)} iterations")
    mk = S.NP_OF_NB[dt]
    return (mk(v) for v in r)


def _pow(a, b):
    return S.binop("**", a, b)


# ---------------------------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------------------------


class _MathNS:
    pi = math.pi
    e = math.e
    tau = math.tau
    inf = math.inf
    nan = math.nan

    def __init__(self):
        for name in S.FUNCTION_ULPS:
            if hasattr(math, name):
                setattr(self, name, self._transcendental(name))

    @staticmethod
    def _sig(name, args):
        sig = S.resolve(getattr(math, name), tuple(T.unliteral(nbt(a)) for a in args))
        if sig is None:
            raise GeneratorError(f"math.{name}{tuple(nbt(a) for a in args)}")
        return [T.unliteral(t) for t in sig.args], T.unliteral(sig.return_type)

    def _transcendental(self, name):
        def fn(*args):
            ats, rt = self._sig(name, args)
            xs = [cast(a, t) for a, t in zip(args, ats)]
            frt = rt if isinstance(rt, T.Float) else T.float64
            fargs = [fval(cast(x, frt)) if not isinstance(nbt(x), T.Float) else fval(x) for x in xs]
            errs = [ferr(x) for x in xs]
            return S.apply_math(name, fargs, errs, frt)
        fn.__name__ = name
        return fn

    def sqrt(self, x):
        (at,), rt = self._sig("sqrt", (x,))
        xv = cast(x, at)
        if not isinstance(nbt(xv), T.Float):   # Numba's sqrt(int) converts inside: to float32 on the device
            xv = cast(xv, rt if isinstance(rt, T.Float) else T.float64)
        v = fval(xv)
        r = S.f32r(math.sqrt(v)) if v >= 0 or v != v else (math.nan if v == v else v)
        if v != v:
            r = math.nan
        e = ferr(xv)
        if not e:
            return make(r, rt)
        if v - e < 0:
            raise Unstable("sqrt of an uncertain value near zero")
        lo = math.sqrt(v - e)
        return S._uval(r, 2.0 * (r - lo) if r > lo else e, rt)

    def fabs(self, x):
        (at,), rt = self._sig("fabs", (x,))
        xv = cast(x, at)
        if type(xv) is U:
            return U(abs(xv.v), xv.e, rt)
        return make(abs(float(xv)), rt)

    def copysign(self, x, y):
        ats, rt = self._sig("copysign", (x, y))
        xv, yv = cast(x, ats[0]), cast(y, ats[1])
        if type(yv) is U and abs(yv.v) <= yv.e:
            raise Unstable("copysign with an uncertain sign")
        if fval(yv) != fval(yv):
            # The sign bit of a NaN produced by arithmetic is unspecified (x86's default NaN is negative,
            # CPython's math.nan positive; MSL says nothing): copysign would only compare platforms.
            raise Unstable("copysign with a NaN sign")
        v = math.copysign(fval(xv), fval(yv))
        return U(v, xv.e, rt) if type(xv) is U else make(v, rt)

    def _fmodlike(self, name, x, y):
        tx, ty = T.unliteral(nbt(x)), T.unliteral(nbt(y))
        if tx == T.float32 and ty == T.float32:
            rt = T.float32
        elif isinstance(tx, T.Float) and isinstance(ty, T.Float):
            rt = T.float64
        else:
            raise GeneratorError(f"math.{name}({tx}, {ty}) (the generator passes floats)")
        a, b = cast(x, rt), cast(y, rt)
        if type(a) is U or type(b) is U:
            raise Unstable(f"math.{name} of uncertain values")
        av, bv = float(a), float(b)
        if name == "fmod":
            return make(S.fmod(av, bv), rt)
        if av != av or bv != bv or math.isinf(av) or bv == 0.0:
            return make(math.nan, rt)
        if math.isinf(bv):
            return make(av, rt)
        return make(S.f32r(math.remainder(av, bv)), rt)

    def fmod(self, x, y):
        return self._fmodlike("fmod", x, y)

    def remainder(self, x, y):
        return self._fmodlike("remainder", x, y)

    def _rounding(self, name, x, how):
        (at,), rt = self._sig(name, (x,))
        xv = cast(x, at)
        if isinstance(at, T.Integer):
            return cast(xv, rt)
        return S.NP_OF_NB[rt](S.float_to_int(fval(xv), ferr(xv), rt, how=how))

    def floor(self, x):
        return self._rounding("floor", x, math.floor)

    def ceil(self, x):
        return self._rounding("ceil", x, math.ceil)

    def trunc(self, x):
        return self._rounding("trunc", x, math.trunc)

    def _pred(self, name, x):
        (at,), _ = self._sig(name, (x,))
        xv = cast(x, at)
        if isinstance(at, T.Integer):
            return np.bool_(name == "isfinite")
        v = fval(xv)  # U values are finite by construction
        return np.bool_(getattr(math, name)(v))

    def isnan(self, x):
        return self._pred("isnan", x)

    def isinf(self, x):
        return self._pred("isinf", x)

    def isfinite(self, x):
        return self._pred("isfinite", x)

    def ldexp(self, x, n):
        ats, rt = self._sig("ldexp", (x, n))
        xv = cast(x, ats[0])
        k = max(-1000, min(1000, int(n)))
        if type(xv) is U:
            return S._uval(S.f32r(math.ldexp(xv.v, k)), math.ldexp(xv.e, k), rt)
        v = float(xv)
        if not math.isfinite(v):
            return make(v, rt)
        try:
            return make(S.f32r(math.ldexp(v, k)), rt)
        except OverflowError:
            return make(math.copysign(math.inf, v), rt)

    def pow(self, x, y):
        return S.binop("**", x, y)

    def nextafter(self, x, y):
        ats, rt = self._sig("nextafter", (x, y))
        xv, yv = cast(x, ats[0]), cast(y, ats[1])
        a, b, ea, eb = fval(xv), fval(yv), ferr(xv), ferr(yv)
        if a != a or b != b:
            return make(math.nan, rt)
        if (ea or eb) and abs(a - b) <= ea + eb:
            raise Unstable("nextafter towards an uncertain side")
        v = float(np.nextafter(np.float32(a), np.float32(b)))   # float64 values are float32 (contract 4)
        return S._uval(v, ea, rt) if ea else make(v, rt)

    def _exact_float(self, name, x):
        (at,), rt = self._sig(name, (x,))
        xv = cast(x, at)
        if type(xv) is U:
            raise Unstable(f"math.{name} of an uncertain value")
        return fval(xv), rt

    def frexp(self, x):
        v, rt = self._exact_float("frexp", x)
        if v == 0.0 or not math.isfinite(v):
            return make(v, rt.types[0]), np.int32(0)
        m, e = math.frexp(v)
        return make(m, rt.types[0]), np.int32(e)

    def modf(self, x):
        v, rt = self._exact_float("modf", x)
        if math.isinf(v):
            return make(math.copysign(0.0, v), rt.types[0]), make(v, rt.types[1])
        f, i = math.modf(v)
        return make(f, rt.types[0]), make(i, rt.types[1])

    def isclose(self, a, b, rel_tol=1e-09, abs_tol=0.0):
        """CPython's formula, evaluated in float32 as the device computes float64 here (contract 4)."""
        ats, _ = self._sig("isclose", (a, b))
        xs = [cast(a, ats[0]), cast(b, ats[1])]
        if any(type(x) is U for x in xs):
            raise Unstable("math.isclose of uncertain values")
        f = np.float32
        x, y, rel, tol = f(fval(xs[0])), f(fval(xs[1])), f(rel_tol), f(abs_tol)
        if x == y:
            return np.bool_(True)
        if np.isinf(x) or np.isinf(y):
            return np.bool_(False)
        with np.errstate(all="ignore"):
            diff = f(abs(f(y - x)))
            close = diff <= abs(f(rel * y)) or diff <= abs(f(rel * x)) or diff <= tol
        return np.bool_(close)


# ---------------------------------------------------------------------------------------------
# numpy (scalar constructors that double as dtypes)
# ---------------------------------------------------------------------------------------------


class _ScalarClass:
    def __init__(self, nptype, nbtype):
        self.type = nptype
        self.dtype = np.dtype(nptype)
        self.nb = nbtype

    def __call__(self, x=0):
        return cast(x, self.nb)

    def __repr__(self):
        return f"np.{self.dtype.name}"


class _NpNS:
    nan = math.nan
    inf = math.inf
    pi = math.pi
    e = math.e

    def __init__(self):
        for nptype, nb in S.NB_OF_NP.items():
            setattr(self, nptype.__name__, _ScalarClass(nptype, nb))
        self.float64 = _ScalarClass(np.float64, T.float64)
        self.bool_ = _ScalarClass(np.bool_, T.boolean)


def _dtype(d):
    if isinstance(d, _ScalarClass):
        return d.dtype
    return np.dtype(d)


# ---------------------------------------------------------------------------------------------
# metal
# ---------------------------------------------------------------------------------------------


class _Dim3:
    def __init__(self, field):
        self._field = field

    @property
    def x(self):
        return np.int32(getattr(STATE.cur, self._field)[0])

    @property
    def y(self):
        return np.int32(getattr(STATE.cur, self._field)[1])

    @property
    def z(self):
        return np.int32(getattr(STATE.cur, self._field)[2])


def _position(field):
    def fn(n):
        v = getattr(STATE.cur, field)
        if n == 1:
            return np.int64(v[0])
        return tuple(np.int64(v[k]) for k in range(int(n)))
    return fn


class _Local:
    @staticmethod
    def array(shape, dtype):
        return np.zeros(shape, dtype=_dtype(dtype))


class _Shared:
    @staticmethod
    def array(shape, dtype):  # pragma: no cover - rewritten to shared_array(site, ...)
        raise GeneratorError("metal.shared.array outside a rewritten kernel")


def shared_array(site, shape, dtype):
    arr = STATE.shared.get(site)
    if arr is None:
        arr = np.zeros(shape, dtype=_dtype(dtype))
        STATE.shared[site] = arr
    return arr


def _atomic(op):
    def fn(ary, idx, *vals):
        ii = _indices(ary, idx)
        nb = S.NB_OF_NP[ary.dtype.type]
        old = ary[ii]
        vs = [cast(v, nb) for v in vals]
        if any(type(v) is U for v in vs):
            raise GeneratorError("uncertain value in an atomic")
        if op == "cas":
            if old == vs[0]:
                ary[ii] = vs[1]
            return old
        v = vs[0]
        if op == "exch":
            new = v
        elif isinstance(nb, T.Float):
            a, b = float(old), float(v)
            if op == "add":
                new = S.f32r(a + b)
            elif op == "sub":
                new = S.f32r(a - b)
            elif op == "max":
                new = b if b > a else a
            elif op == "min":
                new = b if b < a else a
            else:
                raise GeneratorError(f"atomic {op} on floats")
        else:
            a, b = int(old), int(v)
            if op == "inc":
                new = 0 if a >= b else a + 1
            elif op == "dec":
                new = b if (a == 0 or a > b) else a - 1
            else:
                new = {"add": a + b, "sub": a - b, "max": max(a, b), "min": min(a, b),
                       "and_": a & b, "or_": a | b, "xor": a ^ b}[op]
            new = S.wrap(new, nb)
        ary[ii] = new
        return old
    return fn


class _Atomic:
    def __init__(self):
        for op in ("add", "sub", "max", "min", "and_", "or_", "xor", "exch", "inc", "dec", "cas"):
            setattr(self, op, _atomic(op))


def _bits(name):
    """numba.cuda's popc/clz/ffs/brev on a reference integer, in the width of its type."""
    def fn(x):
        ty = nbt(x)
        width = ty.bitwidth
        b = int(x) & ((1 << width) - 1)
        if name == "popc":
            return make(b.bit_count(), ty)
        if name == "clz":
            return make(width - b.bit_length(), ty)
        if name == "ffs":
            return make((b & -b).bit_length(), T.uint32)
        if name == "brev":
            return make(int(format(b, f"0{width}b")[::-1], 2), ty)
        raise GeneratorError(f"metal.{name}")
    return fn


def _high(bits):
    """mulhi-style: the high ``bits`` of the full product, in the arguments' type."""
    def fn(x, y):
        return make((int(x) * int(y)) >> bits, nbt(x))
    return fn


def _mul24(x, y):
    """CUDA's __mul24/__umul24: the low 24 bits of each (sign-extended if signed), the product's low 32."""
    ty = nbt(x)
    a, b = int(x) & 0xFFFFFF, int(y) & 0xFFFFFF
    if ty.signed:
        a = a - 0x1000000 if a >= 0x800000 else a
        b = b - 0x1000000 if b >= 0x800000 else b
    return make(S.wrap(a * b, ty), ty)


def _sad(x, y, z):
    return make(S.wrap(abs(int(x) - int(y)) + int(z), T.uint32), T.uint32)


def _bits_of(x, width):
    return int(x) & ((1 << width) - 1)


def _as(value, ty):
    """``value``'s low bits as a value of the integer type ``ty`` (numba.cuda's signed result types)."""
    return make(S.wrap(value, ty), ty)


class _Libdevice:
    """numba.cuda's libdevice integer functions (the integer rows of numba-metal's LIBDEVICE table), with
    numba.cuda's types: the unsigned functions take and give signed values, computed on their bits."""

    def __init__(self):
        i32, i64 = T.int32, T.int64
        width_fns = {"popc": ("popc", i32), "popcll": ("popc", i64), "clz": ("clz", i32),
                     "clzll": ("clz", i64), "ffs": ("ffs", i32), "ffsll": ("ffs", i64)}
        for name, (base, arg) in width_fns.items():
            setattr(self, name, lambda x, base=base, arg=arg: make(int(_bits(base)(cast(x, arg))), i32))
        self.brev = lambda x: _as(int(format(_bits_of(x, 32), "032b")[::-1], 2), i32)
        self.brevll = lambda x: _as(int(format(_bits_of(x, 64), "064b")[::-1], 2), i64)
        self.mulhi = lambda x, y: _as((int(x) * int(y)) >> 32, i32)
        self.umulhi = lambda x, y: _as((_bits_of(x, 32) * _bits_of(y, 32)) >> 32, i32)
        self.mul64hi = lambda x, y: _as((int(x) * int(y)) >> 64, i64)
        self.umul64hi = lambda x, y: _as((_bits_of(x, 64) * _bits_of(y, 64)) >> 64, i64)
        self.mul24 = _mul24
        self.umul24 = lambda x, y: _as((int(x) & 0xFFFFFF) * (int(y) & 0xFFFFFF), i32)
        self.sad = lambda x, y, z: _as(abs(int(x) - int(y)) + int(z), i32)
        self.usad = lambda x, y, z: _as(abs(_bits_of(x, 32) - _bits_of(y, 32)) + _bits_of(z, 32), i32)
        self.abs = lambda x: _as(abs(int(x)), i32)
        self.llabs = lambda x: _as(abs(int(x)), i64)
        self.max, self.min = (lambda x, y: _as(max(int(x), int(y)), i32)), (lambda x, y: _as(min(int(x), int(y)), i32))
        self.llmax = lambda x, y: _as(max(int(x), int(y)), i64)
        self.llmin = lambda x, y: _as(min(int(x), int(y)), i64)
        self.umax = lambda x, y: _as(max(_bits_of(x, 32), _bits_of(y, 32)), i32)
        self.umin = lambda x, y: _as(min(_bits_of(x, 32), _bits_of(y, 32)), i32)
        self.ullmax = lambda x, y: _as(max(_bits_of(x, 64), _bits_of(y, 64)), i64)
        self.ullmin = lambda x, y: _as(min(_bits_of(x, 64), _bits_of(y, 64)), i64)
        self.hadd = lambda x, y: _as((int(x) + int(y)) >> 1, i32)
        self.rhadd = lambda x, y: _as((int(x) + int(y) + 1) >> 1, i32)
        self.uhadd = lambda x, y: _as((_bits_of(x, 32) + _bits_of(y, 32)) >> 1, i32)
        self.urhadd = lambda x, y: _as((_bits_of(x, 32) + _bits_of(y, 32) + 1) >> 1, i32)

        def byte_perm(x, y, s):
            both = _bits_of(y, 32) << 32 | _bits_of(x, 32)
            sel = _bits_of(s, 32)
            return _as(sum(((both >> (8 * ((sel >> (4 * k)) & 7))) & 0xFF) << (8 * k) for k in range(4)), i32)
        self.byte_perm = byte_perm


def _selp(test, a, b):
    return a if S.truth(test) else b


class _MetalNS:
    def __init__(self):
        for name in ("popc", "clz", "ffs", "brev"):
            setattr(self, name, _bits(name))
        self.libdevice = _Libdevice()
        self.selp = _selp
        self.grid = _position("gid")
        self.gridsize = _position("gsize")
        self.threadgroup_position = _position("tgid")
        self.thread_in_threadgroup = _position("tid")
        self.threads_per_threadgroup = _position("tsize")
        self.threadgroups_per_grid = _position("ngroups")
        self.threadIdx = _Dim3("tid")
        self.blockIdx = _Dim3("tgid")
        self.blockDim = _Dim3("tsize")
        self.gridDim = _Dim3("ngroups")
        self.local = _Local()
        self.shared = _Shared()
        self.atomic = _Atomic()

    @staticmethod
    def jit(fn=None, **options):
        if fn is None:
            return lambda f: f
        return fn

    @staticmethod
    def syncthreads():  # pragma: no cover - rewritten to `yield`
        raise GeneratorError("metal.syncthreads() outside the kernel body")


NAMESPACE_BASE = {
    "min": _min, "max": _max, "abs": _abs, "round": _round, "int": _int, "float": _float,
    "bool": _bool, "len": _len, "range": _range, "pow": _pow,
}


# ---------------------------------------------------------------------------------------------
# Source rewriting
# ---------------------------------------------------------------------------------------------

_BINOP_NAMES = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
                ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&",
                ast.BitOr: "|", ast.BitXor: "^"}
_CMP_NAMES = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_UNARY_NAMES = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}
_PYOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<<": operator.lshift,
          ">>": operator.rshift, "&": operator.and_, "|": operator.or_, "^": operator.xor}


def _r(name: str) -> ast.expr:
    return ast.Attribute(value=ast.Name(id="_R", ctx=ast.Load()), attr=name, ctx=ast.Load())


def _call(fn: str, *args) -> ast.Call:
    return ast.Call(func=_r(fn), args=list(args), keywords=[])


def _is_number_const(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, bool)


def _fold(fn, *values):
    """CPython's compile-time folding of constant operands (its AST optimizer), or None."""
    try:
        r = fn(*values)
    except Exception:  # noqa: BLE001 - CPython leaves such operations to run time
        return None
    if type(r) is int and r.bit_length() > 128:
        return None
    if type(r) not in (int, float, bool):
        return None
    return r


class _Rewriter(ast.NodeTransformer):
    def __init__(self, kernel_name: str, case_index: dict, inline_case: int | None, inline_start: int,
                 barrier_functions=()):
        self.kernel_name = kernel_name
        self.case_index = case_index
        self.inline_case = inline_case
        self.inline_start = inline_start
        self.barrier_functions = set(barrier_functions)
        self.site = 0
        self.in_kernel = False  # inside a function whose barriers become `yield`

    # -- module structure ----------------------------------------------------------------

    def visit_Module(self, node):
        node.body = [s for s in node.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node):
        node.decorator_list = []
        if node.name in self.barrier_functions:
            # A device function with barriers: a generator too; the kernel calls it with `yield from`.
            self.in_kernel = True
            self.generic_visit(node)
            self.in_kernel = False
            return node
        if node.name != self.kernel_name:
            self.generic_visit(node)
            return node
        self.in_kernel = True
        body = []
        for i, stmt in enumerate(node.body):
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id in self.case_index):
                args = [self.visit(a) for a in call.args]
                stmt = ast.Expr(value=_call("run_case", ast.Constant(self.case_index[call.func.id]),
                                            call.func, *args))
                body.append(stmt)
                continue
            body.append(self.visit(stmt))
        if self.inline_case is not None and self.inline_start < len(body):
            inline = body[self.inline_start:]
            handler = ast.ExceptHandler(
                type=_r("Unstable"), name="_e",
                body=[ast.Expr(value=_call("mark", ast.Constant(self.inline_case),
                                           ast.Name(id="tid", ctx=ast.Load()),
                                           ast.Call(func=ast.Name(id="str", ctx=ast.Load()),
                                                    args=[ast.Name(id="_e", ctx=ast.Load())],
                                                    keywords=[])))])
            body = body[:self.inline_start] + [ast.Try(body=inline, handlers=[handler], orelse=[],
                                                       finalbody=[])]
        # Make the kernel a generator (barriers are `yield`s) even when it has no barrier.
        body.insert(0, ast.If(test=ast.Constant(False), body=[ast.Expr(value=ast.Yield())], orelse=[]))
        node.body = body
        self.in_kernel = False
        return node

    # -- statements -------------------------------------------------------------------------

    def visit_Expr(self, node):
        v = node.value
        if (self.in_kernel and isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                and v.func.attr in ("syncthreads", "barrier") and not v.args):
            return ast.Expr(value=ast.Yield())
        self.generic_visit(node)
        return node

    def visit_Assign(self, node):
        value = self.visit(node.value)
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                and value.func.id in self.barrier_functions):
            value = ast.YieldFrom(value=value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
            t = node.targets[0]
            return ast.Expr(value=_call("setitem", self.visit(t.value), self.visit(t.slice), value))
        if any(isinstance(t, ast.Subscript) for t in node.targets):
            raise GeneratorError("chained or tuple assignment to a subscript")
        node.value = value
        return node

    def visit_AugAssign(self, node):
        op = _BINOP_NAMES[type(node.op)]
        value = self.visit(node.value)
        t = node.target
        if isinstance(t, ast.Name):
            return ast.Assign(targets=[ast.Name(id=t.id, ctx=ast.Store())],
                              value=_call("bin", ast.Constant(op), ast.Name(id=t.id, ctx=ast.Load()), value))
        if isinstance(t, ast.Subscript):
            obj, idx = self.visit(t.value), self.visit(t.slice)
            return ast.Expr(value=_call("setitem", obj, idx,
                                        _call("bin", ast.Constant(op), _call("getitem", obj, idx), value)))
        raise GeneratorError("augmented assignment to an attribute")

    # -- expressions ------------------------------------------------------------------------

    def visit_BinOp(self, node):
        left, right = self.visit(node.left), self.visit(node.right)
        op = _BINOP_NAMES[type(node.op)]
        if _is_number_const(left) and _is_number_const(right):
            folded = _fold(_PYOPS[op], left.value, right.value)
            if folded is not None:
                return ast.Constant(folded)
        return _call("bin", ast.Constant(op), left, right)

    def visit_UnaryOp(self, node):
        operand = self.visit(node.operand)
        op = _UNARY_NAMES[type(node.op)]
        if _is_number_const(operand):
            fn = {"-": operator.neg, "+": operator.pos, "~": operator.invert, "not": operator.not_}[op]
            folded = _fold(fn, operand.value)
            if folded is not None:
                return ast.Constant(folded)
        return _call("un", ast.Constant(op), operand)

    def visit_Compare(self, node):
        left = self.visit(node.left)
        comps = [self.visit(c) for c in node.comparators]
        ops = [_CMP_NAMES[type(o)] for o in node.ops]
        if len(ops) == 1:
            return _call("bin", ast.Constant(ops[0]), left, comps[0])
        args = [left]
        for op, c in zip(ops, comps):
            args.append(ast.Constant(op))
            args.append(ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                      kw_defaults=[], defaults=[]), body=c))
        return _call("chain", *args)

    def visit_Subscript(self, node):
        return _call("getitem", self.visit(node.value), self.visit(node.slice))

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr in ("shape", "size", "ndim") and isinstance(node.ctx, ast.Load):
            return _call("attr", node.value, ast.Constant(node.attr))
        return node

    def visit_Call(self, node):
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr == "array" and isinstance(f.value, ast.Attribute)
                and f.value.attr == "shared"):
            self.site += 1
            args = [self.visit(a) for a in node.args]
            return _call("shared_array", ast.Constant(self.site), *args)
        self.generic_visit(node)
        return node


def rewrite(source: str, kernel_name: str, case_index: dict, inline_case: int | None,
            inline_start: int, barrier_functions=()) -> str:
    """The reference version of a generated module (as source text, for reading and running)."""
    tree = ast.parse(source)
    tree = _Rewriter(kernel_name, case_index, inline_case, inline_start, barrier_functions).visit(tree)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def load(source: str, kernel_name: str, case_index: dict, inline_case, inline_start,
         barrier_functions=()) -> dict:
    """Execute the rewritten module; returns its namespace."""
    import sys
    text = rewrite(source, kernel_name, case_index, inline_case, inline_start, barrier_functions)
    ns = dict(NAMESPACE_BASE)
    ns.update({"_R": sys.modules[__name__], "math": _MathNS(), "np": _NpNS(), "metal": _MetalNS(),
               "__name__": "numba_metal_reference"})
    exec(compile(text, "<reference>", "exec"), ns)  # noqa: S102 - generated test code
    return ns


# ---------------------------------------------------------------------------------------------
# Launch
# ---------------------------------------------------------------------------------------------


def launch(kernel, griddim, blockdim, args) -> None:
    """Run ``kernel`` (a rewritten kernel: a generator function) over the grid, threadgroup by
    threadgroup, the threads of a group in lock-step between barriers."""
    gdx, gdy, gdz = griddim
    bdx, bdy, bdz = blockdim
    gsize = (gdx * bdx, gdy * bdy, gdz * bdz)
    STATE.written = {id(a): {} for a in args if isinstance(a, np.ndarray)}
    with np.errstate(all="ignore"):
        for gz in range(gdz):
            for gy in range(gdy):
                for gx in range(gdx):
                    STATE.shared = {}
                    threads = []
                    for tz in range(bdz):
                        for ty in range(bdy):
                            for tx in range(bdx):
                                th = Thread((gx * bdx + tx, gy * bdy + ty, gz * bdz + tz), gsize,
                                            (gx, gy, gz), griddim, (tx, ty, tz), blockdim)
                                threads.append(th)
                    alive = []
                    for th in threads:
                        STATE.cur = th
                        alive.append((th, kernel(*args)))
                    while alive:
                        waiting = []
                        done = 0
                        for th, g in alive:
                            STATE.cur = th
                            try:
                                next(g)
                                waiting.append((th, g))
                            except StopIteration:
                                done += 1
                        if waiting and done:
                            raise GeneratorError("a barrier was not reached by every thread of a "
                                                 "threadgroup")
                        alive = waiting
    STATE.cur = None


# Re-exported for the rewritten code.
Unstable = Unstable

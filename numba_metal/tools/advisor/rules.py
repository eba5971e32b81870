"""What ``scan`` looks for: decorators it recognises, pattern vocabularies, blocker and change rules.

Each blocker and change rule carries a probe: a tiny function containing the construct. The test
suite compiles every probe with ``metal.compile_msl`` and requires the compiler to refuse it, so a
rule cannot outlive the compiler limitation it describes (the earlier advisor's scanner kept
flagging ``while`` loops with ``break`` long after its compiler accepted them).
"""

from __future__ import annotations

from dataclasses import dataclass

from numba_metal import metal

#: Fully qualified decorator -> kind.
DECORATORS = {
    "numba.njit": "njit",
    "numba.jit": "njit",
    "numba.vectorize": "vectorize",
    "numba.guvectorize": "guvectorize",
    "numba.stencil": "stencil",
    "numba.cfunc": "cfunc",
    "numba.cuda.jit": "cuda.jit",
    "numba_metal.metal.jit": "metal.jit",
    "numba_metal.metal.device_func": "metal.device",
}

#: Decorator kinds that already declare data parallelism.
PARALLEL_KINDS = {"vectorize", "guvectorize", "stencil", "metal.jit", "cuda.jit"}

#: Modules the compile check binds (under whatever names the scanned file imports them as).
BOUND_MODULES = ("math", "numpy", "numba_metal.metal", "numba_metal.random")

#: Math function names: the ``math`` functions kernels can call (from numba-metal's math table), plus
#: NumPy's spellings of math functions.
MATH_FUNCS = metal.math_functions() | {
    "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh", "arctanh", "power", "square",
    "absolute", "reciprocal",
}

#: NumPy's ufuncs kernels call as they are (the ufunc table): math lines, no change needed.
NUMPY_UFUNCS = metal.numpy_ufuncs()

ALLOCATING_NUMPY = {
    "zeros", "empty", "ones", "full", "zeros_like", "empty_like", "ones_like", "full_like", "arange",
    "linspace", "array", "asarray", "copy", "concatenate", "stack", "vstack", "hstack", "tile", "repeat",
    "meshgrid", "outer", "where", "sort", "argsort", "unique", "cumsum", "cumprod", "diff",
}

WHOLE_ARRAY_NUMPY = {
    "sum", "mean", "dot", "max", "min", "amax", "amin", "std", "var", "prod", "any", "all", "argmax",
    "argmin", "median", "percentile", "matmul", "vdot", "inner", "einsum", "trace", "nansum", "nanmean",
    "count_nonzero", "histogram", "convolve", "correlate",
}

WHOLE_ARRAY_METHODS = {"sum", "mean", "max", "min", "std", "var", "prod", "any", "all", "argmax", "argmin",
                       "dot", "cumsum", "sort", "argsort", "copy", "reshape", "ravel", "flatten", "transpose",
                       "astype", "tolist", "fill"}


@dataclass(frozen=True)
class Rule:
    id: str
    message: str
    probe: str  # a function ``f(a)`` (a: float32[:]) that the compiler must refuse


#: Constructs a Metal kernel cannot contain; the function needs restructuring, not just edits.
BLOCKERS = {r.id: r for r in [
    Rule("try", "try/except: a GPU thread cannot catch exceptions",
         "def f(a):\n    try:\n        a[0] = 1\n    except Exception:\n        a[0] = 2\n"),
    Rule("with", "`with` blocks (context managers) are not supported in kernels",
         "def f(a):\n    with open('x') as fh:\n        a[0] = 1\n"),
    Rule("io", "file or console I/O (open/input) cannot run on the GPU",
         "def f(a):\n    open('x')\n"),
    Rule("generator", "generators (yield) are not supported in kernels",
         "def f(a):\n    yield a[0]\n"),
    Rule("container", "lists, dicts, sets and comprehensions are not supported; use tuples, "
         "metal.local.array or arrays passed in",
         "def f(a):\n    l = [1, 2]\n    a[0] = l[0]\n"),
    Rule("string", "strings (f-strings, string operations) are not supported in kernels",
         "def f(a):\n    s = f'{a[0]}'\n"),
    Rule("closure", "a lambda or nested function passed on (not only called) that reads a value the kernel "
         "computes at run time (only constants are baked into a function defined in a kernel); pass the "
         "value as an argument",
         "@metal.jit(device=True)\ndef apply(g, x):\n    return g(x)\n\n"
         "def f(a):\n    t = a[1]\n    a[0] = apply(lambda x: x + t, a[0])\n"),
    Rule("global", "global/nonlocal assignment: kernels cannot change Python state",
         "def f(a):\n    global G\n    G = 1\n"),
    Rule("attribute-store", "assigning to an attribute: kernels cannot change Python objects",
         "def f(a):\n    a.x = 1\n"),
    Rule("recursion", "recursion is not supported in Metal kernels",
         "def f(a):\n    f(a)\n"),
    Rule("allocation", "allocates an array: kernels cannot allocate; pass the output in (or use "
         "metal.local.array for a small fixed size)",
         "def f(a):\n    b = np.zeros(3, np.float32)\n    a[0] = b[0]\n"),
    Rule("whole-array", "a whole-array NumPy operation: a kernel works element by element (a reduction "
         "needs a reduction kernel)",
         "def f(a):\n    a[0] = np.sum(a)\n"),
]}

#: Edits that make the code acceptable to the compiler without changing its structure.
CHANGES = {r.id: r for r in [
    Rule("numpy-math", "NumPy math that is not a ufunc kernels call (np.isclose...): call math.* instead",
         "def f(a):\n    a[0] = np.isclose(a[0], 1.0)\n"),
    Rule("random", "host random numbers: use numba_metal.random (xoroshiro128+, one state per thread)",
         "def f(a):\n    a[0] = np.random.random()\n"),
    Rule("float64", "float64: Apple GPUs have no float64; numba-metal computes float64 data exactly in "
         "software (emulated, many times slower than float32): use float32 where its precision suffices",
         "def f(a):\n    a[0] = 1.0\n"),
]}
#: The float64 change is a speed change, not a construct the compiler refuses: float64 data compiles to
#: the emulated float64 library; its probe is checked with a float64 signature.
FLOAT64_PROBE_SIGNATURE = "void(float64[:])"

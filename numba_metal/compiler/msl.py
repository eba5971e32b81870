"""Every Metal Shading Language spelling numba-metal emits, as tables.

Code generation looks things up here and never formats MSL ad hoc: scalar type names, literal
syntax, address spaces, kernel builtin attributes, operator templates and the prelude. A reader who
wants to know how a Python operation is spelt in MSL reads this module.
"""

from __future__ import annotations

import math
import os
import re
import struct

from numba.core import types

# ---------------------------------------------------------------------------------------------
# Scalar types. float64 has no MSL type: float64 intermediates compute in float32 (design.md,
# contract 4); float64 arrays and arguments are refused before code generation.
# ---------------------------------------------------------------------------------------------

SCALAR_TYPES = {
    types.boolean: "bool",
    types.int8: "char",
    types.int16: "short",
    types.int32: "int",
    types.int64: "long",
    types.uint8: "uchar",
    types.uint16: "ushort",
    types.uint32: "uint",
    types.uint64: "ulong",
    types.float16: "half",
    types.float32: "float",
    types.float64: "float",
}

#: The unsigned type of the same width, used to spell wrapping signed arithmetic.
UNSIGNED_OF = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong"}

#: Byte size and struct-module code of each scalar as stored in the packed argument block.
SCALAR_LAYOUT = {
    types.boolean: (1, "?"),
    types.int8: (1, "b"),
    types.int16: (2, "h"),
    types.int32: (4, "i"),
    types.int64: (8, "q"),
    types.uint8: (1, "B"),
    types.uint16: (2, "H"),
    types.uint32: (4, "I"),
    types.uint64: (8, "Q"),
    types.float16: (2, "e"),
    types.float32: (4, "f"),
}


def scalar_type(ty) -> str | None:
    """MSL name of a Numba scalar type (literal types use their underlying type), or None."""
    if isinstance(ty, types.Literal):
        ty = ty.literal_type
    if isinstance(ty, types.Boolean):
        return "bool"
    return SCALAR_TYPES.get(ty)


def is_signed_int(ty) -> bool:
    return isinstance(ty, types.Integer) and ty.signed


# ---------------------------------------------------------------------------------------------
# Address spaces
# ---------------------------------------------------------------------------------------------

ADDRESS_SPACES = {"device": "device", "threadgroup": "threadgroup", "thread": "thread",
                  "constant": "constant"}


def pointer(space: str, element: str) -> str:
    return f"{ADDRESS_SPACES[space]} {element}*"


# ---------------------------------------------------------------------------------------------
# Literals. Every float literal carries a suffix so that nothing is ever computed in double (a C++
# compiler would otherwise do so for `1.5`), and half literals are spelt as conversions.
# ---------------------------------------------------------------------------------------------

INT_SUFFIX = {"char": "", "short": "", "int": "", "uint": "u", "long": "l", "ulong": "ul",
              "uchar": "u", "ushort": "u"}


_FLT_MAX = 3.4028234663852886e38
_FLT_INF_EDGE = 2.0 ** 128 - 2.0 ** 103  # from here on a double rounds to float32 infinity


def to_float32(value: float) -> float:
    """``value`` rounded to float32 (struct refuses finite values above FLT_MAX)."""
    if abs(value) >= _FLT_INF_EDGE:
        return math.copysign(math.inf, value)
    if abs(value) > _FLT_MAX:
        return math.copysign(_FLT_MAX, value)
    return struct.unpack("<f", struct.pack("<f", value))[0]


def float_literal(value: float, msl_type: str = "float") -> str:
    if math.isnan(value):
        text = "NAN"
    elif math.isinf(value):
        text = "INFINITY" if value > 0 else "(-INFINITY)"
    else:
        f32 = to_float32(value)
        if math.isinf(f32):
            text = "INFINITY" if value > 0 else "(-INFINITY)"
        else:
            text = _shortest_float32(value)
    if msl_type == "half":
        return f"half({text})"
    return text


def _shortest_float32(value: float) -> str:
    """The shortest decimal that rounds to the same float32 as ``value``, with an ``f`` suffix."""
    exact = to_float32(value)
    # A short decimal only if it *is* the float32 value (0.5, 2.0, 1.25); otherwise 9 significant
    # digits, which every correctly rounding decimal-to-float32 parse maps back to the same float32.
    text = f"{exact:.9g}"
    for digits in range(1, 9):
        candidate = f"{exact:.{digits}g}"
        if float(candidate) == exact:
            text = candidate
            break
    if "e" not in text and "." not in text and "inf" not in text and "nan" not in text:
        text += ".0"
    elif "e" in text and "." not in text.split("e")[0]:
        mant, exp = text.split("e")
        text = f"{mant}.0e{exp}"
    if text.startswith("-"):
        return f"({text}f)"
    return text + "f"


def int_literal(value: int, msl_type: str) -> str:
    if msl_type == "bool":
        return "true" if value else "false"
    if msl_type == "long" and value == -(1 << 63):
        return "(-9223372036854775807l - 1l)"
    if msl_type == "int" and value == -(1 << 31):
        return "(-2147483647 - 1)"
    suffix = INT_SUFFIX.get(msl_type, "")
    text = f"{value}{suffix}"
    if msl_type in ("char", "short", "uchar", "ushort"):
        text = f"{msl_type}({value})"
    if value < 0:
        return f"({text})"
    return text


def literal(value, msl_type: str) -> str:
    """MSL spelling of a Python constant converted to ``msl_type``."""
    if msl_type in ("float", "half"):
        return float_literal(float(value), msl_type)
    if msl_type == "bool":
        return "true" if value else "false"
    return int_literal(int(value), msl_type)


# ---------------------------------------------------------------------------------------------
# Identifiers
# ---------------------------------------------------------------------------------------------

_IDENT = re.compile(r"[^A-Za-z0-9_]")


def identifier(name: str, prefix: str = "v_") -> str:
    """A valid, collision-free-by-prefix MSL identifier for a Numba IR variable name."""
    return prefix + _IDENT.sub("_", name)


# ---------------------------------------------------------------------------------------------
# Kernel builtins: every kernel receives these and packs them into one `nm_ctx` value that device
# functions take as their first parameter (Metal allows builtin attributes only on kernel parameters).
# ---------------------------------------------------------------------------------------------

#: (ctx field, MSL type, attribute)
KERNEL_BUILTINS = (
    ("gid", "uint3", "thread_position_in_grid"),
    ("gsize", "uint3", "threads_per_grid"),
    ("tgid", "uint3", "threadgroup_position_in_grid"),
    ("ngroups", "uint3", "threadgroups_per_grid"),
    ("tid", "uint3", "thread_position_in_threadgroup"),
    ("tsize", "uint3", "threads_per_threadgroup"),
    ("lane", "uint", "thread_index_in_simdgroup"),
    ("sgid", "uint", "simdgroup_index_in_threadgroup"),
)

#: Metal limits (Apple4 and later): threadgroup memory of one threadgroup, buffer-table entries.
MAX_THREADGROUP_MEMORY = 32 * 1024
MAX_BUFFER_SLOTS = 31

CTX_TYPE = "nm_ctx"
CTX_PARAM = "nm_c"
ARGS_PARAM = "nm_args"
FLAG_VAR = "nm_br"
KERNEL_QUALIFIER = "kernel void"
DEVICE_FUNCTION_QUALIFIER = "static NM_INLINE"


def buffer_attribute(index: int) -> str:
    return f"[[buffer({index})]]"


def threadgroup_attribute(index: int) -> str:
    return f"[[threadgroup({index})]]"


def builtin_attribute(name: str) -> str:
    return f"[[{name}]]"


VECTOR_COMPONENTS = ("x", "y", "z")

# ---------------------------------------------------------------------------------------------
# Operators. Templates take already-converted operand expressions {a}, {b} and the operand MSL type
# {t}; the signedness-sensitive and Python-semantics ones call prelude helpers.
# ---------------------------------------------------------------------------------------------

#: Wrapping signed arithmetic is spelt through the unsigned type (signed overflow is undefined in MSL).
WRAPPING_BINOPS = {"+": "+", "-": "-", "*": "*"}

COMPARISONS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}
BITWISE = {"&": "&", "|": "|", "^": "^"}

#: Python-semantics helpers in the prelude, by operator and operand kind.
HELPERS = {
    ("//", "int"): "nm_floordiv",
    ("%", "int"): "nm_mod",
    ("//", "float"): "nm_floordiv",
    ("%", "float"): "nm_mod",
    ("**", "int"): "nm_ipow",
    ("**", "float"): "nm_pow",
    ("**", "floatint"): "nm_powi",
    ("<<", "int"): "nm_shl",
    (">>", "int"): "nm_shr",
}

# ---------------------------------------------------------------------------------------------
# Math functions: Python name → MSL function (`metal::` library or a numba-metal prelude function).
# ---------------------------------------------------------------------------------------------

MATH_FUNCTIONS = {
    "acos": "acos", "asin": "asin", "atan": "atan", "atan2": "atan2", "acosh": "acosh",
    "asinh": "asinh", "atanh": "atanh", "cos": "cos", "sin": "sin", "tan": "tan", "cosh": "cosh",
    "sinh": "sinh", "tanh": "tanh", "exp": "exp", "exp2": "exp2", "log2": "log2", "log10": "log10",
    "sqrt": "sqrt", "fabs": "fabs", "copysign": "copysign", "fmod": "nm_fmod",
    "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "hypot": "nm_hypot", "expm1": "nm_expm1", "log1p": "nm_log1p", "erf": "nm_erf",
    "erfc": "nm_erfc", "gamma": "nm_tgamma", "lgamma": "nm_lgamma", "remainder": "nm_remainder",
    "log": "nm_log", "pow": "nm_pow", "ldexp": "nm_ldexp", "degrees": "nm_degrees",
    "radians": "nm_radians",
}

#: Functions of the numba-metal math library (compiler/mathlib.metal) rather than the prelude.
MATHLIB_FUNCTIONS = {"nm_hypot", "nm_expm1", "nm_log1p", "nm_erf", "nm_erfc", "nm_tgamma",
                     "nm_lgamma", "nm_remainder", "nm_cbrt"}

# ---------------------------------------------------------------------------------------------
# The prelude: MSL helper snippets, included on demand with their dependencies.
# ---------------------------------------------------------------------------------------------

_HERE = os.path.dirname(__file__)
_SNIPPET_HEADER = re.compile(r"^//@@\s+(\S+)(?:\s+requires:\s*(.*))?$")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


class SnippetLibrary:
    """MSL snippets parsed from a .metal file whose sections start with `//@@ name requires: a b`."""

    def __init__(self, filename: str):
        self.filename = filename
        self._snippets: dict[str, tuple[tuple[str, ...], str]] | None = None

    def _load(self):
        snippets: dict[str, tuple[tuple[str, ...], str]] = {}
        name = None
        deps: tuple[str, ...] = ()
        lines: list[str] = []
        with open(os.path.join(_HERE, self.filename), encoding="utf-8") as f:
            for line in f:
                m = _SNIPPET_HEADER.match(line.rstrip("\n"))
                if m:
                    if name is not None:
                        snippets[name] = (deps, "".join(lines))
                    name = m.group(1)
                    deps = tuple((m.group(2) or "").split())
                    lines = []
                elif name is not None:
                    lines.append(line)
        if name is not None:
            snippets[name] = (deps, "".join(lines))
        self._snippets = snippets

    def __contains__(self, name: str) -> bool:
        if self._snippets is None:
            self._load()
        return name in self._snippets

    def closure(self, names) -> list[str]:
        """Names in dependency order (dependencies first), each once."""
        if self._snippets is None:
            self._load()
        out: list[str] = []
        seen: set[str] = set()

        def visit(n):
            if n in seen:
                return
            seen.add(n)
            for d in self._snippets[n][0]:
                visit(d)
            out.append(n)

        for n in sorted(names):
            visit(n)
        return out

    def text(self, name: str) -> str:
        if self._snippets is None:
            self._load()
        return self._snippets[name][1]


PRELUDE = SnippetLibrary("prelude.metal")

"""Every piece of Metal Shading Language syntax numba-metal emits.

Code generation builds MSL only through this module: type names, literals, expressions, statements,
declarations, attributes and the prelude. What is called (an MSL library function, a prelude helper, a
math-library routine) is data in the tables of the compiler and the kernel-API families; how a call, a
cast or a statement is written is here. A reader who wants to know how something is spelt in MSL reads
this module.
"""

from __future__ import annotations

import math
import os
import re
import struct

# ---------------------------------------------------------------------------------------------
# Scalar types, by Numba type name. float64 is spelt here as it is in a kernel that holds no float64
# data (computed in float32, docs/limitations.md); a kernel that holds float64 data spells it
# ``FLOAT64`` (the emulated library's value type) and stores it as ``FLOAT64_STORAGE``.
# ---------------------------------------------------------------------------------------------

#: MSL versions as the runtime's ``language_version`` takes them. Code needing nothing newer than MSL 3.0
#: (macOS 13, numba-metal's oldest) asks for no version (the Metal backend then pins MSL 3.0); MSL 3.2 (macOS 15) brings ``atomic_thread_fence``
#: with a ``thread_scope`` and ``coherent(device)`` memory (§4.8, §6.15.1).
ANY_VERSION = 0
VERSION_3_1 = 310   # macOS 14: atomic_ulong's max and min (§6.15.4)
VERSION_3_2 = 320

SCALAR_TYPES = {
    "bool": "bool",
    "int8": "char",
    "int16": "short",
    "int32": "int",
    "int64": "long",
    "uint8": "uchar",
    "uint16": "ushort",
    "uint32": "uint",
    "uint64": "ulong",
    "float16": "half",
    "float32": "float",
    "float64": "float",
}

#: The emulated float64 (compiler/mslib/float64.metal): a struct around the IEEE binary64 pattern, which
#: memory (arrays, the argument struct) holds as a ``ulong``.
FLOAT64 = "nm_f64"
FLOAT64_STORAGE = "ulong"
FLOAT64_BITS = "bits"

#: Complex numbers (compiler/mslib/complex.metal): complex128 is a struct of two emulated float64 (``re``,
#: ``im``), held in memory as a ``ulong2`` of their bit patterns (NumPy's layout); complex64 is MSL's
#: ``float2`` (``x`` real, ``y`` imaginary), NumPy's layout too.
COMPLEX128 = "nm_c128"
COMPLEX128_STORAGE = "ulong2"
COMPLEX128_PARTS = ("re", "im")
COMPLEX64 = "float2"
COMPLEX64_PARTS = ("x", "y")

#: SIMD-group matrices (MSL 2.3 and later, specification section 2.4): the 8x8 matrix type of each element
#: type (bfloat8x8, MSL 3.1, is not offered).
SIMDGROUP_MATRIX_TYPES = {"float": "simdgroup_float8x8", "half": "simdgroup_half8x8"}

#: The unsigned type of the same width, used to spell wrapping signed arithmetic.
UNSIGNED_OF = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong"}


def scalar_type(ty) -> str | None:
    """MSL name of a Numba scalar type (literal types use their underlying type), or None."""
    return SCALAR_TYPES.get(str(getattr(ty, "literal_type", ty)))


def vector_type(element: str, count: int) -> str:
    """An MSL vector type: ``float4``, ``long2``."""
    return f"{element}{count}"


def pointer(space: str, element: str, coherent: bool = False, const: bool = False) -> str:
    """A pointer type: ``device float*``; ``const`` gives ``device const float*``; ``coherent`` (MSL 3.2,
    device memory shared through fences across threadgroups) gives ``coherent(device) device float*``."""
    text = f"{space} {'const ' if const else ''}{element}*"
    return f"coherent(device) {text}" if coherent else text


def reference(space: str, element: str, const: bool = False) -> str:
    """A reference type: ``constant nm_args&``, ``thread const nm_env&``."""
    return f"{space} {'const ' if const else ''}{element}&"


def template(name: str, *args) -> str:
    """A template instance: ``nm_arr<device float*, 2>``."""
    return f"{name}<{', '.join(str(a) for a in args)}>"


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


def float64_bits_literal(value) -> str:
    """The IEEE binary64 pattern of ``value`` as a ``ulong`` literal (``0x3FF0000000000000UL``)."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', float(value)))[0]:016X}UL"


def float64_literal(value) -> str:
    """An emulated float64 constant: exactly ``value``, NaN payload and sign of zero kept."""
    return call("nm_f64_from_bits", float64_bits_literal(value))


def literal(value, msl_type: str) -> str:
    """MSL spelling of a Python constant converted to ``msl_type``."""
    if msl_type == FLOAT64:
        return float64_literal(value)
    if msl_type in ("float", "half"):
        return float_literal(float(value), msl_type)
    if msl_type == "bool":
        return "true" if value else "false"
    return int_literal(int(value), msl_type)


def long_literal(value: int) -> str:
    """A ``long`` (int64) literal: index arithmetic is 64-bit."""
    return int_literal(int(value), "long")


def uint_literal(value: int) -> str:
    return int_literal(int(value), "uint")


TRUE = "true"
FALSE = "false"
NULL = "nullptr"

# ---------------------------------------------------------------------------------------------
# Identifiers
# ---------------------------------------------------------------------------------------------

_IDENT = re.compile(r"[^A-Za-z0-9_]")


def identifier(name: str, prefix: str = "v_") -> str:
    """A valid, collision-free-by-prefix MSL identifier for a Numba IR variable name."""
    return prefix + _IDENT.sub("_", name)


def numbered(prefix: str, n: int) -> str:
    """The ``n``-th name of a kind the compiler numbers (``nm_t3``, ``nm_tuple0``...)."""
    return f"{prefix}{n}"


def tuple_field(k: int) -> str:
    """The name of a tuple struct's ``k``-th member."""
    return f"f{k}"


def join_names(*parts) -> str:
    """A name made of parts (``a0_shape1``): generated names that must not collide."""
    return "_".join(str(p) for p in parts)


# ---------------------------------------------------------------------------------------------
# Expressions. Compound expressions are parenthesised, so they compose without precedence worries.
# ---------------------------------------------------------------------------------------------


def call(function: str, *args) -> str:
    return f"{function}({', '.join(args)})"


def _unparenthesised(expr: str) -> str:
    """``expr`` without parentheses that enclose all of it (a call's parentheses delimit it already)."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return expr
    depth = 0
    for i, c in enumerate(expr):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and i < len(expr) - 1:
            return expr  # "(a) + (b)": the first parenthesis closes before the end
    return expr[1:-1]


def cast(msl_type: str, expr: str) -> str:
    """A value conversion, written as a constructor call: ``float(x)``."""
    return f"{msl_type}({_unparenthesised(expr)})"


def pointer_cast(pointer_type: str, expr: str) -> str:
    """A pointer reinterpreted as another pointer type: ``((device atomic_int*)p)``."""
    return f"(({pointer_type}){expr})"


def reinterpret(msl_type: str, expr: str) -> str:
    """The bits of ``expr`` as ``msl_type`` (MSL's ``as_type``)."""
    return f"as_type<{msl_type}>({expr})"


def static_cast(msl_type: str, expr: str) -> str:
    return f"static_cast<{msl_type}>({expr})"


def binary(op: str, a: str, b: str) -> str:
    return f"({a} {op} {b})"


def sum_of(terms) -> str:
    """``a + b + c`` (parenthesised when there is more than one term)."""
    terms = list(terms)
    return terms[0] if len(terms) == 1 else "(" + " + ".join(terms) + ")"


def all_of(conditions) -> str:
    """Boolean conditions combined with ``&`` (every one is evaluated)."""
    conditions = list(conditions)
    return conditions[0] if len(conditions) == 1 else "(" + " & ".join(conditions) + ")"


def unary(op: str, a: str) -> str:
    return f"({op}{a})"


def select(condition: str, if_true: str, if_false: str) -> str:
    return f"({condition} ? {if_true} : {if_false})"


def member(expr: str, name: str) -> str:
    return f"{expr}.{name}"


def index(expr: str, i) -> str:
    return f"{expr}[{i}]"


def address_of(expr: str) -> str:
    return f"(&{expr})"


def size_of_pointee(pointer: str) -> str:
    """The bytes of what ``pointer`` points to: ``sizeof(*p)``."""
    return f"sizeof(*{pointer})"


def braces(items) -> str:
    """A brace-enclosed initializer list: ``{a, b}``."""
    return "{" + ", ".join(items) + "}"


def aggregate(msl_type: str, items) -> str:
    """A value of an aggregate type from its members: ``nm_tuple0{a, b}``."""
    return msl_type + braces(items)


def qualified(namespace: str, name: str) -> str:
    """A name in an MSL namespace or enumeration: ``mem_flags::mem_device``."""
    return f"{namespace}::{name}"


def flags(*names) -> str:
    """Flags combined: ``a | b``."""
    return " | ".join(names)


# ---------------------------------------------------------------------------------------------
# Statements and declarations (without indentation; the function lowering indents).
# ---------------------------------------------------------------------------------------------

BREAK = "break;"
CONTINUE = "continue;"
LOOP = "while (true) {"
DO_ONCE = "do {"
DO_ONCE_END = "} while (false);"
ELSE = "} else {"
END = "}"


def statement(expr: str) -> str:
    return expr + ";"


#: Where a ``threadgroup_barrier`` call came from, in a comment after it (Metal ignores it): the CPU device
#: reads it back (KernelGlue.swift, ``barrierSites``) to name the barrier when threads diverge at barriers.
BARRIER_SITE_PREFIX = "/* nm barrier at "


def barrier_site(filename: str, line: int) -> str:
    """The comment naming a barrier's Python location: the file's name (not its directory, so a kernel's MSL
    does not depend on where its project is checked out) and line."""
    name = os.path.basename(filename or "?").replace("*/", "* /")
    return f"{BARRIER_SITE_PREFIX}{name}:{line} */"


def assign(target: str, value: str) -> str:
    return f"{target} = {value};"


def add_assign(target: str, value: str) -> str:
    return f"{target} += {value};"


def if_(condition: str) -> str:
    """The opening line of an ``if`` block."""
    return f"if ({condition}) {{"


def for_count(var: str, count: str) -> str:
    """The opening line of a loop of ``var`` (a new ``long``) over ``0 .. count - 1``."""
    return f"for (long {var} = 0l; {var} < {count}; {var}++) {{"


def if_statement(condition: str, body: str) -> str:
    """``if (c) { body }`` on one line."""
    return f"if ({condition}) {{ {body} }}"


#: Leaves a function returning its type's zero value (a device function's result after a raise).
RETURN_DEFAULT = "return {};"


def return_(expr: str | None = None) -> str:
    return "return;" if expr is None else f"return {expr};"


def declare(msl_type: str, name: str, init: str | None = None) -> str:
    """A local variable: zero-initialised (``T x{};``) or initialised (``T x = init;``)."""
    return f"{msl_type} {name}{{}};" if init is None else f"{msl_type} {name} = {init};"


def declare_uninitialized(msl_type: str, name: str) -> str:
    """A variable that may not have an initializer (a threadgroup variable)."""
    return f"{msl_type} {name};"


def declare_array(element: str, name: str, length: int, space: str | None = None, zero: bool = False) -> str:
    """A fixed-size array: ``threadgroup float s[256];`` or a zeroed ``float l[4] = {};``."""
    text = f"{element} {name}[{length}]"
    if space is not None:
        text = f"{space} {text}"
    return text + (" = {};" if zero else ";")


def struct_definition(name: str, members) -> str:
    """``struct name { T a; ... };`` from (type, name) members, one per line."""
    body = "".join(f"    {t} {m};\n" for t, m in members)
    return f"struct {name} {{\n{body}}};"


def record_definition(name: str, size: int) -> str:
    """A record (NumPy structured dtype) as ``size`` bytes: ``sizeof`` is NumPy's itemsize and its fields
    are read at their byte offsets (``field_pointer``)."""
    return f"struct {name} {{\n    uchar bytes[{size}];\n}};"


def field_pointer(pointer_type: str, byte_pointer_type: str, record: str, offset: int) -> str:
    """A pointer to the field at byte ``offset`` of the record ``record`` points to."""
    return pointer_cast(pointer_type, f"(({byte_pointer_type}){record} + {offset})")


def constant_array_definition(element: str, name: str, values) -> str:
    """A program-scope constant array."""
    return f"constant {element} {name}[{len(values)}] = {braces(values)};"


def parameter(msl_type: str, name: str, attribute: str | None = None) -> str:
    return f"{msl_type} {name}" if attribute is None else f"{msl_type} {name} {attribute}"


def buffer_attribute(index: int) -> str:
    return f"[[buffer({index})]]"


def threadgroup_attribute(index: int) -> str:
    return f"[[threadgroup({index})]]"


def builtin_attribute(name: str) -> str:
    return f"[[{name}]]"


KERNEL_QUALIFIER = "kernel void"
DEVICE_FUNCTION_QUALIFIER = "static NM_INLINE"


def kernel_header(name: str, params) -> str:
    return f"{KERNEL_QUALIFIER} {name}({', '.join(params)})"


def device_function_header(return_type: str, name: str, params) -> str:
    return f"{DEVICE_FUNCTION_QUALIFIER} {return_type} {name}({', '.join(params)})"


def function(header: str, body_lines) -> str:
    return header + " {\n" + "\n".join(body_lines) + "\n}\n"


# ---------------------------------------------------------------------------------------------
# Names the generated code uses. The kernel environment: what a kernel's built-in inputs and
# kernel-wide resources give every function; the kernel fills one ``nm_env`` value (defined in
# compiler/mslib/prelude.metal) and every device function takes it as its first parameter (Metal allows built-in
# attributes only on kernel parameters).
# ---------------------------------------------------------------------------------------------

ENV_TYPE = "nm_env"
ENV_PARAM = "nm_e"
FLAG_VAR = "nm_br"


def env(name: str) -> str:
    """A member of the kernel environment."""
    return member(ENV_PARAM, name)


HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def with_max_threads(source: str, entry_name: str, n: int) -> str | None:
    """A kernel's MSL with ``[[max_total_threads_per_threadgroup(n)]]`` on its entry point ``entry_name``; None
    when the entry point is not found exactly once."""
    head = f"kernel void {entry_name}("
    if source.count(head) != 1:
        return None
    return source.replace(head, f"[[max_total_threads_per_threadgroup({n})]] {head}")

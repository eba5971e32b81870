"""The bad-input corpus: invalid or unsupported kernels and launch mistakes, as data.

Each entry is a module snippet (imports are prepended) that defines kernel ``k`` and whatever it
needs, and a ``launch`` statement run after importing it. The entry says which error it must
raise (a class of the NumbaMetalError family), a regular expression its message must match, and,
for errors about the Python source, the line: the snippet's line marked ``# <-``. The error must
name that file:line.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba_metal.errors import (KernelCompilationError, KernelLaunchError, MetalRuntimeError,
                                NumbaMetalError, UnsupportedFeatureError)

UF = UnsupportedFeatureError
KC = KernelCompilationError
KL = KernelLaunchError

A1 = "np.zeros(8, np.float32)"
LAUNCH = f"k[1, 8]({A1})"

VADD = """
@metal.jit
def k(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] = i
"""


SYNC_LAUNCH = f"k[1, 8](metal.to_device({A1})); metal.synchronize()"

# Local arrays larger than numba-metal's per-thread limit (8 KB): refused when the kernel compiles (as
# private memory larger than a work-item's stack, they once crashed the process on the CPU device).
LOCAL_ARRAY = """
l = metal.local.array({n}, np.float32)  # <-
for j in range({n}):
    l[j] = j + i
{sync}
a[i] = l[(i * 7919) % {n}]
"""

# Launches with a 0.5 s per-dispatch time limit on the device the tests use (the CPU device's watchdog).
TIME_LIMITED = """
import os
from numba_metal import runtime as rt
kind = os.environ.get("NUMBA_METAL_DEVICE", "cpu")
devices = [rt.open_device(d.index) for d in rt.list_devices(include_simulated=True) if d.kind == kind]
for d in devices:
    d.set_time_limit(0.5)
try:
    {launch}
    metal.synchronize()
finally:
    for d in devices:
        d.set_time_limit(None)
"""


@dataclass(frozen=True)
class Bad:
    id: str
    src: str
    error: type
    match: str
    launch: str = LAUNCH
    located: bool = True  # the error names the marked line (or the def line if none is marked)


def k(body: str, params: str = "a", decorator: str = "@metal.jit") -> str:
    """A kernel ``k(params)`` with ``body`` (indented 4) after ``i = metal.grid(1)``."""
    lines = "\n".join("    " + ln if ln else ln for ln in body.strip("\n").splitlines())
    return f"\n{decorator}\ndef k({params}):\n    i = metal.grid(1)\n{lines}\n"


CORPUS: list[Bad] = [
    # -- language constructs ------------------------------------------------------------------
    Bad("list_literal", k("x = [1, 2, 3]  # <-\na[i] = x[0]"), UF, "lists are not supported"),
    Bad("dict_literal", k("d = {1: 2}  # <-\na[i] = d[1]"), UF, "dicts are not supported"),
    Bad("set_literal", k("s = {1, 2}  # <-\na[i] = 1"), UF, "sets are not supported"),
    Bad("list_comprehension", k("x = [j for j in range(3)]  # <-\na[i] = x[0]"), UF, "not supported"),
    Bad("string_value", k("s = 'abc'  # <-\na[i] = len(s)  # <-"), (UF, KC), "str|string|unicode"),
    Bad("fstring", k("s = f'{i}'  # <-\na[i] = 1"), (UF, KC), "str|string|format|FORMAT_VALUE|not supported"),
    Bad("try_except", k("try:  # <-\n    a[i] = 1  # <-\nexcept Exception:\n    a[i] = 2"), UF, "try"),
    Bad("raise_runtime_message", k("if i > 100:\n    raise ValueError(i)  # <-\na[i] = 1"), UF, "constant"),
    Bad("print_array", k("print(a)  # <-\na[i] = 1"), UF, "print"),
    Bad("with_statement", k("with open('x'):  # <-\n    a[i] = 1"), UF, "with"),
    Bad("lambda_run_time_capture_escapes", "\n@metal.jit(device=True)\ndef apply(f, x):\n    return f(x)\n\n"
        "@metal.jit\ndef k(a):\n    t = a[0]\n    a[1] = apply(lambda x: x + t, 1.0)  # <-\n", KC,
        "Cannot capture the non-constant value associated with variable 't'"),
    Bad("nested_def_run_time_capture_escapes", "\n@metal.jit(device=True)\ndef apply(f, x):\n    return f(x)\n\n"
        "@metal.jit\ndef k(a):\n    i = metal.grid(1)\n    def f(x):  # <-\n        return x + i\n"
        "    a[i] = apply(f, 1.0)\n", KC, "Cannot capture the non-constant value associated with variable 'i'"),
    Bad("generator_yield", k("yield i  # <-\na[i] = 1"), UF, "yield|generator"),
    Bad("global_statement",
        "\nG = 1\n\n@metal.jit\ndef k(a):\n    global G\n    G = 2  # <-\n    a[0] = G\n",
        (UF, KC), "global|G"),
    Bad("import_in_kernel", k("import os  # <-\na[i] = 1"), (UF, KC), "import|os|Module|not supported"),
    Bad("class_instance", "\nclass P:\n    pass\n\n@metal.jit\ndef k(a):\n    p = P()  # <-\n    a[0] = 1\n",
        (UF, KC), "P|class|not supported"),
    Bad("setattr", k("a.x = 1  # <-"), (UF, KC), "attribute|x"),
    Bad("delete_item", k("del a[i]  # <-"), (UF, KC), "del|delitem"),
    Bad("slice_float_bound", k("b = a[1.5:3]  # <-\na[i] = b[0]"), UF, "slice bounds must be integers"),
    Bad("slice_write_tuple", k("a[:] = (1, 2)  # <-"), UF, "slice can be assigned an array or a number"),
    Bad("fancy_index", k("a[a] = 1  # <-"), (UF, KC), "index|float"),
    Bad("tuple_item_assignment", k("t = (1, 2)\nt[0] = 3  # <-\na[i] = t[0]"), (UF, KC), "tuple|item|setitem"),
    Bad("kernel_returns_value", k("return i  # <-"), UF, "cannot return a value"),
    Bad("star_args_definition", "\n@metal.jit\ndef k(*args):  # <-\n    args[0][0] = 1  # <-\n", (UF, KC),
        "args|\\*|star|not supported"),
    Bad("kwargs_call", "\n@metal.jit(device=True)\ndef f(x):\n    return x\n\n@metal.jit\ndef k(a):\n"
        "    a[0] = f(**{'x': 1})  # <-\n", (UF, KC), "kwargs|\\*\\*|dict|keyword|not supported"),
    Bad("keyword_device_call", "\n@metal.jit(device=True)\ndef f(x):\n    return x\n\n@metal.jit\ndef k(a):\n"
        "    a[0] = f(1, y=2)  # <-\n", (UF, KC), "keyword.*unexpected keyword argument 'y'"),
    Bad("type_unification", k("x = 1\nif i > 2:\n    x = (1, 2)  # <-\na[i] = 1"), (UF, KC),
        "unif|type|x", located=False),
    Bad("int_subscripted", k("x = 5\nx[0] = 1  # <-\na[i] = x"), (UF, KC), "setitem|int"),
    # -- functions ------------------------------------------------------------------------------
    Bad("unknown_name", k("a[i] = undefined_function(i)  # <-"), (UF, KC), "undefined_function"),
    Bad("unknown_metal_attribute", k("a[i] = metal.no_such_thing(i)  # <-"), (UF, KC), "no_such_thing"),
    Bad("unknown_math_attribute", k("a[i] = math.no_such_thing(i)  # <-"), (UF, KC), "no_such_thing"),
    Bad("plain_python_function", "\ndef helper(x):\n    return x\n\n@metal.jit\ndef k(a):\n"
        "    a[0] = helper(1)  # <-\n", UF, "device=True"),
    # a Numba @jit helper compiles as a device function (issue 27 item 4): what Metal cannot run is named in it
    Bad("njit_function", "\nimport numba\n\n@numba.njit\ndef helper(x):\n    return [x][0]  # <-\n\n@metal.jit\n"
        "def k(a):\n    a[0] = helper(1)\n", UF, "lists are not supported"),
    Bad("recursion", "\n@metal.jit(device=True)\ndef f(n):\n    if n <= 0:\n        return 0\n"
        "    return f(n - 1) + 1\n\n@metal.jit\ndef k(a):\n    a[0] = f(3)\n", UF, "recursion", located=False),
    Bad("mutual_recursion", "\n@metal.jit(device=True)\ndef f(n):\n    return g(n - 1) if n > 0 else 0\n\n"
        "@metal.jit(device=True)\ndef g(n):\n    return f(n - 1) if n > 0 else 0\n\n@metal.jit\n"
        "def k(a):\n    a[0] = f(3)\n", UF, "recursion", located=False),
    Bad("numpy_allocation", k("b = np.zeros(3)  # <-\na[i] = b[0]"), (UF, KC), "zeros|overload|not supported"),
    Bad("numpy_reduction", k("a[i] = np.sum(a)  # <-"), (UF, KC), "sum|overload|not supported"),
    Bad("array_method", k("a[i] = a.sum()  # <-"), (UF, KC), "sum|overload|not supported"),
    Bad("math_function_unknown", k("a[i] = math.factorial(i)  # <-"), (UF, KC), "factorial"),
    Bad("grid_4", k("j = metal.grid(4)  # <-\na[0] = 1"), UF, "1, 2 or 3"),
    Bad("grid_runtime", k("j = metal.grid(a.size)  # <-\na[0] = 1"), UF, "constant"),
    # -- memory -----------------------------------------------------------------------------------
    Bad("shared_runtime_shape", k("s = metal.shared.array(a.size, np.float32)  # <-\na[i] = s[0]"), UF,
        "constant"),
    Bad("shared_datetime64", k("s = metal.shared.array(8, np.datetime64)  # <-\na[i] = 0"), UF, "datetime64"),
    Bad("shared_too_large", k("s = metal.shared.array(10000, np.float32)  # <-\na[i] = s[0]"), UF,
        "threadgroup memory|32768"),
    Bad("shared_negative_shape", k("s = metal.shared.array(-4, np.float32)  # <-\na[i] = s[0]"), UF,
        "negative"),
    Bad("local_runtime_shape", k("s = metal.local.array(a.size, np.float32)  # <-\na[i] = s[0]"), UF,
        "constant"),
    Bad("atomic_int64", k("metal.atomic.add(a, 0, 1)  # <-", params="a"), UF, "64-bit",
        launch="k[1, 8](np.zeros(8, np.int64))"),
    Bad("atomic_bitwise_float", k("metal.atomic.and_(a, 0, 1)  # <-"), UF, "bitwise"),
    Bad("atomic_inc_int32", k("metal.atomic.inc(a, 0, 1)  # <-"), UF, "uint32",
        launch="k[1, 8](np.zeros(8, np.int32))"),
    Bad("atomic_wrong_index_count", k("metal.atomic.add(a, 0, 1)  # <-"), UF, "index",
        launch="k[1, 8](np.zeros((2, 2), np.float32))"),
    Bad("atomic_local_array", k("l = metal.local.array(4, np.int32)\nmetal.atomic.add(l, 0, 1)  # <-\na[i] = l[0]"),
        UF, "local|thread|device and shared"),
    Bad("atomic_wrong_arity", k("metal.atomic.add(a, 0)  # <-"), UF, "3 arguments"),
    # -- arguments and launches ---------------------------------------------------------------------
    Bad("atomic_float64", k("metal.atomic.add(a, 0, 1.0)  # <-", params="a"), UF, "64-bit",
        launch="k[1, 8](np.zeros(8))"),
    Bad("list_argument", VADD, KL, "list", launch="k[1, 8]([1.0, 2.0])", located=False),
    Bad("dict_argument", VADD, KL, "dict", launch="k[1, 8]({'a': 1})", located=False),
    Bad("string_argument", VADD, KL, "str", launch="k[1, 8]('abc')", located=False),
    Bad("none_argument", VADD, KL, "NoneType", launch="k[1, 8](None)", located=False),
    Bad("object_array", VADD, (KL, KC, UF), "object|pyobject", launch="k[1, 8](np.zeros(4, dtype=object))",
        located=False),
    Bad("structured_array", VADD, (KL, KC, UF), "dtype|not supported|Record",
        launch="k[1, 8](np.zeros(4, dtype=[('x', 'f4'), ('y', 'i4')]))", located=False),
    Bad("too_few_arguments", VADD.replace("def k(a)", "def k(a, b)"), KL, "takes 2 argument",
        launch=f"k[1, 8]({A1})"),
    Bad("too_many_arguments", VADD, KL, "takes 1 argument", launch=f"k[1, 8]({A1}, {A1})"),
    Bad("no_launch_configuration", VADD, KL, "without a launch configuration", launch=f"k({A1})",
        located=False),
    Bad("zero_blocks", VADD, KL, "positive", launch=f"k[0, 8]({A1})", located=False),
    Bad("negative_threads", VADD, KL, "positive", launch=f"k[1, -4]({A1})", located=False),
    Bad("float_grid", VADD, KL, "int", launch=f"k[1.5, 8]({A1})", located=False),
    Bad("four_dimensional_grid", VADD, KL, "1, 2 or 3", launch=f"k[(1, 1, 1, 1), 8]({A1})", located=False),
    Bad("one_element_configuration", VADD, KL, "launch configuration", launch=f"k[1]({A1})", located=False),
    Bad("too_many_threads", VADD, KL, "threads per threadgroup", launch=f"k[1, 4096]({A1})", located=False),
    Bad("grid_too_large", VADD, KL, "2\\*\\*32", launch=f"k[2 ** 31, 4]({A1})", located=False),
    Bad("negative_sharedmem", VADD, KL, "sharedmem", launch=f"k[1, 8, 0, -1]({A1})", located=False),
    Bad("dynamic_shared_too_large",
        k("s = metal.shared.array(0, np.float32)\ns[i] = 1.0\nmetal.syncthreads()\na[i] = s[0]"),
        KL, "threadgroup memory", launch=f"k[1, 8, 0, 10 ** 6]({A1})", located=False),
    Bad("too_many_buffers",
        "\n@metal.jit\ndef k(" + ", ".join(f"a{j}" for j in range(32)) + "):\n    a0[0] = 1\n", UF,
        "buffer slots", launch="k[1, 1](*[np.zeros(1, np.float32) for _ in range(32)])"),
    Bad("read_only_array_written", VADD, KL, "read-only NumPy memory .* may write it",
        launch="ro = np.zeros(8, np.float32); ro.flags.writeable = False; k[1, 8](ro)", located=False),
    Bad("keyword_arguments_at_launch", VADD, KL, "keyword arguments \\(a\\)", launch=f"k[1, 8](a={A1})",
        located=False),
    Bad("arguments_over_4096_bytes", VADD.replace("def k(a)", "def k(a, t)").replace("a[i] = i", "a[i] = t[i]"),
        UF, "more than the 4096", launch=f"k[1, 8]({A1}, tuple(range(3000)))", located=False),
    Bad("compile_msl_bad_signature", VADD, NumbaMetalError, "invalid signature 'abc'",
        launch="metal.compile_msl(k, 'abc')", located=False),
    Bad("to_device_none", VADD, NumbaMetalError, "to_device\\(None\\)", launch="metal.to_device(None)",
        located=False),
    Bad("to_device_objects", VADD, NumbaMetalError, "Python objects", launch="metal.to_device([None, 'x'])",
        located=False),
    Bad("device_array_of_objects", VADD, NumbaMetalError, "Python objects",
        launch="metal.device_array(4, dtype=object)", located=False),
    Bad("scalar_does_not_fit", VADD.replace("def k(a)", "def k(a, n)"), KL, "does not fit",
        launch=f"k[1, 8]({A1}, 2 ** 70)", located=False),
    Bad("eager_signature_mismatch", VADD.replace("@metal.jit", "@metal.jit('void(float32[:])')"), KL,
        "no signature matching", launch="k[1, 8](np.zeros(8, np.int32))", located=False),
    Bad("invalid_signature", VADD.replace("@metal.jit", "@metal.jit('void(floot32[:])')"), NumbaMetalError,
        "signature", launch="pass", located=False),
    Bad("unknown_jit_option", VADD.replace("@metal.jit", "@metal.jit(fast=True)"), NumbaMetalError,
        "unknown option", launch="pass", located=False),
    Bad("unsupported_jit_option", VADD.replace("@metal.jit", "@metal.jit(max_registers=32)"), UF,
        "register", launch="pass", located=False),
    Bad("device_function_called_from_host", "\n@metal.jit(device=True)\ndef f(x):\n    return x\n",
        NumbaMetalError, "device function", launch="f(1)", located=False),
    Bad("jit_applied_twice", VADD, NumbaMetalError, "twice", launch="metal.jit(k)", located=False),
    Bad("bounds_fault_debug",
        "\n@metal.jit(debug=True)\ndef k(a):\n    i = metal.grid(1)\n    a[i + 100] = 1  # <-\n",
        MetalRuntimeError, "out of bounds", launch=f"k[1, 8](metal.to_device({A1})); metal.synchronize()"),
    # -- faults while kernels run: a MetalRuntimeError naming the kernel, never a dead or hung process -------
    # sanitize=False: this case is the fault itself (the sanitizer would report it as out of bounds first)
    Bad("wild_write_fault", k("a[i + (1 << 40)] = 1", decorator="@metal.jit(sanitize=False)"),
        MetalRuntimeError, "'k.*faulted with SIG(SEGV|BUS)",
        launch=SYNC_LAUNCH, located=False),
    Bad("local_array_16mb", k(LOCAL_ARRAY.format(n=4 * 1024 * 1024, sync="")), UF,
        "16777216 bytes per thread, more than numba-metal's limit of 8192", launch=SYNC_LAUNCH),
    Bad("local_array_512k_with_barrier", k(LOCAL_ARRAY.format(n=128 * 1024, sync="metal.syncthreads()")),
        UF, "524288 bytes per thread, more than numba-metal's limit of 8192", launch=SYNC_LAUNCH),
    Bad("local_arrays_over_limit_with_device_function",
        "\n@metal.jit(device=True)\ndef f(x):\n    t = metal.local.array(1024, np.int32)  # <-\n    t[0] = x\n"
        "    return t[0]\n\n@metal.jit\ndef k(a):\n    l = metal.local.array(1025, np.float32)\n"
        "    l[0] = f(1)\n    a[0] = l[0]\n", UF, "8196 bytes per thread", launch=SYNC_LAUNCH),
    Bad("runaway_kernel", k("while metal.atomic.add(flag, 0, 0) == 0:\n    pass\na[i] = 1", params="a, flag"),
        MetalRuntimeError, "'k.*ran longer than its time limit of 0.500 s", located=False,
        launch=TIME_LIMITED.format(launch=f"k[1, 8](metal.to_device({A1}), metal.to_device(np.zeros(1, np.int32)))")),
]

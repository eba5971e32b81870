"""A project whose every place that Python could evaluate holds a payload, for ``scan``.

Each payload is an expression that creates the file ``<markers>/<id>`` when evaluated, so after a scan
the marker directory lists every payload that ran. :data:`ROUTES` names each way scanned text could
reach ``eval``, ``exec``, ``compile`` + exec, an import or pickle:

* signature strings, which Numba itself reads with ``eval`` (every decorator scan checks);
* what Python evaluates when it executes a ``def``: decorators, default values, annotations of every
  kind of parameter and of the return value;
* code outside the checked function: module level, class bodies, ``__main__`` blocks, the body itself
  and functions nested in it;
* imports the file names (a canary module that marks when imported), names imported from the modules
  scan does bind, and the ``# coding:`` line (a canary codec search function).
"""

from __future__ import annotations

import os

CANARY_MODULE = "advisor_canary_mod"
CANARY_CODEC = "advisor_canary_codec"


def payload(markers: str, ident: str) -> str:
    path = os.path.join(markers, ident)
    return f"__import__('pathlib').Path({path!r}).touch()"


def sig(markers: str, ident: str, real: str) -> str:
    """A signature string that runs the payload when evaluated, then gives the real signature."""
    return repr(f"{payload(markers, ident)} or {real}")


HEADER = """import math
import numpy as np
import numba
from numba import cuda, njit, vectorize, guvectorize, cfunc
from numba_metal import metal
"""


def files(markers: str) -> dict[str, str]:
    """{file name: source}; every payload names its own marker."""
    P = lambda ident: payload(markers, ident)  # noqa: E731
    S = lambda ident, real: sig(markers, ident, real)  # noqa: E731
    signatures = HEADER + f"""
@njit({S("sig_njit", "float32(float32)")})
def sig_njit(x):
    return x

@numba.jit([{S("sig_jit_list", "float32(float32)")}])
def sig_jit_list(x):
    return x

@vectorize([{S("sig_vectorize", "float32(float32)")}])
def sig_vectorize(x):
    return x

@guvectorize([{S("sig_guvectorize", "void(float32[:], float32[:])")}], "(n)->(n)")
def sig_guvectorize(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i]

@metal.jit({S("sig_metal_jit", "void(float32[:])")})
def sig_metal_jit(a):
    a[0] = 1

@metal.jit({S("sig_metal_device", "float32(float32)")}, device=True)
def sig_metal_device(x):
    return x

@cuda.jit({S("sig_cuda_jit", "void(float32[:])")})
def sig_cuda_jit(a):
    a[0] = 1

@cfunc({S("sig_cfunc", "float32(float32)")})
def sig_cfunc(x):
    return x

@njit({S("sig_float64", "float64(float64)")})
def sig_float64(x):
    return x

@njit("float32.__class__.__base__.__subclasses__()")
def sig_subclasses(x):
    return x

@njit("(float32, __import__('os'))")
def sig_in_tuple(x):
    return x

@njit(["float32(float32)", {S("sig_second_of_list", "float32(float32)")}])
def sig_second_of_list(x):
    return x
"""
    definitions = HEADER + f"""
@njit("float32(float32, float32)")
def default_value(x, y={P("default_value")}):
    return x + y

@njit("float32(float32)")
def kwonly_default(x, *, y={P("kwonly_default")}):
    return x

@njit("float32(float32)")
def annotation_posonly(x: {P("annotation_posonly")}, /):
    return x

@njit("float32(float32)")
def annotation_arg(x: {P("annotation_arg")}):
    return x

@njit("float32(float32)")
def annotation_vararg(x, *rest: {P("annotation_vararg")}):
    return x

@njit("float32(float32)")
def annotation_kwonly(x, *, k: {P("annotation_kwonly")} = 1.0):
    return x

@njit("float32(float32)")
def annotation_kwarg(x, **kw: {P("annotation_kwarg")}):
    return x

@njit("float32(float32)")
def annotation_return(x) -> {P("annotation_return")}:
    return x

@({P("decorator_expression")} or (lambda f: f))
@njit("float32(float32)")
def decorator_expression(x):
    return x

@njit("float32(float32)")
def body(x):
    y = {P("body")}
    return x

@njit("float32(float32)")
def nested_default(x):
    def inner(z={P("nested_default")}):
        return 1.0
    g = lambda w={P("nested_lambda_default")}: 1.0
    return x
"""
    elsewhere = HEADER + f"""
{P("module_level")}

class Holder:
    {P("class_body")}

    @njit("float32(float32)")
    def method(x):
        return x

if __name__ == "__main__":
    {P("main_block")}
"""
    imports = f"""import {CANARY_MODULE}
import {CANARY_MODULE} as np
from {CANARY_MODULE} import thing as math
from numpy import __builtins__ as numpy_builtins
from numba import njit

@njit("float32(float32[:])")
def uses_canary_as_numpy(a):
    return np.sum(a) + math.sqrt(a[0])

@njit("float32(float32)")
def uses_builtins(x):
    return numpy_builtins["eval"]({P("numpy_builtins")!r})
"""
    coding = f"# -*- coding: {CANARY_CODEC} -*-\n" + HEADER + """
@njit("float32(float32)")
def in_canary_encoding(x):
    return x
"""
    return {"signatures.py": signatures, "definitions.py": definitions, "elsewhere.py": elsewhere,
            "imports.py": imports, "coding.py": coding}


#: Payload ids in the files above, each a route to ``eval``/``exec``/import.
ROUTES = ["sig_njit", "sig_jit_list", "sig_vectorize", "sig_guvectorize", "sig_metal_jit", "sig_metal_device",
          "sig_cuda_jit", "sig_cfunc", "sig_float64", "sig_second_of_list", "default_value", "kwonly_default",
          "annotation_posonly", "annotation_arg", "annotation_vararg", "annotation_kwonly", "annotation_kwarg",
          "annotation_return", "decorator_expression", "body", "nested_default", "nested_lambda_default",
          "module_level", "class_body", "main_block", "numpy_builtins"]

#: Functions whose ``def`` the compile check executes (annotations and decorators stripped): each must
#: reach the compiler, so the test knows the definition route was taken, and run no payload.
DEFINED_AND_COMPILED = ["annotation_posonly", "annotation_arg", "annotation_vararg", "annotation_kwonly",
                        "annotation_kwarg", "annotation_return", "decorator_expression", "body", "nested_default"]

CANARY_MODULE_SOURCE = """import pathlib, os
pathlib.Path(os.environ["ADVISOR_MARKERS"], "imported_canary_module").touch()
thing = 1
"""

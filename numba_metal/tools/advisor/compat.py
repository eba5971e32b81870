"""``scan``'s compile check: does this function compile to MSL today?

Only functions whose decorator gives a signature as a string literal are checked. The signature is
read by :mod:`.signatures`, never evaluated. The function's own definition, stripped of everything
Python evaluates when it runs a ``def`` (decorators, annotations, type parameters; default values
must be constants), is compiled from the file's AST and executed alone in a fresh namespace holding
only ``math``, NumPy, ``numba_metal.metal`` and ``numba_metal.random`` (under the names the file
imports them as): executing it creates the function object and runs nothing of the file. Then
``metal.compile_msl(fn, signature)`` runs the real compiler with no device; the compiler analyses
the body and never runs it. A function that uses any other global (a helper, a constant, a class)
is reported as "unable to analyze".
"""

from __future__ import annotations

import ast
import builtins
import copy
import importlib
import re

from . import rules, signatures

METHOD = ("functions whose decorator gives a signature string are compiled with metal.compile_msl "
          "(no device): only the function's own definition is executed, in an isolated namespace "
          "holding math, numpy, numba_metal.metal and numba_metal.random; functions that use other "
          "globals are reported as 'unable to analyze'")

_KERNEL_KINDS = {"metal.jit", "cuda.jit"}
_CHECKED_KINDS = {"metal.jit", "metal.device", "njit", "vectorize", "guvectorize", "cfunc", "cuda.jit",
                  "cuda.device"}
_FLOAT64 = re.compile(r"\b(float64|f8|double)\b")

#: Larger functions are not compiled: Numba's typing time grows faster than linearly with a function's
#: size (a 3,000-statement kernel takes about 10 s here, a 10,000-statement one over a minute), and a
#: scan must finish. Kernels are far smaller (a 500-line kernel has about 5,000 nodes).
MAX_CHECKED_NODES = 20_000


def result(status: str, detail: str, signature: str | None = None, device: bool = False,
           error: str | None = None, error_line: int | None = None) -> dict:
    return {"status": status, "signature": signature, "as_device_function": device, "detail": detail,
            "error": error, "error_line": error_line}


def not_checked(why: str) -> dict:
    return result("not-checked", why)


def _bound_names(aliases: dict[str, str]) -> dict[str, object]:
    """The file's names for the allowed modules (and public names imported from them)."""
    out = {}
    for local, full in aliases.items():
        for mod in rules.BOUND_MODULES:
            attr = full[len(mod) + 1:] if full.startswith(mod + ".") else None
            if full == mod:
                out[local] = importlib.import_module(mod)
            elif attr and "." not in attr and not attr.startswith("_"):
                try:
                    out[local] = getattr(importlib.import_module(mod), attr)
                except AttributeError:
                    pass
    return out


def free_names(fn: ast.FunctionDef) -> set[str]:
    """Names the function reads that it neither defines nor receives."""
    params = {a.arg for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    if fn.args.vararg:
        params.add(fn.args.vararg.arg)
    if fn.args.kwarg:
        params.add(fn.args.kwarg.arg)
    stored, loaded = set(), set()
    for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
        if isinstance(node, ast.Name):
            (stored if isinstance(node.ctx, (ast.Store, ast.Del)) else loaded).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(node.name)
        elif isinstance(node, ast.arg):   # a parameter of a lambda or function defined inside it
            stored.add(node.arg)
    return loaded - stored - params - set(dir(builtins))


def definition_only(fn: ast.FunctionDef) -> ast.Module:
    """A module holding ``fn``'s ``def`` with nothing that Python evaluates while executing it, other
    than constant default values: no decorators, annotations or type parameters."""
    node = copy.deepcopy(fn)
    node.decorator_list = []
    node.returns = None
    if hasattr(node, "type_params"):  # Python 3.12+
        node.type_params = []
    a = node.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]:
        arg.annotation = None
    if _expression_defaults(node):
        raise ValueError("default values that are not constants")
    return ast.Module(body=[node], type_ignores=[])


def _expression_defaults(fn: ast.FunctionDef) -> bool:
    a = fn.args
    return any(not isinstance(d, ast.Constant) for d in a.defaults + [d for d in a.kw_defaults if d is not None])


def _isolated_function(path: str, fn: ast.FunctionDef, namespace: dict):
    # dont_inherit: this module's own __future__ flags must not change how the definition executes.
    code = compile(definition_only(fn), path, "exec", dont_inherit=True)
    exec(code, namespace)  # creates the function object; see definition_only
    return namespace[fn.name]


def _float32_signature(sig: str) -> str:
    return _FLOAT64.sub("float32", sig)


def check(path: str, fn: ast.FunctionDef, dec, class_name: str | None, aliases: dict[str, str]) -> dict:
    """The compile-check result of one function (see the module docstring)."""
    if dec is None:
        return not_checked("no decorator with a signature: argument types are unknown")
    if dec.kind not in _CHECKED_KINDS:
        return not_checked(f"@{dec.kind} functions are not checked (relative indexing has no direct "
                           "kernel equivalent)" if dec.kind == "stencil" else f"@{dec.kind} is not checked")
    if dec.signature_not_literal:
        return not_checked("the decorator's signature is not a string literal (scan does not evaluate code)")
    if not dec.signatures:
        return not_checked("the decorator gives no signature, so argument types are unknown")
    if class_name is not None:
        return result("unable", "a method: scan compiles only plain functions")
    if isinstance(fn, ast.AsyncFunctionDef):
        return result("unable", "an async function")
    nodes = sum(1 for _ in ast.walk(fn))
    if nodes > MAX_CHECKED_NODES:
        return not_checked(f"too large for the compile check: {nodes} syntax-tree nodes, more than "
                           f"{MAX_CHECKED_NODES}")
    if _expression_defaults(fn):
        return result("unable", "default argument values are expressions; scan does not evaluate them")
    parsed = []
    for sig in dec.signatures:
        try:
            parsed.append(signatures.parse(sig))
        except signatures.SignatureError as e:
            return result("unable", f"scan never evaluates a signature string; it reads {signatures.GRAMMAR}, "
                                    f"and {sig[:80]!r} is not one of these: {e}", signature=sig)
    bound = _bound_names(aliases)
    missing = sorted(free_names(fn) - set(bound))
    if missing:
        return result("unable", "uses names from its module that scan does not import: " + ", ".join(missing),
                      signature=dec.signatures[0])
    device = dec.kind not in _KERNEL_KINDS
    from numba_metal import metal
    from numba_metal.errors import NumbaMetalError
    checked = []
    for sig, parsed_sig in zip(dec.signatures, parsed):
        namespace = {"__builtins__": builtins, "__name__": "numba_metal_advisor_scan", **bound}
        try:
            pyfunc = _isolated_function(path, fn, namespace)
        except Exception as e:  # noqa: BLE001 - anything the definition itself raises
            return result("unable", f"defining the function alone failed: {type(e).__name__}: {e}",
                          signature=sig, device=device)
        status, err, line = _compile(metal, NumbaMetalError, pyfunc, parsed_sig, device)
        if status == "fails" and _FLOAT64.search(sig) and "float64" in (err or ""):
            sig32 = _float32_signature(sig)
            status32, _, _ = _compile(metal, NumbaMetalError, pyfunc, signatures.parse(sig32), device)
            if status32 == "compiles":
                return result("compiles-as-float32",
                              f"refused as written (a float64 operation the emulated float64 lacks, such as an atomic); "
                              f"compiles with the "
                              f"signature {sig32!r}", signature=sig, device=device, error=err, error_line=line)
        if status != "compiles":
            return result(status, f"compiling {'as a device function ' if device else ''}with {sig!r}",
                          signature=sig, device=device, error=err, error_line=line)
        checked.append(sig)
    what = "as a device function " if device else "as a kernel "
    more = f" (all {len(checked)} signatures)" if len(checked) > 1 else ""
    return result("compiles", f"{what}with {checked[0]!r}{more}", signature=checked[0], device=device)


def _compile(metal, NumbaMetalError, pyfunc, sig: str, device: bool):
    try:
        metal.compile_msl(pyfunc, sig, device=device)
        return "compiles", None, None
    except NumbaMetalError as e:
        return "fails", _first_lines(e.message), (e.location[1] if e.location else None)
    except Exception as e:  # noqa: BLE001 - the compiler failing unexpectedly is itself a finding
        return "fails", (f"numba-metal raised an internal error ({type(e).__name__}: {e}); this is a "
                         "numba-metal bug, not your code's fault"), None


def _first_lines(message: str, n: int = 2) -> str:
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    return " ".join(lines[:n])[:300]

"""The ``advisor_workload()`` protocol, shared by ``compare`` and ``profile``.

A script declares one workload by defining a function ``advisor_workload()`` that returns a dict (or
any object with these attributes):

``name``          str, what the workload is called in reports
``cpu``           callable(), the CPU version; returns its result (or None with ``cpu_result``)
``metal``         callable(), the numba-metal version: launches kernels and returns only when the
                  work is done (it synchronizes, or copies results to the host)
``cpu_result``    optional callable() returning the CPU result, called after ``cpu()``, untimed
``metal_result``  optional callable() returning the numba-metal result, called after ``metal()``, untimed
``setup``         optional callable() run once per process before any call, untimed
``flops``         optional number: floating-point operations one ``metal()`` call performs
``bytes``         optional number: bytes one ``metal()`` call reads and writes in device memory

Results may be arrays (NumPy or numba-metal device arrays), scalars, or tuples/lists/dicts of them.
The script is run with ``__name__ == "__advisor__"``, so its ``if __name__ == "__main__":`` block
does not run.
"""

from __future__ import annotations

import ast
import os
import runpy
import sys
from dataclasses import dataclass
from typing import Callable

from .outcomes import ScriptSyntaxError, UsageError
from .sourcefile import SourceError, read_regular_file

ENTRY = "advisor_workload"
RUN_NAME = "__advisor__"


class ProtocolError(UsageError):
    """The script does not follow the protocol."""


@dataclass
class Workload:
    name: str
    cpu: Callable
    metal: Callable
    cpu_result: Callable | None = None
    metal_result: Callable | None = None
    setup: Callable | None = None
    flops: float | None = None
    bytes: float | None = None


def run_script(path: str, argv: list[str] | None = None, run_name: str = RUN_NAME) -> dict:
    """Execute ``path`` (as module ``run_name``) with ``sys.argv = [path, *argv]``; return its globals."""
    if not os.path.isfile(path):
        raise ProtocolError(f"{path}: no such file")
    script_dir = os.path.dirname(os.path.abspath(path))
    old_argv = sys.argv[:]
    sys.argv = [path] + list(argv or [])
    sys.path.insert(0, script_dir)
    try:
        return runpy.run_path(path, run_name=run_name)
    finally:
        sys.argv = old_argv
        try:
            sys.path.remove(script_dir)
        except ValueError:
            pass


def check_script(path: str) -> ast.Module:
    """The syntax tree of the script ``path``, read without running it: UsageError if it is not a
    readable regular file, ScriptSyntaxError if it is not valid Python."""
    try:
        source = read_regular_file(path)
    except SourceError as e:
        raise UsageError(f"{path}: {e}") from None
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as e:
        where = f"{path}:{e.lineno}:{e.offset}" if e.lineno else path
        raise ScriptSyntaxError(f"{where}: syntax error: {e.msg}; nothing was run") from None
    except (ValueError, RecursionError, MemoryError) as e:
        raise ScriptSyntaxError(f"{path}: not Python source that can be parsed ({type(e).__name__}: {e}); "
                                "nothing was run") from None


def has_workload(tree: ast.Module) -> bool:
    """Whether the script defines ``advisor_workload``."""
    return any(isinstance(n, ast.FunctionDef) and n.name == ENTRY for n in tree.body)


def load(path: str) -> Workload:
    """Run the script and return its declared workload."""
    namespace = run_script(path)
    factory = namespace.get(ENTRY)
    if not callable(factory):
        raise ProtocolError(f"{path} does not define {ENTRY}(); see docs/advisor.md, 'The compare protocol'")
    obj = factory()

    def get(key):
        if isinstance(obj, dict):
            return obj.get(key)
        return getattr(obj, key, None)

    missing = [k for k in ("cpu", "metal") if not callable(get(k))]
    if missing:
        raise ProtocolError(f"{ENTRY}() in {path} must provide callables 'cpu' and 'metal' "
                            f"(missing or not callable: {', '.join(missing)})")
    for key in ("cpu_result", "metal_result", "setup"):
        if get(key) is not None and not callable(get(key)):
            raise ProtocolError(f"{ENTRY}() in {path}: '{key}' must be a callable")
    numbers = {}
    for key in ("flops", "bytes"):
        value = get(key)
        if value is not None:
            try:
                numbers[key] = float(value)
            except (TypeError, ValueError):
                raise ProtocolError(f"{ENTRY}() in {path}: '{key}' must be a number, not {value!r}") from None
            if numbers[key] <= 0:
                raise ProtocolError(f"{ENTRY}() in {path}: '{key}' must be positive")
    name = get("name") or os.path.splitext(os.path.basename(path))[0]
    return Workload(name=str(name), cpu=get("cpu"), metal=get("metal"), cpu_result=get("cpu_result"),
                    metal_result=get("metal_result"), setup=get("setup"), flops=numbers.get("flops"),
                    bytes=numbers.get("bytes"))

"""Python function → typed Numba IR.

Runs Numba's bytecode analysis and the untyped rewrites numba-metal wants, then Numba's type inference
with the metal typing context. SSA reconstruction is deliberately not run: every IR variable is a plain
mutable local, which maps one-to-one onto an MSL local, so no phi destruction is ever needed.
"""

from __future__ import annotations

import inspect
import re
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace

from numba.core import bytecode, errors as numba_errors, interpreter, ir, postproc, types
from numba.core.analysis import dead_branch_prune, rewrite_semantic_constants
from numba.core.rewrites.ir_print import RewritePrintCalls
from numba.core.rewrites.static_binop import DetectStaticBinops
from numba.core.rewrites.static_getitem import RewriteConstGetitems, RewriteConstSetitems
from numba.core.rewrites.static_raise import RewriteConstRaises
from numba.core.typed_passes import type_inference_stage

from numba_metal.errors import KernelCompilationError, NumbaMetalError, UnsupportedFeatureError, plain_text

from . import captures
from .typing import TARGET_CONTEXT, typing_context
from .uninitialized import warn_uninitialized
from .unroll import unroll_literal_loops

_UNTYPED_REWRITES = (RewriteConstGetitems, RewriteConstSetitems, RewriteConstRaises, DetectStaticBinops,
                     RewritePrintCalls)


@dataclass
class TypedFunction:
    """A Python function with its typed Numba IR: the compiler's input."""

    pyfunc: object
    func_ir: ir.FunctionIR
    typemap: dict
    calltypes: dict
    return_type: types.Type
    argtypes: tuple
    arg_names: tuple
    extra: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.func_ir.func_id.func_name

    @property
    def location(self) -> tuple[str, int]:
        return source_location(self.pyfunc)


def source_location(pyfunc) -> tuple[str, int]:
    """(file, first line) of a Python function, for error messages."""
    code = getattr(pyfunc, "__code__", None)
    if code is None:
        return ("<unknown>", 0)
    return (code.co_filename, code.co_firstlineno)


def loc_of(loc) -> tuple[str, int] | None:
    """A Numba ``ir.Loc`` as (file, line), or None."""
    if loc is None:
        return None
    return (loc.filename, loc.line)


def build_ir(pyfunc, argtypes, device_function=None) -> ir.FunctionIR:
    """Untyped Numba IR of ``pyfunc``, with constant rewrites and dead-branch pruning applied.
    ``device_function``: makes the device function of a closure or a Numba @jit function (see
    :func:`_jitted_functions`); without it, closures are refused."""
    if not inspect.isfunction(pyfunc):
        raise UnsupportedFeatureError(
            f"{pyfunc!r} is not a Python function; @metal.jit compiles plain `def` functions")
    try:
        func_id = bytecode.FunctionIdentity.from_function(pyfunc)
        func_ir = interpreter.Interpreter(func_id).interpret(bytecode.ByteCode(func_id=func_id))
        postproc.PostProcessor(func_ir).run(False)
    except numba_errors.UnsupportedBytecodeError as e:
        raise UnsupportedFeatureError(_first_line(e) + "; kernels may use only the constructs listed "
                                      "in docs/supported-features.md", loc_of(getattr(e, "loc", None))
                                      or _raised_from(e) or source_location(pyfunc)) from None
    except numba_errors.NumbaError as e:
        raise UnsupportedFeatureError(_first_line(e), loc_of(getattr(e, "loc", None))
                                      or source_location(pyfunc)) from None
    if device_function is not None:
        _inline_run_time_closures(func_ir)
        _jitted_functions(func_ir, device_function)
    _bind_captured_arrays(pyfunc, func_ir, len(argtypes))
    if func_ir.arg_count != len(argtypes):
        raise KernelCompilationError(
            f"{pyfunc.__name__}() takes {func_ir.arg_count} argument(s) but {len(argtypes)} were given",
            source_location(pyfunc))
    state = SimpleNamespace(func_ir=func_ir, typemap=None, calltypes=None, args=tuple(argtypes),
                            typingctx=typing_context(), targetctx=TARGET_CONTEXT)
    try:
        func_ir = state.func_ir = unroll_literal_loops(func_ir, tuple(argtypes))
        _apply_rewrites(state)
        rewrite_semantic_constants(func_ir, tuple(argtypes))
        dead_branch_prune(func_ir, tuple(argtypes))
    except numba_errors.NumbaError as e:
        raise KernelCompilationError(_strip_numba_banner(str(e)), loc_of(getattr(e, "loc", None))
                                     or source_location(pyfunc)) from None
    except Exception as e:  # noqa: BLE001 - Numba's rewrites assume well-formed code (e.g. len(x))
        bad = _bad_len_call(func_ir)
        if bad is not None:
            raise KernelCompilationError(f"len() takes exactly one argument ({bad[0]} given)", bad[1]) from None
        raise KernelCompilationError(f"{pyfunc.__name__}() could not be analysed before typing "
                                     f"({type(e).__name__}: {e})", source_location(pyfunc)) from None
    warn_uninitialized(func_ir)
    return func_ir


def _jitted_functions(func_ir, device_function) -> None:
    """Functions a kernel calls that are compiled as device functions, as numba-cuda's untyped pipeline
    makes them (its MakeFunctionToJitFunction pass, after Numba's): each function defined inside the
    function (a closure, a lambda) whose default values are constants becomes a device function of a
    Python function with its constant closure variables baked in (Numba's convert_code_obj_to_function,
    whose TypingError names a variable that is not a constant); and each Numba @jit function it reads
    from its scope becomes the device function of its Python function (numba.cuda's kernels call them)."""
    from numba.core.ir_utils import convert_code_obj_to_function
    dispatchers = sys.modules.get("numba.core.dispatcher")   # not loaded: nothing was jitted by Numba
    changed = False
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if not isinstance(stmt, ir.Assign):
                continue
            value = stmt.value
            if isinstance(value, (ir.Global, ir.FreeVar)):
                if dispatchers is not None and isinstance(value.value, dispatchers.Dispatcher):
                    value.value = device_function(value.value)
                    changed = True
            elif (isinstance(value, ir.Expr) and value.op == "make_function" and _constant_defaults(func_ir, value)
                  and not _is_comprehension(value.code)):
                try:
                    closure = convert_code_obj_to_function(value, func_ir)
                except numba_errors.NumbaError as e:
                    raise KernelCompilationError(_strip_numba_banner(str(e)), loc_of(stmt.loc)) from None
                except Exception as e:  # noqa: BLE001 - Numba rebuilds the function from text
                    raise UnsupportedFeatureError(f"the function {value.code.co_name} defined here cannot be "
                                                  f"compiled as a device function ({type(e).__name__}: {e}); "
                                                  "define it with @metal.jit(device=True) at module level",
                                                  loc_of(stmt.loc)) from None
                stmt.value = ir.Global(value.code.co_name, device_function(closure), stmt.loc)
                changed = True
    if changed:
        func_ir._definitions = _definitions(func_ir)


def _inline_run_time_closures(func_ir) -> None:
    """Calls of a function defined inside the function that reads a value computed at run time are
    inlined (Numba's inline_closure_call), as Numba's InlineClosureCallPass, which numba-cuda runs first,
    inlines every call of a closure; such a function passed on (escaping) stays refused, as in Numba."""
    done = False
    while not done:
        done = True
        for block in list(func_ir.blocks.values()):
            for i, stmt in enumerate(block.body):
                if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call"):
                    continue
                try:
                    fn = func_ir.get_definition(stmt.value.func)
                except Exception:  # noqa: BLE001 - several definitions: not a closure call
                    continue
                if not (isinstance(fn, ir.Expr) and fn.op == "make_function") or _is_comprehension(fn.code):
                    continue
                if all(_constant_definition(func_ir, name) for name in fn.code.co_freevars):
                    continue   # becomes a device function (_jitted_functions)
                from numba.core.inline_closurecall import inline_closure_call
                from numba.core.ir_utils import remove_dels
                try:
                    inline_closure_call(func_ir, func_ir.func_id.func.__globals__, block, i, fn)
                except numba_errors.NumbaError as e:
                    raise KernelCompilationError(_strip_numba_banner(str(e)), loc_of(stmt.loc)) from None
                except Exception as e:  # noqa: BLE001 - Numba's inliner assumes well-formed closures
                    raise UnsupportedFeatureError(f"the call of {fn.code.co_name}, defined in this function, could "
                                                  f"not be inlined ({type(e).__name__}: {e}); define it with "
                                                  "@metal.jit(device=True) at module level", loc_of(stmt.loc)) from None
                remove_dels(func_ir.blocks)
                func_ir._definitions = _definitions(func_ir)
                done = False
                break
            if not done:
                break
    # A function only called (now inlined) is not made a device function, which could not capture its values.
    if not any(isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and st.value.op == "make_function"
               for b in func_ir.blocks.values() for st in b.body):
        return
    used = {v.name for b in func_ir.blocks.values() for st in b.body for v in st.list_vars()
            if not (isinstance(st, ir.Assign) and v is st.target)}
    for block in func_ir.blocks.values():
        block.body = [st for st in block.body if not (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)
                                                      and st.value.op == "make_function"
                                                      and st.target.name not in used)]
    func_ir._definitions = _definitions(func_ir)


def _constant_definition(func_ir, name) -> bool:
    try:
        return isinstance(func_ir.get_definition(name), ir.Const)
    except Exception:  # noqa: BLE001
        return False


def _is_comprehension(code) -> bool:
    """A comprehension's or generator expression's function (``<listcomp>``...), refused as its container is."""
    return code.co_name.startswith("<") and code.co_name != "<lambda>"


def _constant_defaults(func_ir, make_function) -> bool:
    """Whether a function defined inside a kernel has only constant default values (Numba's condition)."""
    defaults = func_ir.get_definition(make_function.defaults)
    if defaults is None or isinstance(defaults, ir.Const):
        return True
    items = defaults if isinstance(defaults, tuple) else getattr(defaults, "items", None)
    if items is None or isinstance(defaults, ir.Expr) and defaults.op != "build_tuple":
        return False
    return all(isinstance(func_ir.get_definition(x), ir.Const) for x in items)


def _bind_captured_arrays(pyfunc, func_ir, nargs: int) -> None:
    """Give the function a hidden argument after its own for each device array it captures (captures.py:
    its own globals and closure variables, then those of the device functions it calls): each load of one
    of its own becomes that argument, and each call of a device function that captures arrays passes them on
    (as keywords named captures.HIDDEN_KEYWORD, which devicefn.fold puts after the callee's parameters)."""
    caps = captures.captures(pyfunc)
    if not caps:
        return
    if nargs != func_ir.arg_count + len(caps):
        listed = ", ".join(repr(name) for _, _, name in caps)
        raise UnsupportedFeatureError(
            f"{pyfunc.__name__}() reads the device array(s) {listed} from its scope (directly or through the "
            "device functions it calls): only a kernel compiled for its launch arguments captures device arrays "
            "(a kernel given explicit signatures, or made by specialize(), cannot); pass the array as an argument", source_location(pyfunc))
    first = func_ir.arg_count

    def hidden(owner, kind, name, loc):
        i = captures.index_of(caps, owner, kind, name)
        if i < 0:   # a function the kernel's captures do not reach (a closure, a Numba @jit function)
            raise UnsupportedFeatureError(
                f"{owner.__name__}() reads the device array {name!r} from its scope, which only a "
                "@metal.jit(device=True) function named by the kernel can do; pass the array as an argument",
                loc_of(loc))
        return ir.Arg(name=f"captured{i}_{name}", index=first + i, loc=loc)

    for block in func_ir.blocks.values():
        body = []
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, (ir.Global, ir.FreeVar)):
                kind = "f" if isinstance(stmt.value, ir.FreeVar) else "g"
                if captures.index_of(caps, pyfunc, kind, stmt.value.name) >= 0:
                    stmt.value = hidden(pyfunc, kind, stmt.value.name, stmt.value.loc)
            elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call":
                try:
                    fn = func_ir.get_definition(stmt.value.func)
                except Exception:  # noqa: BLE001
                    fn = None
                callee = getattr(fn, "value", None) if isinstance(fn, (ir.Global, ir.FreeVar)) else None
                if captures.is_device_function(callee):
                    for k, (owner, kind, name) in enumerate(captures.captures(callee.py_func)):
                        var = block.scope.redefine(f"captured_{owner.__name__}_{name}", stmt.loc)
                        body.append(ir.Assign(hidden(owner, kind, name, stmt.loc), var, stmt.loc))
                        stmt.value.kws = list(stmt.value.kws) + [(captures.HIDDEN_KEYWORD.format(k), var)]
            body.append(stmt)
        block.body = body
    func_ir.arg_names = tuple(func_ir.arg_names) + tuple(f"captured{i}_{c[2]}" for i, c in enumerate(caps))
    func_ir.arg_count += len(caps)
    func_ir._definitions = _definitions(func_ir)


def _definitions(func_ir):
    from numba.core.ir_utils import build_definitions
    return build_definitions(func_ir.blocks)


def _bad_len_call(func_ir):
    """(number of arguments, location) of a call of len() with other than one argument, if any."""
    import builtins
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call"):
                continue
            try:
                fn = func_ir.get_definition(stmt.value.func)
            except Exception:  # noqa: BLE001
                continue
            if isinstance(fn, (ir.Global, ir.FreeVar)) and fn.value is builtins.len and len(stmt.value.args) != 1:
                return len(stmt.value.args), loc_of(stmt.loc)
    return None


def _apply_rewrites(state) -> None:
    blocks = state.func_ir.blocks
    for rewrite_cls in _UNTYPED_REWRITES:
        rewrite = rewrite_cls(state)
        work = list(blocks.items())
        while work:
            label, block = work.pop()
            if rewrite.match(state.func_ir, block, state.typemap, state.calltypes):
                new_block = rewrite.apply()
                blocks[label] = new_block
                work.append((label, new_block))


_CONTAINERS = {"build_list": "lists", "build_map": "dicts", "build_set": "sets"}


#: Kernel-API functions whose first argument (or ``shape=``) is an array shape: a list there is refused by
#: their typing in numba.cuda's words ("No implementation of function Function(<function shared.array ...")
#: rather than by check_constructs' general refusal of lists.
_SHAPE_CALLEES = frozenset({"shared.array", "local.array"})


def _shape_arguments(func_ir) -> set[str]:
    """Names of the variables passed as the shape of a _SHAPE_CALLEES call."""
    names = set()
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call"):
                continue
            call = stmt.value
            if getattr(_static_value(func_ir, call.func), "path", None) not in _SHAPE_CALLEES:
                continue
            shape = call.args[0] if call.args else dict(call.kws).get("shape")
            if isinstance(shape, ir.Var):
                names.add(shape.name)
    return names


def _static_value(func_ir, var):
    """The Python object a variable holds if it is a global or closure value or an attribute chain of one
    (``metal.shared.array``), else None."""
    try:
        d = func_ir.get_definition(var)
    except (KeyError, ir.NotDefinedError):
        return None
    if isinstance(d, (ir.Global, ir.FreeVar)):
        return d.value
    if isinstance(d, ir.Expr) and d.op == "getattr":
        return getattr(_static_value(func_ir, d.value), d.attr, None)
    return None


def check_constructs(func_ir) -> None:
    """Refuse Python constructs that have no meaning in a Metal kernel, naming the line, before typing
    (whose errors about them would be much less clear)."""
    from numba.core.unsafe import eh
    shapes = _shape_arguments(func_ir)
    for block in func_ir.blocks.values():
        for stmt in block.body:
            loc = loc_of(stmt.loc)
            if isinstance(stmt, ir.Raise) or type(stmt).__name__ == "DynamicRaise":
                raise UnsupportedFeatureError(
                    "`raise` in a Metal kernel takes an exception class or an instance with constant "
                    "arguments (numba.cuda's rule: the message cannot be computed at run time)", loc)
            if isinstance(stmt, (ir.TryRaise, ir.StaticTryRaise)) or type(stmt).__name__ == "DynamicTryRaise":
                raise UnsupportedFeatureError("`try`/`except` is not supported in Metal kernels (a GPU thread "
                                              "cannot catch exceptions)", loc)
            if isinstance(stmt, (ir.EnterWith, ir.PopBlock)):
                raise UnsupportedFeatureError("`with` blocks are not supported in Metal kernels", loc)
            if not isinstance(stmt, ir.Assign):
                continue
            value = stmt.value
            if isinstance(value, ir.Yield):
                raise UnsupportedFeatureError("generators (yield) are not supported in Metal kernels", loc)
            if isinstance(value, (ir.Global, ir.FreeVar)) and (value.value is eh.mark_try_block or
                                                               value.value is eh.end_try_block):
                raise UnsupportedFeatureError("`try`/`except` is not supported in Metal kernels (a GPU thread "
                                              "cannot raise)", loc)
            if isinstance(value, ir.Expr):
                if value.op == "build_list" and stmt.target.name in shapes:
                    continue   # refused by the array's typing, in numba.cuda's words (kernel_api/memory.py)
                if value.op in _CONTAINERS:
                    raise UnsupportedFeatureError(
                        f"{_CONTAINERS[value.op]} are not supported in Metal kernels; use tuples, "
                        "metal.local.array or arrays passed in as arguments", loc)
                if value.op == "make_function" and _is_comprehension(value.code):
                    raise UnsupportedFeatureError(
                        "comprehensions and generator expressions are not supported in Metal kernels; use a "
                        "loop (over a metal.local.array, or writing an array argument)", loc)
                if value.op == "make_function":   # not made a device function (_jitted_functions)
                    raise UnsupportedFeatureError(
                        "a function defined inside a kernel compiles as a device function only when its "
                        "default values are constants; define a @metal.jit(device=True) function at module "
                        "level", loc)


def infer_types(pyfunc, argtypes, return_type=None, float32_constants=frozenset(),
                device_function=None) -> TypedFunction:
    """Type ``pyfunc`` for ``argtypes`` with Numba's type inference in the metal typing context.
    ``float32_constants``: IR variables whose literal is typed float32 (weak literals, precision.py);
    ``device_function``: see :func:`build_ir` (devicefn.infer passes it)."""
    argtypes = tuple(argtypes)
    func_ir = build_ir(pyfunc, argtypes, device_function)
    check_constructs(func_ir)
    if float32_constants:
        _float32_constants(func_ir, float32_constants)
    typingctx = typing_context()
    try:
        typemap, restype, calltypes, _ = type_inference_stage(typingctx, TARGET_CONTEXT, func_ir, argtypes,
                                                              return_type)
    except numba_errors.TypingError as e:
        cause = _metal_cause(e)
        if cause is not None:
            raise _located(cause, loc_of(getattr(e, "loc", None)) or source_location(pyfunc)) from None
        text = _strip_numba_banner(str(e))
        untyped = _UNTYPED_GLOBAL.search(text)
        if untyped is not None:
            name, kind = untyped.group(1), untyped.group(2)
            hint = ("decorate it with @metal.jit(device=True) to call it from a kernel"
                    if kind in ("function", "builtin_function_or_method") else
                    "kernels can use numbers, tuples, NumPy arrays (as constants), modules and "
                    "numba-metal device functions from the enclosing scope")
            raise UnsupportedFeatureError(
                f"'{name}' ({kind}) cannot be used in a Metal kernel: {hint}",
                loc_of(getattr(e, "loc", None)) or source_location(pyfunc)) from None
        if "Cannot unify" in text:
            text += ("\nHint: in numba-metal kernels a variable keeps one type for the whole function; "
                     "use a new name for a value of a different kind (e.g. a loop variable named like "
                     "an array argument).")
        raise KernelCompilationError(
            "type inference failed for "
            f"{pyfunc.__name__}{_argtypes_str(argtypes)}:\n{text}",
            loc_of(getattr(e, "loc", None)) or source_location(pyfunc)) from None
    except numba_errors.NumbaError as e:
        cause = _metal_cause(e)
        if cause is not None:
            raise _located(cause, loc_of(getattr(e, "loc", None)) or source_location(pyfunc)) from None
        raise KernelCompilationError(_strip_numba_banner(str(e)),
                                     loc_of(getattr(e, "loc", None)) or source_location(pyfunc)) from None
    except NumbaMetalError as e:
        # Raised by a numba-metal typing template straight through Numba's type inference.
        raise _located(e, _typing_location(e.__traceback__) or source_location(pyfunc)) from None
    except AttributeError as e:
        # Numba's typing looks module attributes up with getattr and lets the AttributeError out
        # (`metal.no_such_function`, `math.no_such_function`).
        raise KernelCompilationError(f"{e}; a kernel can use only attributes that exist",
                                     _getattr_location(func_ir, getattr(e, "name", None))
                                     or source_location(pyfunc)) from None
    except Exception as e:  # noqa: BLE001 - e.g. Numba's templates unpack arguments: abs() -> ValueError
        raise KernelCompilationError(
            f"type inference failed for {pyfunc.__name__}{_argtypes_str(argtypes)}: "
            f"{type(e).__name__}: {e} (raised while typing this statement; check the number and types "
            "of the arguments of its calls)",
            _typing_location(e.__traceback__) or source_location(pyfunc)) from None
    return TypedFunction(pyfunc, func_ir, typemap, calltypes, restype, argtypes, tuple(func_ir.arg_names))


def _float32_constants(func_ir, names) -> None:
    import numpy as np
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and stmt.target.name in names and isinstance(stmt.value, ir.Const):
                stmt.value = ir.Const(np.float32(stmt.value.value), stmt.value.loc)


def _located(err, location):
    """``err`` (a numba-metal error raised by a typing template, which knows no line) with the
    location of the statement being typed."""
    if err.location is not None or location is None:
        return err
    return type(err)(err.message, location)


def _typing_location(tb):
    """The location of the statement Numba's type inference was typing when ``tb`` was raised: the
    innermost type-inference constraint on the stack (they know their statement's ``loc``)."""
    found = None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename.endswith("typeinfer.py"):
            loc = getattr(frame.f_locals.get("self"), "loc", None)
            if isinstance(loc, ir.Loc):
                found = loc
        tb = tb.tb_next
    return loc_of(found)


_RAISED_FROM = re.compile(r"Raised from (.+) \((\d+)\)\s*$")


def _raised_from(exc):
    """The (file, line) Numba writes into an UnsupportedBytecodeError's message."""
    m = _RAISED_FROM.search(str(exc))
    return (m.group(1), int(m.group(2))) if m else None


def _getattr_location(func_ir, attr):
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
                    and stmt.value.op == "getattr" and stmt.value.attr == attr):
                return loc_of(stmt.loc)
    return None


def _metal_cause(exc):
    """A numba-metal error raised inside a typing template (and wrapped by Numba), if any."""
    seen = set()
    e = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, NumbaMetalError):
            return e
        e = e.__cause__ or e.__context__
    return None


def _argtypes_str(argtypes) -> str:
    return "(" + ", ".join(str(t) for t in argtypes) + ")"


def _first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_UNTYPED_GLOBAL = re.compile(r"Untyped global name '([^']+)':.*?type of <class '([^']+)'>")


def _strip_numba_banner(text: str) -> str:
    # Numba highlights its messages with terminal escape codes and prefixes banners such as
    # "Failed in nopython mode pipeline": keep its explanation, drop the escapes and the chatter.
    text = plain_text(text)
    # Numba repeats the same "File ..., line N:" block once per frame of its own; keep one of each.
    blocks, seen = [], set()
    for block in text.split("\n\n"):
        key = block.strip()
        if key and key in seen:
            continue
        seen.add(key)
        blocks.append(block)
    text = "\n\n".join(blocks)
    lines = [ln for ln in text.splitlines()
             if not ln.startswith("Failed in ") and "During: " not in ln]
    return "\n".join(lines).strip()

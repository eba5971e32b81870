"""``advisor scan``: static analysis of Python files, without importing or running them.

Parses each file with :mod:`ast`, finds candidate functions (loops over arrays, Numba-decorated
functions, existing kernels), tags their patterns, lists blockers and mechanical changes with line
numbers, optionally checks whether the function compiles to MSL today (:mod:`.compat`), and ranks
the candidates by a documented static score. It never estimates a speedup.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import stat
from dataclasses import dataclass, field

from . import compat, rules
from .console import View, printable
from .outcomes import UsageError
from .schema import new_document
from .sourcefile import SourceError, decode_python, file_kind, read_regular_file

SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "env", "site-packages",
             "node_modules", "build", "dist", ".eggs"}

UNKNOWNS = [
    "array sizes at run time: small arrays cost more in launch and transfer than they gain",
    "argument types, unless a decorator gives a signature",
    "how often each function is called and its share of the program's run time",
    "data transfer between host and device, and whether data can stay on the device",
    "whether the results need float64 precision (float64 is exact on Apple GPUs but emulated in software, "
    "many times slower than float32)",
    "whether loop iterations that write the same element conflict (scan assumes indexed stores by the "
    "loop variable are independent)",
]

SCORE_FORMULA = ("score = parallelism (0-40) + work (0-30) + compatibility (0-30) - 10 per distinct "
                 "blocker (at most 30), clamped to 0-100; a static ranking, never a speedup")

PARALLELISM_POINTS = {"declared": 40, "indexed-store": 30, "reduction": 15, "array-loop": 10, "none": 0}
WORK_TAGS = ("elementwise-math", "nested-loops", "stencil", "monte-carlo")
WORK_POINTS_EACH = 10
WORK_MAX = 30
COMPAT_POINTS = {"compiles": 30, "compiles-as-float32": 20, "not-checked": 15, "unable": 10, "fails": 0}
BLOCKER_POINTS_EACH = 10
BLOCKER_MAX = 30


# ---------------------------------------------------------------------------------------------
# Names and decorators
# ---------------------------------------------------------------------------------------------

def import_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> fully qualified name, from every import in the file."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def dotted_name(expr: ast.AST, aliases: dict[str, str]) -> str | None:
    """``np.random.rand`` -> ``numpy.random.rand`` through the file's imports."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    base = aliases.get(expr.id, expr.id)
    return ".".join([base] + parts[::-1])


@dataclass
class Decorator:
    kind: str
    line: int
    signatures: list[str] | None  # string literals given to the decorator
    signature_not_literal: bool = False
    device: bool = False


def read_decorator(node: ast.AST, aliases) -> Decorator | None:
    call = node if isinstance(node, ast.Call) else None
    name = dotted_name(call.func if call else node, aliases)
    kind = rules.DECORATORS.get(name or "")
    if kind is None:
        return None
    dec = Decorator(kind, node.lineno, None)
    if call is not None:
        for kw in call.keywords:
            if kw.arg == "device" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                dec.device = True
        if call.args:
            first = call.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                dec.signatures = [first.value]
            elif isinstance(first, (ast.List, ast.Tuple)) and first.elts and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in first.elts):
                dec.signatures = [e.value for e in first.elts]
            else:
                dec.signature_not_literal = True
    if kind == "metal.jit" and dec.device:
        dec.kind = "metal.device"
    if kind == "cuda.jit" and dec.device:
        dec.kind = "cuda.device"
    return dec


# ---------------------------------------------------------------------------------------------
# Body analysis
# ---------------------------------------------------------------------------------------------

@dataclass
class Finding:
    line: int
    rule: str
    message: str


@dataclass
class Analysis:
    loops: int = 0
    max_depth: int = 0
    array_loop: bool = False
    indexed_store: bool = False
    reduction_lines: list = field(default_factory=list)
    stencil_lines: list = field(default_factory=list)
    math_lines: list = field(default_factory=list)
    random_lines: list = field(default_factory=list)
    prange: bool = False
    blockers: list = field(default_factory=list)
    changes: list = field(default_factory=list)

    def add(self, bucket: str, line: int, rule_id: str) -> None:
        table = rules.BLOCKERS if bucket == "blockers" else rules.CHANGES
        found = getattr(self, bucket)
        if not any(f.rule == rule_id and f.line == line for f in found):
            found.append(Finding(line, rule_id, table[rule_id].message))


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _target_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


class BodyAnalyzer(ast.NodeVisitor):
    """Walks one function body (not nested functions, which are candidates of their own)."""

    def __init__(self, fn: ast.FunctionDef, aliases: dict[str, str]):
        self.fn = fn
        self.aliases = aliases
        self.a = Analysis()
        self.loop_vars: list[set[str]] = []
        self.depth = 0

    def run(self) -> Analysis:
        body = self.fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        for stmt in body:
            self.visit(stmt)
        return self.a

    # -- helpers ------------------------------------------------------------------------

    def _in_loop_vars(self) -> set[str]:
        out: set[str] = set()
        for s in self.loop_vars:
            out |= s
        return out

    def _qual(self, expr) -> str:
        return dotted_name(expr, self.aliases) or ""

    # -- structure ----------------------------------------------------------------------

    def _loop(self, node, loop_var_names: set[str]):
        self.a.loops += 1
        self.depth += 1
        self.a.max_depth = max(self.a.max_depth, self.depth)
        self.loop_vars.append(loop_var_names)
        for stmt in node.body + node.orelse:
            self.visit(stmt)
        self.loop_vars.pop()
        self.depth -= 1

    def visit_For(self, node: ast.For):
        it = node.iter
        names = _target_names(node.target)
        if isinstance(it, ast.Call):
            q = self._qual(it.func)
            if q in ("numba.prange", "prange"):
                self.a.prange = True
            elif q in ("enumerate", "zip"):
                self.a.array_loop = True   # kernels iterate over arrays, enumerate and zip (no change needed)
            self.visit(it)
        elif isinstance(it, (ast.Name, ast.Attribute, ast.Subscript)):
            self.a.array_loop = True  # iterating over an array (or a sequence) directly: kernels do
            self.visit(it)
        else:
            self.visit(it)
        self._loop(node, names)

    def visit_While(self, node: ast.While):
        self.visit(node.test)
        self._loop(node, set())

    def visit_FunctionDef(self, node):
        # A function defined in a kernel compiles as a device function when the variables of the kernel it
        # reads are constants (Numba bakes them in); one reading a value computed at run time compiles only
        # where it is called (each call is inlined), not passed on.
        if self._reads_run_time_values(node) and self._escapes(node):
            self.a.add("blockers", node.lineno, "closure")

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def _escapes(self, node) -> bool:
        """Whether a function defined in the kernel is used other than called by its name."""
        name = getattr(node, "name", None)
        if name is None:   # a lambda: escapes unless assigned to a name only called
            for st in ast.walk(self.fn):
                if (isinstance(st, ast.Assign) and st.value is node and len(st.targets) == 1
                        and isinstance(st.targets[0], ast.Name)):
                    name = st.targets[0].id
            if name is None:
                return True
        called = {id(c.func) for c in ast.walk(self.fn) if isinstance(c, ast.Call)}
        return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in called
                   for n in ast.walk(self.fn))

    def _reads_run_time_values(self, node) -> bool:
        args = node.args
        own = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        own |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        own |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own
        return bool(read & self._run_time_names())

    def _run_time_names(self) -> set[str]:
        """The kernel's parameters and the names it binds other than once to a constant (a nested function's
        name included: a function is not a constant)."""
        args = self.fn.args
        names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        stores: dict[str, int] = {}
        constant: set[str] = set()
        for n in ast.walk(self.fn):
            if n is self.fn:
                continue
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                stores[n.id] = stores.get(n.id, 0) + 1
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stores[n.name] = stores.get(n.name, 0) + 1
            if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and isinstance(n.value, ast.Constant)):
                constant.add(n.targets[0].id)
        return names | {name for name, count in stores.items() if count > 1 or name not in constant}

    def visit_ClassDef(self, node):
        self.a.add("blockers", node.lineno, "closure")

    # -- blockers -----------------------------------------------------------------------

    def visit_Try(self, node):
        self.a.add("blockers", node.lineno, "try")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_With(self, node):
        self.a.add("blockers", node.lineno, "with")
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_Yield(self, node):
        self.a.add("blockers", node.lineno, "generator")

    visit_YieldFrom = visit_Yield
    visit_Await = visit_Yield

    def visit_Global(self, node):
        self.a.add("blockers", node.lineno, "global")

    visit_Nonlocal = visit_Global

    def _container(self, node):
        self.a.add("blockers", node.lineno, "container")
        self.generic_visit(node)

    def visit_List(self, node):
        if isinstance(node.ctx, ast.Load):
            self.a.add("blockers", node.lineno, "container")
        self.generic_visit(node)

    visit_Dict = _container
    visit_Set = _container
    visit_ListComp = _container
    visit_SetComp = _container
    visit_DictComp = _container
    visit_GeneratorExp = _container

    def visit_JoinedStr(self, node):
        self.a.add("blockers", node.lineno, "string")

    # -- statements that store ----------------------------------------------------------

    def _store(self, target, value, node, augmented: bool):
        loop_vars = self._in_loop_vars()
        if isinstance(target, ast.Attribute):
            self.a.add("blockers", node.lineno, "attribute-store")
        elif isinstance(target, ast.Subscript) and self.loop_vars:
            index_names = _names_in(target.slice)
            if index_names & loop_vars and not augmented:
                self.a.indexed_store = True
            elif index_names & loop_vars and augmented:
                # out[i] += ...: still one element per iteration of the loop over i
                self.a.indexed_store = True
                if self.depth > 1 and not (index_names & self.loop_vars[-1]):
                    self.a.reduction_lines.append(node.lineno)
            else:
                self.a.reduction_lines.append(node.lineno)  # accumulation into a shared element
        elif isinstance(target, ast.Name) and self.loop_vars:
            if augmented or (value is not None and target.id in _names_in(value)):
                self.a.reduction_lines.append(node.lineno)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._store(elt, None, node, augmented)

    def visit_Assign(self, node: ast.Assign):
        for t in node.targets:
            self._store(t, node.value, node, False)
            if isinstance(t, ast.Subscript):
                self.visit(t)
        self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign):
        self._store(node.target, node.value, node, True)
        if isinstance(node.target, ast.Subscript):
            self.visit(node.target)
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if node.value is not None:
            self._store(node.target, node.value, node, False)
            self.visit(node.value)

    # -- expressions --------------------------------------------------------------------

    def visit_Subscript(self, node: ast.Subscript):
        loop_vars = self._in_loop_vars()
        index = node.slice
        if loop_vars and _names_in(index) & loop_vars:
            self.a.array_loop = True
            parts = index.elts if isinstance(index, ast.Tuple) else [index]
            for p in parts:
                if isinstance(p, ast.BinOp) and isinstance(p.op, (ast.Add, ast.Sub)) and (
                        (isinstance(p.left, ast.Name) and p.left.id in loop_vars
                         and isinstance(p.right, ast.Constant) and isinstance(p.right.value, int))
                        or (isinstance(p.right, ast.Name) and p.right.id in loop_vars
                            and isinstance(p.left, ast.Constant) and isinstance(p.left.value, int))):
                    self.a.stencil_lines.append(node.lineno)
                    break
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp):
        if isinstance(node.op, ast.Pow):
            self.a.math_lines.append(node.lineno)
        elif isinstance(node.op, ast.MatMult):
            self.a.add("blockers", node.lineno, "whole-array")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant):
        if node.value in ("float64", "f8", "double", "d"):
            self.a.add("changes", node.lineno, "float64")

    def visit_Attribute(self, node: ast.Attribute):
        if self._qual(node) == "numpy.float64":
            self.a.add("changes", node.lineno, "float64")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        q = self._qual(node.func)
        head, _, last = q.rpartition(".")
        line = node.lineno
        if q in ("open", "input"):
            self.a.add("blockers", line, "io")
        elif q in ("str", "repr", "format") or (isinstance(node.func, ast.Attribute)
                                                 and node.func.attr in ("format", "join", "split")):
            self.a.add("blockers", line, "string")
        elif q in ("list", "dict", "set", "sorted"):
            self.a.add("blockers", line, "container")
        elif isinstance(node.func, ast.Name) and node.func.id == self.fn.name:
            self.a.add("blockers", line, "recursion")
        if head == "math" and last in rules.MATH_FUNCS:
            self.a.math_lines.append(line)
        elif head == "numpy":
            if last in rules.NUMPY_UFUNCS:
                self.a.math_lines.append(line)
            elif last in rules.MATH_FUNCS or last in ("isclose",):
                self.a.math_lines.append(line)
                self.a.add("changes", line, "numpy-math")
            elif last in rules.ALLOCATING_NUMPY:
                self.a.add("blockers", line, "allocation")
            elif last in rules.WHOLE_ARRAY_NUMPY:
                self.a.add("blockers", line, "whole-array")
        elif q.startswith("numpy.linalg.") or q.startswith("numpy.fft."):
            self.a.add("blockers", line, "whole-array")
        if q.startswith("numpy.random.") or q.startswith("random."):
            self.a.random_lines.append(line)
            self.a.add("changes", line, "random")
        elif "xoroshiro128p_" in q:
            self.a.random_lines.append(line)
        if isinstance(node.func, ast.Attribute) and not head.startswith(("numpy", "math", "numba", "random")):
            base = node.func.value
            if node.func.attr in rules.WHOLE_ARRAY_METHODS and isinstance(base, (ast.Name, ast.Subscript)) \
                    and self._qual(base).split(".")[0] not in ("math", "numpy", "numba_metal", "random"):
                rule = "allocation" if node.func.attr in ("copy", "astype", "tolist", "reshape", "ravel",
                                                           "flatten", "transpose") else "whole-array"
                self.a.add("blockers", line, rule)
        self.generic_visit(node)


# ---------------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------------

def _functions(tree: ast.Module):
    """(qualname, FunctionDef, class_name or None) for every function, nested ones included, in source
    order. Iterative: an ``elif`` chain nests as deep as it is long."""
    out = []
    stack = [(iter(tree.body), "", None)]
    while stack:
        nodes, prefix, cls = stack[-1]
        node = next(nodes, None)
        if node is None:
            stack.pop()
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            q = f"{prefix}{node.name}"
            out.append((q, node, cls))
            stack.append((iter(node.body), f"{q}.<locals>.", None))
        elif isinstance(node, ast.ClassDef):
            stack.append((iter(node.body), f"{prefix}{node.name}.", node.name))
        else:  # compound statements, their except handlers and match cases
            inner = [s for attr in ("body", "orelse", "finalbody", "handlers", "cases")
                     for s in getattr(node, attr, None) or () if isinstance(s, ast.AST)]
            if inner:
                stack.append((iter(inner), prefix, cls))
    return out


def tags_and_reasons(dec: Decorator | None, a: Analysis) -> tuple[list[str], list[str], str]:
    """Pattern tags, human reasons, and the parallelism class of a function."""
    tags, reasons = [], []
    kind = dec.kind if dec else None
    if kind in ("metal.jit", "metal.device"):
        tags.append("existing-kernel")
        reasons.append("already a numba-metal " + ("kernel" if kind == "metal.jit" else "device function")
                       + ": measure it with `advisor compare` or `advisor profile`")
    if kind in ("cuda.jit", "cuda.device"):
        tags.append("cuda-kernel")
        reasons.append("a numba.cuda " + ("kernel" if kind == "cuda.jit" else "device function")
                       + ": numba-metal accepts the same indexing names (metal.grid, threadIdx, blockIdx...)")
    if kind == "vectorize":
        tags.append("vectorize")
        reasons.append("@vectorize: one independent scalar function per element; a one-line kernel")
    if kind == "guvectorize":
        tags.append("guvectorize")
        reasons.append("@guvectorize: independent per outer element; the loop dimensions become the grid")
    if kind == "stencil":
        tags.append("stencil")
        reasons.append("@stencil: neighbourhood reads per output element, one thread each")
    if a.prange:
        tags.append("prange")
        reasons.append("uses prange: its iterations are already declared independent")
    if a.array_loop:
        tags.append("array-loop")
    if a.math_lines:
        tags.append("elementwise-math")
        reasons.append(f"math per element (line {a.math_lines[0]}): arithmetic the GPU can spread out")
    if a.max_depth >= 2:
        tags.append("nested-loops")
        reasons.append(f"nested loops (depth {a.max_depth}): more work per call, possibly a 2-D grid")
    if a.reduction_lines:
        tags.append("reduction")
        reasons.append(f"accumulates across iterations (line {a.reduction_lines[0]}): needs a reduction "
                       "kernel (threadgroup sums, SIMD-group functions or atomics)")
    if a.stencil_lines and "stencil" not in tags:
        tags.append("stencil")
        reasons.append(f"reads neighbours i+/-k (line {a.stencil_lines[0]}): a stencil, one thread per "
                       "output element")
    if a.random_lines:
        tags.append("monte-carlo")
        reasons.append(f"random numbers (line {a.random_lines[0]}): Monte Carlo, one generator per thread")
    if a.indexed_store and not a.prange and kind not in rules.PARALLEL_KINDS:
        reasons.append("stores element i in iteration i: the loop over i can become the kernel grid")

    if kind in rules.PARALLEL_KINDS or a.prange:
        parallel = "declared"
    elif a.indexed_store:
        parallel = "indexed-store"
    elif a.reduction_lines and a.loops:
        parallel = "reduction"
    elif a.array_loop:
        parallel = "array-loop"
    else:
        parallel = "none"
    order = ["existing-kernel", "cuda-kernel", "vectorize", "guvectorize", "prange", "array-loop",
             "elementwise-math", "nested-loops", "reduction", "stencil", "monte-carlo"]
    tags = sorted(set(tags), key=order.index)
    return tags, reasons, parallel


def score(parallel: str, tags: list[str], compile_status: str, blockers: list) -> tuple[int, dict]:
    """The documented static score (see SCORE_FORMULA and docs/advisor.md)."""
    p = PARALLELISM_POINTS[parallel]
    w = min(WORK_MAX, WORK_POINTS_EACH * sum(1 for t in WORK_TAGS if t in tags))
    c = COMPAT_POINTS[compile_status]
    b = min(BLOCKER_MAX, BLOCKER_POINTS_EACH * len({f.rule for f in blockers}))
    total = max(0, min(100, p + w + c - b))
    return total, {"parallelism": p, "work": w, "compatibility": c, "blockers": -b}


def file_error(display: str, line: int | None, reason: str, message: str) -> dict:
    return {"file": display, "line": line, "reason": reason, "message": message}


def analyze_file(path: str, display: str, check: bool) -> tuple[list[dict], int, list[dict]]:
    """Candidates of one file, the number of functions examined, and errors. A function that cannot be
    analysed is an error of its own; the file's other functions are still analysed."""
    try:
        tree = ast.parse(decode_python(read_regular_file(path)), filename=path)
    except SourceError as e:
        return [], 0, [file_error(display, None, e.reason, str(e))]
    except SyntaxError as e:
        return [], 0, [file_error(display, e.lineno, "syntax-error", f"syntax error: {e.msg}")]
    except ValueError as e:  # null bytes (a SyntaxError from Python 3.12)
        return [], 0, [file_error(display, None, "syntax-error", f"not Python source: {e}")]
    except (RecursionError, MemoryError):
        return [], 0, [file_error(display, None, "too-complex", TOO_COMPLEX + "; nothing of it was analysed")]
    aliases = import_aliases(tree)
    candidates, errors = [], []
    functions = _functions(tree)
    for qualname, fn, cls in functions:
        try:
            c = analyze_function(path, display, qualname, fn, cls, aliases, check)
        except (RecursionError, MemoryError):
            errors.append(file_error(display, fn.lineno, "too-complex", f"{qualname}: {TOO_COMPLEX}; the file's "
                                     "other functions were analysed"))
            continue
        if c is not None:
            candidates.append(c)
    return candidates, len(functions), errors


TOO_COMPLEX = "nested too deeply for Python to analyse (its recursion limit)"


def analyze_function(path, display, qualname, fn, cls, aliases, check) -> dict | None:
    """The candidate entry of one function, or None when it is not a candidate."""
    dec = None
    for d in fn.decorator_list:
        dec = read_decorator(d, aliases)
        if dec is not None:
            break
    a = BodyAnalyzer(fn, aliases).run()
    if dec is None and not a.array_loop and not (a.loops and (a.random_lines or a.math_lines)):
        return None
    tags, reasons, parallel = tags_and_reasons(dec, a)
    if check:
        cc = compat.check(path, fn, dec, cls, aliases)
    else:
        cc = compat.not_checked("--no-compile-check was given")
    total, parts = score(parallel, tags, cc["status"], a.blockers)
    return {
        "rank": 0, "score": total, "score_parts": parts, "file": display, "line": fn.lineno,
        "qualname": qualname, "decorator": dec.kind if dec else None, "tags": tags, "reasons": reasons,
        "blockers": [vars(f) for f in sorted(a.blockers, key=lambda f: (f.line, f.rule))],
        "changes": [vars(f) for f in sorted(a.changes, key=lambda f: (f.line, f.rule))],
        "compile_check": cc,
    }


def iter_python_files(root: str, excludes: list[str], errors: list[dict]):
    """(path, display name) of the Python files under the directory ``root``, in sorted order, without
    skipped or excluded paths. Symbolic links to directories are not followed; a directory that cannot
    be listed is added to ``errors``."""
    def excluded(rel: str) -> bool:
        return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(os.path.basename(rel), pat) for pat in excludes)

    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            errors.append(file_error(display_name(os.path.relpath(directory, root)), None, "unreadable",
                                     f"cannot list this directory: {e.strerror or e}"))
            continue
        subdirs = []
        for entry in entries:
            rel = os.path.relpath(entry.path, root).replace(os.sep, "/")
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name not in SKIP_DIRS and not entry.name.startswith(".") and not excluded(rel):
                    subdirs.append(entry.path)
            elif entry.name.endswith(".py") and not excluded(rel):
                yield entry.path, display_name(rel)
        stack.extend(reversed(subdirs))


def display_name(path: str) -> str:
    """``path`` as text that prints anywhere: undecodable bytes and control characters escaped."""
    return printable(path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))


def scan(root: str, check: bool = True, excludes: list[str] | None = None) -> dict:
    """The scan document for ``root`` (a file or directory)."""
    try:
        mode = os.stat(root).st_mode
    except OSError as e:
        raise UsageError(f"{root}: {e.strerror or e}") from None
    candidates, errors = [], []
    files = functions = 0
    if stat.S_ISDIR(mode):
        paths = iter_python_files(root, excludes or [], errors)
    elif stat.S_ISREG(mode):
        paths = [(root, display_name(os.path.basename(root)))]
    else:
        raise UsageError(f"{root}: {file_kind(mode)}, not a file or directory to scan")
    for full, rel in paths:
        files += 1
        c, n, e = analyze_file(full, rel, check)
        candidates.extend(c)
        functions += n
        errors.extend(e)
    candidates.sort(key=lambda c: (-c["score"], c["file"], c["line"], c["qualname"]))
    for i, c in enumerate(candidates, 1):
        c["rank"] = i
    return new_document(
        "scan", root=os.path.basename(os.path.abspath(root)) or root, files_scanned=files,
        functions_examined=functions,
        compile_check={"enabled": check, "method": compat.METHOD if check else "disabled by --no-compile-check"},
        candidates=candidates, errors=errors, unknowns=UNKNOWNS, score_formula=SCORE_FORMULA)


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------

_COMPILE_WORDS = {"compiles": "compiles to MSL today", "compiles-as-float32": "compiles once float64 -> float32",
                  "fails": "does not compile to MSL today", "unable": "unable to analyze",
                  "not-checked": "not checked"}
_COMPILE_SHORT = {"compiles": "yes", "compiles-as-float32": "as f32", "fails": "no", "unable": "unable",
                  "not-checked": "-"}
_COMPILE_STYLE = {"compiles": "green", "compiles-as-float32": "yellow", "fails": "red", "unable": "yellow",
                  "not-checked": "dim"}


def render(doc: dict, view: View, top: int | None = None) -> None:
    cands = doc["candidates"]
    view.title(f"numba-metal advisor scan: {doc['root']}")
    view.line(f"{doc['files_scanned']} file(s), {doc['functions_examined']} function(s) examined, "
              f"{len(cands)} candidate(s), {len(doc['errors'])} error(s). Static analysis only: nothing was "
              "imported or run.")
    if doc["compile_check"]["enabled"]:
        view.wrapped("Compile check: " + doc["compile_check"]["method"])
    else:
        view.line("Compile check: off (--no-compile-check).")
    if cands:
        view.section("Ranking (static score; not a speedup)")
        rows = []
        for c in cands:
            rows.append([str(c["rank"]), str(c["score"]), c["qualname"], f"{c['file']}:{c['line']}",
                         _COMPILE_SHORT[c["compile_check"]["status"]], " ".join(c["tags"]) or "-"])
        view.table([("#", "right"), ("score", "right"), ("function", "left"), ("where", "left"),
                    ("MSL", "left"), ("patterns", "left")], rows)
        view.wrapped("MSL: yes = compiles to MSL today; as f32 = compiles once float64 becomes float32; "
                     "no = does not compile; unable = could not be checked in isolation; - = not checked "
                     "(no signature given).", style="dim")
    shown = cands if top is None else cands[:top]
    for c in shown:
        view.section(f"#{c['rank']}  {c['qualname']}  ({c['file']}:{c['line']})  score {c['score']}")
        p = c["score_parts"]
        rows = [("decorator", c["decorator"] or "none"),
                ("score", f"{c['score']} = parallelism {p['parallelism']} + work {p['work']} + "
                          f"compatibility {p['compatibility']} - blockers {-p['blockers']}")]
        cc = c["compile_check"]
        status = _COMPILE_WORDS[cc["status"]]
        rows.append(("MSL", f"{status}: {cc['detail']}" if cc["detail"] else status))
        if cc["error"]:
            where = f" (line {cc['error_line']})" if cc["error_line"] else ""
            rows.append(("compiler", cc["error"] + where))
        view.kv(rows)
        if c["reasons"]:
            view.line("why:", style="bold")
            for r in c["reasons"]:
                view.wrapped("- " + r, indent=2, hang=2)
        if c["blockers"]:
            view.line("blockers:", style="bold red")
            for f in c["blockers"]:
                view.wrapped(f"- line {f['line']}: {f['message']}", indent=2, hang=2)
        if c["changes"]:
            view.line("changes needed:", style="bold yellow")
            for f in c["changes"]:
                view.wrapped(f"- line {f['line']}: {f['message']}", indent=2, hang=2)
    if top is not None and len(cands) > top:
        view.blank()
        view.line(f"({len(cands) - top} more candidate(s) not detailed; --top {top})")
    if doc["errors"]:
        view.section("Files that could not be analyzed")
        for e in doc["errors"]:
            where = f"{e['file']}:{e['line']}" if e["line"] else e["file"]
            view.wrapped(f"- {where}: {e['message']}", indent=2, hang=2)
    view.section("What static analysis cannot know")
    for u in doc["unknowns"]:
        view.wrapped("- " + u, indent=2, hang=2)
    view.blank()
    view.wrapped(doc["score_formula"] + ". Measure with `numba-metal advisor compare`.")

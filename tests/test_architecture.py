"""The package's structure is the one docs/architecture.md describes: dependencies point down its layer
table, there is no import cycle at all, and no module reads another module's private attributes.

The layer table is read from docs/architecture.md itself (each row's `code` column names the paths of its
layer), so the documentation and this test cannot disagree. Every import counts, including those inside
functions. The one documented upward edge (the typing context loading the kernel-API families) is exempt
from the layer check only: no cycle is exempt.
"""

from __future__ import annotations

import ast
import os
import re

PACKAGE = "numba_metal"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCHITECTURE = os.path.join(ROOT, "docs", "architecture.md")

#: The one documented upward edge: the compiler's typing context plugs in the kernel-language families
#: (they register their typing and lowering in the compiler's leaf registries when imported, and import
#: neither the typing context nor anything that does).
PLUGIN_EDGES = {("numba_metal.compiler.typing", "numba_metal.kernel_api")}


def _modules() -> dict[str, str]:
    """Module name -> file of every module of the package (the staged runtime library excluded)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = [d for d in dirnames if d not in ("_lib", "__pycache__")]
        for name in filenames:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[module.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _target(name: str) -> str | None:
    """The package module an import of ``name`` loads (the nearest enclosing module that exists)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    is_package = path.endswith("__init__.py")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                parts = parts if is_package else parts[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            # ``from package import module`` imports that module; ``from module import name``, the module.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] == PACKAGE:
                target = _target(name)
                if target is not None and target != module:
                    found.add(target)
    return found


EDGES = {m: _imports(m) for m in MODULES}


def _layers() -> list[tuple[str, list[str]]]:
    """(layer, code paths) of each row of the layer table in docs/architecture.md, top layer first."""
    text = open(ARCHITECTURE, encoding="utf-8").read()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("layer", "") or set(cells[0]) <= set("-"):
            continue
        paths = re.findall(r"`(numba_metal/[^`]*)`", cells[1])
        if paths:
            rows.append((cells[0], paths))
    return rows


LAYERS = _layers()


def _layer_of(module: str) -> int:
    """The index of the module's layer in the table (0 is the top), by the longest matching path."""
    path = os.path.relpath(MODULES[module], ROOT).replace(os.sep, "/")
    best, rank = -1, None
    for i, (_, paths) in enumerate(LAYERS):
        for p in paths:
            if (path == p or (p.endswith("/") and path.startswith(p))) and len(p) > best:
                best, rank = len(p), i
    assert rank is not None, f"{path} is in no layer of the table in docs/architecture.md"
    return rank


def test_every_module_belongs_to_a_documented_layer():
    assert len(LAYERS) >= 6, LAYERS
    for module in MODULES:
        _layer_of(module)


#: The layers whose modules users import by name, so that sit at the package root instead of in a folder.
ROOT_LAYERS = {"public namespace", "errors"}


def test_every_layer_is_a_folder():
    """A reader finds each layer by its folder: a layer's code is folders, except the public namespace and
    the errors (modules users name), and the package root holds nothing else but ``__main__.py``."""
    files = []
    for layer, paths in LAYERS:
        for p in paths:
            if not p.endswith("/") and p != f"{PACKAGE}/__main__.py":
                assert layer in ROOT_LAYERS, f"layer {layer!r} names the module {p}: give the layer a folder"
                files.append(p)
            assert os.path.exists(os.path.join(ROOT, p)), f"docs/architecture.md names {p}, which does not exist"
    root = {f"{PACKAGE}/{n}" for n in os.listdir(os.path.join(ROOT, PACKAGE)) if n.endswith(".py")}
    assert root == set(files) | {f"{PACKAGE}/__main__.py"}, (
        f"modules at the package root outside the public namespace and errors: {sorted(root - set(files))}")


def test_dependencies_point_down_the_layer_table():
    upward = []
    for module, targets in EDGES.items():
        for target in targets:
            if (module, target) in PLUGIN_EDGES:
                continue
            if _layer_of(target) < _layer_of(module):
                upward.append(f"{module} -> {target} ({LAYERS[_layer_of(module)][0]} imports "
                              f"{LAYERS[_layer_of(target)][0]})")
    assert not upward, "imports that point up the layer table:\n" + "\n".join(sorted(upward))


def test_the_plugin_edge_is_documented_and_real():
    text = open(ARCHITECTURE, encoding="utf-8").read()
    for module, target in PLUGIN_EDGES:
        assert target in EDGES[module]
        assert module.replace(".", "/") + ".py" in text and target.replace(".", "/") in text


def test_there_is_no_import_cycle():
    edges = EDGES
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def _private_names_defined(tree) -> set[str]:
    """Private names a module defines: module globals, functions, classes, class attributes and slots,
    and attributes its methods set on ``self``/``cls``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)  # __slots__ entries, setattr names
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_no_module_reads_another_modules_private_attributes():
    trees = {m: ast.parse(open(p, encoding="utf-8").read(), p) for m, p in MODULES.items()}
    defined = {m: _private_names_defined(t) for m, t in trees.items()}
    everywhere = set().union(*defined.values())
    found = []
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            # A private name of numba-metal's (not Numba's or CPython's) that this module does not define.
            if node.attr in everywhere and node.attr not in defined[module]:
                found.append(f"{os.path.relpath(MODULES[module], ROOT)}:{node.lineno}: .{node.attr}")
    assert not found, "reads of private attributes defined by other modules:\n" + "\n".join(sorted(found))


#: Calls whose string arguments name things (stubs, namespaces, Numba types, typing templates), so may be
#: f-strings.
_NAMING_CALLS = {"Stub", "ModuleType", "type", "_no_metal_equivalent"}


#: Literal text of an f-string that only forms a name: identifier characters, or a leading Python module
#: qualifier (``f"nm_c64_{fn}"``, ``f"cmath.{fn}"``); MSL syntax needs punctuation these lack.
_NAME_TEXT = re.compile(r"[A-Za-z0-9_]*")
_QUALIFIER_TEXT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.")


def _is_message_or_name(node, parents) -> bool:
    """True if an f-string is (part of) an error message, a repr or a name rather than emitted code."""
    texts = [v.value for v in node.values if isinstance(v, ast.Constant)]
    if texts and all(_NAME_TEXT.fullmatch(t) or (k == 0 and isinstance(node.values[0], ast.Constant)
                                       and _QUALIFIER_TEXT.fullmatch(t)) for k, t in enumerate(texts)):
        return True
    child = node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.Raise):
            return True
        if isinstance(parent, ast.keyword) and parent.arg == "name":
            return True
        if isinstance(parent, ast.Call):
            callee = parent.func.attr if isinstance(parent.func, ast.Attribute) else getattr(parent.func, "id", "")
            if callee.endswith("Error") or callee == "error" or callee in _NAMING_CALLS:
                return True
        if isinstance(parent, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "__name__"
                                                  for t in parent.targets):
            return True
        if isinstance(parent, ast.FunctionDef):
            return parent.name == "__repr__"   # a repr, not MSL
        child = parent
    return False


def test_msl_is_spelt_only_by_the_msl_module():
    """Outside compiler/msl.py, the compiler and the kernel API build no text with f-strings except
    error messages, reprs and names: MSL is spelt through compiler/msl.py."""
    found = []
    for module, path in MODULES.items():
        if not module.startswith(("numba_metal.compiler", "numba_metal.kernel_api")) or module.endswith(".msl"):
            continue
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr) and not _is_message_or_name(node, parents):
                found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
    assert not found, "f-strings that may spell MSL outside compiler/msl.py:\n" + "\n".join(found)


#: Lines a hand-written module may have (Python of the package and of tools/, Swift and C of the runtime):
#: past it a module holds more than one idea, and the next feature lands in a room that is already full.
MODULE_LINES = 800

#: Modules allowed past MODULE_LINES, each with why (none: the CPU executor and the MSL reader were split
#: along their own sections).
LARGE_MODULES: dict = {}


def _hand_written_modules() -> list[str]:
    found = []
    for top, suffixes in ((PACKAGE, (".py",)), ("tools", (".py",)), ("Sources", (".swift", ".c"))):
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d not in ("_lib", "__pycache__", "data")]
            found += [os.path.relpath(os.path.join(dirpath, n), ROOT).replace(os.sep, "/")
                      for n in filenames if n.endswith(suffixes)]
    return sorted(found)


def test_modules_stay_small():
    """No hand-written module is longer than MODULE_LINES lines but the named, justified exceptions."""
    sizes = {}
    for path in _hand_written_modules():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            sizes[path] = sum(1 for _ in f)
    over = [f"{path}: {n} lines" for path, n in sizes.items() if n > MODULE_LINES and path not in LARGE_MODULES]
    assert not over, (f"modules over {MODULE_LINES} lines (split them along their ideas, as docs/architecture.md "
                      "describes, or name one in LARGE_MODULES with why):\n" + "\n".join(over))
    stale = [path for path in LARGE_MODULES if sizes.get(path, 0) <= MODULE_LINES]
    assert not stale, f"LARGE_MODULES names modules that are no longer large (remove them): {stale}"


def _kernel_api_families() -> list[str]:
    """The family modules ``kernel_api.families()`` imports (read from its source, importing nothing)."""
    path = os.path.join(ROOT, PACKAGE, "kernel_api", "__init__.py")
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "families")
    return sorted(alias.name for node in ast.walk(function) if isinstance(node, ast.ImportFrom)
                  for alias in node.names)


def test_the_kernel_tests_mirror_the_kernel_api_families():
    """Each ``kernel_api/<family>.py`` has its tests in ``tests/kernels/test_<family>.py`` (as Metal.jl's
    test/device/intrinsics/ mirrors src/device/intrinsics/)."""
    families = _kernel_api_families()
    assert len(families) >= 10, families
    missing = [f"tests/kernels/test_{family}.py" for family in families
               if not os.path.exists(os.path.join(ROOT, "tests", "kernels", f"test_{family}.py"))]
    assert not missing, ("kernel-API families without their test file (add it, or move the family's tests "
                         "there with git mv):\n" + "\n".join(missing))



def _header_defines() -> dict[str, int]:
    header = os.path.join(ROOT, "Sources", "CPUEngine", "include", "numba_metal_runtime.h")
    with open(header, encoding="utf-8") as f:
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define\s+(NM_\w+)\s+(\d+)\b", f.read(), re.M)}


def test_the_bindings_constants_are_the_headers():
    """The header owns every constant runtime/constants.py spells in Python: each has a twin there with its value,
    and every constant of the module is named in HEADER_NAMES (or is the binding's own WAIT_SLICE_NS)."""
    from numba_metal.runtime import constants
    defines = _header_defines()
    values = {name: value for name, value in vars(constants).items() if name.isupper() and isinstance(value, int)}
    values.update({kind: code for code, kind in constants.DEVICE_KINDS.items()})
    values.pop("WAIT_SLICE_NS")
    assert set(values) == set(constants.HEADER_NAMES), "a constant without its header name, or a name without a constant"
    wrong = {name: (value, defines.get(constants.HEADER_NAMES[name])) for name, value in values.items()
             if defines.get(constants.HEADER_NAMES[name]) != value}
    assert not wrong, f"constants that differ from the header (Python, header): {wrong}"

"""The advisor is a tool on numba-metal's public API: its modules import one another without cycles
and import nothing of numba-metal outside :data:`numba_metal.tools.advisor.PUBLIC_API`."""
import ast
import importlib.util
import os

import numba_metal.tools.advisor as advisor
from numba_metal.tools.advisor import PUBLIC_API

PACKAGE = "numba_metal.tools.advisor"
ADVISOR_DIR = os.path.dirname(advisor.__file__)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def imported_modules(path: str, package: str) -> set[str]:
    """Every module a file imports, at module level or inside functions (``from a import b`` counts
    ``a``, and ``a.b`` when b is a module)."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0]
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names if _is_module(f"{mod}.{a.name}"))
    return out


def advisor_graph() -> dict[str, set[str]]:
    graph = {}
    for name in sorted(os.listdir(ADVISOR_DIR)):
        if name.endswith(".py"):
            module = PACKAGE if name == "__init__.py" else f"{PACKAGE}.{name[:-3]}"
            graph[module] = imported_modules(os.path.join(ADVISOR_DIR, name), PACKAGE)
    return graph


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_advisor_modules_import_one_another_without_cycles():
    graph = advisor_graph()
    internal = {m: {d for d in deps if d in graph and d != PACKAGE} for m, deps in graph.items()}
    assert find_cycle(internal) is None, " -> ".join(find_cycle(internal))


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_advisor_uses_only_the_public_api():
    used = {}
    for module, deps in advisor_graph().items():
        for dep in deps:
            if dep.split(".")[0] == "numba_metal" and not dep.startswith(PACKAGE):
                used.setdefault(dep, set()).add(module)
    private = {dep: sorted(users) for dep, users in used.items() if dep not in PUBLIC_API}
    assert not private, f"the advisor imports numba-metal internals: {private}"
    assert set(used) <= set(PUBLIC_API) and "numba_metal.metal" in used


def test_the_docs_name_the_public_api_the_advisor_uses():
    from advisor_paths import REPO
    with open(os.path.join(REPO, "docs", "advisor.md"), encoding="utf-8") as fh:
        text = fh.read()
    for module in PUBLIC_API[1:]:
        assert f"`{module}`" in text, module

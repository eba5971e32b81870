"""docs/installation.md and the README state the Python and library ranges pyproject.toml pins, and the
interpreter and libraries running these tests are inside them."""

import os
import platform
import re
from importlib.metadata import version

import doc_pages

#: Requirement name in pyproject.toml -> its row label in docs/installation.md.
ROWS = {"numba": "Numba", "numpy": "NumPy", "cffi": "cffi", "rich": "rich"}


def _pyproject() -> tuple[str, dict[str, str]]:
    """(requires-python, {dependency: specifier}) read from pyproject.toml."""
    text = doc_pages.read("pyproject.toml")
    python = re.search(r'^requires-python\s*=\s*"([^"]+)"', text, re.M).group(1)
    block = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.M | re.S).group(1)
    deps = dict(re.findall(r'"([A-Za-z0-9_.-]+)\s*([^"]*)"', block))
    return python, deps


def _table() -> dict[str, str]:
    text = doc_pages.read("docs/installation.md")
    return dict(re.findall(r"^\| (\w+) \| `([^`]+)` \|$", text, re.M))


def test_the_installation_page_states_the_pinned_ranges():
    python, deps = _pyproject()
    table = _table()
    assert table.get("Python") == python, f"docs/installation.md: the Python row must read `{python}`"
    assert set(deps) == set(ROWS), f"pyproject.toml's dependencies {sorted(deps)} need rows in ROWS and the page"
    for dep, spec in deps.items():
        assert table.get(ROWS[dep]) == spec, f"docs/installation.md: the {ROWS[dep]} row must read `{spec}`"


def _bounds(spec: str) -> tuple[tuple, tuple]:
    low = re.search(r">=\s*([\d.]+)", spec)
    high = re.search(r"<\s*([\d.]+)", spec)
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    return (as_tuple(low.group(1)) if low else (0,)), (as_tuple(high.group(1)) if high else (10**6,))


def test_the_readme_names_the_same_python_versions():
    python, _ = _pyproject()
    low, high = _bounds(python)
    newest = f"{high[0]}.{high[1] - 1}"
    assert f"Python {low[0]}.{low[1]}–{newest}" in doc_pages.read("README.md"), (
        f"README.md must say Python {low[0]}.{low[1]}–{newest} (pyproject.toml: {python})")


def test_the_running_interpreter_and_libraries_are_inside_the_pinned_ranges():
    python, deps = _pyproject()
    running = {"python": platform.python_version(), **{d: version(d) for d in deps}}
    for name, spec in [("python", python), *deps.items()]:
        low, high = _bounds(spec)
        have = tuple(int(x) for x in re.findall(r"\d+", running[name])[:3])
        assert low <= have < high, f"{name} {running[name]} is outside pyproject.toml's {spec}"


def test_the_readme_set_up_is_two_commands():
    """The README's set-up section stays two commands (build and run the example; build and test)."""
    lines = doc_pages.read("README.md").split("\n")
    start = lines.index("## Set up") + 1
    end = next(n for n in range(start + 1, len(lines) + 1) if n == len(lines) or lines[n].startswith("## "))
    set_up = [b for b in doc_pages.blocks("README.md") if start < b.line <= end]
    assert [len(b.code.strip().splitlines()) for b in set_up] == [1, 1], (
        "README.md's Set up section must keep exactly two one-line commands; put more in docs/installation.md")

"""docs/supported-features.md's table of numba.cuda's host API against the code: every numba-metal spelling
resolves (or, for a name marked "not yet", does not), every proving test exists, and every public host name
of ``metal`` is documented on that page."""

import __future__
import ast
import importlib
import inspect
import re
import types
from pathlib import Path

import pytest

from numba_metal import errors, metal
from numba_metal.host.device import DeviceContext

ROOT = Path(__file__).resolve().parents[2]
FEATURES = ROOT / "docs" / "supported-features.md"
HEADING = "### numba.cuda's host API, name by name"

#: What a spelling's first word names.
OWNERS = {"metal": metal, "DeviceNDArray": metal.DeviceNDArray, "Dispatcher": metal.Dispatcher,
          "Stream": metal.Stream, "Event": metal.Event, "Context": DeviceContext}


def _rows():
    text = FEATURES.read_text()
    assert HEADING in text, f"{FEATURES} lost its section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n#", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith("| numba.cuda |"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == 4, f"malformed row: {line}"
        rows.append(cells)
    assert len(rows) > 80
    return rows


def _spelling(cell: str) -> str:
    found = re.match(r"`([^`]+)`", cell)
    assert found, f"no numba-metal spelling in {cell!r}"
    return found.group(1)


def _resolves(spelling: str) -> bool:
    head, _, rest = spelling.partition(".")
    if head in OWNERS:
        obj = OWNERS[head]
        for part in rest.split("."):
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    if head == "numba":
        module, _, name = spelling.rpartition(".")
        return hasattr(importlib.import_module(module), name)
    return hasattr(errors, spelling)


def _tests(cell: str):
    path = None
    for ref in re.findall(r"`([^`]+)`", cell):
        file, _, name = ref.partition("::")
        path = file or path
        yield path, name


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row[0])
def test_each_row_resolves_and_names_existing_tests(row):
    _, numba_metal_cell, status, test_cell = row
    spelling = _spelling(numba_metal_cell)
    if status.startswith("not yet"):
        assert not _resolves(spelling), f"{spelling} exists now: update its status in {FEATURES.name}"
    else:
        assert status.split()[0].rstrip(":") in ("same", "differs", "impossible"), status
        assert _resolves(spelling), f"{spelling} is documented as {status!r} but does not exist"
    tests = list(_tests(test_cell))
    assert tests
    for path, name in tests:
        file = ROOT / "tests" / path
        assert file.is_file(), f"{path} does not exist"
        defined = {n.name for n in ast.walk(ast.parse(file.read_text())) if isinstance(n, ast.FunctionDef)}
        assert name in defined, f"{path} has no test {name}"


def _public_host_names():
    from numba_metal import kernel_api
    kernel_names = set(kernel_api.index())
    for name, value in vars(metal).items():
        if name.startswith("_") or name in kernel_names or isinstance(value, types.ModuleType):
            continue
        if isinstance(value, __future__._Feature) or (inspect.isclass(value) and value.__module__ == "numpy"):
            continue                                  # ``annotations``; the dtype names (float32 ...)
        yield name


def test_every_public_host_name_of_metal_is_documented():
    text = FEATURES.read_text()
    missing = [name for name in _public_host_names()
               if f"`metal.{name}" not in text and not re.search(rf"`{re.escape(name)}[`(\[.]", text)]
    assert not missing, f"public names of metal missing from {FEATURES.name}: {missing}"

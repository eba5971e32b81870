"""numba-metal's MSL device library: the ``.metal`` files of this folder, one mechanism for all of them.

Each file is a sequence of sections, each opened by a line ``//@@ name requires: a b`` (the text before a
file's first section is its header comment, never emitted). A section may require sections of any file. A
kernel's module names the *functions* (or types, macros, constant tables) it uses, never sections:
:func:`section_of` finds the section defining a name in an index derived from the files themselves, and
:func:`closure` orders the sections needed, dependencies first, each once:

- ``prelude.metal``: helpers with Python's and Numba's semantics (arrays, slices, ranges, atomics...);
- ``mathlib.metal``: float and half routines MSL lacks (one section, ``mathlib``);
- ``float64.metal``, ``float64_math.metal``, ``complex.metal``, ``libdevice.metal``: the emulated float64,
  its math functions, complex numbers and libdevice's helpers (row tables: ``float64_ops.py``,
  ``float64_math_ops.py``, ``complex_ops.py``, ``libdevice_ops.py``).

The order of the emitted text is the prelude's sections, then the math library, then the others: a
section's dependencies come first, roots in name order.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

_HERE = os.path.dirname(__file__)
_HEADER = re.compile(r"^//@@\s+(\S+)(?:\s+requires:\s*(.*))?$")

#: The library's files, in the order their sections are emitted by group (see ``_GROUP``).
FILES = ("prelude.metal", "mathlib.metal", "float64.metal", "float64_math.metal", "complex.metal",
         "libdevice.metal")
#: The group of each file's sections in the emitted text: the prelude, the math library, the rest.
_GROUP = {"prelude.metal": 0, "mathlib.metal": 1}

# A definition at column 0: a struct (possibly a template), a function (its name is the first identifier
# followed by a parenthesis), a program-scope constant table, or a macro.
_STRUCT = re.compile(r"^(?:template\s*<[^>]*>\s*)?struct\s+(\w+)")
_CONSTANT = re.compile(r"^constant\s+[\w:<> ]+?\b(\w+)\s*\[")
_DEFINE = re.compile(r"^#define\s+(\w+)")
_FUNCTION = re.compile(r"\b(\w+)\s*\(")
_NOT_NAMES = {"__attribute__", "alignas", "sizeof", "decltype"}


class Section(NamedTuple):
    name: str
    file: str
    requires: tuple[str, ...]
    text: str
    defines: frozenset


def _first_parameter_type(rest: str) -> str:
    """``float a, float b) {`` -> ``float``: the type of a definition's first parameter ('' for none)."""
    first = rest.split(")")[0].split(",")[0].split()
    return " ".join(first[:-1])


_MACRO_FUNCTION = re.compile(r"NM_INLINE\s+[\w:<>*& ]+?\s([\w#]+)\s*\(([^)]*)\)")
_INVOCATION = re.compile(r"\b([A-Z][A-Z0-9_]+)\s*\((.*)\)\s*\\?$")


def _expand(macros: dict, name: str, args: list[str], names: set) -> None:
    """Adds to ``names`` the functions (``name`` and ``(name, type)``) that invoking macro ``name`` with
    ``args`` defines, through the macros its body invokes too (``##`` pasting followed)."""
    params, body = macros[name]
    bound = dict(zip(params, args))
    for f in _MACRO_FUNCTION.finditer(body):
        function = "".join(bound.get(t.strip(), t.strip()) for t in f.group(1).split("##"))
        ty = " ".join(bound.get(t, t) for t in _first_parameter_type(f.group(2) + ")").split())
        names.update((function, (function, ty)))
    for line in body.splitlines()[1:]:
        m = _INVOCATION.search(line.strip())
        if m and m.group(1) in macros and m.group(1) != name:
            inner = [bound.get(a.strip(), a.strip()) for a in m.group(2).split(",")]
            _expand(macros, m.group(1), inner, names)


def _defined_names(text: str, macros: dict) -> frozenset:
    """The names a section's text defines at column 0, and ``(name, type)`` for each function (``type``: its
    first parameter's), including the functions the macros define where the section invokes them
    (``macros``: those of the file so far, updated)."""
    names: set = set()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line or line[0].isspace() or line.startswith(("//", "}", "{")):
            continue
        m = _DEFINE.match(line)
        if m:
            names.add(m.group(1))
            body = [line]
            while body[-1].endswith("\\") and i < len(lines):
                body.append(lines[i])
                i += 1
            params = re.match(r"^#define\s+\w+\(([^)]*)\)", line)
            if params:
                macros[m.group(1)] = ([p.strip() for p in params.group(1).split(",")], "\n".join(body))
            continue
        if line.startswith("#"):
            continue
        for pattern in (_STRUCT, _CONSTANT):
            m = pattern.match(line)
            if m:
                names.add(m.group(1))
                break
        else:
            m = next((m for m in _FUNCTION.finditer(line) if m.group(1) not in _NOT_NAMES), None)
            if m is None:
                continue
            if m.group(1) in macros:   # an invocation: the functions the macro defines
                args = [a.strip() for a in line[m.end():].rsplit(")", 1)[0].split(",")]
                _expand(macros, m.group(1), args, names)
            else:
                names.update((m.group(1), (m.group(1), _first_parameter_type(line[m.end():]))))
    return frozenset(names)


def parse(text: str, file: str = "<text>") -> dict[str, Section]:
    """The sections of one ``.metal`` file's text, by name (the one section parser)."""
    sections: dict[str, Section] = {}
    name = None
    requires: tuple[str, ...] = ()
    lines: list[str] = []
    macros: dict = {}

    def close():
        if name is not None:
            body = "".join(lines)
            sections[name] = Section(name, file, requires, body, _defined_names(body, macros))

    for line in text.splitlines(keepends=True):
        m = _HEADER.match(line.rstrip("\n"))
        if m:
            close()
            name, requires, lines = m.group(1), tuple((m.group(2) or "").split()), []
        elif name is not None:
            lines.append(line)
    close()
    return sections


def path(file: str) -> str:
    """The path of one of the library's files."""
    return os.path.join(_HERE, file)


_sections: dict[str, Section] | None = None
_index: dict | None = None


def sections() -> dict[str, Section]:
    """Every section of every file, by name (parsed once)."""
    global _sections
    if _sections is None:
        found: dict[str, Section] = {}
        for file in FILES:
            with open(path(file), encoding="utf-8") as f:
                for name, section in parse(f.read(), file).items():
                    if name in found:
                        raise AssertionError(f"MSL library section {name!r} is defined in {found[name].file} "
                                             f"and in {file}")
                    found[name] = section
        _sections = found
    return _sections


def index() -> dict:
    """Every name the library defines, and (function, MSL type of its first parameter) for each function,
    -> the section defining it (None: defined in several, ambiguous)."""
    global _index
    if _index is None:
        found: dict = {}
        for section in sections().values():
            for name in section.defines:
                found[name] = section.name if name not in found else None
        _index = found
    return _index


def section_of(name: str, first_type: str | None = None) -> str:
    """The section defining the function (type, macro, table) ``name``; for a function overloaded in several
    sections, ``first_type`` (its first parameter's MSL type) says which."""
    section = index().get(name, "")
    if section is None and first_type is not None:
        section = index().get((name, first_type), "")
    if section is None:
        raise KeyError(f"several sections of numba-metal's MSL library (compiler/mslib/) define {name!r}: "
                       f"say which by the MSL type of its first parameter (first_type={first_type!r} is none)")
    if not section:
        raise KeyError(f"no section of numba-metal's MSL library (compiler/mslib/) defines {name!r}")
    return section


def closure(section_names) -> list[str]:
    """Section names in emission order: by group (prelude, math library, the rest), dependencies first,
    roots in name order, each once."""
    every = sections()
    out: list[str] = []
    seen: set[str] = set()

    def visit(n):
        if n in seen:
            return
        seen.add(n)
        for d in every[n].requires:
            visit(d)
        out.append(n)

    for n in sorted(section_names):
        visit(n)
    return sorted(out, key=lambda n: _GROUP.get(every[n].file, 2))


def text(section: str) -> str:
    """The MSL text of one section (without its ``//@@`` line)."""
    return sections()[section].text


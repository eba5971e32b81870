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
  ``float64_math_ops.py``, ``complex_ops.py``, ``libdevice_ops.py``);
- ``sanitize.metal``: the kernel sanitizer's hooks, a template with ``@name@`` placeholders that
  ``compiler/sanitize.py`` reads with :func:`parse` and fills in (not indexed: only sanitizing
  specialisations include it, whole).

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


_MACRO = re.compile(r"^#define[ \t]+(\w+)(?:\(([^)]*)\))?(?:[^\n]*\\\n)*[^\n]*", re.M)
_COLUMN_0 = re.compile(r"^[A-Za-z_][^\n]*", re.M)


def _defined_names(text: str, macros: dict) -> frozenset:
    """The names a section's text defines at column 0, and ``(name, type)`` for each function (``type``: its
    first parameter's), including the functions the macros define where the section invokes them
    (``macros``: those of the file so far, updated)."""
    names: set = set()
    for m in _MACRO.finditer(text):
        names.add(m.group(1))
        if m.group(2) is not None:
            macros[m.group(1)] = ([p.strip() for p in m.group(2).split(",")], m.group(0))
    for m in _COLUMN_0.finditer(text):
        line = m.group(0)
        for pattern in (_STRUCT, _CONSTANT):
            d = pattern.match(line)
            if d:
                names.add(d.group(1))
                break
        else:
            f = next((f for f in _FUNCTION.finditer(line) if f.group(1) not in _NOT_NAMES), None)
            if f is None:
                continue
            if f.group(1) in macros:   # an invocation: the functions the macro defines
                args = [a.strip() for a in line[f.end():].rsplit(")", 1)[0].split(",")]
                _expand(macros, f.group(1), args, names)
            else:
                names.update((f.group(1), (f.group(1), _first_parameter_type(line[f.end():]))))
    return frozenset(names)


_SECTION_START = re.compile(r"^//@@", re.M)


def parse(text: str, file: str = "<text>") -> dict[str, Section]:
    """The sections of one ``.metal`` file's text, by name (the one section parser)."""
    sections: dict[str, Section] = {}
    macros: dict = {}
    for part in _SECTION_START.split(text)[1:]:
        head, _, body = part.partition("\n")
        m = _HEADER.match("//@@" + head)
        if m is None:
            raise ValueError(f"{file}: a section starts with '//@@ name' or '//@@ name requires: a b', "
                             f"not {'//@@' + head!r}")
        sections[m.group(1)] = Section(m.group(1), file, tuple((m.group(2) or "").split()), body,
                                       _defined_names(body, macros))
    return sections


def path(file: str) -> str:
    """The path of one of the library's files."""
    return os.path.join(_HERE, file)


#: The files in the groups they are read in: a kernel of float32 code names only the first group's functions,
#: so the float64, complex and libdevice files are read on the first use of one of theirs (a name is defined
#: in one group only: tests/compiler/test_mslib.py checks it).
_READ_GROUPS = (("prelude.metal", "mathlib.metal"),
                ("float64.metal", "float64_math.metal", "complex.metal", "libdevice.metal"))
_sections: dict[str, Section] = {}   # of the groups read so far
_index: dict = {}
_groups_read = 0


def _read_next_group() -> bool:
    """Reads the next group of files into ``_sections`` and ``_index``; False when all are read."""
    global _groups_read
    if _groups_read == len(_READ_GROUPS):
        return False
    for file in _READ_GROUPS[_groups_read]:
        with open(path(file), encoding="utf-8") as f:
            for name, section in parse(f.read(), file).items():
                if name in _sections:
                    raise AssertionError(f"MSL library section {name!r} is defined in {_sections[name].file} "
                                         f"and in {file}")
                _sections[name] = section
                for defined in section.defines:
                    _index[defined] = name if defined not in _index else None
    _groups_read += 1
    return True


def sections() -> dict[str, Section]:
    """Every section of every file, by name (parsed once)."""
    while _read_next_group():
        pass
    return _sections


def index() -> dict:
    """Every name the library defines, and (function, MSL type of its first parameter) for each function,
    -> the section defining it (None: defined in several, ambiguous)."""
    sections()
    return _index


def section_of(name: str, first_type: str | None = None) -> str:
    """The section defining the function (type, macro, table) ``name``; for a function overloaded in several
    sections, ``first_type`` (its first parameter's MSL type) says which."""
    while True:
        section = _index.get(name, "")
        if section is None and first_type is not None:
            section = _index.get((name, first_type), "")
        if section != "" or not _read_next_group():
            break
    if section is None:
        raise KeyError(f"several sections of numba-metal's MSL library (compiler/mslib/) define {name!r}: "
                       f"say which by the MSL type of its first parameter (first_type={first_type!r} is none)")
    if not section:
        raise KeyError(f"no section of numba-metal's MSL library (compiler/mslib/) defines {name!r}")
    return section


def closure(section_names) -> list[str]:
    """Section names in emission order: by group (prelude, math library, the rest), dependencies first,
    roots in name order, each once."""
    every = _sections
    out: list[str] = []
    seen: set[str] = set()

    def visit(n):
        if n in seen:
            return
        seen.add(n)
        if n not in every:   # a requirement in a group not read yet
            sections()
        for d in every[n].requires:
            visit(d)
        out.append(n)

    for n in sorted(section_names):
        visit(n)
    return sorted(out, key=lambda n: _GROUP.get(every[n].file, 2))


def text(section: str) -> str:
    """The MSL text of one section (without its ``//@@`` line)."""
    if section not in _sections:
        sections()
    return _sections[section].text


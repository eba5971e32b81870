"""Writes the reference part of docs/api.md from the code: every public name of numba-metal with its
signature and docstring.

    python tools/generate_api.py            # print the generated reference
    python tools/generate_api.py --update   # rewrite the generated block of docs/api.md
    python tools/generate_api.py --check    # exit 1 (saying why) if docs/api.md is out of date

The public surface is `PUBLIC_MODULES`: the package itself, the `metal` namespace (its host names and
every name of the kernel API's index), `numba_metal.random` and `numba_metal.profiling`. A name is
documented by its own docstring (for a plain value, the `#:` comment above its assignment); the page
groups `metal`'s names by the module that defines them (`SECTIONS`).

A public callable's errors are owned by the `Raises:` section of its docstring, one `ErrorClass: when`
entry per class it raises (`nothing: why` for one that cannot fail); a kernel-side function (`Stub`)
has the errors every kernel-side function has, from the `Raises:` section of `Stub`'s docstring, then
its own. The page renders them as an "Errors" list, saying which built-in class each error also is.
tests/docs/test_api_reference.py fails, naming what to add, when a public name has no docstring, a
public callable no errors (or not an error class its own body raises), its module no section, or
docs/api.md was not regenerated.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import os
import re
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API_MD = os.path.join(ROOT, "docs", "api.md")
BEGIN = "<!-- BEGIN GENERATED: python tools/generate_api.py --update; do not edit by hand -->"
END = "<!-- END GENERATED -->"

#: The modules whose public names the reference documents, in page order.
PUBLIC_MODULES = ("numba_metal", "numba_metal.metal", "numba_metal.random", "numba_metal.profiling")

#: Module defining a host-side `metal` name -> the section of the page it is listed in, in page order.
#: Kernel-side names follow, one section per kernel-API family (`kernel_api.families()`), titled from
#: the family's docstring, so a new family needs no entry here.
SECTIONS = {
    "numba_metal.host.decorators": "Kernels and device functions",
    "numba_metal.host.dispatcher": "Kernels and device functions",
    "numba_metal.host.arguments": "Kernels and device functions",
    "numba_metal.metal": "Kernels and device functions",
    "numba_metal.compiler.linking": "Kernels and device functions",
    "numba_metal.host.arrays": "Device arrays and unified memory",
    "numba_metal.host.allocation": "Device arrays and unified memory",
    "numba_metal.host.mapped": "Device arrays and unified memory",
    "numba_metal.host.interop": "Device arrays and unified memory",
    "numba_metal.host.streams": "Streams, events and waits",
    "numba_metal.host.kernel_output": "Streams, events and waits",
    "numba_metal.host.batch": "Streams, events and waits",
    "numba_metal.host.device": "Devices",
    "numba_metal.libraries.reduction": "Reductions",
    "numba_metal.libraries.vectorize": "Ufuncs",
    "numba_metal.host.profiling": "Profiling",
    "numba_metal.errors": "Errors",
    "numpy": "Data types",
    "builtins": "Data types",
}


def _is_future_feature(value) -> bool:
    return type(value).__module__ == "__future__"


def _namespace_members(value) -> list[str]:
    """The public members of a kernel-API namespace (`metal.atomic`, `metal.shared`...)."""
    return sorted(n for n in vars(value) if not n.startswith("_"))


def public_names() -> dict[str, list[str]]:
    """Public module -> its public names, as `module.name` (namespace members as `module.ns.member`)."""
    import numba_metal
    found: dict[str, list[str]] = {}
    for modname in PUBLIC_MODULES:
        module = importlib.import_module(modname)
        if modname == "numba_metal":
            names = [n for n, v in vars(module).items()
                     if not n.startswith("_") and not isinstance(v, types.ModuleType)]
            names += ["metal", "__version__"]
        elif hasattr(module, "__all__"):
            names = list(module.__all__)
        else:
            names = [n for n in dir(module) if not n.startswith("_")
                     and not _is_future_feature(getattr(module, n))
                     and not (isinstance(getattr(module, n), types.ModuleType)
                              and getattr(module, n).__name__.startswith("numba_metal.")
                              and getattr(module, n).__name__ != f"{modname}.{n}")]
        out = []
        for n in sorted(set(names)):
            out.append(f"{modname}.{n}")
            value = getattr(module, n)
            if modname != "numba_metal" and isinstance(value, types.ModuleType):
                out.extend(f"{modname}.{n}.{m}" for m in _namespace_members(value))
        found[modname] = out
    assert numba_metal
    return found


def _resolve(qualified: str):
    for modname in sorted(PUBLIC_MODULES, key=len, reverse=True):
        if qualified.startswith(modname + "."):
            value = importlib.import_module(modname)
            for part in qualified[len(modname) + 1:].split("."):
                value = getattr(value, part)
            return modname, value
    raise LookupError(qualified)


def _value_comment(value_module: str, name: str) -> str | None:
    """The `#:` comment block above `name = ...` in the module's source."""
    try:
        lines = inspect.getsource(importlib.import_module(value_module)).splitlines()
    except (OSError, TypeError):
        return None
    for i, line in enumerate(lines):
        if re.match(rf"{re.escape(name)}\s*(:[^=]*)?=", line):
            comment = []
            j = i - 1
            while j >= 0 and lines[j].lstrip().startswith("#:"):
                comment.insert(0, lines[j].lstrip()[2:].strip())
                j -= 1
            return " ".join(comment) or None
    return None


def docstring(qualified: str) -> str | None:
    """What documents the name: its docstring, or for a plain value the `#:` comment above it."""
    modname, value = _resolve(qualified)
    name = qualified.rsplit(".", 1)[1]
    if qualified == "numba_metal.__version__":
        return inspect.getdoc(importlib.import_module("numba_metal._version"))
    if isinstance(value, types.ModuleType):
        return inspect.getdoc(value)
    if (type(value).__module__ == "builtins" or type(value).__module__.startswith("numpy")) and not callable(value):
        # a plain value (a number, a string, a NumPy dtype such as random.xoroshiro128p_dtype)
        return _value_comment(_defining_module(modname, name, value), name)
    if type(value).__module__.startswith("numba.core.types"):  # metal.int32...: Numba's own type objects
        return (f"Numba's type `{value}` (`numba.core.types.{name}`), as numba.cuda's `cuda.{name}`: it builds "
                f"array types and signatures (`{name}[:]`, `{name}(...)`), converts values inside kernels, and is "
                "accepted wherever a dtype is expected.")
    doc = value.__doc__ if isinstance(value, type) else inspect.getdoc(value)
    if not doc or (dataclasses.is_dataclass(value) and doc.startswith(f"{value.__name__}(")):
        return None  # a dataclass's generated docstring only repeats its signature
    doc = inspect.cleandoc(doc)
    if type(value).__name__ == "Stub":  # its first line starts with the call form, shown as the heading
        doc = re.sub(rf"^{re.escape(value.path)}(\(.*?\))?:\s*", "", doc)
    return doc


_RAISES = re.compile(r"^Raises:[ \t]*\n((?:[ \t]+\S.*\n?|[ \t]*\n(?=[ \t]+\S))+)", re.M)
_RAISES_ENTRY = re.compile(r"^ {4}(\w+(?:, \w+)*):\s+(.*)$")
# An entry "A, B: as ``name``." lists errors another public callable owns: its entries for A and B.
_SAME_AS = re.compile(r"^as `+([\w.]+)`+\.?$")


def split_raises(doc: str) -> tuple[str, list[tuple[str, str]]]:
    """(the docstring without its `Raises:` section, [(error class name or "nothing", when)])."""
    m = _RAISES.search(doc + "\n")
    if not m:
        return doc, []
    entries: list[tuple[str, str]] = []
    for line in m.group(1).rstrip().split("\n"):
        head = _RAISES_ENTRY.match(line)
        if head:
            entries.append((head.group(1), head.group(2).strip()))
        elif entries and line.startswith(" " * 8):
            entries[-1] = (entries[-1][0], f"{entries[-1][1]} {line.strip()}")
        elif line.strip():
            raise ValueError(f"a `Raises:` line is neither `ErrorClass: when` nor its continuation: {line.strip()!r}")
    rest = [part.strip() for part in (doc[:m.start()], (doc + "\n")[m.end():]) if part.strip()]
    return "\n\n".join(rest), entries


def needs_errors(qualified: str) -> bool:
    """Whether the name is a callable whose errors the reference must list: every public function,
    class and kernel-side function except the error classes themselves and the data types (NumPy's
    and Numba's own objects)."""
    _, value = _resolve(qualified)
    if not callable(value) or isinstance(value, types.ModuleType):
        return False
    if isinstance(value, type) and issubclass(value, (BaseException, __import__("numpy").generic)):
        return False
    return not type(value).__module__.startswith("numba.core.types")


def errors(qualified: str) -> list[tuple[str, str]]:
    """The name's errors: (error class name or "nothing", when), in order; entries that refer to another
    public callable's (`A, B: as ``device_array``.`) are replaced by that callable's entries for A, B."""
    _, value = _resolve(qualified)
    own = []
    for names, when in (split_raises(inspect.cleandoc(value.__doc__ or ""))[1] if needs_errors(qualified) else []):
        same = _SAME_AS.match(when)
        if same is None:
            own += [(name, when) for name in names.split(", ")]
            continue
        owner = {n: w for n, w in errors(_referenced(same.group(1), qualified))}
        for name in names.split(", "):
            if name not in owner:
                raise LookupError(f"{display(qualified)}: `{name}: as {same.group(1)}`, which lists no {name}")
            own.append((name, owner[name]))
    if type(value).__name__ == "Stub":
        return stub_errors() + own
    return own


def _referenced(name: str, where: str) -> str:
    """The qualified public name an errors entry of `where` refers to (`device_array`, `random.x`)."""
    for candidate in (f"numba_metal.metal.{name}", f"numba_metal.{name}"):
        try:
            _resolve(candidate)
            return candidate
        except (LookupError, AttributeError):
            continue
    raise LookupError(f"{display(where)}: an errors entry refers to `{name}`, which is not a public name")


def stub_errors() -> list[tuple[str, str]]:
    """The errors every kernel-side function has: the `Raises:` section of `Stub`'s docstring."""
    from numba_metal.kernel_api.stubs import Stub
    return split_raises(inspect.cleandoc(Stub.__doc__))[1]


def error_class(name: str):
    """The exception class an errors entry names (numba-metal's, Numba's `TypingError`, a built-in),
    or None."""
    from numba_metal import errors as nm_errors
    if hasattr(nm_errors, name):
        return getattr(nm_errors, name)
    if name == "TypingError":
        from numba.core.errors import TypingError
        return TypingError
    value = getattr(__import__("builtins"), name, None)
    return value if isinstance(value, type) and issubclass(value, BaseException) else None


def _errors_markdown(entries: list[tuple[str, str]]) -> list[str]:
    lines = ["", "Errors:", ""]
    for name, when in entries:
        cls = error_class(name)
        also = [b.__name__ for b in cls.__mro__[1:] if b.__module__ == "builtins"
                and b not in (Exception, BaseException, object)] if cls else []
        label = f"`{name}`" + (f" (also `{'`, `'.join(dict.fromkeys(also))}`)" if also else "")
        lines.append(f"- {label if name != 'nothing' else 'nothing'}: {_rst_to_md(when)}")
    return lines


def _defining_module(modname: str, name: str, value) -> str:
    if modname == "numba_metal.metal":
        from numba_metal import kernel_api
        if name in kernel_api.index():
            for family in kernel_api.families():
                if name in family.__all__:
                    return family.__name__
    owner = getattr(value, "__module__", None)
    if isinstance(value, types.ModuleType):
        owner = None
    if isinstance(value, type) and issubclass(value, __import__("numpy").generic):
        return "numpy"
    if isinstance(owner, str):
        return owner
    # A plain value a public module re-exports (numba_metal.profiling.listeners is numba_metal.host.profiling's):
    # the module that assigns it, where its `#:` comment is.
    for other in sorted(m for m in sys.modules if m.startswith("numba_metal.") and m != modname):
        if vars(sys.modules[other]).get(name, _ABSENT) is value and _value_comment(other, name):
            return other
    return modname


_ABSENT = object()


def _signature(qualified: str, value) -> str:
    short = qualified.removeprefix("numba_metal.")
    if isinstance(value, types.ModuleType):
        return f"{short}"
    if type(value).__name__ == "Stub":
        first = (value.__doc__ or "").splitlines()[0] if value.__doc__ else ""
        m = re.match(rf"{re.escape(value.path)}(\(.*?\))", first)
        return f"{short}{m.group(1) if m else '(...)'}"
    value = getattr(value, "py_func", value)  # a device function: its Python function's signature
    if not inspect.isclass(value) and not inspect.isfunction(value):
        return short
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):
        return short
    text = str(sig).replace("'", "")
    text = re.sub(r"<class '?([\w.]+)'?>", r"\1", text)
    text = re.sub(r"<class ([\w.]+)>", r"\1", text)
    return f"{short}{text}"


def display(qualified: str) -> str:
    """How the page names a public name: `numba_metal.X` for the package's own, else `metal.X`,
    `random.X`, `profiling.X`."""
    modname, _ = _resolve(qualified) if qualified != "numba_metal.metal" else ("numba_metal", None)
    return qualified if modname == "numba_metal" else qualified.removeprefix("numba_metal.")


def _rst_to_md(text: str) -> str:
    """Docstrings use reST literals (``x``) and roles (:func:`x`); Markdown wants `x`."""
    text = re.sub(r":(?:func|class|meth|mod|data|attr|exc):`~?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    # reST literal blocks (a paragraph ending in '::') become fenced code blocks marked not run.
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and i + 1 < len(lines):
            if line.strip() != "::":
                out.append(line.rstrip()[:-1])
            i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            while block and not block[0].strip():
                block.pop(0)
            out += ["", "<!-- not-run: an example from a docstring, which may use names it does not define -->",
                    "```python", *block, "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out).strip()


def _members(value) -> list[tuple[str, str, str]]:
    """(name, signature, first paragraph) of a class's own public methods and properties."""
    found = []
    for name, member in vars(value).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            doc, sig = inspect.getdoc(member), ""
        elif isinstance(member, (staticmethod, classmethod)):
            doc, sig = inspect.getdoc(member.__func__), str(inspect.signature(member.__func__))
        elif inspect.isfunction(member):
            doc = inspect.getdoc(member)
            sig = str(inspect.signature(member)).replace("(self, ", "(").replace("(self)", "()")
        else:
            continue
        sig = sig.replace("'", "")
        found.append((name, sig, (doc or "").split("\n\n")[0].replace("\n", " ")))
    return found


def _entry(qualified: str, seen: dict) -> str:
    modname, value = _resolve(qualified)
    short = qualified.removeprefix("numba_metal.")
    heading = _signature(qualified, value)
    first = seen.setdefault(id(value), (short, heading)) if not isinstance(value, (int, float, str)) else None
    if first and first[0] != short:
        return f"#### `{short}`\n\nThe same object as [`{first[0]}`](#{_anchor(first[1])})."
    doc = docstring(qualified)
    lines = [f"#### `{heading}`", ""]
    lines.append(_rst_to_md(split_raises(doc)[0]) if doc else "**No docstring.**")
    # A kernel-side function's shared errors are listed once, at the head of its section.
    found = errors(qualified)[len(stub_errors()):] if type(value).__name__ == "Stub" else errors(qualified)
    if found:
        lines += _errors_markdown(found)
    if inspect.isclass(value) and not issubclass(value, BaseException):
        members = [m for m in _members(value) if m[2]]
        if members:
            lines += ["", "| member | what it does |", "|---|---|"]
            for name, sig, first in members:
                lines.append(f"| `{name}{sig}` | {_rst_to_md(first).replace('|', chr(92) + '|')} |")
    return "\n".join(lines)


def _family_title(family) -> str:
    """'Kernel side: ' and the family's own title (its ``API_TITLE``)."""
    title = getattr(family, "API_TITLE", None)
    if not title:
        raise KeyError(f"{family.__name__} has no API_TITLE: give it one (its section's title in docs/api.md)")
    return "Kernel side: " + title


def _sections() -> list[str]:
    from numba_metal import kernel_api
    return list(dict.fromkeys(SECTIONS.values())) + [_family_title(f) for f in kernel_api.families()]


def _section_of(qualified: str) -> str:
    from numba_metal import kernel_api
    modname, value = _resolve(qualified)
    name = qualified[len(modname) + 1:].split(".")[0]
    top = getattr(importlib.import_module(modname), name)
    owner = _defining_module(modname, name, top)
    family = next((f for f in kernel_api.families() if f.__name__ == owner), None)
    if family is not None:
        return _family_title(family)
    if owner not in SECTIONS:
        raise KeyError(f"{qualified} is defined in {owner}, which has no section: add {owner!r} to SECTIONS "
                       f"in tools/generate_api.py")
    return SECTIONS[owner]


def generate() -> str:
    names = public_names()
    parts = [BEGIN, ""]
    seen: dict = {}
    for modname in PUBLIC_MODULES:
        parts += [f"## `{modname}`", ""]
        module = importlib.import_module(modname)
        if modname == "numba_metal":
            parts += [_rst_to_md(inspect.getdoc(module).split("\n\n")[0]), ""]
            metal = importlib.import_module("numba_metal.metal")
            for q in names[modname]:
                short = q.rsplit(".", 1)[1]
                if short not in ("metal", "__version__") and getattr(metal, short, None) is getattr(module, short):
                    heading = _signature(f"numba_metal.metal.{short}", getattr(metal, short))
                    parts += [f"#### `{q}`", "",
                              f"The same object as [`metal.{short}`](#{_anchor(heading)}).", ""]
                elif short == "metal":
                    parts += ["#### `numba_metal.metal`", "", "The namespace documented below.", ""]
                else:
                    parts += [_entry(q, seen).replace("#### `__version__`", "#### `numba_metal.__version__`"), ""]
            continue
        parts += [_rst_to_md(inspect.getdoc(module)), ""]
        if modname != "numba_metal.metal":
            for q in names[modname]:
                parts += [_entry(q, seen), ""]
            continue
        by_section: dict[str, list[str]] = {}
        for q in names[modname]:
            by_section.setdefault(_section_of(q), []).append(q)
        for section in _sections():
            entries = by_section.get(section)
            if not entries:
                continue
            parts += [f"### {section}", ""]
            if any(type(_resolve(q)[1]).__name__ == "Stub" for q in entries):
                parts += ["Every function of this section can raise these errors (the entries below list any "
                          "others):", *_errors_markdown(stub_errors())[2:], ""]
            if section == "Data types":
                parts += ["NumPy's scalar types under their usual names, for `shared.array`, `local.array`, "
                          "`device_array` and casts inside kernels:", "", "| name | is |", "|---|---|"]
                parts += [f"| `{display(q)}` | `numpy.{_resolve(q)[1].__name__}` |" for q in entries]
                parts.append("")
                continue
            for q in entries:
                parts += [_entry(q, seen), ""]
    from numba_metal.tools.cli import USAGE
    parts += ["## The `numba-metal` command", "",
              "`numba-metal` (or `python -m numba_metal`); its usage text, as `numba-metal --help` prints it. "
              "[installation.md](installation.md) explains `doctor`, [advisor.md](advisor.md) the advisor.", "",
              "<!-- not-run: the usage text, not a command -->", "", "```text", USAGE.rstrip("\n"), "```", ""]
    parts.append(END)
    return "\n".join(parts) + "\n"


def _anchor(heading_code: str) -> str:
    """GitHub's anchor for a heading made only of `code` (punctuation dropped, spaces to dashes)."""
    return re.sub(r"[^\w\- ]", "", heading_code.lower()).replace(" ", "-")


def current_block(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end] + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the generated block of docs/api.md")
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api.md is out of date")
    args = parser.parse_args(argv)
    generated = generate()
    if not (args.update or args.check):
        sys.stdout.write(generated)
        return 0
    with open(API_MD, encoding="utf-8") as f:
        text = f.read()
    if args.check:
        if current_block(text) != generated:
            print("docs/api.md is out of date: run `python tools/generate_api.py --update`", file=sys.stderr)
            return 1
        return 0
    start, end = text.index(BEGIN), text.index(END) + len(END)
    with open(API_MD, "w", encoding="utf-8") as f:
        f.write(text[:start] + generated.rstrip("\n") + text[end:])
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main())

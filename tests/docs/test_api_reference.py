"""docs/api.md names every public name of numba-metal and nothing else, each with a docstring (every
callable with its errors), and is what tools/generate_api.py generates from the code now."""

import importlib.util
import os
import re

import pytest

import doc_pages

_spec = importlib.util.spec_from_file_location("generate_api", os.path.join(doc_pages.ROOT, "tools", "generate_api.py"))
generate_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_api)

_FIX = "Then run `python tools/generate_api.py --update`."


def _public() -> set[str]:
    return {generate_api.display(q) for names in generate_api.public_names().values() for q in names}


def _documented() -> set[str]:
    """The names the page documents: its entries' headings and the rows of its table of data types."""
    text = doc_pages.read("docs/api.md")
    return ({m.group(1) for m in re.finditer(r"^#### `([\w.]+)", text, re.M)}
            | {m.group(1) for m in re.finditer(r"^\| `([\w.]+)` \| `numpy\.", text, re.M)})


def test_every_public_name_is_in_the_reference_and_the_reference_names_only_real_ones():
    public, documented = _public(), _documented()
    missing, extra = sorted(public - documented), sorted(documented - public)
    assert not missing, f"docs/api.md lacks these public names: {', '.join(missing)}. {_FIX}"
    assert not extra, f"docs/api.md names what is not public (or no longer exists): {', '.join(extra)}. {_FIX}"


def test_every_public_name_has_a_docstring():
    bare = [q for names in generate_api.public_names().values() for q in names if not generate_api.docstring(q)]
    assert not bare, ("public names without a docstring (for a plain value: a `#:` comment above its "
                      f"assignment): {', '.join(bare)}. Write one; {_FIX}")


def test_every_defining_module_has_a_section():
    names = generate_api.public_names()["numba_metal.metal"]
    for q in names:
        generate_api._section_of(q)  # raises KeyError naming the module to add to SECTIONS


def test_the_reference_is_generated_from_the_current_docstrings():
    text = doc_pages.read("docs/api.md")
    assert generate_api.current_block(text) == generate_api.generate(), (
        "docs/api.md differs from what the docstrings and signatures give now. " + _FIX)


def test_a_new_public_name_is_reported_by_name(monkeypatch):
    from numba_metal import metal

    def brand_new_function():
        """Does something new."""
    monkeypatch.setattr(metal, "brand_new_function", brand_new_function, raising=False)
    monkeypatch.setitem(generate_api.SECTIONS, __name__, "Kernels and device functions")
    assert "metal.brand_new_function" in _public() - _documented()


def _callables() -> list[str]:
    return [q for names in generate_api.public_names().values() for q in names if generate_api.needs_errors(q)]


def test_every_public_callable_lists_its_errors():
    """Each public function, class and kernel-side function says what it raises (in its docstring's
    `Raises:` section; a kernel-side function's common errors come from `Stub`'s), or says `nothing:`
    and why; an entry of "none" says nothing and fails."""
    bare = [generate_api.display(q) for q in _callables() if not generate_api.errors(q)]
    assert not bare, ("public callables whose docstring has no `Raises:` section (one `ErrorClass: when` line "
                      "per error class the code raises, or `nothing: why`): " + ", ".join(bare) + ". " + _FIX)
    vague = [generate_api.display(q) for q in _callables()
             if any(when.strip(" .").lower() in ("", "none", "nothing") for _, when in generate_api.errors(q))]
    assert not vague, f"errors entries that do not say when (or why nothing): {', '.join(vague)}"


def test_errors_entries_name_real_exception_classes():
    wrong = sorted({f"{generate_api.display(q)}: {name}" for q in _callables()
                    for name, _ in generate_api.errors(q)
                    if name != "nothing" and generate_api.error_class(name) is None})
    assert not wrong, ("errors entries naming no exception class (numba-metal's, TypingError or a built-in): "
                       + ", ".join(wrong))
    mixed = [generate_api.display(q) for q in _callables()
             if "nothing" in [n for n, _ in generate_api.errors(q)] and len(generate_api.errors(q)) > 1]
    assert not mixed, f"errors entries saying `nothing` beside error classes: {', '.join(mixed)}"


def test_a_raises_section_is_parsed_and_rendered_with_the_builtin_classes_an_error_also_is():
    doc, entries = generate_api.split_raises(
        "Does a thing.\n\nRaises:\n    MetalValueError: the shape is\n        negative.\n    "
        "UnsupportedPlatformError: no device.\n\nMore text.")
    assert entries == [("MetalValueError", "the shape is negative."), ("UnsupportedPlatformError", "no device.")]
    assert doc == "Does a thing.\n\nMore text."
    rendered = "\n".join(generate_api._errors_markdown(entries))
    assert "- `MetalValueError` (also `ValueError`): the shape is negative." in rendered
    assert "- `UnsupportedPlatformError`: no device." in rendered


def test_a_public_function_without_errors_is_reported_by_name(monkeypatch):
    from numba_metal import metal

    def brand_new_function():
        """Does something new."""
    monkeypatch.setattr(metal, "brand_new_function", brand_new_function, raising=False)
    monkeypatch.setitem(generate_api.SECTIONS, __name__, "Kernels and device functions")
    assert "numba_metal.metal.brand_new_function" in _callables()
    assert generate_api.errors("numba_metal.metal.brand_new_function") == []


def _raised_by_name(value) -> set[str]:
    """The exception classes the source of a function (or a class's methods) raises by name."""
    import ast
    import inspect
    import textwrap
    tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(value, "py_func", value))))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and generate_api.error_class(exc.id) is not None:
                found.add(exc.id)
    return found


def test_every_error_class_a_public_callable_raises_itself_is_listed():
    """What a function (or a class's methods) raises in its own body is in its errors: a new `raise` needs
    a `Raises:` line. (What it raises through the functions it calls is read by hand.)"""
    unlisted = []
    for q in _callables():
        _, value = generate_api._resolve(q)
        if type(value).__name__ == "Stub":
            continue
        missing = _raised_by_name(value) - {name for name, _ in generate_api.errors(q)}
        if missing:
            unlisted.append(f"{generate_api.display(q)}: {', '.join(sorted(missing))}")
    assert not unlisted, ("public callables raising error classes their `Raises:` section does not list: "
                          + "; ".join(unlisted) + ". " + _FIX)


def test_an_entry_may_take_another_callables_errors_and_a_malformed_line_is_refused(monkeypatch):
    from numba_metal import metal

    def borrows():
        """Borrows.

        Raises:
            UnsupportedPlatformError, MetalValueError: as ``device_array``.
            KeyError: its own.
        """

    def borrows_what_is_not_there():
        """Borrows.

        Raises:
            KeyError: as ``device_array``.
        """

    def malformed():
        """Malformed.

        Raises:
            this is not an entry
        """
    for f in (borrows, borrows_what_is_not_there, malformed):
        monkeypatch.setattr(metal, f.__name__, f, raising=False)
    owner = dict(generate_api.errors("numba_metal.metal.device_array"))
    assert generate_api.errors("numba_metal.metal.borrows") == [
        ("UnsupportedPlatformError", owner["UnsupportedPlatformError"]),
        ("MetalValueError", owner["MetalValueError"]), ("KeyError", "its own.")]
    with pytest.raises(LookupError, match="lists no KeyError"):
        generate_api.errors("numba_metal.metal.borrows_what_is_not_there")
    with pytest.raises(ValueError, match="neither"):
        generate_api.errors("numba_metal.metal.malformed")


def test_no_two_sections_share_a_title_and_no_entry_is_printed_twice():
    """Titles cut from the families' docstrings once gave three sections called "Kernel side: numba", each
    printing the same 424-line block: every family names its own title, and the page has each once."""
    from numba_metal import kernel_api
    titles = [generate_api._family_title(f) for f in kernel_api.families()]
    assert len(titles) == len(set(titles)), f"families share a title: {titles}"
    assert all(t.count("`") % 2 == 0 for t in titles), f"a title has an unbalanced backtick: {titles}"
    text = doc_pages.read("docs/api.md")
    headings = re.findall(r"^#{2,3} (.+)$", text, re.M)
    repeated = sorted({h for h in headings if headings.count(h) > 1 and h != "Errors"})
    assert not repeated, f"docs/api.md has these section titles more than once: {repeated}. {_FIX}"
    entries = re.findall(r"^#### (.+)$", text, re.M)
    twice = sorted({e for e in entries if entries.count(e) > 1})
    assert not twice, f"docs/api.md prints these entries more than once: {twice}. {_FIX}"

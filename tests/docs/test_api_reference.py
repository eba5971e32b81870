"""docs/api.md names every public name of numba-metal and nothing else, each with a docstring, and is
what docs/generate_api.py generates from the code now."""

import importlib.util
import os
import re

import doc_pages

_spec = importlib.util.spec_from_file_location("generate_api", os.path.join(doc_pages.ROOT, "docs", "generate_api.py"))
generate_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_api)

_FIX = "Then run `python docs/generate_api.py --update`."


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

"""Every figure the docs quote from a results file matches that file.

A citation is a link whose text is the figure and whose target is a JSON results file with a JSON
Pointer to the value (doc_pages.py and CONTRIBUTING.md): `[10.9 ms](../benchmarks/results/compile.json#/numba_metal_compile_ms/median)`.
The stored value's unit is the suffix of the nearest key of the pointer that names one; the figure is
converted from it and must equal it rounded to the decimals shown. The pages listed in
`CITED_PAGES` quote no measured figure (a number with a unit of time, rate or ratio) outside a citation;
a figure taken from outside the repository is a link to the page's References section, `[68 GB/s](#references)`.
"""

import importlib.util
import json
import os
import re

import pytest

import doc_pages

#: Pages whose every measured figure must be a citation (pages written to this convention).
CITED_PAGES = ("docs/research-report.md", "docs/quickstart.md", "docs/installation.md")

_TIME = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_FIGURE = re.compile(r"^(?P<num>[-−]?\d[\d,]*(?:\.\d+)?)\s*(?P<unit>.*)$")
# A number with a unit of time or rate, or a ratio ("0.41×"; "16 × 16" is a size, not a figure).
_MEASURED = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:(?:ns|µs|us|ms|s|GB/s|GFLOP/s)(?![\w/])|×(?!\s*\d))")


def _unit_of_pointer(parts: list[str]) -> str | None:
    for part in reversed(parts):
        if re.search(r"(?:_|^)(gb_s|gflop_s)$", part):
            return None  # a rate: quoted in its own unit
        m = re.search(r"_(ns|us|ms|s)$", part)
        if m:
            return m.group(1)
    return None


def resolve(path: str, pointer: str):
    with open(path, encoding="utf-8") as f:
        value = json.load(f)
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]] if pointer else []
    for part in parts:
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value, parts


def check(text: str, path: str, pointer: str) -> str | None:
    """None if the figure `text` is what `pointer` in `path` holds, else what is wrong."""
    m = _FIGURE.match(text.strip())
    if not m:
        return f"the link text {text!r} is not a figure"
    try:
        value, parts = resolve(path, pointer)
    except (KeyError, IndexError, ValueError) as e:
        return f"#{pointer} does not resolve in {os.path.relpath(path, doc_pages.ROOT)} ({e!r})"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"#{pointer} is {value!r}, not a number"
    shown, unit = m.group("num"), m.group("unit").strip()
    number = float(shown.replace(",", "").replace("−", "-"))
    stored_unit = _unit_of_pointer(parts)
    if unit in _TIME and stored_unit:
        value = value * _TIME[stored_unit] / _TIME[unit]
    elif unit == "%" and not parts[-1].endswith("_percent"):
        value = value * 100
    decimals = len(shown.partition(".")[2])
    if abs(round(value, decimals) - number) > 10 ** -decimals / 2 + 1e-12:
        return f"{text!r} but the file holds {round(value, decimals + 2)} ({unit or 'no unit'})"
    return None


def _citations():
    for page in doc_pages.pages():
        for link in doc_pages.links(page):
            path, fragment = link.split()
            if link.is_relative and path.endswith(".json") and fragment.startswith("/"):
                yield link, os.path.normpath(os.path.join(doc_pages.ROOT, os.path.dirname(page), path)), fragment


def test_every_cited_figure_matches_its_results_file():
    wrong = [f"{link.where}: [{link.text}]({link.target}): {msg}" for link, path, pointer in _citations()
             for msg in [check(link.text, path, pointer)] if msg]
    assert not wrong, "figures that do not match the file they cite:\n" + "\n".join(wrong)


@pytest.mark.parametrize("page", CITED_PAGES)
def test_the_pages_measured_figures_are_all_citations(page):
    if not os.path.exists(os.path.join(doc_pages.ROOT, page)):
        pytest.fail(f"{page} is missing")
    loose = []
    for n, line in doc_pages.prose(page):
        without = re.sub(r"\[[^\]]*\]\((?:[^)]*\.json#/[^)]*|#references)\)", "", line)
        for m in _MEASURED.finditer(without):
            loose.append(f"{page}:{n}: {m.group(0)!r}")
    assert not loose, ("measured figures quoted without a citation (write them as "
                       "[FIGURE](path/to/results.json#/json/pointer)):\n" + "\n".join(loose))


def test_the_checker_converts_units_and_rounds_as_shown(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"launch_us": {"median": 4.0637}, "cases": [{"median_ns": 5121155209}],
                             "gb_s": 17.13, "ratio": 0.2228, "count": 1250}))
    assert check("4.1 µs", str(f), "/launch_us/median") is None
    assert check("4.06 µs", str(f), "/launch_us/median") is None
    assert check("4.2 µs", str(f), "/launch_us/median") is not None
    assert check("5.12 s", str(f), "/cases/0/median_ns") is None
    assert check("5121 ms", str(f), "/cases/0/median_ns") is None
    assert check("17.1 GB/s", str(f), "/gb_s") is None
    assert check("22 %", str(f), "/ratio") is None
    assert check("1,250", str(f), "/count") is None
    assert check("1,251", str(f), "/count") is not None
    assert "does not resolve" in check("1", str(f), "/nothing")


def test_the_derived_research_figures_are_what_the_results_give():
    spec = importlib.util.spec_from_file_location("research_figures",
                                                  os.path.join(doc_pages.ROOT, "tools", "research_figures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(module.OUT, encoding="utf-8") as f:
        assert f.read() == module.render(), "run `python tools/research_figures.py` to refresh docs/data/research-figures.json"

"""Every test docs/supported-features.md names as the proof of a feature exists: its file (under tests/
unless the path starts with `tests/`), and its function in that file. The last column of each table row holds the references, `file.py`,
`file.py::test_name`, or `::test_name` for another test of the file named before it."""

import os
import re

import doc_pages

TESTS = os.path.join(doc_pages.ROOT, "tests")


def _references():
    """(line, file, test name or None) of every reference in the proof column of every table row."""
    for n, line in enumerate(doc_pages.read("docs/supported-features.md").split("\n"), 1):
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) < 2:
            continue
        current = None
        for ref in re.findall(r"`([^`]+)`", cells[-1]):
            m = re.fullmatch(r"([\w/]+\.py|[\w/]+/)?(?:::(\w+)(?:\[[^\]]*\])?)?", ref)
            if not m or not (m.group(1) or m.group(2)):
                continue
            current = m.group(1) or current
            yield n, current, m.group(2)


def test_every_named_test_file_and_function_exists():
    missing = []
    texts: dict[str, str] = {}
    for n, path, name in _references():
        where = f"docs/supported-features.md:{n}"
        if path is None:
            missing.append(f"{where}: ::{name} follows no file")
            continue
        full = os.path.join(doc_pages.ROOT, path) if path.startswith("tests/") else os.path.join(TESTS, path)
        if not os.path.exists(full):
            missing.append(f"{where}: {os.path.relpath(full, doc_pages.ROOT)} does not exist")
            continue
        if name:
            if full not in texts:
                with open(full, encoding="utf-8") as f:
                    texts[full] = f.read()
            if not re.search(rf"^\s*(?:async\s+)?def {name}\(", texts[full], re.M):
                missing.append(f"{where}: {os.path.relpath(full, doc_pages.ROOT)} has no test {name}")
    assert not missing, "supported-features.md names tests that do not exist:\n" + "\n".join(missing)


def test_references_are_read_with_their_file():
    refs = list(_references())
    assert len(refs) > 100
    assert all(path for _, path, _ in refs)

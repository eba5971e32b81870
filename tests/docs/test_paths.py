"""Every repository path the docs name in a code span (`numba_metal/compiler/msl.py`, `tests/regressions/`)
exists. Tests named in supported-features.md's proof column are checked by test_feature_tests_exist.py;
pages' References sections name other projects' files."""

import os
import re

import doc_pages

#: Paths the docs name that are deliberately not in the repository, with the reason.
ABSENT_BY_DESIGN = {
    "tests/differential/failures/": "where the differential runner writes reproducers; not committed",
}

_PATH = re.compile(r"`((?:numba_metal|tests|benchmarks|docs|Sources|shim|examples|\.ci)/[^`\s]*)`")


def test_every_named_repository_path_exists():
    missing = []
    for page in doc_pages.pages():
        in_references = False
        for n, line in enumerate(doc_pages.read(page).split("\n"), 1):
            if line.startswith("#"):
                in_references = line.lstrip("#").strip().lower() == "references"
            if in_references or (page == "docs/supported-features.md" and line.startswith("|")
                                 and "`" in line.rsplit("|", 2)[-2]):
                line = line.rsplit("|", 2)[0] if page == "docs/supported-features.md" else ""
            for m in _PATH.finditer(line):
                path = m.group(1).split("::")[0].rstrip(".,:;)")
                if re.search(r"[<>*{}$]", path) or path in ABSENT_BY_DESIGN:
                    continue
                if not os.path.exists(os.path.join(doc_pages.ROOT, path)):
                    missing.append(f"{page}:{n}: {path}")
    assert not missing, "paths the docs name that do not exist:\n" + "\n".join(missing)

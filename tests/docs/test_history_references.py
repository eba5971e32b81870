"""Every commit the docs name (`abc1234` in CHANGELOG.md, docs/research-report.md and docs/testing.md) is
in the repository's history."""

import re
import subprocess

import pytest

import doc_pages

PAGES = ("CHANGELOG.md", "docs/research-report.md", "docs/testing.md")


def _git(*args) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=doc_pages.ROOT, capture_output=True, text=True)


def test_every_named_commit_exists():
    shallow = _git("rev-parse", "--is-shallow-repository")
    if shallow.returncode != 0:
        pytest.skip("not a git checkout (an unpacked archive): there is no history to check against")
    if shallow.stdout.strip() == "true":
        pytest.skip("a shallow clone has only part of the history; run in a full clone")
    missing = []
    for page in PAGES:
        for n, line in enumerate(doc_pages.read(page).split("\n"), 1):
            for h in re.findall(r"(?<![\w/])`?([0-9a-f]{7})`?(?![\w])", line):
                if re.search(r"[a-f]", h) and re.search(r"\d", h) and _git("cat-file", "-e", f"{h}^{{commit}}").returncode:
                    missing.append(f"{page}:{n}: {h}")
    assert not missing, "commits named in the docs that are not in the history:\n" + "\n".join(missing)

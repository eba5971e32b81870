"""Every code block of README, CONTRIBUTING, CHANGELOG and docs/*.md runs, or is marked not run with a
reason (the conventions are in doc_pages.py and CONTRIBUTING.md)."""

import os
import subprocess
import sys

import pytest

import doc_pages

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_blocks.py")
RUNNABLE_PAGES = [p for p in doc_pages.pages() if any(b.kind in ("python", "sh") for b in doc_pages.blocks(p))]


def test_every_code_block_runs_or_is_marked_not_run_with_a_reason():
    unmarked = [b.where for p in doc_pages.pages() for b in doc_pages.blocks(p) if b.kind == "unmarked"]
    assert not unmarked, (
        "code blocks that neither run nor say why: " + ", ".join(unmarked) + ". Tag a runnable block "
        "```python or ```sh, or put `<!-- not-run: REASON -->` on the line above it.")
    empty_reasons = [b.where for p in doc_pages.pages() for b in doc_pages.blocks(p)
                     if b.not_run is not None and not b.not_run.strip()]
    assert not empty_reasons, f"not-run markers without a reason: {empty_reasons}"


def test_the_block_reader_finds_fenced_indented_and_marked_blocks(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nx = 1\n```\n\n<!-- not-run: shows a placeholder -->\n\n"
                    "    indented PATH\n\n- a list item\n\n  continued, not code\n\n"
                    "      list code\n\n~~~\nuntagged\n~~~\n")
    monkeypatch.setattr(doc_pages, "ROOT", str(tmp_path))
    found = [(b.line, b.kind, b.code) for b in doc_pages.blocks("page.md")]
    assert found == [(3, "python", "x = 1\n"), (9, "not-run", "indented PATH\n"), (15, "unmarked", "list code\n"),
                     (17, "unmarked", "untagged\n")]


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_the_pages_code_blocks_run(page, tmp_path):
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=doc_pages.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, RUNNER, page], cwd=doc_pages.ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"{page}: a code block failed\n{done.stdout[-4000:]}\n{done.stderr[-6000:]}"

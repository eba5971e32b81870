"""Reading the documentation pages: their code blocks, links and figure citations (CommonMark's rules, as
far as these pages use them).

Conventions the docs tests enforce (CONTRIBUTING.md states them for writers):

- A fenced block tagged `python` is run; one tagged `sh` (or `bash`, `console`, `shell`) is run with bash
  from the repository root. The blocks of one page run in order in one fresh process (Python blocks share
  their namespace), on the CPU reference device, with a private cache directory.
- Any other block (untagged, `text`, `json`, an indented block) and any block that must not run is
  marked by the line `<!-- not-run: REASON -->` directly above it (blank lines between are allowed),
  REASON saying why.
- A figure quoted from a results file is a link whose text is the figure and whose target is the file with
  a JSON Pointer (RFC 6901) to the value: `[10.9 ms](../benchmarks/results/compile.json#/numba_metal_compile_ms/median)`.
  The unit of the stored value is the suffix of the nearest key naming one (`_ns`, `_us`, `_ms`, `_s`,
  `_gb_s`, ...); the figure must equal the value rounded to the decimals shown.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PYTHON_TAGS = {"python", "py"}
SHELL_TAGS = {"sh", "bash", "console", "shell"}
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(?P<reason>.*?)\s*-->\s*$")
#: A runnable block that must run without NUMBA_METAL_SANITIZE in the sanitized suite run (docs/testing.md):
#: ``<!-- unsanitized: REASON -->`` directly above it.
UNSANITIZED = re.compile(r"^\s*<!--\s*unsanitized:\s*(?P<reason>.*?)\s*-->\s*$")


def pages() -> list[str]:
    """The pages the docs tests cover: README, CONTRIBUTING, CHANGELOG and docs/*.md (paths from ROOT)."""
    found = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
    found += sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return [p for p in found if os.path.exists(os.path.join(ROOT, p))]


def read(page: str) -> str:
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


@dataclass
class Block:
    page: str
    line: int          # 1-based line of the opening fence (or of the first indented line)
    tag: str           # the fence's first info word, lower case; "" for untagged and indented blocks
    code: str
    not_run: str | None  # the reason given by a not-run marker, or None
    unsanitized: str | None = None  # the reason given by an unsanitized marker, or None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def kind(self) -> str:
        """'python', 'sh', or 'unmarked' (neither runnable nor marked), or 'not-run'."""
        if self.not_run is not None:
            return "not-run"
        if self.tag in PYTHON_TAGS:
            return "python"
        if self.tag in SHELL_TAGS:
            return "sh"
        return "unmarked"


_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s+")


def _marker_before(lines: list[str], i: int, marker=NOT_RUN) -> str | None:
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j >= 0:
        m = marker.match(lines[j])
        if m:
            return m.group("reason")
    return None


def blocks(page: str) -> list[Block]:
    """Every code block of the page: fenced blocks, and indented blocks (4 spaces after a blank line,
    outside a list, as CommonMark reads them)."""
    lines = read(page).split("\n")
    found: list[Block] = []
    i, list_indent = 0, None  # list_indent: the content column of the open list item, if any
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if m:
            fence, indent = m.group("fence"), len(m.group("indent"))
            tag = (m.group("info").strip().split() or [""])[0].lower()
            body, j = [], i + 1
            while j < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[j]):
                body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
                j += 1
            found.append(Block(page, i + 1, tag, "\n".join(body) + "\n", _marker_before(lines, i),
                               _marker_before(lines, i, UNSANITIZED)))
            i = j + 1
            continue
        after_blank = i == 0 or not lines[i - 1].strip()
        indent = len(line) - len(line.lstrip(" "))
        need = (list_indent or 0) + 4
        if line.strip() and after_blank and indent >= need:
            start, body = i, []
            while i < len(lines) and (lines[i].startswith(" " * need) or not lines[i].strip()):
                body.append(lines[i][need:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            found.append(Block(page, start + 1, "", "\n".join(body) + "\n", _marker_before(lines, start)))
            continue
        item = _LIST_ITEM.match(line)
        if item:
            list_indent = len(item.group(0))
        elif line.strip() and indent == 0 and after_blank:
            list_indent = None
        i += 1
    return found


def prose(page: str) -> list[tuple[int, str]]:
    """(line number, text) of every line outside code blocks, with inline code spans blanked."""
    text = read(page).split("\n")
    inside = set()
    for b in blocks(page):
        n = b.code.count("\n") + (2 if b.tag or _FENCE.match(text[b.line - 1]) else 0)
        inside.update(range(b.line, b.line + n))
    out = []
    for n, line in enumerate(text, 1):
        if n not in inside:
            out.append((n, re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)))
    return out


_LINK = re.compile(r"!?\[(?P<text>(?:[^\[\]]|\[[^\]]*\])*)\]\((?P<target><[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+(?P<target>\S+)")


@dataclass
class Link:
    page: str
    line: int
    text: str
    target: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_relative(self) -> bool:
        return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", self.target) and not self.target.startswith("//")

    def split(self) -> tuple[str, str]:
        """(path, fragment) of the target."""
        path, _, fragment = self.target.strip("<>").partition("#")
        return path, fragment


def links(page: str) -> list[Link]:
    found = []
    for n, line in prose(page):
        for m in _LINK.finditer(line):
            found.append(Link(page, n, m.group("text"), m.group("target")))
        m = _REFDEF.match(line)
        if m:
            found.append(Link(page, n, "", m.group("target")))
    return found


def anchors(page: str) -> set[str]:
    """GitHub's anchors of the page's headings (lower case, punctuation dropped, spaces to dashes, a
    repeated heading gets -1, -2...)."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_with_code_spans(page):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        k = seen.get(slug, 0)
        seen[slug] = k + 1
        found.add(slug if k == 0 else f"{slug}-{k}")
    found.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', read(page)))
    return found


def prose_with_code_spans(page: str) -> list[tuple[int, str]]:
    text = read(page).split("\n")
    blanked = dict(prose(page))
    return [(n, text[n - 1]) for n in blanked]

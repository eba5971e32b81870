"""Every relative link of README, CONTRIBUTING, CHANGELOG and docs/*.md resolves: the file or directory
exists, and a `#fragment` names a heading of the Markdown page it points to (or, for a JSON file, a value:
see test_figures.py)."""

import os

import doc_pages


def _broken(link) -> str | None:
    path, fragment = link.split()
    base = os.path.dirname(os.path.join(doc_pages.ROOT, link.page))
    target = os.path.normpath(os.path.join(base, path)) if path else os.path.join(doc_pages.ROOT, link.page)
    if not os.path.exists(target):
        return f"{link.where}: [{link.text}]({link.target}): {os.path.relpath(target, doc_pages.ROOT)} does not exist"
    if fragment and target.endswith(".md"):
        page = os.path.relpath(target, doc_pages.ROOT)
        if fragment not in doc_pages.anchors(page):
            return f"{link.where}: [{link.text}]({link.target}): {page} has no heading with anchor #{fragment}"
    return None


def test_every_relative_link_resolves():
    broken = [msg for p in doc_pages.pages() for link in doc_pages.links(p) if link.is_relative
              for msg in [_broken(link)] if msg]
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_link_reader_sees_links_and_not_code(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# Title `x`\n\nSee [b](b.md#part-two), [x](https://example.com) and `[not](a link)`.\n\n"
        "```\n[nor](this)\n```\n")
    (tmp_path / "docs" / "b.md").write_text("## Part two\n")
    monkeypatch.setattr(doc_pages, "ROOT", str(tmp_path))
    found = [(link.line, link.target, link.is_relative) for link in doc_pages.links("docs/a.md")]
    assert found == [(3, "b.md#part-two", True), (3, "https://example.com", False)]
    assert _broken(doc_pages.links("docs/a.md")[0]) is None
    assert doc_pages.anchors("docs/a.md") == {"title-x"}

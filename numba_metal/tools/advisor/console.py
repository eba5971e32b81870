"""Rendering: a small view over a ``rich`` console for the three output formats.

``terminal`` draws with Unicode boxes and bars and colour (unless ``--no-color`` or ``NO_COLOR``);
``text`` is plain ASCII with no escape codes, the same on every run (what ``--output`` saves and
the golden tests compare). ``json`` never reaches this module. Colour is decoration only: every
fact is also in the words.

Text from outside the advisor (file names, compiler messages quoting source lines) can hold control
characters; :class:`View` prints every string through :func:`printable`, so that a scanned file
cannot move the cursor, clear the screen or retitle the terminal.
"""

from __future__ import annotations

import io
import os
import sys

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

DEFAULT_WIDTH = 80

_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f]}
_CONTROL.update({c: f"\\x{c:02x}" for c in range(0x80, 0xa0)})


def printable(text: str) -> str:
    """``text`` with control characters other than newline and tab written as ``\\xNN`` escapes."""
    return text.translate(_CONTROL)


def color_disabled(no_color_flag: bool) -> bool:
    """``--no-color``, or the NO_COLOR convention (any non-empty value)."""
    return bool(no_color_flag) or bool(os.environ.get("NO_COLOR"))


class View:
    """Where a command renders: headings, key/value blocks, tables, bars and plain lines."""

    def __init__(self, console: Console, ascii_only: bool):
        self.console = console
        self.ascii = ascii_only
        self.width = console.width
        self.box = box.ASCII if ascii_only else box.SIMPLE_HEAD
        self.full = "#" if ascii_only else "\u2588"
        self.empty = "." if ascii_only else "\u00b7"

    # -- building blocks ----------------------------------------------------------------

    def title(self, text: str) -> None:
        text = printable(text)
        self.console.print(Text(text, style="bold"))
        self.console.print(Text(("=" if self.ascii else "\u2550") * min(len(text), self.width)))

    def section(self, text: str) -> None:
        text = printable(text)
        self.console.print()
        self.console.print(Text(text, style="bold cyan"))
        self.console.print(Text(("-" if self.ascii else "\u2500") * min(len(text), self.width)))

    def line(self, text: str = "", style: str | None = None) -> None:
        self.console.print(Text(printable(text), style=style or ""), overflow="fold")

    def wrapped(self, text: str, indent: int = 0, style: str | None = None, hang: int = 0) -> None:
        """A paragraph wrapped at the view width, indented by ``indent`` (continuation lines by
        ``indent + hang``)."""
        t = Text(printable(text), style=style or "")
        lines = t.wrap(self.console, max(20, self.width - indent - hang))
        for i, ln in enumerate(lines):
            pad = indent if i == 0 else indent + hang
            self.console.print(Text(" " * pad) + ln, overflow="fold")

    def kv(self, rows: list[tuple[str, str]], style: str | None = None) -> None:
        """Aligned ``key: value`` lines; values wrap under themselves."""
        if not rows:
            return
        keyw = max(len(k) for k, _ in rows) + 2
        for k, v in rows:
            t = Text(printable(f"{k}:".ljust(keyw)), style="bold")
            body = Text(printable(str(v)), style=style or "")
            wrapped = body.wrap(self.console, max(20, self.width - keyw))
            for i, ln in enumerate(wrapped):
                self.console.print((t if i == 0 else Text(" " * keyw)) + ln, overflow="fold")

    def table(self, columns: list[tuple[str, str]], rows: list[list], title: str | None = None) -> None:
        """A table; ``columns`` are (header, justify) with justify 'left'/'right'."""
        t = Table(box=self.box, title=title, show_edge=self.ascii, pad_edge=False, expand=False,
                  header_style="bold", title_justify="left")
        for header, justify in columns:
            t.add_column(header, justify=justify, overflow="fold")
        for row in rows:
            t.add_row(*[c if isinstance(c, Text) else Text(printable(str(c))) for c in row])
        self.console.print(t)

    def bar(self, fraction: float, width: int, style: str = "green") -> Text:
        fraction = min(max(fraction, 0.0), 1.0)
        n = int(round(fraction * width))
        return Text(self.full * n, style=style) + Text(self.empty * (width - n), style="dim")

    def blank(self) -> None:
        self.console.print()


def make_view(fmt: str, width: int | None, no_color: bool, file=None) -> View:
    """A view writing to ``file`` (default stdout) in ``fmt`` ('terminal' or 'text')."""
    if fmt == "text":
        console = Console(file=file if file is not None else sys.stdout, width=width or DEFAULT_WIDTH,
                          color_system=None, no_color=True, force_terminal=False, highlight=False,
                          emoji=False, markup=False, soft_wrap=False, _environ={})
        return View(console, ascii_only=True)
    console = Console(file=file, width=width, no_color=color_disabled(no_color), highlight=False, emoji=False,
                      markup=False, soft_wrap=False)
    if width is None and not console.is_terminal:
        console.width = DEFAULT_WIDTH
    return View(console, ascii_only=False)


def render_to_text(render, doc, width: int | None) -> str:
    """What ``render(doc, view)`` prints in the text format, as a string."""
    buf = io.StringIO()
    view = make_view("text", width, True, file=buf)
    render(doc, view)
    # rich pads some lines to the width with spaces; trailing spaces carry nothing.
    return "\n".join(line.rstrip() for line in buf.getvalue().split("\n"))


# -- number formatting (deterministic, ASCII) ------------------------------------------------

def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "n/a"
    a = abs(s)
    if a >= 100:
        return f"{s:.0f} s"
    if a >= 1:
        return f"{s:.2f} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3g} ms" if a * 1e3 < 100 else f"{s * 1e3:.0f} ms"
    if a >= 1e-6:
        return f"{s * 1e6:.3g} us" if a * 1e6 < 100 else f"{s * 1e6:.0f} us"
    return f"{s * 1e9:.0f} ns"


def fmt_ns(ns: float | None) -> str:
    return "n/a" if ns is None else fmt_seconds(ns / 1e9)


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def fmt_ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def device_line(device: dict) -> str:
    return f"{device['name']} [{device['kind']}]"

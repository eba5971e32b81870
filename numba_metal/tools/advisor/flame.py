"""Flame graphs of sampled stacks, and the differential flame graph of two runs.

A flame graph is drawn as an indented tree (outermost frame first): each row is a frame, its bar
and share are the sampled time during which it was on the stack (each sample standing for the time
since the previous one). Children are
ordered by samples, then name. The differential graph joins two runs' trees by frame path and shows
each path's time in both with a marker: ``[-]`` less time in the numba-metal run, ``[+]`` more,
``[=]`` within one sampling interval (or 1% of the longer run), ``[new]`` only in the numba-metal
run, ``[gone]`` only in the baseline.
"""

from __future__ import annotations

from rich.text import Text

from .console import View, fmt_seconds, printable


class Node:
    """A frame path: ``count`` samples standing for ``ns`` nanoseconds."""

    __slots__ = ("name", "count", "ns", "children")

    def __init__(self, name: str):
        self.name = name
        self.count = 0
        self.ns = 0
        self.children: dict[str, Node] = {}

    def child(self, name: str) -> "Node":
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = Node(name)
        return node

    def ordered(self) -> list["Node"]:
        return sorted(self.children.values(), key=lambda n: (-n.ns, n.name))


def build(run: dict) -> Node:
    root = Node("all")
    frames = run["frames"]
    for s in run["samples"]:
        root.count += s["count"]
        root.ns += s["weight_ns"]
        node = root
        for i in s["stack"]:
            node = node.child(frames[i])
            node.count += s["count"]
            node.ns += s["weight_ns"]
    return root


def _name_cell(name: str, depth: int, width: int) -> str:
    text = "  " * depth + printable(name)
    if len(text) > width:
        text = text[: width - 3] + "..."
    return text.ljust(width)


def render(run: dict, view: View, min_percent: float, max_depth: int) -> None:
    root = build(run)
    if root.count == 0 or root.ns == 0:
        view.line("No samples (the run was shorter than the sampling interval).")
        return
    view.line(f"{root.count} samples (every {run['interval_ms']:g} ms) covering {fmt_seconds(root.ns / 1e9)} of "
              f"{run['label']}", style="dim")
    bar_w = 12
    tail_w = 18
    name_w = max(20, view.width - bar_w - tail_w - 2)
    threshold = root.ns * min_percent / 100

    def walk(node: Node, depth: int):
        for ch in node.ordered():
            if ch.ns < threshold or ch.ns == 0:
                continue
            share = ch.ns / root.ns
            row = Text(_name_cell(ch.name, depth, name_w) + " ")
            row.append_text(view.bar(share, bar_w, style="red" if "[numba-metal]" in ch.name else "green"))
            row.append(f" {100 * share:5.1f}% {fmt_seconds(ch.ns / 1e9):>9}")
            view.console.print(row, overflow="crop", no_wrap=True)
            if depth + 1 < max_depth:
                walk(ch, depth + 1)
    walk(root, 0)


def _mark(base: int, metal: int, tol: float) -> str:
    if base == 0:
        return "[new]"
    if metal == 0:
        return "[gone]"
    if abs(metal - base) <= tol:
        return "[=]"
    return "[+]" if metal > base else "[-]"


_MARK_STYLE = {"[new]": "yellow", "[gone]": "green", "[=]": "dim", "[+]": "red", "[-]": "green"}


def render_diff(baseline: dict, metal: dict, view: View, min_percent: float, max_depth: int) -> None:
    a, b = build(baseline), build(metal)
    ta, tb = a.ns / 1e9, b.ns / 1e9
    change = f"{ta / tb:.2f}x less sampled time" if tb and ta >= tb else (
        f"{tb / ta:.2f}x more sampled time" if ta else "no baseline samples")
    view.line(f"baseline {fmt_seconds(ta)} -> numba-metal {fmt_seconds(tb)} sampled: {change} in the numba-metal run",
              style="bold")
    view.line("[-] less time with numba-metal, [+] more, [=] about the same, [new] only with numba-metal, "
              "[gone] only in the baseline", style="dim")
    tol_s = max(baseline["interval_ms"] / 1e3, metal["interval_ms"] / 1e3, 0.01 * max(ta, tb))
    threshold_s = max(ta, tb) * min_percent / 100
    mark_w, tail_w = 7, 30
    name_w = max(20, view.width - mark_w - tail_w - 1)
    view.line(" " * (mark_w + name_w) + f"{'baseline':>10}{'metal':>10}{'change':>10}", style="dim")

    def walk(na: Node | None, nb: Node | None, depth: int):
        names = set(na.children if na else ()) | set(nb.children if nb else ())
        rows = []
        for name in names:
            ca = na.children.get(name) if na else None
            cb = nb.children.get(name) if nb else None
            sa = (ca.ns if ca else 0) / 1e9
            sb = (cb.ns if cb else 0) / 1e9
            rows.append((max(sa, sb), name, ca, cb, sa, sb))
        for _, name, ca, cb, sa, sb in sorted(rows, key=lambda r: (-r[0], r[1])):
            if max(sa, sb) < threshold_s or max(sa, sb) == 0:
                continue
            mark = _mark(sa, sb, tol_s) if sa and sb else ("[new]" if not sa else "[gone]")
            row = Text(mark.ljust(mark_w), style=_MARK_STYLE[mark])
            row.append(_name_cell(name, depth, name_w))
            delta = sb - sa
            sign = "+" if delta > 0 else "-" if delta < 0 else " "
            row.append(f"{fmt_seconds(sa) if sa else '-':>10}{fmt_seconds(sb) if sb else '-':>10}"
                       f"{sign + fmt_seconds(abs(delta)):>10}")
            view.console.print(row, overflow="crop", no_wrap=True)
            if depth + 1 < max_depth:
                walk(ca, cb, depth + 1)
    walk(a, b, 0)

"""The CPU/GPU timeline of a run and the device's idle gaps, drawn from a profile document.

Lanes, top to bottom: ``host code`` (samples whose innermost frame is the program's or a library's),
``host n-metal`` (samples inside numba-metal's host code or the compiler it runs), then the runtime events ``compile``, ``alloc``, ``copy``, ``launch``,
``wait`` (host-side spans), and ``device`` (each launch's device start/end). One column is one slice
of the run's wall time; a lane is marked in a column when it was busy during any part of it.
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text

from .console import View, fmt_ns

LANES = ("host code", "host n-metal", "compile", "alloc", "copy", "launch", "wait", "device")
_STYLE = {"host code": "cyan", "host n-metal": "magenta", "compile": "yellow", "alloc": "blue", "copy": "blue",
          "launch": "green", "wait": "red", "device": "bold green"}


def device_spans(events) -> list[tuple[int, int]]:
    return sorted((e["device_start_ns"], e["device_end_ns"]) for e in events
                  if e["kind"] == "launch" and e.get("device_start_ns") is not None
                  and e.get("device_end_ns") is not None)


def merge(spans) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def device_busy_ns(events) -> int:
    return sum(e - s for s, e in merge(device_spans(events)))


def idle_gaps(run: dict, gap_ns: int) -> list[dict]:
    """Device idle periods of at least gap_ns between the first and last device work, with what the
    host was doing meanwhile (the most sampled frame and the events inside the gap)."""
    busy = merge(device_spans(run["events"]))
    gaps = []
    for (_, e0), (s1, _) in zip(busy, busy[1:]):
        if s1 - e0 >= gap_ns:
            gaps.append((e0, s1))
    times, tops = run["sample_times_ns"], [run["frames"][i] for i in run["sample_top"]]
    out = []
    for s, e in gaps:
        inside = Counter(top for t, top in zip(times, tops) if s <= t < e)
        host = inside.most_common(1)[0][0] if inside else "no host sample"
        kinds = Counter(ev["kind"] for ev in run["events"] if ev["start_ns"] < e and ev["end_ns"] > s
                        and ev["kind"] != "launch")
        out.append({"start_ns": s, "length_ns": e - s, "host": host,
                    "events": ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))})
    return out


def _lane_spans(run: dict) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {lane: [] for lane in LANES}
    step = int(run["interval_ms"] * 1e6)
    for t, where in zip(run["sample_times_ns"], run["sample_where"]):
        lane = "host n-metal" if where == "numba-metal" else "host code"
        spans[lane].append((max(0, t - step), t))
    for ev in run["events"]:
        if ev["kind"] in spans:
            spans[ev["kind"]].append((ev["start_ns"], max(ev["end_ns"], ev["start_ns"] + 1)))
    spans["device"] = device_spans(run["events"])
    return spans


def render(run: dict, view: View, gap_ms: float) -> None:
    wall = max(run["wall_ns"], 1)
    label_w = max(len(lane) for lane in LANES) + 1
    cols = max(10, view.width - label_w - 1)
    spans = _lane_spans(run)
    scale = wall / cols
    view.line(f"0 .. {fmt_ns(wall)} of {run['label']}; one column = {fmt_ns(scale)}", style="dim")
    ruler = [" "] * cols
    for k in range(0, 5):
        pos = min(cols - 1, int(k * (cols - 1) / 4))
        ruler[pos] = "|"
    view.line(" " * label_w + "".join(ruler), style="dim")
    for lane in LANES:
        marks = [False] * cols
        for s, e in spans[lane]:
            a = max(0, min(cols - 1, int(s / scale)))
            b = max(a, min(cols - 1, int((e - 1) / scale)))
            for c in range(a, b + 1):
                marks[c] = True
        row = Text(lane.ljust(label_w))
        for m in marks:
            row.append(view.full if m else view.empty, style=_STYLE[lane] if m else "dim")
        view.console.print(row, overflow="crop", no_wrap=True)
    ticks = [fmt_ns(wall * k / 4) for k in range(5)]
    view.line(" " * label_w + f"{ticks[0]} / {ticks[1]} / {ticks[2]} / {ticks[3]} / {ticks[4]} at the | marks",
              style="dim")
    busy = device_busy_ns(run["events"])
    dev = device_spans(run["events"])
    if not dev:
        view.line("The device ran no kernel in this run (or gave no timestamps).")
        return
    first, last = dev[0][0], max(e for _, e in dev)
    active = max(last - first, 1)
    view.wrapped(f"device busy {fmt_ns(busy)} = {100 * busy / wall:.1f}% of the run and "
                 f"{100 * busy / active:.1f}% of the {fmt_ns(active)} from its first to its last kernel. "
                 f"Device timestamps: {run['device_timestamps']}.")
    gaps = idle_gaps(run, int(gap_ms * 1e6))
    if not gaps:
        view.line(f"No device idle gap of {gap_ms:g} ms or more between kernels.")
        return
    total = sum(g["length_ns"] for g in gaps)
    view.line(f"Device idle gaps of {gap_ms:g} ms or more between kernels: {len(gaps)}, {fmt_ns(total)} in all. "
              "Longest:")
    rows = []
    for g in sorted(gaps, key=lambda g: (-g["length_ns"], g["start_ns"]))[:8]:
        rows.append([fmt_ns(g["start_ns"]), fmt_ns(g["length_ns"]), g["host"], g["events"] or "-"])
    view.table([("at", "right"), ("idle", "right"), ("host was in (most samples)", "left"),
                ("runtime events", "left")], rows)

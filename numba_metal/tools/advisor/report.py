"""Rendering a profile document: what ``profile`` prints and what ``report`` re-renders.

Everything shown is computed from the document alone (no device, no clock, no environment), in a
fixed order with fixed number formats, so rendering one document twice gives identical bytes.
"""

from __future__ import annotations

from . import flame, timeline
from .console import View, device_line, fmt_bytes, fmt_ns
from .outcomes import UsageError
from .schema import SchemaError, validate
from .sourcefile import SourceError, read_json


def load(path: str) -> dict:
    try:
        doc = read_json(path)
    except SourceError as e:
        raise UsageError(f"{path}: {e}") from None
    except ValueError as e:
        raise UsageError(f"{path} is not JSON: {e}") from None
    try:
        validate(doc)
    except SchemaError as e:
        raise UsageError(f"{path} is not a numba-metal advisor profile: {e}") from None
    if doc["schema"] != "numba-metal-advisor/profile":
        raise UsageError(f"{path} is a {doc['schema']} document, not a profile")
    return doc


def _event_summary(run: dict) -> list[list[str]]:
    ev = run["events"]
    rows = []

    def total(kind, pred=lambda e: True):
        sel = [e for e in ev if e["kind"] == kind and pred(e)]
        return sel, sum(e["end_ns"] - e["start_ns"] for e in sel)

    for stage in ("python", "pipeline"):
        sel, t = total("compile", lambda e, s=stage: e.get("stage") == s)
        if sel:
            cached = sum(1 for e in sel if e.get("from_cache"))
            rows.append([f"compile ({stage})", str(len(sel)), fmt_ns(t),
                         f"{cached} from cache" if cached else "-"])
    sel, t = total("launch")
    if sel:
        busy = timeline.device_busy_ns(ev)
        names = sorted({e["name"] for e in sel})
        shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
        rows.append(["launch (host)", str(len(sel)), fmt_ns(t), f"device busy {fmt_ns(busy)}; {shown}"])
    for direction in ("h2d", "d2h", "d2d"):
        sel, t = total("copy", lambda e, d=direction: e.get("direction") == d)
        if sel:
            rows.append([f"copy {direction}", str(len(sel)), fmt_ns(t), fmt_bytes(sum(e["nbytes"] for e in sel))])
    sel, t = total("alloc")
    if sel:
        rows.append(["alloc", str(len(sel)), fmt_ns(t), fmt_bytes(sum(e["nbytes"] for e in sel))])
    sel, t = total("wait")
    if sel:
        whats = sorted({e["what"] for e in sel})
        rows.append(["wait", str(len(sel)), fmt_ns(t), ", ".join(whats)])
    return rows


def renderer(min_percent: float, max_depth: int, gap_ms: float):
    def render(doc: dict, view: View) -> None:
        render_profile(doc, view, min_percent, max_depth, gap_ms)
    return render


def render_profile(doc: dict, view: View, min_percent: float = 1.0, max_depth: int = 12, gap_ms: float = 1.0):
    view.title(f"numba-metal advisor profile: {doc['target']} ({doc['mode']})")
    dev = doc["device"]
    view.kv([("device", f"{device_line(dev)}: {dev['note']}")])
    runs = doc["runs"]
    baseline = next((r for r in runs if r["role"] == "baseline"), None)
    metal = next((r for r in runs if r["role"] == "metal"), None)
    view.section("Runs")
    rows = []
    for r in runs:
        launches = sum(1 for e in r["events"] if e["kind"] == "launch")
        rows.append([r["role"], r["command"], fmt_ns(r["wall_ns"]), str(sum(s["count"] for s in r["samples"])),
                     str(launches), str(r["exit_code"])])
    view.table([("run", "left"), ("command", "left"), ("wall", "right"), ("samples", "right"),
                ("launches", "right"), ("exit", "right")], rows)
    if metal is not None:
        view.section("Runtime events of the numba-metal run")
        summary = _event_summary(metal)
        if summary:
            view.table([("event", "left"), ("count", "right"), ("host time", "right"), ("detail", "left")], summary)
        else:
            view.line("No numba-metal runtime event: the program did not use numba-metal.")
    view.section("Flame graph: CPU baseline")
    if baseline is None:
        view.wrapped("No baseline run: use a script defining advisor_workload(), or a program that takes its CPU "
                     "path when NUMBA_METAL_ADVISOR_BASELINE=1 (and do not pass --no-baseline).")
    else:
        flame.render(baseline, view, min_percent, max_depth)
    view.section("Flame graph: numba-metal run")
    if metal is None:
        view.line("No numba-metal run.")
    else:
        flame.render(metal, view, min_percent, max_depth)
    view.section("Differential flame graph: numba-metal run vs CPU baseline")
    if baseline is None or metal is None:
        view.line("Needs both runs.")
    else:
        flame.render_diff(baseline, metal, view, min_percent, max_depth)
    if metal is not None:
        view.section("CPU/GPU timeline of the numba-metal run")
        timeline.render(metal, view, gap_ms)
    r = doc["roofline"]
    if r is not None:
        view.section("Roofline")
        view.wrapped(f"{r['regime']}: {r['reason']}")
    if doc["notes"]:
        view.blank()
        for n in doc["notes"]:
            view.wrapped("note: " + n, hang=6)

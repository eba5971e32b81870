"""Render a benchmark results document (from ``run_all.py --json`` or a program's ``--json``) as one
self-contained HTML page: inline SVG charts drawn here, tables, the machine and versions, and the wins
and losses in plain words. No network, no CDN; the same JSON always gives the same bytes.

    python benchmarks/report.py results.json -o report.html
    python benchmarks/report.py results.json --markdown summary.md   # the tables docs/benchmarking.md quotes

Every number on the page comes from the JSON; nothing is typed in by hand.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_common import (BASELINE_LABELS, BASELINES, SCHEMA, device_banner, fmt_ns, fmt_x,  # noqa: E402
                          validate_document)

#: Colours of series (colour-blind-safe Okabe–Ito palette).
COLORS = {"python": "#999999", "numpy": "#0072B2", "numba_1t": "#E69F00", "numba_parallel": "#D55E00",
          "metal_cold": "#CC79A7", "metal_kernel": "#009E73", "metal_e2e": "#56B4E9",
          "compile_python": "#CC79A7", "compile_pipeline": "#882255", "h2d": "#56B4E9", "kernel": "#009E73",
          "d2h": "#F0E442", "metal_shared": "#009E73", "metal_inlined": "#0072B2", "metal_disk_cache": "#56B4E9",
          "numba_njit": "#E69F00"}
WIN, LOSS = 1.1, 0.9

esc = html.escape


# --------------------------------------------------------------------------------------------------
# Small SVG plotting
# --------------------------------------------------------------------------------------------------

def _fmt_num(v: float) -> str:
    return f"{v:.6g}"


def _log_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks = [10.0 ** e for e in range(a, b + 1)]
    if len(ticks) <= 3:  # a narrow range: add 2× and 5×
        ticks = sorted({t * m for t in ticks for m in (1, 2, 5) if lo / 1.001 <= t * m <= hi * 1.001} | set(ticks))
    return ticks


def _ns_tick(ns: float) -> str:
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1, "ns")):
        if ns >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns:g} ns"


def _tick_label(v: float, unit: str = "") -> str:
    if unit == "ns":
        return _ns_tick(v)
    if unit == "x":
        return f"{v:g}×"
    if v >= 1e6 and abs(v - round(v)) < 1e-9:
        e = math.log10(v)
        if abs(e - round(e)) < 1e-9:
            return f"10^{int(round(e))}"
    return f"{v:g}"


def _legend(items, x0, x_max, y0, swatch="line"):
    """SVG of a legend of (name, colour key, dashed) items wrapped into rows; returns (svg, last row y)."""
    out, lx, ly = [], x0, y0
    for name, key, dashed in items:
        col = COLORS.get(key, "#333")
        w = 16 + 6.2 * len(name) + 14
        if lx + w > x_max and lx > x0:
            lx, ly = x0, ly + 13
        if swatch == "line":
            dash = ' stroke-dasharray="5 3"' if dashed else ""
            out.append(f'<line x1="{lx}" x2="{lx + 14}" y1="{ly - 3}" y2="{ly - 3}" stroke="{col}" '
                       f'stroke-width="2"{dash}/>')
        else:
            out.append(f'<rect x="{lx}" y="{ly - 8}" width="12" height="9" fill="{col}"/>')
        out.append(f'<text class="lg" x="{lx + 18}" y="{ly}">{esc(name)}</text>')
        lx += w
    return "".join(out), ly


def _legend_rows(items, x0, x_max) -> int:
    rows, lx = 1, x0
    for name, _k, _d in items:
        w = 16 + 6.2 * len(name) + 14
        if lx + w > x_max and lx > x0:
            rows, lx = rows + 1, x0
        lx += w
    return rows


class _Axis:
    def __init__(self, lo, hi, log, px0, px1):
        if log:
            lo, hi = math.log10(lo), math.log10(hi)
        if hi - lo < 1e-12:
            lo, hi = lo - 0.5, hi + 0.5
        self.lo, self.hi, self.log, self.px0, self.px1 = lo, hi, log, px0, px1

    def __call__(self, v):
        if self.log:
            v = math.log10(v)
        return self.px0 + (v - self.lo) / (self.hi - self.lo) * (self.px1 - self.px0)


def line_chart(title: str, series: list[dict], *, x_label: str, y_label: str, y_unit: str = "",
               x_ticks: list[tuple[float, str]] | None = None, ref_y: float | None = None, log_x: bool = True,
               width: int = 370, plot_height: int = 200, chart_id: str = "") -> str:
    """Line chart, log y (and log x unless ``log_x`` is false). ``series``: dicts with name, key
    (colour), dash, points [(x, y, label)]. Each point is a ``circle.pt`` with its data attached."""
    pts = [(x, y) for s in series for x, y, _ in s["points"] if x > 0 and y > 0]
    if not pts:
        return _empty_chart(title, "no data", width, 120)
    ml, mr, mt = 58, 12, 26
    items = [(s["name"], s["key"], s.get("dash")) for s in series]
    height = mt + plot_height + 34 + 13 * _legend_rows(items, ml - 40, width - mr) + 4
    bottom = mt + plot_height
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts] + ([ref_y] if ref_y else [])
    xlo, xhi = min(xs), max(xs)
    if log_x:
        if xlo == xhi:
            xlo, xhi = xlo / 2, xhi * 2
        else:
            pad = (xhi / xlo) ** 0.06
            xlo, xhi = xlo / pad, xhi * pad
    else:
        pad = max((xhi - xlo) * 0.05, 0.5)
        xlo, xhi = xlo - pad, xhi + pad
    ylo, yhi = min(ys) / 1.5, max(ys) * 1.5
    ax = _Axis(xlo, xhi, log_x, ml, width - mr)
    ay = _Axis(ylo, yhi, True, bottom, mt)
    out = [_svg_open(title, width, height, chart_id, "line")]
    out.append(f'<text class="ct" x="{width / 2:.1f}" y="15" text-anchor="middle">{esc(title)}</text>')
    for t in _log_ticks(ylo, yhi):
        if ylo <= t <= yhi:
            y = ay(t)
            out.append(f'<line class="grid" x1="{ml}" x2="{width - mr}" y1="{y:.1f}" y2="{y:.1f}"/>'
                       f'<text class="tick" x="{ml - 4}" y="{y + 3:.1f}" text-anchor="end">'
                       f'{esc(_tick_label(t, y_unit))}</text>')
    if x_ticks is None:
        if log_x:
            x_ticks = [(t, _tick_label(t)) for t in _log_ticks(xlo, xhi) if xlo <= t <= xhi]
        else:
            step = max(1, int(math.ceil((xhi - xlo) / 8)))
            x_ticks = [(float(t), str(t)) for t in range(int(math.ceil(xlo)), int(xhi) + 1, step)]
    for x, label in x_ticks:
        px = ax(x)
        out.append(f'<line class="grid" y1="{mt}" y2="{bottom}" x1="{px:.1f}" x2="{px:.1f}"/>'
                   f'<text class="tick" x="{px:.1f}" y="{bottom + 12}" text-anchor="middle">{esc(label)}</text>')
    if ref_y and ylo <= ref_y <= yhi:
        y = ay(ref_y)
        out.append(f'<line class="ref" x1="{ml}" x2="{width - mr}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{ml + 3}" y="{y - 3:.1f}">same speed</text>')
    out.append(f'<line class="axis" x1="{ml}" x2="{width - mr}" y1="{bottom}" y2="{bottom}"/>'
               f'<line class="axis" x1="{ml}" x2="{ml}" y1="{mt}" y2="{bottom}"/>')
    out.append(f'<text class="al" x="{(ml + width - mr) / 2:.1f}" y="{bottom + 25}" '
               f'text-anchor="middle">{esc(x_label)}</text>')
    out.append(f'<text class="al" transform="translate(11 {(mt + bottom) / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">{esc(y_label)}</text>')
    for s in series:
        col = COLORS.get(s["key"], "#333")
        dash = ' stroke-dasharray="5 3"' if s.get("dash") else ""
        p = [(ax(x), ay(y), x, y, lab) for x, y, lab in sorted(s["points"]) if x > 0 and y > 0]
        if len(p) > 1:
            d = " ".join(f"{'M' if i == 0 else 'L'}{a:.1f},{b:.1f}" for i, (a, b, *_r) in enumerate(p))
            out.append(f'<path class="series" d="{d}" stroke="{col}"{dash} fill="none"/>')
        for a, b, x, y, lab in p:
            shown = fmt_x(y) if y_unit == "x" else _tick_label(y, y_unit) if y_unit != "ns" else fmt_ns(y)
            out.append(f'<circle class="pt" cx="{a:.1f}" cy="{b:.1f}" r="3.5" fill="{col}" '
                       f'data-series="{esc(s["name"])}" data-x="{_fmt_num(x)}" data-y="{_fmt_num(y)}">'
                       f'<title>{esc(s["name"])}, {esc(lab)}: {esc(shown)}</title></circle>')
    leg, _ = _legend(items, ml - 40, width - mr, bottom + 42)
    out.append(leg + "</svg>")
    return "".join(out)


def bar_chart(title: str, groups: list[str], series: list[dict], *, y_label: str, y_unit: str = "ns",
              width: int = 370, plot_height: int = 200, chart_id: str = "") -> str:
    """Grouped bars on a log axis. ``series``: dicts with name, key, values (one per group, None = none).
    Each bar is a ``rect.bar`` with its data attached."""
    vals = [v for s in series for v in s["values"] if v]
    if not vals:
        return _empty_chart(title, "no data", width, 120)
    ml, mr, mt = 58, 12, 26
    items = [(s["name"], s["key"], False) for s in series]
    bottom = mt + plot_height
    height = bottom + 24 + 13 * _legend_rows(items, ml - 40, width - mr) + 4
    ylo, yhi = min(vals) / 2, max(vals) * 1.5
    ay = _Axis(ylo, yhi, True, bottom, mt)
    out = [_svg_open(title, width, height, chart_id, "bar")]
    out.append(f'<text class="ct" x="{width / 2:.1f}" y="15" text-anchor="middle">{esc(title)}</text>')
    for t in _log_ticks(ylo, yhi):
        if ylo <= t <= yhi:
            y = ay(t)
            out.append(f'<line class="grid" x1="{ml}" x2="{width - mr}" y1="{y:.1f}" y2="{y:.1f}"/>'
                       f'<text class="tick" x="{ml - 4}" y="{y + 3:.1f}" text-anchor="end">'
                       f'{esc(_tick_label(t, y_unit))}</text>')
    gw = (width - ml - mr) / max(len(groups), 1)
    bw = min(26.0, (gw - 8) / max(len(series), 1))
    for gi, g in enumerate(groups):
        gx = ml + gi * gw + (gw - bw * len(series)) / 2
        for si, s in enumerate(series):
            v = s["values"][gi]
            if not v:
                continue
            x = gx + si * bw
            y = ay(v)
            out.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bw - 2:.1f}" '
                       f'height="{bottom - y:.1f}" fill="{COLORS.get(s["key"], "#333")}" '
                       f'data-series="{esc(s["name"])}" data-group="{esc(g)}" data-y="{_fmt_num(v)}">'
                       f'<title>{esc(s["name"])}, {esc(g)}: {esc(fmt_ns(v) if y_unit == "ns" else _fmt_num(v))}'
                       f'</title></rect>')
        out.append(f'<text class="tick" x="{ml + gi * gw + gw / 2:.1f}" y="{bottom + 12}" '
                   f'text-anchor="middle">{esc(g)}</text>')
    out.append(f'<line class="axis" x1="{ml}" x2="{width - mr}" y1="{bottom}" y2="{bottom}"/>'
               f'<line class="axis" x1="{ml}" x2="{ml}" y1="{mt}" y2="{bottom}"/>')
    out.append(f'<text class="al" transform="translate(11 {(mt + bottom) / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">{esc(y_label)}</text>')
    leg, _ = _legend(items, ml - 40, width - mr, bottom + 30, swatch="box")
    out.append(leg + "</svg>")
    return "".join(out)


def split_chart(title: str, rows: list[tuple[str, list[tuple[str, str, float]]]], *, width: int = 370,
                chart_id: str = "") -> str:
    """Horizontal 100% stacked bars: rows of (label, [(segment name, colour key, ns)]); each segment is
    a ``rect.seg`` with its data attached, and the row's total is written at its end."""
    rows = [(lab, [s for s in segs if s[2] and s[2] > 0]) for lab, segs in rows]
    rows = [(lab, segs) for lab, segs in rows if segs]
    if not rows:
        return _empty_chart(title, "no data", width, 120)
    ml, mr, mt, rh = 74, 62, 26, 20
    items = []
    for _, segs in rows:
        for n, k, _v in segs:
            if (n, k, False) not in items:
                items.append((n, k, False))
    bottom = mt + rh * len(rows)
    height = bottom + 18 + 13 * _legend_rows(items, 10, width - 10) + 4
    out = [_svg_open(title, width, height, chart_id, "split")]
    out.append(f'<text class="ct" x="{width / 2:.1f}" y="15" text-anchor="middle">{esc(title)}</text>')
    span = width - ml - mr
    for ri, (lab, segs) in enumerate(rows):
        total = sum(v for _, _, v in segs)
        y = mt + ri * rh
        x = ml
        out.append(f'<text class="tick" x="{ml - 4}" y="{y + 13}" text-anchor="end">{esc(lab)}</text>')
        for n, k, v in segs:
            w = span * v / total
            out.append(f'<rect class="seg" x="{x:.1f}" y="{y + 3}" width="{max(w, 0.5):.1f}" height="{rh - 6}" '
                       f'fill="{COLORS.get(k, "#333")}" data-series="{esc(n)}" data-group="{esc(lab)}" '
                       f'data-y="{_fmt_num(v)}"><title>{esc(lab)}: {esc(n)} {esc(fmt_ns(v))} '
                       f'({100 * v / total:.0f}%)</title></rect>')
            x += w
        out.append(f'<text class="tick" x="{width - mr + 4}" y="{y + 13}">{esc(fmt_ns(total))}</text>')
    leg, _ = _legend(items, 10, width - 10, bottom + 16, swatch="box")
    out.append(leg + "</svg>")
    return "".join(out)


def _svg_open(title, width, height, chart_id, kind):
    cid = f' id="{esc(chart_id)}"' if chart_id else ""
    return (f'<svg class="chart" data-kind="{kind}"{cid} xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}">')


def _empty_chart(title, msg, width, height):
    return (f'<svg class="chart" data-kind="empty" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}"><text class="ct" x="{width / 2}" y="16" '
            f'text-anchor="middle">{esc(title)}</text><text class="tick" x="{width / 2}" y="{height / 2}" '
            f'text-anchor="middle">{esc(msg)}</text></svg>')


# --------------------------------------------------------------------------------------------------
# Facts from the document
# --------------------------------------------------------------------------------------------------

def med(case: dict, name: str):
    t = case.get("timings", {}).get(name)
    return t["median_ns"] if t else None


def best_baseline(case: dict):
    """(name, median) of the fastest CPU baseline measured for a case, or (None, None)."""
    meas = [(med(case, b), b) for b in BASELINES if med(case, b)]
    if not meas:
        return None, None
    t, b = min(meas)
    return b, t


def verdict(case: dict) -> tuple[str, str]:
    """A (class, words) verdict of numba-metal against the fastest CPU baseline of a case."""
    b, t = best_baseline(case)
    k, e = med(case, "metal_kernel"), med(case, "metal_e2e")
    if not case.get("correct"):
        return "fail", "not correct: no verdict"
    if b is None or not k:
        return "none", "no comparison"
    sk, se = t / k, (t / e if e else None)
    if se is not None and se >= WIN:
        return "win", "wins end to end"
    if sk >= WIN:
        return "resident", "wins only with data already on the device"
    if sk >= LOSS:
        return "even", "about even"
    return "loss", "loses"


def summary_rows(doc: dict) -> list[dict]:
    rows = []
    for p in doc["programs"]:
        if p.get("comparison") == "compile":
            continue
        for c in p["cases"]:
            b, t = best_baseline(c)
            k, e = med(c, "metal_kernel"), med(c, "metal_e2e")
            cls, words = verdict(c)
            rows.append({"program": p["name"], "title": p["title"], "variant": c["variant"], "size": c["size"],
                         "best": b, "best_ns": t, "kernel_ns": k, "e2e_ns": e,
                         "cold_ns": c.get("cold", {}).get("cold_ns"),
                         "sk": (t / k) if (t and k) else None, "se": (t / e) if (t and e) else None,
                         "cls": cls, "words": words, "correct": c.get("correct", False)})
    return rows


def _x_ticks(prog: dict, cases: list[dict]):
    per_byte = "per byte" in prog.get("x_axis", "")
    seen, ticks = set(), []
    for c in sorted(cases, key=lambda c: c["x"]):
        if c["x"] > 0 and c["x"] not in seen:
            seen.add(c["x"])
            ticks.append((c["x"], f"{c['x']:.3g}" if per_byte else c["size"]))
    return ticks


# --------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0 auto;max-width:1180px;
padding:0 18px 40px;color:#222}
h1{font-size:24px;margin:18px 0 6px}h2{font-size:20px;margin:34px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:16px;margin:20px 0 6px}
.banner{background:#fff3cd;border:2px solid #e0a800;padding:10px 14px;border-radius:6px;font-weight:600;margin:10px 0}
.banner.gpu{background:#e8f5e9;border-color:#43a047}
table{border-collapse:collapse;margin:8px 0 14px;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;vertical-align:top}
td small{white-space:nowrap;font-size:11px}table.cases td{white-space:nowrap}table.summary td:not(.l){white-space:nowrap}.scroll{overflow-x:auto}
th{background:#f4f4f4;cursor:pointer;user-select:none}th.nosort{cursor:default}
td.l,th.l{text-align:left}tr.fail td{background:#fde2e2}
.win{color:#1b7f3b;font-weight:600}.resident{color:#2f6fb0;font-weight:600}.even{color:#666}
.loss{color:#b03020;font-weight:600}.fail{color:#b00020;font-weight:700}
.charts{display:flex;flex-wrap:wrap;gap:10px}
svg.chart{background:#fff;border:1px solid #e3e3e3;border-radius:4px}
svg .ct{font-size:12.5px;font-weight:600}svg .tick{font-size:10.5px;fill:#444}svg .al{font-size:11px;fill:#333}
svg .lg{font-size:10.5px;fill:#333}svg .grid{stroke:#eee}svg .axis{stroke:#888}
svg .ref{stroke:#444;stroke-dasharray:3 3}svg .series{stroke-width:2}
small,.muted{color:#666}details{margin:4px 0 10px}code{background:#f4f4f4;padding:0 3px;border-radius:3px}
nav#toc{background:#fafafa;border:1px solid #eee;padding:6px 12px;border-radius:4px;margin:10px 0}
nav#toc a{margin-right:12px;white-space:nowrap;display:inline-block}
"""

JS = r"""
(function(){
  // Table of contents from the section headings.
  var toc = document.getElementById('toc');
  var hs = document.querySelectorAll('h2[id]');
  for (var i = 0; i < hs.length; i++) {
    var a = document.createElement('a');
    a.href = '#' + hs[i].id; a.textContent = hs[i].textContent;
    toc.appendChild(a);
  }
  // Click a column heading to sort a table by it (numbers by their data-v value).
  function key(td){ var v = td.getAttribute('data-v'); return v === null ? td.textContent : parseFloat(v); }
  var tables = document.querySelectorAll('table.sortable');
  for (var t = 0; t < tables.length; t++) (function(table){
    var hr = table.tHead.rows, ths = hr[hr.length - 1].cells;
    for (var c = 0; c < ths.length; c++) (function(th, col){
      th.addEventListener('click', function(){
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var dir = th.getAttribute('data-dir') === 'asc' ? -1 : 1;
        rows.sort(function(r1, r2){
          var a = key(r1.cells[col]), b = key(r2.cells[col]);
          if (typeof a === 'number' && typeof b === 'number') {
            if (isNaN(a)) return 1; if (isNaN(b)) return -1; return (a - b) * dir; }
          return String(a).localeCompare(String(b)) * dir;
        });
        th.setAttribute('data-dir', dir === 1 ? 'asc' : 'desc');
        rows.forEach(function(r){ body.appendChild(r); });
      });
    })(ths[c], c);
  })(tables[t]);
  var n = document.querySelectorAll('svg.chart circle.pt, svg.chart rect.bar, svg.chart rect.seg').length;
  document.body.setAttribute('data-points', String(n));
  document.body.setAttribute('data-ready', '1');
})();
"""


def _td(text, v=None, cls="") -> str:
    dv = f' data-v="{_fmt_num(v)}"' if isinstance(v, (int, float)) and v is not None else (' data-v="NaN"' if v is None and text == "–" else "")
    c = f' class="{cls}"' if cls else ""
    return f"<td{c}{dv}>{text}</td>"


def fmt_range(lo, hi) -> str:
    """'214–226 ms': both ends in the unit of the larger, three significant digits."""
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1, "ns")):
        if hi >= scale:
            return f"{lo / scale:.3g}–{hi / scale:.3g} {unit}"
    return f"{lo:.3g}–{hi:.3g} ns"


def _timing_cell(case, name):
    t = case.get("timings", {}).get(name)
    if not t:
        why = case.get("skipped", {}).get(name)
        chk = case.get("checks", {}).get(name)
        if chk and not chk.get("ok"):
            return _td('<span class="fail">failed check</span>', None)
        return _td(f'<span class="muted" title="{esc(why or "")}">–</span>', None)
    tip = f"median of {t['repeats']} (after {t.get('warmups', 0)} warm-ups); min {fmt_ns(t['min_ns'])}, max {fmt_ns(t['max_ns'])}"
    return _td(f'<span title="{esc(tip)}">{fmt_ns(t["median_ns"])}</span><br>'
               f'<small>{fmt_range(t["min_ns"], t["max_ns"])}</small>', t["median_ns"])


def _speedup_cell(x):
    if x is None:
        return _td("–", None)
    cls = "win" if x >= WIN else ("loss" if x < LOSS else "even")
    return _td(f'<span class="{cls}">{fmt_x(x)}</span>', x)


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in s.lower()).strip("-")


def render_program(p: dict) -> str:
    out = [f'<h2 id="{esc(_slug(p["name"]))}">{esc(p["title"])}</h2>',
           f'<p>{esc(p["summary"])}</p>']
    devices = sorted({c["device"] for c in p["cases"] if c.get("device")})
    if p.get("file"):
        out.append(f'<p class="muted">Program: <code>{esc(p["file"])}</code> · x axis: {esc(p["x_axis"])}'
                   + (f' · numba-metal device: {esc(", ".join(devices))}' if devices else "") + "</p>")
    out.append("<ul>" + "".join(f"<li><b>{esc(v)}</b>: {esc(d)}</li>" for v, d in p["variants"].items()) + "</ul>")
    if p.get("comparison") == "compile":
        out.append(render_compile_program(p))
        return "\n".join(out)
    variants = []
    for c in p["cases"]:
        if c["variant"] not in variants:
            variants.append(c["variant"])
    for v in variants:
        cases = [c for c in p["cases"] if c["variant"] == v]
        cid = f"{_slug(p['name'])}-{_slug(v)}"
        if len(variants) > 1 or v != "default":
            out.append(f'<h3 id="{esc(cid)}">{esc(v)}</h3>')
        out.append('<div class="charts">')
        ticks = _x_ticks(p, cases)
        for which, words in (("kernel", "kernel only (data resident)"), ("e2e", "end to end (with transfers)")):
            series = []
            for b in BASELINES:
                pts = [(c["x"], c["speedups"][which][b], c["size"]) for c in cases
                       if c.get("speedups", {}).get(which, {}).get(b)]
                if pts:
                    series.append({"name": f"vs {BASELINE_LABELS[b]}", "key": b, "points": pts})
            out.append(line_chart(f"numba-metal speedup, {words}", series, x_label=p["x_axis"],
                                  y_label="speedup (baseline / numba-metal)", y_unit="x", x_ticks=ticks,
                                  ref_y=1.0, chart_id=f"speedup-{which}-{cid}"))
        groups = [c["size"] for c in cases]
        bars = [{"name": "cold (first run, with compile)", "key": "metal_cold",
                 "values": [c.get("cold", {}).get("cold_ns") for c in cases]},
                {"name": "warm, kernel only", "key": "metal_kernel", "values": [med(c, "metal_kernel") for c in cases]},
                {"name": "warm, end to end", "key": "metal_e2e", "values": [med(c, "metal_e2e") for c in cases]}]
        out.append(bar_chart("numba-metal: cold versus warm", groups, bars, y_label="time per run",
                             chart_id=f"coldwarm-{cid}"))
        rows = []
        for c in cases:
            cold = c.get("cold", {})
            transfer_kernel = [("upload", "h2d", med(c, "metal_h2d")), ("kernel", "kernel", med(c, "metal_kernel")),
                               ("download", "d2h", med(c, "metal_d2h"))]
            if cold.get("cold_ns"):
                # The cold run's own time split: its compile, and the rest of its first run (launch +
                # kernel); its upload and download were not timed there, so the warm medians stand in.
                rows.append((f"{c['size']} first", [
                    ("compile: typing + MSL", "compile_python", cold.get("compile_python_ns")),
                    ("compile: device compiler", "compile_pipeline", cold.get("compile_pipeline_ns")),
                    ("upload", "h2d", med(c, "metal_h2d")),
                    ("kernel", "kernel", max(cold["cold_ns"] - cold.get("compile_ns", 0), 0)),
                    ("download", "d2h", med(c, "metal_d2h"))]))
            rows.append((f"{c['size']} warm", transfer_kernel))
        out.append(split_chart("numba-metal end to end: compile, transfer, kernel", rows,
                               chart_id=f"split-{cid}"))
        out.append("</div>")
        out.append(render_case_table(cases))
    return "\n".join(out)


SHORT = {"python": "Python", "numpy": "NumPy", "numba_1t": "Numba 1 thread", "numba_parallel": "Numba parallel"}


def render_case_table(cases: list[dict]) -> str:
    nb = len(BASELINES)
    group = (f'<tr><th class="nosort" colspan="2"></th><th class="nosort" colspan="{nb}">CPU baselines: median '
             f'(min–max)</th><th class="nosort" colspan="5">numba-metal: median (min–max)</th>'
             f'<th class="nosort" colspan="{nb}">numba-metal kernel speedup over</th><th class="nosort"></th></tr>')
    head = ["size", "correct"] + [SHORT[b] for b in BASELINES] + [
        "kernel", "end to end", "cold"] + [SHORT[b] for b in BASELINES] + ["verdict"]
    out = ['<div class="scroll"><table class="sortable cases"><thead>' + group + "<tr>" + "".join(
        f'<th class="{"l" if h in ("size", "verdict") else ""}">{esc(h)}</th>' for h in head) + "</tr></thead><tbody>"]
    for c in cases:
        cls, words = verdict(c)
        cold = c.get("cold", {})
        cells = [f'<td class="l" data-v="{_fmt_num(c["x"])}">{esc(c["size"])}</td>',
                 _td('yes' if c.get("correct") else '<span class="fail">NO</span>', 1 if c.get("correct") else 0)]
        cells += [_timing_cell(c, b) for b in BASELINES]
        cells += [_timing_cell(c, "metal_kernel"), _timing_cell(c, "metal_e2e"),
                  _td(fmt_ns(cold.get("cold_ns")) if cold.get("cold_ns") else "–", cold.get("cold_ns"))]
        cells += [_speedup_cell(c.get("speedups", {}).get("kernel", {}).get(b)) for b in BASELINES]
        cells.append(f'<td class="l"><span class="{cls}">{esc(words)}</span></td>')
        out.append(f'<tr class="{"" if c.get("correct") else "fail"}">' + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    out.append("<details><summary>Checks, notes and cold-run details</summary><ul>")
    for c in cases:
        items = []
        for name, words in (("metal_h2d", "upload (to_device + allocation)"), ("metal_d2h", "download (copy_to_host)")):
            t = c.get("timings", {}).get(name)
            if t:
                items.append(f"{words}: {fmt_ns(t['median_ns'])} ({fmt_ns(t['min_ns'])}–{fmt_ns(t['max_ns'])}, "
                             f"{t['repeats']} repeats)")
        for name, chk in c.get("checks", {}).items():
            items.append(f'{esc(name)}: <span class="{"win" if chk.get("ok") else "fail"}">'
                         f'{"pass" if chk.get("ok") else "FAIL"}</span> {esc(chk.get("detail", ""))}')
        for name, why in c.get("skipped", {}).items():
            items.append(f"{esc(name)} not timed: {esc(why)}")
        for n in c.get("notes", []):
            items.append(esc(n))
        cold = c.get("cold")
        if cold and "cold_ns" in cold:
            items.append(f"cold run ({esc(cold.get('method', ''))}): {fmt_ns(cold['cold_ns'])} for the first run, "
                         f"of which compile {fmt_ns(cold['compile_ns'])} (typing + MSL {fmt_ns(cold['compile_python_ns'])}, "
                         f"device compiler {fmt_ns(cold['compile_pipeline_ns'])}; {cold['compiles']} compile events, "
                         f"{'all fresh' if cold.get('compiled_fresh') else 'NOT all fresh'}); the second run in that "
                         f"process took {fmt_ns(cold['warm_after_ns'])}; one-off process set-up before it "
                         f"{fmt_ns(cold['process_init_ns'])}")
        elif cold:
            items.append(f'<span class="fail">cold run failed: {esc(cold.get("error", ""))}</span>')
        for k, v in (c.get("extra") or {}).items():
            items.append(f"{esc(k)}: {esc(json.dumps(v, sort_keys=True) if not isinstance(v, str) else v)}")
        if c.get("error"):
            items.append(f'<span class="fail">error: {esc(c["error"])}</span>')
        out.append(f"<li><b>{esc(c['size'])}</b> ({esc(c.get('work', ''))})<ul>"
                   + "".join(f"<li>{i}</li>" for i in items) + "</ul></li>")
    out.append("</ul></details>")
    return "\n".join(out)


COMPILE_LABELS = {"metal_shared": "numba-metal, shared device functions",
                  "metal_inlined": "numba-metal, device functions inlined by hand",
                  "metal_disk_cache": "numba-metal, cache=True, disk cache filled",
                  "numba_njit": "Numba @njit (CPU), shared helpers"}


def render_compile_program(p: dict) -> str:
    out = []
    for c in p["cases"]:
        t = c.get("timings", {})
        names = [n for n in COMPILE_LABELS if n in t]
        out.append('<div class="charts">')
        out.append(bar_chart(f"Until all {c['x']:g} kernels ran once", [c["size"]],
                             [{"name": COMPILE_LABELS[n], "key": n, "values": [t[n]["median_ns"]]} for n in names],
                             y_label="total time (fresh process)", width=460, chart_id=f"compile-{_slug(c['size'])}"))
        series = []
        for n in names:
            per = (c.get("extra") or {}).get(n, {}).get("per_kernel_ns") or []
            if per:
                series.append({"name": COMPILE_LABELS[n], "key": n,
                               "points": [(i + 1, v, f"kernel {i + 1}") for i, v in enumerate(per) if v > 0]})
        if series:
            out.append(line_chart("First call of each kernel, in order (median process)", series,
                                  x_label="kernel number", y_label="time", y_unit="ns", log_x=False, width=460,
                                  chart_id=f"perkernel-{_slug(c['size'])}"))
        out.append("</div>")
        out.append('<table class="sortable compile"><thead><tr><th class="l">measurement</th><th>median</th>'
                   '<th>min</th><th>max</th><th>processes</th><th>typing + MSL</th><th>device compiler</th>'
                   '<th>check</th></tr></thead><tbody>')
        for n in names:
            ex = (c.get("extra") or {}).get(n, {})
            chk = c.get("checks", {}).get(n, {})
            out.append(f'<tr><td class="l">{esc(COMPILE_LABELS[n])}</td>' + _td(fmt_ns(t[n]["median_ns"]), t[n]["median_ns"])
                       + _td(fmt_ns(t[n]["min_ns"]), t[n]["min_ns"]) + _td(fmt_ns(t[n]["max_ns"]), t[n]["max_ns"])
                       + _td(str(t[n]["repeats"]), t[n]["repeats"])
                       + _td(fmt_ns(ex.get("python_ns")) if ex.get("python_ns") else "–", ex.get("python_ns"))
                       + _td(fmt_ns(ex.get("pipeline_ns")) if ex.get("pipeline_ns") else "–", ex.get("pipeline_ns"))
                       + f'<td class="l"><span class="{"win" if chk.get("ok") else "fail"}">'
                       f'{"pass" if chk.get("ok") else "FAIL"}</span> <small>{esc(chk.get("detail", ""))}</small></td></tr>')
        out.append("</tbody></table>")
        ratios = (c.get("extra") or {}).get("ratios", {})
        if ratios:
            out.append("<p>" + esc(compile_sentence(c)) + "</p>")
        for n in c.get("notes", []):
            out.append(f'<p class="muted">{esc(n)}</p>')
    return "\n".join(out)


def compile_sentence(c: dict) -> str:
    t = c["timings"]
    r = c["extra"]["ratios"]
    n = int(c["x"])
    return (f"With shared device functions the {n} kernels took {fmt_ns(t['metal_shared']['median_ns'])} to "
            f"compile and run once; written inline, {fmt_ns(t['metal_inlined']['median_ns'])} "
            f"({r['inlined_over_shared']:.2f}× the shared time); from a filled disk cache, "
            f"{fmt_ns(t['metal_disk_cache']['median_ns'])} ({r['shared_over_disk_cache']:.0f}× faster than a cold "
            f"compile). Numba compiled the same functions for the CPU in {fmt_ns(t['numba_njit']['median_ns'])}.")


def render_summary(doc: dict) -> str:
    rows = summary_rows(doc)
    counts = {}
    for r in rows:
        counts[r["cls"]] = counts.get(r["cls"], 0) + 1
    dev = doc["device"]
    who = "the Metal GPU" if dev.get("is_gpu") else "the CPU reference device"
    out = [f'<h2 id="wins-and-losses">Wins and losses</h2>',
           f"<p>Each row compares numba-metal on {esc(who)} with the <b>fastest</b> CPU baseline measured for that "
           f"case (plain Python, NumPy, Numba single-threaded or Numba parallel). <span class=\"win\">Wins end to "
           f"end</span>: faster even counting uploads and downloads, by at least {WIN:g}×. "
           f"<span class=\"resident\">Wins only with data already on the device</span>: the kernel is faster but "
           f"transfers eat the gain. <span class=\"even\">About even</span>: within {LOSS:g}–{WIN:g}×. "
           f"<span class=\"loss\">Loses</span>: slower even with data resident.</p>",
           "<p>" + esc(", ".join(f"{counts.get(k, 0)} {w}" for k, w in (
               ("win", "win end to end"), ("resident", "win only with resident data"), ("even", "about even"),
               ("loss", "lose"), ("fail", "not correct")))) + f" (of {len(rows)} cases).</p>"]
    out.append('<table class="sortable summary"><thead><tr><th class="l">program</th><th class="l">variant</th>'
               '<th class="l">size</th><th class="l">fastest CPU baseline</th><th>its time</th><th>metal kernel</th>'
               '<th>metal end to end</th><th>metal cold</th><th>kernel ×</th><th>end to end ×</th>'
               '<th class="l">verdict</th></tr></thead><tbody>')
    for r in rows:
        out.append(f'<tr class="{"" if r["correct"] else "fail"}"><td class="l"><a href="#{esc(_slug(r["program"]))}">'
                   f'{esc(r["title"])}</a></td><td class="l">{esc(r["variant"])}</td><td class="l">{esc(r["size"])}</td>'
                   f'<td class="l">{esc(BASELINE_LABELS.get(r["best"], "–"))}</td>'
                   + _td(fmt_ns(r["best_ns"]) if r["best_ns"] else "–", r["best_ns"])
                   + _td(fmt_ns(r["kernel_ns"]) if r["kernel_ns"] else "–", r["kernel_ns"])
                   + _td(fmt_ns(r["e2e_ns"]) if r["e2e_ns"] else "–", r["e2e_ns"])
                   + _td(fmt_ns(r["cold_ns"]) if r["cold_ns"] else "–", r["cold_ns"])
                   + _speedup_cell(r["sk"]) + _speedup_cell(r["se"])
                   + f'<td class="l"><span class="{r["cls"]}">{esc(r["words"])}</span></td></tr>')
    out.append("</tbody></table>")
    out.append("<h3>In words</h3><ul>" + "".join(f"<li>{esc(s)}</li>" for s in findings(doc)) + "</ul>")
    return "\n".join(out)


def findings(doc: dict) -> list[str]:
    """Plain sentences, generated from the document, about where numba-metal wins and loses."""
    rows = [r for r in summary_rows(doc) if r["correct"] and r["sk"]]
    dev = "the GPU" if doc["device"].get("is_gpu") else "the CPU reference device"
    out = []
    if rows:
        best = max(rows, key=lambda r: r["se"] or 0)
        if (best["se"] or 0) >= 1:
            out.append(f"Largest end-to-end gain over the fastest CPU baseline: {best['title']} {best['variant']} "
                       f"{best['size']}, {fmt_x(best['se'])} against {BASELINE_LABELS[best['best']]} "
                       f"(kernel only {fmt_x(best['sk'])}).")
        else:
            out.append(f"No case is faster end to end than its fastest CPU baseline; the closest is {best['title']} "
                       f"{best['variant']} {best['size']}, at {fmt_x(best['se'])} the speed of "
                       f"{BASELINE_LABELS[best['best']]} (kernel only {fmt_x(best['sk'])}).")
        worst = min(rows, key=lambda r: r["sk"])
        out.append(f"Largest loss: {worst['title']} {worst['variant']} {worst['size']}, where numba-metal on {dev} "
                   f"takes {fmt_x(1 / worst['sk'])} the time of {BASELINE_LABELS[worst['best']]} even with data "
                   f"resident.")
        resident = [r for r in rows if r["cls"] == "resident"]
        if resident:
            out.append("Transfers turn a kernel win into an end-to-end loss or tie in " + ", ".join(
                f"{r['title']} {r['variant']} {r['size']}" for r in resident[:6])
                + (" and others" if len(resident) > 6 else "") + ".")
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["title"], r["variant"]), []).append(r)
    for (title, variant), rs in groups.items():
        if len(rs) < 2:
            continue
        a, b = rs[0], rs[-1]
        name = title if variant == "default" else f"{title}, {variant}"
        out.append(f"{name}: against the fastest CPU baseline, numba-metal goes from {fmt_x(a['sk'])} at {a['size']} "
                   f"to {fmt_x(b['sk'])} at {b['size']} with data resident, and from {fmt_x(a['se'])} to "
                   f"{fmt_x(b['se'])} end to end.")
    for p in doc["programs"]:
        for c in p["cases"]:
            if p.get("comparison") == "compile" and c.get("extra", {}).get("ratios"):
                out.append(compile_sentence(c))
    colds = [(r["cold_ns"] / r["e2e_ns"], r) for r in summary_rows(doc) if r["cold_ns"] and r["e2e_ns"]]
    if colds:
        ratio, r = max(colds, key=lambda x: x[0])
        lo = min(c["cold_ns"] for _, c in colds)
        hi = max(c["cold_ns"] for _, c in colds)
        out.append(f"A first call, compile included, took between {fmt_ns(lo)} and {fmt_ns(hi)}; the worst relative "
                   f"cost was {r['title']} {r['variant']} {r['size']}, whose first call took {ratio:.0f}× its warm "
                   f"end-to-end time.")
    if not doc["device"].get("is_gpu"):
        out.append("All numba-metal figures here are for the CPU reference device: they compare one way of using "
                   "this machine's CPU cores with others, and predict nothing about an Apple GPU.")
    return out


def render_machine(doc: dict) -> str:
    m, d = doc["machine"], doc["device"]
    rows = [("CPU", m.get("cpu")), ("cores (logical / usable)", f"{m.get('logical_cores')} / {m.get('usable_cores')}"),
            ("memory", f"{m['memory_bytes'] / 2 ** 30:.1f} GiB" if m.get("memory_bytes") else None),
            ("operating system", m.get("os")), ("Python", m.get("python")), ("NumPy", m.get("numpy")),
            ("Numba", f"{m.get('numba')} ({m.get('numba_threads')} threads, threading layer "
                      f"{m.get('numba_threading_layer')}, OMP_WAIT_POLICY={m.get('omp_wait_policy')})"),
            ("numba-metal", f"{m.get('numba_metal')} (git {m.get('numba_metal_git')})"),
            ("device", f"{d.get('name')} — kind {d.get('kind')}" + ("" if d.get("is_gpu") else ", NOT a GPU")),
            ("load average at start / end", f"{_load(m.get('load_average'))} / {_load(m.get('load_average_end'))}"),
            ("run", f"{'quick' if doc.get('quick') else 'full'}; started {doc.get('started_utc')}, finished "
                    f"{doc.get('finished_utc')}, {doc.get('wall_s')} s; command: {doc.get('command')}")]
    meth = doc.get("method", {})
    rows += [(f"method: {k}", json.dumps(v, sort_keys=True) if isinstance(v, dict) else v) for k, v in meth.items()]
    return ('<h2 id="machine">Machine, versions and method</h2><table class="machine"><tbody>'
            + "".join(f'<tr><th class="l nosort">{esc(str(k))}</th><td class="l">{esc(str(v))}</td></tr>'
                      for k, v in rows if v is not None) + "</tbody></table>")


def _load(v):
    return "–" if not v else ", ".join(f"{x:.2f}" for x in v)


def render_html(doc: dict) -> str:
    dev = doc["device"]
    banner_cls = "banner gpu" if dev.get("is_gpu") else "banner"
    problems = validate_document(doc)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>numba-metal benchmarks — {esc(dev.get('name', ''))}</title>",
             f"<style>{CSS}</style></head><body>",
             "<h1>numba-metal benchmarks</h1>",
             f'<div class="{banner_cls}" id="device-banner">{esc(device_banner(doc))}</div>',
             f'<p class="muted">{"Quick run (small sizes)" if doc.get("quick") else "Full run"} started '
             f'{esc(str(doc.get("started_utc")))} · schema {esc(str(doc.get("schema")))}. Every figure on this page '
             f'comes from the results file; times are medians of repeated runs (hover for min, max and the number '
             f'of repeats); speedup = baseline time / numba-metal time for the same unit of work. How to read it: '
             f'docs/benchmarking.md.</p>',
             '<nav id="toc"><b>Contents: </b></nav>']
    if problems:
        parts.append('<div class="banner" id="schema-problems">This results file has problems: '
                     + esc("; ".join(problems)) + "</div>")
    parts.append(render_summary(doc))
    parts.append('<h2 id="how-to-read">How to read the charts</h2><ul>'
                 "<li><b>Speedup charts</b> (log–log): numba-metal's speedup over each CPU baseline across sizes; "
                 "above the dashed 'same speed' line numba-metal is faster. First chart: kernel only (inputs "
                 "already on the device). Second: end to end (copy inputs in, run, copy the result out).</li>"
                 "<li><b>Cold versus warm</b> (log scale): the first run in a fresh process, compile included, "
                 "against warm runs.</li>"
                 "<li><b>End to end: compile, transfer, kernel</b>: for each size, the share of compile (typing + "
                 "MSL generation, then the device compiler), upload, kernel and download in a first run ('first': "
                 "the cold run's compile and the rest of its time as kernel, with the warm upload and download) "
                 "and in a warm run ('warm': the medians), with the total at the right; hover a segment for its "
                 "time.</li></ul>")
    for p in doc["programs"]:
        parts.append(render_program(p))
    parts.append(render_machine(doc))
    parts.append(f"<script>{JS}</script></body></html>")
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------------------------------
# Markdown (for docs/benchmarking.md)
# --------------------------------------------------------------------------------------------------

def render_markdown(doc: dict, source: str = "") -> str:
    m, d = doc["machine"], doc["device"]
    lines = [f"<!-- generated by: python benchmarks/report.py {source} --markdown; do not edit by hand -->",
             f"Source: `{source}` ({'quick' if doc.get('quick') else 'full'} run, {doc.get('started_utc')}). "
             f"Machine: {m.get('cpu')}, {m.get('usable_cores')} cores, {m.get('os')}; Python {m.get('python')}, "
             f"NumPy {m.get('numpy')}, Numba {m.get('numba')}, numba-metal {m.get('numba_metal')} "
             f"(git {m.get('numba_metal_git')}). Load average at start {_load(m.get('load_average'))}, at end "
             f"{_load(m.get('load_average_end'))}.", "",
             f"**{device_banner(doc)}**", "",
             "| program | variant | size | fastest CPU baseline | its time | metal kernel | metal end to end "
             "| metal cold | kernel × | end to end × | verdict |",
             "|---|---|---|---|--:|--:|--:|--:|--:|--:|---|"]
    for r in summary_rows(doc):
        lines.append(f"| {r['program']} | {r['variant']} | {r['size']} | {BASELINE_LABELS.get(r['best'], '–')} | "
                     f"{fmt_ns(r['best_ns'])} | {fmt_ns(r['kernel_ns'])} | {fmt_ns(r['e2e_ns'])} | "
                     f"{fmt_ns(r['cold_ns'])} | {fmt_x(r['sk'])} | {fmt_x(r['se'])} | {r['words']} |")
    lines += ["", "Speedup of numba-metal over each baseline at the largest size of each program and variant "
              "(kernel only / end to end; – where the baseline was not run at that size):", "",
              "| program | variant | size | " + " | ".join(BASELINE_LABELS[b] for b in BASELINES) + " |",
              "|---|---|---|" + "--:|" * len(BASELINES)]
    for p in doc["programs"]:
        if p.get("comparison") == "compile":
            continue
        last: dict = {}
        for c in p["cases"]:
            last[c["variant"]] = c  # cases are listed from small to large
        for v, c in last.items():
            sp = c.get("speedups", {})
            cells = []
            for b in BASELINES:
                k, e = sp.get("kernel", {}).get(b), sp.get("e2e", {}).get(b)
                cells.append("–" if k is None else f"{fmt_x(k)} / {fmt_x(e)}")
            lines.append(f"| {p['name']} | {v} | {c['size']} | " + " | ".join(cells) + " |")
    lines.append("")
    for s in findings(doc):
        lines.append(f"- {s}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Render benchmark results (JSON) as a self-contained HTML page.")
    ap.add_argument("results", help="a JSON document from run_all.py --json (or a program's --json)")
    ap.add_argument("-o", "--output", help="HTML file to write (default: the JSON's name with .html)")
    ap.add_argument("--markdown", metavar="MD", help="also write the summary tables as Markdown")
    ap.add_argument("--update-doc", metavar="DOC", help="replace the generated results block of DOC "
                    "(docs/benchmarking.md) with the summary of RESULTS")
    args = ap.parse_args(argv)
    with open(args.results) as f:
        doc = json.load(f)
    if doc.get("schema") != SCHEMA:
        ap.error(f"{args.results} is not a numba-metal benchmark document (schema {doc.get('schema')!r})")
    out = args.output or os.path.splitext(args.results)[0] + ".html"
    with open(out, "w", encoding="utf-8") as f:
        f.write(render_html(doc))
    print(f"wrote {out}")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(render_markdown(doc, os.path.relpath(args.results)))
        print(f"wrote {args.markdown}")
    if args.update_doc:
        update_doc(args.update_doc, doc, args.results)
        print(f"updated {args.update_doc}")
    return 0


BEGIN, END = "<!-- BEGIN GENERATED: {} -->\n", "<!-- END GENERATED -->"


def update_doc(doc_path: str, doc: dict, results_path: str) -> None:
    """Replace the block between the BEGIN/END GENERATED markers of ``doc_path`` with the Markdown
    summary of ``doc``; the marker names the results file, relative to the repository root."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rel = os.path.relpath(os.path.abspath(results_path), root)
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    start = text.find("<!-- BEGIN GENERATED: ")
    end = text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{doc_path} has no '<!-- BEGIN GENERATED: ... -->' ... '{END}' block")
    text = text[:start] + BEGIN.format(rel) + render_markdown(doc, rel) + text[end:]
    with open(doc_path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())

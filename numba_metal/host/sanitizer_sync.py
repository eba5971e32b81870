"""The kernel sanitizer's ``sync`` report: every thread of a divergent barrier's threadgroup, named.

The CPU device refuses a barrier that not every thread of the threadgroup reaches the same number of times
(naming the barrier it stopped at and a few threads). A sanitizing kernel with ``sync`` also keeps, per
thread of each running threadgroup, a barrier record (``nm_san_sync`` in compiler/mslib/sanitize.metal: the
threadgroup barriers it arrived at, the site of the last, whether it exited); from the failing
threadgroup's records this names every thread that did not arrive where the others wait: the barrier it
waits at instead (and its arrival there), or that it exited, after how many barriers.
"""

from __future__ import annotations

import re

from numba_metal.compiler import sanitize

_GROUP = re.compile(r"threadgroup \((\d+),\s*(\d+),\s*(\d+)\)")
#: Runs of threads a report spells out per group of threads (the rest are counted).
MAX_RUNS = 32


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _runs(threads, blockdim) -> str:
    """Thread positions, consecutive x positions of one row written as a range: ``(16..31, 0, 0)``."""
    runs = []
    for t in sorted(threads):
        x, y, z = t % blockdim[0], t // blockdim[0] % blockdim[1], t // (blockdim[0] * blockdim[1])
        if runs and runs[-1][2:] == (y, z) and runs[-1][1] == x - 1:
            runs[-1] = (runs[-1][0], x, y, z)
        else:
            runs.append((x, x, y, z))
    text = [f"({a}, {y}, {z})" if a == b else f"({a}..{b}, {y}, {z})" for a, b, y, z in runs[:MAX_RUNS]]
    if len(runs) > MAX_RUNS:
        text.append(f"... ({len(runs) - MAX_RUNS} more runs)")
    return ", ".join(text)


def thread_records(kernel: str, message: str, s, header: dict, griddim, blockdim, sites):
    """The sync report (a dict, with ``message``) of the threadgroup the CPU device's ``message`` names, from
    the barrier records in the sanitizer's words ``s`` (after the error record); None when they are not
    there (the threadgroup found no free slot)."""
    found = _GROUP.search(message)
    if found is None:
        return None
    gx, gy, gz = (int(v) for v in found.groups())
    g = gx + griddim[0] * (gy + griddim[1] * gz)
    slot = int(s[header["slot_of"] + g])
    if slot >= header["slots"] or int(s[header["slot_headers"] + sanitize.SLOT_WORDS * slot]) != g + 1:
        return None
    n = blockdim[0] * blockdim[1] * blockdim[2]
    at = header["sync_threads"] + slot * n * sanitize.SYNC_WORDS
    records = s[at:at + n * sanitize.SYNC_WORDS].reshape(n, sanitize.SYNC_WORDS)

    def where(site: int) -> str:
        return f"{sites[site].filename}:{sites[site].line}" if 0 <= site < len(sites) else "?"

    groups: dict = {}   # (exited, site or -1, arrivals) -> threads
    for t in range(n):
        arrivals, site, exited = (int(v) for v in records[t])
        groups.setdefault((bool(exited), site if arrivals else -1, arrivals), []).append(t)
    waiting = [k for k in groups if not k[0]]
    if not waiting:
        return None
    main = max(waiting, key=lambda k: (len(groups[k]), -k[2]))
    barrier = where(main[1])
    group = (gx, gy, gz)
    position = lambda t: (t % blockdim[0], t // blockdim[0] % blockdim[1], t // (blockdim[0] * blockdim[1]))  # noqa
    lines = [f"threadgroup {group}: {len(groups[main])} threads wait at the barrier at {barrier} (their "
             f"{_ordinal(main[2])} barrier): threads {_runs(groups[main], blockdim)}; the others did not arrive "
             "there:"]
    strays, named = [], {barrier}
    for key in sorted((k for k in groups if k != main), key=lambda k: (k[0], k[2], k[1])):
        exited, site, arrivals = key
        if exited:
            last = f", the last at {where(site)}" if arrivals else ""
            state = (f"exited after {arrivals} barrier{'s' if arrivals != 1 else ''}{last}" if arrivals else
                     "exited without reaching any barrier")
        else:
            state = f"wait at the barrier at {where(site)} (their {_ordinal(arrivals)} barrier)"
        if arrivals:
            named.add(where(site))
        lines.append(f"  threads {_runs(groups[key], blockdim)} {state}")
        strays += [{"thread": position(t), "exited": exited, "site": where(site) if arrivals else None,
                    "arrivals": arrivals} for t in groups[key]]
    lines.append("(every thread of a threadgroup must reach the same barriers the same number of times: a "
                 "barrier some threads skip is undefined behaviour on a GPU, which may hang or give wrong "
                 "results)")
    return {"check": "sync", "kernel": kernel, "threadgroup": group, "barrier": barrier, "arrivals": main[2],
            "waiting": tuple(position(t) for t in groups[main]), "strays": tuple(strays),
            "sites": tuple(sorted(named)), "message": "\n".join(lines)}


__all__ = ["thread_records"]

"""The kernel sanitizer's instrumentation: the checks, the site table and the MSL hooks (CPU reference
device only; the host's half is ``numba_metal/host/sanitizer.py``, the user's guide docs/sanitizer.md).

A sanitizing specialisation (``@metal.jit(sanitize=...)``, ``NUMBA_METAL_SANITIZE``) is compiled with:

- ``bounds``: the bounds checks of ``debug=True`` (arrays.py), reported through the debug error record;
- ``race``/``init``: every access of a threadgroup (shared) array calls :data:`HOOKS`' ``nm_san_tg`` with
  the element's address, its index and a *site* (an index into the kernel ABI's ``sanitizer_sites``:
  the kind of access, the array's Python name, its file and line); every threadgroup barrier calls
  ``nm_san_barrier`` first, and the kernel's first statement ``nm_san_begin``;
- ``sync``: nothing compiled in: the CPU device's fiber engine already refuses a barrier that not every
  thread reaches, naming its Python site; the host reports it as the sanitizer's.

The hooks keep shadow memory in the buffer bound at the error record's slot, after its
``kernel_io.ERROR_RECORD_WORDS`` words (:data:`HEADER` below, laid out by the host per launch): per
threadgroup *slot* (claimed by thread 0 of a threadgroup, which the CPU device runs first), a barrier epoch
and an open-addressing table keyed by element address, each entry holding the last writer (thread,
epoch, site, atomic or not) and up to two readers of the current epoch. The fiber engine runs the threads of
a threadgroup one at a time, switching only at barriers and SIMD-group functions, so the table needs no
atomics and the order of accesses (hence the reports) is the same on every run.

An access by thread ``t`` in epoch ``e`` (the number of threadgroup barriers its threadgroup has completed)
races with the element's previous access by thread ``u != t`` in the same epoch when either is a write
(an atomic does not race with an atomic); a read (or atomic) of an element no thread of the threadgroup
wrote in this launch is an ``init`` report.
"""

from __future__ import annotations

from typing import NamedTuple

#: The checks, in the order reports name them.
CHECKS = ("race", "sync", "init", "bounds")

#: Access kinds of a site.
READ, WRITE, ATOMIC = 0, 1, 2
ACCESS_NAMES = ("read", "write", "atomic")

#: Words of the sanitizer's header (after the error record), by name: what the host fills in and the
#: hooks read (or count).
HEADER = {
    "claims": 0,       # atomic: threadgroups started (slot = claim % slots)
    "slots": 1,        # threadgroup slots of shadow memory
    "capacity": 2,     # entries per slot (a power of two)
    "reports": 3,      # atomic: reports made (those past max_reports are counted, not kept)
    "max_reports": 4,
    "lost": 5,         # atomic: accesses not checked (a slot reused by a running threadgroup, a full table)
    "slot_of": 6,      # word offset (from the header) of the slot of each threadgroup
    "slot_headers": 7,  # word offset of the slots' headers (SLOT_WORDS each: owner + 1, epoch, arrivals)
    "tables": 8,       # word offset of the tables (ENTRY_WORDS per entry)
    "report_base": 9,  # word offset of the reports (REPORT_WORDS each)
    "checks": 10,      # bit 0: race, bit 1: init
    "shift": 11,       # 32 - log2(capacity): the hash's shift
}
HEADER_WORDS = 16
SLOT_WORDS = 4
ENTRY_WORDS = 12
REPORT_WORDS = 12
#: Report kinds (word 0 of a report).
REPORT_RACE, REPORT_INIT = 1, 2
#: A report's words: kind, site, previous site, threadgroup (linear), thread (linear), previous thread,
#: the element's index (three components, -1 where the array has fewer axes).
REPORT = {"kind": 0, "site": 1, "prev_site": 2, "group": 3, "thread": 4, "prev_thread": 5, "index": 6}
NO_SITE = 0xFFFFFFFF
CHECK_BITS = {"race": 1, "init": 2}


class Site(NamedTuple):
    """One instrumented access (or barrier) of a kernel: its kind, the array's Python name, where it is."""

    kind: int
    array: str
    filename: str
    line: int


def parse(value, what: str) -> frozenset:
    """The checks ``value`` asks for: None/False/"" none, True/"all" all, or names from :data:`CHECKS`
    (a comma-separated string or an iterable). Raises ValueError naming ``what`` for anything else."""
    if value is None or value is False or value == "" or value == "0":
        return frozenset()
    if value is True or value == "1":
        return frozenset(CHECKS)
    names = value.split(",") if isinstance(value, str) else list(value)
    out = set()
    for name in names:
        name = str(name).strip().lower()
        if name == "all":
            out.update(CHECKS)
        elif name in CHECKS:
            out.add(name)
        elif name:
            raise ValueError(f"{what}: {name!r} is not a sanitizer check; the checks are "
                             f"{', '.join(CHECKS)} (or 'all')")
    return frozenset(out)


def spelling(checks) -> str:
    """The canonical text of a set of checks (cache keys, messages)."""
    return ",".join(c for c in CHECKS if c in checks)


def tracks_threadgroup(module) -> bool:
    return bool(module.sanitize & {"race", "init"})


def site(lc, kind: int, array: str) -> int:
    """The site id of an access being lowered by ``lc`` (a FunctionLowering)."""
    loc = lc.loc
    entry = Site(kind, array, loc.filename if loc is not None else "?", loc.line if loc is not None else 0)
    sites = lc.module.sanitizer_sites
    sites.append(entry)
    return len(sites) - 1


def access(lc, space: str | None, pointer: str, comps, kind: int, array: str, cond=None) -> None:
    """Instrument an access of the element at ``pointer`` (an MSL element lvalue's address) of an array in
    address space ``space`` (index components ``comps``; ``cond``: the in-bounds condition, if any)."""
    if space != "threadgroup" or not tracks_threadgroup(lc.module):
        return
    lc.module.need_sanitizer_hooks()
    index = [f"(long)({c})" for c in list(comps)[:3]] + ["-1L"] * (3 - min(3, len(comps)))
    call = (f"nm_san_tg({ENV}, (ulong)({pointer}), {site(lc, kind, array)}u, {kind}u, "
            f"{index[0]}, {index[1]}, {index[2]});")
    lc.emit(f"if ({cond}) {{ {call} }}" if cond else call)


def called_array(lc) -> str:
    """The Python name of the array argument of the call being lowered (an atomic's)."""
    call = lc.call
    args = getattr(call, "args", None)
    if not args:
        return "?"
    name = getattr(args[0], "name", "?")
    return name.lstrip("$").split(".")[0] if name.startswith("$") or "." in name else name


def barrier(lc) -> None:
    """Instrument a threadgroup barrier (called before it)."""
    if not tracks_threadgroup(lc.module):
        return
    lc.module.need_sanitizer_hooks()
    lc.emit(f"nm_san_barrier({ENV});")


def prologue(module) -> list[str]:
    """The kernel's statements after its environment (thread 0 claims its threadgroup's slot)."""
    if not tracks_threadgroup(module) or not module.sanitizer_sites:
        return []
    module.need_sanitizer_hooks()
    return [f"nm_san_begin({ENV});"]


ENV = "nm_e"   # msl.ENV_PARAM (checked by the tests: the hooks take the environment by that name)

_H = HEADER
#: The hooks (MSL for the CPU reference device: addresses are compared as integers).
HOOKS = f"""// numba-metal kernel sanitizer hooks (compiler/sanitize.py): CPU reference device only
struct nm_san_entry {{
    uint tag, addr_lo, addr_hi, w_thread, w_epoch, w_site, r1_thread, r_epoch, r1_site, r2_thread, r2_site, pad;
}};
static inline device uint* nm_san_header(thread const nm_env& c) {{ return c.err + 16u; }}
static inline uint nm_san_thread(thread const nm_env& c) {{
    return c.tid.x + c.tsize.x * (c.tid.y + c.tsize.y * c.tid.z);
}}
static inline uint nm_san_group(thread const nm_env& c) {{
    return c.tgid.x + c.ngroups.x * (c.tgid.y + c.ngroups.y * c.tgid.z);
}}
static inline void nm_san_begin(thread const nm_env& c) {{
    device uint* s = nm_san_header(c);
    if (nm_san_thread(c) != 0u) {{
        return;
    }}
    uint claim = atomic_fetch_add_explicit((device atomic_uint*)(s + {_H["claims"]}), 1u, memory_order_relaxed);
    uint slot = claim % s[{_H["slots"]}];
    device uint* h = s + s[{_H["slot_headers"]}] + {SLOT_WORDS}u * slot;
    h[1] = 0u;
    h[2] = 0u;
    atomic_store_explicit((device atomic_uint*)h, nm_san_group(c) + 1u, memory_order_relaxed);
    s[s[{_H["slot_of"]}] + nm_san_group(c)] = slot;
}}
static inline device uint* nm_san_slot(thread const nm_env& c, thread uint& slot) {{
    device uint* s = nm_san_header(c);
    uint g = nm_san_group(c);
    slot = s[s[{_H["slot_of"]}] + g];
    device uint* h = s + s[{_H["slot_headers"]}] + {SLOT_WORDS}u * slot;
    if (atomic_load_explicit((device atomic_uint*)h, memory_order_relaxed) != g + 1u) {{
        atomic_fetch_add_explicit((device atomic_uint*)(s + {_H["lost"]}), 1u, memory_order_relaxed);
        return nullptr;
    }}
    return h;
}}
static inline void nm_san_barrier(thread const nm_env& c) {{
    uint slot;
    device uint* h = nm_san_slot(c, slot);
    if (h == nullptr) {{
        return;
    }}
    h[2] += 1u;
    if (h[2] == c.tsize.x * c.tsize.y * c.tsize.z) {{
        h[2] = 0u;
        h[1] += 1u;
    }}
}}
static inline void nm_san_report(device uint* s, uint kind, uint site, uint prev_site, uint g, uint t, uint prev_t,
                                 long i0, long i1, long i2) {{
    uint n = atomic_fetch_add_explicit((device atomic_uint*)(s + {_H["reports"]}), 1u, memory_order_relaxed);
    if (n >= s[{_H["max_reports"]}]) {{
        return;
    }}
    device uint* r = s + s[{_H["report_base"]}] + {REPORT_WORDS}u * n;
    r[0] = kind; r[1] = site; r[2] = prev_site; r[3] = g; r[4] = t; r[5] = prev_t;
    r[6] = (uint)i0; r[7] = (uint)i1; r[8] = (uint)i2;
}}
static inline void nm_san_tg(thread const nm_env& c, ulong addr, uint site, uint kind, long i0, long i1, long i2) {{
    uint slot;
    device uint* h = nm_san_slot(c, slot);
    if (h == nullptr) {{
        return;
    }}
    device uint* s = nm_san_header(c);
    uint g = nm_san_group(c) + 1u;
    uint t = nm_san_thread(c) + 1u;
    uint epoch = h[1];
    uint cap = s[{_H["capacity"]}];
    uint checks = s[{_H["checks"]}];
    device nm_san_entry* table = (device nm_san_entry*)(s + s[{_H["tables"]}]) + (ulong)slot * cap;
    uint lo = (uint)addr, hi = (uint)(addr >> 32);
    uint k = cap > 1u ? ((lo ^ (hi * 0x9E3779B9u)) * 2654435761u) >> s[{_H["shift"]}] : 0u;
    device nm_san_entry* e = nullptr;
    for (uint probe = 0u; probe < cap; probe++) {{
        device nm_san_entry* x = table + ((k + probe) & (cap - 1u));
        if (x->tag != g) {{
            x->tag = g; x->addr_lo = lo; x->addr_hi = hi;
            x->w_thread = 0u; x->r1_thread = 0u; x->r2_thread = 0u;
            e = x;
            break;
        }}
        if (x->addr_lo == lo && x->addr_hi == hi) {{
            e = x;
            break;
        }}
    }}
    if (e == nullptr) {{
        atomic_fetch_add_explicit((device atomic_uint*)(s + {_H["lost"]}), 1u, memory_order_relaxed);
        return;
    }}
    bool race = (checks & 1u) != 0u;
    uint w_site = e->w_site & 0x7FFFFFFFu;
    bool w_atomic = (e->w_site >> 31) != 0u;
    bool same_epoch_write = e->w_thread != 0u && e->w_epoch == epoch && e->w_thread != t;
    if (e->w_thread == 0u && kind != {WRITE}u) {{
        if ((checks & 2u) != 0u) {{
            nm_san_report(s, {REPORT_INIT}u, site, {NO_SITE}u, g - 1u, t - 1u, {NO_SITE}u, i0, i1, i2);
        }}
    }} else if (race && same_epoch_write && !(kind == {ATOMIC}u && w_atomic)) {{
        nm_san_report(s, {REPORT_RACE}u, site, w_site, g - 1u, t - 1u, e->w_thread - 1u, i0, i1, i2);
    }} else if (race && kind != {READ}u && e->r1_thread != 0u && e->r_epoch == epoch) {{
        if (e->r1_thread != t) {{
            nm_san_report(s, {REPORT_RACE}u, site, e->r1_site, g - 1u, t - 1u, e->r1_thread - 1u, i0, i1, i2);
        }} else if (e->r2_thread != 0u && e->r2_thread != t) {{
            nm_san_report(s, {REPORT_RACE}u, site, e->r2_site, g - 1u, t - 1u, e->r2_thread - 1u, i0, i1, i2);
        }}
    }}
    if (kind == {READ}u) {{
        if (e->r1_thread == 0u || e->r_epoch != epoch) {{
            e->r1_thread = t; e->r1_site = site; e->r2_thread = 0u; e->r_epoch = epoch;
        }} else if (e->r1_thread != t && e->r2_thread == 0u) {{
            e->r2_thread = t; e->r2_site = site;
        }}
    }} else {{
        e->w_thread = t; e->w_epoch = epoch; e->w_site = site | (kind == {ATOMIC}u ? 0x80000000u : 0u);
        e->r1_thread = 0u; e->r2_thread = 0u;
    }}
}}
"""

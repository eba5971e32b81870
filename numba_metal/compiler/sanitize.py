"""The kernel sanitizer's instrumentation: the checks, the site table and the MSL hooks (CPU reference
device only; the host's half is ``numba_metal/host/sanitizer.py``, the user's guide docs/sanitizer.md).

A sanitizing specialisation (``@metal.jit(sanitize=...)``, ``NUMBA_METAL_SANITIZE``) is compiled with:

- ``bounds``: the bounds checks of ``debug=True`` (arrays.py), reported through the debug error record;
- ``race``/``init``: every access of a threadgroup (shared) array calls ``nm_san_tg`` (mslib/sanitize.metal) with
  the element's address, its index and a *site* (an index into the kernel ABI's ``sanitizer_sites``:
  the kind of access, the array's Python name, its file and line); every threadgroup barrier calls
  ``nm_san_barrier`` first, and the kernel's first statement ``nm_san_begin``;
- ``sync``: nothing compiled in: the CPU device's fiber engine already refuses a barrier that not every
  thread reaches, naming its Python site; the host reports it as the sanitizer's.

The hooks keep shadow memory in the buffer bound at the error record's slot, after its
``kernel_io.ERROR_RECORD_WORDS`` words (:data:`HEADER` below, laid out by the host per launch): per
threadgroup *slot* (a free one, claimed by thread 0 of a threadgroup, which the CPU device runs first, and
freed by its last thread to exit: the kernel's ``nm_san_exit`` guard), barrier epochs and an
open-addressing table keyed by element address, each entry holding the last writer (thread,
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

from . import msl, mslib
from .kernel_io import ERROR_RECORD_WORDS

#: The checks, in the order reports name them.
CHECKS = ("race", "sync", "init", "bounds")

#: Access kinds of a site.
READ, WRITE, ATOMIC = 0, 1, 2
ACCESS_NAMES = ("read", "write", "atomic")
#: The kind of a threadgroup barrier's site (sync: each thread's last barrier and its arrivals).
BARRIER = 3
#: A thread's barrier record (sync): threadgroup barriers it arrived at, the site of the last, exited (1).
SYNC_WORDS = 3

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
    "device_table": 12,     # word offset of the device-memory write table (DEVICE_WORDS per entry)
    "device_capacity": 13,  # its entries (a power of two; 0: device writes are not tracked)
    "device_shift": 14,     # 32 - log2(device_capacity)
    "generation": 15,   # the launch's number on this buffer (from 1): table entries of other launches are free
    "device_lost": 16,  # atomic: device-memory writes not checked (the write table was full)
    "init_table": 17,   # word offset of the device arrays' initialised-shadow ranges (INIT_WORDS each)
    "init_count": 18,   # those ranges (0: no device memory is checked for initialisation)
    "sync_threads": 19,  # word offset of the slots' per-thread barrier records (SYNC_WORDS each; 0: none)
}
HEADER_WORDS = 20
#: A slot's header: owner + 1 (0: free), barrier epoch, barrier arrivals, threads exited, then per SIMD
#: group (32 at most) its SIMD-barrier arrivals and its SIMD-barrier epoch.
SIMD_ARRIVALS = 4
SIMD_EPOCHS = SIMD_ARRIVALS + 32
SLOT_WORDS = SIMD_EPOCHS + 32
ENTRY_WORDS = 16
REPORT_WORDS = 12
#: Report kinds (word 0 of a report).
REPORT_RACE, REPORT_INIT, REPORT_DEVICE_RACE = 1, 2, 3
#: A read of device_array memory never written since its allocation (prev_site: the range's number), of a
#: local-array element this thread has not written.
REPORT_DEVICE_INIT, REPORT_LOCAL_INIT = 4, 5
#: A SIMD-group barrier not every lane of its SIMD group reached (extra: the lanes that did; prev_site: the
#: site of the lanes it met, when another).
REPORT_SIMD_SYNC = 6
#: Words of an initialised-shadow range: base address (2 words), length in bytes (2 words), word offset (from
#: the header) of its shadow bytes (one byte per byte of the allocation: 0 never written, 1 written).
INIT_WORDS = 8
#: Words of a device-memory write table entry: state (0 empty, 1 being filled, 2 ready), address (2 words),
#: last writer's threadgroup + 1, its thread, its site (bit 31: atomic).
DEVICE_WORDS = 6
#: Entries a device-memory write probes at most before it counts itself as not checked.
DEVICE_PROBES = 64
#: Device-memory write table entries per thread of the grid and device-write site of the kernel (at least
#: MIN_DEVICE_ENTRIES, at most MAX_DEVICE_ENTRIES).
DEVICE_ENTRIES_PER_THREAD = 2
MIN_DEVICE_ENTRIES = 1 << 14
MAX_DEVICE_ENTRIES = 1 << 21
#: A report's words: kind, site, previous site, threadgroup (linear), thread (linear), previous thread,
#: the element's index (three components, -1 where the array has fewer axes).
REPORT = {"kind": 0, "site": 1, "prev_site": 2, "group": 3, "thread": 4, "prev_thread": 5, "index": 6,
          "extra": 9}   # a device race: prev_thread is the other threadgroup, extra its thread
NO_SITE = 0xFFFFFFFF
CHECK_BITS = {"race": 1, "init": 2}


class Site(NamedTuple):
    """One instrumented access (or barrier) of a kernel: its kind, the array's Python name, where it is."""

    kind: int
    array: str
    filename: str
    line: int
    space: str = "threadgroup"   # the array's address space: "threadgroup" or "device"


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


def site(lc, kind: int, array: str, space: str = "threadgroup") -> int:
    """The site id of an access being lowered by ``lc`` (a FunctionLowering)."""
    loc = lc.loc
    entry = Site(kind, array, loc.filename if loc is not None else "?", loc.line if loc is not None else 0, space)
    sites = lc.module.sanitizer_sites
    sites.append(entry)
    return len(sites) - 1


def access(lc, space: str | None, pointer: str, comps, kind: int, array: str, cond=None, size: int = 0, *,
           init_only: bool = False) -> None:
    """Instrument an access of the element at ``pointer`` (an MSL element lvalue's address) of an array in
    address space ``space`` (index components ``comps``; ``cond``: the in-bounds condition, if any): every
    access of a threadgroup array (race, init), every write of a device array (race across threadgroups),
    every access of a device array (init: device_array memory) and of a local array declared by this
    function (init; ``init_only``: the init check's hooks only, a record reference counted as a write).
    ``size``: a record's bytes, for a whole record of a threadgroup array (every byte is an element: a field
    or a field's element is then accessed at its own address)."""
    checks = lc.module.sanitize
    if not checks:
        return
    calls = []
    index = [msl.cast("long", c) for c in list(comps)[:3]] + [msl.long_literal(-1)] * (3 - min(3, len(comps)))
    if space == "threadgroup":
        if tracks_threadgroup(lc.module) and not init_only:
            if size > 1:
                calls.append(("nm_san_tg_bytes", msl.cast("ulong", pointer), "threadgroup", msl.uint_literal(size)))
            else:
                calls.append(("nm_san_tg", msl.cast("ulong", pointer), "threadgroup"))
    elif space in (None, "device"):
        if "init" in checks:
            calls.append(("nm_san_devinit", msl.cast("ulong", pointer), "device", _size_of(pointer)))
        if kind != READ and "race" in checks and not init_only:
            calls.append(("nm_san_dev", msl.cast("ulong", pointer), "device"))
    elif space == "thread" and "init" in checks:
        # the local arrays this function declared so far: the hook checks the address against each
        for name, shadow, nbytes in getattr(lc, "sanitizer_local_shadows", ()):
            calls.append(("nm_san_local", msl.pointer_cast("thread const uchar*", pointer), "thread",
                          msl.pointer_cast("thread const uchar*", name), msl.uint_literal(nbytes), shadow,
                          _size_of(pointer)))
    if not calls:
        return
    lc.module.need_sanitizer_hooks()
    ids = {}
    for hook, address, where, *extra in calls:
        if where not in ids:
            ids[where] = site(lc, kind, array, where)
        call = msl.statement(msl.call(hook, msl.ENV_PARAM, address, *extra, msl.uint_literal(ids[where]),
                                      msl.uint_literal(kind), *index))
        lc.emit(msl.if_statement(cond, call) if cond else call)


def _size_of(pointer: str) -> str:
    return msl.cast("uint", msl.size_of_pointee(pointer))


def local_shadow(lc, name: str, nbytes: int) -> None:
    """With ``init``: a local array ``name`` of ``nbytes`` gets a shadow of as many bytes (0: this thread has
    not written the byte), declared next to it; this function's accesses of thread memory within the array
    (through any view) consult it."""
    if "init" not in lc.module.sanitize:
        return
    shadow = lc.fresh_name("nm_san_local")
    lc.declare(msl.declare_array("uchar", shadow, max(1, nbytes), zero=True))
    if not hasattr(lc, "sanitizer_local_shadows"):
        lc.sanitizer_local_shadows = []
    lc.sanitizer_local_shadows.append((name, shadow, nbytes))


def called_array(lc) -> str:
    """The Python name of the array argument of the call being lowered (an atomic's)."""
    call = lc.call
    args = getattr(call, "args", None)
    if not args:
        return "?"
    name = getattr(args[0], "name", "?")
    return name.lstrip("$").split(".")[0] if name.startswith("$") or "." in name else name


def barrier(lc, simd: bool = False) -> None:
    """Instrument a threadgroup barrier (``simd``: a SIMD-group barrier), called before it: its epoch (race,
    init) and, with ``sync``, the thread's barrier record (the site, the arrivals) that names each thread of a
    divergent barrier."""
    if "sync" in lc.module.sanitize:
        lc.module.need_sanitizer_hooks()
        if simd:   # a rendezvous of this site's own (its operand is the site: see nm_san_simd_sync)
            here = msl.uint_literal(site(lc, BARRIER, "", "simd barrier"))
            lc.emit(msl.statement(msl.call("nm_san_simd_sync", msl.ENV_PARAM, here,
                                           msl.call("simd_broadcast_first", here))))
        else:
            lc.emit(msl.statement(msl.call("nm_san_sync", msl.ENV_PARAM,
                                           msl.uint_literal(site(lc, BARRIER, "", "barrier")))))
    if not tracks_threadgroup(lc.module):
        return
    lc.module.need_sanitizer_hooks()
    lc.emit(msl.statement(msl.call("nm_san_simd_barrier" if simd else "nm_san_barrier", msl.ENV_PARAM)))


def prologue(module) -> list[str]:
    """The kernel's statements after its environment (thread 0 claims its threadgroup's slot)."""
    spaces = {s.space for s in module.sanitizer_sites}
    if not ((tracks_threadgroup(module) and "threadgroup" in spaces) or "barrier" in spaces):
        return []
    module.need_sanitizer_hooks()
    return [msl.statement(msl.call("nm_san_begin", msl.ENV_PARAM)),
            msl.declare("nm_san_exit", "nm_san_guard", msl.braces([msl.ENV_PARAM]))]

#: The hooks' file in the MSL library's folder (compiler/mslib/): a template, not one of the library's indexed
#: files (mslib.FILES), parsed with the library's one section parser and filled in here.
HOOKS_FILE = "sanitize.metal"

#: The values of the hooks' @name@ placeholders (sanitize.metal).
_PLACEHOLDERS = dict({name: str(word) for name, word in HEADER.items()}, SLOT_WORDS=str(SLOT_WORDS),
                     REPORT_WORDS=str(REPORT_WORDS), WRITE=str(WRITE), READ=str(READ), ATOMIC=str(ATOMIC),
                     REPORT_INIT=str(REPORT_INIT), REPORT_RACE=str(REPORT_RACE), NO_SITE=str(NO_SITE),
                     REPORT_DEVICE_RACE=str(REPORT_DEVICE_RACE), DEVICE_WORDS=str(DEVICE_WORDS),
                     DEVICE_PROBES=str(DEVICE_PROBES), INIT_WORDS=str(INIT_WORDS),
                     REPORT_DEVICE_INIT=str(REPORT_DEVICE_INIT), REPORT_LOCAL_INIT=str(REPORT_LOCAL_INIT),
                     REPORT_SIMD_SYNC=str(REPORT_SIMD_SYNC),
                     SIMD_ARRIVALS=str(SIMD_ARRIVALS), SIMD_EPOCHS=str(SIMD_EPOCHS),
                     ERROR_RECORD_WORDS=str(ERROR_RECORD_WORDS), SYNC_WORDS=str(SYNC_WORDS))


def hooks() -> str:
    """The hooks' MSL, with the layout's numbers filled in."""
    with open(mslib.path(HOOKS_FILE), encoding="utf-8") as f:
        text = mslib.parse(f.read(), HOOKS_FILE)["sanitizer"].text
    for name, value in _PLACEHOLDERS.items():
        text = text.replace("@" + name + "@", value)
    return text

"""The kernel sanitizer's host half: the shadow-memory buffer of a sanitized launch, and its reports.

A sanitizing kernel (``@metal.jit(sanitize=...)``, ``NUMBA_METAL_SANITIZE``; the instrumentation is
``numba_metal/compiler/sanitize.py``, the user's guide docs/sanitizer.md) runs on the CPU reference device
only: its launch state refuses any other device. Each launch binds a buffer laid out for its grid at the
error record's slot (the error record, the sanitizer's header, the threadgroups' slots, the shadow tables
and the reports) and waits for the kernel (a sanitized launch is synchronous); what it found is raised at
the launching thread's next wait, as every kernel failure is (a launch with NumPy arguments waits itself):

- the CPU device's refusal of a divergent barrier (which names the barrier's file:line and the threads
  that did not arrive) as :class:`~numba_metal.errors.KernelSyncError`;
- the error record's out-of-bounds index as :class:`~numba_metal.errors.KernelSanitizerBoundsError`;
- the hooks' race and init reports as :class:`~numba_metal.errors.KernelRaceError` /
  :class:`~numba_metal.errors.KernelUninitializedError`, naming the kernel, the array, the element, both
  threads and both accesses' file:line; ``reports`` holds every distinct one (by pair of sites).

Accesses the hooks could not check (a threadgroup slot reused while its threadgroup still ran, a full
table) are counted and reported as a :class:`~numba_metal.errors.NumbaMetalWarning`: coverage was
partial, which is never silent.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from numba_metal.compiler import kernel_io, sanitize
from numba_metal.errors import (DeviceRaceWarning, KernelBarrierError, KernelBoundsError, KernelRaceError,
                                KernelSanitizerBoundsError,
                                KernelSyncError, KernelUninitializedError, NumbaMetalError, NumbaMetalWarning,
                                UnsupportedFeatureError)

from . import settings

#: Reports kept per launch (more are counted).
MAX_REPORTS = 256
#: Bytes of shadow tables a launch may use (the number of threadgroup slots shrinks to fit).
SHADOW_BYTES = 64 << 20
#: Launches on one buffer before its tables are cleared (a generation is 30 bits of a table entry's state).
GENERATIONS = 1 << 29
#: Threadgroup slots at most (threadgroups the CPU device runs at once are far fewer).
MAX_SLOTS = 32


_PAST = ("read", "wrote", "updated (atomic)")


def _summary(reports, count) -> str:
    """The message of an error or warning: its first report, then the others (one per pair of sites)."""
    lines = [reports[0]["message"]]
    if len(reports) > 1:
        lines.append("also:")
        lines.extend(f"  {r['message']}" for r in reports[1:9])
        if len(reports) > 9:
            lines.append(f"  ... and {len(reports) - 9} more pairs of sites")
    if count is not None:
        lines.append(f"({count} reports in all in this launch: each pair of sites is listed once)")
    return "\n".join(lines)


def refuse_unless_cpu(kernel, ctx) -> None:
    """A sanitizing kernel runs on the CPU reference device only: anything else is refused, by name."""
    if ctx.info.kind != "cpu":
        checks = ",".join(kernel.dispatcher.options.sanitize)
        raise UnsupportedFeatureError(
            f"kernel {kernel.name}() is a sanitizing kernel (sanitize={checks!r}) and the kernel sanitizer runs on "
            f"the CPU reference device only, not on {ctx.info.name!r} ({ctx.info.kind}); select it "
            "(NUMBA_METAL_DEVICE=cpu or metal.select_device('cpu')), or unset NUMBA_METAL_SANITIZE / drop "
            "sanitize= to run on this device")


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _unravel(linear: int, dims) -> tuple:
    x = linear % dims[0]
    y = linear // dims[0] % dims[1]
    z = linear // (dims[0] * dims[1])
    return (x, y, z)


class LaunchSanitizer:
    """The sanitizer of one launch state (a sanitizing specialisation on the CPU device)."""

    def __init__(self, state, error_index: int):
        refuse_unless_cpu(state.kernel, state.ctx)
        self.state = state
        self.index = error_index
        self.checks = frozenset(state.kernel.dispatcher.options.sanitize)
        sites = state.abi.sanitizer_sites
        self.shared = any(s.space == "threadgroup" for s in sites)
        self.device_sites = sum(s.space == "device" and s.kind != sanitize.READ for s in sites)   # device writes
        self.device = self.device_sites > 0
        self.init = "init" in self.checks   # device_array memory: the arguments' shadows (init_shadow.py)
        self.barriers = "sync" in self.checks and any(s.space in ("barrier", "simd barrier") for s in sites)
        self.tracks = (bool(self.checks & {"race", "init"}) and bool(sites)) or self.barriers
        # launching thread -> (buffer, words, generation, layout): a sanitized launch waits for its kernel
        self._buffers: dict = {}

    def bind(self, config, args=()):
        """Before the submit: lay out and bind this launch's buffer; returns what :meth:`finish` needs."""
        griddim, blockdim = tuple(config.griddim), tuple(config.blockdim)
        ngroups = griddim[0] * griddim[1] * griddim[2]
        base = kernel_io.ERROR_RECORD_WORDS
        header, placed = {}, []
        if self.tracks:
            tg_bytes = self.state.static_shared + int(config.sharedmem or 0) if self.shared else 0
            capacity = _pow2(max(16, tg_bytes)) if self.shared else 1
            slots = max(1, min(ngroups, MAX_SLOTS)) if self.shared or self.barriers else 1
            while slots > 1 and slots * capacity * sanitize.ENTRY_WORDS * 4 > SHADOW_BYTES:
                slots //= 2
            h = sanitize.HEADER_WORDS
            header = {"slots": slots, "capacity": capacity, "max_reports": MAX_REPORTS, "slot_of": h,
                      "slot_headers": h + ngroups}
            header["tables"] = header["slot_headers"] + slots * sanitize.SLOT_WORDS
            header["report_base"] = header["tables"] + slots * capacity * sanitize.ENTRY_WORDS
            header["checks"] = sum(sanitize.CHECK_BITS[c] for c in self.checks if c in sanitize.CHECK_BITS)
            header["shift"] = 32 - (capacity.bit_length() - 1)
            header["device_table"] = header["report_base"] + MAX_REPORTS * sanitize.REPORT_WORDS
            threads = ngroups * blockdim[0] * blockdim[1] * blockdim[2]
            wanted = sanitize.DEVICE_ENTRIES_PER_THREAD * threads * self.device_sites
            device = (min(_pow2(max(wanted, sanitize.MIN_DEVICE_ENTRIES)), sanitize.MAX_DEVICE_ENTRIES)
                      if self.device and ngroups > 1 else 0)
            header["device_capacity"] = device
            header["device_shift"] = 32 - (device.bit_length() - 1) if device else 0
            header["init_table"] = header["device_table"] + device * sanitize.DEVICE_WORDS
            shadows = self._shadows(args) if self.init else []
            header["init_count"] = len(shadows)
            words = base + header["init_table"] + len(shadows) * sanitize.INIT_WORDS
            for array_buffer, shadow in shadows:
                placed.append((array_buffer, shadow, words - base))
                words += -(-shadow.written.size // 4)
            if self.barriers:   # each slot's threads' barrier records (sync)
                header["sync_threads"] = words - base
                words += slots * blockdim[0] * blockdim[1] * blockdim[2] * sanitize.SYNC_WORDS
        else:
            words = base
        ident = threading.get_ident()
        buffer, size, generation, layout = self._buffers.get(ident, (None, 0, 0, None))
        view = None if buffer is None else np.frombuffer(buffer.memory(), dtype=np.uint32)
        # Entries of earlier launches are told apart by generation only where they stand at the same place:
        # a launch laid out otherwise (another grid) starts from cleared tables, or it would read another
        # launch's words as its own entries (a device-write entry forever "being filled": a hung kernel).
        if buffer is None or size < words or generation >= GENERATIONS or layout != header:
            alive = {t.ident for t in threading.enumerate()}
            for other in [i for i in self._buffers if i not in alive]:
                del self._buffers[other]
            if buffer is None or size < words:
                buffer, size = self.state.ctx.device.new_buffer(4 * words), words
                view = np.frombuffer(buffer.memory(), dtype=np.uint32)
            view[:words] = 0       # the tables once; later launches tell their entries apart by generation
            generation = 0
        generation += 1
        self._buffers[ident] = (buffer, size, generation, header)
        # the error record, the header, the threadgroups' slots and the slots' headers are cleared per launch
        view[:base + header["tables"] if header else base] = 0
        header = dict(header, generation=generation) if header else header
        for name, value in header.items():
            view[base + sanitize.HEADER[name]] = value
        ranges = []
        for k, (array_buffer, shadow, at) in enumerate(placed):
            row = base + header["init_table"] + k * sanitize.INIT_WORDS
            n = shadow.written.size
            view[row:row + 5] = (array_buffer.address & 0xFFFFFFFF, array_buffer.address >> 32, n & 0xFFFFFFFF,
                                 n >> 32, at)
            view[base + at:base + at + -(-n // 4)].view(np.uint8)[:n] = shadow.written
            ranges.append((array_buffer, shadow, at))
        self.state.dispatch.set_buffer(self.index, buffer, 0)
        return (buffer, griddim, blockdim, header, ranges, args)

    def _shadows(self, args) -> list:
        """(buffer, Shadow) of each device-array argument whose memory is tracked, once per buffer."""
        from . import init_shadow
        found = {}
        for a in self.state.abi.arrays:
            value = args[a.arg] if a.arg < len(args) else None
            buffer = getattr(value, "buffer", None)
            shadow = init_shadow.of(buffer) if buffer is not None else None
            if shadow is not None and id(buffer) not in found:
                found[id(buffer)] = (buffer, shadow)
        return list(found.values())

    def finish(self, queue, bound) -> None:
        """After the submit: wait for the kernel, warn about device races, and leave what else the sanitizer
        (or a ``debug=True`` raise) found for the launching thread's next wait, as every kernel failure is
        reported (a launch with NumPy arguments waits: it raises there)."""
        exc = self._outcome(queue, bound)
        if exc is not None:
            ctx = self.state.ctx
            with ctx.lock:
                checks = ctx.pending_checks.setdefault(threading.get_ident(), {})
                checks[("sanitizer", id(self), len(checks))] = lambda: exc

    def _outcome(self, queue, bound):
        from . import init_shadow, streams
        buffer, griddim, blockdim, header, ranges, args = bound
        kernel = self.state.kernel
        try:
            streams.timed_wait(queue, "launch")
        except KernelBarrierError as e:
            init_shadow.mark_written_arguments(self.state.abi, args)   # stopped: what it wrote is unknown
            if "sync" not in self.checks:
                return e
            report = {"check": "sync", "kernel": kernel.name, "message": e.message}
            if header.get("sync_threads"):
                from .sanitizer_sync import thread_records
                words = np.frombuffer(buffer.memory(), dtype=np.uint32)[kernel_io.ERROR_RECORD_WORDS:]
                report = thread_records(kernel.name, e.message, words, header, griddim, blockdim,
                                        self.state.abi.sanitizer_sites) or report
            return KernelSyncError(f"kernel sanitizer (sync) in kernel {kernel.name}(): {report['message']}",
                                   e.location, kernel=kernel.name, reports=(report,))
        except NumbaMetalError as e:
            # any other failure of the kernel (a time limit, a fault) is the launch's, raised at the next
            # wait as without the sanitizer; what it wrote is unknown
            init_shadow.mark_written_arguments(self.state.abi, args)
            return e
        words = np.frombuffer(buffer.memory(), dtype=np.uint32)
        base = kernel_io.ERROR_RECORD_WORDS
        for array_buffer, shadow, at in ranges:   # what the kernel wrote, back into the arrays' shadows
            n = shadow.written.size
            shadow.written[:] = words[base + at:base + at + -(-n // 4)].view(np.uint8)[:n]
            if shadow.written.all():
                init_shadow.release(array_buffer)
        if ranges and buffer.nbytes > SHADOW_BYTES:   # large arrays' shadows: not kept for the next launch
            self._buffers.pop(threading.get_ident(), None)
        if not self.init:   # the kernel's writes were not tracked: what it may write is written
            init_shadow.mark_written_arguments(self.state.abi, args)
        if words[kernel_io.RECORD["flag"]]:
            from .kernel_output import KernelOutput
            failure = KernelOutput(self.state, None, None).failure(buffer, blockdim)
            if isinstance(failure, KernelBoundsError):
                return KernelSanitizerBoundsError(f"kernel sanitizer (bounds): {failure.message}", failure.location,
                                                  kernel=kernel.name,
                                                  reports=({"check": "bounds", "message": failure.message},))
            if failure is not None:
                return failure
        if not header:
            return None
        s = words[base:]
        count = int(s[sanitize.HEADER["reports"]])
        # without shared arrays only the barrier hooks ran (no threadgroup claims a slot): nothing went unchecked
        lost = int(s[sanitize.HEADER["lost"]]) if self.shared else 0
        if lost:
            warnings.warn(NumbaMetalWarning(
                f"kernel sanitizer: {lost} shared-memory accesses of kernel {kernel.name}() were not checked (a "
                "threadgroup found no free shadow slot, or its table was full)"),
                stacklevel=settings.user_stacklevel())
        device_lost = int(s[sanitize.HEADER["device_lost"]])
        if device_lost:
            warnings.warn(NumbaMetalWarning(
                f"kernel sanitizer: {device_lost} device-memory writes of kernel {kernel.name}() were not checked "
                f"for races across threadgroups (the write table, {sanitize.DEVICE_ENTRIES_PER_THREAD} entries per "
                f"thread of the grid and device-write site, at least {sanitize.MIN_DEVICE_ENTRIES} and at most "
                f"{sanitize.MAX_DEVICE_ENTRIES}, was full)"),
                stacklevel=settings.user_stacklevel())
        if count:
            reports = self._reports(s, header, count, griddim, blockdim, ranges)
            device = [r for r in reports if r["check"] == "device race"]
            if device:
                warnings.warn(DeviceRaceWarning(_summary(device, None), device[0]["location"], kernel=kernel.name,
                                                reports=device), stacklevel=settings.user_stacklevel())
            errors = [r for r in reports if r["check"] != "device race"]
            if errors:
                race = [r for r in errors if r["check"] == "race"]
                first = race[0] if race else errors[0]
                cls = {"race": KernelRaceError, "sync": KernelSyncError}.get(first["check"], KernelUninitializedError)
                errors = [first] + [r for r in errors if r is not first]
                return cls(_summary(errors, count), first["location"], kernel=kernel.name, reports=errors)
        return None

    def _reports(self, s, header, count, griddim, blockdim, ranges=()) -> list:
        """The distinct reports of a launch (one per kind and pair of sites), threadgroup by threadgroup."""
        sites = self.state.abi.sanitizer_sites
        kept = min(count, MAX_REPORTS)
        at = header["report_base"]
        rows = s[at:at + kept * sanitize.REPORT_WORDS].reshape(kept, sanitize.REPORT_WORDS).astype(np.int64)
        order = sorted(range(kept), key=lambda i: int(rows[i][sanitize.REPORT["group"]]))
        reports, seen = [], {}
        for i in order:
            r = rows[i]
            kind = int(r[0])
            key = (kind, int(r[1]), int(r[2]))
            if key in seen:
                seen[key]["count"] += 1
                continue
            reports.append(self._report(r, sites, griddim, blockdim, ranges))
            seen[key] = reports[-1]
        return reports

    def _report(self, r, sites, griddim, blockdim, ranges=()) -> dict:
        kernel = self.state.kernel
        R = sanitize.REPORT

        def site_of(i):
            return sites[i] if 0 <= i < len(sites) else sanitize.Site(sanitize.READ, "?", "?", 0)

        def signed(v):
            v = int(v) & 0xFFFFFFFF
            return v - (1 << 32) if v >= 1 << 31 else v

        here = site_of(int(r[R["site"]]))
        if int(r[R["kind"]]) == sanitize.REPORT_SIMD_SYNC:
            return _simd_sync_report(kernel.name, r, here, site_of(int(r[R["prev_site"]])),
                                     _unravel(int(r[R["group"]]), griddim), blockdim)
        index = tuple(signed(v) for v in r[R["index"]:R["index"] + 3])
        index = tuple(i for i in index if i != -1) or index[:1]
        element = "[" + ", ".join(map(str, index)) + "]"
        group = _unravel(int(r[R["group"]]), griddim)
        thread = _unravel(int(r[R["thread"]]), blockdim)
        where = f"{here.filename}:{here.line}"
        verb = _PAST[here.kind]
        if int(r[R["kind"]]) in (sanitize.REPORT_DEVICE_INIT, sanitize.REPORT_LOCAL_INIT):
            return _init_report(kernel.name, r, here, element, index, group, thread, ranges)
        if int(r[R["kind"]]) == sanitize.REPORT_INIT:
            message = (f"uninitialised read (init) in kernel {kernel.name}(): shared array '{here.array}' element "
                       f"{element} was read ({sanitize.ACCESS_NAMES[here.kind]}) by thread {thread} of threadgroup "
                       f"{group} at {where}, and no thread of the threadgroup had written it in this launch")
            return {"check": "init", "kernel": kernel.name, "array": here.array, "element": index,
                    "threadgroup": group, "thread": thread, "location": (here.filename, here.line),
                    "message": message, "count": 1, "sites": (where,)}
        prev = site_of(int(r[R["prev_site"]]))
        if int(r[R["kind"]]) == sanitize.REPORT_DEVICE_RACE:
            prev_group = _unravel(int(r[R["prev_thread"]]), griddim)
            prev_thread = _unravel(int(r[R["extra"]]), blockdim)
            prev_where = f"{prev.filename}:{prev.line}"
            message = (f"device-memory race (write-after-write across threadgroups) in kernel {kernel.name}(): "
                       f"array '{here.array}' element {element}: thread {prev_thread} of threadgroup {prev_group} "
                       f"{_PAST[prev.kind]} it at {prev_where}, then thread {thread} of threadgroup {group} "
                       f"{verb} it at {where}, without atomics (harmless only if every write stores the same value)")
            return {"check": "device race", "kernel": kernel.name, "array": here.array, "element": index,
                    "threadgroup": group, "thread": thread, "other_threadgroup": prev_group,
                    "other_thread": prev_thread, "location": (here.filename, here.line),
                    "other_location": (prev.filename, prev.line), "message": message, "count": 1,
                    "sites": (prev_where, where)}
        prev_thread = _unravel(int(r[R["prev_thread"]]), blockdim)
        prev_where = f"{prev.filename}:{prev.line}"
        pverb = _PAST[prev.kind]
        hazard = {(sanitize.WRITE, sanitize.READ): "read-after-write",
                  (sanitize.READ, sanitize.WRITE): "write-after-read",
                  (sanitize.WRITE, sanitize.WRITE): "write-after-write"}.get(
            (min(prev.kind, 1), min(here.kind, 1)), "atomic/plain")
        message = (f"race ({hazard}) in kernel {kernel.name}(): shared array '{here.array}' element {element} of "
                   f"threadgroup {group}: thread {prev_thread} {pverb} it at {prev_where}, then thread {thread} "
                   f"{verb} it at {where}, with no syncthreads() between the two")
        return {"check": "race", "kernel": kernel.name, "array": here.array, "element": index,
                "threadgroup": group, "thread": thread, "other_thread": prev_thread,
                "location": (here.filename, here.line), "other_location": (prev.filename, prev.line),
                "message": message, "count": 1, "sites": (prev_where, where)}


def _simd_sync_report(kernel, r, here, other, group, blockdim) -> dict:
    """The report of a SIMD-group barrier that not every lane of its SIMD group reached."""
    R = sanitize.REPORT
    t = int(r[R["thread"]])
    first = t - t % 32
    n = blockdim[0] * blockdim[1] * blockdim[2]
    mask = int(r[R["extra"]]) & 0xFFFFFFFF
    arrived = [first + i for i in range(32) if mask >> i & 1]
    missing = [first + i for i in range(min(32, n - first)) if not mask >> i & 1]
    where = f"{here.filename}:{here.line}"
    threads = [_unravel(i, blockdim) for i in arrived]
    if other is not here and (other.filename, other.line) != (here.filename, here.line):
        elsewhere = f"{other.filename}:{other.line}"
        what = (f"lanes of SIMD group {first // 32} of threadgroup {group} met at two SIMD-group barriers, at "
                f"{where} and at {elsewhere}")
        sites = (where, elsewhere)
    else:
        what = (f"the SIMD-group barrier at {where} was reached by threads {_span(threads)} of threadgroup "
                f"{group}, not by threads {_span([_unravel(i, blockdim) for i in missing])} of their SIMD group "
                f"{first // 32} (they exited, or wait at another barrier)")
        sites = (where,)
    message = (f"divergent SIMD-group barrier (sync) in kernel {kernel}(): {what}; every lane of a SIMD group must "
               "reach the same simdgroup_barrier()/syncwarp() (undefined behaviour on a GPU otherwise)")
    return {"check": "sync", "kernel": kernel, "threadgroup": group, "thread": threads[0] if threads else None,
            "simdgroup": first // 32, "lanes": tuple(i - first for i in arrived), "location": (here.filename, here.line),
            "message": message, "count": 1, "sites": sites}


def _span(threads) -> str:
    """Threads as a short list: the first, '..', the last when there are more than three."""
    if len(threads) > 3:
        return f"{threads[0]} .. {threads[-1]} ({len(threads)})"
    return ", ".join(map(str, threads)) or "none"


def _init_report(kernel, r, here, element, index, group, thread, ranges) -> dict:
    """The report of a read of a device_array element never written since its allocation (naming both
    lines: the read's and the allocation's), or of a local-array element this thread has not written."""
    where = f"{here.filename}:{here.line}"
    access = sanitize.ACCESS_NAMES[here.kind]
    report = {"check": "init", "kernel": kernel, "array": here.array, "element": index, "threadgroup": group,
              "thread": thread, "location": (here.filename, here.line), "count": 1}
    if int(r[sanitize.REPORT["kind"]]) == sanitize.REPORT_LOCAL_INIT:
        report["message"] = (f"uninitialised read (init) in kernel {kernel}(): local array '{here.array}' element "
                             f"{element} was read ({access}) by thread {thread} of threadgroup {group} at {where}, "
                             "and this thread had not written it (a local array is uninitialised on a GPU: "
                             "numba-metal zero-fills it, numba.cuda does not)")
        report["sites"] = (where,)
        return dict(report, space="local")
    k = int(r[sanitize.REPORT["prev_site"]])
    filename, line, what = ranges[k][1].where if 0 <= k < len(ranges) else ("?", 0, "device_array")
    allocated = f"{filename}:{line}"
    report["message"] = (f"uninitialised read (init) in kernel {kernel}(): device array '{here.array}' element "
                         f"{element} was read ({access}) by thread {thread} of threadgroup {group} at {where}, and "
                         f"nothing has written it since {what}() allocated it at {allocated} (no kernel, no copy "
                         "from the host: its memory is uninitialised on a GPU)")
    return dict(report, space="device", allocated_at=(filename, line), other_location=(filename, line),
                sites=(allocated, where))


__all__ = ["LaunchSanitizer", "refuse_unless_cpu"]

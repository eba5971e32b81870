"""Synchronisation: barriers, barriers with a reduction, and memory fences.

``syncthreads()``/``barrier()`` is a threadgroup barrier that also orders device and threadgroup
memory (numba.cuda's ``__syncthreads`` guarantee). Every thread of the threadgroup must reach it.
``syncthreads_count/and/or(pred)`` also count the threads whose ``pred`` is true, through a small
threadgroup counter. ``threadfence()`` needs MSL 3.2 (macOS 15) for its device-scope fence.
"""

from __future__ import annotations

import types as pytypes

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, signature

from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.typing import registry as typing
from numba_metal.errors import UnsupportedFeatureError

from .stubs import Stub

syncthreads = Stub("syncthreads", "syncthreads(): wait until every thread of the threadgroup arrives")
barrier = syncthreads  # the earlier numba-metal's spelling
syncthreads_count = Stub("syncthreads_count", "syncthreads_count(pred): barrier; number of threads with pred true")
syncthreads_and = Stub("syncthreads_and", "syncthreads_and(pred): barrier; 1 if pred is true for all threads")
syncthreads_or = Stub("syncthreads_or", "syncthreads_or(pred): barrier; 1 if pred is true for any thread")
threadfence = Stub("threadfence", "threadfence(): order this thread's device-memory writes (device scope)")
threadfence_block = Stub("threadfence_block", "threadfence_block(): order memory writes within the threadgroup")
simdgroup_barrier = Stub("simdgroup_barrier", "simdgroup_barrier(): wait for every thread of the SIMD group")
syncwarp = Stub("syncwarp", "syncwarp(mask=0xffffffff): numba.cuda's name for simdgroup_barrier()")

BARRIER = "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)"


def _template(stub, nargs, result=types.none):
    class Template(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            if kws or len(args) not in (nargs if isinstance(nargs, tuple) else (nargs,)):
                raise UnsupportedFeatureError(f"metal.{stub.__name__}() takes "
                                              f"{nargs if not isinstance(nargs, tuple) else ' or '.join(map(str, nargs))}"
                                              " argument(s)")
            return signature(result, *args)

    Template.__name__ = f"Metal_{stub.__name__}"
    return types.Function(Template)


typing.register_global(syncthreads, _template(syncthreads, 0))
typing.register_global(threadfence, _template(threadfence, 0))
typing.register_global(threadfence_block, _template(threadfence_block, 0))
typing.register_global(simdgroup_barrier, _template(simdgroup_barrier, 0))
typing.register_global(syncwarp, _template(syncwarp, (0, 1)))
typing.register_global(syncthreads_count, _template(syncthreads_count, 1, types.int32))
typing.register_global(syncthreads_and, _template(syncthreads_and, 1, types.int32))
typing.register_global(syncthreads_or, _template(syncthreads_or, 1, types.int32))


@lowering.call(syncthreads)
def _lower_syncthreads(lc, sig, args):
    return Value(BARRIER, types.none)


@lowering.call(simdgroup_barrier)
def _lower_simdgroup_barrier(lc, sig, args):
    return Value("simdgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)", types.none)


@lowering.call(syncwarp)
def _lower_syncwarp(lc, sig, args):
    if args:
        from .simd import require_full_mask
        require_full_mask(lc, "syncwarp")
    return Value("simdgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)", types.none)


@lowering.call(threadfence)
def _lower_threadfence(lc, sig, args):
    return Value("atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device)",
                 types.none)


@lowering.call(threadfence_block)
def _lower_threadfence_block(lc, sig, args):
    return Value("atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, "
                 "memory_order_seq_cst, thread_scope_threadgroup)", types.none)


@lowering.call(syncthreads_count, syncthreads_and, syncthreads_or)
def _lower_sync_reduce(lc, sig, args):
    from numba_metal.compiler.conversions import truth
    stub = lc.resolve_current_callee()
    lc.need("syncreduce")
    counter = lc.threadgroup_counter()
    call = f"nm_sync_count({counter}, {truth(lc, args[0])}, {lc.ctx('tid')}, {lc.ctx('tsize')})"
    if stub is syncthreads_count:
        return Value(call, types.int32)
    total = f"int({lc.ctx('tsize')}.x * {lc.ctx('tsize')}.y * {lc.ctx('tsize')}.z)"
    if stub is syncthreads_and:
        return Value(f"int({call} == {total})", types.int32)
    return Value(f"int({call} > 0)", types.int32)


# ---------------------------------------------------------------------------------------------
# numba.cuda names Metal has no equivalent for: a compile error that says so and what to do instead
# ---------------------------------------------------------------------------------------------

_NO_EQUIVALENT = {}


def _no_metal_equivalent(path: str, why: str) -> Stub:
    stub = Stub(path, f"{path}: not available on Metal. {why}")
    _NO_EQUIVALENT[stub] = why

    class Template(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            raise UnsupportedFeatureError(f"metal.{path}() has no Metal equivalent: {why}")

    Template.__name__ = f"Metal_{path.replace('.', '_')}"
    typing.register_global(stub, types.Function(Template))
    return stub


threadfence_system = _no_metal_equivalent(
    "threadfence_system", "Metal has no system-scope (host-visible) memory fence inside a kernel; results "
    "reach the host when the kernel completes (use metal.threadfence() for device scope)")
nanosleep = _no_metal_equivalent(
    "nanosleep", "Metal Shading Language has no way to suspend a thread for a time")
cg = pytypes.ModuleType("numba_metal.metal.cg", "Cooperative groups: not available on Metal.")
cg.this_grid = _no_metal_equivalent(
    "cg.this_grid", "Metal has no grid-wide barrier (no cooperative launch); threadgroups of one dispatch "
    "cannot wait for each other, so split the kernel into two launches at the grid sync")


__all__ = ["syncthreads", "barrier", "syncthreads_count", "syncthreads_and", "syncthreads_or",
           "threadfence", "threadfence_block", "simdgroup_barrier", "syncwarp", "threadfence_system",
           "nanosleep", "cg"]

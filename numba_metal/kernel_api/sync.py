"""Synchronisation: barriers, barriers with a reduction, and memory fences.

``syncthreads()``/``barrier()`` is a threadgroup barrier that also orders device and threadgroup
memory (numba.cuda's ``__syncthreads`` guarantee); in a kernel, where no device-memory access can need
it (compiler/barriers.py), it fences threadgroup memory only. Every thread of the threadgroup must
reach it.
``syncthreads_count/and/or(pred)`` also count the threads whose ``pred`` is true, through a small
threadgroup counter. ``threadfence()`` and ``threadfence_block()`` are MSL 3.2's ``atomic_thread_fence``
(macOS 15) at device and threadgroup scope, so kernels that call them ask for MSL 3.2. A device-scope
fence makes writes visible to other threadgroups only in memory declared ``coherent(device)`` (device
memory is coherent within a threadgroup), so a kernel that calls ``threadfence()`` (directly or in a
device function) declares its device memory so.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Synchronisation"

import types as pytypes

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, signature

from numba_metal.compiler import msl, sanitize
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.declarations import registry as typing
from numba_metal.errors import UnsupportedFeatureError

from .simd import require_full_mask
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


_DEVICE = msl.qualified("mem_flags", "mem_device")
_THREADGROUP = msl.qualified("mem_flags", "mem_threadgroup")

#: Barriers and fences: stub -> (MSL function, its arguments). Barriers order device and threadgroup
#: memory (numba.cuda's __syncthreads guarantee); fences are sequentially consistent at their scope.
BARRIERS = {
    syncthreads: ("threadgroup_barrier", (msl.flags(_DEVICE, _THREADGROUP),)),
    simdgroup_barrier: ("simdgroup_barrier", (msl.flags(_DEVICE, _THREADGROUP),)),
    syncwarp: ("simdgroup_barrier", (msl.flags(_DEVICE, _THREADGROUP),)),
    threadfence: ("atomic_thread_fence", (_DEVICE, "memory_order_seq_cst", "thread_scope_device")),
    threadfence_block: ("atomic_thread_fence", (msl.flags(_DEVICE, _THREADGROUP), "memory_order_seq_cst",
                                                "thread_scope_threadgroup")),
}


lowering.barrier(syncthreads, narrowable=True)
lowering.barrier(syncthreads_count, syncthreads_and, syncthreads_or, narrowable=False)


@lowering.call(*BARRIERS)
def _lower_barrier(lc, sig, args):
    if lc.callee is syncwarp and args:
        require_full_mask(lc, "syncwarp")
    if lc.callee is threadfence:
        lc.fence_device_memory()
    elif lc.callee is threadfence_block:
        lc.require_language_version(msl.VERSION_3_2)
    function, arguments = BARRIERS[lc.callee]
    if lc.callee is syncthreads and not lc.barrier_fences_device_memory():
        arguments = (_THREADGROUP,)
    call = msl.call(function, *arguments)
    if function in ("threadgroup_barrier", "simdgroup_barrier"):
        sanitize.barrier(lc, simd=function == "simdgroup_barrier")
    if function == "threadgroup_barrier" and lc.loc is not None:
        call += " " + msl.barrier_site(lc.loc.filename, lc.loc.line)
    return Value(call, types.none)


@lowering.call(syncthreads_count, syncthreads_and, syncthreads_or)
def _lower_sync_reduce(lc, sig, args):
    lc.need("nm_sync_count")
    sanitize.barrier(lc)
    counter = lc.threadgroup_counter()
    count = msl.call("nm_sync_count", counter, lc.truth(args[0]), lc.env("tid"), lc.env("tsize"))
    if lc.callee is syncthreads_count:
        return Value(count, types.int32)
    size = lc.env("tsize")
    total = msl.cast("int", msl.binary("*", msl.binary("*", msl.member(size, "x"), msl.member(size, "y")),
                                       msl.member(size, "z")))
    if lc.callee is syncthreads_and:
        return Value(msl.cast("int", msl.binary("==", count, total)), types.int32)
    return Value(msl.cast("int", msl.binary(">", count, "0")), types.int32)


# ---------------------------------------------------------------------------------------------
# numba.cuda names Metal has no equivalent for: a compile error that says so and what to do instead
# ---------------------------------------------------------------------------------------------

def _no_metal_equivalent(path: str, why: str) -> Stub:
    stub = Stub(path, f"{path}: not available on Metal. {why}")

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

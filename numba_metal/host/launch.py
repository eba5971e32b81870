"""Launching a specialisation on a device: its launch state and the launch function generated for it.

A :class:`LaunchState` is made once per specialisation and device: the pipeline, a reusable dispatch
descriptor, and a launch function generated for the kernel's launch plan. A launch with device arrays
of this device is argument typing (by the dispatcher), one ``struct.pack_into`` and one C call; host
NumPy arrays, arrays of another device and bad geometry take the general path, which binds them
(:func:`~numba_metal.host.arguments.bind_array`) or raises.

What a launch configuration must satisfy for this kernel on this device (threads per threadgroup,
the grid's size, threadgroup memory) is checked here, once per configuration and launch state.
"""

from __future__ import annotations

import struct
import threading

import numpy as np

from numba_metal import profiling
from numba_metal.errors import KernelBoundsError, KernelLaunchError

from . import streams as _streams
from .arguments import bind_array
from .arrays import DeviceNDArray


def threadgroup_memory_length(nbytes: int) -> int:
    """The length bound for ``nbytes`` of dynamic threadgroup memory: Metal takes multiples of 16, and a
    kernel that declares dynamic threadgroup memory is always given some."""
    return (nbytes + 15) // 16 * 16 or 16


def _round16(n: int) -> int:
    return (n + 15) // 16 * 16


class LaunchState:
    """Everything a launch of one specialisation on one device needs, made once: the pipeline, a
    reusable dispatch descriptor, and a launch function generated for the launch plan.

    The generated function (``_make_launch``) handles the common case, device arrays of this device:
    it binds only buffers that changed since the previous launch, packs the argument block with one
    ``struct.pack_into`` into the descriptor's preallocated bytes, and submits (one C call). Host NumPy
    arrays, arrays of another device and bad geometry take the general path, which raises the errors.
    """

    def __init__(self, kernel, ctx):
        from numba_metal import runtime
        self.kernel = kernel
        self.ctx = ctx
        plan = kernel.plan
        options = kernel.dispatcher.options
        start = profiling.now_ns() if profiling.listeners else 0
        self.pipeline = ctx.device.compile(kernel.msl, plan.entry_name, fast_math=options.fastmath,
                                           language_version=plan.language_version)
        if start:
            profiling.emit("compile", name=kernel.name, argtypes=kernel.argtypes, start_ns=start,
                           end_ns=profiling.now_ns(), stage="pipeline", from_cache=bool(self.pipeline.from_cache))
        self.max_threads = self.pipeline.max_total_threads_per_threadgroup
        slots = [a.slot for a in plan.arrays]
        if plan.error_slot is not None:
            slots.append(plan.error_slot)
        self.dplan = runtime.DispatchPlan(self.pipeline, slots,
                                          plan.arg_slot if plan.arg_slot is not None else 0,
                                          max(plan.arg_size, 1),
                                          [0] if plan.dynamic_threadgroup_memory else [],
                                          label=f"{kernel.name} ({plan.entry_name})")
        self.view = self.dplan.arg_view
        self.arg_size = plan.arg_size
        self.error_buffer = None
        if plan.error_slot is not None:
            self.error_buffer = ctx.device.new_buffer(64)
            self.dplan.set_buffer(len(plan.arrays), self.error_buffer, 0)
        self.packer = _make_packer(plan)
        self.launch = _make_launch(plan).__get__(self)
        self._queue = ctx.default_queue
        self.array_args = [(a.arg, i) for i, a in enumerate(plan.arrays)]
        self._bufs = [None] * len(plan.arrays)  # what each array slot is bound to (skip rebinding it)
        self._offs = [-1] * len(plan.arrays)
        self._last = (None,) * len(plan.arrays)  # the device arrays of the previous fast launch
        self._values = ()                        # and the argument-block values they gave
        self._griddim = self._blockdim = None   # the descriptor's current grid
        self._shared = None                     # its current dynamic threadgroup memory length
        self._lock = threading.Lock()           # launches from several threads share the descriptor
        self.dynamic = plan.dynamic_threadgroup_memory
        # The pipeline's count already includes the kernel's shared arrays (and any threadgroup
        # variable the MSL declares): take the larger, never the sum.
        self.static_shared = max(plan.static_threadgroup_memory, self.pipeline.static_threadgroup_memory)
        self.max_shared = ctx.info.max_threadgroup_memory

    # -- the launch ------------------------------------------------------------------------------

    # ``launch(args, config)`` is generated per plan (``_make_launch``) and bound in __init__.

    def _resolve(self, stream):
        return _streams.resolve(stream, self.ctx)

    def _finish(self, work_id, config, queue, start, bound_arrays):
        """After a submit: the profiler's event, the debug error check, and for host NumPy arguments
        the wait and the copies back."""
        ctx = self.ctx
        if start:
            profiling.emit("launch", name=self.kernel.name, start_ns=start, end_ns=profiling.now_ns(),
                           work_id=work_id, queue=queue, grid=config.griddim, block=config.blockdim)
        if self.error_buffer is not None:
            with ctx.lock:
                ctx.pending_checks[id(self)] = self._check_error_record
        if bound_arrays:
            # NumPy arguments: as numba.cuda, the launch is synchronous and results are copied back.
            _streams.timed_wait(queue, "launch")
            for bound in bound_arrays:
                if bound.copy_back is not None:
                    bound.copy_back()
            _streams.check_faults(ctx)

    def _check(self, config) -> None:
        """Check a launch configuration against this kernel and device (once per pair in a row)."""
        kernel = self.kernel
        if config.nthreads > self.max_threads:
            raise KernelLaunchError(
                f"kernel {kernel.name}(): {config.nthreads} threads per threadgroup {config.blockdim} is "
                f"more than this kernel's maximum of {self.max_threads} on {self.ctx.info.name!r}; use smaller "
                "threadgroups")
        if config.grid_error is not None:
            raise KernelLaunchError(f"kernel {kernel.name}(): {config.grid_error}")
        if self.dynamic:
            sharedmem = config.sharedmem
            total = self.static_shared + _round16(sharedmem)
            if total > self.max_shared:
                raise KernelLaunchError(
                    f"kernel {kernel.name}(): {sharedmem} bytes of dynamic shared memory plus "
                    f"{self.static_shared} static exceed the device's {self.max_shared} bytes of "
                    "threadgroup memory")
        config.checked = self

    def _launch_general(self, args, config, queue):
        """Any array arguments (host arrays are wrapped or copied); raises for bad ones."""
        griddim, blockdim, sharedmem = config.griddim, config.blockdim, config.sharedmem
        if self.dynamic and config.shared_length != self._shared:
            self._set_shared(config.shared_length)
        ctx = self.ctx
        kernel = self.kernel
        bound = {}
        waited_for = None
        self._last = (None,) * len(self._last)  # bindings change here: the next fast launch re-admits
        for argi, i in self.array_args:
            b = bind_array(ctx, args[argi], argi, kernel.name)
            if b.copy_back is not None or b.sync:
                waited_for = waited_for or []
                waited_for.append(b)
            if self._bufs[i] is not b.buffer or self._offs[i] != b.bind_offset:
                self._bind(i, b.buffer, b.bind_offset)
            bound[argi] = b
        try:
            self.packer(args, bound, self.view, sharedmem)
        except (struct.error, OverflowError, TypeError) as e:
            self._pack_error(e)
        if griddim != self._griddim or blockdim != self._blockdim:
            self._set_grid(griddim, blockdim)
        return queue.submit(self.dplan, self.arg_size), waited_for

    def _bind(self, i, buffer, offset):
        self.dplan.set_buffer(i, buffer, offset)
        self._bufs[i] = buffer
        self._offs[i] = offset

    def _set_shared(self, length):
        self.dplan.set_threadgroup_memory([length])
        self._shared = length

    def _set_grid(self, griddim, blockdim):
        self.dplan.set_grid(griddim, blockdim)
        self._griddim = griddim
        self._blockdim = blockdim

    def _pack_error(self, e):
        kernel = self.kernel
        raise KernelLaunchError(f"kernel {kernel.name}(): an argument does not fit its type "
                                f"({', '.join(map(str, kernel.argtypes))}): {e}") from None

    def _check_error_record(self):
        words = np.frombuffer(self.error_buffer.memory(), dtype=np.uint32, count=12)
        if words[0] == 0:
            return
        record = [int(w) for w in words]
        np.frombuffer(self.error_buffer.memory(), dtype=np.uint32)[:] = 0
        names = self.kernel.plan.array_names
        array = names[record[1]] if record[1] < len(names) else "?"
        index = record[8] | (record[9] << 32)
        if index >= 1 << 63:
            index -= 1 << 64
        extent = record[10] | (record[11] << 32)
        line = record[3]
        code = getattr(self.kernel.dispatcher.py_func, "__code__", None)
        filename = code.co_filename if code is not None else "?"
        raise KernelBoundsError(
            f"index {index} is out of bounds for axis {record[2]} with size {extent} in array "
            f"'{array}' of kernel {self.kernel.name}(), thread ({record[4]}, {record[5]}, {record[6]})",
            (filename, line))


def _field_exprs(plan, shape, stride, origin) -> list[str]:
    """Python expressions of the argument block's fields, in order (``shape``, ``stride`` and ``origin``
    format an array argument's parts from its argument index and axis)."""
    exprs = []
    for f in plan.fields:
        kind = f.what[0]
        if kind == "shape":
            exprs.append(shape.format(arg=f.arg, k=f.what[1]))
        elif kind == "stride":
            exprs.append(stride.format(arg=f.arg, k=f.what[1]))
        elif kind == "origin":
            exprs.append(origin.format(arg=f.arg))
        elif kind == "dynshared":
            exprs.append("sharedmem")
        elif kind == "value":
            exprs.append(f"args[{f.arg}]")
        else:  # ("item", i, j, ...)
            exprs.append(f"args[{f.arg}]" + "".join(f"[{i}]" for i in f.what[1:]))
    return exprs


def _make_packer(plan):
    """A function packing the arguments into the argument block with one ``struct.pack_into``
    (array parts from ``bound``: argument index -> BoundArray)."""
    if not plan.fields:
        return lambda args, bound, view, sharedmem: None
    s = struct.Struct(plan.arg_format)
    exprs = _field_exprs(plan, "bound[{arg}].shape[{k}]", "bound[{arg}].strides[{k}]", "bound[{arg}].origin")
    src = f"def pack(args, bound, view, sharedmem):\n    _pack(view, 0, {', '.join(exprs)})\n"
    namespace = {"_pack": s.pack_into}
    exec(compile(src, f"<numba_metal packer {plan.entry_name}>", "exec"), namespace)
    return namespace["pack"]


def _make_launch(plan):
    """The launch function of a plan: ``launch(P, args, L)`` for its LaunchState ``P`` and a
    LaunchConfig ``L``, generated so that the common case (every array argument a device array of this
    device) runs as straight-line code: the configuration check (once per configuration), binding only
    buffers that changed, one ``struct.pack_into`` into the descriptor's preallocated bytes, and one
    submit (one C call). Host NumPy arrays, arrays of another device and bad geometry go through
    ``LaunchState._launch_general``, which handles or raises.

    Arrays identical to the previous launch's (the usual loop) are neither checked nor rebound again:
    a device array's type, device and geometry never change, and their buffers are still bound. New
    arrays go through ``admit``, which checks them, binds what changed and keeps the argument-block
    values they give (shapes, strides, origins).
    """
    arrays = [(a.arg, i) for i, a in enumerate(plan.arrays)]
    # ``profiling.listeners`` is only ever changed in place, so the generated code may hold the list itself.
    namespace = {"_DeviceNDArray": DeviceNDArray, "_StructError": struct.error, "_listeners": profiling.listeners,
                 "_now": profiling.now_ns}
    array_fields = [f for f in plan.fields if f.what[0] in ("shape", "stride", "origin")]
    body = []   # the fast path, inside the lock
    if arrays:
        admit = ["def admit(P, args):", "    ctx = P.ctx"]
        for arg, _ in arrays:
            admit.append(f"    a{arg} = args[{arg}]")
            admit.append(f"    if type(a{arg}) is not _DeviceNDArray or a{arg}.context is not ctx:")
            admit.append("        return False")
        for arg, _ in arrays:
            admit.append(f"    g{arg} = a{arg}.binding()")
        admit.append("    bufs = P._bufs")
        admit.append("    offs = P._offs")
        for arg, i in arrays:
            admit.append(f"    if bufs[{i}] is not a{arg}.buffer or offs[{i}] != g{arg}[0]:")
            admit.append(f"        P._bind({i}, a{arg}.buffer, g{arg}[0])")
        values = _field_exprs(plan, "a{arg}.shape[{k}]", "g{arg}[1][{k}]", "g{arg}[2]")
        values = [v for f, v in zip(plan.fields, values) if f in array_fields]
        admit.append(f"    P._values = ({''.join(v + ', ' for v in values)})")
        admit.append(f"    P._last = ({''.join(f'a{arg}, ' for arg, _ in arrays)})")
        admit.append("    return True")
        exec(compile("\n".join(admit) + "\n", f"<numba_metal launch {plan.entry_name}>", "exec"), namespace)
        namespace["_admit"] = namespace["admit"]
        if array_fields:
            body.append("v = P._values")
    if plan.dynamic_threadgroup_memory:
        body.append("if L.shared_length != P._shared:")
        body.append("    P._set_shared(L.shared_length)")
    if plan.fields:
        exprs, j = [], 0
        for f, e in zip(plan.fields, _field_exprs(plan, "", "", "")):
            if f in array_fields:
                exprs.append(f"v[{j}]")
                j += 1
            else:
                exprs.append("L.sharedmem" if e == "sharedmem" else e)
        if j and exprs[:j] == [f"v[{k}]" for k in range(j)]:
            exprs[:j] = ["*v"]   # the arrays' fields first (the usual layout): unpack them in C
        namespace["_pack"] = struct.Struct(plan.arg_format).pack_into
        body.append("try:")
        body.append(f"    _pack(P.view, 0, {', '.join(exprs)})")
        body.append("except (_StructError, OverflowError, TypeError) as e:")
        body.append("    P._pack_error(e)")
    body.append("griddim = L.griddim")
    body.append("blockdim = L.blockdim")
    body.append("if griddim is not P._griddim or blockdim is not P._blockdim:")
    body.append("    if griddim != P._griddim or blockdim != P._blockdim:")
    body.append("        P._set_grid(griddim, blockdim)")
    body.append("work_id = queue.submit(P.dplan, P.arg_size)")
    body.append("waited_for = None")

    lines = ["def launch(P, args, L):",
             "    start = _now() if _listeners else 0",
             "    if L.checked is not P:",
             "        P._check(L)",
             "    queue = P._queue if L.default_stream else P._resolve(L.stream)",
             "    with P._lock:"]
    if arrays:
        same = " and ".join(f"args[{arg}] is last[{j}]" for j, (arg, _) in enumerate(arrays))
        lines.append("        last = P._last")
        lines.append(f"        if ({same}) or _admit(P, args):")
        lines.extend("            " + b for b in body)
        lines.append("        else:")
        lines.append("            work_id, waited_for = P._launch_general(args, L, queue)")
    else:
        lines.extend("        " + b for b in body)
    lines.append("    if start or waited_for or P.error_buffer is not None:")
    lines.append("        P._finish(work_id, L, queue, start, waited_for)")
    exec(compile("\n".join(lines) + "\n", f"<numba_metal launch {plan.entry_name}>", "exec"), namespace)
    return namespace["launch"]


__all__ = ["LaunchState", "threadgroup_memory_length"]

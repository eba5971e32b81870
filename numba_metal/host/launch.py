"""Launching a specialisation on a device: its launch state, made once per specialisation and device.

A :class:`LaunchState` holds the pipeline (compiled with the kernel's ABI handed to the runtime), a
reusable dispatch descriptor, and the argument encoder generated from the ABI
(:func:`~numba_metal.host.encoder.encoder`). A launch whose array arguments are device arrays
of this device is: the configuration check (once per configuration), the encoder (which rebinds only
arrays that changed and packs the argument struct with one ``struct.pack_into``), and one C call.
Host NumPy arrays, mapped arrays, arrays of another device and bad geometry take the general path,
which binds them (:func:`~numba_metal.host.arguments.bind_array`) or raises.

What a launch configuration must satisfy for this kernel on this device (threads per threadgroup, the
grid's size, threadgroup memory) is checked here, once per configuration and launch state.
"""

from __future__ import annotations

import struct
import threading

from numba_metal.host import profiling
from numba_metal.errors import KernelCompilationError, KernelLaunchError

from . import init_shadow as _init_shadow
from . import streams as _streams
from .arguments import bind_array
from .arrays import DeviceNDArray
from .encoder import StridesDiffer, encoder
from .kernel_output import KernelOutput


def _naming_the_kernel(error: KernelCompilationError, kernel, entry_name: str) -> KernelCompilationError:
    """The device's compiler names the MSL entry point (``kernel nm_k_...()``); the user knows the Python
    kernel and where it is defined."""
    code = getattr(kernel.dispatcher.py_func, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return KernelCompilationError(str(error).replace(f"kernel {entry_name}()", f"kernel {kernel.name}(){where}"))


class LaunchState:
    """Everything a launch of one specialisation on one device needs, made once."""

    def __init__(self, kernel, ctx):
        from numba_metal import runtime
        self.kernel = kernel
        self.ctx = ctx
        abi = kernel.abi
        self.abi = abi
        options = kernel.dispatcher.options
        start = profiling.now_ns() if profiling.listeners else 0
        try:
            self.pipeline = ctx.device.compile(kernel.msl, abi.entry_name, fast_math=options.fastmath,
                                               language_version=abi.language_version, params=abi.params)
        except KernelCompilationError as e:
            raise _naming_the_kernel(e, kernel, abi.entry_name) from None
        if start:
            profiling.emit("compile", name=kernel.name, argtypes=kernel.argtypes, start_ns=start,
                           end_ns=profiling.now_ns(), stage="pipeline", from_cache=bool(self.pipeline.from_cache))
        self.max_threads = self.pipeline.max_total_threads_per_threadgroup
        self.default_max_threads = self.max_threads
        slots = [a.slot for a in abi.arrays]
        error_index = print_index = None
        if abi.error_slot is not None:
            error_index = len(slots)
            slots.append(abi.error_slot)
        if abi.print_slot is not None:
            print_index = len(slots)
            slots.append(abi.print_slot)
        self.dispatch = runtime.DispatchPlan(self.pipeline, slots, abi.arg_slot if abi.arg_slot is not None else 0,
                                             max(abi.arg_size, 1), [0] if abi.dynamic_threadgroup_memory else [],
                                             label=f"{kernel.name} ({abi.entry_name})")
        self.view = self.dispatch.arg_view
        self.arg_size = abi.arg_size
        # A sanitizing kernel (CPU device only): the sanitizer owns the error record's slot.
        self.sanitizer = None
        if kernel.dispatcher.options.sanitize:
            from .sanitizer import LaunchSanitizer
            self.sanitizer = LaunchSanitizer(self, error_index)
            error_index = None
        # debug records and print output, per launching thread
        self.output = None
        if error_index is not None or print_index is not None:
            self.output = KernelOutput(self, error_index, print_index)
        # The stride groups the kernel was compiled for, as pairs of its bound arrays (an argument the
        # kernel does not use is not bound, and nothing of it is assumed)
        slot_of = {a.arg: j for j, a in enumerate(abi.arrays)}
        self.same_strides = []
        for group in kernel.stride_groups:
            js = [slot_of[i] for i in group if i in slot_of]
            self.same_strides += zip(js, js[1:])
        self._encode, self._encode_bound = encoder(abi, self.same_strides)
        self.queue = ctx.default_queue
        n = len(abi.arrays)
        self._with_origin = [a.layout == "A" for a in abi.arrays]
        self._buffers = [None] * n       # what each array slot is bound to (so unchanged ones are not rebound)
        self._offsets = [-1] * n
        self.last = (None,) * n          # the encoder's: the array arguments of the previous launch
        self.values = ()                 # and their argument-struct values
        self.shared_length = None        # the dynamic threadgroup memory bound
        self._griddim = self._blockdim = None   # the descriptor's current grid
        self._lock = threading.Lock()    # launches from several threads share the descriptor
        self._launched = ctx.launched    # the launching thread's flag (see streams.wait_for_host_access)
        # The pipeline's count already includes the kernel's shared arrays (and any threadgroup
        # variable the MSL declares): take the larger, never the sum.
        self.static_shared = max(abi.static_threadgroup_memory, self.pipeline.static_threadgroup_memory)
        self.max_shared = ctx.info.max_threadgroup_memory
        ctx.launch_states.add(self)

    # -- the launch ------------------------------------------------------------------------------

    def launch(self, args, config) -> None:
        start = _now() if _listeners else 0
        if config.checked is not self:
            self._check(config)
        queue = self.queue if config.default_stream else _streams.resolve(config.stream, self.ctx)
        bound = None
        with self._lock:
            try:
                if not self._encode(self, args, config):
                    bound = self._encode_general(args, config)
            except (struct.error, OverflowError, TypeError) as e:
                self._pack_error(e)
            griddim = config.griddim
            blockdim = config.blockdim
            if griddim is not self._griddim or blockdim is not self._blockdim:
                if griddim != self._griddim or blockdim != self._blockdim:
                    self._set_grid(griddim, blockdim)
            output = self.output.bind(queue) if self.output is not None else None
            checked = self.sanitizer.bind(config, args) if self.sanitizer is not None else None
            work_id = queue.submit(self.dispatch, self.arg_size)
        # After the submit: the next host access of device memory waits for this work.
        self.ctx.unwaited = True
        self._launched.flag = True
        if output is not None:
            self.output.pending(output, blockdim)
            if output[0] is not None:   # debug=True: as numba.cuda, the launch waits and raises what it met
                bound = bound or ()
        if checked is not None:
            self.sanitizer.finish(queue, checked)
            if self.kernel.dispatcher.options.debug:   # debug=True: the launch raises what it met, as unsanitized
                bound = bound or ()
        elif _init_shadow.ARMED:   # a launch whose writes the init check does not see: what it may write is
            _init_shadow.mark_written_arguments(self.abi, args)   # written (never a false report)
        if start or bound is not None:
            self._finish(work_id, config, queue, start, bound)

    # The encoder's interface (see encoder.encoder).

    def bind(self, j: int, array):
        """Bind array argument ``j`` if it is a device array of this device; its struct values, else None."""
        if type(array) is not DeviceNDArray or array.context is not self.ctx:
            return None
        offset, strides, origin = array.binding()
        if self._buffers[j] is not array.buffer or self._offsets[j] != offset:
            self._bind(j, array.buffer, offset)
        return array.shape + strides + (origin,) if self._with_origin[j] else array.shape + strides

    def set_shared_length(self, length: int) -> None:
        self.dispatch.set_threadgroup_memory([length])
        self.shared_length = length

    def forget_arrays(self) -> None:
        """Drop the previous launch's array bindings, which keep its arrays' memory alive between launches
        (``current_context().deallocations.clear()``); the next launch binds its arrays again."""
        with self._lock:
            n = len(self.last)
            for j in range(n):
                self.dispatch.clear_buffer(j)
            self._buffers = [None] * n
            self._offsets = [-1] * n
            self.last = (None,) * n
            self.values = ()

    # -- helpers ---------------------------------------------------------------------------------

    def _encode_general(self, args, config):
        """Any array arguments (host arrays are wrapped or copied); raises for bad ones. Returns the
        bindings the launch must wait for (host arrays), or None."""
        ctx = self.ctx
        kernel = self.kernel
        waited_for = None
        values = ()
        self.last = (None,) * len(self.last)  # bindings change here: the next fast launch rebinds
        strides = {}
        for j, a in enumerate(self.abi.arrays):
            b = bind_array(ctx, args[a.arg], a.arg, kernel.name, a.written_at)
            strides[j] = b.strides[:-1]
            if b.copy_back is not None or b.sync:
                waited_for = waited_for or []
                waited_for.append(b)
            if self._buffers[j] is not b.buffer or self._offsets[j] != b.bind_offset:
                self._bind(j, b.buffer, b.bind_offset)
            values += b.shape + b.strides + ((b.origin,) if self._with_origin[j] else ())
        if any(strides[j] != strides[k] for j, k in self.same_strides):
            raise StridesDiffer   # nothing was submitted; host arrays' device copies are dropped
        self._encode_bound(self, values, args, config)
        return waited_for

    def _bind(self, j, buffer, offset):
        self.dispatch.set_buffer(j, buffer, offset)
        self._buffers[j] = buffer
        self._offsets[j] = offset

    def _set_grid(self, griddim, blockdim):
        self.dispatch.set_grid(griddim, blockdim)
        self._griddim = griddim
        self._blockdim = blockdim

    def _finish(self, work_id, config, queue, start, bound):
        """After a submit: the profiler's event, and for host NumPy arguments the wait and the copies
        back."""
        ctx = self.ctx
        if start:
            profiling.emit("launch", name=self.kernel.name, start_ns=start, end_ns=profiling.now_ns(),
                           work_id=work_id, queue=queue, grid=config.griddim, block=config.blockdim,
                           emulated_float64=self.kernel.emulated_float64)
        if bound is not None:
            # NumPy arguments (and debug=True kernels, bound == ()): as numba.cuda, the launch is synchronous
            # and results are copied back.
            _streams.timed_wait(queue, "launch")
            for b in bound:
                if b.copy_back is not None:
                    b.copy_back()
            _streams.check_faults(ctx)

    def _use_variant(self, config) -> None:
        """A launch above the pipeline's maxTotalThreadsPerThreadgroup (Metal's depends on the pipeline's
        register use and can be below 1024): build the kernel again with
        ``[[max_total_threads_per_threadgroup(N)]]`` for the launch's N threads and use that pipeline from now
        on if its maximum covers N; else refuse the launch naming both numbers."""
        n, kernel, abi = config.nthreads, self.kernel, self.abi
        bound = kernel.dispatcher.options.launch_bound
        if bound:   # the user's bound is the kernel's: no variant above it
            raise KernelLaunchError(
                f"kernel {kernel.name}(): {n} threads per threadgroup {config.blockdim} is more than its maximum "
                f"of {self.max_threads} (@metal.jit(launch_bounds={bound}), Metal's "
                "[[max_total_threads_per_threadgroup]]); launch at most that many, or raise the bound")
        device_max = self.ctx.info.max_threads_per_threadgroup
        variant = None
        if n <= device_max:
            from numba_metal.compiler.msl import with_max_threads   # MSL is spelt there; rare, so imported here
            source = with_max_threads(kernel.msl, abi.entry_name, n)
            if source is None:
                raise KernelLaunchError(f"cannot find the entry point {abi.entry_name}() in the kernel's MSL to build "
                                        f"a pipeline for {n} threads per threadgroup")
            options = kernel.dispatcher.options
            try:
                variant = self.ctx.device.compile(source, abi.entry_name, fast_math=options.fastmath,
                                                  language_version=abi.language_version, params=abi.params)
            except KernelCompilationError:
                variant = None
        if variant is None or variant.max_total_threads_per_threadgroup < n:
            built = ("" if n > device_max else " and the pipeline built for it failed to compile" if variant is None
                     else f" and the pipeline built for it reports {variant.max_total_threads_per_threadgroup}")
            raise KernelLaunchError(
                f"kernel {kernel.name}(): {n} threads per threadgroup {config.blockdim} is more than this kernel's "
                f"maximum of {self.default_max_threads} on {self.ctx.info.name!r}{built}; use threadgroups of at "
                f"most {self.default_max_threads} threads")
        self.pipeline = variant
        self.max_threads = variant.max_total_threads_per_threadgroup
        self.dispatch.set_pipeline(variant)

    def _check(self, config) -> None:
        """Check a launch configuration against this kernel and device (once per pair in a row)."""
        kernel = self.kernel
        if config.nthreads > self.max_threads:
            self._use_variant(config)
        if config.grid_error is not None:
            raise KernelLaunchError(f"kernel {kernel.name}(): {config.grid_error}")
        # A launch asks for its dynamic shared memory whether or not the kernel declares any (as CUDA's
        # launch does): more than the device has is refused either way.
        sharedmem = config.sharedmem
        total = self.static_shared + (sharedmem + 15) // 16 * 16
        if total > self.max_shared:
            declares = "" if self.abi.dynamic_threadgroup_memory else " (the kernel declares none)"
            raise KernelLaunchError(
                f"kernel {kernel.name}(): {sharedmem} bytes of dynamic shared memory{declares} plus "
                f"{self.static_shared} static exceed the device's {self.max_shared} bytes of "
                "threadgroup memory")
        config.checked = self

    def _pack_error(self, e):
        kernel = self.kernel
        raise KernelLaunchError(f"kernel {kernel.name}(): an argument does not fit its type "
                                f"({', '.join(map(str, kernel.argtypes))}): {e}") from None


# ``profiling.listeners`` is only ever changed in place, so the launch may hold the list itself.
_listeners = profiling.listeners
_now = profiling.now_ns

__all__ = ["LaunchState"]

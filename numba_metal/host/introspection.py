"""What a kernel can say about its compiled specialisations: numba.cuda's ``get_*`` kernel properties and
``inspect_*`` methods, answered with what Metal (and the CPU reference device) can honestly say.

numba.cuda reads its figures from the CUDA driver's function attributes (``cuFuncGetAttribute``: registers,
constant, shared and local memory, maximum threads per block; numba_cuda/numba/cuda/dispatcher.py,
``_Kernel.regs_per_thread`` and the ``CUDADispatcher.get_*`` methods). A Metal compute pipeline reports two
of them (``MTLComputePipelineState``): ``maxTotalThreadsPerThreadgroup`` and
``staticThreadgroupMemoryLength``; those are answered, for the pipeline built on the current device. Metal
reports no register count, no per-thread private (local) memory and no constant memory size for a pipeline,
so those raise :class:`~numba_metal.errors.UnsupportedFeatureError` saying so, rather than give a number
Metal never stated. PTX, LLVM IR and SASS do not exist for a Metal kernel; ``inspect_msl`` gives its source.

Each ``get_*`` takes numba.cuda's ``signature``: a Numba signature (``void(float32[::1])``), a tuple of
argument types or a signature string gives that specialisation's figure; without one, a specialized kernel
(one explicit signature, or made by ``specialize``) gives its single figure and any other a dict from
argument types to figures, over the specialisations compiled so far.
"""

from __future__ import annotations

from numba_metal.errors import MetalValueError, UnsupportedFeatureError


def _not_on_metal(what: str, instead: str):
    raise UnsupportedFeatureError(f"{what}: Metal does not report it for a compute pipeline, so numba-metal has no "
                                  f"honest figure to give; {instead}")


class KernelIntrospection:
    """numba.cuda's kernel properties and inspection methods (mixed into the kernel's dispatcher)."""

    def _figure(self, signature, name: str):
        if signature is not None:
            return getattr(self._kernel_for_signature(signature), name)
        kernels = self.specializations
        if self.specialized:
            return getattr(next(iter(kernels.values())), name)
        # keyed by numba.cuda's types (an array's without the launch's 32-bit-index fact, arraytypes.plain)
        from numba_metal.compiler.arraytypes import plain
        return {tuple(plain(t) for t in argtypes): getattr(kernel, name) for argtypes, kernel in kernels.items()}

    def _kernel_for_signature(self, signature):
        args = getattr(signature, "args", None)     # a Numba signature; else a string or a tuple of types
        if isinstance(signature, str):
            from numba.core import sigutils
            args, _ = sigutils.normalize_signature(signature)
        elif args is None:
            args = signature
        args = tuple(args)
        kernels = self.specializations
        if args not in kernels and self._eager:
            # a kernel with explicit signatures compiles nothing else (numba.cuda: a KeyError)
            sigs = ", ".join("(" + ", ".join(map(str, s)) + ")" for s in kernels)
            raise MetalValueError(f"kernel {self.__name__}() has no specialisation for ({', '.join(map(str, args))}); "
                                  f"its signatures are: {sigs}")
        return kernels.get(args) or self.compile(args)

    def get_shared_mem_per_block(self, signature=None):
        """Bytes of static threadgroup (shared) memory per threadgroup: the larger of what the kernel's shared
        arrays declare and the pipeline's ``staticThreadgroupMemoryLength`` on the current device (dynamic
        shared memory is a launch's, not the kernel's).

        Raises:
            MetalValueError: ``signature`` is none of the explicit signatures of a kernel that has them.
            KernelCompilationError: as ``jit``: the specialisation for ``signature`` does not compile.
        """
        return self._figure(signature, "shared_mem_per_block")

    def get_max_threads_per_block(self, signature=None):
        """The most threads per threadgroup the kernel's pipeline takes on the current device: Metal's
        ``maxTotalThreadsPerThreadgroup`` (at most the device's limit, less when the pipeline needs many
        registers, and at most ``launch_bounds``). numba-metal launches more, up to the device's limit, by
        building a variant pipeline for them (docs/limitations.md), unless ``launch_bounds`` forbids it.

        Raises:
            MetalValueError: as ``get_shared_mem_per_block``.
            KernelCompilationError: as ``get_shared_mem_per_block``.
        """
        return self._figure(signature, "max_threads_per_block")

    def get_regs_per_thread(self, signature=None):
        """numba.cuda's registers per thread.

        Raises:
            UnsupportedFeatureError: always: Metal does not report a pipeline's registers.
        """
        return KernelFigures.regs_per_thread.fget(None)

    def get_local_mem_per_thread(self, signature=None):
        """numba.cuda's local memory per thread.

        Raises:
            UnsupportedFeatureError: always: Metal does not report a pipeline's private memory.
        """
        return KernelFigures.local_mem_per_thread.fget(None)

    def get_const_mem_size(self, signature=None):
        """numba.cuda's constant memory size.

        Raises:
            UnsupportedFeatureError: always: Metal does not report a pipeline's constant memory.
        """
        return KernelFigures.const_mem_size.fget(None)

    def _unavailable(self, what):
        raise UnsupportedFeatureError(f"kernel.{what}(): there is no {what[len('inspect_'):].upper()} for Metal "
                                      "kernels; kernel.inspect_msl() gives the Metal Shading Language source")

    def inspect_llvm(self, signature=None):
        self._unavailable("inspect_llvm")

    def inspect_asm(self, signature=None):
        self._unavailable("inspect_asm")

    def inspect_sass(self, signature=None):
        self._unavailable("inspect_sass")


class KernelFigures:
    """numba.cuda's per-specialisation properties (``_Kernel.regs_per_thread``...), mixed into the
    specialisation (:class:`~numba_metal.host.kernel.Kernel`); each is read on the current device."""

    def _launch_state_here(self):
        from . import device as _device
        return self.launch_state(_device.selected or _device.current())

    @property
    def shared_mem_per_block(self) -> int:
        return int(self._launch_state_here().static_shared)

    @property
    def max_threads_per_block(self) -> int:
        return int(self._launch_state_here().default_max_threads)

    @property
    def regs_per_thread(self):
        _not_on_metal("registers per thread (numba.cuda's get_regs_per_thread)",
                      "get_max_threads_per_block() gives the pipeline's maxTotalThreadsPerThreadgroup, which "
                      "register use lowers")

    @property
    def local_mem_per_thread(self):
        _not_on_metal("local memory per thread (numba.cuda's get_local_mem_per_thread)",
                      "the kernel's metal.local.array sizes are what it declares")

    @property
    def const_mem_size(self):
        _not_on_metal("constant memory size (numba.cuda's get_const_mem_size)",
                      "the kernel's metal.const.array_like arrays are what it declares")


__all__ = ["KernelIntrospection", "KernelFigures"]

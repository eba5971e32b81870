"""``numba.cuda.cudaimpl``: numba.cuda's registry of LLVM lowerings. numba-metal generates MSL and reads no
LLVM lowering, so ``lower`` here registers into a registry nothing reads: a kernel that needs such a lowering
fails to compile under numba-metal, with its error."""

from numba.core.imputils import Registry

registry = Registry("numba_cuda_standin.cudaimpl")
lower = registry.lower
lower_attr = registry.lower_getattr
lower_constant = registry.lower_constant

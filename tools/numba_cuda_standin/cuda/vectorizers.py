"""``numba.cuda.vectorizers``: where Numba's ``vectorize``/``guvectorize`` look up ``target='cuda'``. Here
they are numba-metal's ``target='metal'`` classes."""

from numba_metal.libraries.vectorize import MetalGUVectorize as CUDAGUFuncVectorize  # noqa: F401
from numba_metal.libraries.vectorize import MetalVectorize as CUDAVectorize  # noqa: F401

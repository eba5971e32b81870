"""``numba.cuda.cudadecl``: numba.cuda's registry of typing templates for its target. numba-metal types kernels
with its own declarations (numba_metal/compiler/declarations.py) and reads no other target's registry, so
``registry`` here is one nothing reads (as ``cudaimpl``'s lowerings): a test that extends numba.cuda's typing
through it fails when its kernel compiles, with numba-metal's error."""

from numba.core.typing.templates import Registry

registry = Registry()
register = registry.register
register_attr = registry.register_attr
register_global = registry.register_global

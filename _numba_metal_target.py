"""``target='metal'`` for ``numba.vectorize`` and ``numba.guvectorize``, in programs that never import
numba_metal.

Numba looks its ufunc targets up in registries filled when ``numba.np.ufunc.decorators`` is imported; it
runs its ``numba_extensions`` entry points only when it first compiles a function, which
``numba.vectorize(..., target='metal')`` does not do first. So ``numba_metal_target.pth``, installed beside
this module, imports it at interpreter start-up and :func:`install` waits for that module to be imported,
then registers the target. Registration loads nothing: ``numba_metal.libraries.vectorize`` is imported when the
target is first used. This module imports only ``sys``, so every Python process of the environment pays
under a millisecond for it (0.7-0.8 ms by ``python -X importtime`` with cached bytecode, on a
shared 2-core x86-64 VM under load). numba_metal itself calls :func:`install` on import, so the
target is known whatever the order of imports.
"""

import sys

_DECORATORS = "numba.np.ufunc.decorators"


def _loader(name):
    def load():
        from numba_metal.libraries import vectorize
        return getattr(vectorize, name)
    return load


def register() -> None:
    """Make ``target='metal'`` known to Numba's ufunc decorators now (idempotent; also the
    ``numba_extensions`` entry point)."""
    from numba.np.ufunc.decorators import GUVectorize, Vectorize
    for registry, name in ((Vectorize.target_registry, "MetalVectorize"),
                           (GUVectorize.target_registry, "MetalGUVectorize")):
        if "metal" not in registry and "metal" not in registry.ondemand:
            registry.ondemand["metal"] = _loader(name)


class _RegisterWhenImported:
    """A one-shot import hook: registers the target right after Numba's ufunc decorators are loaded."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _DECORATORS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                exec_loaded = spec.loader.exec_module

                def exec_module(module, exec_loaded=exec_loaded):
                    exec_loaded(module)
                    _uninstall()
                    register()

                spec.loader.exec_module = exec_module
                return spec
        return None


_hook = _RegisterWhenImported()


def _uninstall() -> None:
    try:
        sys.meta_path.remove(_hook)
    except ValueError:
        pass


def install() -> None:
    """Register the target now if Numba's ufunc decorators are loaded, else as soon as they are."""
    if _DECORATORS in sys.modules:
        register()
    elif _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)

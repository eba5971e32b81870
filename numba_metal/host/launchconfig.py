"""numba.cuda's ``numba.cuda.launchconfig``: the launch configuration a kernel is being compiled for.

numba-cuda 0.30 lets code that runs while a launch compiles its kernel (an override of the dispatcher's
``_compile_for_args``, a compiler extension) read the launch's configuration: it is set, per thread, only
while a launch compiles (numba_cuda/numba/cuda/launchconfig.py). numba-metal does the same: a launch that
finds no specialisation for its arguments calls the dispatcher's ``_compile_for_args`` with the
configuration (``kernel[blocks, threads]``) and its arguments set for the calling thread, and clears them
after. numba-metal's compiler itself never depends on the configuration, so a kernel compiles once per
argument types whatever the configuration.

Reachable as ``numba_metal.metal.launchconfig``.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import types

from numba_metal.errors import DispatcherStateError, MetalTypeError

_state = threading.local()


def current_launch_config():
    """The launch configuration (``kernel[blocks, threads]``) whose launch is compiling its kernel on this
    thread, or None outside such a compilation.

    Raises:
        nothing: it reads the calling thread's state.
    """
    return getattr(_state, "config", None)


def ensure_current_launch_config():
    """:func:`current_launch_config`, which must be set.

    Raises:
        DispatcherStateError: no launch is compiling on this thread (also ``RuntimeError``, numba.cuda's).
    """
    config = current_launch_config()
    if config is None:
        raise DispatcherStateError("No launch config set for this thread: the launch configuration is only known "
                                   "while a launch compiles its kernel (in the dispatcher's _compile_for_args)")
    return config


def current_launch_args():
    """The arguments of the launch compiling its kernel on this thread, or None (a configuration's ``args``)."""
    return getattr(_state, "args", None)


def compile_for_launch(dispatcher, config, args):
    """``dispatcher._compile_for_args(*args)`` with ``config`` and ``args`` as this thread's current launch
    (the launch path's, for argument types it has no specialisation for)."""
    previous = (getattr(_state, "config", None), getattr(_state, "args", None))
    _state.config, _state.args = config, args
    try:
        return dispatcher._compile_for_args(*args)
    finally:
        _state.config, _state.args = previous


@contextlib.contextmanager
def capture_compile_config(dispatcher):
    """Record the launch configuration a launch of ``dispatcher`` compiles for while the block runs: the
    yielded dict's ``"config"`` is set when a launch compiles (it stays None if every launch finds its
    specialisation already compiled). The dispatcher's ``_compile_for_args`` is restored after.

    Raises:
        MetalTypeError: ``dispatcher`` is None (also ``TypeError``, numba.cuda's).
    """
    if dispatcher is None:
        raise MetalTypeError("capture_compile_config: dispatcher is required")
    record = {"config": None}
    had_own = "_compile_for_args" in vars(dispatcher)
    own = vars(dispatcher).get("_compile_for_args")
    original = dispatcher._compile_for_args

    @functools.wraps(original)
    def recording(self, *args, **kwargs):
        record["config"] = current_launch_config()
        return original(*args, **kwargs)

    dispatcher._compile_for_args = types.MethodType(recording, dispatcher)
    try:
        yield record
    finally:
        if had_own:
            dispatcher._compile_for_args = own
        else:
            del dispatcher._compile_for_args


__all__ = ["current_launch_config", "ensure_current_launch_config", "capture_compile_config"]

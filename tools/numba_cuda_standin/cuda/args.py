"""``numba.cuda.args``: the argument hints ``In``/``Out``/``InOut`` and their base ``ArgHint`` are numba-metal's
(``metal.In``...). ``wrap_arg`` is numba.cuda's helper for argument-preparation extensions (``prepare_args``
objects in ``kernel.extensions``), which numba-metal does not have: adding one to ``kernel.extensions`` raises
``UnsupportedFeatureError``, so a test relying on an extension fails there."""

from numba_metal.host.arguments import ArgHint, In, InOut, Out  # noqa: F401


def wrap_arg(value, default=InOut):
    """numba.cuda's: ``value`` if it is already a hint, else ``default(value)``."""
    return value if isinstance(value, ArgHint) else default(value)

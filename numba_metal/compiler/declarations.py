"""The registry of numba-metal's typing declarations, which the kernel-API families fill.

Each family declares the Numba types of its functions here, next to their MSL lowering (which goes to
:mod:`.lowering`'s registry); the typing context (:mod:`.typing`) installs this registry when it is
built. Both registries are leaves: a family imports them, never the typing context, so the compiler's
one reach up to the kernel API (the typing context loading the families) closes no import cycle.
"""

from __future__ import annotations

from numba.core.typing import templates

#: numba-metal's own typing declarations (kernel-API stubs, Python builtins, ``math``).
registry = templates.Registry()

__all__ = ["registry"]

"""The launch plan: what the host must bind and pack to launch a compiled kernel.

Code generation produces it next to the MSL; the host API turns it, once per specialisation, into a
packer that fills the argument block with a single ``struct.pack_into``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ArgField:
    """One scalar in the packed argument block.

    ``arg`` is the Python argument index; ``what`` says which part of that argument it holds:
    ``("value",)`` for a scalar, ``("item", i, j, ...)`` for a (nested) tuple element,
    ``("shape", k)``, ``("stride", k)`` (in elements) or ``("origin",)`` (element offset of
    ``a[0, ..., 0]`` from the bound byte offset) for an array.
    """

    name: str
    arg: int
    what: tuple
    msl_type: str
    size: int
    code: str  # struct-module code


@dataclass(frozen=True)
class ArrayBinding:
    """An array argument bound to a ``[[buffer(slot)]]``."""

    arg: int
    slot: int
    name: str
    dtype: str
    ndim: int
    layout: str


@dataclass
class LaunchPlan:
    entry_name: str
    arrays: list[ArrayBinding] = field(default_factory=list)
    fields: list[ArgField] = field(default_factory=list)
    arg_slot: int | None = None          # [[buffer(i)]] of the argument block, None if no fields
    arg_format: str = "<"                # struct format of the whole block (no padding needed)
    arg_size: int = 0
    error_slot: int | None = None        # debug=True: the error-record buffer's slot
    static_threadgroup_memory: int = 0   # bytes of metal.shared.array declarations
    dynamic_threadgroup_memory: bool = False  # the kernel uses shared memory sized by the launch
    array_names: list[str] = field(default_factory=list)  # debug reports: array id -> name
    language_version: int = 0            # MSL version x 100 the kernel needs (0: the device's default)


@dataclass(frozen=True)
class CompiledKernel:
    """What the compiler makes of a kernel for one tuple of argument types: the MSL, the launch plan,
    and the typed IR it was lowered from (None when its owner rebuilt it without typing, e.g. from a
    disk cache entry)."""

    source: str
    plan: LaunchPlan
    typed: object = None

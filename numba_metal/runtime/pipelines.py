"""Pipelines: a compiled kernel and its limits, and the kernel parameters its compiler laid out."""

from __future__ import annotations

from typing import NamedTuple

from ._loader import load
from .status import raise_status


class KernelParam(NamedTuple):
    """One kernel parameter as its compiler laid it out (nm_kernel_param)."""

    kind: int          # PARAM_*
    index: int         # [[buffer(i)]] or [[threadgroup(i)]] index; 0 for built-ins
    size: int          # PARAM_ARGUMENT_BLOCK: the bytes the host packs; else 0
    type: str          # the MSL type as declared, e.g. "device float*"
    name: str
    builtin: str | None = None  # PARAM_BUILTIN: the attribute, e.g. "thread_position_in_grid"



class Pipeline:
    """A compiled kernel."""

    def __init__(self, device: "Device", handle, kernel_name: str):
        ffi, lib = load()
        self.device = device
        self.handle = handle
        self.kernel_name = kernel_name
        info = ffi.new("nm_pipeline_info *")
        rc = lib.nm_pipeline_get_info(handle, info)
        if rc:
            raise_status(rc)
        self.max_total_threads_per_threadgroup = int(info.max_total_threads_per_threadgroup)
        self.thread_execution_width = int(info.thread_execution_width)
        self.static_threadgroup_memory = int(info.static_threadgroup_memory)
        self.from_cache = bool(info.from_cache)
        self.compile_ns = int(info.compile_ns)

    def __del__(self):
        h, self.handle = getattr(self, "handle", None), None
        if h is not None:
            try:
                load()[1].nm_pipeline_release(h)
            except Exception:
                pass

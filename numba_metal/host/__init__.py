"""The host API: everything of ``metal.<name>`` that runs outside kernels, one module per concern
(docs/architecture.md lists them). Decorators and dispatch, launches and their arguments, device
arrays, devices, streams and events, the disk cache and the profiler event stream; it uses the
compiler and the runtime binding, and the public namespace (:mod:`numba_metal.metal`) exports it."""

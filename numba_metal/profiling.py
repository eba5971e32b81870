"""Runtime events for profilers: compiles, launches, copies, allocations and waits (this module is the
public name of the host layer's event stream, :mod:`numba_metal.host.profiling`).

A listener is a callable ``listener(event)`` receiving an :class:`Event`. With no listener
registered the host code pays one truth test of :data:`listeners` per event site and nothing else.

Event kinds and their fields (times are ``numba_metal.runtime.now_ns()`` nanoseconds, the clock of
device timestamps):

``compile``  name, argtypes, start_ns, end_ns, stage ('python' for typing + MSL generation,
             'pipeline' for the device compile), from_cache (bool)
``launch``   name, start_ns, end_ns (host time spent in the launch call), work_id, queue (use
             ``queue.timestamps(work_id)`` after a wait for device start/end), grid, block
``copy``     direction ('h2d', 'd2h', 'd2d'), nbytes, start_ns, end_ns
``alloc``    nbytes, start_ns, end_ns
``wait``     what ('synchronize', 'stream', 'event', 'copy', 'launch'), start_ns, end_ns
"""

from numba_metal.host.profiling import *  # noqa: F401,F403
from numba_metal.host.profiling import __all__  # noqa: F401

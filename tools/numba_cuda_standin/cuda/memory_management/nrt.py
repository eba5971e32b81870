"""``numba.cuda.memory_management.nrt``: ``rtsys``, numba.cuda's NRT with its allocation statistics, which
numba-cuda's ``MemoryLeakMixin`` compares before and after a test. numba-metal has no NRT, so nothing is ever
allocated through one: ``get_allocation_stats()`` is all zeros, which is numba-metal's true count, and the leak
check never decides a test (the test's own assertions do)."""

from collections import namedtuple

_nrt_mstats = namedtuple("nrt_mstats", ["alloc", "free", "mi_alloc", "mi_free"])


class _NoNRT:
    """numba-metal's (absent) NRT, with numba.cuda's ``rtsys`` methods the tests call."""

    def memsys_enable_stats(self):
        pass

    def memsys_disable_stats(self):
        pass

    def memsys_stats_enabled(self):
        return True

    def get_allocation_stats(self):
        return _nrt_mstats(0, 0, 0, 0)


rtsys = _NoNRT()

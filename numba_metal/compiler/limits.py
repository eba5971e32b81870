"""Launch limits that the host enforces at every launch and the compiler relies on (the value ranges of
thread and threadgroup positions, :mod:`.ranges`). No imports: the launch path reads them.
"""

#: Threads along one axis of a grid: Metal's ``thread_position_in_grid`` is a ``uint``.
MAX_GRID_THREADS_PER_AXIS = 2 ** 32 - 1

#: Threadgroups along one axis of a grid: ``blockIdx`` and ``gridDim`` are int32 (as in numba.cuda), and
#: CUDA's own limit on ``gridDim.x`` is the same.
MAX_THREADGROUPS_PER_AXIS = 2 ** 31 - 1

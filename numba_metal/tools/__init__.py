"""Tools built on numba-metal's public API: the ``numba-metal`` command (:mod:`.cli`), the machine check
(:mod:`.doctor`), the advisor (:mod:`.advisor`) and the build of the runtime library (:mod:`.build`,
``python -m numba_metal.tools.build``). Nothing below this layer imports it."""

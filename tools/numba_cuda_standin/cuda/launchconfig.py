"""``numba.cuda.launchconfig``: numba-metal's (``numba_metal.metal.launchconfig``)."""

from numba_metal.metal import launchconfig as _launchconfig

current_launch_config = _launchconfig.current_launch_config
ensure_current_launch_config = _launchconfig.ensure_current_launch_config
capture_compile_config = _launchconfig.capture_compile_config

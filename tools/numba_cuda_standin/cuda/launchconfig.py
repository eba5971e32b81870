"""``numba.cuda.launchconfig``: numba-cuda 0.30's access to the launch configuration a kernel is being compiled
for. numba-metal has no counterpart; every function raises saying so (the module imports, so the other tests of
a module that imports it still run)."""


def _missing(name):
    def refuse(*args, **kwargs):
        from numba_metal.errors import UnsupportedFeatureError
        raise UnsupportedFeatureError(f"numba.cuda.launchconfig.{name}: numba-metal has no counterpart "
                                      "(numba_cuda_standin)")
    refuse.__name__ = name
    return refuse


current_launch_config = _missing("current_launch_config")
ensure_current_launch_config = _missing("ensure_current_launch_config")
capture_compile_config = _missing("capture_compile_config")

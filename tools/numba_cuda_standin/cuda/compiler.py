"""``numba.cuda.compiler``: numba.cuda's PTX compilers, which produce NVIDIA code; each raises saying so."""


def _nvidia(name):
    def refuse(*args, **kwargs):
        from numba_metal.errors import UnsupportedFeatureError
        raise UnsupportedFeatureError(f"numba.cuda.compiler.{name} produces PTX; numba-metal generates MSL "
                                      "(metal.compile_msl) (numba_cuda_standin)")
    refuse.__name__ = name
    return refuse


compile_ptx = _nvidia("compile_ptx")
compile_ptx_for_current_device = _nvidia("compile_ptx_for_current_device")
compile = _nvidia("compile")

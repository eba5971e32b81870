"""Installs the ``numba.cuda`` stand-in in every Python process the runner starts (its PYTHONPATH holds this
folder), so Python subprocesses that numba-cuda's tests start (``python -c "from numba import cuda..."``) get
it too. Does nothing unless ``NUMBA_CUDA_TESTS_ROOT`` is set."""

import os

if os.environ.get("NUMBA_CUDA_TESTS_ROOT"):
    from numba_cuda_standin.plugin import install

    install(os.environ["NUMBA_CUDA_TESTS_ROOT"])

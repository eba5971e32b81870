"""A ``numba.cuda`` stand-in for running numba-cuda's own tests, unchanged, on numba-metal.

``plugin`` (a pytest plugin loaded with ``-p numba_cuda_standin.plugin`` by ``tools/numba_cuda_tests.py``) makes
``numba.cuda`` this directory's ``cuda`` package, whose names are ``numba_metal.metal``'s; ``impossible`` is the
table of the tests skipped because what they test cannot exist on Metal, each with its reason. Nothing here is
numba-cuda's code: its tests are downloaded at run time and never committed.
"""

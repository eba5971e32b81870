"""Kernels several test modules launch for the same purpose: a visible change to every element, and work
long enough that a host read not waiting for it would see the old values. Tests import them by module
name (pytest puts tests/, where the root conftest.py is, on sys.path)."""

from numba_metal import metal


@metal.jit
def add_one(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] += 1


@metal.jit
def spin_then_set(a, n, value):
    """a[i] = value after a loop of n steps whose result is discarded (so the kernel takes a while)."""
    i = metal.grid(1)
    if i < a.size:
        acc = 0
        for k in range(n):
            acc += k % 7
        a[i] = value + acc * 0

"""The kernel language end to end: statements and control flow, checked against Python/NumPy."""

import numpy as np
import pytest

from numba_metal import metal


def run1(kernel, *arrays, n=None, threads=64):
    """Launch a 1-D kernel over n threads with NumPy arrays (synchronous: results copied back)."""
    n = n if n is not None else arrays[-1].size
    kernel[(n + threads - 1) // threads, threads](*arrays)
    return arrays


@metal.jit
def assignments_and_tuples(a, out):
    i = metal.grid(1)
    if i < out.shape[0]:
        x = a[i]
        y, z = x + 1, x * 2          # tuple packing/unpacking
        t = (y, z, i)
        p, q, r = t
        p += q                       # augmented assignment
        p -= 1
        p *= 2
        p //= 3
        out[i, 0] = p
        out[i, 1] = t[2]
        out[i, 2] = len(t)


def test_assignment_tuples_augmented_assignment():
    a = np.arange(50, dtype=np.int64) - 20
    out = np.zeros((50, 3), dtype=np.int64)
    run1(assignments_and_tuples, a, out, n=50)
    exp = np.array([[(((x + 1) + x * 2) - 1) * 2 // 3, i, 3] for i, x in enumerate(a)])
    np.testing.assert_array_equal(out, exp)


@metal.jit
def branches(a, out):
    i = metal.grid(1)
    if i >= a.size:
        return
    x = a[i]
    if x < -5:
        r = 0
    elif x < 0:
        r = 1
    elif x == 0:
        r = 2
    else:
        r = 3
    r += 10 if x % 2 == 0 else 20      # conditional expression
    if 0 < x < 4 or not (x > -2):      # chained comparison, or, not
        r += 100
    if x > 2 and x < 6 and x != 4:
        r += 1000
    out[i] = r


def test_if_elif_else_conditional_expression_chained_comparisons():
    a = np.arange(-10, 10, dtype=np.int32)
    out = np.zeros(20, dtype=np.int32)
    run1(branches, a, out)

    def ref(x):
        r = 0 if x < -5 else 1 if x < 0 else 2 if x == 0 else 3
        r += 10 if x % 2 == 0 else 20
        if 0 < x < 4 or not (x > -2):
            r += 100
        if x > 2 and x < 6 and x != 4:
            r += 1000
        return r

    np.testing.assert_array_equal(out, [ref(int(x)) for x in a])


@metal.jit
def for_loops(n, out):
    i = metal.grid(1)
    if i < out.shape[0]:
        s = 0
        for j in range(n):                    # 1 argument, runtime bound
            s += j
        for j in range(i, n):                 # 2 arguments
            s += 2 * j
        for j in range(n, -3, -2):            # negative step
            s += 3 * j
        for j in range(i, 3 * n, i + 1):      # runtime step
            s -= j
        out[i] = s


def test_for_range_one_two_three_arguments_any_step_sign():
    out = np.zeros(16, dtype=np.int64)
    n = 9
    for_loops[1, 16](n, out)

    def ref(i):
        s = sum(range(n)) + sum(2 * j for j in range(i, n)) + sum(3 * j for j in range(n, -3, -2))
        return s - sum(range(i, 3 * n, i + 1))

    np.testing.assert_array_equal(out, [ref(i) for i in range(16)])


@metal.jit
def loops_with_break_continue_else(a, out):
    i = metal.grid(1)
    if i < a.size:
        x = a[i]
        found = -1
        for j in range(20):
            if j % 3 == 0:
                continue
            if j * j > x:
                found = j
                break
        else:
            found = 99
        k = 0
        while k < 50:
            k += 1
            if k == x:
                break
            if k % 2:
                continue
            k += 1
        else:
            k = -k
        out[i, 0] = found
        out[i, 1] = k


def test_break_continue_and_loop_else():
    a = np.array([0, 1, 5, 17, 49, 50, 361, 400, 1000], dtype=np.int64)
    out = np.zeros((a.size, 2), dtype=np.int64)
    run1(loops_with_break_continue_else, a, out, n=a.size)

    def ref(x):
        found = -1
        for j in range(20):
            if j % 3 == 0:
                continue
            if j * j > x:
                found = j
                break
        else:
            found = 99
        k = 0
        while k < 50:
            k += 1
            if k == x:
                break
            if k % 2:
                continue
            k += 1
        else:
            k = -k
        return found, k

    np.testing.assert_array_equal(out, [ref(int(x)) for x in a])


@metal.jit
def newton(x0, out):
    # `if a or b: break` inside `while`: the shape that broke the earlier numba-metal.
    i = metal.grid(1)
    if i < x0.size:
        x = x0[i]
        n = 0
        while True:
            fx = x * x - 2.0
            x = x - fx / (2.0 * x)
            n += 1
            if abs(fx) < 1e-6 or n > 40:
                break
        out[i] = x


def test_break_reached_from_both_sides_of_or():
    x0 = np.linspace(0.5, 40, 300).astype(np.float32)
    out = np.zeros_like(x0)
    run1(newton, x0, out)
    np.testing.assert_allclose(out, np.sqrt(np.float32(2)), rtol=1e-6)


@metal.jit
def early_returns(a, out):
    i = metal.grid(1)
    if i >= a.size:
        return
    for j in range(10):
        for k in range(10):
            if j * 10 + k == a[i]:
                out[i] = j - k
                return
    out[i] = -100


def test_return_inside_nested_loops():
    a = np.array([0, 5, 37, 99, 150, -1], dtype=np.int32)
    out = np.zeros(6, dtype=np.int32)
    run1(early_returns, a, out)
    exp = [(x // 10) - (x % 10) if 0 <= x < 100 else -100 for x in a]
    np.testing.assert_array_equal(out, exp)


@metal.jit
def fibonacci_swaps(n, out):
    i = metal.grid(1)
    if i < out.size:
        a, b = 0, 1
        for _ in range(i):
            a, b = b, a + b        # loop-carried tuple swap
        c, d = 1.5, -2.5
        for _ in range(i % 3):
            c, d = d, c
        out[i] = a + int(c)


def test_loop_carried_tuple_swaps():
    out = np.zeros(40, dtype=np.int64)
    fibonacci_swaps[1, 64](0, out)

    def ref(i):
        a, b = 0, 1
        for _ in range(i):
            a, b = b, a + b
        c, d = 1.5, -2.5
        for _ in range(i % 3):
            c, d = d, c
        return a + int(c)

    np.testing.assert_array_equal(out, [ref(i) for i in range(40)])


SCALE = 3
OFFSETS = (10, 20, 30)


def make_closure_kernel(k):
    @metal.jit
    def closure_kernel(out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = i * SCALE + OFFSETS[i % 3] + k      # module globals and a closure variable
    return closure_kernel


def test_module_globals_and_closure_variables_are_compile_time_constants():
    out = np.zeros(10, dtype=np.int64)
    make_closure_kernel(1000)[1, 16](out)
    np.testing.assert_array_equal(out, [i * 3 + (10, 20, 30)[i % 3] + 1000 for i in range(10)])
    out2 = np.zeros(10, dtype=np.int64)
    make_closure_kernel(-5)[1, 16](out2)
    np.testing.assert_array_equal(out2, [i * 3 + (10, 20, 30)[i % 3] - 5 for i in range(10)])


@metal.jit
def numpy_scalar_constructors(a, out_f, out_u):
    i = metal.grid(1)
    if i < a.size:
        out_f[i] = np.float32(a[i]) / np.float32(3)
        out_u[i] = np.uint32(a[i]) + np.uint32(3)


def test_numpy_scalar_constructors():
    a = np.arange(-5, 5, dtype=np.int64)
    of = np.zeros(10, np.float32)
    ou = np.zeros(10, np.uint32)
    numpy_scalar_constructors[1, 16](a, of, ou)
    np.testing.assert_array_equal(of, a.astype(np.float32) / np.float32(3))
    np.testing.assert_array_equal(ou, a.astype(np.uint32) + np.uint32(3))


def test_deeply_nested_control_flow_matches_python():
    src = """
def body(x):
    r = 0
    for m in range(4):
        if x % (m + 2) == 0:
            continue
        b = 0
        while b < 6:
            b += 1
            if (x + b) % 5 == 0 or (x - m) % 7 == 0:
                if b > 3:
                    break
                r += 1
                continue
            elif x > 50 and not (b % 2):
                r -= 2
            else:
                r += b
        else:
            r += 100
        if r > 200:
            return r
    return -r
"""
    ns = {}
    exec(src, ns)
    ref = ns["body"]
    kernel_src = src.replace("def body(x):", "def body_k(a, out):\n    i = metal.grid(1)\n    if i >= a.size:\n        return\n    x = a[i]")
    kernel_src = kernel_src.replace("return r", "out[i] = r\n            return").replace("return -r", "out[i] = -r")
    kns = {"metal": metal}
    exec(kernel_src, kns)
    k = metal.jit(kns["body_k"])
    a = np.arange(0, 120, dtype=np.int64)
    out = np.zeros_like(a)
    k[2, 64](a, out)
    np.testing.assert_array_equal(out, [ref(int(x)) for x in a])

"""A failing batch as a standalone, runnable Python script.

The script holds the generated kernel source, every input value (floats written exactly, as hex),
the launch, and the reference's expected values for the outputs that differed. It needs only
numba-metal (and NumPy); run it with ``NUMBA_METAL_DEVICE=cpu python repro.py``. It exits with
status 1 while the bug is present and prints what differs.
"""

from __future__ import annotations

import textwrap

import numpy as np

from . import gen as G
from . import harness as H


def _array_literal(a: np.ndarray) -> str:
    dt = a.dtype
    flat = a.reshape(-1)
    if dt.kind == "f":
        items = ", ".join(f"float.fromhex({float(x).hex()!r})" for x in flat)
    elif dt.kind == "b":
        items = ", ".join("True" if x else "False" for x in flat)
    else:
        items = ", ".join(str(int(x)) for x in flat)
    return f"np.array([{items}], dtype=np.{dt.name}).reshape({tuple(a.shape)})"


def _scalar_literal(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(_scalar_literal(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        return f"float.fromhex({v.hex()!r})"
    if isinstance(v, np.generic):
        if v.dtype.kind == "f":
            return f"np.{v.dtype.name}(float.fromhex({float(v).hex()!r}))"
        if v.dtype.kind == "b":
            return f"np.bool_({bool(v)})"
        return f"np.{v.dtype.name}({int(v)})"
    raise TypeError(type(v))


_PASS_FN = '''
def _pass(value, mode):
    """Pass an argument the way the failing run did (device copy, NumPy array, strided view...)."""
    if not isinstance(value, np.ndarray) or mode == "numpy":
        return value
    if mode == "F":
        return metal.to_device(np.asfortranarray(value))
    if mode == "strided":
        base = np.zeros((value.shape[0] * 2,) + value.shape[1:], dtype=value.dtype)
        base[::2] = value[::-1]
        return metal.to_device(base)[-2::-2]
    return metal.to_device(value)


def _host(arg):
    return arg.copy_to_host() if hasattr(arg, "copy_to_host") else arg


def _same(dev, ref, err):
    dev, ref = float(dev), float(ref)
    if ref != ref:
        return dev != dev
    if dev != dev:
        return False
    if err == 0.0:
        return dev == ref and math.copysign(1.0, dev) == math.copysign(1.0, ref)
    if math.isinf(dev):
        return (dev > 0) == (ref > 0) and abs(ref) + err >= 3.4028234663852886e38
    return abs(dev - ref) <= err
'''


def reproducer(batch: G.Batch, outcome: H.Outcome, origin: str = "") -> str:
    inputs = H.make_inputs(batch)
    names = G.arg_names()
    body = [line for line in batch.source.splitlines()
            if line not in ("import math", "import numpy as np", "from numba_metal import metal")]
    lines = ['"""numba-metal differential-test reproducer.', ""]
    if origin:
        lines.append(origin)
    lines.append(f"Failure ({outcome.kind}):")
    lines += ["    " + ln for ln in textwrap.wrap(outcome.message[:1500], 96)]
    lines += ["", "Run: NUMBA_METAL_DEVICE=cpu python <this file>   (exit status 1 while the bug is present)",
              '"""', "", "import math", "import sys", "", "import numpy as np", "",
              "from numba_metal import metal", ""]
    lines += body
    lines.append(_PASS_FN)
    lines.append("")
    lines.append("inputs = {")
    for n in names:
        v = inputs[n]
        lit = _array_literal(v) if isinstance(v, np.ndarray) else _scalar_literal(v)
        lines.append(f"    {n!r}: {lit},")
    lines.append("}")
    lines.append(f"passing = {dict((n, m) for n, m in batch.passing.items())!r}")
    lines.append(f"names = {names!r}")
    lines.append("args = [_pass(inputs[n], passing.get(n, 'device')) for n in names]")
    lines.append(f"{batch.kernel_name}[{batch.griddim}, {batch.blockdim}](*args)")
    lines.append("metal.synchronize()")
    lines.append("out = {n: _host(a) for n, a in zip(names, args)}")
    if outcome.kind == "mismatch":
        lines.append("# (array, index, reference value, allowed error); the reference is the same source run")
        lines.append("# in Python with Numba's typing and float32 arithmetic (tests/differential/semantics.py).")
        lines.append("expected = [")
        for m in outcome.mismatches[:40]:
            ref = m.reference
            if isinstance(ref, (np.floating, float)):
                rl = f"float.fromhex({float(ref).hex()!r})"
            elif isinstance(ref, (np.bool_, bool)):
                rl = repr(bool(ref))
            elif isinstance(ref, np.ndarray):
                rl = repr(ref.tolist())
            else:
                rl = repr(int(ref))
            lines.append(f"    ({m.array!r}, {tuple(m.index)!r}, {rl}, {m.error!r}),")
        lines.append("]")
        lines.append("bad = 0")
        lines.append("for name, index, ref, err in expected:")
        lines.append("    got = out[name][index]")
        lines.append("    if not _same(got, ref, err):")
        lines.append("        bad += 1")
        lines.append("        print(f'{name}{list(index)}: numba-metal {got!r}, expected {ref!r}' + "
                     "(f' ± {err:.3g}' if err else ''))")
        lines.append("print('FAIL' if bad else 'ok (the bug is fixed)')")
        lines.append("sys.exit(1 if bad else 0)")
    else:
        lines.append("print('ok (the kernel compiled and ran)')")
    return "\n".join(lines) + "\n"

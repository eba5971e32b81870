"""Issue 24, item 6: a crash of the CPU device's C++ compiler is a short error naming the Python kernel,
leaves nothing in the temporary directory, and a large constant tuple indexed at run time compiles."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelCompilationError

TABLE = tuple(float(i) * 0.5 for i in range(3000))


def test_a_3000_element_constant_tuple_indexed_at_run_time_compiles():
    # Indexed by a chain of 3,000 nested selects, clang's parser overflowed its stack (46 KB of stack dump);
    # a balanced tree of selects is 12 deep.
    @metal.jit
    def lookup(idx, out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = TABLE[idx[i]]

    idx = np.array([0, 1, 1499, 2999, -1, -3000], np.int64)
    out = np.zeros(idx.size, np.float64)
    lookup[1, 8](idx, out)
    assert out.tolist() == [TABLE[int(i)] for i in idx]


FAKE_CLANG = """#!/bin/sh
# A C++ compiler that crashes as clang does: a reproducer in TMPDIR, a request for a bug report, a stack dump.
for a in "$@"; do [ "$a" = "--version" ] && { echo "clang version 19.1.0"; exit 0; }; done
# It compiles the runtime's probe of a new compiler (a small unit, probe.cpp), as a clang that crashes on
# one kernel does; it crashes on kernels.
case "$*" in *probe.cpp*) exit 0;; esac
echo 'int main;' > "${TMPDIR:-/tmp}/kernel-crash-repro.cpp"
echo "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace." >&2
echo "Stack dump:" >&2
echo "0.	Program arguments: clang++ -x c++ kernel.cpp" >&2
echo "1.	kernel.cpp:4000:1: current parser token ';'" >&2
i=0; while [ $i -lt 2000 ]; do echo "#$i 0x000055d0c0ffee00 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int)" >&2; i=$((i+1)); done
echo "clang++: error: clang frontend command failed with exit code 139 (use -v to see invocation)" >&2
kill -SEGV $$
"""

PROGRAM = textwrap.dedent("""
    import numpy as np
    from numba_metal import metal
    from numba_metal.errors import KernelCompilationError

    @metal.jit
    def crashes_clang(out):
        out[0] = 1.0

    try:
        crashes_clang[1, 1](np.zeros(1, np.float32))
    except KernelCompilationError as e:
        print("ERROR", len(str(e)))
        print(e)
    else:
        print("NO ERROR")
""")


def test_a_compiler_crash_is_a_short_error_naming_the_kernel_and_leaves_no_files(tmp_path):
    fake = tmp_path / "clang++"
    fake.write_text(FAKE_CLANG)
    fake.chmod(0o755)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, NUMBA_METAL_DEVICE="cpu", NUMBA_METAL_CLANG=str(fake), TMPDIR=str(tmp),
               NUMBA_METAL_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("ERROR"), r.stdout[-3000:]
    length = int(r.stdout.split()[1])
    assert length < 2000, r.stdout
    assert "the C++ compiler crashed compiling kernel crashes_clang()" in r.stdout
    assert f"{script}:" in r.stdout                      # the Python kernel's file:line
    assert "current parser token" in r.stdout             # the first lines of clang's output that say where
    assert "PrintStackTrace" not in r.stdout
    assert sorted(os.listdir(tmp)) == [], "files left behind in TMPDIR"

"""Compiler fuzzing: random Python functions, valid and invalid, through the whole pipeline.

A fuzz program is a small generated module (tests/differential/gen.py, two cases) with one to
three random mutations of its AST: an expression replaced by something a kernel cannot have (a
list, a string, None, a complex number, a float64 scalar, an unknown name, a slice, a lambda...),
a statement replaced by an unsupported one (try, with, global, import, yield, a nested def...)
or by a print or raise (which compile), a call's arity changed, a literal made extreme, a statement deleted or duplicated,
a name swapped for another. Some mutants stay valid.

Every program must either be refused with a NumbaMetalError whose message is not a C++ compiler
error on MSL numba-metal generated, or compile, run, and (where the reference can run it) agree
with the reference. Any other exception escaping numba-metal is an internal error.
"""

from __future__ import annotations

import ast
import copy
import random
import re
from dataclasses import dataclass

from tests.differential import gen as G
from tests.differential import harness as H
from tests.differential.choosers import RandomChooser

JUNK_EXPRS = [
    "[1, 2, 3]", "{'k': 1}", "{1, 2}", "'text'", "None", "1j", "np.float64(2.5)", "undefined_name",
    "A_f32[1:3]", "(lambda q: q)", "(1, 'a')", "A_f32", "s_t", "math", "np.zeros(3)", "len(5)",
    "tid.real", "A_i32.sum()", "abs()", "min()", "math.sin()", "math.sin(1, 2)", "metal.grid(7)",
    "metal.grid(tid)", "np.int32(1, 2)", "2 ** 200", "1e400", "-(2 ** 63) - 1", "A_f32[1.5]",
    "M2[0, 0, 0]", "OI[0]", "range(3)", "(tid for tid in range(3))", "b'bytes'", "...",
    "np.nan_to_num(1.0)", "metal.threadIdx", "metal.shared", "print", "tid if tid else 'x'",
    "not A_f32", "A_f32 + A_i32", "A_f32 < 1", "s_t + (1,)", "s_t * 2", "-s_t",
]
JUNK_STMTS = [
    "print(tid)", "raise ValueError('x')", "assert tid >= 0", "x_list = [tid]",
    "try:\n    pass\nexcept Exception:\n    pass", "with open('f') as fh:\n    pass", "global G_VALUE",
    "import os", "def inner(q):\n    return q", "yield tid", "del A_f32", "A_f32.x = 1", "x_str = 'abc'",
    "s_t[0] = 1", "A_f32[0:2] = 0", "OI[0] = 1", "return 5", "for q in A_f32:\n    pass",
    "for q in range(1.5):\n    pass", "for q in range():\n    pass", "while 'x':\n    break",
    "metal.syncthreads(1)", "metal.atomic.add(A_f32, 0)", "metal.atomic.add(A_u64, 0, 1)",
    "la_bad = metal.local.array(tid, np.int32)", "sh_bad = metal.shared.array(100000, np.float32)",
    "x, y = 1, 2, 3", "x, = tid", "tid = A_f32", "nonlocal_missing += 1", "lambda: 0",
    "class C_:\n    pass", "async_bad = 1", "metal.atomic.add(OI, (0, 0, 0), 1)",
    "A_f32[tid % 4] = 'x'", "A_i32[0] = 1.5e30", "A_f32[np.int64(0)] = None",
]


@dataclass
class FuzzProgram:
    seed: int
    source: str
    mutations: list
    batch: G.Batch


_protected = H.protected_nodes


class _Mutator:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.done = []
        self.keep: set = set()

    def _exprs(self, tree):
        out = []
        for node in ast.walk(tree):
            for fld, val in ast.iter_fields(node):
                if isinstance(val, ast.expr) and not isinstance(val, (ast.Name,)) or \
                        isinstance(val, ast.Name) and isinstance(val.ctx, ast.Load):
                    out.append((node, fld, None))
                elif isinstance(val, list):
                    for i, item in enumerate(val):
                        if isinstance(item, ast.expr) and not (isinstance(item, ast.Name)
                                                               and not isinstance(item.ctx, ast.Load)):
                            out.append((node, fld, i))
        return [(n, f, i) for n, f, i in out if not isinstance(n, (ast.arguments, ast.arg))
                and not (isinstance(n, ast.FunctionDef) and f == "decorator_list")
                and id(getattr(n, f) if i is None else getattr(n, f)[i]) not in self.keep]

    def _stmt_lists(self, tree):
        out = []
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                out.append(node.body)
            for fld in ("body", "orelse"):
                v = getattr(node, fld, None)
                if isinstance(v, list) and v and isinstance(v[0], ast.stmt) and not isinstance(node, (ast.Module,)):
                    out.append(v)
        return out

    def mutate(self, tree):
        # Decorators stay as generated: a mutated `@metal.jit(...)` fails in Python when the module is
        # imported, before numba-metal sees anything.
        self.keep = _protected(tree) | {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                                         for d in f.decorator_list for n in ast.walk(d)}
        r = self.rng
        kind = r.choice(["junk_expr", "junk_expr", "junk_stmt", "junk_stmt", "arity", "extreme",
                         "delete", "duplicate", "swap_name", "swap_name"])
        if kind == "junk_expr":
            exprs = self._exprs(tree)
            node, fld, i = r.choice(exprs)
            junk = r.choice(JUNK_EXPRS)
            new = ast.parse(junk, mode="eval").body
            if i is None:
                setattr(node, fld, new)
            else:
                getattr(node, fld)[i] = new
        elif kind == "junk_stmt":
            body = r.choice(self._stmt_lists(tree))
            junk = r.choice(JUNK_STMTS)
            body.insert(r.randint(0, len(body)), ast.parse(junk).body[0])
        elif kind == "arity":
            calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args and id(n) not in self.keep]
            if not calls:
                return self.mutate(tree)
            c = r.choice(calls)
            if r.random() < 0.5:
                c.args.pop(r.randrange(len(c.args)))
            else:
                c.args.append(copy.deepcopy(r.choice(c.args)))
        elif kind == "extreme":
            consts = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) in (int, float)
                      and id(n) not in self.keep]
            if not consts:
                return self.mutate(tree)
            c = r.choice(consts)
            c.value = r.choice([2 ** 64, 2 ** 63, -(2 ** 63), 10 ** 30, 1e308, -0.0, 0, 2 ** 31])
        elif kind == "delete":
            body = r.choice(self._stmt_lists(tree))
            free = [i for i, st in enumerate(body) if id(st) not in self.keep]
            if len(body) > 1 and free:
                body.pop(r.choice(free))
        elif kind == "duplicate":
            body = r.choice(self._stmt_lists(tree))
            body.insert(r.randint(0, len(body)), copy.deepcopy(r.choice(body)))
        else:
            names = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                     and id(n) not in self.keep]
            if not names:
                return self.mutate(tree)
            n = r.choice(names)
            n.id = r.choice(["tid", "A_f32", "A_b", "M3", "s_t", "s_f", "OI", "ck", "nx", "W_f16",
                             "undefined_name", "h0", "c1", "math", "np"])
        self.done.append(kind)


def fuzz_program(seed: int) -> FuzzProgram:
    rng = random.Random(seed)
    batch = G.generate_batch(RandomChooser(seed), 2)
    tree = ast.parse(batch.source)
    m = _Mutator(rng)
    for _ in range(rng.choice([1, 1, 2, 3])):
        for _attempt in range(5):
            try:
                m.mutate(tree)
                break
            except (IndexError, ValueError):
                continue
    ast.fix_missing_locations(tree)
    # Bounds-checked (debug=True): a mutated index is reported, not a wild memory access.
    source = ast.unparse(tree).replace("@metal.jit\n", "@metal.jit(debug=True)\n") + "\n"
    batch.source = source
    batch.predicted = {}
    batch.inline_case = None  # the kernel body may have changed shape
    return FuzzProgram(seed, source, m.done, batch)

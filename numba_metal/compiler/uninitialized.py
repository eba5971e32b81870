"""Variables a kernel may read before assigning them: warned about at compile time.

Python raises ``UnboundLocalError`` for such a read; a kernel cannot raise, and numba-metal declares
every variable zero-initialised, so the read gives 0. numba.cuda warns about these reads
(``NumbaWarning: Detected uninitialized variable``, from Numba's SSA reconstruction, which numba-metal
does not run); this pass finds them with a definite-assignment analysis over the untyped IR: a variable
is defined at a block's entry when it is assigned on every path from the function's entry.
"""

from __future__ import annotations

import warnings

from numba.core import analysis, ir
from numba.core.errors import NumbaWarning


def warn_uninitialized(func_ir: ir.FunctionIR) -> None:
    """Warn (``NumbaWarning``, at the line of the read) once per variable of ``func_ir`` that some path
    reads before any assignment."""
    blocks = func_ir.blocks
    cfg = analysis.compute_cfg_from_blocks(blocks)
    entry = cfg.entry_point()
    dead = set(cfg.dead_nodes())
    live = [label for label in sorted(blocks) if label not in dead]
    assigned = {label: _assigned(blocks[label]) for label in live}
    everything = set().union(*assigned.values()) if assigned else set()
    defined_in = {label: (set() if label == entry else set(everything)) for label in live}
    changed = True
    while changed:
        changed = False
        for label in live:
            if label == entry:
                continue
            preds = [p for p, _ in cfg.predecessors(label) if p not in dead]
            new = set(everything)
            for p in preds:
                new &= defined_in[p] | assigned[p]
            if new != defined_in[label]:
                defined_in[label] = new
                changed = True
    reported = set()
    for label in live:
        defined = set(defined_in[label])
        for stmt in blocks[label].body:
            for var in _reads(stmt):
                name = var.name
                if name not in defined and not name.startswith("$") and name not in reported:
                    reported.add(name)
                    loc = stmt.loc
                    warnings.warn_explicit(
                        NumbaWarning("Detected uninitialized variable " + name + ": a path reads it before "
                                     "assigning it, and a kernel reads 0 there (Python would raise "
                                     "UnboundLocalError)", loc=loc),
                        NumbaWarning, loc.filename or "<kernel>", loc.line or 0)
            if isinstance(stmt, ir.Assign):
                defined.add(stmt.target.name)


def _assigned(block) -> set:
    return {stmt.target.name for stmt in block.body if isinstance(stmt, ir.Assign)}


def _reads(stmt):
    if isinstance(stmt, ir.Assign):
        value = stmt.value
        if isinstance(value, ir.Var):
            return [value]
        return value.list_vars() if isinstance(value, ir.Inst) else []
    if isinstance(stmt, ir.Del):
        return []
    return stmt.list_vars()

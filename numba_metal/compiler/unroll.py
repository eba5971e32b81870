"""``for x in literal_unroll(t)``: the loop over a tuple, heterogeneous or not, unrolled before typing,
as numba.cuda does it (Numba's literal_unroll).

A variable of numba-metal's IR keeps one type for the whole function (no SSA), so each copy of the loop
body gets its own names for the variables that live only inside the loop (the loop variable, the
temporaries), and each copy is typed with its own item's type. Variables that the loop shares with the
rest of the function (an accumulator) keep their names. Copy k starts with ``x = t[k]``; where the
loop would go back to its header, copy k goes on to copy k + 1 and the last copy to the loop's normal
exit (its ``else`` block, if any); a ``break`` still leaves the loop. The tuple's length must be known
before typing: a tuple built in the function, a global or closure tuple, or a tuple argument.
"""

from __future__ import annotations

import copy

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.ir_utils import build_definitions, replace_var_names
from numba.misc.literal import literal_unroll

from numba_metal.errors import UnsupportedFeatureError


def unroll_literal_loops(func_ir: ir.FunctionIR, argtypes: tuple) -> ir.FunctionIR:
    """``func_ir`` with every ``for ... in literal_unroll(...)`` loop unrolled."""
    while True:
        site = _find(func_ir)
        if site is None:
            return func_ir
        _unroll(func_ir, argtypes, *site)
        # The same function with its variables' definitions recomputed.
        func_ir = ir.FunctionIR(func_ir.blocks, func_ir.is_generator, func_ir.func_id, func_ir.loc,
                                build_definitions(func_ir.blocks), func_ir.arg_count, func_ir.arg_names)


def _where(loc):
    return (loc.filename, loc.line)


def _definition(func_ir, var):
    try:
        return func_ir.get_definition(var)
    except KeyError:
        return None


def _is_literal_unroll(func_ir, var) -> bool:
    d = _definition(func_ir, var)
    while isinstance(d, ir.Var):
        d = _definition(func_ir, d)
    return isinstance(d, (ir.Global, ir.FreeVar)) and d.value is literal_unroll


def _find(func_ir):
    """(pre-header label, getiter statement, call expression) of the first literal_unroll loop."""
    for label, block in func_ir.blocks.items():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "getiter":
                call = _definition(func_ir, stmt.value.value)
                if (isinstance(call, ir.Expr) and call.op == "call" and _is_literal_unroll(func_ir, call.func)):
                    return label, stmt, call
    return None


def _length(func_ir, argtypes, tup: ir.Var, loc) -> int:
    d = _definition(func_ir, tup)
    while isinstance(d, ir.Var):
        d = _definition(func_ir, d)
    if isinstance(d, ir.Expr) and d.op == "build_tuple":
        return len(d.items)
    if isinstance(d, (ir.Global, ir.FreeVar, ir.Const)) and isinstance(d.value, tuple):
        return len(d.value)
    if isinstance(d, ir.Arg) and isinstance(argtypes[d.index], types.BaseTuple):
        return len(argtypes[d.index])
    raise UnsupportedFeatureError("literal_unroll() takes a tuple whose length is known when the kernel "
                                  "compiles: a tuple built in the function, a global or closure tuple, or a "
                                  "tuple argument", _where(loc))


def _unroll(func_ir, argtypes, pre_label, getiter, call):
    loc = getiter.loc
    if len(call.args) != 1 or call.kws or call.vararg is not None:
        raise UnsupportedFeatureError("literal_unroll() takes one tuple", _where(loc))
    tup = call.args[0]
    n = _length(func_ir, argtypes, tup, loc)
    blocks = func_ir.blocks
    pre = blocks[pre_label]
    header = pre.terminator.target if isinstance(pre.terminator, ir.Jump) else None
    cfg = compute_cfg_from_blocks(blocks)
    loop = cfg.loops().get(header)
    if loop is None:
        raise UnsupportedFeatureError("literal_unroll() is supported as the iterable of a for loop only",
                                      _where(loc))
    branch = blocks[header].terminator
    entry, exit_ = branch.truebr, branch.falsebr
    # The header's statements: iternext, pair_first (the item), pair_second, and copies of the item,
    # one of which the body reads.
    items = []
    for stmt in blocks[header].body:
        if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "pair_first":
            items.append(stmt.target.name)
        elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Var) and stmt.value.name in items:
            items.append(stmt.target.name)
    body = sorted(loop.body - {header})
    local = _loop_local_names(blocks, loop.body)
    next_label = max(blocks) + 1
    copies = []
    for k in range(n):
        renames = {name: name + ".unroll" + str(k) for name in local}
        relabel = {}
        for label in body:
            relabel[label] = next_label
            next_label += 1
        copies.append((renames, relabel))
    first_labels = [relabel[entry] for _, relabel in copies] + [exit_]
    for k, (renames, relabel) in enumerate(copies):
        for label in body:
            new = copy.deepcopy(blocks[label])
            replace_var_names({0: new}, renames)
            for stmt in new.body:
                if isinstance(stmt, ir.Jump):
                    stmt.target = first_labels[k + 1] if stmt.target == header else relabel.get(stmt.target,
                                                                                                stmt.target)
                elif isinstance(stmt, ir.Branch):
                    stmt.truebr = relabel.get(stmt.truebr, stmt.truebr)
                    stmt.falsebr = relabel.get(stmt.falsebr, stmt.falsebr)
                    if stmt.truebr == header:
                        stmt.truebr = first_labels[k + 1]
                    if stmt.falsebr == header:
                        stmt.falsebr = first_labels[k + 1]
            if label == entry:
                index_var = ir.Var(new.scope, "$unroll_index." + str(k), loc)
                start = [ir.Assign(ir.Const(k, loc), index_var, loc)]
                for name in items:
                    item = ir.Var(new.scope, renames.get(name, name), loc)
                    start.append(ir.Assign(ir.Expr.static_getitem(tup, k, index_var, loc), item, loc))
                new.body[:0] = start
            blocks[relabel[label]] = new
    for label in loop.body:
        del blocks[label]
    # The pre-header no longer builds the iterator (literal_unroll cannot be typed): it enters copy 0.
    dead = {getiter.target.name, call.func.name}
    pre.body = [s for s in pre.body if not (isinstance(s, ir.Assign) and (
        s is getiter or s.value is call or s.target.name in dead or _assigns_iterator(s, getiter.target)))]
    pre.body[-1] = ir.Jump(first_labels[0], pre.body[-1].loc)
    func_ir.blocks = blocks


def _assigns_iterator(stmt, iterator: ir.Var) -> bool:
    return isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Var) and stmt.value.name == iterator.name


def _loop_local_names(blocks, loop_labels) -> set:
    """Names defined in the loop and neither defined nor used outside it."""
    inside, outside = set(), set()
    for label, block in blocks.items():
        names = {v.name for stmt in block.body for v in stmt.list_vars()}
        (inside if label in loop_labels else outside).update(names)
    return inside - outside

"""The structurizer's test oracle: a renderer, an interpreter and an exhaustive equivalence check of
the structured trees numba_metal/compiler/structurize.py makes.

``render`` prints a tree as C-like pseudo-code (golden tests, debugging), ``execute`` runs it with C
semantics under given branch decisions, and ``verify`` proves that a tree visits blocks exactly as its
control-flow graph does, for every branch decision.
"""

from __future__ import annotations

from typing import Callable

from numba_metal.compiler.structurize import (Break, Code, Continue, DoOnce, FunctionEnd, If, IfFlag, Loop,
                                              Seq, SetFlag, StructureError, recursion_room)


def _depth(tree) -> int:
    """Nesting depth of a public tree (iteratively)."""
    best = 0
    stack = [(tree, 0)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        if isinstance(n, Seq):
            stack.extend((it, d + 1) for it in n.items)
        elif isinstance(n, (If, IfFlag)):
            stack.append((n.then, d + 1))
            stack.append((n.else_, d + 1))
        elif isinstance(n, (Loop, DoOnce)):
            stack.append((n.body, d + 1))
    return best



def _reachable(entry, succs) -> tuple[list, dict]:
    """The blocks reachable from ``entry`` and their successors (a two-way branch to one block is a jump)."""
    succ, order, stack = {}, [], [entry]
    while stack:
        n = stack.pop()
        if n in succ:
            continue
        s = list(succs[n])
        if len(s) == 2 and s[0] == s[1]:
            s = s[:1]
        succ[n] = s
        order.append(n)
        stack.extend(reversed(s))
    return order, succ


def render(tree, indent: str = "  ") -> str:
    """C-like pseudo-code for debugging, docs and golden tests.

    ``B7;`` is the code of block 7, ``c7`` its branch condition, ``end B7;`` its return/raise.
    """
    lines: list = []

    def seq(items, d):
        for it in items:
            node(it, d)

    def jump_only(items):
        return len(items) == 1 and isinstance(items[0], (Break, Continue))

    def cond(n, negate):
        if isinstance(n, If):
            return f"!c{n.label}" if negate else f"c{n.label}"
        return f"nm_br {'!=' if negate else '=='} {n.value}"

    def if_chain(n, d, lead):
        p = indent * d
        t, e = n.then.items, n.else_.items
        if not t and e:
            body, other, negate = e, [], True
        else:
            body, other, negate = t, e, False
        head = f"{p}{lead}if ({cond(n, negate)})"
        if not lead and not other and jump_only(body):
            stmt = "break;" if isinstance(body[0], Break) else "continue;"
            lines.append(f"{head} {stmt}")
            return
        lines.append(f"{head} {{")
        seq(body, d + 1)
        if other:
            if len(other) == 1 and isinstance(other[0], (If, IfFlag)):
                if_chain(other[0], d, "} else ")  # closes the chain's last brace itself
                return
            lines.append(f"{p}}} else {{")
            seq(other, d + 1)
        lines.append(f"{p}}}")

    def node(n, d):
        p = indent * d
        if isinstance(n, Seq):
            seq(n.items, d)
        elif isinstance(n, Code):
            lines.append(f"{p}B{n.label};")
        elif isinstance(n, FunctionEnd):
            lines.append(f"{p}end B{n.label};")
        elif isinstance(n, Break):
            lines.append(f"{p}break;")
        elif isinstance(n, Continue):
            lines.append(f"{p}continue;")
        elif isinstance(n, SetFlag):
            lines.append(f"{p}nm_br = {n.value};")
        elif isinstance(n, (If, IfFlag)):
            if_chain(n, d, "")
        elif isinstance(n, Loop):
            lines.append(f"{p}while (true) {{")
            seq(n.body.items, d + 1)
            lines.append(f"{p}}}")
        elif isinstance(n, DoOnce):
            lines.append(f"{p}do {{")
            seq(n.body.items, d + 1)
            lines.append(f"{p}}} while (false);")
        else:
            raise TypeError(f"not a structure node: {n!r}")

    with recursion_room(3 * _depth(tree)):
        node(tree, 0)
    return "\n".join(lines) + ("\n" if lines else "")


# -- reference interpreter ------------------------------------------------------------------------

_NORMAL, _SBREAK, _SCONT, _SEND = range(4)


def execute(
    tree,
    decide: Callable[[int], bool],
    on_block: Callable[[int], None],
    on_end: Callable[[int], None] | None = None,
) -> None:
    """Run the tree with C semantics.

    ``decide(label)`` gives the branch decision of an :class:`If` on ``label``;
    ``on_block(label)`` is called for each :class:`Code` and :class:`FunctionEnd` executed
    (or, if ``on_end`` is given, ``on_end(label)`` for FunctionEnd).  Returns when a
    FunctionEnd is reached; an exception raised by a callback propagates (use that to stop
    a non-terminating run).
    """
    end_cb = on_end if on_end is not None else on_block
    flag = [0]

    def run(items) -> int:
        for it in items:
            if isinstance(it, Code):
                on_block(it.label)
            elif isinstance(it, If):
                arm = it.then if decide(it.label) else it.else_
                sig = run(arm.items)
                if sig != _NORMAL:
                    return sig
            elif isinstance(it, IfFlag):
                arm = it.then if flag[0] == it.value else it.else_
                sig = run(arm.items)
                if sig != _NORMAL:
                    return sig
            elif isinstance(it, SetFlag):
                flag[0] = it.value
            elif isinstance(it, Loop):
                while True:
                    sig = run(it.body.items)
                    if sig == _SBREAK:
                        break
                    if sig == _SEND:
                        return _SEND
            elif isinstance(it, DoOnce):
                sig = run(it.body.items)
                if sig == _SEND:
                    return _SEND  # break and continue both leave do {} while (false)
            elif isinstance(it, Break):
                return _SBREAK
            elif isinstance(it, Continue):
                return _SCONT
            elif isinstance(it, FunctionEnd):
                end_cb(it.label)
                return _SEND
            elif isinstance(it, Seq):
                sig = run(it.items)
                if sig != _NORMAL:
                    return sig
            else:
                raise TypeError(f"not a structure node: {it!r}")
        return _NORMAL

    with recursion_room(2 * _depth(tree)):
        sig = run(tree.items if isinstance(tree, Seq) else [tree])
    if sig == _NORMAL:
        raise ValueError("execution fell off the end of the function without a FunctionEnd")
    if sig != _SEND:
        raise ValueError("break/continue outside any loop")


# -- exhaustive equivalence check -----------------------------------------------------------------


def _flatten(tree: Seq) -> list:
    """Compile the tree to a tiny jump-based instruction list (C semantics)."""
    code: list = []
    fixups: list = []

    class Label:
        __slots__ = ("pc",)

        def __init__(self):
            self.pc = None

    def here(lbl):
        lbl.pc = len(code)

    def emit(op, *args):
        code.append([op, *args])

    def walk(items, brk, cont):
        for it in items:
            if isinstance(it, Code):
                emit("code", it.label)
            elif isinstance(it, FunctionEnd):
                emit("end", it.label)
            elif isinstance(it, SetFlag):
                emit("set", it.value)
            elif isinstance(it, (If, IfFlag)):
                l_else, l_end = Label(), Label()
                if isinstance(it, If):
                    emit("if", it.label, l_else)
                else:
                    emit("ifflag", it.value, l_else)
                walk(it.then.items, brk, cont)
                emit("jmp", l_end)
                here(l_else)
                walk(it.else_.items, brk, cont)
                here(l_end)
            elif isinstance(it, Loop):
                l_top, l_end = Label(), Label()
                here(l_top)
                walk(it.body.items, l_end, l_top)
                emit("jmp", l_top)
                here(l_end)
            elif isinstance(it, DoOnce):
                l_end = Label()
                walk(it.body.items, l_end, l_end)
                here(l_end)
            elif isinstance(it, Break):
                if brk is None:
                    raise StructureError("break outside any loop")
                emit("jmp", brk)
            elif isinstance(it, Continue):
                if cont is None:
                    raise StructureError("continue outside any loop")
                emit("jmp", cont)
            elif isinstance(it, Seq):
                walk(it.items, brk, cont)
            else:
                raise TypeError(f"not a structure node: {it!r}")

    with recursion_room(2 * _depth(tree)):
        walk(tree.items, None, None)
    emit("fell-off")
    for ins in code:
        for i, a in enumerate(ins):
            if isinstance(a, Label):
                ins[i] = a.pc
    return code


def verify(tree: Seq, entry: int, succs: dict) -> None:
    """Prove that ``tree`` visits blocks exactly as the CFG does, for every branch decision.

    For each Code(b) it explores, for each decision of b's branch, every path to the next
    Code/FunctionEnd, and checks that the block reached is b's successor for that decision,
    that no other branch condition is consulted on the way, that ``nm_br`` is 0 whenever a block
    runs, and that no path spins without reaching a block.  Raises StructureError on mismatch.
    """
    blocks, succ = _reachable(entry, succs)
    prog = _flatten(tree)
    code_pc: dict = {}
    for pc, ins in enumerate(prog):
        if ins[0] == "code":
            if ins[1] in code_pc:
                raise StructureError(f"block {ins[1]} appears twice")
            code_pc[ins[1]] = pc
    if set(code_pc) != set(blocks):
        raise StructureError(
            f"tree blocks {sorted(code_pc)} differ from reachable blocks {sorted(blocks)}"
        )

    def next_event(pc, flag, label):
        """Outcomes from pc: {decision: ("code"|"end", label)}; decision None if no branch."""
        results: dict = {}
        stack = [(pc, flag, None)]
        seen = set()
        while stack:
            pc, flag, dec = stack.pop()
            while True:
                state = (pc, flag, dec)
                if state in seen:
                    raise StructureError(f"after block {label}: a path loops without a block")
                seen.add(state)
                ins = prog[pc]
                op = ins[0]
                if op == "code":
                    if flag != 0:
                        raise StructureError(f"block {ins[1]} runs with nm_br = {flag}")
                    results.setdefault(dec, set()).add(("code", ins[1]))
                    break
                if op == "end":
                    results.setdefault(dec, set()).add(("end", ins[1]))
                    break
                if op == "fell-off":
                    raise StructureError(f"after block {label}: falls off the function")
                if op == "set":
                    flag = ins[1]
                    pc += 1
                elif op == "jmp":
                    pc = ins[1]
                elif op == "ifflag":
                    pc = pc + 1 if flag == ins[1] else ins[2]
                elif op == "if":
                    if ins[1] != label or dec is not None:
                        raise StructureError(
                            f"after block {label}: branch on c{ins[1]} (decision {dec})"
                        )
                    stack.append((ins[2], flag, False))
                    pc, dec = pc + 1, True
                else:  # pragma: no cover
                    raise AssertionError(op)
        return results

    first = next_event(0, 0, None)
    if first != {None: {("code", entry)}}:
        raise StructureError(f"the tree does not start with block {entry}: {first}")
    for b in blocks:
        out = next_event(code_pc[b] + 1, 0, b)
        s = succ[b]
        if not s:
            want = {None: {("end", b)}}
        elif len(s) == 1:
            want = {None: {("code", s[0])}}
        else:
            want = {True: {("code", s[0])}, False: {("code", s[1])}}
        if out != want:
            raise StructureError(f"after block {b}: tree goes to {out}, CFG to {want}")

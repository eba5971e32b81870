"""Control-flow structuring: turn a reducible CFG into goto-free structured code.

Metal Shading Language has no ``goto``, so the code generator needs the function's control-flow
graph (CFG) as a tree of ``if`` / ``while (true)`` / ``break`` / ``continue`` / ``return``.  This
module does that, and nothing else: it knows block labels and edges only (no Numba import), so it
can be tested exhaustively on its own.

Algorithm (after Ramsey, "Beyond Relooper", ICFP 2022, adapted from WebAssembly to C); the analyses of
steps 1 and 2 are :mod:`.cfg`'s, this module builds and lowers the tree (steps 3 to 5):

1. Depth-first numbering (reverse postorder, RPO), Cooper–Harvey–Kennedy dominators, and
   post-dominators (reverse graph with a virtual exit).  An edge ``u -> v`` that retreats in RPO
   must be a back edge (``v`` dominates ``u``); otherwise the CFG is irreducible and
   :class:`StructureError` is raised.  Loop headers are the targets of back edges; natural loops
   are collected from the back-edge sources.
2. Placement.  Every block is emitted exactly once, as a child of its *placement parent*: its
   immediate dominator, except that a loop's *follow* (the earliest block where most of the
   loop's exits converge: the statement after a Python loop) and what is forward-reachable from
   it is hoisted to just after the loop; other exits (an early ``return``, an ``else:`` clause,
   a ``break`` block) stay inside the loop and end in ``break``.
   A child that has one forward predecessor is emitted inline at the branch that reaches it; a
   child with several (a merge node) is placed after the construct that branches to it, inside an
   intermediate "block" whose end is the jump target (Ramsey's ``block``).
3. This gives a tree with labelled multi-level jumps (``Br`` to the end of a block or to the
   start of a loop), like WebAssembly.  Each jump is then lowered to C: nothing (control falls
   through to the target anyway), ``break``, ``continue``, or — when it must leave more than one
   breakable construct — ``nm_br = k; break;`` with a dispatch ``if (nm_br == k) ...`` after each
   construct it leaves (one function-wide ``int nm_br``, always 0 except while such a jump is in
   flight).  A block becomes a ``do { } while (false)`` (:class:`DoOnce`) only when some jump to
   its end can be expressed no other way (e.g. the merge after ``if a or b:`` with code between).
4. A cosmetic, semantics-preserving clean-up: ``if (c) {A} else {break;}`` becomes
   ``if (!c) break; A`` (an arm that never completes is kept, the other arm follows the ``if``).
   No redundant jump needs removing: step 3 compares canonical program points exactly, so a
   jump whose target is where control would fall anyway is never emitted.
5. Loops that share a header (CPython: ``while c:`` whose body starts with ``while True:``) are
   one natural loop with several latches.  If the tree needs a DoOnce or the flag, the CFG is
   structured again with code-less virtual headers, one nested loop per latch, and the tree
   with fewer DoOnce/flags is kept.

Guarantees: every reachable block's :class:`Code` appears exactly once; the tree has
O(#blocks + #edges) nodes; output is a deterministic function of ``(entry, succs)``; execution of
the tree visits blocks in exactly the CFG's order for every sequence of branch decisions
(the tests' oracle, tests/compiler/structure_oracle.py, checks this exhaustively for a given CFG).
See docs/architecture.md, "Control-flow structuring".
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Union

from .cfg import Cfg, StructureError, Virtual

__all__ = [
    "StructureError",
    "Seq",
    "Code",
    "If",
    "Loop",
    "DoOnce",
    "Break",
    "Continue",
    "SetFlag",
    "IfFlag",
    "FunctionEnd",
    "Node",
    "structurize",
    "iter_nodes",
    "skip_empty_blocks",
]


# --------------------------------------------------------------------------------------------
# The structured tree (public)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seq:
    """Statements in order."""

    items: list


@dataclass(frozen=True)
class Code:
    """The straight-line statements of basic block ``label`` (not its terminator)."""

    label: int


@dataclass(frozen=True)
class If:
    """Branch on the condition that ends block ``label``; ``then`` is the true edge."""

    label: int
    then: Seq
    else_: Seq


@dataclass(frozen=True)
class Loop:
    """``while (true) { body }``; leaving it needs an explicit Break (or FunctionEnd)."""

    body: Seq


@dataclass(frozen=True)
class DoOnce:
    """``do { body } while (false);`` — a forward-exit target for ``break``."""

    body: Seq


@dataclass(frozen=True)
class Break:
    """C ``break``: leaves the innermost Loop/DoOnce."""


@dataclass(frozen=True)
class Continue:
    """C ``continue``; only ever emitted when the innermost Loop/DoOnce is a Loop."""


@dataclass(frozen=True)
class SetFlag:
    """``nm_br = value;`` (one int control variable per function, initially 0)."""

    value: int


@dataclass(frozen=True)
class IfFlag:
    """``if (nm_br == value) {then} else {else_}``."""

    value: int
    then: Seq
    else_: Seq


@dataclass(frozen=True)
class FunctionEnd:
    """Block ``label`` ends the function here (the code generator emits its return/raise)."""

    label: int


Node = Union[Seq, Code, If, Loop, DoOnce, Break, Continue, SetFlag, IfFlag, FunctionEnd]


# --------------------------------------------------------------------------------------------
# Intermediate tree with labelled jumps (WebAssembly-like)
# --------------------------------------------------------------------------------------------


class _WSeq:
    __slots__ = ("items", "owner", "uid")

    def __init__(self, owner, uid):
        self.items: list = []
        self.owner = owner
        self.uid = uid


class _WNode:
    __slots__ = ("seq", "index")


class _WCode(_WNode):
    __slots__ = ("label",)

    def __init__(self, label):
        self.label = label


class _WEnd(_WNode):
    __slots__ = ("label",)

    def __init__(self, label):
        self.label = label


class _WIf(_WNode):
    __slots__ = ("label", "then", "else_")


class _WBlock(_WNode):
    """Ramsey's ``block``: a jump to it goes to its end, where the code of ``label`` follows."""

    __slots__ = ("label", "body", "doonce")


class _WLoop(_WNode):
    """A jump to it goes to its start (the loop header ``label``)."""

    __slots__ = ("label", "body")


class _WBr(_WNode):
    __slots__ = ("target",)

    def __init__(self, target):
        self.target = target


def _is_breakable(o) -> bool:
    return isinstance(o, _WLoop) or (isinstance(o, _WBlock) and o.doonce)


class _Builder:
    def __init__(self, g: Cfg) -> None:
        self.g = g
        self._uid = 0
        self.blocks: dict = {}  # label -> _WBlock
        self.loops: dict = {}  # header -> _WLoop
        self.brs: list = []  # every jump, in creation order
        self.root = self._seq(None)
        work = [(g.entry, self.root)]
        while work:
            x, seq = work.pop()
            self._place(x, seq, work)

    def _seq(self, owner) -> _WSeq:
        self._uid += 1
        return _WSeq(owner, self._uid)

    @staticmethod
    def _add(seq: _WSeq, node: _WNode) -> None:
        node.seq = seq
        node.index = len(seq.items)
        seq.items.append(node)

    def _block(self, seq: _WSeq, label) -> _WBlock:
        b = _WBlock()
        b.label = label
        b.doonce = False
        b.body = self._seq(b)
        self._add(seq, b)
        self.blocks[label] = b
        return b

    def _place(self, x, seq: _WSeq, work: list) -> None:
        """Emit block x and its placement subtree at the end of ``seq``."""
        g = self.g
        kids = g.kids[x]
        is_header = x in g.latches
        exits = [c for c in kids if c in g.hoisted] if is_header else []
        merges = [c for c in kids if c not in g.hoisted and g.is_merge[c]]
        pending = []  # (label, seq to append its tree to)
        cur = seq
        for y in reversed(exits):  # the last exit gets the outermost block
            blk = self._block(cur, y)
            pending.append((y, cur))
            cur = blk.body
        if is_header:
            lp = _WLoop()
            lp.label = x
            lp.body = self._seq(lp)
            self._add(cur, lp)
            self.loops[x] = lp
            cur = lp.body
        for y in reversed(merges):
            blk = self._block(cur, y)
            pending.append((y, cur))
            cur = blk.body
        self._add(cur, _WCode(x))
        s = g.succ[x]
        if not s:
            self._add(cur, _WEnd(x))
        elif len(s) == 1:
            self._branch(x, s[0], cur, work)
        else:
            node = _WIf()
            node.label = x
            node.then = self._seq(node)
            node.else_ = self._seq(node)
            self._add(cur, node)
            self._branch(x, s[0], node.then, work)
            self._branch(x, s[1], node.else_, work)
        # Ramsey: the code of each merge child follows the block that branches to it.
        work.extend(reversed(pending))

    def _branch(self, x, t, seq: _WSeq, work: list) -> None:
        g = self.g
        if (x, t) in g.back:
            br = _WBr(self.loops[t])
        elif g.pp[t] == x and g.is_inline(t):
            work.append((t, seq))  # t's only forward predecessor is x: emit it right here
            return
        else:
            br = _WBr(self.blocks[t])
        self._add(seq, br)
        self.brs.append(br)


# --------------------------------------------------------------------------------------------
# Lowering labelled jumps to C: fall-through, break, continue, flag
# --------------------------------------------------------------------------------------------

_FALL, _BREAK, _CONTINUE, _PROP, _FAIL = range(5)


def _ancestors(node: _WNode):
    o = node.seq.owner
    while o is not None:
        yield o
        o = o.seq.owner


def _canon_after(node: _WNode):
    """Where control goes when it falls off the end of ``node`` (a canonical point)."""
    seq, i = node.seq, node.index + 1
    while i == len(seq.items):
        o = seq.owner
        if o is None:
            return ("top-end",)
        if isinstance(o, _WLoop):
            return ("loop", id(o))
        seq, i = o.seq, o.index + 1  # end of an if-arm or a block: after that construct
    return ("pt", seq.uid, i)


def _goal(target):
    if isinstance(target, _WLoop):
        return ("loop", id(target))
    return _canon_after(target)


def _resolve(br: _WBr) -> list:
    """How the jump ``br`` reaches its target, as [(position node, action)].

    The position is "just after the node".  The first entry is at the jump itself; a _PROP
    (``break`` with the flag set) moves the position to just after the construct it leaves.
    """
    target = br.target
    goal = _goal(target)
    steps = []
    pos: _WNode = br
    while True:
        if _canon_after(pos) == goal:
            steps.append((pos, _FALL))
            return steps
        k = None
        for o in _ancestors(pos):
            if o is target:
                break
            if _is_breakable(o):
                k = o
                break
        if k is None:
            if isinstance(target, _WLoop):
                steps.append((pos, _CONTINUE))
            elif target.doonce:
                steps.append((pos, _BREAK))
            else:
                steps.append((pos, _FAIL))
            return steps
        if _canon_after(k) == goal:
            steps.append((pos, _BREAK))
            return steps
        steps.append((pos, _PROP))
        pos = k


def _postorder_blocks(root: _WSeq) -> list:
    out = []
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, _WSeq):
            for it in reversed(node.items):
                stack.append((it, False))
            continue
        if done:
            out.append(node)
            continue
        if isinstance(node, _WBlock):
            stack.append((node, True))
            stack.append((node.body, False))
        elif isinstance(node, _WLoop):
            stack.append((node.body, False))
        elif isinstance(node, _WIf):
            stack.append((node.else_, False))
            stack.append((node.then, False))
    return out


class _Lowerer:
    def __init__(self, b: _Builder) -> None:
        by_target: dict = {}
        for br in b.brs:
            by_target.setdefault(id(br.target), []).append(br)
        # A block becomes do { } while (false) only if some jump to its end cannot be done by
        # falling through or by (flagged) breaks out of breakable constructs inside it.  Inner
        # blocks are decided first: a jump to B only crosses constructs inside B.
        for blk in _postorder_blocks(b.root):
            for br in by_target.get(id(blk), ()):
                if _resolve(br)[-1][1] == _FAIL:
                    blk.doonce = True
                    break
        resolved = []  # (br, flag value or 0, steps)
        flag_of: dict = {}
        for br in b.brs:
            steps = _resolve(br)
            if steps[-1][1] == _FAIL:  # pragma: no cover - excluded by the do-once decision
                raise AssertionError("structurize: unresolvable jump")
            value = 0
            if any(a == _PROP for _, a in steps):
                value = flag_of.setdefault(id(br.target), len(flag_of) + 1)
            resolved.append((br, value, steps))
        # Flag elision: if every way out of a loop carries the same flag value, testing the flag
        # after the loop tells nothing.  When that holds at every place a value is tested, the
        # value needs no flag at all: its tests become unconditional and its SetFlags vanish.
        # (E.g. the loop inside a for-else's `else:` clause, whose only exit leaves the outer
        # loop too.)
        leaving: dict = {}  # id(K) -> set of flag values, or "plain", that leave construct K
        tested: dict = {}  # flag value -> the constructs after which it is tested
        node_of: dict = {}
        for br, value, steps in resolved:
            for i, (pos, action) in enumerate(steps):
                if action == _PROP:
                    k = steps[i + 1][0]
                    node_of[id(k)] = k
                    leaving.setdefault(id(k), set()).add(value)
                    tested.setdefault(value, set()).add(id(k))
                elif action == _BREAK:
                    k = next(o for o in _ancestors(pos) if _is_breakable(o))
                    leaving.setdefault(id(k), set()).add("plain")
        elided = {
            v
            for v, ks in tested.items()
            if all(isinstance(node_of[k], _WLoop) and leaving[k] == {v} for k in ks)
        }
        self.first: dict = {}  # id(br) -> list of public nodes replacing it
        self.landing: dict = {}  # id(K) -> {flag value: action}
        self.propagate: dict = {}  # id(K) -> flag values passing through K
        self.elided = elided
        for br, value, steps in resolved:
            for i, (pos, action) in enumerate(steps):
                if i == 0:
                    self.first[id(br)] = {
                        _FALL: [],
                        _BREAK: [Break()],
                        _CONTINUE: [Continue()],
                        _PROP: [Break()] if value in elided else [SetFlag(value), Break()],
                    }[action]
                elif action == _PROP:
                    self.propagate.setdefault(id(pos), set()).add(value)
                else:
                    assert action in (_BREAK, _CONTINUE)
                    self.landing.setdefault(id(pos), {})[value] = action

    def convert(self, seq: _WSeq) -> list:
        out = []
        for it in seq.items:
            if isinstance(it, _WCode):
                if not isinstance(it.label, Virtual):
                    out.append(Code(it.label))
            elif isinstance(it, _WEnd):
                out.append(FunctionEnd(it.label))
            elif isinstance(it, _WIf):
                out.append(If(it.label, Seq(self.convert(it.then)), Seq(self.convert(it.else_))))
            elif isinstance(it, _WBlock):
                body = self.convert(it.body)
                if it.doonce:
                    out.append(DoOnce(Seq(body)))
                else:
                    out.extend(body)
            elif isinstance(it, _WLoop):
                out.append(Loop(Seq(self.convert(it.body))))
            elif isinstance(it, _WBr):
                out.extend(self.first[id(it)])
            else:  # pragma: no cover
                raise AssertionError(it)
            if isinstance(it, (_WBlock, _WLoop)):
                out.extend(self._dispatch(it))
        return out

    def _dispatch(self, k) -> list:
        """The flag checks right after construct ``k``."""
        lands = self.landing.get(id(k), {})
        passing = self.propagate.get(id(k), set())
        if len(lands) + len(passing) == 1 and (set(lands) | passing) <= self.elided:
            # the only way out of k: no test needed (see flag elision above)
            return [Continue()] if _CONTINUE in lands.values() else [Break()]
        tail: list = []
        if passing:
            tail = [IfFlag(0, Seq([]), Seq([Break()]))]  # `if (nm_br != 0) break;`
        for value in sorted(lands, reverse=True):
            jump = Break() if lands[value] == _BREAK else Continue()
            tail = [IfFlag(value, Seq([SetFlag(0), jump]), Seq(tail))]
        return tail


# --------------------------------------------------------------------------------------------
# Clean-ups on the public tree (all semantics-preserving)
# --------------------------------------------------------------------------------------------


def _hoist(items: list):
    """``if (c) {A} else {X}`` where X never completes becomes ``if (c) {} else {X} A``.

    One bottom-up pass.  Returns ``(items, completes, breaks, size)``: the new items; False only
    if control can never fall off their end (conservative); whether they hold a Break whose
    innermost Loop/DoOnce is outside them; their node count.  Hoisting changes none of these.
    """
    out = []
    completes, breaks, size = True, False, 1
    for it in items:
        if isinstance(it, (If, IfFlag)):
            t, tc, tb, ts = _hoist(it.then.items)
            e, ec, eb, es = _hoist(it.else_.items)
            c, b, n = tc or ec, tb or eb, 1 + ts + es
            opts = []
            if isinstance(it, If):
                if t and not ec:
                    opts.append((ts, 1, "then"))
                if e and not tc:
                    opts.append((es, 0, "else"))
            which = max(opts)[2] if opts else None
            if which == "then":
                out.append(If(it.label, Seq([]), Seq(e)))
                out.extend(t)
            elif which == "else":
                out.append(If(it.label, Seq(t), Seq([])))
                out.extend(e)
            elif isinstance(it, If):
                out.append(If(it.label, Seq(t), Seq(e)))
            else:
                out.append(IfFlag(it.value, Seq(t), Seq(e)))
        elif isinstance(it, (Loop, DoOnce)):
            body, bc, bb, bs = _hoist(it.body.items)
            out.append(type(it)(Seq(body)))
            # a Loop is left only by its own break; a DoOnce also by falling off its end
            c, b, n = bb or (bc and isinstance(it, DoOnce)), False, 1 + bs
        else:
            out.append(it)
            c = not isinstance(it, (Break, Continue, FunctionEnd))
            b, n = isinstance(it, Break), 1
        completes = completes and c
        breaks = breaks or b
        size += n
    return out, completes, breaks, size


def _check_tree(tree: Seq, labels: list) -> None:
    """Internal invariants; a failure is a bug in this module."""
    seen: set = set()

    def walk(items, inner):
        for it in items:
            if isinstance(it, Code):
                if it.label in seen:
                    raise AssertionError(f"structurize: block {it.label} emitted twice")
                seen.add(it.label)
            elif isinstance(it, (Break, Continue)):
                if inner is None or (isinstance(it, Continue) and inner != "loop"):
                    raise AssertionError(f"structurize: misplaced {type(it).__name__}")
            elif isinstance(it, (If, IfFlag)):
                walk(it.then.items, inner)
                walk(it.else_.items, inner)
            elif isinstance(it, Loop):
                walk(it.body.items, "loop")
            elif isinstance(it, DoOnce):
                walk(it.body.items, "once")

    walk(tree.items, None)
    if seen != set(labels):
        raise AssertionError("structurize: the tree does not hold every reachable block once")


@contextmanager
def recursion_room(frames: int):
    """Let the recursive tree walks handle very deep nesting (e.g. a 1000-way elif chain).

    They are plain Python recursion, which CPython >= 3.11 runs without growing the C stack, so
    a temporarily higher limit is safe.  Typical kernels never need it.
    """
    old = sys.getrecursionlimit()
    if frames < 200:
        yield
        return
    new = old + frames
    sys.setrecursionlimit(new)
    try:
        yield
    finally:
        if sys.getrecursionlimit() == new:
            sys.setrecursionlimit(old)


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


def structurize(entry: int, succs: dict) -> Seq:
    """Structure the CFG ``succs`` (reachable from ``entry``) into a goto-free tree.

    ``succs`` maps every block label reachable from ``entry`` to its successors: ``[]`` for a
    block that ends the function (return/raise), ``[t]`` for an unconditional jump, ``[t, f]``
    for a two-way branch (true target first; ``t`` may equal ``f``, which is treated as a jump
    and gets no :class:`If`).  Blocks not reachable from ``entry`` are ignored.

    Returns a :class:`Seq` whose execution visits blocks in exactly the order the CFG would for
    any sequence of branch decisions.  Raises :class:`StructureError` for irreducible or
    malformed CFGs.
    """
    g = Cfg(entry, succs)
    tree = _structure(g)
    cost = _cost(tree)
    if cost:
        # Loops sharing a header: structuring them as nested loops may avoid the DoOnce/flag
        # (and may not: `while True:` with `continue` reads best as one loop).  Keep the better.
        split = g.split_shared_headers()
        if split is not None:
            alt = _structure(Cfg(*split))
            if _cost(alt) < cost:
                tree = alt
    with recursion_room(6 * len(g.rpo)):
        _check_tree(tree, g.rpo)
    return tree


def _structure(g: Cfg) -> Seq:
    b = _Builder(g)
    low = _Lowerer(b)
    # nesting is at most a block, a loop and an if per CFG block; each walk takes <= 2 frames
    # a level
    with recursion_room(6 * len(g.rpo)):
        return Seq(_hoist(low.convert(b.root))[0])


def _cost(tree: Seq) -> int:
    """How far the tree is from plain if/while/break/continue."""
    return sum(isinstance(n, (DoOnce, SetFlag)) for n in iter_nodes(tree))


def skip_empty_blocks(entry: int, succs: dict, empty) -> dict:
    """Thread jumps through blocks that hold no statements; returns a new successor map.

    ``empty`` names blocks whose only content is an unconditional jump (Numba makes one per
    loop with ``continue``: its single latch, and one per ``break``).  Every edge into such a
    block is redirected to the block it jumps to (following chains), the entry is kept, and
    only blocks still reachable are returned.  Reducibility is preserved.  Calling this before
    :func:`structurize` lets ``continue`` inside nested ``if``s become a plain ``continue``
    instead of a jump to a latch block past the rest of the loop body (which needs a DoOnce).
    """
    empty = set(empty)

    def thread(t):
        seen = set()
        while t in empty and t != entry and t not in seen:
            s = list(succs[t])
            if len(s) == 2 and s[0] == s[1]:
                s = s[:1]
            if len(s) != 1:
                break
            seen.add(t)
            t = s[0]
        return t

    out: dict = {}
    work = [entry]
    while work:
        n = work.pop()
        if n in out:
            continue
        if n not in succs:
            raise StructureError(f"block {n!r} is a branch target but has no successor entry")
        out[n] = [thread(t) for t in succs[n]]
        work.extend(reversed(out[n]))
    return out


def iter_nodes(tree):
    """Every node of the tree (Seqs included), in pre-order."""
    stack = [tree]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, Seq):
            stack.extend(reversed(n.items))
        elif isinstance(n, (If, IfFlag)):
            stack.append(n.else_)
            stack.append(n.then)
        elif isinstance(n, (Loop, DoOnce)):
            stack.append(n.body)

"""The control-flow graph of one function and its analyses, for :mod:`.structurize`.

:class:`Cfg` numbers the blocks in reverse postorder (RPO), computes dominators (Cooper–Harvey–Kennedy)
and post-dominators (the reverse graph with a virtual exit), refuses an irreducible graph (an edge that
retreats in RPO to a block that does not dominate its source), finds natural loops, their follows and
the placement parent of every block (structurize.py's docstring, steps 1 and 2), and splits loops that
share a header. It knows block labels and edges only (no Numba import).
"""

from __future__ import annotations

from numba_metal.errors import NumbaMetalError


class StructureError(NumbaMetalError):
    """The CFG is irreducible or malformed (never raised for a CFG that Python produced).

    Seeing one while compiling a Python function means a bug in the compiler, not in the kernel.
    """



_VEXIT = object()  # virtual exit of the post-dominator computation


class Cfg:
    """Reachable sub-graph with RPO, dominators, post-dominators and natural loops."""

    def __init__(self, entry: int, succs: dict, place: bool = True) -> None:
        if entry not in succs:
            raise StructureError(f"entry block {entry!r} is not in the successor map")
        self.entry = entry
        # -- reachability, successor validation, DFS postorder (iterative) --
        self.succ: dict = {}
        visited = {entry}
        post: list = []
        stack = [(entry, iter(self._succ_of(entry, succs)))]
        while stack:
            node, it = stack[-1]
            for t in it:
                if t not in visited:
                    visited.add(t)
                    stack.append((t, iter(self._succ_of(t, succs))))
                    break
            else:
                stack.pop()
                post.append(node)
        self.rpo = post[::-1]
        self.num = {n: i for i, n in enumerate(self.rpo)}
        self.preds: dict = {n: [] for n in self.rpo}
        for n in self.rpo:
            for t in self.succ[n]:
                self.preds[t].append(n)
        # -- dominators --
        self.idom = _chk_dominators(self.rpo, self.num, self.preds)
        self.dom_kids: dict = {n: [] for n in self.rpo}
        for n in self.rpo[1:]:
            self.dom_kids[self.idom[n]].append(n)  # RPO order
        self._dom_pre, self._dom_post = _tree_intervals(entry, self.dom_kids)
        # -- back edges, irreducibility --
        self.back: set = set()
        latches: dict = {}
        for u in self.rpo:
            for v in self.succ[u]:
                if self.num[v] <= self.num[u]:  # retreating edge in this DFS
                    if not self.dominates(v, u):
                        raise StructureError(
                            f"irreducible control flow: edge {u!r} -> {v!r} re-enters a cycle "
                            f"whose entry {v!r} does not dominate {u!r}"
                        )
                    self.back.add((u, v))
                    latches.setdefault(v, []).append(u)
        self.headers = [n for n in self.rpo if n in latches]  # outer headers first
        self.latches = latches
        # -- natural loops and nesting --
        self.body: dict = {}
        self.innermost: dict = {}
        self.loop_parent: dict = {}
        for h in self.headers:
            body = {h}
            work = [u for u in latches[h] if u != h]
            body.update(work)
            while work:
                n = work.pop()
                for p in self.preds[n]:
                    if p not in body:
                        body.add(p)
                        work.append(p)
            self.body[h] = body
            self.loop_parent[h] = self.innermost.get(h)
            for n in body:
                self.innermost[n] = h
        # -- forward predecessors, merge nodes --
        self.fwd_preds = {
            n: [p for p in self.preds[n] if (p, n) not in self.back] for n in self.rpo
        }
        self.is_merge = {n: len(self.fwd_preds[n]) >= 2 for n in self.rpo}
        # -- post-dominators, loop follows, placement --
        if place:
            self._postdominators()
            self._placement()

    def _succ_of(self, n, succs):
        try:
            s = succs[n]
        except KeyError:
            raise StructureError(f"block {n!r} is a branch target but has no successor entry")
        s = list(s)
        if len(s) > 2:
            raise StructureError(f"block {n!r} has {len(s)} successors (at most 2 allowed)")
        if len(s) == 2 and s[0] == s[1]:
            s = s[:1]  # a two-way branch to one target is a jump
        for t in s:
            if t not in succs:
                raise StructureError(f"block {n!r} jumps to unknown block {t!r}")
        self.succ[n] = s
        return s

    def dominates(self, a, b) -> bool:
        return self._dom_pre[a] <= self._dom_pre[b] and self._dom_post[b] <= self._dom_post[a]

    def loops_of(self, n) -> list:
        """Headers of the loops containing ``n``, innermost first."""
        out = []
        h = self.innermost.get(n)
        while h is not None:
            out.append(h)
            h = self.loop_parent[h]
        return out

    # -- post-dominators ------------------------------------------------------------------

    def _postdominators(self) -> None:
        # Reverse graph rooted at a virtual exit that every function-ending block jumps to.
        rsucc = {n: list(self.preds[n]) for n in self.rpo}
        rsucc[_VEXIT] = [n for n in reversed(self.rpo) if not self.succ[n]]
        rpreds: dict = {n: list(self.succ[n]) for n in self.rpo}
        for n in rsucc[_VEXIT]:
            rpreds[n].append(_VEXIT)
        rpreds[_VEXIT] = []
        post: list = []
        seen = {_VEXIT}
        stack = [(_VEXIT, iter(rsucc[_VEXIT]))]
        while stack:
            node, it = stack[-1]
            for t in it:
                if t not in seen:
                    seen.add(t)
                    stack.append((t, iter(rsucc[t])))
                    break
            else:
                stack.pop()
                post.append(node)
        rrpo = post[::-1]
        rnum = {n: i for i, n in enumerate(rrpo)}
        rpreds = {n: [p for p in rpreds[n] if p in rnum] for n in rrpo}
        self.ipdom = _chk_dominators(rrpo, rnum, rpreds)  # nodes that never end: absent
        kids: dict = {n: [] for n in rrpo}
        for n in rrpo[1:]:
            kids[self.ipdom[n]].append(n)
        # number of blocks each node post-dominates (itself included)
        self.pdom_size = {}
        for n in reversed(rrpo):
            self.pdom_size[n] = 1 + sum(self.pdom_size[k] for k in kids[n])

    def _pdom_root(self, n):
        """The ancestor of ``n`` just below the virtual exit (None if n never ends)."""
        if n not in self.ipdom:
            return None
        while self.ipdom[n] is not _VEXIT:
            n = self.ipdom[n]
        return n

    # -- loop follows and placement -------------------------------------------------------

    def _follow(self, h):
        """The block that should come right after loop ``h`` (or None).

        It is the earliest block where the most exit edges of the loop converge: the Python
        statement after the loop, which the loop test, the ``else:`` clause and every ``break``
        reach, while an exit that only returns converges with nothing.
        """
        body = self.body[h]
        parent = self.loop_parent[h]
        pbody = self.body[parent] if parent is not None else None
        exits = [
            (u, v)
            for u in sorted(body, key=self.num.__getitem__)
            for v in self.succ[u]
            if v not in body
        ]
        # Ordinary exits leave this loop only, from code that is not in a nested loop.  Jumps
        # that leave several loops at once (a return inside a nested loop) do not decide it.
        normal = [
            (u, v)
            for (u, v) in exits
            if self.innermost.get(u) == h and (pbody is None or v in pbody)
        ]
        cand = normal or exits
        if not cand:
            return None
        weight: dict = {}  # exit target -> number of exit edges to it (targets in RPO order)
        for _, v in sorted(cand, key=lambda e: self.num[e[1]]):
            weight[v] = weight.get(v, 0) + 1
        natural_src = {h, *self.latches[h]}
        natural = {v for u, v in cand if u in natural_src}
        # What each exit reaches.  An exit to an enclosing loop's header (a `continue` of that
        # loop) reaches just that header: going on from there would re-enter this loop.
        reach = {t: {t} if self.dominates(t, h) else self._fwd_reach(t) for t in weight}
        # Does an exit's code flow on into code the loop header does not dominate?
        joins_of = {t: any(not self.dominates(h, n) for n in reach[t]) for t in weight}
        # Group the blocks reached from the exits by which exit targets reach them; each group
        # is represented by its earliest block (its first point of convergence).
        first_of: dict = {}
        for z in sorted(set().union(*reach.values()), key=self.num.__getitem__):
            sig = tuple(t for t in weight if z in reach[t])
            if sig and sig not in first_of:
                first_of[sig] = z

        def score(sig):
            z = first_of[sig]
            count = sum(weight[t] for t in sig)
            # A target whose immediate dominator is outside the loop is placed after the loop
            # whatever we choose here, so it had better be the one a plain `break` reaches.
            forced = any(not self.dominates(t, h) and self.idom[t] not in body for t in sig)
            # Likewise code that flows on into code the loop header does not dominate: kept
            # inside the loop it would need a multi-level jump.  An exit that only returns
            # costs nothing inside the loop.
            joins = any(joins_of[t] for t in sig)
            root = self._pdom_root(z)
            size = self.pdom_size[root] if root is not None else 1
            return (count, forced, joins, size, bool(natural.intersection(sig)), -self.num[z])

        # (z is unique per group, so there are no ties: the choice is deterministic)
        f = first_of[max(first_of, key=score)]
        if self.dominates(f, h):
            return None  # the loop is left by continuing an enclosing loop: nothing to hoist
        return f

    def _fwd_reach(self, start) -> set:
        seen = {start}
        work = [start]
        while work:
            n = work.pop()
            for t in self.succ[n]:
                if t not in seen and (n, t) not in self.back:
                    seen.add(t)
                    work.append(t)
        return seen

    def _placement(self) -> None:
        """Placement parent of every block; which blocks are hoisted after a loop."""
        reach = {}
        for h in self.headers:
            f = self._follow(h)
            reach[h] = self._fwd_reach(f) if f is not None else set()
        self.pp: dict = {}
        self.hoisted: set = set()
        for z in self.rpo[1:]:
            d = self.idom[z]
            target = None
            for h in self.loops_of(d):  # innermost first; keep the outermost match
                if z not in self.body[h] and z in reach[h]:
                    target = h
            if target is None:
                self.pp[z] = d
            else:
                self.pp[z] = target
                self.hoisted.add(z)
        self.kids: dict = {n: [] for n in self.rpo}
        for z in self.rpo[1:]:
            self.kids[self.pp[z]].append(z)  # RPO order

    def is_inline(self, z) -> bool:
        return not self.is_merge[z] and z not in self.hoisted

    def split_shared_headers(self):
        """The CFG with one code-less header per nesting level of loops that share a header.

        CPython compiles ``while c:`` whose body starts with ``while True:`` so that both loops
        jump back to the same block; natural-loop analysis then sees one loop with two latches.
        When the latches' own natural loops are strictly nested, a chain of :class:`Virtual`
        blocks in front of the header gives each its own loop again.  Returns ``(entry, succs)``
        or None when no header qualifies.  (Reducibility is preserved: each virtual block
        dominates the latches that now jump to it.)
        """
        new = {n: list(self.succ[n]) for n in self.rpo}
        entry = self.entry
        changed = False
        for h in self.headers:
            levels: dict = {}  # natural loop of a latch -> its latches
            for u in self.latches[h]:
                body = {h, u}
                work = [u] if u != h else []
                while work:
                    n = work.pop()
                    for p in self.preds[n]:
                        if p not in body:
                            body.add(p)
                            work.append(p)
                levels.setdefault(frozenset(body), []).append(u)
            if len(levels) < 2:
                continue
            chain = sorted(levels, key=len)
            if any(not inner < outer for inner, outer in zip(chain, chain[1:])):
                continue  # not nested: keep one loop
            heads = [h] + [Virtual(h, i) for i in range(1, len(chain))]
            for i in range(1, len(heads)):
                new[heads[i]] = [heads[i - 1]]
            for p in self.fwd_preds[h]:
                new[p] = [heads[-1] if t == h else t for t in new[p]]
            for i, body in enumerate(chain):
                for u in levels[body]:
                    new[u] = [heads[i] if t == h else t for t in new[u]]
            if h == entry:
                entry = heads[-1]
            changed = True
        return (entry, new) if changed else None


class Virtual:
    """A code-less block heading one level of loops that share a header (see above)."""

    __slots__ = ("header", "level")

    def __init__(self, header, level):
        self.header = header
        self.level = level

    def __repr__(self) -> str:
        return f"<loop level {self.level} of {self.header!r}>"


def _chk_dominators(rpo: list, num: dict, preds: dict) -> dict:
    """Cooper, Harvey & Kennedy, "A Simple, Fast Dominance Algorithm" (2001)."""
    entry = rpo[0]
    idom = {entry: entry}
    changed = True
    while changed:
        changed = False
        for n in rpo[1:]:
            new = None
            for p in preds[n]:
                if p not in idom:
                    continue
                if new is None:
                    new = p
                    continue
                a, b = p, new
                while a != b:
                    while num[a] > num[b]:
                        a = idom[a]
                    while num[b] > num[a]:
                        b = idom[b]
                new = a
            if idom.get(n) != new:
                idom[n] = new
                changed = True
    del idom[entry]
    return idom


def _tree_intervals(root, kids: dict):
    pre: dict = {}
    post: dict = {}
    clock = 0
    stack = [(root, iter(kids[root]))]
    pre[root] = clock
    clock += 1
    while stack:
        node, it = stack[-1]
        for k in it:
            pre[k] = clock
            clock += 1
            stack.append((k, iter(kids[k])))
            break
        else:
            stack.pop()
            post[node] = clock
            clock += 1
    return pre, post

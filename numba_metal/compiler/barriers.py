"""Which threadgroup barriers of a kernel must also fence device memory (issue 28 item 3).

numba.cuda's ``syncthreads()`` makes every global- and shared-memory access a thread made before it
visible to the threads of its block after it, so numba-metal's barrier fences both
(``mem_flags::mem_device | mem_flags::mem_threadgroup``). A barrier may fence threadgroup memory only
when no device-memory access can be ordered by it:

1. no device-memory write by this thread since the previous barrier (or the kernel's start), on any
   path: a write before a barrier that fences it is ordered by that barrier, so earlier writes need
   nothing more;
2. and not both a device-memory read since the previous barrier that fences device memory and a
   device-memory write after this barrier before the next one that does: another thread's later write
   must not reach a read made before the barrier (the arrays may alias, so any read and any write count).

A *device-memory access* is conservative: an item or attribute store to, or a load from, anything that
is not a threadgroup, thread or constant array; any call that receives something that may hold a device
array (an atomic, a device function, anything but ``len``) counts as a read and a write; ``print``
counts as a write. Other barriers (``syncthreads_count`` and kin) always fence device memory.

The analysis runs over the control-flow graph of the typed IR: a forward pass (a write since the last
barrier, a read since the last device-fencing barrier) and a backward pass (a write before the next
device-fencing barrier), both joined over paths. Whether a barrier fences device memory changes the
conditions of the others, so the choice is greedy: all barriers fence device memory; each in turn, in
program order, fences threadgroup memory only if then every such barrier satisfies both conditions.
Only kernels are analysed; a device function's barriers, whose callers are unknown, fence both.
"""

from __future__ import annotations

from numba.core import ir, types

from .arraytypes import MetalArray
from .lowering import registry

_READ, _WRITE = "R", "W"
_READS_ONLY = (len,)
#: Types whose values never hold a device array.
_NO_DEVICE_MEMORY = (MetalArray, types.Number, types.Boolean, types.NoneType, types.Module, types.Function,
                     types.NumberClass, types.DType, types.RangeType, types.RangeIteratorType,
                     types.StringLiteral, types.UnicodeType, types.EnumMember, types.Omitted, types.Dispatcher)


def threadgroup_only(tf) -> frozenset:
    """The ``id()`` of each ``ir.Expr`` call of a narrowable barrier of kernel ``tf`` that needs to fence
    threadgroup memory only. Cached in ``tf.extra`` (with the IR it names)."""
    cached = tf.extra.get("threadgroup_only_barriers")
    if cached is not None:
        return cached
    blocks = tf.func_ir.blocks
    events = {label: _events(tf, block) for label, block in blocks.items()}
    succs = {label: _successors(block) for label, block in blocks.items()}
    barriers = [e for label in sorted(events) for e in events[label] if isinstance(e, tuple) and e[0]]
    relaxed: set = set()
    for b in sorted(barriers, key=lambda e: (e[1].loc.line, e[1].loc.col or 0) if e[1].loc else (0, 0)):
        if _consistent(events, succs, relaxed | {id(b[1])}):
            relaxed.add(id(b[1]))
    result = frozenset(relaxed)
    tf.extra["threadgroup_only_barriers"] = result
    return result


def _consistent(events, succs, relaxed) -> bool:
    """Every relaxed barrier satisfies both conditions of the module docstring."""
    entry = min(events)
    # forward: (a write since the last barrier, a read since the last device-fencing barrier)
    state_in = {label: None for label in events}
    state_in[entry] = (False, False)
    work = [entry]
    before = {}
    while work:
        label = work.pop()
        w, r = state_in[label]
        for e in events[label]:
            if e == _READ:
                r = True
            elif e == _WRITE:
                w = True
            else:
                before[id(e[1])] = (w, r)
                w = False
                if id(e[1]) not in relaxed:
                    r = False
        for s in succs[label]:
            old = state_in[s]
            new = (w, r) if old is None else (old[0] or w, old[1] or r)
            if new != old:
                state_in[s] = new
                work.append(s)
    # backward: a device write after this point before the next device-fencing barrier
    after_out = {label: False for label in events}
    after = {}
    changed = True
    while changed:
        changed = False
        for label in sorted(events, reverse=True):
            a = any(_entry_writes(events[s], after_out[s], relaxed) for s in succs[label])
            if a != after_out[label]:
                after_out[label] = a
                changed = True
    for label in events:
        a = after_out[label]
        for e in reversed(events[label]):
            if e == _WRITE:
                a = True
            elif isinstance(e, tuple):
                after[id(e[1])] = a
                if id(e[1]) not in relaxed:
                    a = False
    for key in relaxed:
        if key not in before:          # unreachable: nothing to order
            continue
        w, r = before[key]
        if w or (r and after.get(key, True)):
            return False
    return True


def _entry_writes(events, out, relaxed) -> bool:
    a = out
    for e in reversed(events):
        if e == _WRITE:
            a = True
        elif isinstance(e, tuple) and id(e[1]) not in relaxed:
            a = False
    return a


def _successors(block) -> list:
    term = block.terminator
    if isinstance(term, ir.Jump):
        return [term.target]
    if isinstance(term, ir.Branch):
        return [term.truebr, term.falsebr]
    return []


def _may_hold_device_memory(ty) -> bool:
    ty = types.unliteral(ty) if ty is not None else None
    if ty is None:
        return True
    if isinstance(ty, types.BaseTuple):
        return any(_may_hold_device_memory(t) for t in ty.types)
    return not isinstance(ty, _NO_DEVICE_MEMORY)


def _events(tf, block) -> list:
    """The device-memory accesses and barriers of ``block`` in order: ``_READ``, ``_WRITE``, or
    ``(narrowable, call)`` for a barrier (a full one is ``(False, call)``)."""
    out = []
    typeof = tf.typemap.get
    for s in block.body:
        if isinstance(s, (ir.SetItem, ir.StaticSetItem, ir.SetAttr)):
            if _may_hold_device_memory(typeof(s.target.name)):
                out.append(_WRITE)
        elif isinstance(s, ir.Print):
            out.append(_WRITE)
        elif isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr):
            e = s.value
            if e.op in ("getitem", "static_getitem", "typed_getitem", "getattr"):
                base = types.unliteral(typeof(e.value.name))
                if isinstance(base, (types.Record,)) or (isinstance(base, types.Array)
                                                         and not isinstance(base, MetalArray)
                                                         and e.op != "getattr"):
                    out.append(_READ)
            elif e.op == "inplace_binop":
                if _may_hold_device_memory(typeof(e.lhs.name)):
                    out += [_READ, _WRITE]
            elif e.op == "call":
                out += _call_events(tf, e)
    return out


def _call_events(tf, e) -> list:
    key = getattr(tf.typemap.get(e.func.name), "typing_key", None)
    narrowable = registry.barrier_kind(key)
    if narrowable is not None:
        return [(narrowable, e)]
    if key in _READS_ONLY:
        return []
    passed = list(e.args) + [v for _, v in e.kws] + ([e.vararg] if e.vararg else [])
    if any(_may_hold_device_memory(tf.typemap.get(v.name)) for v in passed):
        return [_READ, _WRITE]
    return []

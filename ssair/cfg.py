"""Control-flow graph analyses over an `IR`'s blocks (all keyed by block id).

  * `successors`, `predecessors`: adjacency maps, in block order, without repeats;
  * `postorder`, `reverse_postorder`, `reachable`: depth-first orders from the entry;
  * `immediate_dominators` (Cooper, Harvey & Kennedy, "A Simple, Fast Dominance
    Algorithm", 2001), `DomTree` with O(1) `dominates(a, b)` queries,
    `dominance_frontiers`, `immediate_post_dominators`;
  * `strongly_connected_components` (Tarjan), `blocks_in_cycles`: a block can run
    more than once in one call iff it lies on a CFG cycle (the adjoint keeps tapes
    only for those blocks);
  * `back_edges` (edges whose target dominates their source), `natural_loops`
    (header -> body), `retreating_edges` and `is_reducible`.

Traversals are iterative, so deep CFGs do not hit Python's recursion limit.  A
terminator that jumps to a missing block raises `KeyError` naming both blocks (run
`ssair.verify` for a full diagnosis).
"""
from __future__ import annotations

from .ir import IR


def successors(ir: IR) -> dict:
    """Block id -> list of successor ids, in terminator order, without repeats."""
    ids = {b.id for b in ir.blocks}
    succ = {}
    for b in ir.blocks:
        for s in b.successors():
            if s not in ids:
                raise KeyError(f"{ir.name}: block #{b.id} jumps to missing block #{s}")
        succ[b.id] = list(dict.fromkeys(b.successors()))
    return succ


def predecessors(ir: IR) -> dict:
    """Block id -> list of predecessor ids, in block order, without repeats."""
    succ = successors(ir)
    preds = {b: [] for b in succ}
    for b, ss in succ.items():
        for s in ss:
            if b not in preds[s]:
                preds[s].append(b)
    return preds


def _postorder(entry, succ: dict) -> list:
    seen, order = {entry}, []
    stack = [(entry, iter(succ[entry]))]
    while stack:
        node, it = stack[-1]
        for s in it:
            if s not in seen:
                seen.add(s)
                stack.append((s, iter(succ[s])))
                break
        else:
            stack.pop()
            order.append(node)
    return order


def postorder(ir: IR) -> list:
    """Reachable block ids in depth-first postorder from the entry."""
    if not ir.blocks:
        return []
    return _postorder(ir.entry.id, successors(ir))


def reverse_postorder(ir: IR) -> list:
    """Reachable block ids in reverse postorder (every block before its successors,
    except along back edges)."""
    return postorder(ir)[::-1]


def reachable(ir: IR) -> set:
    """Ids of the blocks reachable from the entry."""
    return set(postorder(ir))


def unreachable(ir: IR) -> list:
    """Ids of the blocks not reachable from the entry, in block order."""
    live = reachable(ir)
    return [b.id for b in ir.blocks if b.id not in live]


# -- dominators ----------------------------------------------------------------
def _idoms(order: list, preds: dict) -> dict:
    """Cooper-Harvey-Kennedy on a graph given in reverse postorder (entry first);
    returns node -> immediate dominator, the entry mapping to None."""
    index = {n: i for i, n in enumerate(order)}
    idom = {order[0]: order[0]}

    def intersect(a, b):
        while a != b:
            while index[a] > index[b]:
                a = idom[a]
            while index[b] > index[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for n in order[1:]:
            done = [p for p in preds[n] if p in idom]
            new = done[0]
            for p in done[1:]:
                new = intersect(p, new)
            if idom.get(n) != new:
                idom[n], changed = new, True
    idom[order[0]] = None
    return idom


def immediate_dominators(ir: IR) -> dict:
    """Reachable block id -> its immediate dominator's id (None for the entry)."""
    order = reverse_postorder(ir)
    return _idoms(order, predecessors(ir)) if order else {}


class DomTree:
    """The dominator tree of an IR's reachable blocks.

    `idom[b]` is b's immediate dominator (None for the entry), `children[b]` the blocks
    it immediately dominates.  `dominates(a, b)` is true when every path from the entry
    to b passes through a (a block dominates itself); it is False when either block is
    unreachable.
    """

    def __init__(self, ir: IR, idom: dict | None = None):
        self.idom = immediate_dominators(ir) if idom is None else idom
        self.children = {b: [] for b in self.idom}
        for b, d in self.idom.items():
            if d is not None:
                self.children[d].append(b)
        self._number()

    def _number(self) -> None:
        self.pre, self.post = {}, {}
        roots = [b for b, d in self.idom.items() if d is None]
        clock = 0
        for root in roots:
            stack = [(root, False)]
            while stack:
                node, leaving = stack.pop()
                clock += 1
                if leaving:
                    self.post[node] = clock
                    continue
                self.pre[node] = clock
                stack.append((node, True))
                stack += [(c, False) for c in reversed(self.children[node])]

    def dominates(self, a: int, b: int) -> bool:
        if a not in self.pre or b not in self.pre:
            return False
        return self.pre[a] <= self.pre[b] and self.post[b] <= self.post[a]

    def strictly_dominates(self, a: int, b: int) -> bool:
        return a != b and self.dominates(a, b)

    def dominators(self, b: int) -> list:
        """b and its dominators, from b up to the entry."""
        out = []
        while b is not None:
            out.append(b)
            b = self.idom[b]
        return out


def dominates(ir: IR, a: int, b: int) -> bool:
    """Whether block a dominates block b (build a `DomTree` for many queries)."""
    return DomTree(ir).dominates(a, b)


def dominance_frontiers(ir: IR) -> dict:
    """Reachable block id -> set of blocks in its dominance frontier (where its
    dominance ends: the join points that need phis for values it defines)."""
    idom = immediate_dominators(ir)
    preds = predecessors(ir)
    df = {b: set() for b in idom}
    for b in idom:
        ps = [p for p in preds[b] if p in idom]
        if len(ps) < 2:
            continue
        for p in ps:
            runner = p
            while runner is not None and runner != idom[b]:
                df[runner].add(b)
                runner = idom[runner]
    return df


_EXIT = object()


def immediate_post_dominators(ir: IR) -> dict:
    """Block id -> immediate post-dominator id, or None when a block's only
    post-dominator is the virtual exit (returns lead there).  Blocks that cannot reach
    a `return` (infinite loops) and unreachable blocks are left out."""
    succ = successors(ir)
    rsucc = {b: [] for b in succ}
    rsucc[_EXIT] = [b for b, ss in succ.items() if not ss]
    for b, ss in succ.items():
        for s in ss:
            rsucc[s].append(b)
    order = _postorder(_EXIT, rsucc)[::-1]
    rpreds = {n: [] for n in order}
    for n in order:
        for s in rsucc[n]:
            rpreds[s].append(n)
    ipdom = _idoms(order, {n: list(dict.fromkeys(ps)) for n, ps in rpreds.items()})
    live = reachable(ir)
    return {b: (None if d is _EXIT else d) for b, d in ipdom.items()
            if b is not _EXIT and b in live}


# -- cycles and loops ------------------------------------------------------------
def strongly_connected_components(ir: IR) -> list:
    """Tarjan's SCCs of all blocks, each a list of ids; components come out in reverse
    topological order (a component before the ones that jump into it)."""
    succ = successors(ir)
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    for root in succ:
        if root not in index:
            _tarjan(root, succ, index, low, on_stack, stack, comps)
    return comps


def _tarjan(root, succ, index, low, on_stack, stack, comps) -> None:
    work = [(root, iter(succ[root]))]
    index[root] = low[root] = len(index)
    stack.append(root)
    on_stack.add(root)
    while work:
        node, it = work[-1]
        for s in it:
            if s not in index:
                index[s] = low[s] = len(index)
                stack.append(s)
                on_stack.add(s)
                work.append((s, iter(succ[s])))
                break
            if s in on_stack:
                low[node] = min(low[node], index[s])
        else:
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comps.append(_pop_component(node, stack, on_stack))


def _pop_component(node, stack: list, on_stack: set) -> list:
    comp = []
    while True:
        n = stack.pop()
        on_stack.discard(n)
        comp.append(n)
        if n == node:
            return comp[::-1]


def blocks_in_cycles(ir: IR) -> set:
    """Ids of the blocks on some CFG cycle (a self loop counts): exactly the blocks
    that can run more than once in one call."""
    succ = successors(ir)
    out = set()
    for comp in strongly_connected_components(ir):
        if len(comp) > 1 or comp[0] in succ[comp[0]]:
            out.update(comp)
    return out


def retreating_edges(ir: IR) -> list:
    """Edges (tail, head) that go back to a block still on the depth-first stack."""
    if not ir.blocks:
        return []
    succ = successors(ir)
    entry = ir.entry.id
    on_path, done, out = {entry}, {entry}, []
    work = [(entry, iter(succ[entry]))]
    while work:
        node, it = work[-1]
        for s in it:
            if s in on_path:
                out.append((node, s))
            elif s not in done:
                done.add(s)
                on_path.add(s)
                work.append((s, iter(succ[s])))
                break
        else:
            work.pop()
            on_path.discard(node)
    return out


def back_edges(ir: IR) -> list:
    """Edges (tail, head) of reachable blocks where head dominates tail."""
    dt = DomTree(ir)
    succ = successors(ir)
    return [(b, s) for b in reverse_postorder(ir) for s in succ[b] if dt.dominates(s, b)]


def is_reducible(ir: IR) -> bool:
    """True when every retreating edge is a back edge (every cycle has one entry)."""
    return sorted(retreating_edges(ir)) == sorted(back_edges(ir))


def natural_loops(ir: IR) -> dict:
    """Loop header id -> set of block ids in its natural loop (header included); the
    loops of several back edges to one header are merged."""
    preds = predecessors(ir)
    live = reachable(ir)
    loops = {}
    for tail, head in back_edges(ir):
        body = loops.setdefault(head, {head})
        work = [tail]
        while work:
            n = work.pop()
            if n not in body and n in live:
                body.add(n)
                work += preds[n]
    return loops


def loop_depth(ir: IR) -> dict:
    """Block id -> number of natural loops containing it (0 outside loops)."""
    depth = {b.id: 0 for b in ir.blocks}
    for body in natural_loops(ir).values():
        for b in body:
            depth[b] += 1
    return depth

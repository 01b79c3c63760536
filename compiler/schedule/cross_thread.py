"""Lowering a reduction across the threads of a block: a reduction leaf bound to threadIdx.*.

For each output element of the stage, the T threads along the bound tag run:
1. partial = identity; the thread's slice of the reduction (every other reduction leaf, in a
   register); thread t's slice is the iterations where the bound leaf is t;
2. red[..., t] = partial, in shared memory, one row per output the block computes at once (the
   stage's other thread-bound loops index the rows);
3. a tree: at each level, the threads below half combine their element with the one `half`
   further on (the first level's half is T rounded up to a power of two, halved: the threads
   whose partner is past T keep theirs), until red[..., 0] holds the reduction;
4. every thread reads red[..., 0] (a local result holds it in every thread); a store to global
   memory is made by thread 0 only.
Steps 2 and 3 are shared-memory writes marked as fetches, so cooperative_fetch (gpu/fetch.py)
puts the barriers: one after each (every thread sees the level before), and one before step 2
inside a loop (no thread overwrites red while another still reads the previous result).
"""
from __future__ import annotations

from ..tir import expr as E
from ..tir import gpu as G
from ..tir import stmt as S
from .schedule import ScheduleError
from .thread_binding import bound_tag, cross_thread_leaf


def cross_thread_order(st):
    """The stage's leaves in the order they are lowered: data leaves, the bound reduction leaf,
    the other reduction leaves (each thread's slice). Checks what the tree needs."""
    rt = cross_thread_leaf(st)
    leaves = st.leaf_iter_vars
    first_red = next(p for p, iv in enumerate(leaves) if iv.kind == "reduce")
    late = [iv.name for iv in leaves[first_red:] if iv.kind != "reduce"]
    if late:
        raise ScheduleError(f"stage {st.name} reduces across threads along {bound_tag(st, rt)}, but its data axes "
                            f"{late} are inside its reduction loops; a tree over the threads combines one output "
                            "at a time: reorder the data axes outside the reduction axes")
    if st.tensorize_at is not None:
        raise ScheduleError(f"stage {st.name} reduces across threads and is tensorized; do one or the other")
    if st.scope == "shared":
        raise ScheduleError(f"stage {st.name} reduces across threads into a shared buffer; its result is in every "
                            "thread already: give the stage 'local' scope, or compute it at the root (global)")
    return leaves[:first_red] + [rt] + [iv for iv in leaves[first_red:] if iv is not rt]


def enclosing_thread_leaves(st):
    """(stage, leaf) of every loop bound to threadIdx.* around the stage's reduction: its own
    data leaves and its attach chain's leaves up to each attach point, outermost first. The
    bound reduction's tag must not be among them (a thread would index two loops)."""
    rt = cross_thread_leaf(st)
    tag = bound_tag(st, rt)
    out = [(st, iv) for iv in st.leaf_iter_vars if iv.kind != "reduce" and _is_thread(st, iv)]
    cur = st
    while isinstance(cur.attach, tuple):
        _, parent, piv = cur.attach
        clash = [iv for iv in parent.leaf_iter_vars if bound_tag(parent, iv) == tag]
        if clash:
            raise ScheduleError(f"stage {st.name} reduces across {tag}, but it is computed inside stage "
                                f"{parent.name}, whose axis {clash[0].name} is bound to {tag} too; compute it at "
                                f"a loop outside that one and bind another tag there")
        pos = parent.leaf_iter_vars.index(piv)
        out = [(parent, iv) for iv in parent.leaf_iter_vars[:pos + 1] if _is_thread(parent, iv)] + out
        cur = parent
    for s2, iv in out:
        if bound_tag(s2, iv) == tag:
            raise ScheduleError(f"stage {st.name} binds its data axis {iv.name} and its reduction axis {rt.name} "
                                f"both to {tag}")
    return out


def _is_thread(stage, iv):
    return G.is_thread_tag(bound_tag(stage, iv) or "")


def levels(threads):
    """The tree's levels: (half, active) -- threads t < active combine red[t] and red[t + half]."""
    half = 1
    while half < threads:
        half *= 2
    out = []
    while half > 1:
        half //= 2
        out.append((half, min(half, threads - half)))
    return out


def combine(combiner, a, b):
    """The accumulator `a` combined with the next value `b`."""
    if combiner == "sum":
        return a + b
    if combiner == "fmax":          # a NaN b compares false and leaves a; a starts at -inf
        return E.Select(E.GT(b, a), b, a)
    return E.Max(a, b) if combiner == "max" else E.Min(a, b)


def partial_buffer(st, dtype):
    return S.Buffer(f"{st.name}.partial", (1,), dtype, "local")


def reduce_across_threads(st, rt, threads, rows, reduce, partial, slice_nest, store):
    """The nest at the bound reduction leaf. `rows` are [(Var, extent)] of the enclosing
    thread-bound loops; `reduce` the stage's Reduce (combiner, identity); `slice_nest` the
    thread's slice, accumulating into partial[0]; `store(value)` the stage's store of its result."""
    red = S.Buffer(f"{st.name}.red", tuple(n for _, n in rows) + (threads,), reduce.dtype, "shared")
    row = [v for v, _ in rows]
    tid, zero = rt.var, E.Const(0, "int32")

    def at(t):
        return E.BufferLoad(red, row + [t])

    steps = [S.BufferStore(partial, reduce.identity(), [zero]),
             slice_nest,
             _fetch(red, st.name, S.BufferStore(red, E.BufferLoad(partial, [zero]), row + [tid]))]
    for half, active in levels(threads):
        level = S.BufferStore(red, combine(reduce.combiner, at(tid), at(tid + half)), row + [tid])
        steps.append(_fetch(red, st.name, S.IfThenElse(tid < active, level)))
    steps.append(store(at(zero)))
    body = S.Allocate(partial, S.seq(*steps))
    loop = S.For(rt.var, 0, threads, S.ForKind.THREAD_BINDING, body, st.iter_annot.get(rt))
    return S.Allocate(red, loop)


def _fetch(buf, name, stmt):
    return S.AttrStmt(G.SHARED_FETCH, buf, name, stmt)

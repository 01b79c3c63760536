"""Lowering a Schedule to a loop-IR PrimFunc.

Steps, in order:
1. inline: compute_inline'd stages are substituted into their readers' expressions;
2. bound inference: for every stage placed with compute_at, the region its readers need
   inside the attach loop (consumers first, so a reader's own region is known);
3. loop nests: one loop per leaf axis, original axes recovered from split/fuse relations,
   reduction init placed just outside the first reduction loop, guards where a split does
   not divide, attached stages (with region-sized buffers) at their loops, tensorized regions
   handed to the intrinsic.
"""
from __future__ import annotations

import itertools
import math

from ..tir import expr as E
from ..tir import stmt as S
from ..tir import arith
from ..tir import gpu as G
from ..tir.functor import transform, substitute, uses_var, visit
from ..tir.prefetch import prefetch
from ..intrin.tensorize import emit_tensorized
from ..te.tensor import PlaceholderOp
from .schedule import ScheduleError, Split
from .cross_thread import (combine, cross_thread_order, enclosing_thread_leaves, partial_buffer,
                           reduce_across_threads)
from .thread_binding import cross_thread_leaf, launch_index, thread_leaves


class LoweringContext:
    def __init__(self, sch, args, name):
        self.sch, self.name = sch, name
        self.args = list(args)
        self.buffers = {}          # op -> Buffer
        self.region = {}           # stage -> [(min_expr, extent_int)] per data axis
        self.leaf_ext = {}         # stage -> {IterVar: int}
        self.expanded = {}         # stage -> body with inlined stages substituted
        self.var_ranges = {}       # Var -> (lo, hi) constant, every leaf var
        self.attached = {}         # (stage, IterVar) -> [stages]
        self.params = []
        for t in self.args:
            if isinstance(t.op, PlaceholderOp) and t.op not in sch.stage_map:
                # an input no stage reads: the kernel takes it and leaves it alone (a graph node's
                # operand only some targets' forms use, such as an int8 conv's weight sums)
                buf = S.Buffer(t.name, t.shape, t.dtype)
                self.buffers[t.op] = buf
                self.params.append(buf)
                continue
            st = sch[t]
            if st.attach != "root":
                raise ScheduleError(f"{t.name} is a kernel argument but its stage is "
                                    f"{'inlined' if st.attach == 'inline' else 'attached'}; "
                                    "arguments must be computed at the root")
            buf = S.Buffer(t.name, t.shape, t.dtype)
            self.buffers[t.op] = buf
            self.params.append(buf)


def _stage_of(sch, tensor):
    return sch.stage_map[tensor.op]


# -- 1. inlining ---------------------------------------------------------------------------

def _expand(ctx, st):
    if st in ctx.expanded:
        return ctx.expanded[st]
    sch = ctx.sch

    def post(n):
        if isinstance(n, E.TensorRead):
            src = _stage_of(sch, n.tensor)
            if src.attach == "inline":
                body = _expand(ctx, src)
                return substitute(body, {iv.var: i for iv, i in zip(src.axis, n.indices)})
        return None
    out = transform(st.body, post)
    ctx.expanded[st] = out
    return out


def _reads(expr):
    out = []
    visit(expr, lambda n: out.append(n) if isinstance(n, E.TensorRead) else None)
    return out


# -- 2. bound inference --------------------------------------------------------------------

def _leaf_extents(st, root_ext):
    ext = dict(root_ext)
    for rel in st.relations:
        if isinstance(rel, Split):
            p = ext[rel.parent]
            ext[rel.outer] = -(-p // rel.factor)
            ext[rel.inner] = min(rel.factor, p)
        else:
            ext[rel.fused] = ext[rel.outer] * ext[rel.inner]
    return ext


def _relative_values(ctx, st):
    """Root IterVar -> offset within its region, as an expression of the leaf vars."""
    ext = ctx.leaf_ext[st]
    val = {iv: iv.var for iv in st.leaf_iter_vars}
    for rel in reversed(st.relations):
        if isinstance(rel, Split):
            val[rel.parent] = val[rel.outer] * rel.factor + val[rel.inner]
        else:
            n = ext[rel.inner]
            val[rel.outer] = val[rel.fused] // n
            val[rel.inner] = val[rel.fused] % n
    return val


def _root_values(ctx, st):
    """Root IterVar -> its global coordinate (region min + relative offset)."""
    rel = _relative_values(ctx, st)
    out = {}
    for k, iv in enumerate(st.axis):
        out[iv] = arith.simplify(ctx.region[st][k][0] + rel[iv])
    for iv in st.reduce_axis:
        out[iv] = rel[iv] + iv.dom_min if iv.dom_min else rel[iv]
    return out, rel


def _attach_chain(st, target_stage, target_iv):
    """Leaf vars that vary inside (target_stage, target_iv) as seen by reader `st`, or None
    when `st` is not computed inside that loop."""
    tpos = target_stage.leaf_iter_vars.index(target_iv)
    inner_of_target = target_stage.leaf_iter_vars[tpos + 1:]
    if st is target_stage:
        return list(inner_of_target)
    relax_vars, cur = list(st.leaf_iter_vars), st
    while True:
        if not isinstance(cur.attach, tuple):
            return None
        _, parent, piv = cur.attach
        if parent is target_stage:
            if parent.leaf_iter_vars.index(piv) < tpos:
                return None
            return relax_vars + list(inner_of_target)
        relax_vars += parent.leaf_iter_vars
        cur = parent


def _infer_region(ctx, st):
    _, parent, iv = st.attach
    tensor_shape = st.op.shape
    dom = {}
    los, his = [None] * len(tensor_shape), [None] * len(tensor_shape)
    readers = [r for r in ctx.sch.stages if r.body is not None and r.attach != "inline"
               and any(_stage_of(ctx.sch, rd.tensor) is st for rd in _reads(ctx.expanded[r]))]
    if not readers:
        raise ScheduleError(f"compute_at of {st.name}: no stage reads it")
    for r in readers:
        relax_vars = _attach_chain(r, parent, iv)
        if relax_vars is None:
            raise ScheduleError(f"compute_at of {st.name} at {parent.name}.{iv.name}: its reader "
                                f"{r.name} is computed outside that loop; attach it deeper or "
                                "move the reader inside")
        if st.scope == "shared":   # one copy per block, so the part of every thread in it
            relax_vars = relax_vars + thread_leaves(r)
        for v in relax_vars:
            lo, hi = ctx.var_ranges[v.var]
            dom[v.var] = (E.Const(lo, "int32"), E.Const(hi, "int32"))
        roots, _ = _root_values(ctx, r)
        rootmap = {iv.var: val for iv, val in roots.items()}
        for rd in _reads(ctx.expanded[r]):
            if _stage_of(ctx.sch, rd.tensor) is not st:
                continue
            for k, idx in enumerate(rd.indices):
                # Substitute repeatedly: attached readers' region mins mention outer leaves.
                e = substitute(idx, rootmap)
                lo, hi = arith.relax(arith.simplify(e), dom)
                los[k] = lo if los[k] is None else E.Min(los[k], lo)
                his[k] = hi if his[k] is None else E.Max(his[k], hi)
    region = []
    for k, full in enumerate(tensor_shape):
        lo, hi = arith.simplify(los[k]), arith.simplify(his[k])
        ext = arith.simplify(hi - lo + 1)
        if not isinstance(ext, E.Const):
            ext = E.Const(int(arith.bounds(ext, ctx.var_ranges)[1]), "int32")
        if ext.value >= full or not isinstance(ext.value, int) or k in st.whole_axes:
            region.append((E.Const(0, "int32"), full))
        else:
            region.append((lo, ext.value))
    return region


def infer_bounds(ctx):
    sch = ctx.sch
    for st in sch.stages:
        if st.body is not None:
            _expand(ctx, st)
    # consumers first: a reader's region (and so its loop extents) is known before its producers'
    for st in reversed(sch.stages):
        if st.is_placeholder or st.attach == "inline":
            continue
        if st.attach == "root":
            ctx.region[st] = [(E.Const(0, "int32"), n) for n in st.op.shape]
        else:
            ctx.region[st] = _infer_region(ctx, st)
            ctx.attached.setdefault((st.attach[1], st.attach[2]), []).insert(0, st)
        root_ext = {iv: ctx.region[st][k][1] for k, iv in enumerate(st.axis)}
        root_ext.update({iv: iv.extent for iv in st.reduce_axis})
        ctx.leaf_ext[st] = _leaf_extents(st, root_ext)
        for iv, n in ctx.leaf_ext[st].items():
            ctx.var_ranges[iv.var] = (0, n - 1)
        if st.op not in ctx.buffers:
            shape = [n for _, n in ctx.region[st]]
            ctx.buffers[st.op] = S.Buffer(st.name, shape, st.op.dtype, scope=st.scope)
    # attachment order must follow the stage order (producers first)
    for key, lst in ctx.attached.items():
        lst.sort(key=sch.stages.index)


# -- 3. loop nests -------------------------------------------------------------------------

def lower_reads(ctx, expr):
    """TensorRead -> BufferLoad, offset by the producer's region minimum."""
    def post(n):
        if isinstance(n, E.TensorRead):
            st = _stage_of(ctx.sch, n.tensor)
            if n.tensor.op not in ctx.buffers:
                raise ScheduleError(f"kernel {ctx.name} reads {n.tensor.name}, which is neither "
                                    "an argument nor computed by the schedule; add it to args")
            buf = ctx.buffers[n.tensor.op]
            if st in ctx.region:
                idx = [arith.simplify(i - m) if not E.is_const(m, 0) else i
                       for i, (m, _) in zip(n.indices, ctx.region[st])]
            else:
                idx = n.indices
            return E.BufferLoad(buf, idx)
        return None
    return transform(expr, post)


def _guards(ctx, st, roots, rel):
    conds = []
    for k, iv in enumerate(st.axis):
        mn, ext = ctx.region[st][k]
        conds.append(rel[iv] < ext)
        if not E.is_const(mn, 0):
            conds += [roots[iv] >= 0, roots[iv] < st.op.shape[k]]
    data = [arith.simplify(c, ctx.var_ranges) for c in conds]
    red = [arith.simplify(rel[iv] < iv.extent, ctx.var_ranges) for iv in st.reduce_axis]
    keep = lambda cs: [c for c in cs if not E.is_const(c, True)]
    return keep(data), keep(red)


def _guarded(conds, stmt):
    return S.IfThenElse(E.all_of(*conds), stmt) if conds else stmt


def stage_nest(ctx, st):
    roots, rel = _root_values(ctx, st)
    buf = ctx.buffers[st.op]
    idx = [rel[iv] for iv in st.axis]
    rootmap = {iv.var: v for iv, v in roots.items()}
    # Root values first, region offsets second: a producer's region min is written in leaf
    # vars, and an axis that was never split has the same var as leaf (relative) and as root
    # (absolute), so subtracting first would cancel the wrong terms.
    body = lower_reads(ctx, substitute(ctx.expanded[st], rootmap))
    data_g, red_g = _guards(ctx, st, roots, rel)
    leaves, ext = st.leaf_iter_vars, ctx.leaf_ext[st]
    # GPU store predicates: only the threads with index 0 along these tags store
    store_g = data_g + [launch_index(tag).equal(0) for tag in st.store_tags]
    cross = cross_thread_leaf(st)
    if cross is not None:
        leaves = cross_thread_order(st)

    if isinstance(body, E.Reduce) and cross is not None:
        partial = partial_buffer(st, body.dtype)    # the thread's slice accumulates here
        zero = [E.Const(0, "int32")]
        conds = data_g + red_g + ([body.condition] if body.condition is not None else [])
        update = _guarded(conds, S.BufferStore(partial, combine(body.combiner, E.BufferLoad(partial, zero),
                                                                body.source), zero))
        init, first_red = None, None
    elif isinstance(body, E.Reduce):
        cur = E.BufferLoad(buf, idx)
        upd = S.BufferStore(buf, combine(body.combiner, cur, body.source), idx)
        conds = data_g + red_g + ([body.condition] if body.condition is not None else [])
        update = _guarded(conds + store_g[len(data_g):], upd)
        init = _guarded(store_g, S.BufferStore(buf, body.identity(), idx))
        first_red = next((p for p, iv in enumerate(leaves) if iv.kind == "reduce"), len(leaves))
    else:
        update = _guarded(store_g, S.BufferStore(buf, body, idx))
        init, first_red = None, None

    def make_for(iv, inner):
        kind = st.iter_kind.get(iv, S.ForKind.SERIAL)
        return S.For(iv.var, 0, ext[iv], kind, inner, st.iter_annot.get(iv))

    def init_nest():
        out = init
        for iv in reversed([v for v in leaves[first_red:] if v.kind != "reduce"]):
            kind = st.iter_kind.get(iv, S.ForKind.SERIAL)
            if kind is S.ForKind.PARALLEL:
                kind = S.ForKind.SERIAL
            out = S.For(iv.var, 0, ext[iv], kind, out)
        return out

    tens_pos = None
    if st.tensorize_at is not None:
        tens_pos = leaves.index(st.tensorize_at[0])

    def content(pos):
        """What runs at loop depth `pos` (inside leaves[pos-1])."""
        parts = []
        if pos > 0:
            parts += [("stmt", p) for p in _prefetches(ctx, st, body, leaves, pos, ext)]
            for p in ctx.attached.get((st, leaves[pos - 1]), []):
                if tens_pos is not None and pos - 1 >= tens_pos:
                    raise ScheduleError(f"{p.name} is attached inside the tensorized region of {st.name}")
                parts.append(("alloc", p))
        if init is not None and pos == first_red and (tens_pos is None or first_red < tens_pos):
            parts.append(("stmt", init_nest()))
        if pos == len(leaves):
            parts.append(("stmt", update))
        elif leaves[pos] is cross:
            slice_nest = content(pos + 1)
            parts.append(("stmt", _cross_thread_nest(ctx, st, cross, body, partial, slice_nest, store_g, buf, idx)))
        elif tens_pos is not None and pos == tens_pos:
            accumulate = init is not None and first_red < tens_pos
            parts.append(("stmt", emit_tensorized(ctx, st, tens_pos, roots, rel, accumulate, lower_reads,
                                                  (data_g, red_g))))
        else:
            parts.append(("stmt", make_for(leaves[pos], content(pos + 1))))
        return _assemble(ctx, parts)

    return content(0)


def _prefetches(ctx, st, body, leaves, pos, ext):
    """The prefetch statements Stage.prefetch asks for at the top of loop leaves[pos - 1]."""
    out = []
    for tensor, at, ahead, distance, locality, spread in st.prefetches:
        if leaves[pos - 1] is not at:
            continue
        for iv, role in ((ahead, "ahead along"), (spread, "spread over")):
            if iv is not None and iv not in leaves[:pos]:
                raise ScheduleError(f"{st.name}: prefetch {role} {iv.var.name}, which does not enclose "
                                    f"{at.var.name}")
        if st.iter_kind.get(at) is S.ForKind.VECTORIZED:
            raise ScheduleError(f"{st.name}: prefetch at the vectorized loop {at.var.name}")
        loads = {}
        for load in _loads_of(body, ctx.buffers.get(tensor.op)):
            loads.setdefault(repr(load.indices), load)
        if not loads:
            raise ScheduleError(f"{st.name}: prefetch of {tensor.op.name}, which it does not read")
        inner = leaves[pos:]
        enumerated = [iv for iv in inner if st.iter_kind.get(iv) is S.ForKind.UNROLLED]
        fixed = {iv.var: E.Const(0, iv.var.dtype) for iv in inner if iv not in enumerated}
        for load in loads.values():
            used = [iv for iv in enumerated if any(uses_var(i, iv.var) for i in load.indices)]
            copies = [{iv: E.Const(v, iv.var.dtype) for iv, v in zip(used, values)}
                      for values in itertools.product(*(range(ext[iv]) for iv in used))]
            if spread is not None and len(copies) > 1:
                copies = [_dealt(spread.var, used, [ext[iv] for iv in used])]
            for chosen in copies:
                mapping = dict(fixed)
                mapping.update({iv.var: v for iv, v in chosen.items()})
                mapping[ahead.var] = ahead.var + distance
                idx = [substitute(i, mapping) for i in load.indices]
                out.append(S.Evaluate(prefetch(E.BufferLoad(load.buffer, idx), locality)))
    return out


def _dealt(var, loops, extents):
    """The values of `loops` (mixed radix, the last fastest) in copy number var mod their count."""
    count = math.prod(extents)
    k = var % E.Const(count, var.dtype)
    out, radix = {}, count
    for iv, e in zip(loops, extents):
        radix //= e
        out[iv] = (k // E.Const(radix, var.dtype)) % E.Const(e, var.dtype)
    return out


def _loads_of(expr, buf):
    """The BufferLoads of `buf` in `expr` (none for None)."""
    found = []
    visit(expr, lambda n: found.append(n) if isinstance(n, E.BufferLoad) and n.buffer is buf else None)
    return found


def _cross_thread_nest(ctx, st, rt, reduce, partial, slice_nest, store_g, buf, idx):
    """The bound reduction leaf's nest (cross_thread.py): the thread's slice is the nest of the
    leaves inside it; thread 0 alone stores to non-local memory."""
    rows = [(iv.var, ctx.leaf_ext[s2][iv]) for s2, iv in enclosing_thread_leaves(st)]
    first = [] if buf.scope == "local" else [rt.var.equal(0)]
    return reduce_across_threads(st, rt, ctx.leaf_ext[st][rt], rows, reduce, partial, slice_nest,
                                 lambda v: _guarded(store_g + first, S.BufferStore(buf, v, idx)))


def _assemble(ctx, parts):
    """[("alloc", stage) | ("stmt", s)] -> nested Allocate around the producers' nests."""
    out = []
    allocs = []
    for kind, x in parts:
        if kind == "alloc":
            buf = ctx.buffers[x.op]
            allocs.append(buf)
            nest = stage_nest(ctx, x)
            if buf.scope == "shared":   # the GPU lowering splits it over the block's threads
                nest = S.AttrStmt(G.SHARED_FETCH, buf, x.name, nest)
            out.append(nest)
        else:
            out.append(x)
    body = S.seq(*out)
    for buf in reversed(allocs):
        body = S.Allocate(buf, body)
    return body


def lower_schedule(sch, args, name="kernel") -> S.PrimFunc:
    ctx = LoweringContext(sch, args, name)
    infer_bounds(ctx)
    parts = []
    for st in sch.stages:
        if st.is_placeholder or st.attach != "root":
            continue
        if st.op in [t.op for t in ctx.args]:
            parts.append(("stmt", stage_nest(ctx, st)))
        else:
            parts.append(("alloc", st))
    missing = [t for t in sch.outputs if t.op not in [a.op for a in ctx.args]]
    if missing:
        raise ScheduleError(f"kernel {name}: output {missing[0].name} is not in args")
    body = _assemble(ctx, parts)
    return S.PrimFunc(name, ctx.params, body)

"""Default CPU schedules for fused groups: schedule_for(outputs, target).

A fused group has at most one anchor (a reduction: conv, dense/matmul, pooling, softmax,
reduce) with chains of injective ops before and/or after it. The default:
- injective intermediates are inlined into their readers;
- a convolution or dense anchor gets its schedule from conv_schedules.py (the blocked
  micro-kernel computed at the tiles of the group's output; Winograd's three stages), shaped
  by knobs (cpu_knobs.py: the default heuristic's, or a tuning record's);
- every other remaining stage gets a generic nest: outer data axes fused and parallel, the
  innermost data axis split by the vector width and vectorized, reductions in between.
"""
from __future__ import annotations

from ..schedule import create_schedule
from ..te.tensor import ComputeOp
from . import tags
from .cpu_knobs import RegisterFile, register_tile, vector_factor

# Iterations a generic nest's parallel loop needs: the thread pool cuts a loop into chunks
# (vdla.driver.thread_pool.CHUNKS_PER_THREAD a thread), and several iterations a chunk keep the
# chunks even on the hosts and boards vdla targets.
PARALLEL_ITERATIONS = 64
# a last axis of at most this many vectors is unrolled (generic_schedule)
UNROLLED_VECTORS = 4


def _lanes(target, dtype):
    from ..tir import dtype as dt
    bits = dt.bits(dtype)
    return target.vector_lanes(bits) if target is not None else max(1, 128 // bits)


def _parallel_prefix(outer):
    """The outer axes the parallel loop fuses: from the outside in, until their iterations are
    enough to share out (PARALLEL_ITERATIONS). The rest stay nested loops, so an element's
    indices cost no division (a fused loop recovers each axis by // and %) and a bounds check
    on an inner axis (a pad's) can be partitioned off (tir partition_loops)."""
    extent = 1
    for k, axis in enumerate(outer):
        extent *= axis.extent
        if extent >= PARALLEL_ITERATIONS:
            return outer[:k + 1]
    return outer


def generic_schedule(s, st, target):
    """Parallel outer loops, vector inner loop; reductions between them."""
    axes = list(st.axis)
    if not axes:
        return
    last = axes[-1]
    lanes = _lanes(target, st.op.dtype)
    factor = vector_factor(last.extent, lanes)
    inner = None
    if factor is not None:
        outer_last, inner = st.split(last, factor)
    elif not st.reduce_axis and last.extent >= 2 * lanes:
        # a row of no vector factor (197 tokens): whole vectors, the guarded last one
        # partitioned off (_row_vectorize)
        outer_last, inner = st.split(last, lanes)
    else:
        outer_last = last
    outer = axes[:-1]
    if st.reduce_axis:
        st.reorder(*(outer + [outer_last] + list(st.reduce_axis) + ([inner] if inner is not None else [])))
    if outer:
        shared = _parallel_prefix(outer)
        st.parallel(st.fuse(*shared) if len(shared) > 1 else shared[0])
    elif outer_last.extent > 1:
        st.parallel(outer_last)
    if inner is not None:
        st.vectorize(inner)
        if not st.reduce_axis and 1 < outer_last.extent <= UNROLLED_VECTORS:
            # a 16-channel block in 8-lane vectors (AVX2): the row's body stays vector statements
            # only, so partition_loops can split a pad's row at its bounds
            st.unroll(outer_last)


def _row_vectorize(st, axis, lanes):
    """Vectorize a row loop by `lanes` even where they do not divide it: the guarded last
    vector is partitioned off (partition_loops) and left to LLVM's own vectorizer."""
    if axis.extent < 2 * lanes:
        return
    outer, inner = st.split(axis, lanes)
    st.vectorize(inner)


def _schedule_softmax_rows(s, outputs, target):
    """Softmax over the last axis, one row at a time in a parallel loop over the rows: the
    row's max and sum (in vector lanes where topi.softmax was given `lanes`, else scalar
    loops), its exponentials once into a row buffer (the generic schedule would inline them
    into both the sum and the output: two exp per element), and the output, both vectorized
    along the row whatever its length (a ViT's 197 tokens)."""
    out = s[outputs[0]] if len(outputs) == 1 else None
    stages = {st.op.name: st for st in s.stages if st.op.tag == tags.SOFTMAX}
    ex = stages.get("softmax_exp")
    if out is None or ex is None or len(stages) - ("softmax_logsum" in stages) not in (4, 6) \
            or ex.op.attrs.get("axis") != len(ex.op.shape) - 1 or len(ex.op.shape) < 2 \
            or tuple(out.op.shape[:-1]) != tuple(ex.op.shape[:-1]) \
            or any(st.reduce_axis and st.op.tag != tags.SOFTMAX for st in s.stages):
        return set()
    lanes = _lanes(target, ex.op.dtype)
    *rows, last = out.axis
    row = out.fuse(*rows) if len(rows) > 1 else rows[0]
    out.parallel(row)
    _row_vectorize(out, last, lanes)
    for st in stages.values():
        if st is not out:
            st.compute_at(out, row)
        if st.op.attrs.get("lanes"):        # topi.nn._lane_reduce's partials: lanes innermost
            *data, lane = st.axis
            st.reorder(*data, *st.reduce_axis, lane)
            st.vectorize(lane)
    _row_vectorize(ex, ex.axis[-1], lanes)
    return set(stages.values())


def _schedule_window_pool(s, outputs, target):
    """A pooling window over a blocked (NCHWc) tensor, scheduled as the depthwise convolution is:
    a register tile of output pixels of one block accumulates across the window's taps, rows of
    blocks in parallel. (The generic nest keeps each pixel's running max or sum in memory,
    addressed through divisions of one fused loop: 4x slower on ResNet-18's 3x3 MaxPool.)"""
    out = s[outputs[0]] if len(outputs) == 1 else None
    pools = [st for st in s.stages if st.op.tag == tags.POOL and st.reduce_axis]
    if out is None or len(pools) != 1 or len(pools[0].reduce_axis) != 2:
        return set()
    pool = pools[0]
    shape = tuple(pool.op.shape)
    if len(shape) != 5 or tuple(out.op.shape) != shape or shape[3] < 2 \
            or any(st.reduce_axis and st is not pool for st in s.stages):
        return set()
    if out is pool:
        acc = s[s.cache_write(outputs[0], "local")]
    else:
        acc = pool
        acc.set_scope("local")
    n, co, oh, ow, ci = out.axis
    tile, _ = register_tile(ow.extent, co.extent, ci.extent, RegisterFile.of(target), oc_blocks=(1,), depthwise=True)
    owo, owi = out.split(ow, tile)
    out.reorder(n, co, oh, owo, owi, ci)
    out.parallel(out.fuse(n, co, oh))
    out.vectorize(ci)
    acc.compute_at(out, owo)
    an, aco, aoh, aow, aci = acc.axis
    ry, rx = acc.reduce_axis
    acc.reorder(an, aco, aoh, ry, rx, aow, aci)
    acc.unroll(aow)
    acc.vectorize(aci)
    return {out, acc}


def _inlined_schedule(outputs):
    s = create_schedule(outputs)
    computes = [st for st in s.stages if isinstance(st.op, ComputeOp)]
    for st in computes:
        if not st.is_output and not st.reduce_axis:
            st.compute_inline()
    return s, computes


def schedule_for(outputs, target=None, knobs=None):
    """A CPU schedule for the fused group whose results are `outputs`: its anchor's with
    `knobs` (a cpu_knobs record that fits the anchor, e.g. a tuning record's; None: the
    default heuristic's), the generic one for every other stage."""
    from .conv_schedules import try_schedule_anchor
    outputs = list(outputs)
    s, computes = _inlined_schedule(outputs)
    handled = try_schedule_anchor(s, outputs, target, knobs)
    if not handled:
        handled = _schedule_softmax_rows(s, outputs, target)
    if not handled:
        handled = _schedule_window_pool(s, outputs, target)
    for st in computes:
        if st.attach == "inline" or st in handled:
            continue
        generic_schedule(s, st, target)
    return s


def cpu_anchor(outputs) -> tuple[str, dict] | None:
    """(kind, dims) of the group's anchor if its schedule has knobs (cpu_knobs), else None."""
    from .conv_schedules import find_anchor
    outputs = list(outputs)
    s, _ = _inlined_schedule(outputs)
    a = find_anchor(s, outputs)
    return None if a is None else (a.kind, dict(a.dims))

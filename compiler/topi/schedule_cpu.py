"""Default CPU schedules for fused groups: schedule_for(outputs, target).

A fused group has at most one anchor (a reduction: conv, dense/matmul, pooling, softmax,
reduce) with chains of injective ops before and/or after it. The default:
- injective intermediates are inlined into their readers;
- a conv2d_nchwc anchor gets the blocked micro-kernel schedule (conv_nchwc.py) computed at
  the tiles of the group's output;
- every other remaining stage gets a generic nest: outer data axes fused and parallel, the
  innermost data axis split by the vector width and vectorized, reductions in between.
"""
from __future__ import annotations

from ..schedule import create_schedule
from ..te.tensor import ComputeOp
from . import tags


def _lanes(target, dtype):
    from ..tir import dtype as dt
    bits = dt.bits(dtype)
    return target.vector_lanes(bits) if target is not None else max(1, 128 // bits)


def generic_schedule(s, st, target):
    """Parallel outer loops, vector inner loop; reductions between them."""
    axes = list(st.axis)
    if not axes:
        return
    lanes = _lanes(target, st.op.dtype)
    last = axes[-1]
    inner = None
    if last.extent >= lanes and len(axes) >= 1:
        outer_last, inner = st.split(last, lanes) if last.extent % lanes == 0 or last.extent > 2 * lanes \
            else (last, None)
        if inner is None:
            outer_last = last
    else:
        outer_last = last
    outer = axes[:-1]
    if st.reduce_axis:
        order = outer + [outer_last] + list(st.reduce_axis) + ([inner] if inner is not None else [])
        st.reorder(*order)
    if outer:
        fused = st.fuse(*outer) if len(outer) > 1 else outer[0]
        st.parallel(fused)
    elif outer_last is not inner and outer_last.extent > 1 and inner is not None:
        st.parallel(outer_last)
    if inner is not None and last.extent % lanes == 0:
        st.vectorize(inner)


def schedule_for(outputs, target=None):
    """A default CPU schedule for the fused group whose results are `outputs`."""
    from .conv_schedules import try_schedule_anchor
    outputs = list(outputs)
    s = create_schedule(outputs)
    computes = [st for st in s.stages if isinstance(st.op, ComputeOp)]
    for st in computes:
        if not st.is_output and not st.reduce_axis:
            st.compute_inline()
    handled = try_schedule_anchor(s, outputs, target)
    for st in computes:
        if st.attach == "inline" or st in handled:
            continue
        generic_schedule(s, st, target)
    return s

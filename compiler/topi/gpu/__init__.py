"""Default GPU schedules for fused groups: schedule_for_gpu(outputs).

As on the CPU (schedule_cpu.py), injective intermediates are inlined into their readers. Then:
- a group with one reduction (the anchor) and one output runs as one kernel: the anchor's
  schedule by its tag (dense / matmul: shared-memory tiles, conv2d NCHW: direct with shared
  weights, anything else: one output per thread, or, for few outputs with long reductions each,
  the threads of a block per output: cross_thread.py) with the injective epilogue fused;
- a softmax, or any group with several reductions or outputs, runs a kernel per remaining stage,
  through temporaries in device memory.
topi.dense's row-factored form (dense_partial, a CPU vectorization of the K loop) runs one output
per thread (few outputs: its 16 partial sums as 16 threads); topi.gpu.dense is the same operator
in the form the tiled schedule takes.
"""
from __future__ import annotations

from ...schedule import create_schedule
from ...te.tensor import ComputeOp
from .. import tags
from .conv2d import schedule_conv2d_nchw
from .dense import dense, schedule_dense, schedule_row_factored_dense
from .injective import schedule_injective
from .reduction import schedule_reduction
from .softmax import schedule_softmax
from .winograd import conv2d_nchw_winograd, schedule_winograd

ANCHORS = {
    tags.DENSE: schedule_dense,
    tags.MATMUL: schedule_dense,
    tags.CONV2D_NCHW: schedule_conv2d_nchw,
    tags.WINOGRAD_GEMM: schedule_winograd,
}


def schedule_for_gpu(outputs):
    """A default GPU schedule for the fused group whose results are `outputs`."""
    outputs = list(outputs)
    s = create_schedule(outputs)
    computes = [st for st in s.stages if isinstance(st.op, ComputeOp)]
    for st in computes:
        if not st.is_output and not st.reduce_axis:
            st.compute_inline()
    kept = [st for st in computes if st.attach != "inline"]
    reductions = [st for st in kept if st.reduce_axis]
    outs = [st for st in kept if st.is_output]
    if any(st.op.tag == tags.SOFTMAX for st in kept):
        schedule_softmax(s, kept)
    elif len(outs) == 1 and [st.op.tag for st in reductions] == [tags.DENSE_PARTIAL, tags.DENSE]:
        schedule_row_factored_dense(s, reductions[0], reductions[1], outs[0])
    elif len(outs) == 1 and len(reductions) == 1 and set(kept) <= {reductions[0], outs[0]}:
        red = reductions[0]
        ANCHORS.get(red.op.tag, schedule_reduction)(s, red, outs[0])
    else:
        for st in kept:
            if st.reduce_axis:
                schedule_reduction(s, st, st)
            else:
                schedule_injective(s, st)
    return s


__all__ = ["schedule_for_gpu", "dense", "conv2d_nchw_winograd", "schedule_winograd", "schedule_dense", "schedule_conv2d_nchw", "schedule_injective",
           "schedule_reduction", "schedule_softmax"]

"""A reduction with one output element per thread: pooling, depthwise and blocked convolutions,
reductions, the parts of softmax, small dense layers. The thread accumulates in a register and
an injective epilogue (bias, activation, ...) runs in the same kernel. Few outputs with long
reductions each (cross_thread.cross_thread_pays) are shared by the threads of a block instead."""
from __future__ import annotations

from .common import accumulator, bind_flat
from .cross_thread import cross_thread_pays, output_count, reduce_length, schedule_cross_thread


def schedule_reduction(s, red, out):
    if cross_thread_pays(output_count(out), reduce_length(red)):
        return schedule_cross_thread(s, red, out)
    acc = accumulator(s, red, out)
    _, tx = bind_flat(out)
    acc.compute_at(out, tx)

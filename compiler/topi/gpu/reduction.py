"""A reduction with one output element per thread: pooling, depthwise and blocked convolutions,
reductions, the parts of softmax, small dense layers. The thread accumulates in a register and
an injective epilogue (bias, activation, ...) runs in the same kernel."""
from __future__ import annotations

from .common import accumulator, bind_flat


def schedule_reduction(s, red, out):
    acc = accumulator(s, red, out)
    _, tx = bind_flat(out)
    acc.compute_at(out, tx)

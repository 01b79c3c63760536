"""softmax: its max, sum and quotient as three kernels of one thread per row (max, sum; a block's
threads per row when the rows are few and long: cross_thread.py) or per element (the quotient,
with exp(x - max) recomputed inline instead of stored)."""
from __future__ import annotations

from .injective import schedule_injective
from .reduction import schedule_reduction


def schedule_softmax(s, stages):
    for st in stages:
        if st.reduce_axis:
            schedule_reduction(s, st, st)
        else:
            schedule_injective(s, st)

"""Reductions across the threads of a block, and when the default schedules use them.

One thread per output (reduction.py) leaves the GPU mostly idle when a reduction has few outputs
and a long reduction each: softmax of a 1000-class row at batch 1 is one thread; a batch-1 FC
layer or global pool, a few hundred. Then T threads share each output (its reduction axis bound
to threadIdx.x: each thread a strided slice, adjacent threads on adjacent elements, then a tree
in shared memory; vdla.compiler.schedule.cross_thread), and a block holds BLOCK // T outputs
along threadIdx.y.

The threshold below is the only place this choice is made. UNMEASURED on a GPU: the numbers are
reasoning, not timings (this code was written without one). An A100 keeps about 221k threads
resident (108 SMs x 2048), so fewer than FEW_OUTPUTS threads leave most of it idle, and a
reduction shorter than a warp gains less from sharing than its tree (log2 T barriers) costs.
"""
from __future__ import annotations

import math

from vdla.hw import gpu as limits

FEW_OUTPUTS = 16384                 # below this many outputs, one thread per output underfills the GPU
MIN_REDUCE = limits.WARP_SIZE       # a reduction at least this long per output is worth sharing
MAX_THREADS_PER_OUTPUT = 256        # threads sharing one output (the tree's width)
BLOCK = 256                         # threads per block: BLOCK // T outputs along threadIdx.y


def cross_thread_pays(outputs: int, reduce_len: int) -> bool:
    return outputs < FEW_OUTPUTS and reduce_len >= MIN_REDUCE


def threads_per_output(reduce_len: int) -> int:
    """The largest power of two up to the reduction's length and MAX_THREADS_PER_OUTPUT."""
    return 1 << (min(reduce_len, MAX_THREADS_PER_OUTPUT).bit_length() - 1)


def reduce_length(red) -> int:
    return math.prod(iv.extent for iv in red.reduce_axis)


def output_count(stage) -> int:
    return math.prod(stage.op.shape)


def bind_outputs(out, threads):
    """out's data axes fused, BLOCK // threads outputs per block along threadIdx.y -> that axis."""
    axes = list(out.axis)
    fused = out.fuse(*axes) if len(axes) > 1 else axes[0]
    rows = max(1, min(BLOCK // threads, fused.extent))
    bo, ty = out.split(fused, rows)
    out.bind(bo, "blockIdx.x")
    out.bind(ty, "threadIdx.y")
    return ty


def reducer(s, red, out, ty):
    """The stage that reduces: the output itself, or (an epilogue after it) the reduction in a
    register computed per output, the epilogue stored by the first thread of each output."""
    if red is out:
        return red
    red.set_scope("local")
    red.compute_at(out, ty)
    out.store_by_first_thread("threadIdx.x")
    return red


def schedule_cross_thread(s, red, out):
    """`red` (a reduction) with its injective epilogue `out` (or red itself), T threads per output."""
    threads = threads_per_output(reduce_length(red))
    ty = bind_outputs(out, threads)
    red = reducer(s, red, out, ty)
    axes = list(red.reduce_axis)
    k = red.fuse(*axes) if len(axes) > 1 else axes[0]
    _, kt = red.split(k, threads)
    red.bind(kt, "threadIdx.x")

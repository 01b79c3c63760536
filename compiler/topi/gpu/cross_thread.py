"""Reductions across the threads of a block, and when the default schedules use them.

One thread per output (reduction.py) leaves the GPU mostly idle when a reduction has few outputs
and a long reduction each: softmax of a 1000-class row at batch 1 is one thread; a batch-1 FC
layer or global pool, a few hundred. Then T threads share each output (its reduction axis bound
to threadIdx.x: each thread a strided slice, adjacent threads on adjacent elements, then a tree
in shared memory; vdla.compiler.schedule.cross_thread), and a block holds BLOCK // T outputs
along threadIdx.y.

The thresholds below are the only place this choice is made, measured on an H100
(benchmarks/gpu_constants.py, 30 reductions, 2026-11-27). Sharing won or tied (within 0.2 us)
every global pool and softmax with fewer than 131072 outputs, by up to 10x (a 56x56 global pool:
108 -> 11 us; softmax of 1000-wide rows, 82-181 -> 32-34 us); at 131072 outputs and more the two
split (a 262144 x 49 global pool 28 us per thread against 37 shared, a 131072 x 256 softmax 411
against 435; four others shared by 2-11%). An H100 keeps about 270k threads resident (132 SMs x
2048), so the crossing sits where one thread per output starts to fill it. Below a warp's length
nothing was measured: the tree's barriers (log2 T) are not worth it there. The row-factored dense
(a Gemm's CPU form) was 4-12x faster shared at every size measured, up to a million outputs, so
it shares whenever K is a warp long.
"""
from __future__ import annotations

import math

from vdla.driver import gpu_limits as limits

FEW_OUTPUTS = 131072                # below this many outputs, one thread per output underfills the GPU
MIN_REDUCE = limits.WARP_SIZE       # a reduction at least this long per output is worth sharing
MAX_THREADS_PER_OUTPUT = 256        # threads sharing one output (the tree's width)
BLOCK = 256                         # threads per block: BLOCK // T outputs along threadIdx.y


def cross_thread_pays(outputs: int, reduce_len: int) -> bool:
    return outputs < FEW_OUTPUTS and reduce_len >= MIN_REDUCE


def row_factored_sharing_pays(reduce_len: int) -> bool:
    """The row-factored dense's 16 partial sums as 16 threads: at any output count (measured)."""
    return reduce_len >= MIN_REDUCE


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

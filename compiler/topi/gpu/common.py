"""What the default GPU schedules share: flat thread binding and the accumulator's placement."""
from __future__ import annotations

from ...te.tensor import Tensor

THREADS = 256   # threads per block of a flat (one-output-per-thread) kernel: 8 warps


def bind_flat(stage, axes=None, threads=THREADS):
    """Fuse `axes` (default: all data axes) into one and spread it over blocks of `threads`
    threads -> (block axis, thread axis)."""
    axes = list(stage.axis if axes is None else axes)
    fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    n = min(threads, fused.extent)
    bx, tx = stage.split(fused, n)
    stage.bind(bx, "blockIdx.x")
    stage.bind(tx, "threadIdx.x")
    return bx, tx


def accumulator(s, red, out):
    """The stage a reduction accumulates in, in registers: when it is the group's output, a
    "local" cache of it (copied out at the end); when an injective stage after it is the output,
    the reduction itself, in "local" scope, computed where that stage needs it."""
    if red is out:
        return s[s.cache_write(Tensor(red.op), "local")]
    red.set_scope("local")
    return red

"""Direct conv2d, NCHW (any groups, depthwise included): a thread per output pixel and channel.

A block covers OCT output channels (threadIdx.y) times TS consecutive output pixels of one
image (threadIdx.x, so neighbouring threads read neighbouring input pixels: coalesced); the
grid covers images (z), channel groups (y) and pixel tiles (x). The reduction runs in each
thread, accumulating in a register, over input channels in steps of RC whose weights for the
block's OCT channels are staged in shared memory (every thread of the block reads the same
weights). The padded input is read through its bounds check, not copied.
"""
from __future__ import annotations

from .common import accumulator

TS, OCT, RC = 64, 4, 8


def schedule_conv2d_nchw(s, red, out):
    acc = accumulator(s, red, out)
    weight = acc.op.input_tensors[-1]
    ww = s.cache_read(weight, "shared", [acc])
    n, oc, oh, ow = out.axis
    sp = out.fuse(oh, ow)
    spo, spi = out.split(sp, min(TS, sp.extent))
    oco, oci = out.split(oc, min(OCT, oc.extent))
    out.reorder(n, oco, spo, oci, spi)
    out.bind(n, "blockIdx.z")
    out.bind(oco, "blockIdx.y")
    out.bind(spo, "blockIdx.x")
    out.bind(oci, "threadIdx.y")
    out.bind(spi, "threadIdx.x")
    acc.compute_at(out, spi)
    rc = acc.reduce_axis[0]
    rco, _ = acc.split(rc, min(RC, rc.extent))
    s[ww].compute_at(acc, rco)

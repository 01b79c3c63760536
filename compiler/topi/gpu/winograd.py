"""3x3 stride-1 conv2d NCHW by Winograd's F(2x2, 3x3) on the GPU: topi's Winograd compute
(topi/winograd.py, written for NCHWc) on NCHW data seen as NCHWc with one-channel blocks, its
three stages as three kernels:

1. input transform V = B^T d B: a thread per 4x4 input patch and channel, its 16 values unrolled
   (the transform rows become plain sums and differences);
2. the GEMM M[e, u] = U[e, u] x V[e, u] for the 16 (e, u): blocks of OCT*RO output channels by
   PT tiles (the image's tiles, flattened), a thread per tile accumulating RO channels in
   registers, K (input channels) in steps of KT staged in shared memory like dense's;
3. output transform A^T M A with the group's epilogue (bias, residual, activation): a thread per
   2x2 output tile, its four pixels unrolled.
U = G g G^T is computed at compile time (vdla.driver.host_ops.winograd.transform_weight with
blocks 1). Whether it pays is `winograd_pays`: a FLOP count against a launch cost.
"""
from __future__ import annotations

from vdla.driver.host_ops.winograd import F2

from ... import te
from .. import tags
from ..winograd import conv2d_nchwc_winograd
from .common import bind_flat
from .dense import register_tile

KT = 8             # input channels per shared-memory step of the GEMM
PT = 16            # tiles per block of the GEMM (threadIdx.x)

# What one extra kernel launch costs, in the floating-point operations it must save to pay:
# Winograd adds two launches and the round trip of V and M through device memory. Measured on an
# H100 (benchmarks/gpu_constants.py, 30 convs, 2026-11-27): Winograd's three kernels take 31-37 us
# however small the conv, and the direct kernel won every conv saving 17.0 MFLOP or less but
# one (a deep 7x7 conv, 5.9 MFLOP), lost every one saving 17.5 MFLOP or more but one (30.7 MFLOP at
# 56x56, by 3 us); so the two launches are worth about 17.4 MFLOP. (The old guess, 2e7, left
# convs saving 17.5-32 MFLOP direct at up to 3.7x their Winograd time.) A slower GPU does the
# same FLOPs in more time, so there the break-even lies lower: this errs towards direct.
WINOGRAD_FLOPS_PER_LAUNCH = 8.7e6
EXTRA_LAUNCHES = 2


def conv2d_nchw_winograd(data, u, bias=None, pads=0):
    """data [N, C, H, W], u = transform_weight(w, 1, 1) [4, 4, OC, C, 1, 1] (+ bias [OC])
    -> [N, OC, OH, OW]; a 3x3 filter, stride 1, dilation 1."""
    if len(data.shape) != 4:
        raise ValueError(f"conv2d_nchw_winograd: data must be NCHW, got {list(data.shape)}")
    blocked = te.compute(tuple(data.shape) + (1,), lambda n, c, y, x, _: data(n, c, y, x),
                         name="nchw1", tag=tags.INJECTIVE)
    out = conv2d_nchwc_winograd(blocked, u, pads, separable=False)
    shape = tuple(out.shape[:4])
    if bias is None:
        return te.compute(shape, lambda n, o, y, x: out(n, o, y, x, 0), name="nchw", tag=tags.INJECTIVE)
    return te.compute(shape, lambda n, o, y, x: out(n, o, y, x, 0) + bias(o), name="nchw_bias",
                      tag=tags.BROADCAST)


def conv_flops(n, c, oc, oh, ow) -> tuple[float, float]:
    """(direct, Winograd) floating-point operations of a 3x3 stride-1 conv: Winograd's GEMM over
    the 16 transformed positions plus its transforms' additions (32 per input tile and channel,
    24 per output tile and channel)."""
    t = n * F2.tiles(oh) * F2.tiles(ow)
    direct = 2.0 * n * oc * c * 9 * oh * ow
    winograd = 2.0 * F2.alpha * F2.alpha * oc * c * t + 32.0 * c * t + 24.0 * oc * t
    return direct, winograd


def winograd_pays(n, c, oc, oh, ow) -> bool:
    direct, winograd = conv_flops(n, c, oc, oh, ow)
    return direct - winograd >= EXTRA_LAUNCHES * WINOGRAD_FLOPS_PER_LAUNCH


def schedule_winograd(s, gemm, out):
    """`gemm` is the Winograd GEMM stage (tag WINOGRAD_GEMM), `out` the group's output; the
    injective stages are inlined already (schedule_for_gpu)."""
    transform = next(st for st in s.stages if st.op.tag == tags.WINOGRAD_OUTPUT)
    m_tensor = next(t for t in transform.op.input_tensors if t.op is gemm.op)   # the one its reader reads
    v_tensor = next(t for t in gemm.op.input_tensors if t.op.tag == tags.WINOGRAD_INPUT)
    _schedule_input_transform(s, s[v_tensor])
    _schedule_gemm(s, gemm, m_tensor)
    _schedule_output_transform(s, out, m_tensor)


def _schedule_input_transform(s, v):
    """A thread per patch: its 4x4 input values (zero padding included) read once into
    registers, then the 16 sums."""
    v.compute_root()
    n, c, ty, e, u, tx, ci = v.axis
    v.reorder(n, c, ty, tx, ci, e, u)
    _, thread = bind_flat(v, [n, c, ty, tx, ci])
    v.unroll(e)
    v.unroll(u)
    (padded,) = v.op.input_tensors
    patch = s[padded]
    patch.set_scope("local")
    patch.compute_at(v, thread)


def _schedule_gemm(s, gemm, m_tensor):
    """Blocks of output channels x tiles of one image and one (e, u). The block's tiles are whole
    rows of tiles (or a part of one row), so the V values it stages are exactly those it uses."""
    acc = s[s.cache_write(m_tensor, "local")]
    u_tensor = next(t for t in acc.op.input_tensors if t.op.tag != tags.WINOGRAD_INPUT)
    v_tensor = next(t for t in acc.op.input_tensors if t.op.tag == tags.WINOGRAD_INPUT)
    caches = [s.cache_read(t, "shared", [acc]) for t in (u_tensor, v_tensor)]
    n, o, ty, e, u, tx, oc1 = gemm.axis
    gemm.reorder(n, e, u, o, ty, tx, oc1)
    z = gemm.fuse(n, e, u)
    oct_, ro = register_tile(o.extent) or (1, 1)
    bo, oi = gemm.split(o, oct_ * ro)
    to, ri = gemm.split(oi, ro)
    if tx.extent >= PT:            # a block: PT tiles of one row
        txo, tp = gemm.split(tx, PT)
        gemm.reorder(z, bo, ty, txo, to, tp, ri, oc1)
        bp = gemm.fuse(ty, txo)
    else:                          # a block: the PT // tw rows of tiles that fit
        bp, tyi = gemm.split(ty, max(1, PT // tx.extent))
        gemm.reorder(z, bo, bp, to, tyi, tx, ri, oc1)
        tp = gemm.fuse(tyi, tx)
    gemm.bind(z, "blockIdx.z")
    gemm.bind(bo, "blockIdx.y")
    gemm.bind(bp, "blockIdx.x")
    gemm.bind(to, "threadIdx.y")
    gemm.bind(tp, "threadIdx.x")
    acc.compute_at(gemm, tp)
    ico, ici = acc.reduce_axis
    ko, ki = acc.split(ico, min(KT, ico.extent))
    acc.reorder(ko, ki, ici, *acc.axis)
    for c in caches:
        s[c].compute_at(acc, ko)


def _schedule_output_transform(s, out, m_tensor):
    """A thread per 2x2 output tile: its 16 M values read once into registers, then the four
    pixels with the epilogue."""
    n, o, y, x = out.axis
    yo, yi = out.split(y, F2.tile)
    xo, xi = out.split(x, F2.tile)
    out.reorder(n, o, yo, xo, yi, xi)
    _, thread = bind_flat(out, [n, o, yo, xo])
    out.unroll(yi)
    out.unroll(xi)
    m_local = s[s.cache_read(m_tensor, "local", s.readers(m_tensor))]
    m_local.compute_at(out, thread)

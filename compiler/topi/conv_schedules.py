"""CPU schedules for the blocked convolutions (conv2d_nchwc, depthwise_conv2d_nchwc, and the
three stages of conv2d_nchwc_winograd, whose GEMM uses the same micro-kernel).

The micro-kernel: for one output row segment of `owt` pixels and one block of `ob` output
channels, keep owt x ob accumulators in registers (a "local" buffer that LLVM promotes),
loop over input-channel blocks, kernel rows/columns and the input channels of a block, and
do owt broadcast-FMAs of one weight vector per step. The group's output is tiled the same
way, the convolution is computed at that tile, and the padded input is materialized once
(so the inner loop has no bounds checks). Outer loops are fused and run in parallel.
"""
from __future__ import annotations

from . import tags

MAX_REG_TILE = 14
MIN_ACCUMULATORS = 8    # FMA latency (4) x FMA ports (2) on the hosts we tune for
# Winograd: images of at most this many output tiles get the whole-image schedule (measured
# vs the direct conv: 7x7 outputs, 16 tiles, 1.27x with it, 0.92x without; 14x14, 49 tiles,
# 2.04x without, 1.85x with).
WINOGRAD_WHOLE_IMAGE_TILES = 32
DW_INLINE_PAD = True


def _row_tile(ow, limit=MAX_REG_TILE):
    """Output pixels per register tile: the largest divisor of the width up to `limit` (no
    tail) unless that is small, then `limit` with a tail tile (partition_loops keeps the
    bounds checks out of the full tiles)."""
    for t in range(min(ow, limit), 0, -1):
        if ow % t == 0:
            return t if t >= limit // 2 else min(ow, limit)
    return min(ow, limit)


def _schedule_blocked_conv(s, conv, out, conv_tensor, target):
    depthwise = conv.op.tag == tags.DEPTHWISE_NCHWC
    # Materialize the padded input at the root: no conditions inside the micro-kernel.
    # (Depthwise convolutions read each input once per tap only: copying the input would
    # double their memory traffic, so they read it through masked loads instead.)
    for t in ([] if depthwise and DW_INLINE_PAD else conv.op.input_tensors):
        st = s[t]
        if st.op.tag == tags.INJECTIVE and st.attach == "inline" and not st.is_placeholder:
            st.compute_root()
    if out is conv:
        local = s.cache_write(conv_tensor, "local")
        acc = s[local]
    else:
        acc = conv
        acc.set_scope("local")
    n, oco, oh, ow, oci = out.axis
    owt = _row_tile(ow.extent)
    owo, owi = out.split(ow, owt)
    out.reorder(n, oco, oh, owo, owi, oci)
    fused = out.fuse(n, oco, oh)
    out.parallel(fused)
    out.vectorize(oci)
    acc.compute_at(out, owo)
    an, aoco, aoh, aow, aoci = acc.axis
    if depthwise:
        ry, rx = acc.reduce_axis
        acc.reorder(an, aoco, aoh, ry, rx, aow, aoci)
        acc.unroll(rx)
    elif conv.op.tag == tags.CONV2D_NCHWC_INT8:
        ico, ry, rx, icq, ic4 = acc.reduce_axis
        acc.reorder(an, aoco, aoh, ico, ry, rx, icq, aow, aoci, ic4)
        acc.unroll(aow)
        from ..intrin.cpu import has_vnni, int8_dot_16x4
        if has_vnni(target):
            acc.tensorize(aoci, int8_dot_16x4())    # one vpdpbusd per output pixel and 4 channels
        else:
            acc.vectorize(aoci)
        return {out, acc}
    else:
        ico, ry, rx, ici = acc.reduce_axis
        acc.reorder(an, aoco, aoh, ico, ry, rx, ici, aow, aoci)
    acc.unroll(aow)
    acc.vectorize(aoci)
    return {out, acc}


def _vector_width(extent, lanes):
    """A vector width for the output-width loop: the whole row if it fits in one vector,
    else the widest power of two up to `lanes` dividing it (None: leave it scalar)."""
    if extent <= lanes:
        return extent
    f = lanes
    while f >= 4:
        if extent % f == 0:
            return f
        f //= 2
    return None


def _divisor_up_to(n, limit):
    for t in range(min(n, limit), 0, -1):
        if n % t == 0:
            return t
    return 1


def _schedule_nchw_conv(s, conv, out, conv_tensor, target):
    """NCHW: vectorize along the output row (contiguous), register-tile a few output
    channels, broadcast one weight per (channel, tap)."""
    for t in conv.op.input_tensors:
        st = s[t]
        if st.op.tag == tags.INJECTIVE and st.attach == "inline" and not st.is_placeholder:
            st.compute_root()
    if out is conv:
        acc = s[s.cache_write(conv_tensor, "local")]
    else:
        acc = conv
        acc.set_scope("local")
    lanes = target.vector_lanes(32) if target is not None else 4
    n, oc, oh, ow = out.axis
    vw = _vector_width(ow.extent, lanes)
    oct_ = _divisor_up_to(oc.extent, 8)
    oco, oci = out.split(oc, oct_)
    if vw is not None:
        owo, owi = out.split(ow, vw)
    else:
        owo, owi = ow, None
    order = [n, oco, oh, owo, oci] + ([owi] if owi is not None else [])
    out.reorder(*order)
    out.parallel(out.fuse(n, oco, oh))
    if owi is not None:
        out.vectorize(owi)
    acc.compute_at(out, owo)
    an, aoc, aoh, aow = acc.axis
    rc, ry, rx = acc.reduce_axis
    acc.reorder(an, aoh, rc, ry, rx, aoc, aow)
    acc.unroll(aoc)
    if vw is not None:
        acc.vectorize(aow)
    return {out, acc}


def _schedule_dense(s, partial, red, out):
    """One output element per iteration: its 16-lane partial sums stay in a register
    (contiguous vector loads of x and of the weight row), then one horizontal sum."""
    i, j = out.axis
    f = out.fuse(i, j)
    out.parallel(f)
    for st in (partial, red):
        if st is not out:
            st.compute_at(out, f)
            st.set_scope("local")
    ko = partial.reduce_axis[0]
    pm, pn, pl = partial.axis
    partial.reorder(pm, pn, ko, pl)
    partial.vectorize(pl)
    return {partial, red, out}


def _schedule_winograd(s, out, target):
    """conv2d_nchwc_winograd. Large images: per row of output tiles (the parallel loop) the
    input transform V and the GEMM M of that row only, so both stay in cache. Small images
    (few tiles, many channels): V and M for the whole image, the GEMM looping over tiles
    inside each (output block, e, u), so each transformed-weight slice is read once rather
    than once per row. Either way the GEMM keeps a register tile of tiles x ob accumulators
    (the direct convolution's micro-kernel, reducing over input channels)."""
    by_tag = {st.op.tag: st for st in s.stages}
    v, m = by_tag[tags.WINOGRAD_INPUT], by_tag[tags.WINOGRAD_GEMM]
    for t in v.op.input_tensors:             # the padded input, once, at the root
        st = s[t]
        if st.op.tag == tags.INJECTIVE and not st.is_placeholder:
            st.compute_root()
    m_tensor = next(t for st in s.stages for t in st.op.input_tensors if t.op is m.op)
    acc = s[s.cache_write(m_tensor, "local")]
    _, _, tiles_h, _, _, tiles_w, _ = m.op.shape
    whole = tiles_h * tiles_w <= WINOGRAD_WHOLE_IMAGE_TILES

    n, oco, oh, ow, oci = out.axis
    oho, ohi = out.split(oh, 2)
    owo, owi = out.split(ow, 2)
    out.reorder(n, oho, oco, owo, ohi, owi, oci)
    rows = out.fuse(n, oho)
    out.parallel(rows)
    out.unroll(ohi)
    out.unroll(owi)
    out.vectorize(oci)

    vn, vc, vty, ve, vu, vtx, vci = v.axis
    v.reorder(vn, vc, vty, vtx, ve, vu, vci)
    if whole:
        v.compute_root()
        v.parallel(v.fuse(vn, vc, vty))
    else:
        v.compute_at(out, rows)
    v.unroll(ve)
    v.unroll(vu)
    v.vectorize(vci)

    mn, mo, mty, me, mu, mtx, moc = m.axis
    tile = _row_tile(mtx.extent)
    # A row of few tiles gives few independent accumulators: take two output-channel blocks
    # per register tile then, so the FMA pipeline has enough chains in flight.
    oblocks = 2 if tile < MIN_ACCUMULATORS and mo.extent % 2 == 0 else 1
    moo, moi = m.split(mo, oblocks)
    mtxo, mtxi = m.split(mtx, tile)
    if whole:
        m.compute_root()
        m.reorder(mn, moo, me, mu, mty, mtxo, moi, mtxi, moc)
        m.parallel(m.fuse(mn, moo))
    else:
        m.compute_at(out, rows)
        m.reorder(mn, moo, mty, me, mu, mtxo, moi, mtxi, moc)
    m.vectorize(moc)
    acc.compute_at(m, mtxo)
    an, ao, aty, ae, au, atx, aoc = acc.axis
    ico, ici = acc.reduce_axis
    acc.reorder(an, aty, ae, au, ico, ici, ao, atx, aoc)
    acc.unroll(ao)
    acc.unroll(atx)
    acc.vectorize(aoc)
    return {out, v, m, acc}


def try_schedule_anchor(s, outputs, target):
    """Schedule a recognized anchor and the output it feeds; return the stages handled
    (empty when the group is not one this module knows; the generic schedule applies)."""
    partials = [st for st in s.stages if st.op.tag == tags.DENSE_PARTIAL]
    if len(partials) == 1 and len(outputs) == 1:
        reds = [st for st in s.stages if st.op.tag == tags.DENSE and st.reduce_axis]
        out = s[outputs[0]]
        if len(reds) == 1 and tuple(out.op.shape) == tuple(reds[0].op.shape):
            return _schedule_dense(s, partials[0], reds[0], out)
    if any(st.op.tag == tags.WINOGRAD_GEMM for st in s.stages) and len(outputs) == 1:
        return _schedule_winograd(s, s[outputs[0]], target)
    convs = [st for st in s.stages if st.op.tag in (tags.CONV2D_NCHWC, tags.DEPTHWISE_NCHWC,
                                                     tags.CONV2D_NCHWC_INT8, tags.CONV2D_NCHW)
             and st.reduce_axis]
    if len(convs) != 1 or len(outputs) != 1:
        return set()
    conv = convs[0]
    out = s[outputs[0]]
    if out is not conv and tuple(out.op.shape) != tuple(conv.op.shape):
        return set()
    if out is not conv and conv.attach != "root":
        return set()
    conv_tensor = outputs[0] if out is conv else None
    if conv.op.tag == tags.CONV2D_NCHW:
        return _schedule_nchw_conv(s, conv, out, conv_tensor, target)
    return _schedule_blocked_conv(s, conv, out, conv_tensor, target)

"""CPU schedules for the blocked convolutions (conv2d_nchwc, depthwise_conv2d_nchwc, and the
three stages of conv2d_nchwc_winograd, whose GEMM uses the same micro-kernel).

The micro-kernel: for one output row segment of `owt` pixels and one block of `ob` output
channels, keep owt x ob accumulators in registers (a "local" buffer that LLVM promotes),
loop over input-channel blocks, kernel rows/columns and the input channels of a block, and
do owt broadcast-FMAs of one weight vector per step. The group's output is tiled the same
way, the convolution is computed at that tile, and the padded input is materialized once
(so the inner loop has no bounds checks). Outer loops are fused and run in parallel. A float
direct conv may instead accumulate its tile's blocks over the whole output image, one
input-channel block at a time (knobs.image_accumulator): the accumulators go through memory
once per block and tap set, and each weight vector serves every row tile of the image.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import tags
from .cpu_knobs import (WINOGRAD_ROW_GROUP_FILTER_BYTES, RegisterFile, default_knobs, knobs_problem,
                        vector_factor)


@dataclass
class Anchor:
    """The computation a fused group is scheduled around, as the schedules and their knobs
    see it: its kind (a cpu_knobs.KNOBS name), the stages the schedule rewrites, and the
    extents its knobs are chosen from (cpu_knobs' `dims`)."""
    kind: str
    out: object                                   # the group's output stage
    anchor: object                                # the conv / dense-partial / Winograd GEMM stage
    dims: dict
    stages: dict = field(default_factory=dict)    # other stages by role ("reduce": dense's sum)


def _schedule_blocked_conv(s, a: Anchor, knobs, target):
    conv, out = a.anchor, a.out
    conv_tensor = s.outputs[0] if out is conv else None
    depthwise = a.kind == "depthwise_conv2d_nchwc"
    # Materialize the padded input at the root: no conditions inside the micro-kernel.
    # (Depthwise convolutions read each input once per tap only: copying the input would
    # double their memory traffic, so by default they read it through masked loads instead.)
    for t in ([] if depthwise and knobs.inline_pad else conv.op.input_tensors):
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
    owo, owi = out.split(ow, knobs.row_tile)
    if knobs.oc_blocks > 1:     # a register tile of several output-channel blocks
        oco, ocoi = out.split(oco, knobs.oc_blocks)
        out.reorder(n, oco, oh, owo, ocoi, owi, oci)
    else:
        out.reorder(n, oco, oh, owo, owi, oci)
    image = getattr(knobs, "image_accumulator", False)
    fused = out.fuse(n, oco) if image else out.fuse(n, oco, oh)
    out.parallel(fused)
    out.vectorize(oci)
    acc.compute_at(out, fused if image else owo)
    an, aoco, aoh, aow, aoci = acc.axis
    # the tile's output-channel blocks inside the reduction, beside its pixels
    blocks = [aoco] if knobs.oc_blocks > 1 else []
    outer = [an, aoh] if blocks else [an, aoco, aoh]
    if blocks:
        acc.unroll(aoco)
    if depthwise:
        ry, rx = acc.reduce_axis
        acc.reorder(*outer, ry, rx, *blocks, aow, aoci)
        acc.unroll(rx)
    elif a.kind == "conv2d_nchwc_int8":
        ico, ry, rx, icq, ic4 = acc.reduce_axis
        tiles = _amx_conv_tile(conv, knobs, target)
        if tiles is not None:       # the tile's whole reduction in AMX tile registers
            acc.reorder(an, aoh, aoco, aow, aoci, ico, ry, rx, icq, ic4)
            acc.tensorize(aoco, tiles)
            return {out, acc}
        acc.reorder(*outer, ico, ry, rx, icq, *blocks, aow, aoci, ic4)
        acc.unroll(aow)
        from ..intrin.cpu import int8_dot_16x4_for
        dot = int8_dot_16x4_for(target, conv.op.attrs.get("activation_offset", 0))
        if dot is not None:
            acc.tensorize(aoci, dot)    # per output pixel and 4 channels: one vpdpbusd (VNNI), or AVX2's 6
        else:
            acc.vectorize(aoci)
        return {out, acc}
    elif image:     # per input-channel block, every row tile of the image (accumulators in memory)
        ico, ry, rx, ici = acc.reduce_axis
        aowo, aow = acc.split(aow, knobs.row_tile)
        acc.reorder(*outer[:-1], ico, aoh, aowo, ry, rx, ici, *blocks, aow, aoci)
        # The image's first pass over an input-channel block reads all its weight lines (18 KB for
        # 2 blocks of a 3x3 conv, within ~1000 cycles of FMAs) and the other passes none, so that
        # pass waited on memory: the next block's lines now stream in beside the FMAs. On the
        # Intel Xeon, 512 channels at 7x7 alone: 1.07 -> 0.93 ms with 2 threads, 1.86 -> 1.65
        # with 1; ResNet-18 run whole, in turns with onnxruntime, 0.909 -> 0.890 of its time with
        # 2 threads, 0.900 -> 0.862 with 1 (its 7x7 layers 0.82-0.93 -> 0.76-0.83 ms). All of a
        # block's lines at once in the first pass keep the core waiting on the fill buffers: the
        # tile's output blocks are dealt over the passes (pass y: block y mod 2), 512 at 7x7
        # 0.91-1.04 -> 0.86-0.99 ms with 2 threads, 1.59 -> 1.50 with 1.
        weight = next(t for t in conv.op.input_tensors if len(t.shape) == 6)
        if s[weight].is_placeholder:
            acc.prefetch(weight, ici, ico, spread=aoh)
    else:
        ico, ry, rx, ici = acc.reduce_axis
        acc.reorder(*outer, ico, ry, rx, ici, *blocks, aow, aoci)
    acc.unroll(aow)
    acc.vectorize(aoci)
    return {out, acc}


def _amx_conv_tile(conv, knobs, target):
    """The AMX tile GEMM of a conv2d_nchwc_int8 register tile where the target has AMX and the
    conv and tile fit it (intrin/amx.py), else None (the VNNI kernel)."""
    from ..intrin import amx
    if not amx.has_amx(target) or conv.op.attrs.get("activation_offset", 0):
        return None
    weight = next(t for t in conv.op.input_tensors if len(t.shape) == 7)
    _, cbo, kh, kw, cq, _, _ = (int(d) for d in weight.shape)
    cb = 4 * cq
    (_, sw), (_, dw) = conv.op.attrs["strides"], conv.op.attrs.get("dilations", (1, 1))
    if not amx.conv_fits(kw, cb, dw, knobs.row_tile, knobs.oc_blocks):
        return None
    return amx.amx_conv_tile(knobs.row_tile, knobs.oc_blocks, cbo, kh, kw, cb, sw)


def _local_accumulator(s, a: Anchor):
    """The anchor's accumulators in registers: a local copy when the anchor is the group's
    output, else the anchor itself (its epilogue is the output)."""
    if a.out is a.anchor:
        return s[s.cache_write(s.outputs[0], "local")]
    a.anchor.set_scope("local")
    return a.anchor


def _schedule_matmul_int8(s, a: Anchor, knobs, target):
    """uint8 x int8 panels: the int8 convolution's micro-kernel with rows for pixels, a register
    tile of row_tile rows x oc_blocks 16-column blocks, one vpdpbusd per row, block and 4 k
    (VNNI; AVX2's exact equivalent; else a vector of 16 lanes); parallel over column groups and
    row tiles."""
    out, acc = a.out, _local_accumulator(s, a)
    m, o, lane = out.axis
    mo, mi = out.split(m, knobs.row_tile)
    oo, oi = out.split(o, knobs.oc_blocks)
    out.reorder(oo, mo, oi, mi, lane)
    tile = out.fuse(oo, mo)
    out.parallel(tile)
    out.vectorize(lane)
    acc.compute_at(out, tile)
    am, ao, alane = acc.axis
    kq, k4 = acc.reduce_axis
    from ..intrin import amx
    if amx.has_amx(target) and not a.anchor.op.attrs.get("activation_offset", 0) and \
            amx.tile_fits(knobs.row_tile, knobs.oc_blocks):
        acc.reorder(am, ao, alane, kq, k4)      # the tile's whole k in AMX tile registers
        panels = next(t for t in a.anchor.op.input_tensors if len(t.shape) == 4)     # [N/16, K/4, 16, 4]
        acc.tensorize(am, amx.amx_matmul_tile(knobs.row_tile, knobs.oc_blocks, 4 * int(panels.shape[1])))
        return {out, acc}
    acc.reorder(kq, ao, am, alane, k4)
    acc.unroll(ao)
    acc.unroll(am)
    from ..intrin.cpu import int8_dot_16x4_for
    dot = int8_dot_16x4_for(target, a.anchor.op.attrs.get("activation_offset", 0))
    if dot is not None:
        acc.tensorize(alane, dot)
    else:
        acc.vectorize(alane)
    return {out, acc}


def _vector_width(extent, lanes):
    """A vector width for the output-width loop: the whole row if it fits in one vector,
    else the widest power of two up to `lanes` dividing it (None: leave it scalar)."""
    return extent if extent <= lanes else vector_factor(extent, lanes)


def _schedule_nchw_conv(s, a: Anchor, knobs, target):
    """NCHW: vectorize along the output row (contiguous), register-tile a few output
    channels, broadcast one weight per (channel, tap)."""
    conv, out = a.anchor, a.out
    conv_tensor = s.outputs[0] if out is conv else None
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
    oco, oci = out.split(oc, knobs.oc_tile)
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


def _schedule_dense(s, a: Anchor, knobs, target):
    """`columns` output elements per iteration, each with its 16-lane partial sums in a
    register (contiguous vector loads of x, once for all of them, and of the weight rows),
    then one horizontal sum each."""
    partial, red, out = a.anchor, a.stages["reduce"], a.out
    i, j = out.axis
    if knobs.columns > 1:
        j, ji = out.split(j, knobs.columns)
    f = out.fuse(i, j)
    out.parallel(f)
    for st in (partial, red):
        if st is not out:
            st.compute_at(out, f)
            st.set_scope("local")
    ko = partial.reduce_axis[0]
    pm, pn, pl = partial.axis
    if knobs.columns > 1:
        partial.reorder(pm, ko, pn, pl)
        partial.unroll(pn)
    else:
        partial.reorder(pm, pn, ko, pl)
    partial.vectorize(pl)
    return {partial, red, out}


def _schedule_matmul(s, a: Anchor, knobs, target):
    """The blocked convolution's micro-kernel on a (batched) matmul: a register tile of
    row_tile rows x `vectors` column vectors of accumulators, each step one broadcast of
    x[row, k] and one vector load of w[k, columns] per vector. Parallel over the batch and
    row tiles; a column tail (197 attention keys) is the partitioned last tile."""
    out, acc = a.out, _local_accumulator(s, a)
    lanes = target.vector_lanes(32) if target is not None else 4
    while lanes > 4 and lanes > a.dims["columns"]:
        lanes //= 2
    *batch, i, j = out.axis
    io, ii = out.split(i, knobs.row_tile)
    jo, ji = out.split(j, lanes * knobs.vectors)
    jio, jii = out.split(ji, lanes)
    out.reorder(*batch, io, jo, ii, jio, jii)
    out.parallel(out.fuse(*batch, io) if batch else io)
    out.vectorize(jii)
    acc.compute_at(out, jo)
    *abatch, ai, aj = acc.axis
    ajo, aji = acc.split(aj, lanes)
    acc.reorder(*abatch, acc.reduce_axis[0], ai, ajo, aji)
    acc.unroll(ai)
    acc.unroll(ajo)
    acc.vectorize(aji)
    return {out, acc}


def _half_transform_at(half, parent, axis):
    """A transform's first half ([n, block, tile row, i, j, tile column, lane]) in registers,
    one tile at a time inside `parent`'s loop `axis`: its i x j values unrolled, lanes a vector."""
    half.set_scope("local")
    half.compute_at(parent, axis)
    n, block, ty, i, j, tx, lane = half.axis
    half.reorder(n, block, ty, tx, i, j, lane)
    half.unroll(i)
    half.unroll(j)
    half.vectorize(lane)


def _schedule_winograd(s, a: Anchor, knobs, target):
    """conv2d_nchwc_winograd. Large images: per row of output tiles (the parallel loop) the
    input transform V and the GEMM M of that row only, so both stay in cache (per knobs.row_group
    rows, the GEMM looping over them inside each transformed-filter slice, where the filter
    would stream from beyond L2 once per row). Small images
    (few tiles, many channels; knobs.whole_image): V and M for the whole image, the GEMM
    looping over tiles inside each (output block, e, u), so each transformed-weight slice is
    read once rather than once per row. Either way the GEMM keeps a register tile of
    tile_rows x row_tile tiles x ob accumulators (the direct convolution's micro-kernel, reducing
    over input channels, here tile by tile). Each transform runs one axis at a time, the
    half-transformed tile in registers (a local buffer per tile: B^T d for V, M A for the
    output)."""
    out, m, v = a.out, a.anchor, a.stages["input"]
    half_in = s[next(t for t in v.op.input_tensors if t.op.tag == tags.WINOGRAD_HALF)]
    half_out = next(st for st in s.stages if st.op.tag == tags.WINOGRAD_HALF and m.op in
                    [t.op for t in st.op.input_tensors])
    for t in half_in.op.input_tensors:       # the padded input, once, at the root
        st = s[t]
        if st.op.tag == tags.INJECTIVE and not st.is_placeholder:
            st.compute_root()
    m_tensor = next(t for st in s.stages for t in st.op.input_tensors if t.op is m.op)
    acc = s[s.cache_write(m_tensor, "local")]
    whole = knobs.whole_image

    tile = m.op.shape[3] - 2        # F(tile x tile, 3x3): its patch edge less the filter's
    n, oco, oh, ow, oci = out.axis
    oho, ohi = out.split(oh, tile)
    owo, owi = out.split(ow, tile)
    if knobs.row_group > 1:        # rows of tiles share a parallel step (and each filter slice)
        ohoo, oho = out.split(oho, knobs.row_group)
        out.reorder(n, ohoo, oho, oco, owo, ohi, owi, oci)
        rows = out.fuse(n, ohoo)
    else:
        out.reorder(n, oho, oco, owo, ohi, owi, oci)
        rows = out.fuse(n, oho)
    out.parallel(rows)
    out.unroll(ohi)
    out.unroll(owi)
    out.vectorize(oci)
    _half_transform_at(half_out, out, owo)

    vn, vty, ve, vu, vc, vtx, vci = v.axis
    v.reorder(vn, vc, vty, vtx, ve, vu, vci)
    if whole:
        v.compute_root()
        v.parallel(v.fuse(vn, vc, vty))
    else:
        v.compute_at(out, rows)
    v.unroll(ve)
    v.unroll(vu)
    v.vectorize(vci)
    _half_transform_at(half_in, v, vtx)

    mn, mo, mty, me, mu, mtx, moc = m.axis
    moo, moi = m.split(mo, knobs.oc_blocks)
    mtxo, mtxi = m.split(mtx, knobs.row_tile)
    mtyo, mtyi = m.split(mty, knobs.tile_rows) if knobs.tile_rows > 1 else (mty, None)
    tile_loops = [moi] + ([mtyi] if mtyi is not None else []) + [mtxi, moc]
    if whole:
        m.compute_root()
        m.reorder(mn, moo, me, mu, mtyo, mtxo, *tile_loops)
        m.parallel(m.fuse(mn, moo))
    else:
        m.compute_at(out, rows)
        if knobs.row_group > 1:
            m.reorder(mn, moo, me, mu, mtyo, mtxo, *tile_loops)
        else:
            m.reorder(mn, moo, mtyo, me, mu, mtxo, *tile_loops)
    m.vectorize(moc)
    acc.compute_at(m, mtxo)
    an, ao, aty, ae, au, atx, aoc = acc.axis
    ico, ici = acc.reduce_axis
    # tile by tile, each broadcast of V serving the tile's output blocks at once: one broadcast
    # register live, so a tile of 14 tiles x 2 blocks (28 accumulators) fits 32 registers and reads
    # each U vector for 14 FMAs instead of 7 (blocks outside the tiles kept every broadcast live)
    acc.reorder(an, ae, au, ico, ici, aty, atx, ao, aoc)
    if a.dims["filter_bytes"] > WINOGRAD_ROW_GROUP_FILTER_BYTES:
        # a filter beyond L2 streams from memory once per (e, u) slice: the next u's lines come
        # in beside this one's FMAs (ResNet-18's 28x28 layers in the model, 2.4 MB of F(4x4)
        # filter: 0.02-0.06 ms faster each; its 56x56 ones, 0.6 MB, unchanged, hence the bound)
        u = next(t for t in m.op.input_tensors if len(t.shape) == 6)
        if s[u].is_placeholder:
            acc.prefetch(u, ici, au)
    acc.unroll(aty)
    acc.unroll(atx)
    acc.unroll(ao)
    acc.vectorize(aoc)
    return {out, v, m, acc, half_in, half_out}


_CONV_KINDS = {tags.CONV2D_NCHWC: "conv2d_nchwc", tags.DEPTHWISE_NCHWC: "depthwise_conv2d_nchwc",
               tags.CONV2D_NCHWC_INT8: "conv2d_nchwc_int8", tags.CONV2D_NCHW: "conv2d_nchw"}


def find_anchor(s, outputs) -> Anchor | None:
    """The anchor of a group whose injective intermediates are inlined, if it is one these
    schedules know (None: the generic schedule applies)."""
    if len(outputs) != 1:
        return None
    out = s[outputs[0]]
    partials = [st for st in s.stages if st.op.tag == tags.DENSE_PARTIAL]
    if len(partials) == 1:
        reds = [st for st in s.stages if st.op.tag == tags.DENSE and st.reduce_axis]
        if len(reds) == 1 and tuple(out.op.shape) == tuple(reds[0].op.shape):
            return Anchor("dense", out, partials[0], {"columns": out.axis[1].extent}, {"reduce": reds[0]})
    by_tag = {st.op.tag: st for st in s.stages}
    matmuls = [st for st in s.stages if st.op.tag == tags.MATMUL and st.reduce_axis]
    if len(matmuls) == 1 and matmuls[0].op.dtype == "float32" and matmuls[0].attach == "root" \
            and tuple(out.op.shape) == tuple(matmuls[0].op.shape):
        rows, columns = matmuls[0].op.shape[-2:]
        return Anchor("matmul", out, matmuls[0], {"rows": rows, "columns": columns})
    if tags.WINOGRAD_GEMM in by_tag:
        m = by_tag[tags.WINOGRAD_GEMM]
        _, blocks, tiles_h, _, _, tiles_w, block = m.op.shape
        u = next(t for t in m.op.input_tensors if len(t.shape) == 6)      # [alpha, alpha, OC/ob, C/cb, cb, ob]
        filter_bytes = 4 * math.prod(int(d) for d in u.shape)
        return Anchor("conv2d_nchwc_winograd", out, m,
                      {"tiles_h": tiles_h, "tiles_w": tiles_w, "out_blocks": blocks, "block": block,
                       "filter_bytes": filter_bytes},
                      {"input": by_tag[tags.WINOGRAD_INPUT]})
    int8_matmuls = [st for st in s.stages if st.op.tag == tags.MATMUL_INT8 and st.reduce_axis]
    if len(int8_matmuls) == 1 and tuple(out.op.shape) == tuple(int8_matmuls[0].op.shape) \
            and (out is int8_matmuls[0] or int8_matmuls[0].attach == "root"):
        rows, blocks, block = int8_matmuls[0].op.shape
        return Anchor("matmul_int8", out, int8_matmuls[0], {"out_w": rows, "out_blocks": blocks, "block": block})
    convs = [st for st in s.stages if st.op.tag in _CONV_KINDS and st.reduce_axis]
    if len(convs) != 1:
        return None
    conv = convs[0]
    if out is not conv and (tuple(out.op.shape) != tuple(conv.op.shape) or conv.attach != "root"):
        return None
    kind = _CONV_KINDS[conv.op.tag]
    shape = conv.op.shape
    # a register tile's output blocks share its inputs: within one group of a grouped conv
    groups = conv.op.attrs.get("groups", 1) if kind == "conv2d_nchwc" else 1
    dims = {"out_channels": shape[1]} if kind == "conv2d_nchw" else \
        {"out_w": shape[3], "out_blocks": shape[1] // groups, "block": shape[4]}
    if kind == "conv2d_nchwc":
        _, ry, rx, _ = conv.op.reduce_axis
        dims.update(out_h=shape[2], taps=ry.extent * rx.extent, groups=groups)
    if kind == "depthwise_conv2d_nchwc":      # the window its register tile spans (cpu_knobs.tile_registers)
        dims.update(stride=conv.op.attrs["strides"][1], kernel_w=conv.op.reduce_axis[1].extent)
    return Anchor(kind, out, conv, dims)


_SCHEDULES = {"conv2d_nchwc": _schedule_blocked_conv, "conv2d_nchwc_int8": _schedule_blocked_conv,
              "depthwise_conv2d_nchwc": _schedule_blocked_conv, "conv2d_nchw": _schedule_nchw_conv,
              "conv2d_nchwc_winograd": _schedule_winograd, "dense": _schedule_dense,
              "matmul": _schedule_matmul, "matmul_int8": _schedule_matmul_int8}


def try_schedule_anchor(s, outputs, target, knobs=None):
    """Schedule a recognized anchor and the output it feeds with `knobs` (None: the default
    heuristic's, cpu_knobs.default_knobs); return the stages handled (empty when the group is
    not one this module knows; the generic schedule applies). Knobs that do not fit the
    anchor are a ValueError saying which and why."""
    a = find_anchor(s, outputs)
    if a is None:
        if knobs is not None:
            raise ValueError(f"schedule knobs {knobs} given for a group with no tunable anchor "
                             f"(outputs {[t.op.name for t in outputs]})")
        return set()
    if knobs is None:
        knobs = default_knobs(a.kind, a.dims, RegisterFile.of(target), getattr(target, "threads", 1))
    else:
        problem = knobs_problem(a.kind, a.dims, knobs)
        if problem is not None:
            raise ValueError(f"schedule knobs for {a.kind} {a.anchor.op.name}: {problem}")
    return _SCHEDULES[a.kind](s, a, knobs, target)

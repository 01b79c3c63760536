"""Schedules of the VDLA operators: tiles in the accelerator's scopes, tensorized with the
intrinsics declared for the config (vdla.compiler.intrin.vdla), virtual threads bound.

Conv (and depthwise conv): the output is tiled into tile_oc channel blocks x tile_h rows x
tile_w columns; per tile the accumulators (vdla.acc) are reset once, then for each chunk
of ic_chunk input channel blocks the input window (vdla.inp, padding by the DMA) and the
weights (vdla.wgt) are loaded and one GEMM runs over (oc, ic, ky, kx, h, w); the
accumulators stay resident across chunks. A depthwise conv by rows runs per channel block
one DEPTHWISE over (ky, h), each iteration one row of tile_w outputs. The ALU epilogue runs on the tile, which is then
stored. With all input channels in one chunk the weights of an output-channel tile are
loaded once and reused by every spatial tile. `vthreads` = 2 binds the outer tile loop
(`vthread_axis` "oc" or "h") to two virtual threads: the SRAM buffers are doubled and the
threads' instructions interleave, so loads of one overlap the GEMMs of the other.

Dense: the output is tiled into tile_m x tile_n blocks, the reduction into k_chunk blocks.
Virtual threads split the column tiles (`vthread_axis` "n") or the row tiles ("m"); over rows,
with the whole reduction in one chunk, a column tile's weights are loaded once for all its row
tiles, one copy that the threads share. A batched dense (a group axis on x, w and the output)
walks its products outermost.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...intrin import vdla as intrin
from ...schedule import create_schedule, vthread
from .vta_mode import schedule_gemm_into_acc


@dataclass(frozen=True)
class ConvKnobs:
    tile_oc: int
    tile_h: int
    tile_w: int
    ic_chunk: int = 0          # 0: all input channel blocks at once (depthwise: ignored)
    vthreads: int = 2
    vthread_axis: str = "oc"   # "oc" or "h"
    order: str = "oc_outer"    # tile loops: output-channel tiles outside the spatial ones, or "pixel_outer"

    def __post_init__(self):
        if self.order not in ("oc_outer", "pixel_outer"):
            raise ValueError(f"order must be 'oc_outer' or 'pixel_outer', got {self.order!r}")
        if self.vthreads not in (1, 2, 3, 4):
            raise ValueError(f"vthreads must be 1..4, got {self.vthreads}")
        if self.vthread_axis not in ("oc", "h"):
            raise ValueError(f"vthread_axis must be 'oc' or 'h', got {self.vthread_axis!r}")
        for k in ("tile_oc", "tile_h", "tile_w"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be at least 1, got {getattr(self, k)}")


@dataclass(frozen=True)
class DenseKnobs:
    tile_m: int
    tile_n: int
    k_chunk: int = 0           # 0: the whole reduction at once
    vthreads: int = 2
    vthread_axis: str = "n"    # the threads split the column tiles ("n") or the row tiles ("m")

    def __post_init__(self):
        if self.vthread_axis not in ("n", "m"):
            raise ValueError(f"vthread_axis must be 'n' or 'm', got {self.vthread_axis!r}")


def _gemm_intrin(config):
    return intrin.gemm(config)


def _alu_intrin(config, stage):
    ep = stage.op.attrs.get("vdla.requant")
    if ep is not None:
        return intrin.alu_requant(config, ep.shift, addend=stage.op.attrs.get("vdla.requant_addend", False),
                                  table=ep.table)
    op, imm = stage.op.attrs["vdla.alu"]
    if op == "lut":
        return intrin.alu_lut(config)
    if op == "shr":
        return intrin.alu_shr(imm, config)
    return intrin.alu(op, config, imm=imm)


def _source(s, t):
    """The tensor a cache_read should copy: a padding stage is inlined into the copy (the DMA
    writes its zeros); a placeholder is copied as it is."""
    if not s[t].is_placeholder:
        s[t].compute_inline()
    return t


def _split_vthreads(stage, loop, count):
    """Bind `count` virtual threads to the outer part of a tile loop: -> ([thread axis] or [],
    the loop left to each thread)."""
    if count == 1:
        return [], loop
    t, rest = stage.split(loop, nparts=count)
    stage.bind(t, vthread("vt"))
    return [t], rest


def _epilogue(s, config, out, stages, res32, bias_src, acc_attach, bias_attach, scale_src=None, rscale_src=None,
              table=None, channel_axis=1):
    for st in stages:
        s[st].set_scope(intrin.SCOPE_ACC)
        s[st].compute_at(*acc_attach)
    if res32 is not None:
        s[res32].set_scope(intrin.SCOPE_ACC)
        s[res32].compute_at(*acc_attach)
        for t in res32.op.input_tensors:
            _source(s, t)
    requant = next((st for st in stages if "vdla.requant" in st.op.attrs), None)
    if requant is not None:
        # the requantizer's bias, multiplier and CTRL per channel block: loaded into the
        # accumulators once per output-channel tile, into the registers (SETQ) per block
        qacc = s.cache_read(bias_src, intrin.SCOPE_ACC, [s[requant]])
        s[qacc].compute_at(*bias_attach)
        req = s.cache_read(qacc, intrin.SCOPE_REQ, [s[requant]])
        axes = s[requant].op.axis          # the channel blocks outermost: one SETQ per block
        s[requant].reorder(axes[channel_axis], *(a for k, a in enumerate(axes) if k != channel_axis))
        s[req].compute_at(s[requant], axes[channel_axis])
        s[req].tensorize(s[req].op.axis[-2], intrin.setq(config))
        bias_src = None
    for src, suffix in ((bias_src, ".bias"), (scale_src, ".scale"), (rscale_src, ".rscale")):
        if src is not None:            # per-channel operands: loaded once per output-channel tile
            reader = next(st for st in stages if st.op.name.endswith(suffix))
            cached = s.cache_read(src, intrin.SCOPE_ACC, [s[reader]])
            s[cached].compute_at(*bias_attach)
    if table is not None:              # loaded once, before everything (compute_root)
        reader = next(st for st in stages if st.op.name.endswith((".lut", ".requant")))
        s.cache_read(table, intrin.SCOPE_LUT, [s[reader]])
    for st in stages:
        s[st].tensorize(s[st].op.axis[-2], _alu_intrin(config, st))


def schedule_conv2d(config, out, acc, stages, res32, x_src, w, bias, knobs: ConvKnobs, depthwise=False,
                    scale=None, rscale=None, table=None, rows=False, stride=1):
    """out: the int8 output; acc: the conv stage; stages: its ALU epilogue; x_src: the
    (padded) input the conv reads; w: weights; bias: bias placeholder or None; rows: a
    depthwise conv by DEPTHWISE rows (ops.depthwise_rows) of column stride `stride`."""
    s = create_schedule(out)
    s[acc].set_scope(intrin.SCOPE_ACC)
    xl = s.cache_read(x_src, intrin.SCOPE_INP, [s[acc]])
    _source(s, x_src)
    wl = s.cache_read(w, intrin.SCOPE_WGT, [s[acc]])
    n, o, h, ww, b, c = s[out].op.axis
    oo, oi = s[out].split(o, knobs.tile_oc)
    ho, hi = s[out].split(h, knobs.tile_h)
    wo, wi = s[out].split(ww, knobs.tile_w)
    if knobs.vthread_axis == "oc":
        vt, oo = _split_vthreads(s[out], oo, knobs.vthreads)
    else:
        vt, ho = _split_vthreads(s[out], ho, knobs.vthreads)
    tiles = [oo, ho, wo] if knobs.order == "oc_outer" else [ho, wo, oo]
    if vt and knobs.vthread_axis == "h" and knobs.order == "oc_outer":
        loops = [n, oo, *vt, ho, wo]      # the threads share the output-channel tile's weights
    else:
        loops = [n, *vt, *tiles]
    s[out].reorder(*loops, oi, hi, wi, b, c)
    wo = tiles[-1]           # the innermost tile loop: where a tile's stages are computed
    s[acc].compute_at(s[out], wo)
    _epilogue(s, config, out, stages, res32, bias, (s[out], wo), (s[out], oo), scale, rscale, table)

    an, ao, ah, aw, ab, ac = s[acc].op.axis
    if rows:
        # per channel block one instruction: kernel rows x tile rows, each a window's row
        ky, kx = s[acc].op.reduce_axis
        s[acc].reorder(an, ao, ky, ah, aw, kx, ab, ac)
        s[xl].compute_at(s[acc], an)
        s[wl].compute_at(s[acc], an)
        # whole tiles, though the taps are lanes 0..TAPS-1, and every tile of a channel block:
        # at stride 2 the zero tiles after the kernel rows, which no output reads
        s[wl].keep_whole(-3, -2, -1)
        zero_tiles = int(w.shape[1]) - ky.extent        # the tiles after the kernel rows (stride 2)
        s[acc].tensorize(aw, intrin.depthwise_row(config, knobs.tile_w, stride, zero_tiles))
        return s
    if depthwise:
        ky, kx, k = s[acc].op.reduce_axis
        s[acc].reorder(an, ao, ky, kx, ah, aw, ab, ac, k)
        s[xl].compute_at(s[acc], an)
        s[wl].compute_at(s[acc], an)
    else:
        ic, ky, kx, k = s[acc].op.reduce_axis
        chunk = knobs.ic_chunk or ic.extent
        ico, ici = s[acc].split(ic, chunk)
        if knobs.tile_h * knobs.tile_w > 1:
            s[acc].reorder(ico, an, ao, ici, ky, kx, ah, aw, ab, ac, k)
        else:   # one pixel: walk output channels innermost so consecutive micro-ops differ
            s[acc].reorder(ico, an, ici, ky, kx, ah, aw, ao, ab, ac, k)
        s[xl].compute_at(s[acc], ico)
        if chunk == ic.extent:
            s[wl].compute_at(s[out], oo)       # oc_outer: weights stay across the spatial tiles
        else:
            s[wl].compute_at(s[acc], ico)
    s[acc].tensorize(ab, _gemm_intrin(config))
    return s


def schedule_dense(config, out, acc, stages, res32, x, w, bias, knobs: DenseKnobs, scale=None, rscale=None,
                   table=None):
    """A batched dense (a leading group axis on x, w and out) walks its products outermost,
    each one the dense schedule."""
    s = create_schedule(out)
    s[acc].set_scope(intrin.SCOPE_ACC)
    xl = s.cache_read(x, intrin.SCOPE_INP, [s[acc]])
    _source(s, x)                      # rows past the matrix (an overhanging tile): the DMA's padding
    wl = s.cache_read(w, intrin.SCOPE_WGT, [s[acc]])
    *group, m, n, b, c = s[out].op.axis
    mo, mi = s[out].split(m, knobs.tile_m)
    no, ni = s[out].split(n, knobs.tile_n)
    if knobs.vthread_axis == "m":
        vt, mo = _split_vthreads(s[out], mo, knobs.vthreads)
        loops = [*group, no, *vt, mo]      # the threads share the column tile's weights
    else:
        vt, no = _split_vthreads(s[out], no, knobs.vthreads)
        loops = [*group, *vt, mo, no]
    s[out].reorder(*loops, mi, ni, b, c)
    tile = loops[-1]
    s[acc].compute_at(s[out], tile)
    _epilogue(s, config, out, stages, res32, bias, (s[out], tile), (s[out], no), scale, rscale, table,
              channel_axis=len(group) + 1)
    *agroup, am, an, ab, ac = s[acc].op.axis
    kb, k = s[acc].op.reduce_axis
    chunk = knobs.k_chunk or kb.extent
    ko, ki = s[acc].split(kb, chunk)
    s[acc].reorder(*agroup, ko, ki, am, an, ab, ac, k)
    s[xl].compute_at(s[acc], ko)
    if knobs.vthread_axis == "m" and chunk == kb.extent:
        s[wl].compute_at(s[out], no)       # loaded once per column tile, kept across the row tiles
    else:
        s[wl].compute_at(s[acc], ko)
    s[acc].tensorize(ab, _gemm_intrin(config))
    return s


def schedule_tile_chain(config, out, acc_stages, alu_stages, knobs, gemm_stages=()):
    """ALU-only operators (pooling, elementwise): the int8 output is tiled into tile_c channel
    blocks x tile_h x tile_w pixels (two virtual threads over channel tiles if asked); per tile
    the `acc_stages` (DMA loads into the accumulators, resets), the `gemm_stages` (int8 data
    brought into the accumulators by the GEMM core, vta_mode.gemm_into_acc) and the
    `alu_stages` (each tensorized with its ALU intrinsic, in place) are computed, then the
    tile is stored."""
    s = create_schedule(out)
    n, c, h, w, b, l = s[out].op.axis
    co, ci = s[out].split(c, knobs.tile_c)
    ho, hi = s[out].split(h, knobs.tile_h)
    wo, wi = s[out].split(w, knobs.tile_w)
    vt, co = _split_vthreads(s[out], co, knobs.vthreads)
    s[out].reorder(n, *vt, co, ho, wo, ci, hi, wi, b, l)
    for st in acc_stages:
        for t in st.op.input_tensors:
            _source(s, t)
    for st in [*acc_stages, *alu_stages]:
        s[st].set_scope(intrin.SCOPE_ACC)
        s[st].compute_at(s[out], wo)
    for st in gemm_stages:
        schedule_gemm_into_acc(s, config, st, (s[out], wo))
    for st in alu_stages:
        s[st].tensorize(s[st].op.axis[-2], _alu_intrin(config, st))
    return s

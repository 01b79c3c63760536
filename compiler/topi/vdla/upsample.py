"""Nearest upsampling by whole factors on the VDLA tensor ALU, int8 in the SPEC §7 activation
layout: each output pixel (i, j) is the input pixel (i // fh, j // fw).

Per output tile, the input tile (tile_h / fh rows of tile_w / fw pixels) is loaded into the
accumulator SRAM with LOAD ACC_8BIT, the output tile is reset, and one ALU ADD copies each
input pixel into its fh x fw block: the output rows and columns are split by the factors, so
the source index (i_o * fh + i_i) // fh is i_o, an address the micro-op loops can step. That
is three compute cycles per output element (a reset, a two-operand ADD), overlapped with the
store of the other virtual thread's tile.

VTA mode: VTA has no LOAD ACC_8BIT, so the op is refused there (placement keeps the Resize as a
host copy)."""
from __future__ import annotations

from dataclasses import dataclass

from ... import te
from ...build import build_vdla
from ...codegen.vdla.errors import VtaCompatError
from .build import activation, check_knobs, kernel_meta
from .epilogue import Epilogue
from .plan import NoTilingError
from .schedule import schedule_tile_chain


@dataclass(frozen=True)
class UpsampleLayer:
    n: int
    c: int              # channel blocks
    h: int
    w: int
    fh: int
    fw: int

    @property
    def out_h(self) -> int:
        return self.h * self.fh

    @property
    def out_w(self) -> int:
        return self.w * self.fw


@dataclass(frozen=True)
class UpsampleKnobs:
    tile_c: int
    tile_h: int         # output rows: a multiple of fh that divides the output's height
    tile_w: int         # output columns: a multiple of fw that divides the output's width
    vthreads: int = 2


def _problem(config, layer: UpsampleLayer, k: UpsampleKnobs) -> str | None:
    if layer.c % k.tile_c:
        return f"tile_c={k.tile_c} does not divide the {layer.c} channel blocks"
    for what, tile, factor, size in (("tile_h", k.tile_h, layer.fh, layer.out_h),
                                     ("tile_w", k.tile_w, layer.fw, layer.out_w)):
        if tile % factor or size % tile:
            return f"{what}={tile} is not a multiple of the factor {factor} that divides the output's {size}"
    if k.vthreads > 1 and (layer.c // k.tile_c) % k.vthreads:
        return f"{layer.c // k.tile_c} channel tiles cannot be shared by {k.vthreads} virtual threads"
    pixels = k.tile_h * k.tile_w
    need = k.tile_c * (pixels + pixels // (layer.fh * layer.fw)) * k.vthreads
    if need > config.acc_depth:
        return f"the tiles need {need} accumulator SRAM elements but there are {config.acc_depth}"
    return None


def default_upsample_knobs(config, layer: UpsampleLayer) -> UpsampleKnobs:
    """The largest tiles that fit (fewest instructions and DMA rows), two virtual threads over
    channel tiles where they pair up."""
    best = None
    rows = [t for t in range(layer.fh, layer.out_h + 1, layer.fh) if layer.out_h % t == 0]
    cols = [t for t in range(layer.fw, layer.out_w + 1, layer.fw) if layer.out_w % t == 0]
    for vt in (2, 1):
        for tc in (d for d in range(1, layer.c + 1) if layer.c % d == 0):
            for th in rows:
                for tw in cols:
                    k = UpsampleKnobs(tc, th, tw, vt)
                    if _problem(config, layer, k):
                        continue
                    tiles = (layer.c // tc) * (layer.out_h // th) * (layer.out_w // tw)
                    score = (tiles, -vt)
                    if best is None or score < best[0]:
                        best = (score, k)
        if best is not None:
            break
    if best is None:
        raise NoTilingError(layer, config, upsample_tiling_problem(config, layer))
    return best[1]


def upsample_tiling_problem(config, layer: UpsampleLayer) -> str | None:
    """None when default_upsample_knobs finds a schedule, else why the smallest tile does not fit."""
    problem = _problem(config, layer, UpsampleKnobs(1, layer.fh, layer.fw, 1))
    return problem and f"the smallest tile (one input pixel of 1 channel block): {problem}"


def compile_upsample(config, layer: UpsampleLayer, knobs: UpsampleKnobs | None = None, name: str = "upsample",
                     vta_compat: bool = False):
    """-> (KernelProgram, UpsampleKnobs); buffers x, y."""
    if vta_compat:
        raise VtaCompatError(f"{name}: VTA has no LOAD ACC_8BIT to bring int8 pixels into the accumulators")
    knobs = knobs or default_upsample_knobs(config, layer)
    check_knobs(name, config, layer, knobs, _problem(config, layer, knobs))
    x = activation(config, layer)
    xa = te.compute(x.shape, lambda *i: te.cast("int32", x(*i)), name="upsample.window")
    shape = (layer.n, layer.c, layer.out_h, layer.out_w, config.batch, config.block)
    zero = te.compute(shape, lambda *i: te.const(0, "int32"), name="upsample.init")
    fh, fw = layer.fh, layer.fw
    copy = te.compute(shape, lambda n, c, i, j, b, l: zero[n, c, i, j, b, l] + xa[n, c, i // fh, j // fw, b, l],
                      name="upsample.copy", attrs={"vdla.alu": ("add", None)})
    out = te.compute(shape, lambda *i: te.cast("int8", copy(*i)), name="y")
    s = schedule_tile_chain(config, out, [xa, zero], [copy], knobs)
    n, c, i, j, b, l = s[copy].op.axis
    io, ii = s[copy].split(i, fh)
    jo, ji = s[copy].split(j, fw)
    s[copy].reorder(n, c, io, jo, ii, ji, b, l)
    prog = build_vdla(s, [x, out], config, name)
    prog.meta.update(kernel_meta("upsample", knobs, layer, Epilogue(lo=None, hi=None), vta_compat))
    return prog, knobs

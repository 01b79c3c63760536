"""Pooling on the VDLA tensor ALU: max pooling and the window sum behind average and global
average pooling, int8 in the SPEC §7 activation layout.

The ALU has no reduction over a window, so the taps are a chain of elementwise stages on the
output tile: the accumulators are reset, the first tap is added, every further tap is a MAX
(or ADD) with a tensor operand, all in place. The input window reaches the accumulators
through the GEMM core: LOAD INP (on the load module, overlapped with the other tile's work),
then a reset and a GEMM by the weight block I per element, two compute cycles an element
where LOAD ACC_8BIT took two and the DRAM latency of every row on the compute module; for
max pooling the DMA pads with -128 (LOAD pad_min), which no input value loses to, so it is
ONNX MaxPool exactly; sums pad with zeros.
Average pooling is the window sum times `mul` >> `shift` (with rounding), the fixed-point
form of 1/(KH*KW); it is exact for power-of-two windows (mul 1, shift log2).
Each tap costs two ALU cycles per output element (two accumulator reads).

VTA mode (vta_compat=True, see vta_mode): the weight block is mul * I, which also applies
the averaging multiplier, since VTA has no ALU MUL; padding reads zeros, so padded max
pooling needs a non-negative input (pad_value=0).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ... import te
from ...build import build_vdla
from ...codegen.vdla.errors import VtaCompatError
from .build import activation, check_knobs, kernel_meta
from .epilogue import Epilogue, apply_epilogue
from .ops import padded_window
from .plan import NoTilingError, SlidingWindow
from .schedule import schedule_tile_chain
from .vta_mode import SHIFT_STEP, check_int8_factor, gemm_into_acc, vta_epilogue, zero_padding


@dataclass(frozen=True)
class PoolLayer(SlidingWindow):
    n: int
    c: int              # channel blocks
    h: int
    w: int
    kh: int
    kw: int
    stride: int = 1
    pads: tuple = (0, 0, 0, 0)
    mode: str = "max"   # "max" or "sum" (average / global average: sum + epilogue mul/shift)
    pad_value: int | None = None    # what padding reads: None = -128 for max (never wins), 0 for sum;
    #                                 0 for max pooling of a non-negative input gives the same result

    @property
    def padding(self) -> int:
        if self.pad_value is not None:
            return self.pad_value
        return -128 if self.mode == "max" else 0


@dataclass(frozen=True)
class PoolKnobs:
    tile_c: int
    tile_h: int
    tile_w: int
    vthreads: int = 2


def pool_chain(x, layer: PoolLayer, out_hw, pad_value: int, weight=None):
    """-> (reset stage, input window stage (int32), tap stages in order). The window is a
    sign-extending copy (LOAD ACC_8BIT), or with `weight` a GEMM by that (L, L) block."""
    nb, cb, h, w, batch, block = x.shape
    s = layer.stride
    xp, _ = padded_window(x, layer.kh, layer.kw, (s, s), layer.pads, out_hw, "pool.pad", pad_value)
    if weight is None:
        xa = te.compute(xp.shape, lambda *i: te.cast("int32", xp(*i)), name="pool.window")
    else:
        xa = gemm_into_acc(xp, weight, xp.shape, "pool.window")
    shape = (nb, cb, out_hw[0], out_hw[1], batch, block)
    zero = te.compute(shape, lambda *i: te.const(0, "int32"), name="pool.init")
    taps = [(ky, kx) for ky in range(layer.kh) for kx in range(layer.kw)]
    stages, t = [], zero
    for k, (ky, kx) in enumerate(taps):
        op = "add" if k == 0 or layer.mode == "sum" else "max"
        t = te.compute(shape, _tap(t, xa, s, ky, kx, op), name=f"pool.tap{k}", attrs={"vdla.alu": (op, None)})
        stages.append(t)
    return zero, xa, stages


def _tap(t, xa, s, ky, kx, op):
    def f(n, c, i, j, b, l):
        tap = xa[n, c, i * s + ky, j * s + kx, b, l]
        return t[n, c, i, j, b, l] + tap if op == "add" else te.maximum(t[n, c, i, j, b, l], tap)
    return f


# The taps are a chain of ALU stages, one per tap (the ISA has no reduction over a window):
# compile time grows with the square of their count (16x16 windows: 1.6 s), and a chain of
# several hundred no longer lowers. Larger windows (an SE block's global average over 28x28)
# run on the CPU, where they cost about as much as the accelerator's 2 cycles per tap.
MAX_WINDOW_TAPS = 256


def _problem(config, layer: PoolLayer, k: PoolKnobs, vta_compat: bool = False) -> str | None:
    if layer.kh * layer.kw > MAX_WINDOW_TAPS:
        return (f"a {layer.kh}x{layer.kw} window: the ALU sums or compares one tap per stage, at most "
                f"{MAX_WINDOW_TAPS} taps")
    if layer.c % k.tile_c:
        return f"tile_c={k.tile_c} does not divide the {layer.c} channel blocks"
    if k.vthreads > 1 and (layer.c // k.tile_c) % k.vthreads:
        return f"{layer.c // k.tile_c} channel tiles cannot be shared by {k.vthreads} virtual threads"
    rows = (k.tile_h - 1) * layer.stride + layer.kh
    cols = (k.tile_w - 1) * layer.stride + layer.kw
    need = (k.tile_c * (rows * cols + k.tile_h * k.tile_w)) * k.vthreads
    if need > config.acc_depth:
        return f"the tiles need {need} accumulator SRAM elements but there are {config.acc_depth}"
    window = k.tile_c * rows * cols * k.vthreads
    if window > config.inp_depth:
        return f"the windows need {window} input SRAM elements but there are {config.inp_depth}"
    over_h = -(-layer.out_h // k.tile_h) * k.tile_h
    over_w = -(-layer.out_w // k.tile_w) * k.tile_w
    bottom = (over_h - 1) * layer.stride + layer.kh - layer.h - layer.pads[0]
    right = (over_w - 1) * layer.stride + layer.kw - layer.w - layer.pads[1]
    if max(bottom, right, *layer.pads) > config.isa.max_pad:
        return f"the input window reaches more than the DMA's {config.isa.max_pad}-element padding past the image"
    return None


def default_pool_knobs(config, layer: PoolLayer, vta_compat: bool = False) -> PoolKnobs:
    """The largest tiles that fit (fewest instructions and DMA rows), two virtual threads
    over channel tiles when the channel tiles pair up."""
    best = None
    for vt in (2, 1):
        for tc in (d for d in range(1, layer.c + 1) if layer.c % d == 0):
            for th in range(1, layer.out_h + 1):
                for tw in sorted({layer.out_w, *range(1, min(layer.out_w, 16) + 1)}):
                    k = PoolKnobs(tc, th, tw, vt)
                    if _problem(config, layer, k, vta_compat):
                        continue
                    tiles = (layer.c // tc) * -(-layer.out_h // th) * -(-layer.out_w // tw)
                    waste = tc * th * tw * tiles
                    score = (tiles * (40 + 16 * layer.kh * layer.kw), waste, -vt)
                    if best is None or score < best[0]:
                        best = (score, k)
        if best is not None:
            break
    if best is None:
        raise NoTilingError(layer, config, pool_tiling_problem(config, layer, vta_compat))
    return best[1]


def pool_tiling_problem(config, layer: PoolLayer, vta_compat: bool = False) -> str | None:
    """None when default_pool_knobs finds a schedule, else why none fits: every need grows
    with the tile, so the one-element tile on one thread fits if any does."""
    problem = _problem(config, layer, PoolKnobs(1, 1, 1, 1), vta_compat)
    return problem and f"the smallest tile (1 pixel of 1 channel block): {problem}"


def compile_pool2d(config, layer: PoolLayer, ep: Epilogue | None = None, knobs: PoolKnobs | None = None,
                   name: str = "pool2d", vta_compat: bool = False):
    """-> (KernelProgram, PoolKnobs); buffers x, w, y with w = vta_mode.scaled_identity(L, 1)
    (VTA mode: scaled_identity(L, window_factor(layer, ep)))."""
    if layer.mode not in ("max", "sum"):
        raise ValueError(f"{name}: pooling mode {layer.mode!r}; expected 'max' or 'sum'")
    ep = ep or Epilogue(lo=None, hi=None)
    if ep.bias or ep.residual:
        raise ValueError(f"{name}: a pooling epilogue has no bias or residual operand")
    knobs = knobs or default_pool_knobs(config, layer, vta_compat)
    check_knobs(name, config, layer, knobs, _problem(config, layer, knobs, vta_compat))
    B, L = config.batch, config.block
    x = activation(config, layer)
    out_hw = (-(-layer.out_h // knobs.tile_h) * knobs.tile_h, -(-layer.out_w // knobs.tile_w) * knobs.tile_w)
    args, run_ep, pad_value, shift_step = [x], ep, layer.padding, None
    weight = te.placeholder((L, L), "int8", "w")
    args.append(weight)
    if vta_compat:
        window_factor(layer, ep, name)
        run_ep = vta_epilogue(replace(ep, mul=None), name)      # the factor rides on the weight block
        pad_value = zero_padding(name, f"{layer.mode} pooling", layer.pads, layer.padding)
        shift_step = SHIFT_STEP
    zero, xa, taps = pool_chain(x, layer, out_hw, pad_value, weight)
    stages, _, out = apply_epilogue(taps[-1], run_ep, (layer.n, layer.c, layer.out_h, layer.out_w, B, L), name="y",
                                    shift_step=shift_step)
    s = schedule_tile_chain(config, out, [zero], [*taps, *stages], knobs, [xa])
    prog = build_vdla(s, args + [out], config, name)
    prog.meta.update(kernel_meta(f"pool2d.{layer.mode}", knobs, layer, ep, vta_compat))
    return prog, knobs


def window_factor(layer: PoolLayer, ep: Epilogue, name: str = "pool2d") -> int:
    """VTA mode: the int8 factor of the window's weight block, the epilogue's multiplier
    (exact: a sum of scaled taps is the scaled sum, and max commutes with a positive factor)."""
    factor = 1 if ep.mul is None else ep.mul
    check_int8_factor(name, "the averaging multiplier mul", factor)
    if layer.mode == "max" and factor < 1:
        raise VtaCompatError(f"{name}: max pooling times {factor}: only a positive factor commutes with max")
    return factor

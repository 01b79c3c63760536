"""2-D convolution (int8, NCHW semantics) on VDLA, tiled over output rows, with padding done
by the DMA and 1 or 2 virtual threads.

Per iteration the program loads the input rows one output-row tile needs (for every input
channel block; rows above/below the image and the left/right border come from the LOAD's
y_pad/x_pad zero fill), resets the tile's accumulators, runs one GEMM over all output
channel blocks, input channel blocks and kernel taps, requantizes on the ALU and stores the
tile. Layouts are SPEC §7: activations (N/B, C/BLOCK, H, W, B, BLOCK), weights
(O/BLOCK, I/BLOCK, KH, KW, BLOCK, BLOCK).

GEMM kernel: micro-ops enumerate (ky, kx, y, x) of the tile, the two loop levels walk output
channel blocks (outer) and input channel blocks (inner). Consecutive micro-op steps update
different accumulators, as the hazard rule demands.
"""
from __future__ import annotations

import numpy as np

from vdla.hw import MemType, Uop

from vdla.compiler.topi.vdla import ConvLayer
from vdla.driver.runtime import CommandQueue, LoopLevel, UopKernel
from vdla.driver.runtime.layout import pack_activation, pack_conv_weight, unpack_activation

from .launch import run_handwritten
from .pipeline import emit_pipelined
from .requant import Requant, emit_requant, requant_reference


class Conv2dShape(ConvLayer):
    """The compiler's layer description (SPEC §7 elements: n batch blocks, c/o channel blocks,
    pixels for h/w) as far as this program goes: one padding on every side, no depthwise."""

    @property
    def pad(self) -> int:
        if len(set(self.pads)) != 1 or self.depthwise:
            raise ValueError(f"conv {self}: the hand-written program pads every side alike and is not depthwise")
        return self.pads[0]

    @property
    def padded_w(self) -> int:
        return self.w + 2 * self.pad

    def in_rows(self, tile_h: int) -> int:
        return (tile_h - 1) * self.stride + self.kh


def fit_tiles(shape: Conv2dShape, config, virtual_threads: int,
              tile_oc: int | None = None) -> tuple[int, int]:
    """(tile_h, tile_oc): all output channel blocks if their weights fit (else as many as fit
    half the weight SRAM, so two tiles can alternate), then the largest output-row tile whose
    input, accumulators and micro-ops fit one of the `virtual_threads` SRAM slots."""
    t = virtual_threads
    taps_c = shape.c * shape.kh * shape.kw
    if tile_oc is None:
        tile_oc = shape.o if shape.o * taps_c <= config.wgt_depth else config.wgt_depth // 2 // taps_c
    if tile_oc < 1:
        raise ValueError(f"conv {shape}: the weights of one output channel block ({taps_c} elements) "
                         f"do not fit half the weight SRAM ({config.wgt_depth // 2}); the layer needs "
                         "input-channel tiling, which this program does not do")
    best = 0
    for th in range(1, shape.out_h + 1):
        inp = shape.c * shape.in_rows(th) * shape.padded_w
        acc = tile_oc * th * shape.out_w
        uops = shape.kh * shape.kw * th * shape.out_w
        if inp * t <= config.inp_depth and acc * t <= config.acc_depth and uops * t + 8 <= config.uop_depth:
            best = th
    if not best:
        raise ValueError(f"conv {shape}: even one output row does not fit the SRAMs with {t} virtual "
                         "thread(s); the layer needs input-channel or width tiling")
    return best, tile_oc


def _gemm_kernel(s: Conv2dShape, base_a: int, base_i: int, base_w: int, th: int, toc: int) -> UopKernel:
    wp, wo, rows = s.padded_w, s.out_w, s.in_rows(th)
    uops = [Uop(base_a + y * wo + x, base_i + (y * s.stride + ky) * wp + x * s.stride + kx,
                base_w + ky * s.kw + kx)
            for ky in range(s.kh) for kx in range(s.kw) for y in range(th) for x in range(wo)]
    taps = s.kh * s.kw
    loops = (LoopLevel(toc, dst=th * wo, src=0, wgt=s.c * taps),
             LoopLevel(s.c, dst=0, src=rows * wp, wgt=taps))
    return UopKernel.gemm(uops, loops, name=f"conv tile {toc}x{th}x{wo}")


def _reset_kernel(base_a: int, rows: int, cols: int) -> UopKernel:
    return UopKernel.gemm([Uop(base_a)], (LoopLevel(rows, dst=cols), LoopLevel(cols, dst=1)),
                          reset=True, name="reset")


def conv2d_program(cq: CommandQueue, s: Conv2dShape, inp_buf, wgt_buf, out_buf,
                   virtual_threads: int = 2, tile_h: int | None = None,
                   requant: Requant | None = None, tile_oc: int | None = None) -> None:
    """Emit the instructions of one conv layer (no synchronize).

    Iterations run over (image, output-channel tile, output-row tile); the weights of an
    output-channel tile are loaded once and reused by all its row tiles (two weight slots
    alternate between consecutive channel tiles when two virtual threads run)."""
    cfg = cq.config
    t = virtual_threads
    if s.pad > 15:
        raise ValueError(f"conv padding {s.pad} exceeds the DMA's 4-bit pad fields (max 15)")
    th_fit, toc_max = fit_tiles(s, cfg, t, tile_oc)
    th_max = tile_h or th_fit
    taps_c = s.c * s.kh * s.kw
    oc_tiles = [(o0, min(toc_max, s.o - o0)) for o0 in range(0, s.o, toc_max)]
    wgt_slots = min(t, len(oc_tiles))
    wgt_slot = toc_max * taps_c
    inp_slot, acc_slot = cfg.inp_depth // t, cfg.acc_depth // t
    wp, wo, ho = s.padded_w, s.out_w, s.out_h
    if wgt_slots * wgt_slot > cfg.wgt_depth:
        raise ValueError(f"conv weights of {toc_max} output channel blocks x {wgt_slots} slot(s) need "
                         f"{wgt_slots * wgt_slot} weight SRAM elements but there are {cfg.wgt_depth}; "
                         "use a smaller tile_oc")
    if s.c * s.in_rows(th_max) * wp > inp_slot or toc_max * th_max * wo > acc_slot:
        raise ValueError(f"conv tile of {th_max} output rows does not fit one of {t} SRAM slots "
                         f"(input {inp_slot}, accumulator {acc_slot} elements); use a smaller tile_h")
    # (image, weight load number or None when resident, oc tile, first row, rows)
    tiles, loads = [], 0
    for n in range(s.n):
        for o0, toc in oc_tiles:
            for h0 in range(0, ho, th_max):
                new_weights = h0 == 0 and (len(oc_tiles) > 1 or not tiles)
                if new_weights:
                    loads += 1
                tiles.append((n, (loads - 1) % wgt_slots, new_weights, o0, toc, h0, min(th_max, ho - h0)))

    def load(it: int, slot: int) -> None:
        n, wslot, new_weights, o0, toc, h0, th = tiles[it]
        if new_weights:
            cq.load_2d(MemType.WGT, wslot * wgt_slot, wgt_buf, o0 * taps_c, toc * taps_c)
        first = h0 * s.stride - s.pad                      # input row of the tile's top tap
        last = first + s.in_rows(th)                       # one past the bottom tap
        top, bottom = max(0, -first), max(0, last - s.h)
        for c in range(s.c):
            row0 = ((n * s.c + c) * s.h + first + top) * s.w
            cq.load_2d(MemType.INP, slot * inp_slot + c * s.in_rows(th) * wp, inp_buf, row0,
                       s.w, s.in_rows(th) - top - bottom, s.w,
                       y_pad=(top, bottom), x_pad=(s.pad, s.pad))

    def compute(it: int, slot: int) -> None:
        _, wslot, _, _, toc, _, th = tiles[it]
        base_a, base_i, base_w = slot * acc_slot, slot * inp_slot, wslot * wgt_slot
        cq.push_gemm(cq.kernel(("conv-reset", base_a, toc * th, wo),
                               lambda: _reset_kernel(base_a, toc * th, wo)))
        cq.push_gemm(cq.kernel(("conv", s, base_a, base_i, base_w, th, toc),
                               lambda: _gemm_kernel(s, base_a, base_i, base_w, th, toc)))
        if requant is not None:
            emit_requant(cq, requant, base_a, toc * th, wo)

    def store(it: int, slot: int) -> None:
        n, _, _, o0, toc, h0, th = tiles[it]
        # one row per output channel block: th*wo contiguous pixels, blocks ho*wo apart
        cq.store_2d(slot * acc_slot, out_buf, ((n * s.o + o0) * ho + h0) * wo, th * wo, toc, ho * wo)

    emit_pipelined(cq, len(tiles), t, load, compute, store)


def conv2d_reference(x: np.ndarray, w: np.ndarray, stride: int = 1, pad: int = 1,
                     requant: Requant | None = None) -> np.ndarray:
    """numpy oracle in plain NCHW/OIHW: the int8 tensor the accelerator stores."""
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    o, _, kh, kw = w.shape
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    acc = np.einsum("nchwij,ocij->nohw", win, w.astype(np.int64)).astype(np.int32)
    if requant is None:
        return acc.astype(np.int8)
    return requant_reference(acc, requant)


def run_conv2d(device, x: np.ndarray, w: np.ndarray, stride: int = 1, pad: int = 1,
               virtual_threads: int = 2, tile_h: int | None = None,
               requant: Requant | None = None, cq: CommandQueue | None = None,
               tile_oc: int | None = None, check_races: bool = False):
    """Conv of x (N, C, H, W) int8 with w (O, C, KH, KW) int8 on `device`.
    Returns (y (N, O, HO, WO) int8, LaunchResult)."""
    cfg = device.config
    x_p = pack_activation(x, cfg.batch, cfg.block)
    w_p = pack_conv_weight(w, cfg.block)
    s = Conv2dShape(x_p.shape[0], x_p.shape[1], x.shape[2], x.shape[3], w_p.shape[0],
                    w.shape[2], w.shape[3], stride, (pad,) * 4)
    out_shape = (s.n, s.o, s.out_h, s.out_w, cfg.batch, cfg.block)

    def emit(cq, *bufs):
        conv2d_program(cq, s, *bufs, virtual_threads=virtual_threads, tile_h=tile_h, requant=requant,
                       tile_oc=tile_oc)
    y, result = run_handwritten(device, x_p, w_p, out_shape, emit, cq, check_races)
    return unpack_activation(y, x.shape[0], w.shape[0]), result

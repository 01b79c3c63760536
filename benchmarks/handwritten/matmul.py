"""Blocked int8 matrix multiply C = A @ B on VDLA, with weight reuse and virtual threads.

Shapes are in elements of the SPEC §7 layouts: A is (M/BATCH, K/BLOCK) input elements,
B is (N/BLOCK, K/BLOCK) weight elements (B transposed), C is (M/BATCH, N/BLOCK).
The output is tiled into tile_m rows x tile_n column blocks with the whole reduction K on
chip. Tiles are visited column-block-major, so one weight tile is loaded once and reused
by every row tile (weight reuse); the weight tiles of consecutive column blocks alternate
between two weight slots, so the next block's weights stream in while this one computes.
With two virtual threads the inputs/accumulators of consecutive tiles also alternate
between two SRAM slots.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdla.hw import MemType, Uop

from vdla.driver.runtime import CommandQueue, LoopLevel, UopKernel
from vdla.driver.runtime.layout import pack_matrix_lhs, pack_matrix_rhs, unpack_matrix

from .launch import run_handwritten
from .pipeline import emit_pipelined
from .requant import Requant, emit_requant, requant_reference


@dataclass(frozen=True)
class MatmulShape:
    m: int   # rows of A and C, in input elements (M / BATCH)
    k: int   # reduction, in blocks (K / BLOCK)
    n: int   # columns of C, in blocks (N / BLOCK)
    tile_m: int
    tile_n: int


def _gemm_kernel(base_a: int, base_i: int, base_w: int, tm: int, tn: int, kb: int) -> UopKernel:
    # The reduction loop is never innermost-adjacent to itself: consecutive micro-op steps
    # walk output columns (or rows), so no accumulator is updated twice in a row.
    if tn >= 2:
        uops = [Uop(base_a + n, base_i, base_w + n * kb) for n in range(tn)]
        loops = (LoopLevel(tm, dst=tn, src=kb, wgt=0), LoopLevel(kb, dst=0, src=1, wgt=1))
    else:
        uops = [Uop(base_a + m * tn, base_i + m * kb, base_w) for m in range(tm)]
        loops = (LoopLevel(kb, dst=0, src=1, wgt=1),)
    return UopKernel.gemm(uops, loops, name=f"matmul {tm}x{tn}x{kb}")


def _reset_kernel(base_a: int, count: int) -> UopKernel:
    return UopKernel.gemm([Uop(base_a)], (LoopLevel(count, dst=1),), reset=True, name="reset")


def matmul_program(cq: CommandQueue, shape: MatmulShape, a_buf, b_buf, c_buf,
                   virtual_threads: int = 2, requant: Requant | None = None) -> None:
    """Emit the instructions of C = A @ B (no synchronize). Tiles at the bottom/right edge
    may be smaller than tile_m x tile_n."""
    cfg = cq.config
    s, t = shape, virtual_threads
    tm, tn, kb = s.tile_m, s.tile_n, s.k
    n_tiles, m_tiles = -(-s.n // tn), -(-s.m // tm)
    # Two weight slots let the next column block's weights arrive while this one computes;
    # with two virtual threads they are required (a load may run while the previous
    # column block's last tile still computes).
    wgt_slots = 2 if n_tiles > 1 and (t == 2 or 2 * tn * kb <= cfg.wgt_depth) else 1
    need = {"input": (t * tm * kb, cfg.inp_depth), "weight": (wgt_slots * tn * kb, cfg.wgt_depth),
            "accumulator": (t * tm * tn, cfg.acc_depth)}
    for name, (used, depth) in need.items():
        if used > depth:
            raise ValueError(f"matmul tile {tm}x{tn} with K={kb} blocks and {t} virtual thread(s) needs "
                             f"{used} {name} SRAM elements but there are {depth}; use smaller tiles")
    inp_slot, acc_slot, wgt_slot = cfg.inp_depth // t, cfg.acc_depth // t, tn * kb
    # Prefetch: column block j+1's weights are loaded in pieces alongside row tiles 1.. of
    # block j. Row tile (j, i >= 1) loads only after compute finished tile (j, i) - T, which
    # is at or after the last tile of block j-1, the previous user of that weight slot.
    prefetch = wgt_slots == 2 and m_tiles >= 2

    # (column tile j, first column block, width, row tile i, first row, height); the weight
    # tile of column block j is reused by every row tile i
    order = [(j, n0, min(tn, s.n - n0), i, m0, min(tm, s.m - m0))
             for j, n0 in enumerate(range(0, s.n, tn)) for i, m0 in enumerate(range(0, s.m, tm))]

    def load_weights(j: int, first: int, count: int) -> None:
        """Column blocks [first, first + count) of column tile j into its weight slot."""
        if count > 0:
            n0 = j * tn + first
            cq.load_2d(MemType.WGT, (j % wgt_slots) * wgt_slot + first * kb, b_buf, n0 * kb, count * kb)

    def load(it: int, slot: int) -> None:
        j, _, w, i, m0, h = order[it]
        if i == 0 and (j == 0 or not prefetch):
            load_weights(j, 0, w)
        cq.load_2d(MemType.INP, slot * inp_slot, a_buf, m0 * kb, h * kb)
        if prefetch and i >= 1 and j + 1 < n_tiles:
            w_next = min(tn, s.n - (j + 1) * tn)
            pieces = m_tiles - 1
            first, last = (i - 1) * w_next // pieces, i * w_next // pieces
            load_weights(j + 1, first, last - first)

    def compute(it: int, slot: int) -> None:
        j, _, w, _, _, h = order[it]
        base_a, base_i, base_w = slot * acc_slot, slot * inp_slot, (j % wgt_slots) * wgt_slot
        cq.push_gemm(cq.kernel(("reset", base_a, h * w), lambda: _reset_kernel(base_a, h * w)))
        cq.push_gemm(cq.kernel(("mm", base_a, base_i, base_w, h, w, kb),
                               lambda: _gemm_kernel(base_a, base_i, base_w, h, w, kb)))
        if requant is not None:
            emit_requant(cq, requant, base_a, h, w)

    def store(it: int, slot: int) -> None:
        _, n0, w, _, m0, h = order[it]
        cq.store_2d(slot * acc_slot, c_buf, m0 * s.n + n0, w, h, s.n)

    emit_pipelined(cq, len(order), t, load, compute, store)


def matmul_reference(a: np.ndarray, b: np.ndarray, requant: Requant | None = None) -> np.ndarray:
    """numpy oracle: the int8 matrix the accelerator stores."""
    acc = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)  # int32 wrap like the ACC
    if requant is None:
        return acc.astype(np.int8)
    return requant_reference(acc, requant)


def run_matmul(device, a: np.ndarray, b: np.ndarray, tile_m: int = 16, tile_n: int = 8,
               virtual_threads: int = 2, requant: Requant | None = None,
               cq: CommandQueue | None = None, check_races: bool = False):
    """A (M, K) int8 @ B (K, N) int8 on `device`; returns (C int8 (M, N), LaunchResult)."""
    cfg = device.config
    a_p = pack_matrix_lhs(a, cfg.batch, cfg.block)
    b_p = pack_matrix_rhs(b, cfg.block)
    shape = MatmulShape(a_p.shape[0], a_p.shape[1], b_p.shape[0], min(tile_m, a_p.shape[0]),
                        min(tile_n, b_p.shape[0]))
    c_shape = (shape.m, shape.n, cfg.batch, cfg.block)

    def emit(cq, *bufs):
        matmul_program(cq, shape, *bufs, virtual_threads=virtual_threads, requant=requant)
    c, result = run_handwritten(device, a_p, b_p, c_shape, emit, cq, check_races)
    return unpack_matrix(c, a.shape[0], b.shape[1]), result

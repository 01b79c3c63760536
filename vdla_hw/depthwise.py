"""DEPTHWISE (opcode 5, a VDLA extension): the GEMM core as a row filter for depthwise convs.

Why: a depthwise conv reduces over its taps only, so as a GEMM it multiplies by a diagonal
weight block and keeps 1 of BLOCK products (one micro-op per tap and pixel). DEPTHWISE keeps
the GEMM's fields, loop nest and timing (one cycle per micro-op) and changes what a micro-op
multiplies:

    for i < iter_out, j < iter_in, u in [uop_begin, uop_end): a, x, w as GEMM (SPEC §3);
    s = u - uop_begin; the window of the step is V_t = INP[x of step s - (TAPS-1) + t],
    t < TAPS: its own input and the TAPS-1 inputs before it in the same (i, j) row.
    s < TAPS-1: the step only fills the window; it writes neither ACC nor OUT (reset or not).
    Otherwise, reset: ACC[a] = 0; else ACC[a][b][o] += sum_t V_t[b][o] * WGT[w][o][t]
    (int32 wrap), and OUT[a] as every GEMM write (low bits, or the requantizer).

Lane o of an input is channel o; row o of the weight tile holds channel o's TAPS taps in its
lanes 0..TAPS-1 and the other lanes are not read. A row of n outputs of a 1 x TAPS filter is
n + TAPS - 1 micro-ops (the first TAPS - 1 prime the window); a k x TAPS kernel is k such rows
into the same accumulators. Writes that a step does not make do not count for the
accumulator's read-after-write distance.

In the RTL the window is two input registers in front of the multipliers, and the products
use the GEMM's packed multipliers: the pair of rows (2q, 2q+1) owns BLOCK multipliers, each
one signed input times a packed weight pair; DEPTHWISE gives row 2q's taps the low product
of multipliers 0..TAPS-1 and row 2q+1's taps the high product of multipliers TAPS..2*TAPS-1,
so the reduction tree is the GEMM's, unchanged. That needs BLOCK >= 2 * TAPS.
"""
from __future__ import annotations

import numpy as np

TAPS = 3


def row_writes(uops: int) -> np.ndarray:
    """Which micro-ops of a DEPTHWISE row write (bool per micro-op): all but the first TAPS - 1,
    which only fill the window."""
    return np.arange(uops) >= TAPS - 1


def depthwise_problem(config) -> str | None:
    """Why a config has no DEPTHWISE instruction, or None."""
    if config.block < 2 * TAPS:
        return (f"DEPTHWISE needs BLOCK >= {2 * TAPS} (two rows' {TAPS} taps on one row pair's multipliers); "
                f"config {config.name} has BLOCK {config.block}")
    return None

"""DEPTHWISE (vdla.hw.depthwise): GEMM's loop nest, each writing micro-op adding lane by lane
its window of the row's last TAPS inputs times the taps of its weight tile.

A step's window lies inside its own (i, j) row, so rows are independent: they are taken
whole in chunks (with the TAPS - 1 inputs before a chunk when it starts mid-row), and a loop
that merely repeats multiplies the sums, as for GEMM.
"""
from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np

from vdla.hw.depthwise import TAPS, row_writes

from .gemm import accumulate, reset_entries
from .loop_nest import LoopNest, check_hazard, check_range


def _writing(nest: LoopNest) -> LoopNest:
    """The nest of the steps that write (every row's micro-ops from TAPS - 1 on)."""
    return dataclasses.replace(nest, base={f: b[TAPS - 1:] for f, b in nest.base.items()})


def execute_depthwise(insn, index: int, state) -> int:
    """Apply one DEPTHWISE; returns the micro-ops it issued (0 for a reset)."""
    cfg = state.config
    nest = LoopNest.of(insn, state, index, ("dst",) if insn.reset else ("dst", "src", "wgt"))
    check_range(nest, "dst", cfg.acc_depth, "DEPTHWISE accumulator", index)
    written = _writing(nest)
    if insn.reset:
        if state.compute:
            reset_entries(state, insn, written)
        return 0
    check_range(nest, "src", cfg.inp_depth, "DEPTHWISE input", index)
    check_range(nest, "wgt", cfg.wgt_depth, "DEPTHWISE weight", index)
    check_hazard(nest, cfg.timing.acc_raw_min_distance, index, "DEPTHWISE",
                 writes=row_writes(nest.uops) if nest.steps else None)
    if written.steps and state.compute:
        lanes = cfg.batch * cfg.block
        accumulate(state, insn, nest, written, 64 + lanes * (TAPS * 4 + 24), partial(_chunk_sums, state))
    return nest.steps


def _chunk_sums(state, nest: LoopNest, first: int, stop: int, slot: np.ndarray, entries: int) -> np.ndarray:
    """Per accumulator slot, the int64 sum of the writing steps in [first, stop)."""
    cfg = state.config
    b, n = cfg.batch, cfg.block
    steps = np.arange(first, stop, dtype=np.int64)
    steps = steps[row_writes(nest.uops)[steps % nest.uops]]
    if not steps.size:
        return np.zeros((entries, b * n), dtype=np.int64)
    lead = max(first - (TAPS - 1), 0)         # a writing step's window starts in its own row
    inputs = state.inp[nest.indices("src", lead, stop)].astype(np.int64).reshape(-1, b, n)
    taps = state.wgt[nest.at("wgt", steps)][:, :, :TAPS].astype(np.int64)    # (steps, o, t)
    products = np.zeros((steps.size, b, n), dtype=np.int64)
    for t in range(TAPS):
        products += inputs[steps - (TAPS - 1) + t - lead] * taps[:, None, :, t]
    dst = slot[nest.at("dst", steps)]
    sums = np.empty((entries, b * n), dtype=np.int64)
    flat = products.reshape(steps.size, b * n)
    for lane in range(b * n):
        sums[:, lane] = np.bincount(dst, weights=flat[:, lane], minlength=entries).astype(np.int64)
    return sums

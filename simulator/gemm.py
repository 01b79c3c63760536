"""GEMM (SPEC §3): ACC[dst] += INP[src] x WGT[wgt]^T over the loop nest, or zero with reset.

A GEMM reads only INP and WGT, which it never writes, so its updates commute: the result
is the sum of every step's product per accumulator entry, whatever the order. Steps are
taken in chunks of bounded memory, and loops that merely repeat (all factors zero)
multiply the sums instead of being run.
"""
from __future__ import annotations

import numpy as np

from .loop_nest import LoopNest, check_hazard, check_range
from .work_limit import GEMM_STEP

_MASK = 0xFFFFFFFF


def execute_gemm(insn, index: int, state) -> int:
    """Apply one GEMM; returns the micro-ops it multiplied (0 for a reset)."""
    cfg = state.config
    nest = LoopNest.of(insn, state, index, ("dst",) if insn.reset else ("dst", "src", "wgt"))
    check_range(nest, "dst", cfg.acc_depth, "GEMM accumulator", index)
    if insn.reset:
        if state.compute:
            reset_entries(state, insn, nest)
        return 0
    check_range(nest, "src", cfg.inp_depth, "GEMM input", index)
    check_range(nest, "wgt", cfg.wgt_depth, "GEMM weight", index)
    check_hazard(nest, cfg.timing.acc_raw_min_distance, index, "GEMM")
    if nest.steps == 0 or not state.compute:
        return nest.steps
    lanes = cfg.batch * cfg.block
    # per step: three indices, the input row, its product and the lane sums, with sort scratch
    accumulate(state, insn, nest, nest, 48 + lanes * 28,
               lambda folded, first, stop, slot, entries: _chunk_sums(
                   state, slot[folded.indices("dst", first, stop)], folded.indices("src", first, stop),
                   folded.indices("wgt", first, stop), entries))
    return nest.steps


def reset_entries(state, insn, written: LoopNest) -> None:
    """A reset: every accumulator entry a writing step names becomes 0 (and OUT, written back)."""
    if written.steps:
        touched = np.flatnonzero(written.counts("dst", state.config.acc_depth))
        state.acc[touched] = 0
        state.write_back(insn, touched)


def accumulate(state, insn, nest: LoopNest, written: LoopNest, bytes_per_step: int, chunk_sums) -> None:
    """Add every step's products to its accumulator entry (int32 wrap) and write the entries
    back. `written`: the steps that write (a DEPTHWISE row's priming ones do not);
    `chunk_sums(folded nest, first, stop, slot of each entry, entries)`: the int64 lane sums of
    steps [first, stop) per written entry. Loops that merely repeat multiply the sums."""
    cfg = state.config
    folded, outer_reps, inner_reps = nest.folded()
    state.meter.spend(folded.steps * GEMM_STEP)       # before any work: a refusal is immediate
    touched = np.flatnonzero(written.counts("dst", cfg.acc_depth))
    slot = np.full(cfg.acc_depth, -1, dtype=np.int64)
    slot[touched] = np.arange(touched.size)
    lanes = cfg.batch * cfg.block
    sums = np.zeros((touched.size, lanes), dtype=np.int64)    # mod 2^32
    for first, stop in folded.chunks(bytes_per_step=bytes_per_step):
        sums = (sums + chunk_sums(folded, first, stop, slot, touched.size)) & _MASK
    total = (sums * (outer_reps * inner_reps)) & _MASK
    acc = state.acc[touched].reshape(touched.size, lanes).astype(np.int64)
    new = ((acc + total) & _MASK).astype(np.uint32).view(np.int32)
    state.acc[touched] = new.reshape(touched.size, cfg.batch, cfg.block)
    state.write_back(insn, touched)


def _chunk_sums(state, dst: np.ndarray, src: np.ndarray, wgt: np.ndarray, entries: int) -> np.ndarray:
    """Per accumulator slot, the int64 sum of this chunk's products."""
    cfg = state.config
    b, n = cfg.batch, cfg.block
    # Products grouped by weight element: one float32 matrix product per distinct weight
    # (an int8 x int8 dot product over a block stays below 2^24, so float32 is exact).
    order = np.argsort(wgt, kind="stable")
    w_sorted = wgt[order]
    cuts = np.flatnonzero(np.diff(w_sorted)) + 1
    starts, ends = np.concatenate(([0], cuts)), np.concatenate((cuts, [w_sorted.size]))
    products = np.empty((dst.size, b * n), dtype=np.float32)
    for s, e in zip(starts.tolist(), ends.tolist()):
        rows = order[s:e]
        x = state.inp[src[rows]].reshape(-1, n).astype(np.float32)
        products[rows] = (x @ state.wgt[w_sorted[s]].T.astype(np.float32)).reshape(e - s, b * n)
    # float64 sums of at most CHUNK steps of such products are exact
    sums = np.empty((entries, b * n), dtype=np.int64)
    for lane in range(b * n):
        sums[:, lane] = np.bincount(dst, weights=products[:, lane], minlength=entries).astype(np.int64)
    return sums

"""drop_cleared_resets: accumulator resets of entries that already hold zero are left out.

ALU FLUSH (vdla.hw.alu_ops) writes a tile's last epilogue step back to OUT and leaves its
accumulators 0, so when the next tile of the same virtual thread resets that SRAM before its
GEMMs, the reset (one cycle per element) changes nothing in ACC. A GEMM reset also writes OUT
(zeros), so it is dropped only where that cannot be seen either: the next operation that
touches its entries must be an accumulating GEMM that writes every one of them (and so
rewrites their OUT) before anything reads them. The program's compute operations run in list
order (load, compute and store each keep their order), and the dependence tokens are inserted
afterwards from what is left, so dropping an operation needs no token repair."""
from __future__ import annotations

import numpy as np

from vdla.hw.alu_ops import CLEARING_OPS
from vdla.driver.runtime import Stage
from vdla.driver.runtime.program_calls import Alu, Gemm

from ...intrin.vdla import SCOPE_ACC
from .nodes import SCOPE_MEM

ACC = SCOPE_MEM[SCOPE_ACC]     # the name emit's operations give the accumulator SRAM


def drop_cleared_resets(config, ops: list, kernels: list) -> list:
    """The operations of `ops` (emit's Op records, in order) without the GEMM resets whose
    accumulators are known to be zero and are rewritten before they are read."""
    zero = np.zeros(config.acc_depth, dtype=bool)
    keep = []
    for i, op in enumerate(ops):
        kernel = kernels[op.call.kernel] if isinstance(op.call, (Gemm, Alu)) else None
        if kernel is not None and kernel.reset:
            dst = kernel.flat_indices("dst")
            if zero[dst].all() and _rewritten_before_read(ops, i, dst, kernels):
                continue
            zero[dst] = True
        elif kernel is not None and kernel.alu_op in CLEARING_OPS:
            zero[kernel.flat_indices("dst")] = True
        elif op.stage == Stage.COMPUTE:
            for memory, lo, hi in op.writes:
                if memory == ACC:
                    zero[lo:hi] = False
        keep.append(op)
    return keep


def _rewritten_before_read(ops: list, at: int, dst: np.ndarray, kernels: list) -> bool:
    """Do accumulating GEMMs after ops[at] write every entry of `dst` before any other
    operation reads or writes one they have not written yet?"""
    pending = np.zeros(int(dst.max()) + 1, dtype=bool)
    pending[dst] = True
    for op in ops[at + 1:]:
        kernel = kernels[op.call.kernel] if isinstance(op.call, Gemm) else None
        if kernel is not None and not kernel.reset:
            written = kernel.flat_indices("dst")
            pending[written[written < pending.size]] = False
            if not pending.any():
                return True
            continue
        if any(m == ACC and pending[a:b].any() for m, a, b in op.reads + op.writes):
            return False
    return False

"""On-chip memories of one accelerator instance, as numpy arrays indexed by element."""
from __future__ import annotations

import numpy as np

from vdla.hw.requantizer import BIAS, CTRL, MUL, REGISTERS, requantize

from .work_limit import DEFAULT_LIMIT, UNLIMITED


class OnChipState:
    def __init__(self, config, max_insn_work: int = DEFAULT_LIMIT, compute: bool = True):
        b, n = config.batch, config.block
        self.config = config
        self.max_insn_work = max_insn_work
        # False: GEMM, DEPTHWISE and ALU instructions are checked (ranges, hazards, the LUT's
        # presence) but compute nothing; loads and stores still move data (Simulator.run)
        self.compute = compute
        self.meter = UNLIMITED          # the work meter of the instruction being executed
        self.inp = np.zeros((config.inp_depth, b, n), dtype=np.int8)
        self.wgt = np.zeros((config.wgt_depth, n, n), dtype=np.int8)
        self.acc = np.zeros((config.acc_depth, b, n), dtype=np.int32)
        self.out = np.zeros((config.out_depth, b, n), dtype=np.int8)
        # the ALU's lookup table, as LOAD LUT addresses it (element, batch, lane); the
        # hardware's per-lane copies all hold the same entries, so one copy is kept
        self.lut = np.zeros((config.lut_depth, b, n), dtype=np.int8)
        # the requantizer's registers (vdla.hw.requantizer.REGISTERS), per lane, as SETQ loads them
        self.requant = np.zeros((len(REGISTERS), b, n), dtype=np.int32)
        # micro-ops are kept decoded: one index array per field
        self.uop_dst = np.zeros(config.uop_depth, dtype=np.int64)
        self.uop_src = np.zeros(config.uop_depth, dtype=np.int64)
        self.uop_wgt = np.zeros(config.uop_depth, dtype=np.int64)

    def write_back(self, insn, entries: np.ndarray, values: np.ndarray | None = None) -> None:
        """OUT of accumulator entries an instruction wrote: the low 8 bits, or with its requant
        bit what the requantizer makes of them; of `values` (int32, one per entry) where the
        accumulators do not keep what was written back (ALU FLUSH)."""
        values = self.acc[entries] if values is None else values
        if insn.requant:
            r = self.requant
            self.out[entries] = requantize(values, r[BIAS], r[MUL], r[CTRL], self.lut)
        else:
            self.out[entries] = values.astype(np.int8)

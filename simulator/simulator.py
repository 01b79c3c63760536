"""The cycle-exact VDLA simulator: the golden model of the hardware."""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from vdla.hw.config import require_config
from vdla.hw.isa import INSN_BYTES, AluInsn, GemmInsn, InsnDecodeError

from .errors import DecodeError, MemoryAccessError, StreamError
from .schedule import schedule
from .semantics import execute
from .state import OnChipState
from .stats import SimStats, chrome_trace, collect, trace_events
from .work_limit import DEFAULT_LIMIT


@dataclass
class SimResult:
    dram: np.ndarray
    cycles: int
    stats: SimStats
    insn_times: np.ndarray          # (n, 2): start, end cycle per instruction
    trace: list | None = None
    clock_mhz: float = 100.0

    def chrome_trace(self) -> dict:
        if self.trace is None:
            raise ValueError("run the simulator with trace=True to export a trace")
        return chrome_trace(self.trace, self.clock_mhz)

    def write_chrome_trace(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.chrome_trace(), f)


class Simulator:
    """Runs instruction streams against a DRAM image with the timing of `config`.

    On-chip SRAMs start zeroed for every launch (the runtime never relies on SRAM
    surviving between launches). With `max_cycles`, a launch that cannot finish by then
    raises CycleBudgetExceeded as soon as the schedule shows it, before any data is computed.
    An instruction whose simulation would take more than `max_insn_work` units (work_limit.py;
    the default is a few seconds) raises WorkLimitExceeded instead of running for hours.
    """

    def __init__(self, config, max_insn_work: int = DEFAULT_LIMIT):
        self.config = require_config(config)
        self.max_insn_work = max_insn_work

    def run(self, dram: np.ndarray, insn_addr: int, insn_count: int, trace: bool = False,
            max_cycles: int | None = None, compute: bool = True) -> SimResult:
        """compute=False: the timing and every check of a full run (decoding, token queues,
        DRAM and SRAM ranges, accumulator hazards) without computing GEMM, DEPTHWISE or ALU
        results: what a run costs in cycles, or whether it runs at all, for a fraction of the
        time. Loads and stores still move data, so the DRAM's outputs hold no results."""
        if dram.dtype != np.uint8 or dram.ndim != 1:
            raise TypeError("dram must be a 1-D uint8 array (the DRAM image)")
        if insn_addr % INSN_BYTES:
            raise StreamError(f"instruction address 0x{insn_addr:x} is not {INSN_BYTES}-byte aligned")
        if insn_count <= 0:
            raise StreamError(f"insn_count must be positive, got {insn_count}")
        end = insn_addr + INSN_BYTES * insn_count
        if insn_addr < 0 or end > dram.size:
            raise MemoryAccessError(f"fetch of {insn_count} instructions at 0x{insn_addr:x} reads past the end "
                                    f"of DRAM ({dram.size} bytes)")
        try:
            insns = self.config.isa.decode_stream(dram[insn_addr:end])
        except InsnDecodeError as exc:
            raise DecodeError(exc.reason, exc.insn_index) from None
        return self.run_insns(insns, dram, trace=trace, max_cycles=max_cycles, compute=compute)

    def run_insns(self, insns, dram: np.ndarray, trace: bool = False, max_cycles: int | None = None,
                  compute: bool = True) -> SimResult:
        """Run already decoded instructions (fetch timing is modelled all the same)."""
        sched = schedule(insns, self.config, max_cycles)
        state = OnChipState(self.config, self.max_insn_work, compute)
        # Execute data in the order the hardware starts instructions; ties in module order,
        # which only matters for racy streams (a correct stream orders conflicts with tokens).
        order = np.lexsort((sched.module, sched.start))
        gemm_uops = alu_uops = 0
        for i in order.tolist():
            insn = insns[i]
            done = execute(insn, i, state, dram)
            if isinstance(insn, GemmInsn):
                gemm_uops += done
            elif isinstance(insn, AluInsn):
                alu_uops += done
        stats = collect(insns, sched, self.config, gemm_uops, alu_uops)
        times = np.stack([sched.start, sched.end], axis=1)
        events = trace_events(insns, sched) if trace else None
        return SimResult(dram, sched.cycles, stats, times, events, self.config.clock_mhz)

"""A stand-in for the `pynq` package: a simulated board whose fabric is vdla.simulator.

It offers the three pieces of pynq that PynqDevice uses — `allocate` (a contiguous buffer
with a physical address, flush/invalidate/freebuffer), `MMIO` (32-bit register access at a
base address) and `Bitstream(...).download()` — over one physical DRAM image. Writing START
to the control register runs the simulator on that image and sets the registers of
vdla.hw.regmap as the RTL would, so the real control sequence runs against the golden model.
"""
from __future__ import annotations

import numpy as np

from vdla.hw import regmap
from vdla.simulator import MemoryAccessError, Simulator, SimulatorError, StreamError, TokenError

PHYS_BASE = 0x1000_0000


class Board:
    def __init__(self, config, dram_bytes=PHYS_BASE + (96 << 20)):
        self.config = config
        self.dram = np.zeros(dram_bytes, dtype=np.uint8)  # indexed by physical address
        self.next_free = PHYS_BASE
        self.regs = {r.offset: 0 for r in regmap.REGISTERS}
        self.regs[regmap.OFFSET["HW_ID"]] = config.hash32
        self.launches = 0
        self.flushes = 0
        self.programmed = []

    # pynq.allocate
    def allocate(self, shape, dtype=np.uint8):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        start = self.next_free
        self.next_free += -(-nbytes // 4096) * 4096
        buf = self.dram[start:start + nbytes].view(dtype).reshape(shape).view(Buffer)
        buf.device_address = start
        buf.board = self
        return buf

    # pynq.MMIO
    def MMIO(self, base, length):
        return Mmio(self, base, length)

    def Bitstream(self, path):
        board = self

        class _Bitstream:
            def download(self):
                board.programmed.append(path)
        return _Bitstream()

    def start(self):
        off = regmap.OFFSET
        self.launches += 1
        self.regs[off["CONTROL"]] = regmap.RUNNING
        try:
            result = Simulator(self.config).run(self.dram, self.regs[off["INSN_ADDR"]], self.regs[off["INSN_COUNT"]])
        except SimulatorError as exc:
            cause = {MemoryAccessError: regmap.ERR_SRAM_RANGE, TokenError: regmap.ERR_FINISH_STATE,
                     StreamError: regmap.ERR_DECODE}.get(type(exc), regmap.ERR_DECODE)
            self.regs[off["ERROR_CAUSE"]] = cause
            self.regs[off["CONTROL"]] = regmap.DONE | regmap.ERROR
            return
        s = result.stats
        self.regs[off["CYCLES"]] = result.cycles
        for m in regmap.MODULES:
            self.regs[off[f"BUSY_{m.upper()}"]] = s.busy_cycles[m]
            self.regs[off[f"TOKEN_STALL_{m.upper()}"]] = s.token_stall_cycles[m]
            self.regs[off[f"FETCH_STALL_{m.upper()}"]] = s.fetch_stall_cycles[m]
        self.regs[off["GEMM_UOPS"]] = s.gemm_uops
        self.regs[off["ALU_UOPS"]] = s.alu_uops
        self.regs[off["CONTROL"]] = regmap.DONE


class Buffer(np.ndarray):
    def flush(self):
        self.board.flushes += 1

    def invalidate(self):
        pass

    def freebuffer(self):
        pass


class Mmio:
    def __init__(self, board, base, length):
        self.board, self.base, self.length = board, base, length

    def read(self, offset, length=4):
        assert 0 <= offset < self.length and offset % 4 == 0
        return self.board.regs.get(offset, 0)

    def write(self, offset, value):
        assert 0 <= offset < self.length and offset % 4 == 0
        if offset == regmap.OFFSET["CONTROL"]:
            if value & regmap.START:
                self.board.start()
            return
        self.board.regs[offset] = value & 0xFFFFFFFF

"""SimulatorDevice: the Device protocol over a numpy DRAM image and the cycle-exact simulator."""
from __future__ import annotations

import numpy as np

from vdla.hw import load_config

from ..device import DeviceBuffer, DeviceError, DeviceMemory, LaunchResult, LaunchTimeout

# Address 0 is never handed out, so a zero address in an instruction is always a bug that the
# simulator reports instead of silently reading the first buffer.
_WINDOW_BASE = 1 << 12


class SimulatorDevice:
    """A simulated accelerator with `dram_bytes` of DRAM (zero-filled lazily by the OS)."""

    def __init__(self, config=None, dram_bytes: int = 1 << 28, trace: bool = False):
        from vdla.simulator import Simulator  # the only driver module that needs the simulator
        self.config = load_config(config)
        self.dram = np.zeros(dram_bytes, dtype=np.uint8)
        self.memory = DeviceMemory(_WINDOW_BASE, dram_bytes - _WINDOW_BASE)
        self.simulator = Simulator(self.config)
        self.trace = trace
        self.last_result = None  # the SimResult of the latest launch, for traces and debugging

    def __repr__(self) -> str:
        return f"SimulatorDevice({self.config.name}, {self.dram.size} B DRAM)"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- memory -------------------------------------------------------------------------
    def alloc(self, nbytes: int, align: int = 64) -> DeviceBuffer:
        return self.memory.alloc(nbytes, align)

    def free(self, buf: DeviceBuffer) -> None:
        self.memory.free(buf)

    def write(self, buf: DeviceBuffer, data: np.ndarray, offset: int = 0) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        self.memory.check(buf, offset, raw.size, "write")
        self.dram[buf.addr + offset:buf.addr + offset + raw.size] = raw

    def read(self, buf: DeviceBuffer, dtype, shape, offset: int = 0) -> np.ndarray:
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.memory.check(buf, offset, nbytes, "read")
        start = buf.addr + offset
        return self.dram[start:start + nbytes].copy().view(dtype).reshape(shape)

    # ---- execution ----------------------------------------------------------------------
    def launch(self, insn_addr: int, insn_count: int, timeout_cycles: int | None = None) -> LaunchResult:
        if self.dram is None:
            raise DeviceError("launch on a closed SimulatorDevice")
        result = self.simulator.run(self.dram, insn_addr, insn_count, trace=self.trace)
        self.last_result = result
        if timeout_cycles is not None and result.cycles > timeout_cycles:
            # The simulated hardware would still be running when the host gave up waiting.
            raise LaunchTimeout(f"launch of {insn_count} instructions at 0x{insn_addr:x} did not finish "
                                f"within {timeout_cycles} cycles (it needs {result.cycles})")
        return LaunchResult(result.cycles, result.stats.to_dict(), result.trace)

    def close(self) -> None:
        self.dram = None

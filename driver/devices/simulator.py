"""SimulatorDevice: the Device protocol over a numpy DRAM image and the cycle-exact simulator."""
from __future__ import annotations

import numpy as np

from vdla.hw import DEFAULT_PRESET, load_config

from ..device import DeviceError, LaunchResult, LaunchTimeout
from .dram_window import DramWindowDevice


class SimulatorDevice(DramWindowDevice):
    """A simulated accelerator with `dram_bytes` of DRAM (zero-filled lazily by the OS); config: a
    preset name, JSON path, dict or HwConfig, DEFAULT_PRESET when None (an API edge: vdla.hw.config)."""

    def __init__(self, config=None, dram_bytes: int = 1 << 28, trace: bool = False, compute: bool = True):
        from vdla.simulator import Simulator  # the only driver module that needs the simulator
        self.config = load_config(DEFAULT_PRESET if config is None else config)
        self.dram = np.zeros(dram_bytes, dtype=np.uint8)  # indexed by physical address
        self._init_window(self.dram, 0)
        self.simulator = Simulator(self.config)
        self.trace = trace
        self.compute = compute    # False: launches are timed and checked, nothing computed (Simulator.run)
        self.last_result = None  # the SimResult of the latest launch, for traces and debugging

    def __repr__(self) -> str:
        return f"SimulatorDevice({self.config.name}, {self.dram.size} B DRAM)"

    # ---- execution ----------------------------------------------------------------------
    def launch(self, insn_addr: int, insn_count: int, timeout_cycles: int | None = None) -> LaunchResult:
        if self.dram is None:
            raise DeviceError("launch on a closed SimulatorDevice")
        from vdla.simulator import CycleBudgetExceeded
        try:
            # the simulator stops at the budget: past it the host has given up waiting
            result = self.simulator.run(self.dram, insn_addr, insn_count, trace=self.trace,
                                        max_cycles=timeout_cycles, compute=self.compute)
        except CycleBudgetExceeded as exc:
            raise LaunchTimeout(f"launch of {insn_count} instructions at 0x{insn_addr:x} did not finish "
                                f"within {timeout_cycles} cycles ({exc})") from None
        self.last_result = result
        return LaunchResult(result.cycles, result.stats.to_dict(), result.trace)

    def close(self) -> None:
        super().close()
        self.dram = None

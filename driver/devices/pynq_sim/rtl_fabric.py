"""A fabric holding the VDLA RTL itself: START runs the cached Verilator build of the loaded
config on the board's DDR, a memory-mapped file (physical address = file offset) that the
simulation process maps too, so the RTL reads and writes the very bytes pynq's buffers hold.

Each launch is one run of vdla.driver.devices.rtl_bench (a fresh simulation process, from
reset with zeroed SRAMs, as the simulator and RtlDevice do). Inside it the testbench drives
the RTL's own AXI-lite port through the same control sequence a board's host does; what it
read back (CYCLES, the counters, ERROR_CAUSE) becomes this block's registers. A stream the
RTL does not finish within `max_cycles` leaves the block running, as the hardware would.
"""
from __future__ import annotations

import os

import numpy as np

from ...device import DeviceError
from .control_block import Completion, counter_values

DEFAULT_MAX_CYCLES = 50_000_000   # RtlDevice's default budget


class RtlFabric:
    """Runs launches of `config`'s RTL on the DDR file at `dram_path` (mapped by the board as `ddr`)."""

    def __init__(self, config, ddr: np.memmap, dram_path: str, workdir: str, build_root=None,
                 max_cycles: int = DEFAULT_MAX_CYCLES):
        from vdla.hw.rtl_params import check_supported
        check_supported(config)   # a config the RTL cannot be built for is refused at download
        self.config, self.ddr, self.dram_path = config, ddr, dram_path
        self.workdir, self.build_root, self.max_cycles = workdir, build_root, max_cycles
        self.last_record: dict | None = None   # what the simulation reported for the latest launch

    def run(self, insn_addr: int, insn_count: int) -> Completion:
        from ..rtl_bench import run_jobs
        self.ddr.flush()
        record = run_jobs(self.config, [{"dram": self.dram_path, "insn_addr": int(insn_addr),
                                         "insn_count": int(insn_count), "max_cycles": int(self.max_cycles)}],
                          os.path.join(self.workdir, "sim"), self.build_root)[0]
        self.last_record = record
        kind = record.get("error_type")
        if not record["error"]:
            return Completion(done=True, cycles=record["cycles"], counters=counter_values(record["stats"]))
        if kind == "HardwareError":
            return Completion(done=True, cycles=record["cycles"], counters=counter_values(record["stats"]),
                              error_cause=record["error_cause"], fault=DeviceError(record["error"]))
        if kind == "LaunchTimeout":
            return Completion(done=False, fault=DeviceError(record["error"]))
        # The testbench's control sequence refused before START (an unaligned address, a count
        # of 0): there is no RTL outcome to report, so the register write says why.
        raise DeviceError(f"the RTL testbench did not launch {insn_count} instructions at 0x{insn_addr:x}: "
                          f"{record['error']}")


__all__ = ["DEFAULT_MAX_CYCLES", "RtlFabric"]

"""RtlDevice: the Device protocol over the VDLA RTL running under Verilator.

Launches go through the same control sequence (vdla.driver.control) a PYNQ board gets:
check the ID register, program INSN_ADDR/INSN_COUNT, write start, wait for done, read the
counters. The DRAM is a memory-mapped file (physical address = file offset) that the
simulation process maps too, so a launch copies nothing; each launch runs the cached
Verilator build in a fresh process, from reset with zeroed SRAMs (as the simulator does).
"""
from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from vdla.hw import DEFAULT_PRESET, load_config

from ..control import ConfigMismatch, HardwareError
from ..device import DeviceError, LaunchResult, LaunchTimeout
from .dram_window import DramWindowDevice

_ERRORS = {"LaunchTimeout": LaunchTimeout, "ConfigMismatch": ConfigMismatch}


class RtlDevice(DramWindowDevice):
    """The accelerator RTL in Verilator with `dram_bytes` of DRAM (a sparse file); config: a preset
    name, JSON path, dict or HwConfig, DEFAULT_PRESET when None (an API edge: vdla.hw.config)."""

    def __init__(self, config=None, dram_bytes: int = 1 << 26, build_root=None,
                 default_max_cycles: int = 50_000_000):
        from vdla.hw.rtl_params import check_supported
        self.config = load_config(DEFAULT_PRESET if config is None else config)
        check_supported(self.config)
        self._dir = tempfile.mkdtemp(prefix="vdla-rtl-")
        self._dram_path = os.path.join(self._dir, "dram.bin")
        with open(self._dram_path, "wb") as f:
            f.truncate(dram_bytes)
        self._init_window(np.memmap(self._dram_path, dtype=np.uint8, mode="r+"), 0)
        self.build_root = build_root
        self.default_max_cycles = default_max_cycles
        self.last_record = None   # what the simulation reported for the latest launch

    def __repr__(self) -> str:
        return f"RtlDevice({self.config.name})"

    def launch(self, insn_addr: int, insn_count: int, timeout_cycles: int | None = None) -> LaunchResult:
        from .rtl_bench import run_jobs
        self._live().flush()
        max_cycles = timeout_cycles if timeout_cycles is not None else self.default_max_cycles
        record = run_jobs(self.config, [{"dram": self._dram_path, "insn_addr": int(insn_addr),
                                         "insn_count": int(insn_count), "max_cycles": int(max_cycles)}],
                          os.path.join(self._dir, "sim"), self.build_root)[0]
        self.last_record = record
        if record["error"]:
            kind = record.get("error_type", "")
            if kind == "HardwareError":
                raise HardwareError(record["error"], record["error_cause"], None)
            raise _ERRORS.get(kind, DeviceError)(record["error"])
        return LaunchResult(record["cycles"], record["stats"], None)

    def close(self) -> None:
        if self._window is not None:
            super().close()
            shutil.rmtree(self._dir, ignore_errors=True)

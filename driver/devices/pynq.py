"""PynqDevice: the Device protocol on a PYNQ board (Zynq-7000 / Zynq UltraScale+).

The device takes one physically contiguous CMA block with `pynq.allocate` and hands out
buffers inside it (the same first-fit allocator as the simulator device), so a network
needs one CMA allocation, not hundreds. Launches run the control sequence of
vdla.driver.control over `pynq.MMIO` — the very sequence the RTL testbench drives, so the
board and the RTL share that code. pynq is imported lazily: the rest of the driver works
without it (`pip install 'vdla[pynq]'` on the board).
"""
from __future__ import annotations

import importlib

import numpy as np

from vdla.hw import load_config

from ..board import load_manifest
from ..control import launch_sequence, run_sync
from ..device import DeviceError, LaunchResult
from .dram_window import DramWindowDevice


def _import_pynq():
    try:
        return importlib.import_module("pynq")
    except ImportError as exc:
        raise DeviceError("PynqDevice needs the pynq package on the board: pip install 'vdla[pynq]' "
                          f"({exc})") from None


class PynqDevice(DramWindowDevice):
    """A VDLA accelerator in the programmable logic of a PYNQ board."""

    def __init__(self, board: str = "pynq", config=None, dram_bytes: int = 64 << 20,
                 program: bool = True, pynq_module=None):
        self.pynq = pynq_module or _import_pynq()
        self.manifest = load_manifest(board)
        self.config = load_config(config if config is not None else self.manifest.config)
        if program:
            self.pynq.Bitstream(str(self.manifest.check_bitstream())).download()
        self.window = self.pynq.allocate(shape=(dram_bytes,), dtype=np.uint8)
        self._init_window(self.window, int(self.window.device_address))
        self.mmio = self.pynq.MMIO(self.manifest.control_base, self.manifest.control_range)

    def __repr__(self) -> str:
        return f"PynqDevice({self.manifest.board}, {self.config.name}, window 0x{self._window_base:x})"

    # ---- execution ----------------------------------------------------------------------
    def launch(self, insn_addr: int, insn_count: int, timeout_cycles: int | None = None) -> LaunchResult:
        self._live()
        if not self.manifest.coherent:
            self.window.flush()  # the fabric reads DRAM behind the CPU caches
        sequence = launch_sequence(self.config, insn_addr, insn_count, timeout_cycles)
        counters = run_sync(sequence, self.mmio.read, self.mmio.write, self.manifest.clock_mhz)
        if not self.manifest.coherent:
            self.window.invalidate()
        return LaunchResult(counters.cycles, counters.stats())

    def close(self) -> None:
        if self.window is not None:
            self.window.freebuffer()
            self.window = None
        super().close()

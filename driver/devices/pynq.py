"""PynqDevice: the Device protocol on a PYNQ board (Zynq-7000 / Zynq UltraScale+).

The device takes one physically contiguous CMA block with `pynq.allocate` and hands out
buffers inside it (the same first-fit allocator as the simulator device), so a network
needs one CMA allocation, not hundreds. Launches run the control sequence of
vdla.driver.control over `pynq.MMIO` — the very sequence the RTL testbench drives, so the
board and the RTL share that code. pynq is imported lazily: the rest of the driver works
without it (`pip install 'vdla[pynq]'` on the board).

Opening checks the config-hash handshake (vdla.driver.board): the manifest's hash against
its config, the bitstream's UserID against the manifest before it is loaded, and the
hardware ID register against the manifest once it is; the executor then compares the
artifact's config with the board's, and every launch reads the ID register again.

With VDLA_PYNQ_SIM=1 the board is simulated behind pynq's own device layer
(vdla.driver.devices.pynq_sim): everything here runs unchanged against the golden model.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from vdla.hw import load_config, regmap

from ..board import BOARD_ENV, handshake_message, load_manifest
from ..control import ConfigMismatch, launch_sequence, run_sync
from ..device import DeviceError, LaunchResult
from .dram_window import DramWindowDevice


def _import_pynq():
    """pynq, with an active device (a board, or the simulated one with VDLA_PYNQ_SIM=1)."""
    try:
        import pynq
    except ImportError as exc:
        raise DeviceError("PynqDevice needs the pynq package on the board: pip install 'vdla[pynq]' "
                          f"({exc})") from None
    from .pynq_sim import ENV_VAR, activate_from_environment
    activate_from_environment(pynq)
    if not hasattr(pynq.Device, "_active_device"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # pynq's hint about XRT: the message below says more
            found = pynq.Device.devices
        if not found:
            raise DeviceError("pynq finds no device here: PynqDevice runs on a PYNQ board (Zynq with the PYNQ "
                              f"image), or on the simulated board with {ENV_VAR}=1")
    return pynq


class PynqDevice(DramWindowDevice):
    """A VDLA accelerator in the programmable logic of a PYNQ board.

    board: a manifest name or path (default $VDLA_BOARD, else pynq); config: only checked,
    a board runs its bitstream's config; program: load the manifest's bitstream (False: it
    is loaded already, and the ID register says whether it is the right one)."""

    def __init__(self, board: str | None = None, config=None, dram_bytes: int = 64 << 20,
                 program: bool = True, default_max_cycles: int = 50_000_000):
        self.pynq = _import_pynq()
        self.manifest = load_manifest(board if board is not None else os.environ.get(BOARD_ENV, "pynq"))
        self.config = self.manifest.hw_config()
        requested = load_config(config) if config is not None else None
        if requested is not None and requested.hash != self.manifest.config_hash:
            raise ConfigMismatch(handshake_message(self.manifest, requested=requested))
        self.default_max_cycles = default_max_cycles
        self.window = None
        if program:
            self.pynq.Bitstream(str(self.manifest.check_bitstream())).download()
        self.mmio = self.pynq.MMIO(self.manifest.control_base, self.manifest.control_range)
        self.hw_id = self.mmio.read(regmap.OFFSET["HW_ID"])
        if self.hw_id != self.manifest.hash32:
            raise ConfigMismatch(handshake_message(self.manifest, register=self.hw_id))
        self.window = self.pynq.allocate(shape=(dram_bytes,), dtype=np.uint8)
        self._init_window(self.window, int(self.window.device_address))

    def __repr__(self) -> str:
        m = self.manifest
        return (f"PynqDevice(board {m.board}: manifest {m.path.name} config {m.config} hash {m.config_hash[:16]}..., "
                f"hardware ID register 0x{self.hw_id:08x})")

    # ---- execution ----------------------------------------------------------------------
    def launch(self, insn_addr: int, insn_count: int, timeout_cycles: int | None = None) -> LaunchResult:
        self._live()
        if not self.manifest.coherent:
            self.window.flush()  # the fabric reads DRAM behind the CPU caches
        max_cycles = timeout_cycles if timeout_cycles is not None else self.default_max_cycles
        sequence = launch_sequence(self.config, insn_addr, insn_count, max_cycles)
        try:
            counters = run_sync(sequence, self.mmio.read, self.mmio.write, self.manifest.clock_mhz)
        except ConfigMismatch:   # the fabric was reprogrammed behind this device's back
            register = self.mmio.read(regmap.OFFSET["HW_ID"])
            raise ConfigMismatch(handshake_message(self.manifest, register=register)) from None
        if not self.manifest.coherent:
            self.window.invalidate()
        return LaunchResult(counters.cycles, counters.stats())

    def close(self) -> None:
        if self.window is not None:
            self.window.freebuffer()
            self.window = None
        super().close()

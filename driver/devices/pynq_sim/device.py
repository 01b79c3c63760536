"""SimulatedPynqDevice: a `pynq.Device` for a Zynq whose fabric holds a simulated VDLA design.

What pynq asks of a device (pynq 3.1.2, pynq/pl_server/device.py and its users):
- `allocate(shape, dtype)` for `pynq.allocate`: a PynqBuffer over physically contiguous
  memory with its `device_address`; `freebuffer()` hands it back through `return_to`;
  `flush` / `invalidate` (bo, offset, virtual address, size) for cacheable buffers;
- with the REGISTER_RW capability, `read_registers(address, length)` and
  `write_registers(address, data)` (bytes) for `pynq.MMIO`;
- `download(bitstream, parser)` for `pynq.Bitstream(...).download()`.

The physical address space is a DDR image the simulator reads and writes; buffers come
from a CMA-like region in it. When the loaded design's DRAM port is coherent (ACP, HPC)
buffers are views of that image; when it is not (HP), the CPU sees its own copy (its
caches, worst case) and the fabric sees DDR only after `flush`, the CPU the fabric's
writes only after `invalidate`, so a driver that forgets either gets wrong data here as it
would on the board.

The fabric is the cycle-exact simulator, or with `fabric="rtl"` (VDLA_PYNQ_SIM=rtl) the RTL
under Verilator (rtl_fabric.py): then DDR is a sparse file both processes map.
"""
from __future__ import annotations

import datetime
import os
import shutil
import struct
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pynq
from pynq.buffer import PynqBuffer

from ...device import DeviceBuffer, DeviceError, DeviceMemory
from .environment import ENV_VAR, fabric_from_environment
from .control_block import ControlBlock, SimulatorFabric
from .design import SimDesign, read_sim_bitstream

FABRICS = ("simulator", "rtl")
CMA_BASE = 0x1000_0000   # where contiguous buffers start in the physical address space
PAGE = 4096


@dataclass(frozen=True)
class _Allocation:
    """pynq's `bo` of a buffer: its block of physical memory and whether the CPU maps DDR directly."""
    block: DeviceBuffer
    coherent: bool


class SimulatedPynqDevice(pynq.Device):
    """The board: DDR, a contiguous-memory allocator and the fabric, which holds a simulated
    VDLA design once a simulation bitstream is downloaded."""

    _probe_priority_ = 300   # after pynq's own devices (50..200): a real board is found first

    @classmethod
    def _probe_(cls):
        return [cls()] if os.environ.get(ENV_VAR) else []

    def __init__(self, cma_bytes: int = 128 << 20, tag: str = "vdla_simulated_board", fabric: str | None = None,
                 rtl_build_root=None, rtl_max_cycles: int | None = None):
        """fabric: "simulator" or "rtl" (default: what VDLA_PYNQ_SIM asks for); rtl_build_root and
        rtl_max_cycles: the Verilator build cache and a launch's cycle budget on the RTL."""
        super().__init__(tag)
        if cma_bytes <= 0 or cma_bytes % PAGE:
            raise DeviceError(f"the simulated board's contiguous memory must be a positive number of "
                              f"{PAGE}-byte pages, got {cma_bytes} bytes")
        self.fabric = fabric_from_environment() if fabric is None else fabric
        if self.fabric not in FABRICS:
            raise DeviceError(f"the simulated board's fabric must be one of {', '.join(FABRICS)}, got {self.fabric!r}")
        self.name = "VDLA simulated PYNQ board" + (" (RTL)" if self.fabric == "rtl" else "")
        self.capabilities = {"REGISTER_RW": True, "MEMORY_MAPPED": False, "CALLABLE": False}
        self.rtl_build_root, self.rtl_max_cycles = rtl_build_root, rtl_max_cycles
        if self.fabric == "rtl":
            self._ddr_dir = tempfile.mkdtemp(prefix="vdla-pynq-rtl-")
            weakref.finalize(self, shutil.rmtree, self._ddr_dir, True)
            self._ddr_path = os.path.join(self._ddr_dir, "ddr.bin")
            with open(self._ddr_path, "wb") as f:
                f.truncate(CMA_BASE + cma_bytes)   # sparse: only what is written takes disk
            self.ddr = np.memmap(self._ddr_path, dtype=np.uint8, mode="r+")
        else:
            self.ddr = np.zeros(CMA_BASE + cma_bytes, dtype=np.uint8)   # what the fabric sees, by physical address
        self.cpu_copy = np.zeros(cma_bytes, dtype=np.uint8)         # what the CPU sees of non-coherent buffers
        self.cma = DeviceMemory(CMA_BASE, cma_bytes)
        self.design: SimDesign | None = None
        self.block: ControlBlock | None = None
        self.downloads: list[str] = []
        self.flushes = self.invalidates = 0
        self.clear_dict()

    def __repr__(self) -> str:
        return f"SimulatedPynqDevice({self.design.name if self.design else 'no design loaded'})"

    # ---- bitstream download ---------------------------------------------------------------
    def download(self, bitstream, parser=None) -> None:
        if bitstream.partial:
            raise DeviceError("the simulated board loads full bitstreams only (no partial reconfiguration)")
        path = str(bitstream.bitfile_name)
        try:
            design = read_sim_bitstream(Path(path).read_bytes(), path)
        except OSError as exc:
            raise DeviceError(f"cannot read bitstream {path}: {exc}") from None
        if self.design is not None and design.coherent != self.design.coherent and self.cma.used_bytes:
            raise DeviceError(f"{path} changes the DRAM port's coherence while {self.cma.used_bytes} bytes of "
                              "buffers are allocated; free them before loading it")
        self.design = design
        self.block = ControlBlock(design.config, self.ddr, self._fabric(design))   # configuration resets the fabric
        self.bitfile_name = path
        self.timestamp = datetime.datetime.now().isoformat()
        self.downloads.append(path)

    def _fabric(self, design: SimDesign):
        if self.fabric == "simulator":
            return SimulatorFabric(design.config, self.ddr)
        from .rtl_fabric import DEFAULT_MAX_CYCLES, RtlFabric
        max_cycles = DEFAULT_MAX_CYCLES if self.rtl_max_cycles is None else self.rtl_max_cycles
        return RtlFabric(design.config, self.ddr, self._ddr_path, self._ddr_dir, self.rtl_build_root, max_cycles)

    def gen_cache(self, bitstream, parser=None) -> None:
        """pynq's metadata cache: nothing to cache for a simulated design."""

    # ---- memory -----------------------------------------------------------------------------
    def allocate(self, shape, dtype, **kwargs) -> PynqBuffer:
        if self.design is None:
            raise DeviceError("the simulated board has no design loaded: download a bitstream first "
                              "(pynq.Bitstream(path).download()), as a Zynq needs before it allocates")
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape) if np.iterable(shape) else (int(shape),)
        if any(s < 0 for s in shape):
            raise DeviceError(f"cannot allocate a buffer of shape {shape}")
        nbytes = max(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, 1)
        block = self.cma.alloc(-(-nbytes // PAGE) * PAGE, align=PAGE)
        coherent = self.design.coherent
        backing, start = (self.ddr, block.addr) if coherent else (self.cpu_copy, block.addr - CMA_BASE)
        buf = PynqBuffer(shape, dtype, buffer=backing, offset=start, device=self, device_address=block.addr,
                         bo=_Allocation(block, coherent), coherent=False)
        # freebuffer() returns `pointer` to `return_to`; `freed` keeps it from the munmap of
        # pynq's own mappings, which this memory is not
        buf.memory, buf.pointer, buf.return_to, buf.freed = self.cma, block, self, True
        return buf

    def return_pointer(self, pointer: DeviceBuffer) -> None:
        """PynqBuffer.freebuffer() hands the block back here."""
        self.cma.free(pointer)

    def flush(self, bo: _Allocation, offset: int, ptr: int, size: int) -> None:
        self.flushes += 1
        if not bo.coherent:
            phys = bo.block.addr + offset
            self.ddr[phys:phys + size] = self.cpu_copy[phys - CMA_BASE:phys - CMA_BASE + size]

    def invalidate(self, bo: _Allocation, offset: int, ptr: int, size: int) -> None:
        self.invalidates += 1
        if not bo.coherent:
            phys = bo.block.addr + offset
            self.cpu_copy[phys - CMA_BASE:phys - CMA_BASE + size] = self.ddr[phys:phys + size]

    # ---- registers (pynq.MMIO) ----------------------------------------------------------------
    def read_registers(self, address: int, length: int) -> bytes:
        offset = self._decode(address, length, "read")
        return struct.pack(f"<{length // 4}I", *(self.block.read(offset + 4 * k) for k in range(length // 4)))

    def write_registers(self, address: int, data: bytes) -> None:
        offset = self._decode(address, len(data), "write")
        for k, (value,) in enumerate(struct.iter_unpack("<I", bytes(data))):
            self.block.write(offset + 4 * k, value)

    def _decode(self, address: int, length: int, what: str) -> int:
        """The control-block offset of an access; DeviceError where a board's bus would hang."""
        if self.design is None:
            raise DeviceError(f"register {what} at 0x{address:08x}: the simulated board has no design loaded "
                              "(on a board this access would hang the bus); download a bitstream first")
        d = self.design
        if address % 4 or length <= 0 or length % 4:
            raise DeviceError(f"register {what} at 0x{address:08x} of {length} bytes: the control block takes "
                              "whole aligned 32-bit words")
        if not d.control_base <= address < address + length <= d.control_base + d.control_range:
            raise DeviceError(f"register {what} at 0x{address:08x}: no AXI slave answers there; {d.name} maps its "
                              f"control block at 0x{d.control_base:08x}..0x{d.control_base + d.control_range - 1:08x}")
        return address - d.control_base


__all__ = ["SimulatedPynqDevice", "CMA_BASE", "FABRICS"]

"""The Device protocol: what the runtime needs from an accelerator, whatever runs it.

A device owns a window of physically contiguous, accelerator-visible DRAM, hands out
buffers in it, copies host arrays in and out, and launches an instruction stream that lies
in that DRAM. The simulator, the RTL under Verilator and a PYNQ board all implement it, so
the runtime (vdla.driver.runtime) and everything above it never know which one they drive.

Addresses are physical byte addresses as the accelerator sees them; instructions address
DRAM in element units, so the runtime divides a buffer's address by the element size.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Protocol, runtime_checkable

import numpy as np

from vdla.hw.errors import RunError


class DeviceError(RunError):
    """A device operation failed (bad buffer, bad copy, failed launch)."""


class OutOfDeviceMemory(DeviceError):
    """The device DRAM window has no free block large enough for a request."""


class LaunchTimeout(DeviceError):
    """A launch did not raise `done` within its cycle budget."""


@dataclass(frozen=True)
class DeviceBuffer:
    """A block of device DRAM: physical byte address and size. Compared by address."""
    addr: int
    nbytes: int

    def __repr__(self) -> str:
        return f"DeviceBuffer(addr=0x{self.addr:x}, nbytes={self.nbytes})"


@dataclass
class LaunchResult:
    """What one launch reports: cycles from start to done, counters, optional trace."""
    cycles: int
    stats: dict = field(default_factory=dict)
    trace: list | None = None

    @property
    def gemm_utilization(self) -> float:
        return float(self.stats.get("gemm_utilization", 0.0))


@runtime_checkable
class Device(Protocol):
    config: object  # vdla.hw.HwConfig of the accelerator behind the device

    def alloc(self, nbytes: int, align: int = 64) -> DeviceBuffer:
        """A new buffer of device DRAM; OutOfDeviceMemory (naming the sizes) if none fits."""

    def free(self, buf: DeviceBuffer) -> None:
        """Give a buffer back; DeviceError for a buffer this device did not hand out."""

    def write(self, buf: DeviceBuffer, data: np.ndarray, offset: int = 0) -> None:
        """Copy the bytes of `data` into `buf` from byte `offset` (bounds-checked)."""

    def read(self, buf: DeviceBuffer, dtype, shape, offset: int = 0) -> np.ndarray:
        """A host copy of `buf` from byte `offset`, as `dtype` with `shape` (an int is a count)."""

    def launch(self, insn_addr: int, insn_count: int,
               timeout_cycles: int | None = None) -> LaunchResult:
        """Run `insn_count` instructions at physical `insn_addr` until FINISH; LaunchTimeout past
        `timeout_cycles`; stream errors (deadlock, bad access) raise rather than hang."""

    def close(self) -> None:
        """Release the device; buffers become invalid."""


@contextmanager
def device_buffers(device: Device, sizes) -> Iterator[list[DeviceBuffer]]:
    """Buffers of `sizes` ((nbytes, align) each) on `device`, all given back when the block
    ends, however it ends (one that fails to allocate gives back those before it)."""
    bufs: list[DeviceBuffer] = []
    try:
        for nbytes, align in sizes:
            bufs.append(device.alloc(nbytes, align=align))
        yield bufs
    finally:
        for buf in bufs:
            device.free(buf)


class DeviceMemory:
    """First-fit allocator over a DRAM window [base, base + size).

    Free blocks are kept sorted by address and merged with their neighbours on free, so
    the window does not fragment under the alloc/free patterns of a network run.
    """

    def __init__(self, base: int, size: int):
        if base < 0 or size <= 0:
            raise ValueError(f"a DRAM window needs base >= 0 and size > 0, got base={base}, size={size}")
        self.base, self.size = base, size
        self._free: list[tuple[int, int]] = [(base, size)]  # (addr, nbytes), sorted by addr
        self._used: dict[int, int] = {}                     # addr -> nbytes

    @property
    def free_bytes(self) -> int:
        return sum(n for _, n in self._free)

    @property
    def used_bytes(self) -> int:
        return sum(self._used.values())

    def alloc(self, nbytes: int, align: int = 64) -> DeviceBuffer:
        if nbytes <= 0:
            raise ValueError(f"device allocation size must be positive, got {nbytes}")
        if align <= 0 or align & (align - 1):
            raise ValueError(f"device allocation alignment must be a power of two, got {align}")
        for k, (addr, size) in enumerate(self._free):
            start = -(-addr // align) * align
            if start + nbytes > addr + size:
                continue
            pieces = [(addr, start - addr), (start + nbytes, addr + size - start - nbytes)]
            self._free[k:k + 1] = [p for p in pieces if p[1] > 0]
            self._used[start] = nbytes
            return DeviceBuffer(start, nbytes)
        largest = max((n for _, n in self._free), default=0)
        raise OutOfDeviceMemory(
            f"cannot allocate {nbytes} bytes (alignment {align}) in the device DRAM window of "
            f"{self.size} bytes: {self.free_bytes} bytes free, largest free block {largest} bytes; "
            "free unused buffers or create the device with a larger DRAM window")

    def free(self, buf: DeviceBuffer) -> None:
        nbytes = self._used.pop(buf.addr, None)
        if nbytes is None:
            raise DeviceError(f"{buf!r} is not an allocated buffer of this device (double free?)")
        self._free.append((buf.addr, nbytes))
        self._free.sort()
        merged: list[tuple[int, int]] = []
        for addr, size in self._free:
            if merged and merged[-1][0] + merged[-1][1] == addr:
                merged[-1] = (merged[-1][0], merged[-1][1] + size)
            else:
                merged.append((addr, size))
        self._free = merged

    def check(self, buf: DeviceBuffer, offset: int, nbytes: int, what: str) -> None:
        """Raise unless [offset, offset + nbytes) lies inside the allocated buffer."""
        size = self._used.get(buf.addr)
        if size is None or size != buf.nbytes:
            raise DeviceError(f"{what}: {buf!r} is not an allocated buffer of this device")
        if offset < 0 or offset + nbytes > size:
            raise DeviceError(f"{what}: bytes [{offset}, {offset + nbytes}) are outside {buf!r}")

"""Devices whose DRAM the host sees as one byte array: allocation and copies, written once.

The simulator's DRAM image, the RTL's memory-mapped DRAM file and a PYNQ board's CMA block
are all a numpy uint8 array whose first byte sits at some physical address. Buffers are
handed out inside it by the first-fit allocator of vdla.driver.device; the first page is a
guard that is never handed out, so an address that was never set up faults instead of
silently reading the first buffer.
"""
from __future__ import annotations

import numpy as np

from ..device import DeviceBuffer, DeviceError, DeviceMemory

GUARD_BYTES = 1 << 12


class DramWindowDevice:
    """Mixin: alloc/free/write/read/close over `self._window` at physical `self._window_base`."""

    _window: np.ndarray | None = None
    _window_base: int = 0

    def _init_window(self, window: np.ndarray, phys_base: int) -> None:
        if window.dtype != np.uint8 or window.ndim != 1:
            raise TypeError("a DRAM window is a 1-D uint8 array")
        self._window, self._window_base = window, phys_base
        self.memory = DeviceMemory(phys_base + GUARD_BYTES, window.size - GUARD_BYTES)

    def _live(self) -> np.ndarray:
        if self._window is None:
            raise DeviceError(f"use of a closed {type(self).__name__}")
        return self._window

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def alloc(self, nbytes: int, align: int = 64) -> DeviceBuffer:
        return self.memory.alloc(nbytes, align)

    def free(self, buf: DeviceBuffer) -> None:
        self.memory.free(buf)

    def write(self, buf: DeviceBuffer, data: np.ndarray, offset: int = 0) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        self.memory.check(buf, offset, raw.size, "write")
        start = buf.addr - self._window_base + offset
        self._live()[start:start + raw.size] = raw

    def read(self, buf: DeviceBuffer, dtype, shape, offset: int = 0) -> np.ndarray:
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.memory.check(buf, offset, nbytes, "read")
        start = buf.addr - self._window_base + offset
        return np.array(self._live()[start:start + nbytes]).view(dtype).reshape(shape)

    def close(self) -> None:
        self._window = None

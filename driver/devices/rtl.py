"""RtlDevice: the Device protocol over the VDLA RTL running under Verilator.

Launches go through the same control sequence (vdla.driver.control) a PYNQ board gets:
check the ID register, program INSN_ADDR/INSN_COUNT, write start, wait for done, read the
counters. The DRAM is a memory-mapped file that the simulation process maps too, so a
launch copies nothing; each launch runs the (cached) Verilator build in a fresh process,
from reset with zeroed SRAMs.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from vdla.hw import load_config

from ..control import ConfigMismatch, HardwareError
from ..device import DeviceBuffer, DeviceError, DeviceMemory, LaunchResult, LaunchTimeout

_WINDOW_BASE = 1 << 12   # address 0 is never handed out (as on the simulator device)
_ERRORS = {"LaunchTimeout": LaunchTimeout, "ConfigMismatch": ConfigMismatch}


class RtlDevice:
    """The accelerator RTL in Verilator with `dram_bytes` of DRAM (a sparse file)."""

    def __init__(self, config=None, dram_bytes: int = 1 << 26, build_root=None,
                 default_max_cycles: int = 50_000_000):
        self.config = load_config(config)
        from vdla.hw.rtl_params import check_supported
        check_supported(self.config)
        self._dir = tempfile.mkdtemp(prefix="vdla-rtl-")
        self._dram_path = os.path.join(self._dir, "dram.bin")
        with open(self._dram_path, "wb") as f:
            f.truncate(dram_bytes)
        self.dram = np.memmap(self._dram_path, dtype=np.uint8, mode="r+")
        self.memory = DeviceMemory(_WINDOW_BASE, dram_bytes - _WINDOW_BASE)
        self.build_root = build_root
        self.default_max_cycles = default_max_cycles
        self.last_record = None

    def __repr__(self) -> str:
        return f"RtlDevice({self.config.name}, {self.dram.size if self.dram is not None else 0} B DRAM)"

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
        self._live()[buf.addr + offset:buf.addr + offset + raw.size] = raw

    def read(self, buf: DeviceBuffer, dtype, shape, offset: int = 0) -> np.ndarray:
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.memory.check(buf, offset, nbytes, "read")
        start = buf.addr + offset
        return np.array(self._live()[start:start + nbytes]).view(dtype).reshape(shape)

    def _live(self) -> np.memmap:
        if self.dram is None:
            raise DeviceError("use of a closed RtlDevice")
        return self.dram

    # ---- execution ----------------------------------------------------------------------
    def launch(self, insn_addr: int, insn_count: int, timeout_cycles: int | None = None) -> LaunchResult:
        from .rtl_bench import run_jobs
        dram = self._live()
        dram.flush()
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
        if self.dram is not None:
            del self.dram
            self.dram = None
            shutil.rmtree(self._dir, ignore_errors=True)

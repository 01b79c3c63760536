"""The launch control sequence of a VDLA accelerator: register writes and polls (SPEC §5).

One sequence serves every register-level device: the RTL under Verilator (its AXI-lite
master is asynchronous, inside cocotb) and a PYNQ board (synchronous MMIO). The sequence
is written once, without I/O, as a generator that yields register operations and receives
their results; `run_sync` executes it over plain read/write callables, and an asynchronous
executor (vdla.driver.devices.rtl_bench) runs the very same generator in the simulation.

Operations:
  Read(offset)           -> the 32-bit register value
  Write(offset, value)   -> None
  WaitDone(max_cycles)   -> the CONTROL value once DONE is set, or None when the executor
                            gave up (the executor chooses how to wait: poll or interrupt)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from vdla.hw import regmap
from vdla.hw.isa import INSN_BYTES

from .device import DeviceError, LaunchTimeout


@dataclass(frozen=True)
class Read:
    offset: int


@dataclass(frozen=True)
class Write:
    offset: int
    value: int


@dataclass(frozen=True)
class WaitDone:
    max_cycles: int | None


class ConfigMismatch(DeviceError):
    """The hardware's ID register does not hold the config hash the program was built for."""


class HardwareError(DeviceError):
    """The accelerator finished with its error bit set."""

    def __init__(self, message: str, cause: int, result: "LaunchCounters"):
        super().__init__(message)
        self.cause = cause
        self.result = result


@dataclass
class LaunchCounters:
    cycles: int
    counters: dict = field(default_factory=dict)   # register name -> value
    error_cause: int = 0

    def stats(self) -> dict:
        """The counters in the shape of the simulator's SimStats.to_dict()."""
        c = self.counters
        per = lambda prefix: {m: c[f"{prefix}_{m.upper()}"] for m in regmap.MODULES}  # noqa: E731
        loads = {name[len("LOAD_BYTES_"):]: value for name, value in c.items() if name.startswith("LOAD_BYTES_")}
        return {"cycles": self.cycles, "busy_cycles": per("BUSY"),
                "token_stall_cycles": per("TOKEN_STALL"), "fetch_stall_cycles": per("FETCH_STALL"),
                "load_bytes": loads, "store_bytes": c["STORE_BYTES"],
                "gemm_uops": c["GEMM_UOPS"], "alu_uops": c["ALU_UOPS"],
                "gemm_utilization": c["GEMM_UOPS"] / self.cycles if self.cycles else 0.0}


COUNTER_REGISTERS = regmap.COUNTERS


def launch_sequence(config, insn_addr: int, insn_count: int, max_cycles: int | None = None):
    """Generator: check the hardware ID, program the stream, start, wait, read the counters."""
    off = regmap.OFFSET
    hw_id = yield Read(off["HW_ID"])
    if hw_id != config.hash32:
        raise ConfigMismatch(f"the accelerator's ID register holds 0x{hw_id:08x} but the program is built "
                             f"for config {config.name} (0x{config.hash32:08x}); load the matching "
                             "bitstream or compile for this hardware")
    status = yield Read(off["CONTROL"])
    if status & regmap.RUNNING:
        raise DeviceError("the accelerator is still running a previous launch; reset it first")
    if insn_addr % INSN_BYTES:
        raise DeviceError(f"instruction address 0x{insn_addr:x} is not {INSN_BYTES}-byte aligned")
    if not 0 < insn_count < 1 << 32:
        raise DeviceError(f"insn_count must be in 1..2^32-1, got {insn_count}")
    yield Write(off["INSN_ADDR"], insn_addr)
    yield Write(off["INSN_COUNT"], insn_count)
    yield Write(off["CONTROL"], regmap.START)
    status = yield WaitDone(max_cycles)
    if status is None:
        raise LaunchTimeout(f"launch of {insn_count} instructions at 0x{insn_addr:x} did not raise done "
                            f"within {max_cycles} cycles")
    result = LaunchCounters((yield Read(off["CYCLES"])))
    for name in COUNTER_REGISTERS:
        result.counters[name] = yield Read(off[name])
    if status & regmap.ERROR:
        result.error_cause = yield Read(off["ERROR_CAUSE"])
        raise HardwareError(f"the accelerator flagged an error after {result.cycles} cycles: "
                            f"{regmap.describe_error(result.error_cause)}", result.error_cause, result)
    return result


def run_sync(sequence, read32, write32, clock_mhz: float, poll_interval_s: float = 1e-4,
             min_timeout_s: float = 1.0):
    """Execute a control sequence over synchronous register access (e.g. pynq.MMIO)."""
    answer = None
    try:
        while True:
            op = sequence.send(answer)
            if isinstance(op, Read):
                answer = read32(op.offset)
            elif isinstance(op, Write):
                write32(op.offset, op.value)
                answer = None
            elif isinstance(op, WaitDone):
                limit = None if op.max_cycles is None else max(min_timeout_s, op.max_cycles / (clock_mhz * 1e6))
                deadline = None if limit is None else time.monotonic() + limit
                while True:
                    status = read32(regmap.OFFSET["CONTROL"])
                    if status & regmap.DONE:
                        answer = status
                        break
                    if deadline is not None and time.monotonic() > deadline:
                        answer = None
                        break
                    time.sleep(poll_interval_s)
            else:  # pragma: no cover - a programming error in the sequence
                raise TypeError(f"unknown control operation {op!r}")
    except StopIteration as stop:
        return stop.value

"""The AXI-lite control block of vdla.hw.regmap, answering as the RTL's vdla_ctrl does, with
the cycle-exact simulator behind START.

What runs a launch is the block's fabric: the simulator (SimulatorFabric, here) or the RTL
under Verilator (rtl_fabric.RtlFabric); both report a Completion, so the registers behave
the same over either.

Register behaviour follows vdla_ctrl.sv: offsets are decoded on the low ADDR_BITS bits;
INSN_ADDR and INSN_COUNT hold what is written; writing START while idle launches (clearing
done, the error cause, the cycle counter and the counters), and is ignored while running;
CONTROL reads {running, error, done} in bits 3..1; read-only registers ignore writes and
undecoded offsets read 0. A launch runs to completion inside the START write, so the first
poll finds done, as a host that polls a fast accelerator does. A stream the RTL would
never finish leaves the block running until the next bitstream download (its reset).

Every access is logged, so a test can compare the register sequence a driver produced
with the one the RTL testbench drives.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from vdla.hw import regmap
from vdla.simulator import Simulator, SimulatorError

from . import faults

WORD = 0xFFFFFFFF
LOG_LENGTH = 1 << 16   # the most recent register accesses kept

# counter register name -> (SimStats field, key in its per-module / per-memory-type dict)
_PER_MODULE = {"BUSY_": "busy_cycles", "TOKEN_STALL_": "token_stall_cycles", "FETCH_STALL_": "fetch_stall_cycles"}
_SCALARS = {"GEMM_UOPS": "gemm_uops", "ALU_UOPS": "alu_uops", "STORE_BYTES": "store_bytes"}


def _counter_source(name: str) -> tuple[str, str | None]:
    for prefix, field in _PER_MODULE.items():
        if name.startswith(prefix):
            return field, name[len(prefix):].lower()
    if name.startswith("LOAD_BYTES_"):
        return "load_bytes", name[len("LOAD_BYTES_"):]
    if name in _SCALARS:
        return _SCALARS[name], None
    raise NotImplementedError(f"the simulated control block has no source for counter register {name}")


COUNTER_SOURCES = {name: _counter_source(name) for name in regmap.COUNTERS}
_OFF = regmap.OFFSET
_COUNTER_AT = {_OFF[name]: name for name in regmap.COUNTERS}
_DECODE_MASK = (1 << regmap.ADDR_BITS) - 1


def counter_values(stats) -> dict[str, int]:
    """The counter registers after a launch with these SimStats, or with a dict in the shape of
    SimStats.to_dict() (32-bit, wrapping as the RTL's)."""
    values = {}
    for name, (source, key) in COUNTER_SOURCES.items():
        value = stats[source] if isinstance(stats, Mapping) else getattr(stats, source)
        values[name] = int(value if key is None else value[key]) & WORD
    return values


@dataclass(frozen=True)
class Completion:
    """How a launch ended. done False: done never rises (the block stays running until the
    next download); error_cause None: no error bit, else the ERROR_CAUSE bits."""
    done: bool
    cycles: int = 0
    counters: dict = field(default_factory=lambda: dict.fromkeys(regmap.COUNTERS, 0))
    error_cause: int | None = None
    fault: Exception | None = None   # why it failed, for debugging


class SimulatorFabric:
    """START runs the cycle-exact simulator on the DDR image."""

    def __init__(self, config, ddr: np.ndarray):
        self.simulator = Simulator(config)
        self.ddr = ddr

    def run(self, insn_addr: int, insn_count: int) -> Completion:
        try:
            result = self.simulator.run(self.ddr, insn_addr, insn_count)
        except SimulatorError as exc:
            cause = faults.outcome(exc)
            if cause is faults.NEVER_DONE:
                return Completion(done=False, fault=exc)
            return Completion(done=True, error_cause=cause, fault=exc)
        return Completion(done=True, cycles=result.cycles & WORD, counters=counter_values(result.stats))


class ControlBlock:
    """One VDLA accelerator's registers over `ddr`, a uint8 image indexed by physical address;
    `fabric` runs the launches (default: the simulator)."""

    def __init__(self, config, ddr: np.ndarray, fabric=None):
        self.config = config
        self.ddr = ddr
        self.fabric = fabric if fabric is not None else SimulatorFabric(config, ddr)
        self.insn_addr = self.insn_count = 0
        self.running = self.done = self.failed = False
        self.error_cause = self.cycles = 0
        self.counters = dict.fromkeys(regmap.COUNTERS, 0)
        self.launches = 0
        self.last_fault: Exception | None = None   # why the latest launch failed, for debugging
        self.log: deque = deque(maxlen=LOG_LENGTH)       # ("r" | "w", offset, value)

    def read(self, offset: int) -> int:
        value = self._value(offset & _DECODE_MASK)
        self.log.append(("r", offset, value))
        return value

    def write(self, offset: int, value: int) -> None:
        self.log.append(("w", offset, value))
        offset &= _DECODE_MASK
        value &= WORD
        if offset == _OFF["INSN_ADDR"]:
            self.insn_addr = value
        elif offset == _OFF["INSN_COUNT"]:
            self.insn_count = value
        elif offset == _OFF["CONTROL"] and value & regmap.START and not self.running:
            self._launch()

    def _value(self, offset: int) -> int:
        if offset == _OFF["CONTROL"]:
            return ((regmap.RUNNING if self.running else 0) | (regmap.ERROR if self.failed else 0)
                    | (regmap.DONE if self.done else 0))
        fixed = {_OFF["HW_ID"]: self.config.hash32, _OFF["INSN_ADDR"]: self.insn_addr,
                 _OFF["INSN_COUNT"]: self.insn_count, _OFF["CYCLES"]: self.cycles,
                 _OFF["ERROR_CAUSE"]: self.error_cause}
        if offset in fixed:
            return fixed[offset]
        name = _COUNTER_AT.get(offset)
        return self.counters[name] if name else 0

    def _launch(self) -> None:
        self.launches += 1
        self.running, self.done, self.failed = True, False, False
        self.error_cause = self.cycles = 0
        self.counters = dict.fromkeys(regmap.COUNTERS, 0)
        self.last_fault = None
        end = self.fabric.run(self.insn_addr, self.insn_count)
        self.last_fault = end.fault
        if not end.done:
            return
        self.cycles, self.counters = end.cycles & WORD, dict(end.counters)
        self.running, self.done = False, True
        if end.error_cause is not None:
            self.failed, self.error_cause = True, end.error_cause

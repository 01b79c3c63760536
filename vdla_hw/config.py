"""Hardware configuration: presets, user JSON files, validation and derived quantities.

A configuration is one JSON document (see ../shared/SPEC.md §1). Architectural keys define
the ISA instance; `clock_mhz`, `bus_width_bits` and the optional `timing` object define
how fast it runs. Everything else in the stack (ISA field widths, SRAM depths, simulator,
RTL parameters, runtime) is derived from a `HwConfig`, never restated.

A config object, not a name, past the API edges. Only the edges take "a preset name, a path to a
JSON file, a dict or an HwConfig" and turn it into an HwConfig with `load_config`, once:

- the command lines: the `vdla` commands (driver/cli/commands), `python -m vdla.hw.synth`,
  `python -m vdla.hw.rtl.sim`, the scripts in benchmarks/;
- the public entry points: `compile_model(hw_config=...)`, `compile_for_vdla`, `tune_model`,
  `vdla_fallback_kernels`, the DSE sweep and its points (read from a file);
- the devices a user opens: `open_device`, `SimulatorDevice`, `RtlDevice`, `PynqDevice` (whose
  config is only checked against the board's);
- the readers of documents that record a config: the artifact header, a board manifest, the
  simulated board's design, a tuning worker's job.

Everything below them takes the HwConfig the edge built: the simulator, the reference
interpreter, random programs, the VTA checks and synthesis refuse anything else with
`require_config`, a TypeError naming the parameter. `load_config` has no default either: an
edge whose documented default is the pynq board names DEFAULT_PRESET itself (its argument's
default, or what its None stands for), so no None turns into pynq unseen below the edges.
"""
from __future__ import annotations

import hashlib
import json
import os
import reprlib
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources

from .errors import ConfigError
from .isa import INSN_BYTES, UOP_BYTES
from .timing import Timing

PRESETS = ("pynq", "ultra96", "zcu104", "kv260", "aup_zu3")
DEFAULT_PRESET = "pynq"

# key -> (allowed values or (lo, hi) inclusive, what it means); architectural keys first.
_ARCH_KEYS = {
    "LOG_INP_WIDTH": ((3,), "log2 bits of an input element (only int8 is implemented)"),
    "LOG_WGT_WIDTH": ((3,), "log2 bits of a weight element (only int8 is implemented)"),
    "LOG_ACC_WIDTH": ((5,), "log2 bits of an accumulator element (only int32 is implemented)"),
    "LOG_BATCH": (range(0, 4), "log2 of GEMM rows"),
    "LOG_BLOCK": (range(2, 7), "log2 of GEMM input/output channels"),
    "LOG_UOP_BUFF_SIZE": (range(8, 21), "log2 bytes of the micro-op SRAM"),
    "LOG_INP_BUFF_SIZE": (range(8, 23), "log2 bytes of the input SRAM"),
    "LOG_WGT_BUFF_SIZE": (range(8, 25), "log2 bytes of the weight SRAM"),
    "LOG_ACC_BUFF_SIZE": (range(8, 25), "log2 bytes of the accumulator SRAM"),
}
_RATE_KEYS = {
    "clock_mhz": (range(1, 1001), "fabric clock in MHz"),
    "bus_width_bits": ((32, 64, 128, 256, 512), "AXI data width in bits"),
}


def _check(key: str, value, allowed, meaning: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"config key {key!r} ({meaning}) must be an integer, got {value!r}")
    if value in allowed:
        return
    if isinstance(allowed, range):
        raise ValueError(f"config key {key!r} ({meaning}) = {value} is out of range "
                         f"{allowed.start}..{allowed.stop - 1}")
    choices = ", ".join(str(a) for a in allowed)
    raise ValueError(f"config key {key!r} ({meaning}) = {value} is not supported; allowed: {choices}")


@dataclass(frozen=True)
class HwConfig:
    """One hardware instance. Build with `load_config(name_or_path)` or `HwConfig.from_dict`."""

    LOG_INP_WIDTH: int = 3
    LOG_WGT_WIDTH: int = 3
    LOG_ACC_WIDTH: int = 5
    LOG_BATCH: int = 0
    LOG_BLOCK: int = 4
    LOG_UOP_BUFF_SIZE: int = 15
    LOG_INP_BUFF_SIZE: int = 15
    LOG_WGT_BUFF_SIZE: int = 18
    LOG_ACC_BUFF_SIZE: int = 17
    clock_mhz: int = 100
    bus_width_bits: int = 64
    target: str = "pynq"
    timing: Timing = field(default_factory=Timing)

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_dict(cls, doc: dict) -> "HwConfig":
        if not isinstance(doc, dict):
            raise ValueError(f"a hardware config must be a JSON object, got {type(doc).__name__}")
        values = {}
        allowed = {**_ARCH_KEYS, **_RATE_KEYS}
        for key, value in doc.items():
            if key == "TARGET":
                if not isinstance(value, str) or not value:
                    raise ValueError(f"config key 'TARGET' must be a non-empty string, got {value!r}")
                values["target"] = value
            elif key == "timing":
                if not isinstance(value, dict):
                    raise ValueError("config key 'timing' must be an object of timing parameters")
                values["timing"] = Timing.from_dict(value)
            elif key in allowed:
                _check(key, value, *allowed[key])
                values[key] = value
            else:
                names = ", ".join(["TARGET", *allowed, "timing"])
                raise ValueError(f"unknown config key {key!r}; allowed keys: {names}")
        config = cls(**values)
        config.isa  # builds the instruction layouts, which checks that every field fits
        return config

    def to_dict(self) -> dict:
        doc = {"TARGET": self.target}
        for key in (*_ARCH_KEYS, *_RATE_KEYS):
            doc[key] = getattr(self, key)
        doc["timing"] = self.timing.to_dict()
        return doc

    # ---- derived quantities -------------------------------------------------------------
    @property
    def batch(self) -> int:
        return 1 << self.LOG_BATCH

    @property
    def block(self) -> int:
        return 1 << self.LOG_BLOCK

    block_in = block_out = block

    @property
    def inp_bits(self) -> int:
        return 1 << self.LOG_INP_WIDTH

    @property
    def wgt_bits(self) -> int:
        return 1 << self.LOG_WGT_WIDTH

    @property
    def acc_bits(self) -> int:
        return 1 << self.LOG_ACC_WIDTH

    out_bits = inp_bits

    @cached_property
    def bus_bytes(self) -> int:
        return self.bus_width_bits // 8

    # element sizes in bytes (the unit each SRAM and DRAM address counts in)
    @cached_property
    def inp_elem_bytes(self) -> int:
        return self.batch * self.block * self.inp_bits // 8

    @cached_property
    def wgt_elem_bytes(self) -> int:
        return self.block * self.block * self.wgt_bits // 8

    @cached_property
    def acc_elem_bytes(self) -> int:
        return self.batch * self.block * self.acc_bits // 8

    @cached_property
    def out_elem_bytes(self) -> int:
        return self.batch * self.block * self.out_bits // 8

    uop_elem_bytes = UOP_BYTES
    insn_bytes = INSN_BYTES

    # SRAM depths in elements
    @cached_property
    def uop_depth(self) -> int:
        return (1 << self.LOG_UOP_BUFF_SIZE) // self.uop_elem_bytes

    @cached_property
    def inp_depth(self) -> int:
        return (1 << self.LOG_INP_BUFF_SIZE) // self.inp_elem_bytes

    @cached_property
    def wgt_depth(self) -> int:
        return (1 << self.LOG_WGT_BUFF_SIZE) // self.wgt_elem_bytes

    @property
    def acc_depth(self) -> int:
        return (1 << self.LOG_ACC_BUFF_SIZE) // self.acc_elem_bytes

    out_depth = acc_depth

    @cached_property
    def lut_depth(self) -> int:
        """Elements of the ALU's lookup table (LOAD LUT): its entries, BATCH x BLOCK_OUT per element.
        0 where an element holds more lanes than the table has entries: such a config has no table."""
        from .alu_ops import TABLE_ENTRIES  # local, like isa: alu_ops imports the ISA
        return TABLE_ENTRIES // (self.batch * self.block)

    @property
    def gemm_macs_per_cycle(self) -> int:
        return self.batch * self.block * self.block

    @property
    def peak_gops(self) -> float:
        return 2 * self.gemm_macs_per_cycle * self.clock_mhz / 1000.0

    @cached_property
    def isa(self):
        from .isa import Isa  # local import: isa.py needs HwConfig's fields only
        return Isa(self)

    # ---- identity ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        """Canonical name, e.g. 1x16_i8w8a32_15_15_18_17 (VTA's bitstream naming)."""
        return (f"{self.batch}x{self.block}_i{self.inp_bits}w{self.wgt_bits}a{self.acc_bits}_"
                f"{self.LOG_UOP_BUFF_SIZE}_{self.LOG_INP_BUFF_SIZE}_{self.LOG_WGT_BUFF_SIZE}_"
                f"{self.LOG_ACC_BUFF_SIZE}")

    @property
    def hash(self) -> str:
        """Stable hex digest of the ISA instance (architectural keys only)."""
        arch = {key: getattr(self, key) for key in _ARCH_KEYS}
        return hashlib.sha256(json.dumps(arch, sort_keys=True).encode()).hexdigest()

    @property
    def hash32(self) -> int:
        """The 32-bit value of the RTL's read-only hardware ID register."""
        return int(self.hash[:8], 16)



class HwConfigError(ConfigError, ValueError):
    """A hardware config that cannot be read: no such preset or file, not JSON, or a key out of
    its range (the message names the source and the key)."""

def load_config(source: "str | os.PathLike | dict | HwConfig") -> HwConfig:
    """A preset name (pynq, ultra96, zcu104, kv260, aup_zu3), a path to a JSON file, a dict, or an
    HwConfig (as is).
    For the API edges only (see the module docstring); None is refused, not read as a preset."""
    if source is None:
        raise TypeError(f"no hardware config given: pass a preset name ({', '.join(PRESETS)}), a path to a "
                        f"JSON file, a dict or an HwConfig (DEFAULT_PRESET is {DEFAULT_PRESET!r})")
    if isinstance(source, HwConfig):
        return source
    if isinstance(source, dict):
        try:
            return HwConfig.from_dict(source)
        except HwConfigError:
            raise
        except ValueError as exc:
            raise HwConfigError(str(exc)) from None
    text_source = os.fspath(source)
    if text_source in PRESETS:
        text = resources.files(__package__).joinpath("presets", f"{text_source}.json").read_text()
        origin = f"preset {text_source!r}"
    elif os.path.exists(text_source):
        try:
            with open(text_source) as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise HwConfigError(f"hardware config {text_source}: cannot be read ({reason})") from None
        origin = text_source
    else:
        raise HwConfigError(f"unknown hardware config {text_source!r}: not a preset "
                         f"({', '.join(PRESETS)}) and no such file")
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:    # (nesting past the JSON reader's depth)
        raise HwConfigError(f"hardware config {origin} is not valid JSON: {exc}") from None
    try:
        return HwConfig.from_dict(doc)
    except ValueError as exc:
        raise HwConfigError(f"hardware config {origin}: {exc}") from None


def require_config(value, name: str = "config") -> HwConfig:
    """`value` itself when it is an HwConfig; below the API edges nothing else is accepted (not a
    preset name, not None), so a config is read in one place and never defaulted unseen."""
    if isinstance(value, HwConfig):
        return value
    given = "None" if value is None else f"{type(value).__name__} {reprlib.repr(value)}"
    raise TypeError(f"{name} must be an HwConfig, got {given}; "
                    "build one with vdla.hw.load_config(preset name, JSON path or dict)")

"""Hardware configuration: presets, user JSON files, validation and derived quantities.

A configuration is one JSON document (see ../shared/SPEC.md §1). Architectural keys define
the ISA instance; `clock_mhz`, `bus_width_bits` and the optional `timing` object define
how fast it runs. Everything else in the stack (ISA field widths, SRAM depths, simulator,
RTL parameters, runtime) is derived from a `HwConfig`, never restated.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources

from .isa import INSN_BYTES, UOP_BYTES
from .timing import Timing

PRESETS = ("pynq", "ultra96", "zcu104")
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

    @property
    def bus_bytes(self) -> int:
        return self.bus_width_bits // 8

    # element sizes in bytes (the unit each SRAM and DRAM address counts in)
    @property
    def inp_elem_bytes(self) -> int:
        return self.batch * self.block * self.inp_bits // 8

    @property
    def wgt_elem_bytes(self) -> int:
        return self.block * self.block * self.wgt_bits // 8

    @property
    def acc_elem_bytes(self) -> int:
        return self.batch * self.block * self.acc_bits // 8

    @property
    def out_elem_bytes(self) -> int:
        return self.batch * self.block * self.out_bits // 8

    uop_elem_bytes = UOP_BYTES
    insn_bytes = INSN_BYTES

    # SRAM depths in elements
    @property
    def uop_depth(self) -> int:
        return (1 << self.LOG_UOP_BUFF_SIZE) // self.uop_elem_bytes

    @property
    def inp_depth(self) -> int:
        return (1 << self.LOG_INP_BUFF_SIZE) // self.inp_elem_bytes

    @property
    def wgt_depth(self) -> int:
        return (1 << self.LOG_WGT_BUFF_SIZE) // self.wgt_elem_bytes

    @property
    def acc_depth(self) -> int:
        return (1 << self.LOG_ACC_BUFF_SIZE) // self.acc_elem_bytes

    out_depth = acc_depth

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


def load_config(source: "str | os.PathLike | dict | HwConfig | None" = None) -> HwConfig:
    """A preset name (pynq, ultra96, zcu104), a path to a JSON file, a dict, or None (pynq)."""
    if source is None:
        source = DEFAULT_PRESET
    if isinstance(source, HwConfig):
        return source
    if isinstance(source, dict):
        return HwConfig.from_dict(source)
    text_source = os.fspath(source)
    if text_source in PRESETS:
        text = resources.files(__package__).joinpath("presets", f"{text_source}.json").read_text()
        origin = f"preset {text_source!r}"
    elif os.path.exists(text_source):
        with open(text_source) as f:
            text = f.read()
        origin = text_source
    else:
        raise ValueError(f"unknown hardware config {text_source!r}: not a preset "
                         f"({', '.join(PRESETS)}) and no such file")
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:    # (nesting past the JSON reader's depth)
        raise ValueError(f"hardware config {origin} is not valid JSON: {exc}") from None
    try:
        return HwConfig.from_dict(doc)
    except ValueError as exc:
        raise ValueError(f"hardware config {origin}: {exc}") from None

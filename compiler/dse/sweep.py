"""Sweep files: which hardware configurations a design-space exploration visits.

A sweep is one JSON object:

    {
      "base":   "pynq",                                  # preset, config file, or a config object
      "grid":   {"LOG_BLOCK": [3, 4, 5], "clock_mhz": [100, 200]},   # every combination
      "points": [{"LOG_BLOCK": 4, "bus_width_bits": 128}],           # and these, one by one
      "part":   "xck26"                                  # optional: the FPGA part the points must fit
    }

Each point is the base with some config keys replaced (the keys of vdla.hw's config JSON:
LOG_BATCH, LOG_BLOCK, the LOG_*_BUFF_SIZE buffers, bus_width_bits, clock_mhz, and `timing`,
an object merged into the base's timing parameters). The grid's points come first, in the
order of its keys (the last key varies fastest), then the listed points; a point equal to
an earlier one is dropped. Without grid and points the sweep is the base alone. `part` (a
key of vdla.hw.parts.PARTS) is the board's part: the points are synthesized with its flow and
judged against its limits (explore's fastest fitting point).

Keys are checked when the sweep is read (an unknown key is an error that lists the known
ones); values are checked per point, by vdla.hw's own validation, so one impossible
combination of a grid is reported as an invalid point instead of stopping the sweep.
"""
from __future__ import annotations

import itertools
import json
import math
import os
from dataclasses import dataclass, field

from vdla.hw import DEFAULT_PRESET, HwConfig, load_config
from vdla.hw.parts import PARTS

from .errors import SweepError

_SWEEP_KEYS = ("base", "grid", "points", "name", "part")
# Every point is compiled and simulated: a sweep past this is a typo (a grid of 9 keys x 10
# values is a billion points), refused before any point is built.
MAX_POINTS = 10_000


@dataclass
class Point:
    """One configuration of a sweep: its id, the keys it changes, and the config (or why not)."""
    id: str
    overrides: dict
    doc: dict                      # the whole config JSON of the point
    config: HwConfig | None = None
    invalid: str | None = None     # vdla.hw's reason when the combination is not a valid config

    @property
    def label(self) -> str:
        """Short name for tables and plots: BATCHxBLOCK, buffers, bus and clock."""
        d = self.doc
        return (f"{_pow2(d['LOG_BATCH'])}x{_pow2(d['LOG_BLOCK'])} u{d['LOG_UOP_BUFF_SIZE']} i{d['LOG_INP_BUFF_SIZE']} "
                f"w{d['LOG_WGT_BUFF_SIZE']} a{d['LOG_ACC_BUFF_SIZE']} bus{d['bus_width_bits']} {d['clock_mhz']}MHz")


def _pow2(log) -> str:
    """2**log for a table; an invalid point's value as it was written ("4", -1, 1e9)."""
    return str(1 << log) if isinstance(log, int) and not isinstance(log, bool) and 0 <= log < 64 else repr(log)


@dataclass
class Sweep:
    name: str
    base: HwConfig
    points: list = field(default_factory=list)
    dropped_duplicates: int = 0
    part: str | None = None        # the FPGA part the points must fit (vdla.hw.parts), if the sweep names one


def _base(value, where: str) -> HwConfig:
    """The sweep's base config; a sweep without one varies the pynq preset."""
    if value is not None and not isinstance(value, (str, dict)):
        raise SweepError(f"{where} 'base': expected a preset name, a config file or a config object, got "
                         f"{type(value).__name__}")
    try:
        return load_config(DEFAULT_PRESET if value is None else value)
    except ValueError as exc:
        raise SweepError(f"{where} 'base': {exc}") from None


def _check_override(keys: dict, where: str, known: list[str], grid: bool = False) -> None:
    """Known keys; a grid's values are lists of values (for `timing`, of timing objects)."""
    if not isinstance(keys, dict):
        raise SweepError(f"{where} must be an object of config keys, got {type(keys).__name__}")
    for key, value in keys.items():
        if key not in known:
            raise SweepError(f"{where}: unknown config key {key!r}; a sweep may set {', '.join(known)}")
        if grid and (not isinstance(value, list) or not value):
            raise SweepError(f"{where} {key!r}: expected a non-empty list of values, got {value!r}")
        for one in (value if grid else [value]):
            if key == "timing" and not isinstance(one, dict):
                raise SweepError(f"{where}: 'timing' must be an object of timing parameters (in a grid, a list of "
                                 f"them), got {one!r}")


def _apply(base_doc: dict, overrides: dict) -> dict:
    doc = json.loads(json.dumps(base_doc))
    for key, value in overrides.items():
        if key == "timing":
            doc["timing"] = {**doc.get("timing", {}), **value}
        else:
            doc[key] = value
    return doc


def parse_sweep(doc, where: str = "sweep") -> Sweep:
    """A Sweep from the parsed JSON object; SweepError naming what is wrong with it."""
    if not isinstance(doc, dict):
        raise SweepError(f"{where} must be a JSON object with keys {', '.join(_SWEEP_KEYS)}")
    unknown = [k for k in doc if k not in _SWEEP_KEYS]
    if unknown:
        raise SweepError(f"{where}: unknown key {unknown[0]!r}; a sweep has {', '.join(_SWEEP_KEYS)}")
    base = _base(doc.get("base"), where)
    part = doc.get("part")
    if part is not None and (not isinstance(part, str) or part not in PARTS):
        raise SweepError(f"{where} 'part': unknown FPGA part {part!r}; known parts: {', '.join(PARTS)}")
    base_doc = base.to_dict()
    known = [k for k in base_doc if k != "TARGET"]
    grid = doc.get("grid", {})
    listed = doc.get("points", [])
    _check_override(grid, f"{where} 'grid'", known, grid=True)
    if not isinstance(listed, list):
        raise SweepError(f"{where} 'points' must be a list of objects of config keys")
    count = math.prod(len(values) for values in grid.values()) + len(listed)
    if count > MAX_POINTS:
        sizes = " x ".join(str(len(v)) for v in grid.values())
        raise SweepError(f"{where} has {count} points (a grid of {sizes}, and {len(listed)} listed); the limit is "
                         f"{MAX_POINTS}: each point is compiled and simulated. Split the sweep, or sample it")
    for k, point in enumerate(listed):
        _check_override(point, f"{where} 'points'[{k}]", known)
    combos = (dict(zip(grid, values)) for values in itertools.product(*grid.values())) if grid else iter(())
    overrides = itertools.chain(combos, (dict(p) for p in listed)) if grid or listed else [{}]
    sweep = Sweep(str(doc.get("name") or "sweep"), base, part=part)
    seen = set()
    for change in overrides:
        full = _apply(base_doc, change)
        key = json.dumps(full, sort_keys=True)
        if key in seen:
            sweep.dropped_duplicates += 1
            continue
        seen.add(key)
        point = Point(f"p{len(sweep.points):02d}", change, full)
        try:
            point.config = HwConfig.from_dict(full)
        except (ValueError, TypeError) as exc:      # vdla.hw's reason (or a value of a wrong type)
            point.invalid = str(exc)
        sweep.points.append(point)
    return sweep


def load_sweep(source) -> Sweep:
    """A sweep from a JSON file path or an already parsed object."""
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source) as f:
                doc = json.load(f)
        except OSError as exc:
            raise SweepError(f"cannot read the sweep file {os.fspath(source)!r}: {exc.strerror or exc}") from None
        except (json.JSONDecodeError, RecursionError) as exc:
            raise SweepError(f"sweep file {os.fspath(source)!r} is not valid JSON: {exc}") from None
        return parse_sweep(doc, f"sweep file {os.fspath(source)!r}")
    return parse_sweep(source)

"""The result of a remote run: outputs, the latency of each repeat, the per-layer profile
(vdla.driver.profile.LayerProfile rows, as `vdla run --profile` prints them) and the device
that ran the accelerator steps; as the worker writes it and the client reads it back."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..profile import LayerProfile
from .arrays import pack, specs_from_wire, total_bytes, unpack
from .errors import ProtocolError
from .limits import Limits
from .protocol import field

_ROW_TYPES = {"str": (str,), "int": (int,), "float": (int, float)}


@dataclass
class RemoteResult:
    outputs: dict[str, np.ndarray]
    profile: list[LayerProfile] | None
    times_s: list[float]                 # one per repeat, measured on the server
    device: str                          # what ran the accelerator steps ("none": the artifact has none)
    chart_title: str                     # for a profile chart, as `vdla run --profile` titles it


def result_to_wire(result: RemoteResult) -> tuple[dict, list]:
    specs, parts = pack(result.outputs)
    rows = None if result.profile is None else [dataclasses.asdict(r) for r in result.profile]
    header = {"type": "result", "outputs": [s.to_wire() for s in specs], "times_s": result.times_s,
              "profile": rows, "device": result.device, "chart_title": result.chart_title}
    return header, parts


def result_from_wire(header: dict, payload: bytearray, limits: Limits, peer: str) -> RemoteResult:
    what = f"{peer}'s result"
    specs = specs_from_wire(header.get("outputs"), f"{what}: outputs", limits, limits.output_bytes)
    if total_bytes(specs) != len(payload):
        raise ProtocolError(f"{what}: the outputs take {total_bytes(specs)} bytes, the payload has {len(payload)}")
    times = field(header, "times_s", list, what)
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) for t in times):
        raise ProtocolError(f"{what}: times_s must be a list of numbers")
    rows = field(header, "profile", (list, type(None)), what)
    profile = None if rows is None else [_row(r, f"{what}: profile row {k}") for k, r in enumerate(rows)]
    return RemoteResult(unpack(specs, payload, 0), profile, [float(t) for t in times],
                        field(header, "device", str, what), field(header, "chart_title", str, what))


def _row(doc: object, what: str) -> LayerProfile:
    fields = dataclasses.fields(LayerProfile)
    if not isinstance(doc, dict) or set(doc) != {f.name for f in fields}:
        raise ProtocolError(f"{what}: expected the fields {[f.name for f in fields]}, got {str(doc)[:200]}")
    for f in fields:
        value = doc[f.name]
        if not isinstance(value, _ROW_TYPES[f.type]) or isinstance(value, bool):
            raise ProtocolError(f"{what}: field {f.name!r} must be {f.type}, got {value!r}")
    return LayerProfile(**doc)

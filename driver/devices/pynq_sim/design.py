"""Simulation bitstreams: a .bit file whose data describes the design it stands for.

A real bitstream configures the fabric; this one tells the simulated board which VDLA
instance to become: the hardware config, where the control block sits and whether the DRAM
port is cache-coherent. Its header is a genuine .bit header (vdla.driver.bitfile) whose
design field carries the UserID a Vivado build of the same design would (the config's
32-bit ID), so the manifest checks a board makes (SHA-256, UserID) run on it unchanged.

`make_board_folder` writes what a board user has after a build: a manifest beside its
bitstream, with the bitstream's SHA-256 recorded.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from vdla.hw import HwConfig, load_config

from ...bitfile import BitfileError, read_bit, write_bit
from ...board import load_manifest

FORMAT = "vdla-simulated-fabric/1"


@dataclass(frozen=True)
class SimDesign:
    board: str
    config: HwConfig
    control_base: int
    control_range: int
    coherent: bool
    part: str

    @property
    def name(self) -> str:
        return f"vdla_{self.board} ({self.config.name}, simulated)"


def sim_bitstream(design: SimDesign, user_id: int | None = -1) -> bytes:
    """The .bit file of `design`; user_id -1: the config's ID (as the VDLA build sets it),
    None: no UserID in the header (a build that did not set it)."""
    uid = design.config.hash32 if user_id == -1 else user_id
    field = f"vdla_{design.board}" + ("" if uid is None else f";UserID=0X{uid:08X}") + ";Version=vdla-sim"
    payload = json.dumps({"format": FORMAT, "board": design.board, "config": design.config.to_dict(),
                          "control_base": design.control_base, "control_range": design.control_range,
                          "coherent": design.coherent}, sort_keys=True).encode()
    payload += b" " * (-len(payload) % 4)   # configuration data is a whole number of 32-bit words
    part = design.part.removeprefix("xc")   # Vivado writes the part without its "xc"
    return write_bit(field, part, payload)


def read_sim_bitstream(raw: bytes, name: str) -> SimDesign:
    """The design a simulation bitstream describes; BitfileError for anything else (a real
    bitstream cannot configure a simulator)."""
    header = read_bit(raw, name)
    try:
        doc = json.loads(header.data)
        ok = isinstance(doc, dict) and doc.get("format") == FORMAT
    except (UnicodeDecodeError, json.JSONDecodeError):
        ok = False
    if not ok:
        raise BitfileError(f"{name} (design {header.design.split(';')[0]!r}, part {header.part}) is not a simulation "
                           "bitstream: the simulated board loads only files written by "
                           "vdla.driver.devices.pynq_sim.design (make_board_folder)")
    try:
        return SimDesign(str(doc["board"]), load_config(doc["config"]), int(doc["control_base"]),
                         int(doc["control_range"]), bool(doc["coherent"]), "xc" + header.part)
    except (KeyError, TypeError, ValueError) as exc:
        raise BitfileError(f"{name}: the simulation bitstream's description is incomplete or invalid: {exc}") from None


def make_board_folder(folder, board: str = "pynq", config=None, user_id: int | None = -1,
                      coherent: bool | None = None) -> Path:
    """Write `folder`/<board>.json (the packaged manifest of `board`) and its bitstream, a
    simulation bitstream of that design, with the SHA-256 recorded; return the manifest path.

    config: what the bitstream implements (default the manifest's: change it to build a
    mismatch); user_id as in sim_bitstream; coherent: make the DRAM port non-coherent (HP0)
    or coherent, in the manifest and the design alike."""
    manifest = load_manifest(board)
    doc = json.loads(manifest.path.read_text())
    if coherent is not None and coherent != manifest.coherent:
        doc.update(coherent=coherent, dram_port=("ACP" if manifest.part.startswith("xc7z") else "HPC0")
                   if coherent else ("HP0" if manifest.part.startswith("xc7z") else "HP0_FPD"))
    design = SimDesign(manifest.board, load_config(config) if config is not None else manifest.hw_config(),
                       manifest.control_base, manifest.control_range, doc["coherent"], manifest.part)
    raw = sim_bitstream(design, user_id)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / manifest.bitstream).write_bytes(raw)
    doc["sha256"] = hashlib.sha256(raw).hexdigest()
    path = folder / f"{manifest.board}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path

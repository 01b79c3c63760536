"""Board manifests: which bitstream a board runs, where its registers are, how it reaches DRAM.

A manifest is a JSON file in bitstreams/ (one per board, shipped in the package as
vdla/bitstreams/): the hardware config it was built for and that config's hash, the fabric
clock, the AXI-lite base address of the control block, whether the DRAM port is
cache-coherent, and the bitstream file with its SHA-256 (null until built).

The config hash is the handshake between the three parties that must agree: the manifest
(what the bitstream was built for), the bitstream itself (its UserID, and once loaded the
hardware ID register, which hold the hash's first 32 bits) and an artifact (the config it
was compiled for). `handshake_message` states what the board side knows (manifest, UserID,
register) and what to rebuild or load; the executor compares an artifact with the board's
config, and its message names PynqDevice, whose repr carries the manifest's hash and the
ID register, so there too all three values are named.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .bitfile import BitfileError, read_bit
from .device import DeviceError

# bitstreams/ sits beside driver/ in a source checkout and in the installed package
# (vdla/bitstreams/, package data); a board may also pass a path to its own manifest.
MANIFEST_DIR = Path(__file__).resolve().parent.parent / "bitstreams"
BUILD_COMMAND = "python -m vdla.bitstreams.build"
BOARD_ENV = "VDLA_BOARD"   # the board manifest (name or path) a PynqDevice opens by default


class BoardError(DeviceError):
    """A board manifest or bitstream that cannot be used as it is."""


@dataclass(frozen=True)
class BoardManifest:
    board: str
    config: str
    config_hash: str
    part: str
    clock_mhz: int
    control_base: int
    control_range: int
    dram_port: str
    coherent: bool
    bitstream: str
    hwh: str
    sha256: str | None
    path: Path

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def bitstream_path(self) -> Path:
        return self.folder / self.bitstream

    def hw_config(self):
        """The HwConfig the bitstream implements (a preset, or a JSON file beside the manifest)."""
        from vdla.hw import load_config
        return load_config(config_source(self.config, self.folder))

    @property
    def hash32(self) -> int:
        """The value the hardware ID register of this board's bitstream holds."""
        return int(self.config_hash[:8], 16)

    def check_bitstream(self) -> Path:
        """The bitstream's path, after checking it exists, matches the recorded SHA-256 and,
        where its header carries a UserID, was built for the manifest's config."""
        path = self.bitstream_path
        if not path.exists():
            raise BoardError(f"board {self.board}: bitstream {path} not found; build it with "
                             f"`{BUILD_COMMAND} {self.board}` (needs Vivado), or copy a built {self.bitstream} "
                             f"and {self.hwh} into {self.folder} and record its hash with "
                             f"`{BUILD_COMMAND} {self.board} --record --out FOLDER_WITH_THE_FILES`")
        raw = path.read_bytes()
        if self.sha256:
            digest = hashlib.sha256(raw).hexdigest()
            if digest != self.sha256:
                raise BoardError(f"board {self.board}: bitstream {path} has SHA-256 {digest[:16]}..., "
                                 f"the manifest {self.path} records {self.sha256[:16]}...; rebuild it "
                                 f"(`{BUILD_COMMAND} {self.board}`) or record this one (--record)")
        try:
            user_id = read_bit(raw, str(path)).user_id
        except BitfileError as exc:
            raise BoardError(f"board {self.board}: {exc}") from None
        if user_id is not None and user_id != self.hash32:
            raise BoardError(handshake_message(self, bitstream_id=user_id))
        return path


def handshake_message(manifest: BoardManifest, *, register: int | None = None, bitstream_id: int | None = None,
                      requested=None) -> str:
    """Why the config hashes disagree: every value known (manifest, bitstream UserID,
    hardware ID register, a config asked for) and what to rebuild or load."""
    known = [f"the manifest {manifest.path} records config {manifest.config} (hash {manifest.config_hash[:16]}..., "
             f"ID 0x{manifest.hash32:08x})"]
    if bitstream_id is not None:
        known.append(f"the bitstream {manifest.bitstream_path.name} carries UserID 0x{bitstream_id:08x}")
    if register is not None:
        known.append(f"the hardware ID register reads 0x{register:08x}")
    if requested is not None:
        known.append(f"the caller asked for config {requested.name} (hash {requested.hash[:16]}...)")
    if bitstream_id is not None and bitstream_id != manifest.hash32:
        advice = (f"the bitstream was built for another config: rebuild it for this manifest "
                  f"(`{BUILD_COMMAND} {manifest.board}`) or use the manifest it was built with")
    elif register is not None and register != manifest.hash32:
        advice = (f"the fabric holds another design: load {manifest.bitstream_path} (open the device with "
                  f"program=True) or rebuild it (`{BUILD_COMMAND} {manifest.board}`)")
    else:
        advice = f"open the board without a config (it runs {manifest.config}) or load a bitstream built for it"
    return f"config hash mismatch on board {manifest.board}: " + "; ".join(known) + f". {advice}"


_FIELDS = {"board": str, "config": str, "config_hash": str, "part": str, "clock_mhz": int, "control_base": str,
           "control_range": int, "dram_port": str, "coherent": bool, "bitstream": str, "hwh": str}


def config_source(config: str, folder: Path):
    """A preset name as it is; a JSON file name relative to the manifest's folder."""
    return folder / config if Path(config).suffix else config


def _is_hex(text, digits: int) -> bool:
    return isinstance(text, str) and len(text) == digits and all(c in "0123456789abcdef" for c in text)


def load_manifest(source: "str | os.PathLike" = "pynq") -> BoardManifest:
    """A board name (a manifest in bitstreams/) or a path to a manifest file."""
    from vdla.hw import load_config

    path = Path(source)
    if not path.suffix:
        path = MANIFEST_DIR / f"{source}.json"
    if not path.exists():
        known = sorted(p.stem for p in MANIFEST_DIR.glob("*.json")) if MANIFEST_DIR.exists() else []
        raise BoardError(f"no board manifest {path}; known boards: {', '.join(known) or 'none'}")
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise BoardError(f"board manifest {path} cannot be read as JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BoardError(f"board manifest {path} must hold a JSON object")
    for key, kind in _FIELDS.items():
        if not isinstance(doc.get(key), kind):
            raise BoardError(f"board manifest {path}: field {key!r} must be a {kind.__name__}, got {doc.get(key)!r}")
    sha = doc.get("sha256")
    if sha is not None and not _is_hex(sha, 64):
        raise BoardError(f"board manifest {path}: sha256 must be null or 64 lowercase hex digits")
    try:
        control_base = int(doc["control_base"], 16)
    except ValueError:
        raise BoardError(f"board manifest {path}: control_base must be a hex address, "
                         f"got {doc['control_base']!r}") from None
    try:
        config = load_config(config_source(doc["config"], path.parent))
    except Exception as exc:   # the config loader's own message names the problem
        raise BoardError(f"board manifest {path}: config {doc['config']!r} cannot be loaded: {exc}") from None
    if doc["config_hash"] != config.hash:
        raise BoardError(f"board manifest {path}: config_hash {doc['config_hash'][:16]}... is not the hash of config "
                         f"{doc['config']} ({config.hash[:16]}...): the config changed since the bitstream was "
                         f"built; rebuild it (`{BUILD_COMMAND} {doc['board']}`) or restore the config")
    return BoardManifest(doc["board"], doc["config"], doc["config_hash"], doc["part"], doc["clock_mhz"],
                         control_base, doc["control_range"], doc["dram_port"], doc["coherent"], doc["bitstream"],
                         doc["hwh"], sha, path)

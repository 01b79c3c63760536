"""Board manifests: which bitstream a board runs, where its registers are, how it reaches DRAM.

A manifest is a JSON file in bitstreams/ (one per board): the hardware config it was built
for, the fabric clock, the AXI-lite base address of the control block, whether the DRAM
port is cache-coherent, and the bitstream file with its SHA-256 (null until built).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

# bitstreams/ sits beside driver/ in a source checkout; a board may also pass a path.
MANIFEST_DIR = Path(__file__).resolve().parent.parent / "bitstreams"


@dataclass(frozen=True)
class BoardManifest:
    board: str
    config: str
    part: str
    clock_mhz: int
    control_base: int
    control_range: int
    dram_port: str
    coherent: bool
    bitstream: str
    hwh: str
    sha256: str | None
    folder: Path

    @property
    def bitstream_path(self) -> Path:
        return self.folder / self.bitstream

    def check_bitstream(self) -> Path:
        """The bitstream's path, after checking it exists and matches the recorded hash."""
        path = self.bitstream_path
        if not path.exists():
            raise FileNotFoundError(f"board {self.board}: bitstream {path} not found; build it with "
                                    f"bitstreams/build.sh {self.board} (needs Vivado) or copy it there")
        if self.sha256:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != self.sha256:
                raise ValueError(f"board {self.board}: bitstream {path} has SHA-256 {digest[:16]}..., "
                                 f"the manifest records {self.sha256[:16]}...; rebuild or update the manifest")
        return path


_FIELDS = {"board": str, "config": str, "part": str, "clock_mhz": int, "control_base": str,
           "control_range": int, "dram_port": str, "coherent": bool, "bitstream": str, "hwh": str}


def load_manifest(source: "str | os.PathLike" = "pynq") -> BoardManifest:
    """A board name (a manifest in bitstreams/) or a path to a manifest file."""
    path = Path(source)
    if not path.suffix:
        path = MANIFEST_DIR / f"{source}.json"
    if not path.exists():
        known = sorted(p.stem for p in MANIFEST_DIR.glob("*.json")) if MANIFEST_DIR.exists() else []
        raise FileNotFoundError(f"no board manifest {path}; known boards: {', '.join(known) or 'none'}")
    doc = json.loads(path.read_text())
    for key, kind in _FIELDS.items():
        if not isinstance(doc.get(key), kind):
            raise ValueError(f"board manifest {path}: field {key!r} must be a {kind.__name__}, "
                             f"got {doc.get(key)!r}")
    sha = doc.get("sha256")
    if sha is not None and not (isinstance(sha, str) and len(sha) == 64):
        raise ValueError(f"board manifest {path}: sha256 must be null or 64 hex digits")
    return BoardManifest(doc["board"], doc["config"], doc["part"], doc["clock_mhz"],
                         int(doc["control_base"], 16), doc["control_range"], doc["dram_port"],
                         doc["coherent"], doc["bitstream"], doc["hwh"], sha, path.parent)

"""The DSE's on-disk cache: one JSON file per point (DIR/cache/<key>.json) and one per
synthesized RTL (DIR/cache/synth/<key>.json), so a rerun does only what changed, and points
that share an RTL (they differ in clock only, say) share one synthesis.

A point's key covers everything its figures depend on: the whole config, the model's bytes,
the calibration and input samples, the source of the vdla packages (an edit anywhere in the
compiler or simulator is a new key: never a stale number; the DSE's plots and table printing
are left out) and the synthesizer. A synthesis
key is vdla.hw.synth.input_digest (RTL sources, generated package, flow, Yosys version) and
the synthesizer, so Python edits elsewhere keep the slow part cached."""
from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
from pathlib import Path

import numpy as np

_CODE_PACKAGES = ("vdla.hw", "vdla.simulator", "vdla.compiler", "vdla.driver")
_CODE_SUFFIXES = (".py", ".sv", ".json")
# how the DSE draws and prints its figures changes none of them
_PRESENTATION = {"vdla.compiler/dse/plots.py", "vdla.compiler/dse/table.py"}
FORMAT = 1   # bump when the shape of a cached record changes


def code_digest() -> str:
    """Hash of the vdla packages' sources (Python, RTL, presets)."""
    h = hashlib.sha256()
    for name in _CODE_PACKAGES:
        root = Path(importlib.import_module(name).__path__[0])
        for path in sorted(p for p in root.rglob("*") if p.suffix in _CODE_SUFFIXES and p.is_file()):
            rel = f"{name}/{path.relative_to(root)}"
            if rel not in _PRESENTATION:
                h.update(rel.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def arrays_digest(arrays: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode() + b"\0" + a.tobytes())
    return h.hexdigest()


def synthesizer_name(synthesizer) -> str:
    """module.qualname; a functools.partial's name adds its keywords (yosys for a part: another flow)."""
    if synthesizer is None:
        return "none"
    if isinstance(synthesizer, functools.partial):
        keywords = ", ".join(f"{k}={v!r}" for k, v in sorted(synthesizer.keywords.items()))
        return f"{synthesizer_name(synthesizer.func)}({keywords})"
    return f"{getattr(synthesizer, '__module__', '?')}.{getattr(synthesizer, '__qualname__', repr(synthesizer))}"


def point_key(config_doc: dict, *, model_sha: str, samples_sha: str, code_sha: str, synth_name: str) -> str:
    doc = {k: v for k, v in config_doc.items() if k != "TARGET"}   # the target is a label, not a figure
    text = json.dumps({"format": FORMAT, "config": doc, "model": model_sha, "samples": samples_sha,
                       "code": code_sha, "synthesizer": synth_name}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def synth_key(config, synth_name: str) -> str | None:
    """None when the RTL cannot build the config (nothing to synthesize, nothing to share)."""
    from vdla.hw.synth import input_digest
    try:
        digest = input_digest(config)
    except ValueError:
        return None
    return hashlib.sha256(f"{FORMAT}:{digest}:{synth_name}".encode()).hexdigest()[:32]


class Cache:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def _path(self, kind: str, key: str) -> Path:
        return self.root / key if kind == "point" else self.root / "synth" / key

    def get(self, kind: str, key: str | None) -> dict | None:
        """The record, or None when absent or unreadable (a damaged file is recomputed)."""
        if key is None:
            return None
        path = self._path(kind, key).with_suffix(".json")
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):
            return None
        return doc if isinstance(doc, dict) and doc.get("format") == FORMAT else None

    def put(self, kind: str, key: str, record: dict) -> None:
        path = self._path(kind, key).with_suffix(".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({**record, "format": FORMAT}, sort_keys=True))
        os.replace(tmp, path)   # a reader never sees half a file

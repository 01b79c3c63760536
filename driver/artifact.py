"""The compiled-model artifact: one file holding the execution plan, parameters, kernels per
target triple, target and hardware config, and versions and hashes.

Layout (little endian):
    b"VDLAART\\0" | u32 format version | u64 header length | header (JSON, UTF-8)
    | blob section (parameters and kernel objects, 64-byte aligned) | sha256 of all before

The header indexes every blob by offset, size and sha256, so a tampered blob is named; the
trailing digest catches tampering anywhere (including the header), and sizes catch
truncation before anything is parsed. This module reads and writes the format only; it needs
numpy and the standard library, nothing of the compiler.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"VDLAART\0"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sIQ")
_DIGEST = 32
_ALIGN = 64


class ArtifactError(ValueError):
    """The artifact is malformed, truncated, tampered with, or built for something else."""


@dataclass
class Artifact:
    """In memory: `header` is the JSON document; `params` maps names to arrays; `objects` maps a
    target triple to its kernel object file (ELF bytes)."""
    header: dict
    params: dict[str, np.ndarray] = field(default_factory=dict)
    objects: dict[str, bytes] = field(default_factory=dict)

    @property
    def plan(self) -> dict:
        return self.header["plan"]

    def save(self, path: str | os.PathLike) -> int:
        data = self.to_bytes()
        with open(path, "wb") as f:
            f.write(data)
        return len(data)

    def to_bytes(self) -> bytes:
        blobs, offset = [], 0
        header = dict(self.header)
        header["format_version"] = FORMAT_VERSION
        params_index = {}
        for name, array in self.params.items():
            raw = np.ascontiguousarray(array).tobytes()
            params_index[name] = {"offset": offset, "nbytes": len(raw), "shape": list(array.shape),
                                  "dtype": array.dtype.name, "sha256": hashlib.sha256(raw).hexdigest()}
            offset = _append(blobs, raw, offset)
        objects_index = {}
        for triple, raw in self.objects.items():
            objects_index[triple] = {"offset": offset, "nbytes": len(raw),
                                     "sha256": hashlib.sha256(raw).hexdigest()}
            offset = _append(blobs, raw, offset)
        header["params"] = params_index
        header["object_files"] = objects_index
        header["blob_bytes"] = offset
        text = json.dumps(header, sort_keys=True).encode()
        body = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(text)) + text + b"".join(blobs)
        return body + hashlib.sha256(body).digest()


def _append(blobs: list, raw: bytes, offset: int) -> int:
    pad = (-len(raw)) % _ALIGN
    blobs.append(raw + b"\0" * pad)
    return offset + len(raw) + pad


def load(path: str | os.PathLike) -> Artifact:
    with open(path, "rb") as f:
        data = f.read()
    return from_bytes(data, source=os.fspath(path))


def from_bytes(data: bytes, source: str = "<bytes>") -> Artifact:
    if len(data) < _PREFIX.size:
        raise ArtifactError(f"{source}: truncated: {len(data)} bytes is shorter than the artifact "
                            f"prefix ({_PREFIX.size} bytes); is this a .vdla file?")
    magic, version, header_len = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise ArtifactError(f"{source}: not a vdla artifact (magic {magic!r}, expected {MAGIC!r})")
    if version != FORMAT_VERSION:
        raise ArtifactError(f"{source}: artifact format version {version}; this runtime reads "
                            f"version {FORMAT_VERSION}: recompile the model with this vdla")
    start = _PREFIX.size
    if len(data) < start + header_len:
        raise ArtifactError(f"{source}: truncated: the header needs {start + header_len} bytes, "
                            f"the file has {len(data)}")
    try:
        header = json.loads(data[start:start + header_len])
    except ValueError as exc:
        raise ArtifactError(f"{source}: corrupt header ({exc}); the file was modified") from exc
    blob_start = start + header_len
    expected = blob_start + int(header.get("blob_bytes", 0)) + _DIGEST
    if len(data) != expected:
        kind = "truncated" if len(data) < expected else "has trailing bytes"
        raise ArtifactError(f"{source}: {kind}: expected {expected} bytes, the file has {len(data)}")
    blobs = data[blob_start:len(data) - _DIGEST]

    def blob(what: str, entry: dict) -> bytes:
        raw = blobs[entry["offset"]:entry["offset"] + entry["nbytes"]]
        if hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            raise ArtifactError(f"{source}: {what} fails its sha256 check: the file was modified "
                                "or damaged; recompile it")
        return raw

    artifact = Artifact(header)
    for name, entry in header["params"].items():
        raw = blob(f"parameter {name!r}", entry)
        artifact.params[name] = np.frombuffer(raw, dtype=entry["dtype"]).reshape(entry["shape"])
    for triple, entry in header["object_files"].items():
        artifact.objects[triple] = blob(f"kernel object for {triple}", entry)
    if hashlib.sha256(data[:-_DIGEST]).digest() != data[-_DIGEST:]:
        raise ArtifactError(f"{source}: file digest mismatch: the header or padding was modified; "
                            "recompile the model")
    return artifact

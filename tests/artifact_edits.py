"""What an attacker or a damaged disk does to a .vdla file, for the tests of the loader: read the
header of artifact bytes, and write an edited header back with every digest recomputed (so
only the loader's own checks stand between the edit and the executor)."""
from __future__ import annotations

import hashlib
import json
import struct

import numpy as np

from vdla.driver.artifact import FORMAT_VERSION, Artifact

PREFIX = struct.Struct("<8sIQ")


def read_header(data: bytes) -> dict:
    _, _, n = PREFIX.unpack_from(data)
    return json.loads(data[PREFIX.size:PREFIX.size + n])


def blob_section(data: bytes) -> bytes:
    _, _, n = PREFIX.unpack_from(data)
    return data[PREFIX.size + n:len(data) - 32]


def with_header(data: bytes, header: dict, blobs: bytes | None = None) -> bytes:
    """An unsigned artifact with `header` (as given, not re-indexed) over the blobs of `data`
    (or `blobs`), and a correct file digest."""
    version = PREFIX.unpack_from(data)[1]
    text = json.dumps(header, sort_keys=True).encode()
    body = PREFIX.pack(b"VDLAART\0", version, len(text)) + text + (blob_section(data) if blobs is None else blobs)
    return body + hashlib.sha256(body).digest()


def with_object(data: bytes, key: str, code: bytes) -> bytes:
    """`data` with the kernel object `key` replaced by `code`, its index entry and the file
    digest recomputed: what someone who rewrites the machine code of an artifact produces."""
    header = read_header(data)
    blobs = bytearray(blob_section(data))
    offset = len(blobs) + (-len(blobs)) % 64     # appended; the old code stays, unreferenced
    blobs += bytes(offset - len(blobs)) + code
    header["object_files"][key] = {"offset": offset, "nbytes": len(code), "sha256": hashlib.sha256(code).hexdigest()}
    header["blob_bytes"] = len(blobs)
    return with_header(data, header, bytes(blobs))


def relu_artifact(n: int = 16) -> Artifact:
    """The smallest real plan, written by hand (no compiler): y = relu(x) + bias as two host
    steps over a 3-tensor arena; x and y are float32[n]."""
    nbytes = 4 * n
    tensors = {"x": {"shape": [n], "dtype": "float32", "offset": 0},
               "h": {"shape": [n], "dtype": "float32", "offset": nbytes},
               "y": {"shape": [n], "dtype": "float32", "offset": 2 * nbytes}}
    steps = [{"name": "relu", "op": "Relu", "kind": "host", "outputs": ["h"],
              "body": [{"op": "Relu", "name": "relu", "inputs": ["x"], "outputs": ["h"], "attrs": {}}]},
             {"name": "add", "op": "Add", "kind": "host", "outputs": ["y"],
              "body": [{"op": "Add", "name": "add", "inputs": ["h", "bias"], "outputs": ["y"], "attrs": {}}]}]
    plan = {"name": "relu", "inputs": [{"name": "x", "shape": [n], "dtype": "float32"}],
            "outputs": [{"name": "y", "shape": [n], "dtype": "float32"}], "tensors": tensors,
            "arena_bytes": 3 * nbytes, "naive_bytes": 3 * nbytes, "steps": steps}
    header = {"format_version": FORMAT_VERSION, "target": {"kind": "cpu"}, "hardware": None, "kernels": {}, "plan": plan,
              "compile": {}}
    return Artifact(header, {"bias": np.arange(n, dtype=np.float32)})

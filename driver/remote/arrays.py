"""Arrays on the wire: a spec {name, dtype, shape} in the header and the raw little-endian bytes
in the payload, back to back in the order of the specs. Only plain numeric dtypes are listed;
the receiver computes every size from dtype and shape itself and checks the total against its
limit before it reads the payload."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import LimitExceeded, ProtocolError, RemoteInputError
from .limits import Limits, mib

DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64")
MAX_NAME_CHARS = 1024


@dataclass(frozen=True)
class ArraySpec:
    name: str
    dtype: np.dtype        # little endian, the wire's byte order
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count * self.dtype.itemsize

    def to_wire(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name, "shape": list(self.shape)}


def _wire_dtype(name: str) -> np.dtype:
    return np.dtype(name).newbyteorder("<")


def spec_of(name: str, value: np.ndarray) -> ArraySpec:
    """The spec of an array the caller sends; RemoteInputError for what the protocol cannot carry."""
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS:
        raise RemoteInputError(f"array name {name!r}: names are strings of 1 to {MAX_NAME_CHARS} characters")
    if value.dtype.name not in DTYPES or value.dtype.hasobject:
        raise RemoteInputError(f"array {name!r} has dtype {value.dtype}; remote runs carry {', '.join(DTYPES)}")
    return ArraySpec(name, _wire_dtype(value.dtype.name), tuple(int(d) for d in value.shape))


def wire_bytes(value: np.ndarray, spec: ArraySpec) -> memoryview:
    flat = np.ascontiguousarray(value, dtype=spec.dtype).reshape(-1)
    return memoryview(flat.view(np.uint8))


def pack(arrays: dict) -> tuple[list[ArraySpec], list[memoryview]]:
    """Specs and payload parts for named arrays."""
    specs, parts = [], []
    for name, value in arrays.items():
        value = np.asarray(value)
        spec = spec_of(name, value)
        specs.append(spec)
        parts.append(wire_bytes(value, spec))
    return specs, parts


def specs_from_wire(doc: object, what: str, limits: Limits, max_total: int) -> list[ArraySpec]:
    """Check a list of specs the peer sent: ProtocolError for a malformed one, LimitExceeded
    when they add up to more than `max_total` bytes."""
    if not isinstance(doc, list):
        raise ProtocolError(f"{what}: expected a list of arrays, got {type(doc).__name__}")
    if len(doc) > limits.arrays:
        raise LimitExceeded(f"{what}: {len(doc)} arrays; the limit is {limits.arrays}")
    specs, names, total = [], set(), 0
    for k, entry in enumerate(doc):
        where = f"{what}, array {k}"
        if not isinstance(entry, dict) or set(entry) != {"name", "dtype", "shape"}:
            raise ProtocolError(f"{where}: expected {{name, dtype, shape}}, got {str(entry)[:200]}")
        name, dtype, shape = entry["name"], entry["dtype"], entry["shape"]
        if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS or name in names:
            raise ProtocolError(f"{where}: name {str(name)[:80]!r} is not a new string of 1 to "
                                f"{MAX_NAME_CHARS} characters")
        if dtype not in DTYPES:
            raise ProtocolError(f"{where} ({name}): dtype {str(dtype)[:40]!r} is not one of {', '.join(DTYPES)}")
        if not isinstance(shape, list) or len(shape) > limits.ndim or \
                not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise ProtocolError(f"{where} ({name}): shape {str(shape)[:80]} is not a list of at most "
                                f"{limits.ndim} non-negative integers")
        spec = ArraySpec(name, _wire_dtype(dtype), tuple(shape))
        total += spec.nbytes
        if total > max_total:
            raise LimitExceeded(f"{what}: the arrays up to {name!r} take {mib(total)}; the limit is "
                                f"{mib(max_total)}")
        names.add(name)
        specs.append(spec)
    return specs


def total_bytes(specs: list[ArraySpec]) -> int:
    return sum(s.nbytes for s in specs)


def unpack(specs: list[ArraySpec], payload: bytearray, offset: int) -> dict[str, np.ndarray]:
    """Arrays over the payload's bytes from `offset` (the caller checked the total length)."""
    arrays = {}
    for spec in specs:
        count = spec.nbytes // spec.dtype.itemsize
        arrays[spec.name] = np.frombuffer(payload, spec.dtype, count, offset).reshape(spec.shape)
        offset += spec.nbytes
    return arrays

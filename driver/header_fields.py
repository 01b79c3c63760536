"""Typed reads of an artifact header's JSON fields. Each names the field by its path (e.g.
`plan.tensors['x'].offset`) in an ArtifactError when it is missing or of the wrong kind, so a
damaged or edited header never surfaces as a KeyError or TypeError."""
from __future__ import annotations

import numpy as np

from .artifact_errors import ArtifactError

# The element types tensors, parameters and kernel arguments may have: numpy's numeric ones.
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "float32", "float64"})
# No device has this much memory (256 TiB): a larger size or offset is damage, not a model.
MAX_BYTES = 1 << 48


def fail(path: str, expected: str, value=None, got: bool = True) -> ArtifactError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return ArtifactError(f"artifact header: {path} must be {expected}" + (f", got {shown}" if got else ""))


def obj(value, path: str) -> dict:
    if not isinstance(value, dict):
        raise fail(path, "an object", value)
    return value


def field(doc: dict, key: str, path: str):
    if key not in doc:
        raise fail(f"{path}.{key}", "present", got=False)
    return doc[key]


def integer(value, path: str, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(path, "an integer", value)
    if value < lo or (hi is not None and value > hi):
        raise fail(path, f"in [{lo}, {hi}]" if hi is not None else f">= {lo}", value)
    return value


def string(value, path: str) -> str:
    if not isinstance(value, str):
        raise fail(path, "a string", value)
    return value


def array(value, path: str) -> list:
    if not isinstance(value, list):
        raise fail(path, "a list", value)
    return value


def strings(value, path: str) -> list[str]:
    return [string(v, f"{path}[{i}]") for i, v in enumerate(array(value, path))]


def shape(value, path: str, unknown_ok: bool = False) -> tuple[int, ...]:
    """Dimensions; `unknown_ok` lets -1 stand for one known only at run time."""
    return tuple(integer(d, f"{path}[{i}]", lo=-1 if unknown_ok else 0) for i, d in enumerate(array(value, path)))


def dtype(value, path: str) -> str:
    if value not in DTYPES:
        raise fail(path, f"one of {', '.join(sorted(DTYPES))}", value)
    return value


def nbytes(dims: tuple[int, ...], dt: str) -> int:
    """Exact (Python integers: a huge declared shape cannot wrap around)."""
    n = np.dtype(dt).itemsize
    for d in dims:
        n *= d
    return n
